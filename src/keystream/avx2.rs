//! The eight-block AVX2 pass kernel: word `i` of blocks `n..n + 8` in one 256-bit register,
//! so the rounds are lane-wise adds, xors and rotations; one transposition stores the blocks.

use super::rider::Rider;
use super::{Block, SIGMA};
use core::arch::x86_64::*;

/// Blocks per kernel pass: 8 (512 bytes).
pub(super) const LANES: usize = 8;

cpufeatures::new!(cpuid_avx2, "avx2");

/// Whether this CPU has AVX2 and the OS saves its registers.
#[inline(always)]
pub(super) fn detected() -> bool {
    cpuid_avx2::get()
}

#[target_feature(enable = "avx2")]
#[inline]
fn rotl<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<L>(x), _mm256_srli_epi32::<R>(x))
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

/// Interleaves words `w..w + 4` of the eight blocks: `r[k]` holds those four words of block
/// `k` in its low 128 bits and of block `k + 4` in its high 128 bits.
#[target_feature(enable = "avx2")]
#[inline]
fn gather_quarter(x: &[__m256i; 16], w: usize) -> [__m256i; 4] {
    let t0 = _mm256_unpacklo_epi32(x[w], x[w + 1]);
    let t1 = _mm256_unpackhi_epi32(x[w], x[w + 1]);
    let t2 = _mm256_unpacklo_epi32(x[w + 2], x[w + 3]);
    let t3 = _mm256_unpackhi_epi32(x[w + 2], x[w + 3]);
    [
        _mm256_unpacklo_epi64(t0, t2),
        _mm256_unpackhi_epi64(t0, t2),
        _mm256_unpacklo_epi64(t1, t3),
        _mm256_unpackhi_epi64(t1, t3),
    ]
}

/// Transposes words `w..w + 8` (`w` is 0 or 8) of the eight blocks in `x` into bytes
/// `4 * w..4 * w + 32` of each of the eight blocks of `out`.
#[target_feature(enable = "avx2")]
#[inline]
fn store_half(x: &[__m256i; 16], w: usize, out: &mut [Block]) {
    let u = gather_quarter(x, w);
    let v = gather_quarter(x, w + 4);
    let (first, second) = out[..LANES].split_at_mut(4);
    let at = 4 * w;
    for k in 0..4 {
        let lo = _mm256_permute2x128_si256::<0x20>(u[k], v[k]);
        let hi = _mm256_permute2x128_si256::<0x31>(u[k], v[k]);
        let dst_lo: &mut [u8; 32] = first[k][at..].first_chunk_mut().expect("32 bytes");
        let dst_hi: &mut [u8; 32] = second[k][at..].first_chunk_mut().expect("32 bytes");
        // SAFETY: each destination is 32 bytes borrowed mutably, the size of one unaligned
        // 256-bit store.
        unsafe {
            _mm256_storeu_si256(dst_lo.as_mut_ptr().cast(), lo);
            _mm256_storeu_si256(dst_hi.as_mut_ptr().cast(), hi);
        }
    }
}

/// Writes keystream blocks `counter..counter + out.len()` under the key words `key`.
///
/// # Safety
/// The CPU must have AVX2; `out.len()` must be a multiple of 8 and `counter + out.len()` at
/// most 2^32 (`PassKernel::usable`).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn write_blocks(key: &[u32; 8], counter: u64, out: &mut [Block]) {
    passes(key, counter, out, |_| {});
}

/// Keystream blocks 0..16 into `refill` (two passes) and block `counter` into `extra`, which
/// rides along the first pass ([`Rider`]).
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn write_refill_and_block(
    key: &[u32; 8],
    refill: &mut [Block; 16],
    counter: u64,
    extra: &mut Block,
) {
    let (first, second) = refill.split_at_mut(LANES);
    let mut rider = Rider::new(key, counter);
    passes(key, 0, first, |q| rider.quarter(q));
    rider.finish(key, counter, extra);
    passes(key, LANES as u64, second, |_| {});
}

/// [`write_blocks`], calling `each` with every quarter round's word indices after the
/// pass's own, in the same loop body, so that a rider's rounds interleave with the pass's.
#[target_feature(enable = "avx2")]
#[inline]
fn passes(key: &[u32; 8], counter: u64, out: &mut [Block], mut each: impl FnMut([usize; 4])) {
    debug_assert!(out.len().is_multiple_of(LANES) && counter + out.len() as u64 <= 1 << 32);
    // `vpshufb` masks that rotate every 32-bit lane left by 16 and by 8 bits.
    let mut r16 = _mm256_setr_epi8(
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13, //
        2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13,
    );
    let mut r8 = _mm256_setr_epi8(
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14, //
        3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10, 15, 12, 13, 14,
    );
    // Hides the masks' values from the optimiser, which would otherwise spread a rotation
    // over the xor before it (two shuffles for one) and split a rotation by 16 into two.
    #[cfg(not(miri))]
    // SAFETY: the template is a comment: it reads, writes and jumps nowhere.
    unsafe {
        core::arch::asm!(
            "/* {0} {1} */",
            inout(ymm_reg) r16,
            inout(ymm_reg) r8,
            options(pure, nomem, nostack, preserves_flags)
        );
    }
    let mut init = [_mm256_setzero_si256(); 16];
    for i in 0..4 {
        init[i] = _mm256_set1_epi32(SIGMA[i] as i32);
    }
    for i in 0..8 {
        init[4 + i] = _mm256_set1_epi32(key[i] as i32);
    }
    // Words 13 (counter high), 14 and 15 (nonce) stay zero: `counter + 8 <= 2^32`.
    let lane_offsets = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let mut low = counter as u32;
    for pass in out.chunks_exact_mut(LANES) {
        init[12] = _mm256_add_epi32(_mm256_set1_epi32(low as i32), lane_offsets);
        let mut x = init;
        let mut quarter = |x: &mut [__m256i; 16], q| {
            quarter(x, q, r16, r8);
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
            x[i] = _mm256_add_epi32(x[i], init[i]);
        }
        store_half(&x, 0, pass);
        store_half(&x, 8, pass);
        low = low.wrapping_add(LANES as u32);
    }
}
