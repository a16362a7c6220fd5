//! Files opened, read, polled and closed by raw system calls (`libc::syscall`, which is not
//! a cancellation point), as glibc's own `__open_nocancel` and `__read_nocancel` are: a
//! thread with a `pthread_cancel` pending is never cancelled inside an fkrng call, and the
//! calls are async-signal-safe (no lock, no allocation). Every file fkrng opens goes
//! through [`Descriptor`].

use core::ffi::{CStr, c_int, c_long};

/// An open descriptor, closed exactly once when dropped.
pub(crate) struct Descriptor(c_int);

impl Descriptor {
    /// Opens `path` read-only, close-on-exec, never as a controlling terminal; `EINTR` is
    /// retried. Errors: `openat`'s `errno`.
    pub(crate) fn open(path: &CStr) -> Result<Self, i32> {
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY;
        loop {
            // SAFETY: `path` is NUL-terminated and outlives the call; `openat` reads it alone.
            let fd =
                unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), flags, 0) };
            match c_int::try_from(fd) {
                Ok(fd) if fd >= 0 => return Ok(Self(fd)),
                _ if errno() == libc::EINTR => {}
                _ => return Err(errno()),
            }
        }
    }

    /// The descriptor number, valid while `self` lives.
    pub(crate) fn raw(&self) -> c_int {
        self.0
    }

    /// One `read` into `dest`: the byte count, or -1 with `errno` set (`EINTR` included).
    pub(crate) fn read(&self, dest: &mut [u8]) -> isize {
        // SAFETY: `dest` is valid for writes of its length; the kernel writes at most that.
        let n = unsafe { libc::syscall(libc::SYS_read, self.0, dest.as_mut_ptr(), dest.len()) };
        n as isize
    }

    /// Waits with no timeout until the descriptor polls readable (`ppoll`, since not every
    /// architecture has `poll`): a non-negative count, or -1 with `errno` set.
    pub(crate) fn wait_readable(&self) -> c_int {
        let mut pfd = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        let null = core::ptr::null::<core::ffi::c_void>();
        // SAFETY: `pfd` is one valid, writable `pollfd`; a NULL timeout waits, a NULL signal
        // mask (of 8 bytes) keeps the thread's.
        let n =
            unsafe { libc::syscall(libc::SYS_ppoll, &mut pfd, 1 as c_long, null, null, 8usize) };
        n as c_int
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: opened by `open`, closed exactly once; an error leaves nothing to undo.
        unsafe { libc::syscall(libc::SYS_close, self.0) };
    }
}

/// Reads for a `std::io::BufReader` (`/proc/self/smaps`), with `EINTR` retried by its users.
impl std::io::Read for &Descriptor {
    fn read(&mut self, dest: &mut [u8]) -> std::io::Result<usize> {
        usize::try_from(Descriptor::read(self, dest)).map_err(|_| std::io::Error::last_os_error())
    }
}

/// This thread's `errno`.
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}
