//! After a thread's first read, small reads make no heap allocation: counted by a global
//! allocator. Runs without the test harness so that no other thread allocates meanwhile.

use fkrng_test_support::alloc::{Counting, allocations_during};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    use rand_core::Rng;

    // The counter works: a Vec allocates.
    assert_eq!(
        allocations_during(|| drop(std::hint::black_box(vec![1u8; 10]))),
        1
    );

    // First read: seeding and set-up may allocate (once per process for the fork check).
    let first = allocations_during(|| {
        fkrng::fill(&mut [0u8; 16]);
    });

    let mut sink = 0u8;
    let steady = allocations_during(|| {
        let mut buf = [0u8; 64];
        let mut rng = fkrng::rng();
        for i in 0..1_000_000usize {
            let n = i % 64 + 1;
            fkrng::fill(&mut buf[..n]);
            sink ^= buf[0];
            match i % 5 {
                0 => sink ^= fkrng::u32() as u8,
                1 => sink ^= fkrng::u64() as u8,
                2 => sink ^= fkrng::array::<12>()[0],
                3 => sink ^= rng.next_u32() as u8,
                _ => rng.fill_bytes(&mut buf[..16]),
            }
        }
    });
    std::hint::black_box(sink);
    // Bulk reads on the direct path do not allocate either.
    let mut big = vec![0u8; 1 << 20];
    let bulk = allocations_during(|| {
        for _ in 0..16 {
            fkrng::fill(&mut big);
        }
    });
    println!("allocations: first read {first}, 1,000,000 small reads {steady}, 16 MiB bulk {bulk}");
    assert_eq!(steady, 0, "small reads allocated");
    assert_eq!(bulk, 0, "bulk reads allocated");
    println!("alloc: 3 passed, 0 failed");
}
