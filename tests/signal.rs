//! Re-entrancy: a signal handler that reads the thread-local generator while it interrupts a
//! read on the same thread gets fresh bytes, with no deadlock, no panic and no byte sequence
//! served twice.
//!
//! A `setitimer(ITIMER_REAL)` timer raises `SIGALRM` every 500 µs while the main thread
//! reads in a loop (small reads from the buffer, reads that refill, direct fills). The
//! handler reads 16 bytes and stores them in a preallocated lock-free array. The loop runs
//! until the handler has run at least `MIN_CALLS` times *and* at least `MIN_INTERRUPTED` of
//! those reads interrupted a read in progress (counted by `fkrng::probe`), so the test
//! cannot pass without exercising the interrupted path. Then every 16-byte value is checked:
//! handler values are unique and appear at no byte offset of the main thread's output.
//!
//! Runs without the test harness so that the process has one thread and `SIGALRM` always
//! lands on the reading thread.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("signal re-entrancy test: Linux only, skipped");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

    /// Handler invocations to observe at least.
    const MIN_CALLS: usize = 2000;
    /// Of which at least this many interrupted a read in progress.
    const MIN_INTERRUPTED: u64 = 1000;
    /// Room for handler values (the loop stops long before it fills up).
    const SLOTS: usize = 1 << 16;
    /// Main-loop iterations after which the test gives up (the timer never fired).
    const MAX_ITERATIONS: usize = 50_000_000;
    /// Handler calls after which the test gives up (too few of them interrupted a read).
    const GIVE_UP_CALLS: usize = 16 * MIN_CALLS;

    static VALUES: [[AtomicU64; 2]; SLOTS] =
        [const { [AtomicU64::new(0), AtomicU64::new(0)] }; SLOTS];
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_alarm(_signal: libc::c_int) {
        // SAFETY: errno is thread-local; it is restored before returning.
        let errno = unsafe { *libc::__errno_location() };
        let mut v = [0u8; 16];
        // `fill`, not `try_fill`: a failure would panic, and a panic in a handler aborts.
        fkrng::fill(&mut v);
        let i = CALLS.fetch_add(1, Relaxed);
        if i < SLOTS {
            let (a, b) = v.split_at(8);
            VALUES[i][0].store(u64::from_le_bytes(a.try_into().unwrap()), Relaxed);
            VALUES[i][1].store(u64::from_le_bytes(b.try_into().unwrap()), Relaxed);
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    fn set_timer(interval_us: libc::suseconds_t) {
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: interval_us,
        };
        let timer = libc::itimerval {
            it_interval: tv,
            it_value: tv,
        };
        // SAFETY: `timer` is a valid itimerval; the old value is not wanted.
        let r = unsafe { libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut()) };
        assert_eq!(r, 0, "setitimer");
    }

    pub fn main() {
        // Seed this thread's state before the timer starts, so that the handler never races
        // the first set-up (that path is covered by the `fill` documentation, not here).
        let mut main_out: Vec<u8> = Vec::with_capacity(64 << 20);
        let mut first = [0u8; 16];
        fkrng::fill(&mut first);
        main_out.extend_from_slice(&first);

        // SAFETY: installs a handler that only reads the generator and touches atomics.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGALRM, &action, std::ptr::null_mut()),
                0
            );
        }
        let interrupted_before = fkrng::probe::one_off_reads_interrupted();
        set_timer(500);

        // Read sizes: served from the buffer, crossing a refill, and direct fills.
        let sizes = [16usize, 16, 48, 16, 200, 16, 1000, 16, 4096];
        let mut buf = vec![0u8; 4096];
        let mut iterations = 0usize;
        loop {
            let n = sizes[iterations % sizes.len()];
            fkrng::fill(&mut buf[..n]);
            main_out.extend_from_slice(&buf[..n]);
            iterations += 1;
            let interrupted = fkrng::probe::one_off_reads_interrupted() - interrupted_before;
            if CALLS.load(Relaxed) >= MIN_CALLS && interrupted >= MIN_INTERRUPTED {
                break;
            }
            assert!(
                iterations < MAX_ITERATIONS && CALLS.load(Relaxed) < GIVE_UP_CALLS,
                "gave up after {iterations} reads: {} handler calls, {interrupted} interrupted",
                CALLS.load(Relaxed)
            );
        }
        set_timer(0);
        // SAFETY: restores the default action for SIGALRM (no timer is armed any more).
        unsafe { libc::signal(libc::SIGALRM, libc::SIG_DFL) };

        let calls = CALLS.load(Relaxed);
        let interrupted = fkrng::probe::one_off_reads_interrupted() - interrupted_before;
        assert!(calls < SLOTS, "more handler calls than slots");

        let mut handler_values = HashSet::new();
        for slot in &VALUES[..calls] {
            let mut v = [0u8; 16];
            v[..8].copy_from_slice(&slot[0].load(Relaxed).to_le_bytes());
            v[8..].copy_from_slice(&slot[1].load(Relaxed).to_le_bytes());
            assert_ne!(v, [0u8; 16], "all-zero handler value");
            assert!(handler_values.insert(v), "a handler value was served twice");
        }
        for w in main_out.windows(16) {
            assert!(
                !handler_values.contains(w),
                "a handler value also appears in the main thread's output"
            );
        }
        let mut main_values: Vec<&[u8]> = main_out.chunks_exact(16).collect();
        let total = main_values.len();
        main_values.sort_unstable();
        main_values.dedup();
        assert_eq!(
            main_values.len(),
            total,
            "the main loop repeated a 16-byte value"
        );

        println!(
            "signal re-entrancy: {calls} handler reads ({interrupted} interrupted a read in \
             progress, {} found the thread idle) during {iterations} main-thread reads; {} \
             handler values and {} main-thread bytes checked, all distinct",
            calls as u64 - interrupted,
            handler_values.len(),
            main_out.len()
        );
    }
}
