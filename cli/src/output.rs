//! Standard output as the tool writes to it: unbuffered, refused when the caller closed it,
//! and waited on when it is non-blocking.
//!
//! **A closed stdout.** When a Unix program starts with fd 0, 1 or 2 closed, the Rust
//! runtime opens `/dev/null` in its place (read-write) before `main` runs, so that a later
//! `open` cannot land on a standard descriptor; writes would then "succeed" into nothing.
//! `head -c 16 >&-` and `openssl rand 16 >&-` fail with "Bad file descriptor"; so does this
//! tool. The runtime's substitution happens in `std::rt::init`, called from the `main` that
//! the compiler generates, after the C library has run the executable's constructors. A
//! constructor of this module (in `.init_array`) therefore sees fd 1 as
//! the caller left it and records whether it was open ([`F_GETFD`](libc::F_GETFD) fails
//! only on a closed descriptor). A stdout that was open at start is written to whatever it
//! is: also `/dev/null` opened read-write, which is what Python's `subprocess.DEVNULL`,
//! Node's `stdio: 'ignore'` and `daemon(3)` hand a child (the output is discarded, exit 0).
//!
//! Where the constructor does not run (targets that are not ELF, such as macOS, or should
//! it ever be left out), the tool falls back to a rule that needs no record: fd 1 is taken
//! as closed when it is the `/dev/null` character device opened read-write (the runtime's
//! stand-in), while a shell's `> /dev/null` opens it write-only. That fallback also refuses
//! a `/dev/null` a launcher opened read-write. On platforms where the runtime does not
//! substitute closed descriptors, a closed fd 1 already fails to duplicate with `EBADF`.
//!
//! **A non-blocking stdout.** A pipe or terminal whose open file description has
//! `O_NONBLOCK` set (by this process's parent or a sibling sharing it) makes a write that
//! finds the pipe full fail with `EAGAIN` instead of waiting. [`Stdout`] then waits with
//! `poll(2)` until the descriptor is writable and writes again, so a slow reader gets every
//! byte.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::sync::atomic::{AtomicU8, Ordering};

/// fd 1 at process start: not recorded (the constructor did not run).
const NOT_RECORDED: u8 = 0;
/// fd 1 at process start: open.
const WAS_OPEN: u8 = 1;
/// fd 1 at process start: closed.
const WAS_CLOSED: u8 = 2;

/// What the constructor saw of fd 1 before the runtime's initialisation.
static STDOUT_AT_START: AtomicU8 = AtomicU8::new(NOT_RECORDED);
/// The same of fd 2 (for `--out /dev/stderr`).
static STDERR_AT_START: AtomicU8 = AtomicU8::new(NOT_RECORDED);

/// The constructor that fills [`STDOUT_AT_START`] and [`STDERR_AT_START`], on ELF targets.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd",
    target_os = "openbsd",
    target_os = "dragonfly",
    target_os = "illumos",
    target_os = "solaris"
))]
mod record {
    use super::{Ordering, STDERR_AT_START, STDOUT_AT_START, WAS_CLOSED, WAS_OPEN};

    /// Records whether fds 1 and 2 are open. Runs before `main`, and so before the Rust
    /// runtime replaces a closed one with `/dev/null`; it uses nothing of the runtime.
    extern "C" fn record_standard_descriptors() {
        for (fd, record) in [(1, &STDOUT_AT_START), (2, &STDERR_AT_START)] {
            // SAFETY: F_GETFD only reads the descriptor's flags; no pointers are passed,
            // and it fails (with EBADF) only when the descriptor is not open.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            let state = if flags == -1 { WAS_CLOSED } else { WAS_OPEN };
            record.store(state, Ordering::Relaxed);
        }
    }

    /// [`record_standard_descriptors`] in the executable's `.init_array`, whose functions the C
    /// library's startup code runs before `main`.
    #[used]
    #[unsafe(link_section = ".init_array")]
    static RECORD_STANDARD_DESCRIPTORS: extern "C" fn() = record_standard_descriptors;
}

/// Whether `fd` (1 or 2; any other is `None`) was closed when the process started: `Some`
/// when the constructor recorded it, `None` where it did not run.
pub fn closed_at_start(fd: libc::c_int) -> Option<bool> {
    let record = match fd {
        libc::STDOUT_FILENO => &STDOUT_AT_START,
        libc::STDERR_FILENO => &STDERR_AT_START,
        _ => return None,
    };
    match record.load(Ordering::Relaxed) {
        WAS_OPEN => Some(false),
        WAS_CLOSED => Some(true),
        _ => None,
    }
}

/// The process's stdout as an unbuffered writer that waits out `EAGAIN`.
pub struct Stdout {
    file: File,
}

impl Stdout {
    /// A duplicate of fd 1, so each write goes out as one `write(2)` with no line buffering.
    ///
    /// # Errors
    /// `EBADF` ("Bad file descriptor") when the caller closed stdout (see the module
    /// documentation for how that is told apart from a `/dev/null` stdout), or the error of
    /// `dup`.
    pub fn open() -> io::Result<Self> {
        if closed_at_start(libc::STDOUT_FILENO) == Some(true) {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        let file = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        if closed_at_start(libc::STDOUT_FILENO).is_none() && is_runtime_dev_null(&file)? {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        Ok(Self { file })
    }

    /// What stdout is.
    pub fn kind(&self) -> Kind {
        kind_of(&self.file)
    }

    /// Blocks until the descriptor is writable (or has an error or hang-up, which the next
    /// write reports).
    fn wait_writable(&self) -> io::Result<()> {
        let mut poll = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        loop {
            // SAFETY: `poll` points to one valid pollfd for the duration of the call.
            let r = unsafe { libc::poll(&mut poll, 1, -1) };
            if r >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Write for Stdout {
    /// Writes as `write(2)` does, waiting out `EAGAIN`; an error says that it is standard
    /// output's ("standard output: Bad file descriptor (os error 9)") and keeps its kind (a
    /// closed pipe is not an error to the caller).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.wait_writable().map_err(stdout_error)?;
                }
                Err(e) => return Err(stdout_error(e)),
                ok => return ok,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A failure of stdout, said as such, with its kind kept.
pub fn stdout_error(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("standard output: {e}"))
}

/// What an output is, as far as the choice of format goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A terminal: it shows text and never gets raw bytes.
    Terminal,
    /// A regular file.
    File,
    /// Anything else: a pipe (also a shell's command substitution), a socket, a device.
    Other,
}

/// What `file` is; one whose type cannot be read is [`Kind::Other`].
pub fn kind_of(file: &File) -> Kind {
    use std::io::IsTerminal;
    if file.is_terminal() {
        return Kind::Terminal;
    }
    if file.metadata().is_ok_and(|meta| meta.is_file()) {
        Kind::File
    } else {
        Kind::Other
    }
}

/// Whether `meta` is that of the `/dev/null` character device.
fn is_dev_null(meta: &std::fs::Metadata) -> bool {
    let null = std::fs::metadata("/dev/null");
    meta.file_type().is_char_device()
        && null.is_ok_and(|n| n.file_type().is_char_device() && n.rdev() == meta.rdev())
}

/// Whether `file` is `/dev/null` opened read-write: the runtime's stand-in for a closed
/// standard descriptor (and what launchers that discard output open).
fn is_runtime_dev_null(file: &File) -> io::Result<bool> {
    if !is_dev_null(&file.metadata()?) {
        return Ok(false);
    }
    // SAFETY: F_GETFL on a descriptor this function borrows; no pointers are passed.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags & libc::O_ACCMODE == libc::O_RDWR)
}
