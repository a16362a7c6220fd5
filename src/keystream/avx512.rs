//! The sixteen-block AVX-512 kernel: word `i` of blocks `n..n + 16` in one 512-bit register.
//!
//! A pass is exactly one refill (16 blocks, 1024 bytes). The layout is the AVX2 kernel's,
//! twice as wide, with two AVX-512F gains on top: a lane-wise rotation instruction
//! (`vprold`) for all four rotations of the quarter round, and 32 vector registers, so the
//! sixteen state words stay in registers for all 20 rounds. The key words are read from
//! the caller's array (which the caller wipes) when needed rather than kept in registers.
//! Only AVX-512F instructions are used.

use super::{Block, SIGMA, TAIL_BLOCKS};
use core::arch::x86_64::*;

/// Blocks per kernel pass: 16 (1024 bytes).
pub(super) const LANES: usize = 16;

cpufeatures::new!(cpuid_avx512f, "avx512f");

/// Whether this CPU has AVX-512F and the OS saves its registers (CPUID and XGETBV, read
/// once and cached by `cpufeatures`), which is all both kernels here need.
#[inline(always)]
pub(super) fn detected() -> bool {
    cpuid_avx512f::get()
}

#[target_feature(enable = "avx512f")]
#[inline]
fn splat(w: u32) -> __m512i {
    _mm512_set1_epi32(w as i32)
}

/// Key word `i`, read from memory at each use: a volatile read cannot be hoisted out of the
/// pass loop or kept in a register across the rounds, so the sixteen state words are the
/// only long-lived values and nothing key-derived is spilled to the stack (which the caller
/// scrubs all the same).
#[inline(always)]
fn key_word(key: &[u32; 8], i: usize) -> u32 {
    // SAFETY: `&key[i]` is a valid, aligned reference to an initialised `u32`.
    unsafe { core::ptr::read_volatile(&key[i]) }
}

