//! Known-answer vectors for `FkeRng` (tests/data/fke-kat.txt, produced by an independent
//! ChaCha20: OpenSSL's, through Python's `cryptography`), and the stream's independence from
//! how it is split into reads.

use fkrng::FkeRng;
use rand_core::{Rng, SeedableRng};

const VECTORS: &str = include_str!("data/fke-kat.txt");

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn sha256(data: &[u8]) -> [u8; 32] {
    // FIPS 180-4, enough for test data.
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for chunk in msg.chunks_exact(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(chunk[4 * i..4 * i + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

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
    for (lineno, line) in VECTORS.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let op = parts.next().unwrap();
        let arg = parts.next().unwrap_or("");
        let expect = parts.next().unwrap_or("").trim();
        let at = format!("line {}: {line}", lineno + 1);
        match op {
            "seed" => {
                let seed: [u8; 32] = hex(arg).try_into().expect("32-byte seed");
                rng = Some(FkeRng::from_seed(seed));
                continue;
            }
            "fill" => {
                let n: usize = arg.parse().unwrap();
                let mut out = vec![0u8; n];
                rng.as_mut().expect("seeded").fill_bytes(&mut out);
                if let Some(digest) = expect.strip_prefix("sha256:") {
                    assert_eq!(sha256(&out).to_vec(), hex(digest), "{at}");
                } else {
                    assert_eq!(out, hex(expect), "{at}");
                }
            }
            "u32" => {
                let v: u32 = arg.parse().unwrap();
                assert_eq!(rng.as_mut().unwrap().next_u32(), v, "{at}");
            }
            "u64" => {
                let v: u64 = arg.parse().unwrap();
                assert_eq!(rng.as_mut().unwrap().next_u64(), v, "{at}");
            }
            other => panic!("unknown vector op {other:?} at {at}"),
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
