//! The portable path's four-block SSE2 pass kernel on x86-64: word `i` of blocks `n..n + 4` in
//! one 128-bit register, as in `avx2.rs`, so that a rider's rounds interleave with the pass's.

use super::rider::Rider;
use super::{Block, SIGMA};
use core::arch::x86_64::*;

/// Blocks per kernel pass: 4 (256 bytes).
pub(super) const LANES: usize = 4;

/// Always: SSE2 is in the x86-64 baseline.
#[inline(always)]
pub(super) fn detected() -> bool {
    true
}

#[target_feature(enable = "sse2")]
#[inline]
fn rotl<const L: i32, const R: i32>(x: __m128i) -> __m128i {
    _mm_or_si128(_mm_slli_epi32::<L>(x), _mm_srli_epi32::<R>(x))
}

/// The ChaCha quarter round on words `a`, `b`, `c`, `d` of four blocks.
#[target_feature(enable = "sse2")]
#[inline]
fn quarter(x: &mut [__m128i; 16], [a, b, c, d]: [usize; 4]) {
    x[a] = _mm_add_epi32(x[a], x[b]);
    let t = _mm_xor_si128(x[d], x[a]);
    x[d] = _mm_shufflehi_epi16::<0xb1>(_mm_shufflelo_epi16::<0xb1>(t));
    x[c] = _mm_add_epi32(x[c], x[d]);
    x[b] = rotl::<12, 20>(_mm_xor_si128(x[b], x[c]));
    x[a] = _mm_add_epi32(x[a], x[b]);
    x[d] = rotl::<8, 24>(_mm_xor_si128(x[d], x[a]));
    x[c] = _mm_add_epi32(x[c], x[d]);
    x[b] = rotl::<7, 25>(_mm_xor_si128(x[b], x[c]));
}

/// Transposes words `w..w + 4` of the four blocks into bytes `4 * w..` of each block of `out`.
#[target_feature(enable = "sse2")]
#[inline]
fn store_quarter(x: &[__m128i; 16], w: usize, out: &mut [Block]) {
    let t0 = _mm_unpacklo_epi32(x[w], x[w + 1]);
    let t1 = _mm_unpackhi_epi32(x[w], x[w + 1]);
    let t2 = _mm_unpacklo_epi32(x[w + 2], x[w + 3]);
    let t3 = _mm_unpackhi_epi32(x[w + 2], x[w + 3]);
    let rows = [
        _mm_unpacklo_epi64(t0, t2),
        _mm_unpackhi_epi64(t0, t2),
        _mm_unpacklo_epi64(t1, t3),
        _mm_unpackhi_epi64(t1, t3),
    ];
    for (block, row) in out[..LANES].iter_mut().zip(rows) {
        let dst: &mut [u8; 16] = block[4 * w..].first_chunk_mut().expect("16 bytes");
        // SAFETY: `dst` is 16 bytes borrowed mutably, the size of one unaligned 128-bit store.
        unsafe { _mm_storeu_si128(dst.as_mut_ptr().cast(), row) };
    }
}

/// Writes keystream blocks `counter..counter + out.len()` under the key words `key`.
///
/// # Safety
/// `out.len()` must be a multiple of 4 and `counter + out.len()` at most 2^32
/// (`PassKernel::usable`).
#[target_feature(enable = "sse2")]
pub(super) unsafe fn write_blocks(key: &[u32; 8], counter: u64, out: &mut [Block]) {
    passes(key, counter, out, |_| {});
}

/// Keystream blocks 0..16 into `refill` (four passes) and block `counter` into `extra`,
/// which rides along the first pass ([`Rider`]).
///
/// # Safety
/// None beyond the type's: SSE2 is always there.
#[target_feature(enable = "sse2")]
pub(super) unsafe fn write_refill_and_block(
    key: &[u32; 8],
    refill: &mut [Block; 16],
    counter: u64,
    extra: &mut Block,
) {
    let (first, rest) = refill.split_at_mut(LANES);
    let mut rider = Rider::new(key, counter);
    passes(key, 0, first, |q| rider.quarter(q));
    rider.finish(key, counter, extra);
    passes(key, LANES as u64, rest, |_| {});
}

/// [`write_blocks`], calling `each` with every quarter round's word indices after the
/// pass's own, in the same loop body, so that a rider's rounds interleave with the pass's.
#[target_feature(enable = "sse2")]
#[inline]
fn passes(key: &[u32; 8], counter: u64, out: &mut [Block], mut each: impl FnMut([usize; 4])) {
    debug_assert!(out.len().is_multiple_of(LANES) && counter + out.len() as u64 <= 1 << 32);
    let mut init = [_mm_setzero_si128(); 16];
    for i in 0..4 {
        init[i] = _mm_set1_epi32(SIGMA[i] as i32);
    }
    for i in 0..8 {
        init[4 + i] = _mm_set1_epi32(key[i] as i32);
    }
    // Words 13 (counter high), 14 and 15 (nonce) stay zero: `counter + 4 <= 2^32`.
    let lane_offsets = _mm_setr_epi32(0, 1, 2, 3);
    let mut low = counter as u32;
    for pass in out.chunks_exact_mut(LANES) {
        init[12] = _mm_add_epi32(_mm_set1_epi32(low as i32), lane_offsets);
        let mut x = init;
        let mut quarter = |x: &mut [__m128i; 16], q| {
            quarter(x, q);
            each(q);
        };
        for _ in 0..10 {
            // Columns, then diagonals (RFC 8439, section 2.3).
            quarter(&mut x, [0, 4, 8, 12]);
            quarter(&mut x, [1, 5, 9, 13]);
            quarter(&mut x, [2, 6, 10, 14]);
            quarter(&mut x, [3, 7, 11, 15]);
            quarter(&mut x, [0, 5, 10, 15]);
            quarter(&mut x, [1, 6, 11, 12]);
            quarter(&mut x, [2, 7, 8, 13]);
            quarter(&mut x, [3, 4, 9, 14]);
        }
        for i in 0..16 {
            x[i] = _mm_add_epi32(x[i], init[i]);
        }
        for w in [0, 4, 8, 12] {
            store_quarter(&x, w, pass);
        }
        low = low.wrapping_add(LANES as u32);
    }
}
