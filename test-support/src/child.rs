//! Run a closure in a child process made by `fork()` or by a raw `clone` system call, and
//! get back its exit status and the bytes it wrote to a pipe.
//!
//! The child runs the closure and ends with `_exit` (no unwinding, no exit handlers, no
//! flushing of the parent's buffers). What it may safely do is the caller's business: in a
//! child of a multi-threaded process only async-signal-safe work (a generator read, `write`,
//! a nested fork).

use std::io::Write;
use std::time::{Duration, Instant};

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

/// How long [`run`] waits for a child to exit. A child here does microseconds of work; the
/// bound is for an emulated run on a loaded machine.
pub const TIME_LIMIT: Duration = Duration::from_secs(120);

/// A child that was still running when its time ran out, and was killed and reaped.
#[derive(Debug)]
pub struct TimedOut {
    /// Its process id, already reaped.
    pub pid: libc::pid_t,
    /// What it was waiting in, from `/proc/<pid>/wchan` read just before the kill: a
    /// kernel function's name, `0` when it was running rather than waiting (Linux), or
    /// empty where there is no such file.
    pub waiting_in: String,
    /// Everything it had written to its pipe by then.
    pub bytes: Vec<u8>,
}

/// Makes a child by `how` that runs `body` and `_exit`s with the status `body` returns;
/// reads what it writes to its [`Pipe`] until it has exited and been reaped, and returns
/// both. Flushes this process's standard output first, so that the child does not inherit
/// buffered lines.
///
/// # Panics
/// If the pipe, the fork or clone, a read or the wait fails, or if the child has not exited
/// within [`TIME_LIMIT`] (it is killed first, and the message says what it was waiting
/// in), so that a child that deadlocks fails its test instead of hanging the run.
pub fn run(how: How, body: impl FnOnce(&Pipe) -> i32) -> Child {
    run_within(how, TIME_LIMIT, body).unwrap_or_else(|hung| {
        panic!(
            "{how:?} child still running after {} s, killed; it was waiting in '{}' \
             and had sent {} bytes",
            TIME_LIMIT.as_secs(),
            hung.waiting_in,
            hung.bytes.len()
        )
    })
}

/// [`run`] with a time limit of `limit` (whole milliseconds): a child that has not exited
/// by then is killed with `SIGKILL`, reaped, and reported as [`TimedOut`]. For a test whose
/// failure is a child that hangs.
///
/// # Panics
/// If the pipe, the fork or clone, a read or the wait fails.
pub fn run_within(
    how: How,
    limit: Duration,
    body: impl FnOnce(&Pipe) -> i32,
) -> Result<Child, TimedOut> {
    let deadline = Instant::now() + limit;
    std::io::stdout().flush().unwrap();
    let fds = pipe_cloexec();
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
    // The end is the child's exit, not the pipe's end of file: a process that inherited
    // the write end (a parallel test's own child, forked meanwhile) would delay that. Once
    // the child is reaped, what it wrote is all in the pipe, and is read before returning.
    let mut bytes = Vec::new();
    let mut status = 0;
    let mut exited = false;
    let mut open = true;
    loop {
        if !exited {
            // SAFETY: polls our own child made above, without blocking.
            let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            assert!(reaped == 0 || reaped == pid || interrupted(), "waitpid");
            exited = reaped == pid;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let got = if open {
            let wait = if exited {
                Duration::ZERO
            } else {
                left.min(POLL_STEP)
            };
            read_some(fds[0], &mut bytes, wait)
        } else {
            if !exited {
                std::thread::sleep(left.min(POLL_STEP));
            }
            Got::EndOfFile
        };
        open &= got != Got::EndOfFile;
        if exited && got != Got::Data {
            break;
        }
        if Instant::now() >= deadline {
            if exited {
                break;
            }
            let waiting_in =
                std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
            // SAFETY: kills our own child, still unreaped, so `pid` is still its number.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            reap(pid, &mut status);
            // SAFETY: closes the read end.
            unsafe { libc::close(fds[0]) };
            return Err(TimedOut {
                pid,
                waiting_in,
                bytes,
            });
        }
    }
    // SAFETY: closes the read end; the child was reaped above.
    unsafe { libc::close(fds[0]) };
    let status = if libc::WIFEXITED(status) {
        Status::Exited(libc::WEXITSTATUS(status))
    } else {
        Status::Signalled(libc::WTERMSIG(status))
    };
    Ok(Child { status, bytes })
}

/// How long one wait for the child's bytes or exit lasts before the loop looks again.
const POLL_STEP: Duration = Duration::from_millis(5);

/// What one [`read_some`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Got {
    Data,
    Nothing,
    EndOfFile,
}

