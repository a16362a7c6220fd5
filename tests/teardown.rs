//! Reads from thread-local destructors, before and after the thread's generator state is
//! released at thread exit.
//!
//! Thread-local destructors run in the reverse order of their registration (glibc's
//! `__cxa_thread_atexit_impl`, which Rust's std uses on Linux). A thread-local touched
//! *before* the thread's first fkrng read is therefore destroyed *after* fkrng's own state;
//! its destructor's read must get fresh bytes from a one-off OS-keyed generator. The test
//! checks that it really took that path (`fkrng::test_hooks::counters::one_off_reads_unavailable`), so it
//! fails if the ordering assumption breaks instead of passing without exercising anything.
//!
//! Built only with the test hooks (`--cfg fkrng_test_hooks`: README's test command); without
//! them this test target has no tests.

#![cfg(fkrng_test_hooks)]

use std::sync::Mutex;

/// One test at a time: the probe counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Values read by destructors, and whether the read succeeded.
static AT_EXIT: Mutex<Vec<(bool, [u8; 32])>> = Mutex::new(Vec::new());

struct ReadsAtExit;

impl Drop for ReadsAtExit {
    fn drop(&mut self) {
        let mut v = [0u8; 32];
        let ok = fkrng::try_fill(&mut v).is_ok();
        AT_EXIT.lock().unwrap().push((ok, v));
    }
}

std::thread_local! {
    static READS_AT_EXIT: ReadsAtExit = const { ReadsAtExit };
}

const THREADS: usize = 8;

/// Runs `THREADS` threads of `body`, returns what they read while alive and what their
/// destructors read, and how many one-off reads "without state" happened meanwhile.
fn run(body: fn() -> Vec<u8>) -> (Vec<Vec<u8>>, Vec<[u8; 32]>, u64) {
    AT_EXIT.lock().unwrap().clear();
    let unavailable = fkrng::test_hooks::counters::one_off_reads_unavailable();
    let alive: Vec<Vec<u8>> = (0..THREADS)
        .map(|_| std::thread::spawn(body))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("no panic, also not in destructors"))
        .collect();
    let one_offs = fkrng::test_hooks::counters::one_off_reads_unavailable() - unavailable;
    let at_exit = AT_EXIT.lock().unwrap().clone();
    assert_eq!(at_exit.len(), THREADS, "every destructor ran");
    assert!(
        at_exit.iter().all(|(ok, _)| *ok),
        "a destructor read failed"
    );
    (
        alive,
        at_exit.into_iter().map(|(_, v)| v).collect(),
        one_offs,
    )
}

/// Destructor values are non-zero, distinct across threads, and absent from the threads'
/// own output.
fn check_fresh(alive: &[Vec<u8>], at_exit: &[[u8; 32]]) {
    for (i, v) in at_exit.iter().enumerate() {
        assert_ne!(*v, [0u8; 32]);
        for w in &at_exit[i + 1..] {
            assert_ne!(v, w, "two threads' destructors read the same bytes");
        }
        for out in alive {
            assert!(
                !out.windows(32).any(|w| w == v),
                "destructor replayed output"
            );
        }
    }
}

// Not on Windows: a destructor registered before the first read still finds the state there.
#[cfg(not(windows))]
#[test]
fn destructor_after_release_gets_fresh_bytes_from_the_os() {
    fkrng::test_hooks::snapshot::stand_in_from_env();
    let _serial = SERIAL.lock().unwrap();
    let (alive, at_exit, one_offs) = run(|| {
        // Registered first, so destroyed after fkrng's state.
        READS_AT_EXIT.with(|_| ());
        let mut out = vec![0u8; 2048];
        fkrng::fill(&mut out);
        out
    });
    assert_eq!(
        one_offs, THREADS as u64,
        "each destructor read found the state released and used the OS"
    );
    check_fresh(&alive, &at_exit);
}

#[test]
fn destructor_before_release_uses_the_live_state() {
    fkrng::test_hooks::snapshot::stand_in_from_env();
    let _serial = SERIAL.lock().unwrap();
    let (alive, at_exit, one_offs) = run(|| {
        let mut out = vec![0u8; 2048];
        fkrng::fill(&mut out);
        // Registered after fkrng's state, so destroyed before it.
        READS_AT_EXIT.with(|_| ());
        out
    });
    assert_eq!(one_offs, 0, "the state was still there");
    check_fresh(&alive, &at_exit);
}

#[test]
fn first_read_of_a_thread_from_a_destructor() {
    fkrng::test_hooks::snapshot::stand_in_from_env();
    let _serial = SERIAL.lock().unwrap();
    let os_reads = fkrng::test_hooks::counters::os_reads();
    let (_, at_exit, one_offs) = run(|| {
        READS_AT_EXIT.with(|_| ());
        Vec::new()
    });
    // Each thread sets up its state during its exit (glibc runs destructors registered
    // while destructors run, so the state is still wiped and released) or, where that is
    // refused, bypasses it: one OS read per thread either way.
    assert_eq!(
        fkrng::test_hooks::counters::os_reads() - os_reads,
        THREADS as u64
    );
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        assert_eq!(one_offs, 0, "the state was set up during thread exit");
    } else {
        assert!(one_offs <= THREADS as u64);
    }
    check_fresh(&[], &at_exit);
}

/// An exiting thread returns its zeroed slot to the state pool for the next new thread:
/// twenty threads spawned one after another all lease the slot of the one before (the pool
/// maps no chunk), each seeds from the OS exactly once at its first read, and their outputs
/// all differ.
#[cfg(target_os = "linux")]
#[test]
fn exited_threads_states_are_reused_and_reseeded() {
    fkrng::test_hooks::snapshot::stand_in_from_env();
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let read_in_new_thread = || {
        std::thread::spawn(|| {
            let bytes = fkrng::array::<32>();
            (
                bytes,
                fkrng::test_hooks::memory::state_range().expect("a slot").0,
            )
        })
        .join()
        .expect("reader thread")
    };
    // Leaves at least one free slot behind.
    let (_, first_slot) = read_in_new_thread();
    let chunks = fkrng::test_hooks::counters::chunks_published();
    let set_up = fkrng::test_hooks::counters::states_set_up();
    let os_reads = fkrng::test_hooks::counters::os_reads();
    let (values, slots): (Vec<[u8; 32]>, Vec<usize>) =
        (0..20).map(|_| read_in_new_thread()).unzip();
    assert_eq!(
        fkrng::test_hooks::counters::chunks_published() - chunks,
        0,
        "new chunks"
    );
    assert_eq!(
        fkrng::test_hooks::counters::states_set_up() - set_up,
        20,
        "states set up"
    );
    assert!(
        slots.iter().all(|&s| s == first_slot),
        "slots leased: {slots:x?}"
    );
    assert_eq!(
        fkrng::test_hooks::counters::os_reads() - os_reads,
        20,
        "one seeding per thread"
    );
    let distinct: std::collections::HashSet<_> = values.iter().collect();
    assert_eq!(
        distinct.len(),
        values.len(),
        "repeated output across threads"
    );
}
