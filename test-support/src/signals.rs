//! Signal handlers and periodic timer signals for the tests that interrupt fkrng's reads.

/// Installs `handler` for `signal` with `flags` (`SA_RESTART`, `SA_ONSTACK`, ...) and an
/// empty mask.
///
/// # Safety
/// `handler` must be safe to run whenever the signal arrives: async-signal-safe work only
/// (atomics, fkrng's reads, which are made for it).
///
/// # Panics
/// If `sigaction` fails.
pub unsafe fn on_signal(
    signal: libc::c_int,
    handler: extern "C" fn(libc::c_int),
    flags: libc::c_int,
) {
    // SAFETY: a zeroed `sigaction` with the handler, flags and an initialised empty mask;
    // the caller vouches for the handler.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = flags;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(signal, &action, std::ptr::null_mut()),
            0,
            "sigaction"
        );
    }
}

/// Defines `extern "C" fn $name(signal)`, which calls the handler `$target` with the stack
/// pointer aligned to 16 bytes, as the System V ABI promises a handler. qemu-user 7.2 enters
/// x86-64 handlers 8 bytes off that alignment, and an aligned SSE store in the handler's code
/// (or in the atfork handlers of a `fork()` it makes) then faults; natively the alignment is
/// already there and nothing changes.
#[cfg(target_arch = "x86_64")]
#[macro_export]
macro_rules! aligned_handler {
    ($(#[$meta:meta])* fn $name:ident => $target:path) => {
        $(#[$meta])*
        #[unsafe(naked)]
        extern "C" fn $name(_: ::core::ffi::c_int) {
            // The frame pointer keeps the entry stack pointer; the handler gets its argument
            // in edi untouched and returns through the restored stack.
            ::core::arch::naked_asm!(
                "push rbp",
                "mov rbp, rsp",
                "and rsp, -16",
                "call {handler}",
                "mov rsp, rbp",
                "pop rbp",
                "ret",
                handler = sym $target,
            );
        }
    };
}

/// Restores the default action for `signal`.
pub fn default_action(signal: libc::c_int) {
    // SAFETY: the default action needs no handler.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

/// A POSIX timer that sends `signal` to the thread that started it every `interval_ns`
/// nanoseconds, from the kernel's timer interrupt (so the signal lands in whatever the
/// thread is running, however busy the machine), until dropped.
pub struct ThreadTimer(libc::timer_t);

impl ThreadTimer {
    /// Starts the timer; install the signal's handler first.
    ///
    /// # Panics
    /// If `timer_create` or `timer_settime` fails.
    pub fn start(signal: libc::c_int, interval_ns: libc::c_long) -> Self {
        // SAFETY: a zeroed `sigevent` with the fields a thread-directed timer reads set;
        // `timer` receives the new timer's id.
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = signal;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::mem::zeroed();
            assert_eq!(
                libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer),
                0,
                "timer_create"
            );
            let every = libc::timespec {
                tv_sec: 0,
                tv_nsec: interval_ns,
            };
            let spec = libc::itimerspec {
                it_interval: every,
                it_value: every,
            };
            assert_eq!(
                libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()),
                0,
                "timer_settime"
            );
            ThreadTimer(timer)
        }
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: deletes the timer made in `start`.
        unsafe { libc::timer_delete(self.0) };
    }
}

/// The process's real-time interval timer (`setitimer(ITIMER_REAL)`): `SIGALRM` every
/// `interval_us` microseconds, delivered to any thread of the process that does not block
/// it, until dropped.
pub struct AlarmTimer(());

impl AlarmTimer {
    /// Starts the timer; install the `SIGALRM` handler first.
    ///
    /// # Panics
    /// If `setitimer` fails.
    pub fn start(interval_us: u32) -> Self {
        set_alarm(interval_us);
        AlarmTimer(())
    }
}

impl Drop for AlarmTimer {
    fn drop(&mut self) {
        set_alarm(0);
    }
}

fn set_alarm(interval_us: u32) {
    // (`suseconds_t` itself is a deprecated name on musl.)
    let tv = libc::timeval {
        tv_sec: 0,
        // (32 bits on i686, 64 on x86-64; the intervals are below a second.)
        tv_usec: interval_us as _,
    };
    let timer = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `timer` is a valid itimerval; the old value is not wanted.
    let r = unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
    assert_eq!(r, 0, "setitimer");
}
