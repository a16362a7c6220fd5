//! ChaCha20 keystream blocks for refills and direct fills: an eight-block AVX2 kernel on
//! x86-64 CPUs that have AVX2 (detected at run time), the `chacha20` crate everywhere else
//! (and, in builds with `--cfg chacha20_avx512`, on CPUs with AVX-512, where the crate's
//! AVX-512 backend is the faster one).
//!
//! The kernel computes eight consecutive blocks at once in the "one word of eight blocks per
//! register" layout: sixteen 256-bit registers hold word `i` of blocks `n..n + 8`, so every
//! quarter round is plain lane-wise adds, xors and rotations with no shuffling between the
//! column and diagonal rounds, and the results are transposed once into block order at the
//! end. The `chacha20` crate's AVX2 backend keeps two blocks per register and shuffles the
//! rows every half round, which costs about half again as much per byte. Both produce the
//! ChaCha20 keystream of D. J. Bernstein's original definition (RFC 8439's block function,
//! 64-bit block counter in words 12-13, 64-bit nonce in words 14-15, here always zero);
//! `tests/kat.rs` checks refills and direct fills against an independent implementation and
//! the unit tests below check the kernel against the `chacha20` crate.
//!
//! ChaCha is add-rotate-xor only, so the kernel runs in constant time like the crate's
//! backends. Like them, it leaves key-derived values in vector registers and possibly in
//! spilled stack slots (see docs/DESIGN.md, threat model).

use crate::generator::{BLOCK_LEN, KEY_LEN};
use chacha20::ChaCha20LegacyCore;
use chacha20::cipher::array::Array;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};

/// One keystream block.
pub(crate) type Block = [u8; BLOCK_LEN];

/// Writes keystream blocks `counter..counter + out.len()` under `key` (nonce zero) to `out`.
#[inline]
pub(crate) fn write_blocks(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    let (counter, out) = {
        // Whole passes of the kernel first; the rest (fewer than 8 blocks) below.
        let whole = out.len() - out.len() % avx2::LANES;
        let (head, rest) = out.split_at_mut(whole);
        if avx2::usable(counter, head.len()) {
            let mut words = avx2::key_words(key);
            // SAFETY: `usable` checked at run time that the CPU has AVX2, that `head` is
            // whole passes, and that the block counter does not pass 2^32 within it.
            unsafe { avx2::write_blocks(&words, counter, head) };
            zeroize::Zeroize::zeroize(&mut words);
            (counter + whole as u64, rest)
        } else {
            (counter, out)
        }
    };
    if !out.is_empty() {
        with_crate(key, counter, out);
    }
}

/// Writes the keystream from the start of block `counter` on into `out`, any number of bytes:
/// whole kernel passes straight into `out`, the rest (under eight blocks) through a scratch
/// pass that is wiped afterwards.
#[inline]
pub(crate) fn write_bytes(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    let (blocks, _) = out.as_chunks_mut::<BLOCK_LEN>();
    let whole = blocks.len() - blocks.len() % PASS;
    write_blocks(key, counter, &mut blocks[..whole]);
    let rest = &mut out[whole * BLOCK_LEN..];
    if rest.is_empty() {
        return;
    }
    let mut scratch = [[0u8; BLOCK_LEN]; PASS];
    // More than two blocks: one whole pass of the kernel costs less than the crate's
    // one-block-at-a-time tail (and is the crate's own 8-block path where it runs instead).
    let needed = rest.len().div_ceil(BLOCK_LEN);
    let computed = if needed > 2 { PASS } else { needed };
    write_blocks(
        key,
        counter.wrapping_add(whole as u64),
        &mut scratch[..computed],
    );
    rest.copy_from_slice(&scratch.as_flattened()[..rest.len()]);
    zeroize::Zeroize::zeroize(scratch.as_flattened_mut());
}

/// Blocks per pass of the kernel (8); `write_bytes` works in these units everywhere.
pub(crate) const PASS: usize = 8;