/// The ChaCha quarter round on words `a`, `b`, `c`, `d` of sixteen blocks.
#[target_feature(enable = "avx512f")]
#[inline]
fn quarter(x: &mut [__m512i; 16], [a, b, c, d]: [usize; 4]) {
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

/// Transposes the sixteen words of sixteen blocks in `x` into block order and stores them
/// to the sixteen blocks of `out`.
#[target_feature(enable = "avx512f")]
#[inline]
fn store_pass(x: &[__m512i; 16], out: &mut [Block]) {
    let q0 = gather_quarter(x, 0);
    let q1 = gather_quarter(x, 4);
    let q2 = gather_quarter(x, 8);
    let q3 = gather_quarter(x, 12);
    let out: &mut [Block; LANES] = out.try_into().expect("one pass of 16 blocks");
    for k in 0..4 {
        // 128-bit lanes: lo01 = [q0.0, q0.1, q1.0, q1.1], hi01 = [q2.0, q2.1, q3.0, q3.1],
        // lo23 and hi23 the same for lanes 2 and 3; then lanes 0/2 and 1/3 of those pairs.
        let lo01 = _mm512_shuffle_i32x4::<0x44>(q0[k], q1[k]);
        let lo23 = _mm512_shuffle_i32x4::<0xee>(q0[k], q1[k]);
        let hi01 = _mm512_shuffle_i32x4::<0x44>(q2[k], q3[k]);
        let hi23 = _mm512_shuffle_i32x4::<0xee>(q2[k], q3[k]);
        let blocks = [
            _mm512_shuffle_i32x4::<0x88>(lo01, hi01),
            _mm512_shuffle_i32x4::<0xdd>(lo01, hi01),
            _mm512_shuffle_i32x4::<0x88>(lo23, hi23),
            _mm512_shuffle_i32x4::<0xdd>(lo23, hi23),
        ];
        for (j, v) in blocks.into_iter().enumerate() {
            let dst: &mut Block = &mut out[k + 4 * j];
            // SAFETY: `dst` is a 64-byte array borrowed mutably, the size of one unaligned
            // 512-bit store.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
        }
    }
}

/// Writes keystream blocks `counter..counter + out.len()` under the key `key`.
///
/// # Safety
/// The CPU must support AVX-512F; `out.len()` must be a multiple of 16 and `counter +
/// out.len()` at most 2^32 (see `Kernel::usable`).
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn write_blocks(key: &[u32; 8], counter: u64, out: &mut [Block]) {
    debug_assert!(out.len().is_multiple_of(LANES) && counter + out.len() as u64 <= 1 << 32);
    let lane_offsets = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut low = counter as u32;
    for pass in out.chunks_exact_mut(LANES) {
        let ctr = _mm512_add_epi32(splat(low), lane_offsets);
        // Words 13 (counter high), 14 and 15 (nonce) are zero: `counter + 16 <= 2^32`.
        let mut x = [_mm512_setzero_si512(); 16];
        for i in 0..4 {
            x[i] = splat(SIGMA[i]);
        }
        for i in 0..8 {
            x[4 + i] = splat(key_word(key, i));
        }
        x[12] = ctr;
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
            x[i] = _mm512_add_epi32(x[i], splat(SIGMA[i]));
        }
        for i in 0..8 {
            x[4 + i] = _mm512_add_epi32(x[4 + i], splat(key_word(key, i)));
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

/// The ChaCha quarter round on the four rows of four blocks (one block per 128-bit lane):
/// the columns of every block at once.
#[target_feature(enable = "avx512f")]
#[inline]
fn quarter_rows([a, b, c, d]: &mut [__m512i; 4]) {
    *a = _mm512_add_epi32(*a, *b);
    *d = _mm512_rol_epi32::<16>(_mm512_xor_si512(*d, *a));
    *c = _mm512_add_epi32(*c, *d);
    *b = _mm512_rol_epi32::<12>(_mm512_xor_si512(*b, *c));
    *a = _mm512_add_epi32(*a, *b);
    *d = _mm512_rol_epi32::<8>(_mm512_xor_si512(*d, *a));
    *c = _mm512_add_epi32(*c, *d);
    *b = _mm512_rol_epi32::<7>(_mm512_xor_si512(*b, *c));
}

/// Rotates the words of rows b, c and d within each block so that the diagonals line up as
/// columns (`forward`), or back.
#[target_feature(enable = "avx512f")]
#[inline]
fn diagonals(r: &mut [__m512i; 4], forward: bool) {
    // Word i of the rotated row b is word i + 1 of the original (0x39), of c i + 2 (0x4e),
    // of d i + 3 (0x93); the way back swaps 0x39 and 0x93.
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
/// the key `key` to `out`.
///
/// Unlike [`write_blocks`] this keeps each block's state as four rows (one block per
/// 128-bit lane, two groups of four blocks) and realigns the rows between column and
/// diagonal rounds, the usual layout for one block widened to four: what tails of direct
/// fills need, a few blocks at any counter (its cost against a whole pass and the
/// `chacha20` crate is in docs/BENCHMARKS.md). The 64-bit block
/// counter may take any value (it wraps at 2^64, as the counter of RFC 8439's original
/// 64-bit-nonce variant does).
///
/// # Safety
/// The CPU must support AVX-512F (see [`detected`]).
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
            quarter_rows(r);
            diagonals(r, true);
        }
        for r in &mut g {
            quarter_rows(r);
            diagonals(r, false);
        }
    }
    for (half, (r, d)) in out.chunks_exact_mut(4).zip(g.iter_mut().zip(d)) {
        r[0] = _mm512_add_epi32(r[0], sigma);
        r[1] = _mm512_add_epi32(r[1], rows4([0, 1, 2, 3].map(|i| key_word(key, i))));
        r[2] = _mm512_add_epi32(r[2], rows4([4, 5, 6, 7].map(|i| key_word(key, i))));
        r[3] = _mm512_add_epi32(r[3], d);
        // 128-bit lanes: ab01 = [a0, a1, b0, b1], ab23 = [a2, a3, b2, b3], cd01, cd23 the
        // same for rows c and d; then block j = [a_j, b_j, c_j, d_j].
        let ab01 = _mm512_shuffle_i32x4::<0x44>(r[0], r[1]);
        let ab23 = _mm512_shuffle_i32x4::<0xee>(r[0], r[1]);
        let cd01 = _mm512_shuffle_i32x4::<0x44>(r[2], r[3]);
        let cd23 = _mm512_shuffle_i32x4::<0xee>(r[2], r[3]);
        let blocks = [
            _mm512_shuffle_i32x4::<0x88>(ab01, cd01),
            _mm512_shuffle_i32x4::<0xdd>(ab01, cd01),
            _mm512_shuffle_i32x4::<0x88>(ab23, cd23),
            _mm512_shuffle_i32x4::<0xdd>(ab23, cd23),
        ];
        for (dst, v) in half.iter_mut().zip(blocks) {
            // SAFETY: `dst` is a 64-byte array borrowed mutably, the size of one unaligned
            // 512-bit store.
            unsafe { _mm512_storeu_si512(dst.as_mut_ptr().cast(), v) };
        }
    }
}
