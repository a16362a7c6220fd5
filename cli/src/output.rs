//! Standard output as the tool writes to it: unbuffered, refused when the caller closed it,
//! and waited on when it is non-blocking.
//!
//! **A closed stdout.** When a Unix program starts with fd 0, 1 or 2 closed, the Rust
//! runtime opens `/dev/null` in its place before `main` runs (so that a later `open` cannot
//! land on a standard descriptor); writes then "succeed" into nothing. `head -c 16 >&-` and
//! `openssl rand 16 >&-` fail with "Bad file descriptor"; so does this tool. The runtime
//! opens that `/dev/null` read-write (`O_RDWR`), while a shell's `> /dev/null` opens it
//! write-only (`O_WRONLY`, with `O_TRUNC`). So fd 1 is taken as closed when it is the
//! `/dev/null` character device *and* open read-write.
//!
//! Limits of that rule: a stdout deliberately opened read-write on `/dev/null` (`1<>
//! /dev/null`, or inherited from a daemon that pointed its descriptors at `/dev/null` with
//! `daemon(3)`) is also refused; nothing is lost but output nobody could read. On platforms
//! where the runtime does not substitute closed descriptors, a closed fd 1 already fails to
//! duplicate with `EBADF`.
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

/// The process's stdout as an unbuffered writer that waits out `EAGAIN`.
pub struct Stdout {
    file: File,
}

impl Stdout {
    /// A duplicate of fd 1, so each write goes out as one `write(2)` with no line buffering.
    ///
    /// # Errors
    /// `EBADF` ("Bad file descriptor") when the caller closed stdout (see the module
    /// documentation for how that is told apart from `> /dev/null`), or the error of `dup`.
    pub fn open() -> io::Result<Self> {
        let file = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        if is_runtime_dev_null(&file)? {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        Ok(Self { file })
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
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait_writable()?,
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `file` is `/dev/null` opened read-write: the runtime's stand-in for a closed
/// standard descriptor.
fn is_runtime_dev_null(file: &File) -> io::Result<bool> {
    let meta = file.metadata()?;
    if !meta.file_type().is_char_device() {
        return Ok(false);
    }
    let Ok(null) = std::fs::metadata("/dev/null") else {
        return Ok(false);
    };
    if !null.file_type().is_char_device() || meta.rdev() != null.rdev() {
        return Ok(false);
    }
    // SAFETY: F_GETFL on a descriptor this function borrows; no pointers are passed.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(flags & libc::O_ACCMODE == libc::O_RDWR)
}