/// Overwrites `blocks` with the 16 keystream blocks 0..16 of the key held in the first 32
/// bytes of `blocks` (the key is read before anything is written).
#[inline]
pub(crate) fn refill_in_place(blocks: &mut [Block; 16]) {
    let key: &[u8; KEY_LEN] = blocks[0].first_chunk().expect("a block holds a key");
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    if avx2::usable(0, blocks.len()) {
        let mut words = avx2::key_words(key);
        // SAFETY: as in `write_blocks`; the key is copied to `words` before the kernel
        // writes over `blocks`.
        unsafe { avx2::write_blocks(&words, 0, blocks) };
        zeroize::Zeroize::zeroize(&mut words);
        return;
    }
    {
        let mut cipher = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
        // The keystream overwrites the old key in place: no copy of it is made besides the
        // cipher's state, which is zeroized by its `Drop`.
        cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(blocks));
    }
    scrub_stack();
}

/// The `chacha20` crate's cipher (its SSE2/AVX2/AVX-512/NEON/portable backends).
fn with_crate(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    {
        let mut cipher = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
        cipher.set_block_pos(counter);
        cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(out));
        // `cipher` is zeroized by its `Drop`.
    }
    scrub_stack();
}

/// Bytes of stack below the caller's frame that [`scrub_stack`] overwrites: more than the
/// deepest frame of the `chacha20` crate's backends (the AVX-512 one keeps 16 blocks of state
/// in 1 KiB of vectors, plus spills).
const SCRUB_BYTES: usize = 4096;

