//! The sixteen-block AVX-512 pass kernel (word `i` of blocks `n..n + 16` in one 512-bit
//! register; a pass is one refill) and the eight-block tail kernel (one block per 128-bit
//! lane), AVX-512F instructions only. The state fits the 32 registers and key words are
//! re-read from the caller's array at each use ([`key_word`]), so a pass has nothing
//! key-derived to spill; a rider's words do spill (the caller scrubs the stack either way).

use super::rider::Rider;
use super::{Block, SIGMA, TAIL_BLOCKS};
use core::arch::x86_64::*;

/// Blocks per kernel pass: 16 (1024 bytes).
pub(super) const LANES: usize = 16;

cpufeatures::new!(cpuid_avx512f, "avx512f");

/// Whether this CPU has AVX-512F and the OS saves its registers: all both kernels need.
#[inline(always)]
pub(super) fn detected() -> bool {
    cpuid_avx512f::get()
}

/// Key word `i`, read from memory at each use: a volatile read is neither hoisted out of the
/// loop nor kept in a register across the rounds.
#[inline(always)]
fn key_word(key: &[u32; 8], i: usize) -> u32 {
    // SAFETY: `&key[i]` is a valid, aligned reference to an initialised `u32`.
    unsafe { core::ptr::read_volatile(&key[i]) }
}

/// The ChaCha quarter round on words `a`, `b`, `c`, `d` of every lane: sixteen blocks' words
/// (`N` = 16) or the four rows of four blocks (`N` = 4).
#[target_feature(enable = "avx512f")]
#[inline]
fn quarter<const N: usize>(x: &mut [__m512i; N], [a, b, c, d]: [usize; 4]) {
    x[a] = _mm512_add_epi32(x[a], x[b]);
    x[d] = _mm512_rol_epi32::<16>(_mm512_xor_si512(x[d], x[a]));
    x[c] = _mm512_add_epi32(x[c], x[d]);
    x[b] = _mm512_rol_epi32::<12>(_mm512_xor_si512(x[b], x[c]));
    x[a] = _mm512_add_epi32(x[a], x[b]);
    x[d] = _mm512_rol_epi32::<8>(_mm512_xor_si512(x[d], x[a]));
    x[c] = _mm512_add_epi32(x[c], x[d]);
    x[b] = _mm512_rol_epi32::<7>(_mm512_xor_si512(x[b], x[c]));
}

/// Interleaves words `w..w + 4` of the sixteen blocks: the result `r[k]` holds those four
/// words of block `k`, `k + 4`, `k + 8` and `k + 12` in its four 128-bit lanes.
#[target_feature(enable = "avx512f")]
#[inline]
fn gather_quarter(x: &[__m512i; 16], w: usize) -> [__m512i; 4] {
    let t0 = _mm512_unpacklo_epi32(x[w], x[w + 1]);
    let t1 = _mm512_unpackhi_epi32(x[w], x[w + 1]);
    let t2 = _mm512_unpacklo_epi32(x[w + 2], x[w + 3]);
    let t3 = _mm512_unpackhi_epi32(x[w + 2], x[w + 3]);
    [
        _mm512_unpacklo_epi64(t0, t2),
        _mm512_unpackhi_epi64(t0, t2),
        _mm512_unpacklo_epi64(t1, t3),
        _mm512_unpackhi_epi64(t1, t3),
    ]
}

/// Transposes the 128-bit lanes of four registers: lane `j` of result `i` is lane `i` of `r[j]`.
#[target_feature(enable = "avx512f")]
#[inline]
fn transpose_lanes(r: [__m512i; 4]) -> [__m512i; 4] {
    // ab01 = [r0.0, r0.1, r1.0, r1.1], ab23 = [r0.2, r0.3, r1.2, r1.3]; cd01, cd23 of r2, r3.
    let ab01 = _mm512_shuffle_i32x4::<0x44>(r[0], r[1]);
    let ab23 = _mm512_shuffle_i32x4::<0xee>(r[0], r[1]);
    let cd01 = _mm512_shuffle_i32x4::<0x44>(r[2], r[3]);
    let cd23 = _mm512_shuffle_i32x4::<0xee>(r[2], r[3]);
    [
        _mm512_shuffle_i32x4::<0x88>(ab01, cd01),
        _mm512_shuffle_i32x4::<0xdd>(ab01, cd01),
        _mm512_shuffle_i32x4::<0x88>(ab23, cd23),
        _mm512_shuffle_i32x4::<0xdd>(ab23, cd23),
    ]
}

#[target_feature(enable = "avx512f")]
#[inline]
fn store(dst: &mut Block, v: __m512i) {
    // SAFETY: `dst` is 64 bytes borrowed mutably, the size of one unaligned 512-bit store.
    unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
}

/// Transposes the sixteen words of sixteen blocks in `x` into the blocks of `out`.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_pass(x: &[__m512i; 16], out: &mut [Block]) {
    let q0 = gather_quarter(x, 0);
    let q1 = gather_quarter(x, 4);
    let q2 = gather_quarter(x, 8);
    let q3 = gather_quarter(x, 12);
    let out: &mut [Block; LANES] = out.try_into().expect("one pass of 16 blocks");
    for k in 0..4 {
        let blocks = transpose_lanes([q0[k], q1[k], q2[k], q3[k]]);
        for (j, v) in blocks.into_iter().enumerate() {
            store(&mut out[k + 4 * j], v);
        }
    }
}

