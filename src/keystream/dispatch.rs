//! The kernel table: for each keystream path, whether this CPU can take it, the pass kernels
//! it runs and its tail kernel; and the choice of the row a build takes (the widest the CPU
//! has, or the one pinned at build time).
//!
//! CPU features are read with `cpufeatures` (CPUID and, for the AVX states, XGETBV, once per
//! process, cached in an atomic) as the `chacha20` crate's own backend choice does, which
//! needs no `std`: the kernels serve `no_std` builds too.

use super::{Block, KEY_LEN, KeystreamPath, PINNED, TAIL_BLOCKS};
#[cfg(target_arch = "x86_64")]
use super::{avx2, avx512};

/// One of fkrng's pass kernels: whole passes of `lanes` consecutive blocks.
#[derive(Clone, Copy)]
pub(super) struct PassKernel {
    /// Blocks per pass: 16 (AVX-512) or 8 (AVX2).
    pub(super) lanes: usize,
    /// Whether this CPU has the kernel's instruction set.
    detected: fn() -> bool,
    /// Writes keystream blocks `counter..counter + out.len()` under the key words.
    ///
    /// # Safety
    /// Only where [`PassKernel::usable`]`(counter, out.len())` holds.
    pub(super) write: unsafe fn(key: &[u32; 8], counter: u64, out: &mut [Block]),
}

impl PassKernel {
    /// Whether the kernel may write `blocks` blocks from `counter` on: a whole, non-zero
    /// number of passes, no carry out of the low counter word (the kernels add lane offsets
    /// to word 12 only), and its instruction set present.
    #[inline(always)]
    pub(super) fn usable(&self, counter: u64, blocks: usize) -> bool {
        blocks.is_multiple_of(self.lanes)
            && blocks > 0
            && counter.saturating_add(blocks as u64) <= 1 << 32
            && (self.detected)()
    }
}

/// A tail kernel: [`TAIL_BLOCKS`] blocks from any 64-bit counter (wrapping at 2^64).
///
/// # Safety
/// Only where the row that names it is [`selected`].
pub(super) type TailKernel =
    unsafe fn(key: &[u32; 8], counter: u64, out: &mut [Block; TAIL_BLOCKS]);

/// One keystream path's row of the table.
pub(super) struct Row {
    /// The path, as [`super::keystream_path`] reports it.
    pub(super) path: KeystreamPath,
    /// Whether this CPU can take the path.
    detected: fn() -> bool,
    /// Its pass kernels, widest first: each covers what it can of what the one before left,
    /// and the `chacha20` crate the rest.
    pub(super) passes: &'static [PassKernel],
    /// Its tail kernel, for what the passes leave of a byte fill. Without one, a tail of
    /// three to eight blocks is computed as a whole eight-block fill (one AVX2 pass where
    /// the path has one), and a shorter one by the crate (the break-even measured in
    /// docs/BENCHMARKS.md).
    pub(super) tail: Option<TailKernel>,
}

/// The sixteen-block AVX-512 pass kernel.
#[cfg(target_arch = "x86_64")]
pub(super) const AVX512_PASS: PassKernel = PassKernel {
    lanes: avx512::LANES,
    detected: avx512::detected,
    write: avx512::write_blocks,
};

/// The eight-block AVX2 pass kernel.
#[cfg(target_arch = "x86_64")]
pub(super) const AVX2_PASS: PassKernel = PassKernel {
    lanes: avx2::LANES,
    detected: avx2::detected,
    write: avx2::write_blocks,
};

/// The table, widest path first. The last row, the `chacha20` crate alone, runs anywhere.
#[cfg(target_arch = "x86_64")]
const TABLE: &[Row] = &[
    Row {
        path: KeystreamPath::Avx512,
        detected: avx512::detected,
        passes: &[AVX512_PASS, AVX2_PASS],
        tail: Some(avx512::write_tail),
    },
    Row {
        path: KeystreamPath::Avx2,
        detected: avx2::detected,
        passes: &[AVX2_PASS],
        tail: None,
    },
    PORTABLE,
];
#[cfg(not(target_arch = "x86_64"))]
const TABLE: &[Row] = &[PORTABLE];

/// The `chacha20` crate alone.
const PORTABLE: Row = Row {
    path: KeystreamPath::Portable,
    detected: || true,
    passes: &[],
    tail: None,
};

/// Builds with debug assertions and no pin: no kernel, no tail kernel, and the keystream
/// computed by `small_stack.rs` (where a path reaches the crate instead, as a direct call of
/// `write_blocks` does, it runs the crate).
const SMALL_STACK: Row = Row {
    path: KeystreamPath::SmallStack,
    detected: || true,
    passes: &[],
    tail: None,
};

/// The row this build takes on this CPU: [`SMALL_STACK`] in builds with debug assertions and
/// no pin; else the first row whose instruction set the CPU has, or the one pinned with
/// `--cfg fkrng_keystream` (the one line marked below), which never falls back.
///
/// # Panics
/// In a build pinned to a path this CPU lacks (see [`super::keystream_path`]).
#[inline(always)]
pub(super) fn selected() -> &'static Row {
    if super::small_stack::IN_USE {
        return &SMALL_STACK;
    }
    let row = TABLE
        .iter()
        // The pin: the pinned row, whatever the CPU has; else the first the CPU has.
        .find(|row| PINNED.map_or_else(|| (row.detected)(), |pin| pin == row.path))
        .expect("the last row runs anywhere, and a pin names a row of this target");
    if PINNED.is_some() && !(row.detected)() {
        pin_unavailable(row.path);
    }
    row
}

#[cold]
#[inline(never)]
fn pin_unavailable(pin: KeystreamPath) -> ! {
    let detected = TABLE
        .iter()
        .find(|row| (row.detected)())
        .map_or(KeystreamPath::Portable, |row| row.path);
    panic!(
        "fkrng: built with --cfg fkrng_keystream=\"{pin}\", but this CPU only has the \
         {detected} keystream path; the pin does not fall back"
    )
}

/// The key as eight little-endian words, the kernels' input.
#[inline(always)]
pub(super) fn key_words(key: &[u8; KEY_LEN]) -> [u32; 8] {
    core::array::from_fn(|i| {
        u32::from_le_bytes(*key[4 * i..].first_chunk().expect("4 bytes of the key"))
    })
}

/// Writes the longest prefix of `out` that whole passes of `row`'s kernels can cover
/// (16-block AVX-512 passes first, then 8-block AVX2 passes), and returns the counter and
/// blocks left over for the crate: fewer than 8 blocks, or all of them on the portable path
/// or where the low counter word would carry.
#[inline]
pub(super) fn with_kernels<'a>(
    row: &Row,
    words: &[u32; 8],
    mut counter: u64,
    mut out: &'a mut [Block],
) -> (u64, &'a mut [Block]) {
    for kernel in row.passes {
        let whole = out.len() - out.len() % kernel.lanes;
        if kernel.usable(counter, whole) {
            let (head, rest) = core::mem::take(&mut out).split_at_mut(whole);
            // SAFETY: `usable(counter, whole)` holds, and `head` is `whole` blocks long.
            unsafe { (kernel.write)(words, counter, head) };
                        crate::probe::kernel_call(if kernel.lanes == 16 { 0 } else { 1 });
            counter += whole as u64;
            out = rest;
        }
    }
    (counter, out)
}
