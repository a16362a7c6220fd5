//! Known-answer vectors for `FkeRng` (tests/data/fke-kat.txt, produced by an independent
//! ChaCha20: OpenSSL's, through Python's `cryptography`), and the stream's independence from
//! how it is split into reads.

use fkrng::FkeRng;
use fkrng_test_support::kat::{self, Expect, Step, VECTORS, hex, sha256};
use rand_core::{Rng, SeedableRng};

#[test]
fn sha256_self_check() {
    assert_eq!(
        sha256(b"abc").to_vec(),
        hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    );
}

/// Runs every line of the vector file; returns how many checks passed.
#[test]
fn known_answer_vectors() {
    let mut rng: Option<FkeRng> = None;
    let mut checks = 0;
    for vector in kat::vectors() {
        let at = vector.at();
        match vector.step {
            Step::Seed(seed) => {
                rng = Some(FkeRng::from_seed(seed));
                continue;
            }
            Step::Fill { len, expect } => {
                let mut out = vec![0u8; len];
                rng.as_mut().expect("seeded").fill_bytes(&mut out);
                match expect {
                    Expect::Sha256(digest) => assert_eq!(sha256(&out), digest, "{at}"),
                    Expect::Bytes(bytes) => assert_eq!(out, bytes, "{at}"),
                }
            }
            Step::U32(v) => assert_eq!(rng.as_mut().unwrap().next_u32(), v, "{at}"),
            Step::U64(v) => assert_eq!(rng.as_mut().unwrap().next_u64(), v, "{at}"),
        }
        checks += 1;
    }
    let ops = VECTORS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("seed") && !l.trim().is_empty())
        .count();
    assert_eq!(checks, ops);
    assert!(checks >= 400, "the vector file has {checks} checks");
}

/// The stream is the spec's, so splitting it differently gives different bytes only where
/// the spec says so: reads that never hit the direct path (all < 992 bytes) concatenate to
/// the same bytes whatever the split.
#[test]
fn small_reads_concatenate_to_the_same_stream() {
    let seed = [0x5a; 32];
    let mut whole = vec![0u8; 4000];
    let mut a = FkeRng::from_seed(seed);
    for chunk in whole.chunks_mut(500) {
        a.fill_bytes(chunk);
    }
    for split in [1usize, 3, 16, 31, 32, 33, 64, 100, 991] {
        let mut b = FkeRng::from_seed(seed);
        let mut got = vec![0u8; 4000];
        for chunk in got.chunks_mut(split) {
            b.fill_bytes(chunk);
        }
        assert_eq!(got, whole, "split {split}");
    }
}

/// Refill semantics: the first 32 bytes of each 1024-byte batch become the next key and are
/// never output; the rest is output. Check against a straight ChaCha20 keystream.
#[test]
fn refill_matches_raw_chacha20_keystream() {
    let seed = [0x11; 32];
    let mut raw = chacha20::ChaCha20Rng::from_seed(seed);
    let mut z = [0u8; 1024];
    raw.fill_bytes(&mut z);
    let mut rng = FkeRng::from_seed(seed);
    let mut out = [0u8; 992];
    // 992 bytes at once with an empty buffer take the direct path: Z = keystream(K, 1024).
    rng.fill_bytes(&mut out);
    assert_eq!(out[..], z[32..]);
    // The next batch runs under the key Z[..32].
    let mut raw2 = chacha20::ChaCha20Rng::from_seed(z[..32].try_into().unwrap());
    let mut z2 = [0u8; 1024];
    raw2.fill_bytes(&mut z2);
    let mut small = [0u8; 10];
    rng.fill_bytes(&mut small);
    assert_eq!(small[..], z2[32..42]);
}

#[test]
fn words_are_little_endian_reads_of_the_stream() {
    let seed = [0x77; 32];
    let mut bytes = FkeRng::from_seed(seed);
    let mut words = FkeRng::from_seed(seed);
    for _ in 0..300 {
        let mut b4 = [0u8; 4];
        bytes.fill_bytes(&mut b4);
        assert_eq!(words.next_u32(), u32::from_le_bytes(b4));
        let mut b8 = [0u8; 8];
        bytes.fill_bytes(&mut b8);
        assert_eq!(words.next_u64(), u64::from_le_bytes(b8));
    }
}

/// The keystream path these vectors were checked on is the one the run asked for: the pin
/// of a build with `--cfg fkrng_keystream="..."` (the flag reaches this test crate too), or
/// `FKRNG_EXPECT_KEYSTREAM` for unpinned builds run under an emulated CPU model.
#[test]
fn keystream_path_is_the_expected_one() {
    let path = fkrng::keystream_path();
    let pinned = [
        (cfg!(fkrng_keystream = "avx512"), "avx512"),
        (cfg!(fkrng_keystream = "avx2"), "avx2"),
        (cfg!(fkrng_keystream = "portable"), "portable"),
    ]
    .into_iter()
    .find_map(|(on, name)| on.then_some(name));
    if let Some(pin) = pinned {
        assert_eq!(path.to_string(), pin, "pinned build");
    }
    match std::env::var("FKRNG_EXPECT_KEYSTREAM") {
        Ok(expected) => assert_eq!(path.to_string(), expected, "FKRNG_EXPECT_KEYSTREAM"),
        Err(_) if pinned.is_none() => {
            eprintln!("keystream path {path}: neither pinned nor FKRNG_EXPECT_KEYSTREAM set")
        }
        Err(_) => {}
    }
}