/// Writes keystream blocks `counter..counter + out.len()` under the key words `key`.
///
/// # Safety
/// The CPU must have AVX-512F; `out.len()` must be a multiple of 16 and `counter +
/// out.len()` at most 2^32 (`PassKernel::usable`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn write_blocks(key: &[u32; 8], counter: u64, out: &mut [Block]) {
    passes(key, counter, out, |_| {});
}

/// Keystream blocks 0..16 into `refill` (one pass) and block `counter` into `extra`, which
/// rides along the pass ([`Rider`]).
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn write_refill_and_block(
    key: &[u32; 8],
    refill: &mut [Block; 16],
    counter: u64,
    extra: &mut Block,
) {
    let mut rider = Rider::new(key, counter);
    passes(key, 0, refill, |q| rider.quarter(q));
    rider.finish(key, counter, extra);
}

/// [`write_blocks`], calling `each` with every quarter round's word indices after the
/// pass's own, in the same loop body, so that a rider's rounds interleave with the pass's.
#[target_feature(enable = "avx512f")]
#[inline]
fn passes(key: &[u32; 8], counter: u64, out: &mut [Block], mut each: impl FnMut([usize; 4])) {
    debug_assert!(out.len().is_multiple_of(LANES) && counter + out.len() as u64 <= 1 << 32);
    let lane_offsets = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut low = counter as u32;
    for pass in out.chunks_exact_mut(LANES) {
        let ctr = _mm512_add_epi32(_mm512_set1_epi32(low as i32), lane_offsets);
        // Words 13 (counter high), 14 and 15 (nonce) are zero: `counter + 16 <= 2^32`.
        let mut x = [_mm512_setzero_si512(); 16];
        for i in 0..4 {
            x[i] = _mm512_set1_epi32(SIGMA[i] as i32);
        }
        for i in 0..8 {
            x[4 + i] = _mm512_set1_epi32(key_word(key, i) as i32);
        }
        x[12] = ctr;
        let mut quarter = |x: &mut [__m512i; 16], q| {
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
        // The feed-forward: add the input words back (words 13 to 15 were zero).
        for i in 0..4 {
            x[i] = _mm512_add_epi32(x[i], _mm512_set1_epi32(SIGMA[i] as i32));
        }
        for i in 0..8 {
            x[4 + i] = _mm512_add_epi32(x[4 + i], _mm512_set1_epi32(key_word(key, i) as i32));
        }
        x[12] = _mm512_add_epi32(x[12], ctr);
        store_pass(&x, pass);
        low = low.wrapping_add(LANES as u32);
    }
}

/// A 512-bit register holding the same four words in each 128-bit lane.
#[target_feature(enable = "avx512f")]
#[inline]
fn rows4(w: [u32; 4]) -> __m512i {
    let [a, b, c, d] = w.map(|x| x as i32);
    _mm512_setr_epi32(a, b, c, d, a, b, c, d, a, b, c, d, a, b, c, d)
}

/// Rotates rows b, c and d of each block by one, two and three words so that the diagonals
/// line up as columns (`forward`), or back.
#[target_feature(enable = "avx512f")]
#[inline]
fn diagonals(r: &mut [__m512i; 4], forward: bool) {
    if forward {
        r[1] = _mm512_shuffle_epi32::<0x39>(r[1]);
        r[3] = _mm512_shuffle_epi32::<0x93>(r[3]);
    } else {
        r[1] = _mm512_shuffle_epi32::<0x93>(r[1]);
        r[3] = _mm512_shuffle_epi32::<0x39>(r[3]);
    }
    r[2] = _mm512_shuffle_epi32::<0x4e>(r[2]);
}

/// The tail kernel: writes keystream blocks `counter..counter + 8` ([`TAIL_BLOCKS`]) under
/// the key words `key`, for any 64-bit `counter` (wrapping at 2^64). Each block's state is
/// four rows, one block per 128-bit lane, in two groups of four blocks.
///
/// # Safety
/// The CPU must have AVX-512F ([`detected`]).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn write_tail(key: &[u32; 8], counter: u64, out: &mut [Block; TAIL_BLOCKS]) {
    let sigma = rows4(SIGMA);
    let lo = rows4([0, 1, 2, 3].map(|i| key_word(key, i)));
    let hi = rows4([4, 5, 6, 7].map(|i| key_word(key, i)));
    // Row d of block j: the 64-bit counter `counter + j`, then the zero nonce.
    let ctr = |j: u64| counter.wrapping_add(j) as i64;
    let d = [
        _mm512_setr_epi64(ctr(0), 0, ctr(1), 0, ctr(2), 0, ctr(3), 0),
        _mm512_setr_epi64(ctr(4), 0, ctr(5), 0, ctr(6), 0, ctr(7), 0),
    ];
    let mut g = [[sigma, lo, hi, d[0]], [sigma, lo, hi, d[1]]];
    for _ in 0..10 {
        for r in &mut g {
            quarter(r, [0, 1, 2, 3]);
            diagonals(r, true);
        }
        for r in &mut g {
            quarter(r, [0, 1, 2, 3]);
            diagonals(r, false);
        }
    }
    for (half, (r, d)) in out.chunks_exact_mut(4).zip(g.iter_mut().zip(d)) {
        r[0] = _mm512_add_epi32(r[0], sigma);
        r[1] = _mm512_add_epi32(r[1], rows4([0, 1, 2, 3].map(|i| key_word(key, i))));
        r[2] = _mm512_add_epi32(r[2], rows4([4, 5, 6, 7].map(|i| key_word(key, i))));
        r[3] = _mm512_add_epi32(r[3], d);
        for (dst, v) in half.iter_mut().zip(transpose_lanes(*r)) {
            store(dst, v);
        }
    }
}
