//! Stack use of reads: every kind of read fits a 16 KiB thread stack (`PTHREAD_STACK_MIN`;
//! the C library's larger minimum where it has one, 128 KiB on AArch64) and, in a signal
//! handler, an alternate signal stack of `SIGSTKSZ` bytes (8 KiB on x86-64, 16 KiB on
//! AArch64).
//!
//! Each read runs on a stack of exactly that size that this test maps below a `PROT_NONE`
//! guard page and paints with one byte value beforehand: a thread made with
//! `pthread_attr_setstack`, or a `SIGUSR1` handler (`SA_ONSTACK`) on an alternate stack
//! installed with `sigaltstack`. A read that overran the stack would hit the guard page and
//! kill the test with `SIGSEGV`; afterwards the paint still untouched at the bottom of the
//! stack gives the bytes used. The same measurement with no read (a thread that returns at
//! once, a handler that does nothing) gives what the C library (thread descriptor, static
//! TLS at the top of a thread stack) and the kernel (the signal frame at the top of an
//! alternate stack, `getauxval(AT_MINSIGSTKSZ)` bytes at most) take before the read starts.
//!
//! Kinds of read: a thread's first read (16 bytes: state set-up, seeding and a refill), a
//! refill (a 1-byte first read, then 992 bytes), a direct fill (a first read of 4 KiB), and
//! the one-off path that serves reads without a thread state (a thread-local destructor
//! that reads after fkrng's state was released; the same code serves a signal handler that
//! interrupts a read). Unoptimised builds (debug assertions on) give the 8 KiB alternate
//! stack no such promise and measure on 32 KiB instead, and builds at opt-level 1, `s` or
//! `z` on 16 KiB.
//!
//! Runs without the test harness: one process, one thread at a time, no harness threads
//! that could take the signal.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("stack use test: Linux only, skipped");
}

#[cfg(target_os = "linux")]
mod linux {
    use fkrng_test_support::signals;
    use fkrng_test_support::stack::PaintedStack;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// A thread stack of 16 KiB (`PTHREAD_STACK_MIN` on x86-64 and s390x), or this target's
    /// `PTHREAD_STACK_MIN` where the C library refuses smaller stacks (128 KiB on AArch64).
    const THREAD_STACK: usize = if libc::PTHREAD_STACK_MIN > 16 << 10 {
        libc::PTHREAD_STACK_MIN
    } else {
        16 << 10
    };

    /// An alternate signal stack of `SIGSTKSZ` bytes: 8 KiB on x86-64, 16 KiB on AArch64,
    /// whose kernel signal frame is larger (32 KiB in unoptimised builds, 16 KiB at
    /// opt-level 1, `s` and `z`, where a handler's read needs up to 10.7 KiB on x86-64 with
    /// the kernel's frame: less inlining, deeper frames and a larger scrub; `fkrng_opt_level`
    /// comes from the package's build script).
    const SIGNAL_STACK: usize = if cfg!(debug_assertions) {
        32 << 10
    } else if cfg!(any(
        fkrng_opt_level = "1",
        fkrng_opt_level = "s",
        fkrng_opt_level = "z"
    )) {
        16 << 10
    } else if libc::SIGSTKSZ > 8 << 10 {
        libc::SIGSTKSZ
    } else {
        8 << 10
    };

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Kind {
        Nothing,
        FirstRead,
        Refill,
        DirectFill,
        OneOff,
    }

    const KINDS: [Kind; 4] = [
        Kind::FirstRead,
        Kind::Refill,
        Kind::DirectFill,
        Kind::OneOff,
    ];

    /// Reads made by the thread-local destructor (the one-off path).
    static AT_EXIT_READS: AtomicUsize = AtomicUsize::new(0);

    /// Reads made by the signal handler.
    static HANDLER_READS: AtomicUsize = AtomicUsize::new(0);

    /// What the handler does: a `Kind` as a number.
    static HANDLER_KIND: AtomicUsize = AtomicUsize::new(0);

    /// Raises `SIGUSR1` from a thread-local destructor that runs after fkrng's.
    struct AtExit {
        /// In the handler (true) or right here (false).
        in_handler: Cell<bool>,
    }

    impl Drop for AtExit {
        fn drop(&mut self) {
            if self.in_handler.get() {
                raise_on_this_thread();
            } else {
                fkrng::fill(&mut [0u8; 16]);
                AT_EXIT_READS.fetch_add(1, Relaxed);
            }
        }
    }

    std::thread_local! {
        static AT_EXIT: AtExit = const { AtExit { in_handler: Cell::new(false) } };
    }

    /// The read of `kind`, on the calling thread (which has made no read yet). For
    /// `OneOff` the read happens in a thread-local destructor at thread exit; with
    /// `in_handler` it happens in the signal handler, raised from there.
    fn read(kind: Kind, in_handler: bool) {
        // SAFETY: one thread at a time runs reads (threads are joined before the next), and
        // a handler runs only where the thread is not itself in `read`.
        let buf = unsafe { &mut *BUFFER.0.get() };
        match kind {
            Kind::Nothing => {}
            Kind::FirstRead => fkrng::fill(&mut buf[..16]),
            Kind::Refill => {
                fkrng::fill(&mut buf[..1]);
                fkrng::fill(&mut buf[..992]);
            }
            Kind::DirectFill => fkrng::fill(buf),
            Kind::OneOff => {
                // Registered before fkrng's own thread-local, so destroyed after it.
                AT_EXIT.with(|a| a.in_handler.set(in_handler));
                fkrng::fill(&mut buf[..1]);
            }
        }
        std::hint::black_box(buf);
    }

