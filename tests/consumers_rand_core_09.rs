//! fkrng handed to rand 0.9 (`rand_core` 0.9, feature `rand_core_0_9`).
#![cfg(all(feature = "rand_core_0_9", feature = "std"))]

use std::collections::HashSet;

use fkrng::FkeRng;
use rand_09::seq::SliceRandom;
use rand_09::{CryptoRng, Rng, RngCore, SeedableRng, TryRngCore};

#[test]
fn random_range_stays_in_range_and_hits_every_value() {
    let mut rng = fkrng::rng();
    fkrng_test_support::sampling::assert_fair_die(|| rng.random_range(1..=6));
}

#[test]
fn random_u128_values_are_distinct_and_shuffle_permutes() {
    let mut rng = fkrng::rng();
    let mut seen = HashSet::new();
    for _ in 0..10_000 {
        assert!(seen.insert(rng.random::<u128>()));
    }
    let sorted: Vec<u16> = (0..100).collect();
    let mut v = sorted.clone();
    v.shuffle(&mut rng);
    assert_ne!(v, sorted);
    v.sort_unstable();
    assert_eq!(v, sorted);
}

/// Accepts only a `rand_core` 0.9 `CryptoRng` and returns 16 bytes from it.
fn crypto_bytes<R: CryptoRng + ?Sized>(rng: &mut R) -> [u8; 16] {
    let mut out = [0u8; 16];
    rng.fill_bytes(&mut out);
    out
}

#[test]
fn both_generators_are_crypto_rngs_and_try_rngs() {
    assert_ne!(
        crypto_bytes(&mut fkrng::rng()),
        crypto_bytes(&mut fkrng::rng())
    );

    // FkeRng through 0.9's SeedableRng: the same stream as the 0.10 seeding.
    let mut a = <FkeRng as SeedableRng>::from_seed([6; 32]);
    let mut b = <FkeRng as rand_core::SeedableRng>::from_seed([6; 32]);
    assert_eq!(crypto_bytes(&mut a), b.array::<16>());
    let Ok(x) = a.try_next_u64();
    assert_eq!(x, b.next_u64());
    assert_eq!(RngCore::next_u32(&mut a), b.next_u32());
}
