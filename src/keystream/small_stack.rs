//! ChaCha20 one block at a time in plain Rust ([`IN_USE`]): unoptimised, it keeps one 16-word
//! input and one working state, so it needs little stack where SIMD code would need more than
//! a 16 KiB thread has (docs/SECURITY.md).

use super::{BLOCK_LEN, KEY_LEN, SIGMA};

/// Whether this build computes keystream here: builds with debug assertions, at opt-level 0
/// or at a level the build script could not tell (`fkrng_opt_level`, from build.rs), unless
/// a keystream path is pinned (`--cfg fkrng_keystream`, for tests of that path).
pub(super) const IN_USE: bool = (cfg!(debug_assertions)
    || !cfg!(any(
        fkrng_opt_level = "1",
        fkrng_opt_level = "2",
        fkrng_opt_level = "3",
        fkrng_opt_level = "s",
        fkrng_opt_level = "z"
    )))
    && super::PINNED.is_none();

/// The quarter rounds of a double round: columns, then diagonals (RFC 8439, section 2.3).
#[rustfmt::skip]
const DOUBLE_ROUND: [[usize; 4]; 8] = [
    [0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15],
    [0, 5, 10, 15], [1, 6, 11, 12], [2, 7, 8, 13], [3, 4, 9, 14],
];

/// Writes keystream blocks `counter..` under `key` (nonce zero; the 64-bit block counter
/// wraps at 2^64 like the `chacha20` crate's) to `out`, all of it, the last block cut short
/// if `out.len()` is not a multiple of 64.
pub(super) fn write(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    // Plain loops and indices: iterator adapters each cost a frame at opt-level 0.
    let mut input = [0u32; 16];
    let mut i = 0;
    while i < 8 {
        if i < 4 {
            input[i] = SIGMA[i];
        }
        let k = 4 * i;
        input[4 + i] = u32::from_le_bytes([key[k], key[k + 1], key[k + 2], key[k + 3]]);
        i += 1;
    }
    let mut x = [0u32; 16];
    let mut n = counter;
    let mut at = 0;
    while at < out.len() {
        input[12] = n as u32;
        input[13] = (n >> 32) as u32;
        x = input;
        let mut round = 0;
        while round < 80 {
            let [a, b, c, d] = DOUBLE_ROUND[round % 8];
            x[a] = x[a].wrapping_add(x[b]);
            x[d] = (x[d] ^ x[a]).rotate_left(16);
            x[c] = x[c].wrapping_add(x[d]);
            x[b] = (x[b] ^ x[c]).rotate_left(12);
            x[a] = x[a].wrapping_add(x[b]);
            x[d] = (x[d] ^ x[a]).rotate_left(8);
            x[c] = x[c].wrapping_add(x[d]);
            x[b] = (x[b] ^ x[c]).rotate_left(7);
            round += 1;
        }
        let mut j = 0;
        while j < BLOCK_LEN && at < out.len() {
            out[at] = (x[j / 4].wrapping_add(input[j / 4]) >> (8 * (j % 4))) as u8;
            j += 1;
            at += 1;
        }
        n = n.wrapping_add(1);
    }
    // The caller's scrub zeroes this frame; this keeps the copies short-lived anyway.
    zeroize::Zeroize::zeroize(&mut input);
    zeroize::Zeroize::zeroize(&mut x);
}