    /// The destination of the reads, out of the stacks measured.
    struct Buffer(std::cell::UnsafeCell<[u8; 4096]>);

    // SAFETY: used by one thread at a time (see `read`).
    unsafe impl Sync for Buffer {}

    static BUFFER: Buffer = Buffer(std::cell::UnsafeCell::new([0; 4096]));

    extern "C" fn on_signal(_: libc::c_int) {
        let kind = kind_of(HANDLER_KIND.load(Relaxed));
        match kind {
            Kind::Nothing => return,
            // Set up by `in_handler` outside the handler: only the 992-byte read here.
            // SAFETY: as in `read`.
            Kind::Refill => fkrng::fill(unsafe { &mut (&mut *BUFFER.0.get())[..992] }),
            Kind::OneOff => fkrng::fill(&mut [0u8; 16]),
            _ => read(kind, true),
        }
        HANDLER_READS.fetch_add(1, Relaxed);
    }

    fn raise_on_this_thread() {
        // SAFETY: sends a signal to the calling thread, whose handler is installed.
        assert_eq!(
            unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) },
            0
        );
    }

    fn kind_of(n: usize) -> Kind {
        KINDS
            .into_iter()
            .chain([Kind::Nothing])
            .find(|&k| k as usize == n)
            .unwrap()
    }

    /// Runs `body(kind)` on a new thread, on `stack` if given (else a default stack).
    fn on_new_thread(stack: Option<&PaintedStack>, body: fn(Kind), kind: Kind) {
        struct Job {
            body: fn(Kind),
            kind: Kind,
        }
        extern "C" fn run(job: *mut libc::c_void) -> *mut libc::c_void {
            // SAFETY: `job` points to the `Job` below, which outlives the joined thread.
            let job = unsafe { &*job.cast::<Job>() };
            (job.body)(job.kind);
            std::ptr::null_mut()
        }
        let mut job = Job { body, kind };
        // SAFETY: the attributes name the painted stack (if any), which outlives the joined
        // thread, as does `job`.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_attr_init(&mut attr), 0);
            if let Some(stack) = stack {
                assert_eq!(
                    libc::pthread_attr_setstack(&mut attr, stack.stack(), stack.size()),
                    0
                );
            }
            // (An integer on glibc, a pointer on musl: zeroed either way.)
            let mut thread: libc::pthread_t = std::mem::zeroed();
            let arg = (&raw mut job).cast();
            assert_eq!(libc::pthread_create(&mut thread, &attr, run, arg), 0);
            assert_eq!(libc::pthread_join(thread, std::ptr::null_mut()), 0);
            libc::pthread_attr_destroy(&mut attr);
        }
    }

    /// Bytes of a painted [`THREAD_STACK`]-byte thread stack that the read of `kind` used.
    fn on_thread(kind: Kind) -> usize {
        let stack = PaintedStack::new(THREAD_STACK);
        on_new_thread(Some(&stack), |kind| read(kind, false), kind);
        stack.used()
    }

    /// The alternate signal stack of the next handler thread: its address.
    static ALT_STACK: AtomicUsize = AtomicUsize::new(0);

    /// Bytes of a painted [`SIGNAL_STACK`]-byte alternate signal stack that the read of
    /// `kind` in a `SIGUSR1` handler used (with the kernel's signal frame).
    fn in_handler(kind: Kind) -> usize {
        let stack = PaintedStack::new(SIGNAL_STACK);
        ALT_STACK.store(stack.stack() as usize, Relaxed);
        HANDLER_KIND.store(kind as usize, Relaxed);
        on_new_thread(
            None,
            |kind| {
                let alt = libc::stack_t {
                    ss_sp: ALT_STACK.load(Relaxed) as *mut libc::c_void,
                    ss_flags: 0,
                    ss_size: SIGNAL_STACK,
                };
                // SAFETY: the alternate stack stays mapped until the thread is joined.
                assert_eq!(unsafe { libc::sigaltstack(&alt, std::ptr::null_mut()) }, 0);
                match kind {
                    Kind::Refill => {
                        fkrng::fill(&mut [0u8; 1]);
                        raise_on_this_thread();
                    }
                    // The thread-local destructor raises the signal at thread exit.
                    Kind::OneOff => read(kind, true),
                    _ => raise_on_this_thread(),
                }
            },
            kind,
        );
        stack.used()
    }

    /// Signals the storm handler has run.
    static STORM_SIGNALS: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn count_signal(_: libc::c_int) {
        STORM_SIGNALS.fetch_add(1, Relaxed);
    }

    /// The reading thread of the storm (a `pthread_t`).
    static STORM_TARGET: AtomicUsize = AtomicUsize::new(0);

    /// Batches (a refill and a direct fill) of the storm interrupted by a signal, after which
    /// it stops.
    const STORM_INTERRUPTED: usize = 2000;

    /// Batches after which the storm stops however few were interrupted.
    const STORM_MAX_BATCHES: usize = 200_000;

    /// Interrupted batches the storm must see for its figure to count.
    const STORM_MIN_INTERRUPTED: usize = 100;

    /// Batches of the storm that a signal interrupted, and batches run.
    static STORM_BATCHES: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

    /// Bytes of a painted [`THREAD_STACK`]-byte thread stack used by refills and direct
    /// fills while another thread sends `SIGUSR2` (handled on the same stack, so the
    /// kernel's signal frames land below whatever the reads had pushed) every ~20 µs, until
    /// [`STORM_INTERRUPTED`] batches were interrupted by a signal, or for
    /// [`STORM_MAX_BATCHES`] batches; returns the interrupted batches and the batches too.
    fn under_signals() -> (usize, usize, usize) {
        // SAFETY: a handler that only counts, on the interrupted stack.
        unsafe { signals::on_signal(libc::SIGUSR2, count_signal, libc::SA_RESTART) };
        let stack = PaintedStack::new(THREAD_STACK);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sender = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // SAFETY: sets this thread's timer slack to 1 ns, for short sleeps.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1) };
                while !stop.load(Relaxed) {
                    let target = STORM_TARGET.load(Relaxed);
                    if target != 0 {
                        // SAFETY: the target thread clears STORM_TARGET before it exits,
                        // and is joined only after this thread stops.
                        unsafe { libc::pthread_kill(target as libc::pthread_t, libc::SIGUSR2) };
                    }
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
            })
        };
        on_new_thread(
            Some(&stack),
            |_| {
                // SAFETY: the calling thread's id.
                STORM_TARGET.store(unsafe { libc::pthread_self() } as usize, Relaxed);
                // SAFETY: as in `read`.
                let buf = unsafe { &mut *BUFFER.0.get() };
                let (mut interrupted, mut batches) = (0, 0);
                while interrupted < STORM_INTERRUPTED && batches < STORM_MAX_BATCHES {
                    let before = STORM_SIGNALS.load(Relaxed);
                    fkrng::fill(&mut buf[..992]);
                    fkrng::fill(&mut buf[..1100]);
                    interrupted += usize::from(STORM_SIGNALS.load(Relaxed) != before);
                    batches += 1;
                }
                STORM_TARGET.store(0, Relaxed);
                STORM_BATCHES[0].store(interrupted, Relaxed);
                STORM_BATCHES[1].store(batches, Relaxed);
            },
            Kind::Nothing,
        );
        stop.store(true, Relaxed);
        sender.join().unwrap();
        (
            stack.used(),
            STORM_BATCHES[0].load(Relaxed),
            STORM_BATCHES[1].load(Relaxed),
        )
    }

    pub fn main() {
        // SAFETY: the handler runs on the alternate stack and only reads the generator (as
        // the test's subject) and touches atomics.
        unsafe { signals::on_signal(libc::SIGUSR1, on_signal, libc::SA_ONSTACK) };
        let profile = if cfg!(debug_assertions) {
            "debug assertions on (opt-level 0 by default)"
        } else {
            "optimised"
        };
        println!("stack use, {profile} build");
        let thread_base = on_thread(Kind::Nothing);
        let handler_base = in_handler(Kind::Nothing);
        println!(
            "  {THREAD_STACK}-byte thread stack: {thread_base} bytes in use before any read \
             (thread descriptor, TLS, start-up)"
        );
        println!(
            "  {SIGNAL_STACK}-byte alternate signal stack: {handler_base} bytes in use by the \
             kernel's signal frame and an empty handler"
        );
        for kind in KINDS {
            let one_offs = AT_EXIT_READS.load(Relaxed);
            let used = on_thread(kind);
            if kind == Kind::OneOff {
                assert_eq!(AT_EXIT_READS.load(Relaxed), one_offs + 1, "destructor read");
            }
            let calls = HANDLER_READS.load(Relaxed);
            let in_signal = in_handler(kind);
            assert_eq!(
                HANDLER_READS.load(Relaxed),
                calls + 1,
                "{kind:?}: handler read"
            );
            println!(
                "  {kind:?}: thread stack {used} of {THREAD_STACK} bytes ({} for the read), \
                 alternate stack {in_signal} of {SIGNAL_STACK} bytes ({} for the read)",
                used.saturating_sub(thread_base),
                in_signal.saturating_sub(handler_base),
            );
        }
        let (used, interrupted, batches) = under_signals();
        println!(
            "  refills and direct fills under a signal storm: thread stack {used} of \
             {THREAD_STACK} bytes ({} for the reads and the signal frames), {interrupted} of \
             {batches} batches interrupted by a signal",
            used.saturating_sub(thread_base)
        );
        // The figure covers signal frames pushed during reads only if signals came then.
        assert!(
            interrupted >= STORM_MIN_INTERRUPTED,
            "only {interrupted} of {batches} batches were interrupted by a signal"
        );
    }
}
