//! On-demand reseeding: `reseed_all` makes every live thread reseed from the OS before its
//! next output, and `reseed` reseeds the calling thread, counted exactly with
//! `fkrng::test_hooks::counters::os_reads` (one OS request per seeding or reseeding).
//!
//! Built only with the test hooks (`--cfg fkrng_test_hooks`: README's test command); without
//! them this test target has no tests.

#![cfg(fkrng_test_hooks)]

use std::sync::{Arc, Barrier, Mutex};

/// One test at a time: the probe counters are process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn read16() -> [u8; 16] {
    let mut v = [0u8; 16];
    fkrng::fill(&mut v);
    v
}

#[test]
fn reseed_all_reseeds_every_live_thread_before_its_next_output() {
    let _serial = SERIAL.lock().unwrap();
    const THREADS: usize = 6;
    const PHASES: usize = 4;
    // Threads and the main thread meet at a barrier after each phase of reads; the main
    // thread reads the OS-request counter between phases.
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let values = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            let values = Arc::clone(&values);
            std::thread::spawn(move || {
                for _ in 0..PHASES {
                    barrier.wait(); // the main thread has prepared the phase
                    let v = read16();
                    values.lock().unwrap().push(v);
                    barrier.wait(); // the phase's reads are done
                }
            })
        })
        .collect();
    let phase = |before: &dyn Fn()| {
        before();
        let start = fkrng::test_hooks::counters::os_reads();
        barrier.wait();
        barrier.wait();
        fkrng::test_hooks::counters::os_reads() - start
    };
    let first = phase(&|| ());
    let plain = phase(&|| ());
    let after_reseed_all = phase(&fkrng::reseed_all);
    let after_that = phase(&|| ());
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(first, THREADS as u64, "first reads seed each thread once");
    assert_eq!(plain, 0, "small reads do not touch the OS");
    assert_eq!(
        after_reseed_all, THREADS as u64,
        "every thread reseeded before its next output"
    );
    assert_eq!(after_that, 0, "one reseed per thread per epoch");
    let mut values = values.lock().unwrap().clone();
    let n = values.len();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), n);
    assert_eq!(n, THREADS * PHASES);
}

#[test]
fn reseed_asks_the_os_once_and_discards_the_buffer() {
    let _serial = SERIAL.lock().unwrap();
    std::thread::spawn(|| {
        let start = fkrng::test_hooks::counters::os_reads();
        fkrng::reseed().unwrap(); // sets up and seeds a thread that never read
        assert_eq!(fkrng::test_hooks::counters::os_reads() - start, 1);
        let a = read16();
        assert_eq!(
            fkrng::test_hooks::counters::os_reads() - start,
            1,
            "already seeded"
        );
        fkrng::reseed().unwrap();
        assert_eq!(fkrng::test_hooks::counters::os_reads() - start, 2);
        let b = read16();
        let c = read16();
        assert_eq!(fkrng::test_hooks::counters::os_reads() - start, 2);
        assert!(a != b && b != c && a != c);
    })
    .join()
    .unwrap();
}
