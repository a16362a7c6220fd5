//! Re-entrancy: a signal handler that reads the thread-local generator while it interrupts a
//! read on the same thread gets fresh bytes, with no deadlock, no panic and no byte sequence
//! served twice.
//!
//! A `setitimer(ITIMER_REAL)` timer raises `SIGALRM` every 50 µs while the main thread
//! reads in a loop (small reads from the buffer, reads that refill, direct fills). The
//! handler reads 16 bytes and stores them in a preallocated lock-free array. The loop runs
//! until the handler has run at least `MIN_CALLS` times *and* at least `MIN_INTERRUPTED` of
//! those reads interrupted a read in progress (counted by `fkrng::test_hooks::counters`), so the test
//! cannot pass without exercising the interrupted path.
//!
//! The main thread's output is checked as it streams, in bounded memory (it is never kept):
//! - every handler value is unique and not all zero;
//! - no handler value appears at any byte offset of the main thread's output read after
//!   it, nor of the `RECENT` bytes read before it (the read it interrupted included);
//! - no 16-byte value of the main thread's output (at 16-byte offsets of the stream)
//!   repeats, compared by 64-bit fingerprints (8 bytes kept per 16 read): with n values,
//!   two different random values share one with probability below n^2 / 2^65 (under
//!   10^-8 for the 3×10^5 values of a typical run).
//!
//! The main thread's output per interrupted read is about the timer interval divided by the
//! generator's time per byte, so the short interval keeps it to a few hundred MiB at most.
//! Progress goes to stderr.
//!
//! Runs without the test harness so that the process has one thread and `SIGALRM` always
//! lands on the reading thread. Needs the test hooks (`--cfg fkrng_test_hooks`: README's
//! test command); says "skipped" without them.

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("signal re-entrancy test: Linux only, skipped");
}

#[cfg(all(target_os = "linux", not(fkrng_test_hooks)))]
fn main() {
    println!(
        "signal re-entrancy test: skipped (needs --cfg fkrng_test_hooks: README's test command)"
    );
}

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
mod linux {
    use fkrng_test_support::signals::{self, AlarmTimer};
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

    /// Handler invocations to observe at least.
    const MIN_CALLS: usize = 2000;
    /// Of which at least this many interrupted a read in progress.
    const MIN_INTERRUPTED: u64 = 1000;
    /// Room for handler values (the loop stops long before it fills up).
    const SLOTS: usize = 1 << 18;
    /// Main-loop iterations after which the test gives up (the timer never fired).
    const MAX_ITERATIONS: usize = 50_000_000;
    /// Handler calls after which the test gives up (too few of them interrupted a read).
    /// Optimised builds spend most of the loop in the checker, not in the generator, so
    /// only about 3% of handler reads land inside a read: 1,000 of them take some 33,000
    /// calls, and this bound leaves room for rates down to 0.5%.
    const GIVE_UP_CALLS: usize = 200_000;
    /// Timer interval in microseconds.
    const INTERVAL_US: u32 = 50;
    /// Bytes of the main thread's latest output kept to check new handler values against
    /// (two of the largest reads).
    const RECENT: usize = 8 << 10;
    /// Bits of a window's prefix in the handler-value filter (a 128 KiB bitmap).
    const PREFIX_BITS: u32 = 20;
    /// Handler calls between progress lines.
    const PROGRESS_EVERY: usize = 500;

