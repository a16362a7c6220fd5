//! Run a closure in a child process made by `fork()` or by a raw `clone` system call, and
//! get back its exit status and the bytes it wrote to a pipe.
//!
//! The child runs the closure and ends with `_exit` (no unwinding, no exit handlers, no
//! flushing of the parent's buffers). What it may safely do is the caller's business: in a
//! child of a multi-threaded process only async-signal-safe work (a generator read, `write`,
//! a nested fork).

use std::io::Write;

/// How the child is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// `fork()`: the C library's atfork handlers run in the child.
    Fork,
    /// A raw `clone` system call with only `SIGCHLD`: no atfork handler runs.
    #[cfg(target_os = "linux")]
    RawClone,
}

/// The write end of the pipe to the parent, as the child sees it.
pub struct Pipe(libc::c_int);

impl Pipe {
    /// Writes all of `bytes` to the parent; ends the child with status 4 if it cannot.
    pub fn send(&self, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            // SAFETY: writes from the initialised bytes `bytes[done..]`.
            let n =
                unsafe { libc::write(self.0, bytes[done..].as_ptr().cast(), bytes.len() - done) };
            if n <= 0 {
                // SAFETY: ends the child at once, without running the parent's cleanup.
                unsafe { libc::_exit(4) }
            }
            done += n as usize;
        }
    }

    /// The descriptor, for a child that closes descriptors itself.
    pub fn fd(&self) -> libc::c_int {
        self.0
    }
}

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It exited with this status.
    Exited(i32),
    /// A signal of this number ended it.
    Signalled(i32),
}

impl Status {
    /// The status a shell shows: the exit status, or 128 plus the signal's number.
    pub fn code(self) -> i32 {
        match self {
            Status::Exited(code) => code,
            Status::Signalled(signal) => 128 + signal,
        }
    }
}

/// A finished child: how it ended and everything it wrote to its [`Pipe`].
#[derive(Debug)]
pub struct Child {
    /// How it ended.
    pub status: Status,
    /// Everything it wrote to its pipe, in order.
    pub bytes: Vec<u8>,
}

impl Child {
    /// The bytes, after checking that the child exited with status 0.
    ///
    /// # Panics
    /// If it did not, naming how it ended.
    pub fn expect_success(self, what: &str) -> Vec<u8> {
        assert_eq!(self.status, Status::Exited(0), "{what}: child failed");
        self.bytes
    }
}

/// Makes a child by `how` that runs `body` and `_exit`s with the status `body` returns;
/// reads what it writes to its [`Pipe`] until it closes, then reaps it. Flushes this
/// process's standard output first, so that the child does not inherit buffered lines.
///
/// # Panics
/// If the pipe, the fork or clone, a read or the wait fails.
pub fn run(how: How, body: impl FnOnce(&Pipe) -> i32) -> Child {
    std::io::stdout().flush().unwrap();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: the child runs `body` and ends with `_exit`; it never returns into the caller.
    let pid = unsafe {
        match how {
            How::Fork => libc::fork(),
            #[cfg(target_os = "linux")]
            How::RawClone => {
                // s390x's clone takes the new stack first and the flags second.
                #[cfg(not(target_arch = "s390x"))]
                let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0);
                #[cfg(target_arch = "s390x")]
                let pid = libc::syscall(libc::SYS_clone, 0, libc::SIGCHLD, 0, 0, 0);
                pid as libc::pid_t
            }
        }
    };
    assert!(pid >= 0, "{how:?} failed");
    if pid == 0 {
        // SAFETY: the child's copy of the read end is not needed.
        unsafe { libc::close(fds[0]) };
        let status = body(&Pipe(fds[1]));
        // SAFETY: ends the child without unwinding or running exit handlers.
        unsafe { libc::_exit(status) }
    }
    // SAFETY: closes the parent's copy of the write end.
    unsafe { libc::close(fds[1]) };
    let mut bytes = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        // SAFETY: reads at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::read(fds[0], buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        assert!(n >= 0, "read from child");
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&buf[..n as usize]);
    }
    let mut status = 0;
    // SAFETY: closes the read end and reaps the child made above.
    unsafe {
        libc::close(fds[0]);
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid, "waitpid");
    }
    let status = if libc::WIFEXITED(status) {
        Status::Exited(libc::WEXITSTATUS(status))
    } else {
        Status::Signalled(libc::WTERMSIG(status))
    };
    Child { status, bytes }
}
