//! Distinct streams across threads: every thread seeds its own generator from the OS.

use std::collections::HashSet;

const THREADS: usize = 8;
const READS: usize = 100_000;

/// 8 threads x 100,000 reads of 16 bytes: 800,000 values, no two equal.
#[test]
fn eight_threads_never_repeat_a_16_byte_value() {
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            std::thread::spawn(|| {
                let mut values = Vec::with_capacity(READS);
                for _ in 0..READS {
                    values.push(fkrng::array::<16>());
                }
                values
            })
        })
        .collect();
    let mut seen = HashSet::with_capacity(THREADS * READS);
    for h in handles {
        for v in h.join().unwrap() {
            assert!(seen.insert(v), "value repeated: {v:02x?}");
        }
    }
    assert_eq!(seen.len(), THREADS * READS);
}

/// The first bytes of many fresh threads all differ (no shared or default seed).
#[test]
fn first_reads_of_fresh_threads_differ() {
    let firsts: Vec<[u8; 32]> = (0..64)
        .map(|_| std::thread::spawn(fkrng::array::<32>).join().unwrap())
        .collect();
    let distinct: HashSet<_> = firsts.iter().collect();
    assert_eq!(distinct.len(), firsts.len());
    assert!(firsts.iter().all(|f| f != &[0u8; 32]));
}

/// `ThreadRng` handles read the thread's one stream: bytes from a handle and from `fill`
/// interleave without repeating.
#[test]
fn thread_rng_handles_share_the_thread_stream() {
    use rand_core::Rng;
    let mut a = fkrng::rng();
    let mut b = a.clone();
    let mut seen = HashSet::new();
    for _ in 0..10_000 {
        let mut x = [0u8; 16];
        a.fill_bytes(&mut x);
        let mut y = [0u8; 16];
        b.fill_bytes(&mut y);
        let z = fkrng::array::<16>();
        assert!(seen.insert(x) && seen.insert(y) && seen.insert(z));
    }
}