    static VALUES: [[AtomicU64; 2]; SLOTS] =
        [const { [AtomicU64::new(0), AtomicU64::new(0)] }; SLOTS];
    static CALLS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn on_alarm(_signal: libc::c_int) {
        // SAFETY: errno is thread-local; it is restored before returning.
        let errno = unsafe { *libc::__errno_location() };
        // `fill` and `array` (the fixed-size path) in turn; not `try_fill`: a failure would
        // panic, and a panic in a handler aborts.
        let v: [u8; 16] = if CALLS.load(Relaxed).is_multiple_of(2) {
            let mut v = [0u8; 16];
            fkrng::fill(&mut v);
            v
        } else {
            fkrng::array()
        };
        let i = CALLS.fetch_add(1, Relaxed);
        if i < SLOTS {
            let (a, b) = v.split_at(8);
            VALUES[i][0].store(u64::from_le_bytes(a.try_into().unwrap()), Relaxed);
            VALUES[i][1].store(u64::from_le_bytes(b.try_into().unwrap()), Relaxed);
        }
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    /// The streaming checks of the main thread's output against the handler values.
    struct Checker {
        /// Handler values so far.
        handler_values: HashSet<[u8; 16]>,
        /// One bit per `PREFIX_BITS`-bit prefix of a handler value: a window whose prefix
        /// misses it needs no set lookup.
        prefixes: Vec<u64>,
        /// Handler values taken from `VALUES` so far.
        taken: usize,
        /// The main thread's latest output (between `RECENT` and `2 * RECENT` bytes).
        recent: Vec<u8>,
        /// A 16-byte value of the main stream not yet complete.
        partial: Vec<u8>,
        /// 64-bit fingerprints of the main stream's 16-byte values.
        fingerprints: Vec<u64>,
        main_bytes: u64,
    }

    fn prefix(w: &[u8]) -> usize {
        let p = usize::from(w[0]) | usize::from(w[1]) << 8 | usize::from(w[2]) << 16;
        p & ((1 << PREFIX_BITS) - 1)
    }

    /// A 16-byte value's fingerprint: the XOR of its two 64-bit halves. For values that
    /// differ and are random, two fingerprints agree with probability 2^-64.
    fn fingerprint(v: &[u8]) -> u64 {
        let a = u64::from_le_bytes(v[..8].try_into().unwrap());
        let b = u64::from_le_bytes(v[8..16].try_into().unwrap());
        a ^ b
    }

    impl Checker {
        fn new() -> Self {
            Self {
                handler_values: HashSet::new(),
                prefixes: vec![0u64; (1 << PREFIX_BITS) / 64],
                taken: 0,
                recent: Vec::with_capacity(2 * RECENT + 4096),
                partial: Vec::with_capacity(16),
                fingerprints: Vec::with_capacity(1 << 22),
                main_bytes: 0,
            }
        }

        /// Takes the handler values stored since the last call: each is unique and not zero,
        /// and the main thread's recent output holds none of them.
        fn take_handler_values(&mut self) {
            let calls = CALLS.load(Relaxed).min(SLOTS);
            if calls == self.taken {
                return;
            }
            for slot in &VALUES[self.taken..calls] {
                let mut v = [0u8; 16];
                v[..8].copy_from_slice(&slot[0].load(Relaxed).to_le_bytes());
                v[8..].copy_from_slice(&slot[1].load(Relaxed).to_le_bytes());
                assert_ne!(v, [0u8; 16], "all-zero handler value");
                assert!(
                    self.handler_values.insert(v),
                    "a handler value was served twice"
                );
                let p = prefix(&v);
                self.prefixes[p / 64] |= 1 << (p % 64);
            }
            self.taken = calls;
            assert!(
                !self.holds_handler_value(0),
                "a handler value also appears in the main thread's output before it"
            );
        }

        /// Whether a window of `recent` that starts at `from` or later is a handler value.
        fn holds_handler_value(&self, from: usize) -> bool {
            self.recent[from..].windows(16).any(|w| {
                let p = prefix(w);
                self.prefixes[p / 64] & (1 << (p % 64)) != 0 && self.handler_values.contains(w)
            })
        }

        /// Checks one read of the main thread: none of its windows (also those that start in
        /// the previous read) is a handler value, and its 16-byte values are fingerprinted.
        fn main_read(&mut self, bytes: &[u8]) {
            let from = self.recent.len().saturating_sub(15);
            self.recent.extend_from_slice(bytes);
            assert!(
                !self.holds_handler_value(from),
                "a handler value also appears in the main thread's output after it"
            );
            if self.recent.len() > 2 * RECENT {
                self.recent.drain(..self.recent.len() - RECENT);
            }
            let mut rest = bytes;
            if !self.partial.is_empty() {
                let n = rest.len().min(16 - self.partial.len());
                self.partial.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if self.partial.len() == 16 {
                    self.fingerprints.push(fingerprint(&self.partial));
                    self.partial.clear();
                }
            }
            let mut chunks = rest.chunks_exact(16);
            self.fingerprints.extend((&mut chunks).map(fingerprint));
            self.partial.extend_from_slice(chunks.remainder());
            self.main_bytes += bytes.len() as u64;
        }

        /// No two 16-byte values of the main stream share a fingerprint.
        fn main_values_distinct(&mut self) -> usize {
            self.fingerprints.sort_unstable();
            let n = self.fingerprints.len();
            if let Some(w) = self.fingerprints.windows(2).find(|w| w[0] == w[1]) {
                panic!(
                    "the main loop repeated a 16-byte value (fingerprint {:#018x}; of {n} \
                     random values, two different ones share a fingerprint with a chance \
                     below n^2 / 2^65)",
                    w[0]
                );
            }
            n
        }
    }

    pub fn main() {
        // The stand-in VMClock page, where a run names one (.ci/run's snapshot section).
        fkrng::test_hooks::snapshot::stand_in_from_env();
        let mut check = Checker::new();
        // Seed this thread's state before the timer starts, so that the handler never races
        // the first set-up (that path is covered by the `fill` documentation, not here).
        let mut first = [0u8; 16];
        fkrng::fill(&mut first);
        check.main_read(&first);

        // SAFETY: the handler only reads the generator and touches atomics.
        unsafe { signals::on_signal(libc::SIGALRM, on_alarm, libc::SA_RESTART) };
        let interrupted_before = fkrng::test_hooks::counters::one_off_reads_interrupted();
        eprintln!(
            "signal re-entrancy: SIGALRM every {INTERVAL_US} µs until {MIN_CALLS} handler \
             reads, {MIN_INTERRUPTED} of them interrupting a read"
        );
        let timer = AlarmTimer::start(INTERVAL_US);

        // Read sizes: served from the buffer, crossing a refill, and direct fills; the second
        // 16-byte read of each round goes through `array` (the fixed-size path).
        let sizes = [16usize, 16, 48, 16, 200, 16, 1000, 16, 4096];
        let mut buf = vec![0u8; 4096];
        let mut iterations = 0usize;
        let mut next_progress = PROGRESS_EVERY;
        loop {
            let n = sizes[iterations % sizes.len()];
            if iterations % sizes.len() == 1 {
                buf[..16].copy_from_slice(&fkrng::array::<16>());
            } else {
                fkrng::fill(&mut buf[..n]);
            }
            check.take_handler_values();
            check.main_read(&buf[..n]);
            iterations += 1;
            let calls = CALLS.load(Relaxed);
            let interrupted =
                fkrng::test_hooks::counters::one_off_reads_interrupted() - interrupted_before;
            if calls >= MIN_CALLS && interrupted >= MIN_INTERRUPTED {
                break;
            }
            if calls >= next_progress {
                eprintln!(
                    "signal re-entrancy: {calls} handler reads, {interrupted} interrupted, \
                     {} MiB read by the main thread",
                    check.main_bytes >> 20
                );
                next_progress += PROGRESS_EVERY;
            }
            assert!(
                iterations < MAX_ITERATIONS && calls < GIVE_UP_CALLS,
                "gave up after {iterations} reads: {calls} handler calls, {interrupted} interrupted"
            );
        }
        drop(timer);
        // No timer is armed any more.
        signals::default_action(libc::SIGALRM);
        check.take_handler_values();

        let calls = CALLS.load(Relaxed);
        let interrupted =
            fkrng::test_hooks::counters::one_off_reads_interrupted() - interrupted_before;
        assert!(calls < SLOTS, "more handler calls than slots");
        assert_eq!(check.handler_values.len(), calls);
        eprintln!(
            "signal re-entrancy: checking {} MiB of main-thread output for repeats",
            check.main_bytes >> 20
        );
        let main_values = check.main_values_distinct();

        println!(
            "signal re-entrancy: {calls} handler reads ({interrupted} interrupted a read in \
             progress, {} found the thread idle) during {iterations} main-thread reads; {} \
             handler values and {} main-thread bytes ({main_values} 16-byte values) checked, \
             all distinct",
            calls as u64 - interrupted,
            check.handler_values.len(),
            check.main_bytes
        );
    }
}