/// Waits up to `wait` for the pipe `fd` to be readable, then reads once into `bytes`.
fn read_some(fd: libc::c_int, bytes: &mut Vec<u8>, wait: Duration) -> Got {
    let mut ready = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let wait_ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: polls the one descriptor in `ready`.
    let polled = unsafe { libc::poll(&mut ready, 1, wait_ms) };
    if polled < 0 && interrupted() {
        return Got::Nothing;
    }
    assert!(polled >= 0, "poll of the pipe from the child");
    if polled == 0 {
        return Got::Nothing;
    }
    let mut buf = [0u8; 4096];
    // SAFETY: reads at most `buf.len()` bytes into `buf`.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 && interrupted() {
        return Got::Nothing;
    }
    assert!(n >= 0, "read from child");
    if n == 0 {
        return Got::EndOfFile;
    }
    bytes.extend_from_slice(&buf[..n as usize]);
    Got::Data
}

/// Whether the last failed call was interrupted by a signal (`EINTR`).
fn interrupted() -> bool {
    std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
}

/// Waits for our own child `pid` to end and stores its status.
fn reap(pid: libc::pid_t, status: &mut libc::c_int) {
    loop {
        // SAFETY: waits for our own child.
        let reaped = unsafe { libc::waitpid(pid, status, 0) };
        if reaped == pid {
            return;
        }
        assert!(interrupted(), "waitpid");
    }
}

/// A pipe whose two ends close on `exec`, so that a program another test starts meanwhile
/// does not keep the write end open.
fn pipe_cloexec() -> [libc::c_int; 2] {
    let mut fds = [0; 2];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: `fds` has room for two descriptors.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        0,
        "pipe2"
    );
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    // SAFETY: `fds` has room for two descriptors; `fcntl` sets a flag on each of them.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0, "pipe");
        for fd in fds {
            assert_eq!(libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC), 0, "fcntl");
        }
    }
    fds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sends_its_bytes_and_status() {
        #[cfg(target_os = "linux")]
        let ways = [How::Fork, How::RawClone];
        #[cfg(not(target_os = "linux"))]
        let ways = [How::Fork];
        for how in ways {
            let child = run(how, |pipe| {
                pipe.send(b"from the child");
                7
            });
            assert_eq!(child.status, Status::Exited(7));
            assert_eq!(child.bytes, b"from the child");
        }
    }

    #[test]
    fn a_child_that_hangs_is_killed_at_its_time_limit() {
        // One child keeps its pipe open; the other closes it and then does not exit. (Two
        // seconds: time enough for a child under an emulator to send its bytes.)
        let limit = Duration::from_secs(2);
        for close_first in [false, true] {
            let started = Instant::now();
            let hung = run_within(How::Fork, limit, |pipe| {
                pipe.send(b"partial");
                if close_first {
                    // SAFETY: closes the child's own write end.
                    unsafe { libc::close(pipe.fd()) };
                }
                // SAFETY: pause only waits for a signal.
                unsafe { libc::pause() };
                0
            })
            .expect_err("the child never exits");
            assert!(started.elapsed() >= limit);
            assert_eq!(hung.bytes, b"partial");
            // Linux names the kernel function the child sleeps in (`__do_sys_pause` on
            // x86-64; another under an emulator, or where the C library waits otherwise).
            #[cfg(target_os = "linux")]
            assert!(!hung.waiting_in.is_empty(), "no wait channel read");
            // Killed and reaped: no child of that number is left to wait for.
            // SAFETY: waitpid only reports on our children.
            let again = unsafe { libc::waitpid(hung.pid, core::ptr::null_mut(), libc::WNOHANG) };
            assert_eq!(again, -1, "the timed-out child was not reaped");
        }
    }

    #[test]
    fn a_child_that_exits_is_done_while_another_process_holds_its_pipe() {
        // Waiting for the pipe's end of file would outlast the limit and report a timeout.
        let child = run_within(How::Fork, Duration::from_secs(10), |pipe| {
            // A grandchild that inherits the write end and keeps it for 30 seconds.
            // SAFETY: the grandchild only sleeps and `_exit`s.
            if unsafe { libc::fork() } == 0 {
                unsafe {
                    libc::sleep(30);
                    libc::_exit(0)
                }
            }
            pipe.send(b"before exit");
            3
        })
        .expect("the child exited at once, its grandchild holding the pipe");
        assert_eq!(child.status, Status::Exited(3));
        assert_eq!(child.bytes, b"before exit");
    }
}