/// Overwrites the stack just below the caller's frame with zeros.
///
/// The `chacha20` crate's backends copy the cipher state (the key words among them) into
/// their own frames and spill vector registers there; those frames are dead but intact after
/// the call returns, and a key found there would recompute the batch it produced and every
/// key after it. Calling this right after the cipher reuses the same stack area for one
/// zeroed array, which `black_box` keeps the compiler from eliding: one `memset` of 4 KiB
/// per refill or direct fill (tens of nanoseconds). `tests/residue.rs` checks the result.
#[inline(never)]
fn scrub_stack() {
    let mut area = [0u64; SCRUB_BYTES / 8];
    core::hint::black_box(&mut area);
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
mod avx2 {
    use super::{Block, KEY_LEN};
    use core::arch::x86_64::*;

    /// Blocks per kernel pass.
    pub(super) const LANES: usize = super::PASS;

    /// "expand 32-byte k" as four little-endian words.
    const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

    /// Whether the kernel may write `blocks` blocks from `counter` on: AVX2 present, a whole
    /// number of passes, and no carry out of the low counter word (the kernel adds lane
    /// offsets to word 12 only).
    ///
    /// Built with `--cfg chacha20_avx512` on a CPU with AVX-512F and AVX-512VL, the kernel
    /// steps aside for the `chacha20` crate's AVX-512 backend, which is faster still.
    #[inline(always)]
    pub(super) fn usable(counter: u64, blocks: usize) -> bool {
        blocks.is_multiple_of(LANES)
            && blocks > 0
            && counter.saturating_add(blocks as u64) <= 1 << 32
            && std::arch::is_x86_feature_detected!("avx2")
            && !crate_has_avx512()
    }

    #[inline(always)]
    fn crate_has_avx512() -> bool {
        #[cfg(chacha20_avx512)]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512vl")
        }
        #[cfg(not(chacha20_avx512))]
        {
            false
        }
    }

    #[inline(always)]
    pub(super) fn key_words(key: &[u8; KEY_LEN]) -> [u32; 8] {
        core::array::from_fn(|i| {
            u32::from_le_bytes(*key[4 * i..].first_chunk().expect("4 bytes of the key"))
        })
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn splat(w: u32) -> __m256i {
        _mm256_set1_epi32(w as i32)
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
        _mm256_or_si256(_mm256_slli_epi32::<L>(x), _mm256_srli_epi32::<R>(x))
    }

    /// A byte shuffle that rotates every 32-bit lane left by 16 bits.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rot16_mask() -> __m256i {
        _mm256_setr_epi8(
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, //
            2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
        )
    }

    /// A byte shuffle that rotates every 32-bit lane left by 8 bits.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn rot8_mask() -> __m256i {
        _mm256_setr_epi8(
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, //
            3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
        )
    }

    /// The ChaCha quarter round on words `a`, `b`, `c`, `d` of eight blocks.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn quarter(x: &mut [__m256i; 16], [a, b, c, d]: [usize; 4], r16: __m256i, r8: __m256i) {
        x[a] = _mm256_add_epi32(x[a], x[b]);
        x[d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[d], x[a]), r16);
        x[c] = _mm256_add_epi32(x[c], x[d]);
        x[b] = rotl::<12, 20>(_mm256_xor_si256(x[b], x[c]));
        x[a] = _mm256_add_epi32(x[a], x[b]);
        x[d] = _mm256_shuffle_epi8(_mm256_xor_si256(x[d], x[a]), r8);
        x[c] = _mm256_add_epi32(x[c], x[d]);
        x[b] = rotl::<7, 25>(_mm256_xor_si256(x[b], x[c]));
    }

    /// Transposes words `w..w + 8` of the eight blocks in `x` and stores them at byte offset
    /// `4 * w` (`w` is 0 or 8) of each of the first eight blocks of `out`.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn store_half(x: &[__m256i; 16], w: usize, out: &mut [Block]) {
        let t0 = _mm256_unpacklo_epi32(x[w], x[w + 1]);
        let t1 = _mm256_unpackhi_epi32(x[w], x[w + 1]);
        let t2 = _mm256_unpacklo_epi32(x[w + 2], x[w + 3]);
        let t3 = _mm256_unpackhi_epi32(x[w + 2], x[w + 3]);
        let t4 = _mm256_unpacklo_epi32(x[w + 4], x[w + 5]);
        let t5 = _mm256_unpackhi_epi32(x[w + 4], x[w + 5]);
        let t6 = _mm256_unpacklo_epi32(x[w + 6], x[w + 7]);
        let t7 = _mm256_unpackhi_epi32(x[w + 6], x[w + 7]);
        // u[k] holds words w..w+4 of block k (low half) and of block k + 4 (high half);
        // v[k] the same for words w+4..w+8.
        let u = [
            _mm256_unpacklo_epi64(t0, t2),
            _mm256_unpackhi_epi64(t0, t2),
            _mm256_unpacklo_epi64(t1, t3),
            _mm256_unpackhi_epi64(t1, t3),
        ];
        let v = [
            _mm256_unpacklo_epi64(t4, t6),
            _mm256_unpackhi_epi64(t4, t6),
            _mm256_unpacklo_epi64(t5, t7),
            _mm256_unpackhi_epi64(t5, t7),
        ];
        let (first, second) = out[..LANES].split_at_mut(4);
        let at = 4 * w;
        for k in 0..4 {
            let lo = _mm256_permute2x128_si256::<0x20>(u[k], v[k]);
            let hi = _mm256_permute2x128_si256::<0x31>(u[k], v[k]);
            let dst_lo: &mut [u8; 32] = first[k][at..].first_chunk_mut().expect("32 bytes");
            let dst_hi: &mut [u8; 32] = second[k][at..].first_chunk_mut().expect("32 bytes");
            // SAFETY: each destination is a 32-byte array borrowed mutably, the size of one
            // unaligned 256-bit store.
            unsafe {
                _mm256_storeu_si256(dst_lo.as_mut_ptr().cast(), lo);
                _mm256_storeu_si256(dst_hi.as_mut_ptr().cast(), hi);
            }
        }
    }

    /// Writes keystream blocks `counter..counter + out.len()` under the key `key`.
    ///
    /// # Safety
    /// The CPU must support AVX2; `out.len()` must be a multiple of 8 and `counter +
    /// out.len()` at most 2^32 (see [`usable`]).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn write_blocks(key: &[u32; 8], counter: u64, out: &mut [Block]) {
        debug_assert!(out.len().is_multiple_of(LANES) && counter + out.len() as u64 <= 1 << 32);
        let r16 = rot16_mask();
        let r8 = rot8_mask();
        let mut init = [_mm256_setzero_si256(); 16];
        for i in 0..4 {
            init[i] = splat(SIGMA[i]);
        }
        for i in 0..8 {
            init[4 + i] = splat(key[i]);
        }
        // Words 13 (counter high), 14 and 15 (nonce) stay zero: `counter + 8 <= 2^32`.
        let lane_offsets = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut low = counter as u32;
        for pass in out.chunks_exact_mut(LANES) {
            init[12] = _mm256_add_epi32(splat(low), lane_offsets);
            let mut x = init;
            for _ in 0..10 {
                // Columns, then diagonals (RFC 8439, section 2.3).
                quarter(&mut x, [0, 4, 8, 12], r16, r8);
                quarter(&mut x, [1, 5, 9, 13], r16, r8);
                quarter(&mut x, [2, 6, 10, 14], r16, r8);
                quarter(&mut x, [3, 7, 11, 15], r16, r8);
                quarter(&mut x, [0, 5, 10, 15], r16, r8);
                quarter(&mut x, [1, 6, 11, 12], r16, r8);
                quarter(&mut x, [2, 7, 8, 13], r16, r8);
                quarter(&mut x, [3, 4, 9, 14], r16, r8);
            }
            for i in 0..16 {
                x[i] = _mm256_add_epi32(x[i], init[i]);
            }
            store_half(&x, 0, pass);
            store_half(&x, 8, pass);
            low = low.wrapping_add(LANES as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(key: &[u8; KEY_LEN], counter: u64, blocks: usize) -> Vec<Block> {
        let mut out = vec![[0u8; BLOCK_LEN]; blocks];
        with_crate(key, counter, &mut out);
        out
    }

    /// The kernel itself (whatever `write_blocks` would pick on this CPU and build).
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    #[test]
    fn avx2_kernel_matches_the_chacha20_crate() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            eprintln!("no AVX2 on this CPU: kernel not tested");
            return;
        }
        for round in 0..32u8 {
            let key: [u8; KEY_LEN] = core::array::from_fn(|i| round.wrapping_mul(29) ^ i as u8);
            let words = avx2::key_words(&key);
            let counter = [0u64, 8, 1 << 20, (1 << 32) - 16][usize::from(round % 4)];
            let mut got = vec![[0u8; BLOCK_LEN]; 16];
            // SAFETY: AVX2 was detected above; 16 blocks are two whole passes and
            // `counter + 16 <= 2^32`.
            unsafe { avx2::write_blocks(&words, counter, &mut got) };
            assert_eq!(got, reference(&key, counter, 16), "round {round}");
        }
    }

    #[test]
    fn matches_the_chacha20_crate_for_many_keys_and_counters() {
        let mut key = [0u8; KEY_LEN];
        for round in 0..64u32 {
            for (i, b) in key.iter_mut().enumerate() {
                *b = (round as u8)
                    .wrapping_mul(37)
                    .wrapping_add((i as u8).wrapping_mul(11))
                    ^ 0xa5;
            }
            let counter = [0u64, 8, 16, 1 << 20, (1 << 32) - 64][round as usize % 5];
            for blocks in [8usize, 16, 24, 64] {
                let mut got = vec![[0u8; BLOCK_LEN]; blocks];
                write_blocks(&key, counter, &mut got);
                assert_eq!(
                    got,
                    reference(&key, counter, blocks),
                    "round {round} {blocks}"
                );
            }
        }
    }

    #[test]
    fn write_bytes_matches_the_crate_for_every_tail_length() {
        let key = [0x5c; KEY_LEN];
        let reference_bytes = reference(&key, 3, 40).as_flattened().to_vec();
        for len in (0..=1200)
            .step_by(7)
            .chain([512, 513, 575, 576, 1024, 2559, 2560])
        {
            let mut got = vec![0u8; len];
            write_bytes(&key, 3, &mut got);
            assert_eq!(got[..], reference_bytes[..len], "length {len}");
        }
    }

    #[test]
    fn counter_carry_and_odd_lengths_take_the_crate() {
        let key = [0x42; KEY_LEN];
        for (counter, blocks) in [((1u64 << 32) - 4, 8usize), (5, 3), (u64::MAX - 20, 16)] {
            let mut got = vec![[0u8; BLOCK_LEN]; blocks];
            write_blocks(&key, counter, &mut got);
            assert_eq!(got, reference(&key, counter, blocks));
        }
    }

    #[test]
    fn refill_in_place_is_keystream_0_to_16_of_the_old_key() {
        let key = [0x17; KEY_LEN];
        let mut blocks = [[0u8; BLOCK_LEN]; 16];
        blocks[0][..KEY_LEN].copy_from_slice(&key);
        refill_in_place(&mut blocks);
        assert_eq!(blocks.to_vec(), reference(&key, 0, 16));
    }
}
