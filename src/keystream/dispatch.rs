//! The kernel table: one row per keystream path with its assembly kernel, if any, and
//! the row this build takes (the widest the CPU has, or the pinned one). CPU features come
//! from `cpuid::has` (one pass of CPUID and XGETBV, cached), which needs no `std`.

use super::path::{KeystreamPath, PINNED};
#[cfg(target_arch = "x86_64")]
use super::{avx2, avx512, sse2};

/// A kernel in assembly that computes every refill and direct fill of its row and writes
/// nothing but registers and its output (the contract of `avx512::keystream`,
/// `avx2::keystream` and `sse2::keystream`), so its row
/// needs no scrub.
#[derive(Clone, Copy)]
pub(super) struct AsmKernel {
    /// Blocks per pass (16, 8 or 4).
    pub(super) lanes: usize,
    /// Whether this CPU has the kernel's instruction set.
    detected: fn() -> bool,
    /// Writes keystream blocks `counter .. counter + blocks` under the key at the first
    /// pointer to the second. Safety: as the row's kernel's (`avx512::keystream`,
    /// `avx2::keystream`, `sse2::keystream`: the second may start at the first for 16
    /// blocks).
    pub(super) keystream: Keystream,
    /// Blocks 0..16 into the third pointer (which may be the key) and block `counter` into
    /// the fourth, where the kernel has it. Safety: as `avx512::refill_and_block`,
    /// `avx2::refill_and_block` and `sse2::refill_and_block`.
    pub(super) refill_and_block: Option<RefillAndBlock>,
}

/// The signature of an [`AsmKernel`]'s function.
#[cfg(target_arch = "x86_64")]
pub(super) type Keystream =
    unsafe extern "sysv64" fn(key: *const u8, counter: u64, out: *mut u8, blocks: usize);
#[cfg(not(target_arch = "x86_64"))]
pub(super) type Keystream = unsafe fn(key: *const u8, counter: u64, out: *mut u8, blocks: usize);
/// The signature of an [`AsmKernel`]'s refill with a block riding along.
#[cfg(target_arch = "x86_64")]
pub(super) type RefillAndBlock =
    unsafe extern "sysv64" fn(key: *const u8, counter: u64, refill: *mut u8, extra: *mut u8);
#[cfg(not(target_arch = "x86_64"))]
pub(super) type RefillAndBlock =
    unsafe fn(key: *const u8, counter: u64, refill: *mut u8, extra: *mut u8);

/// One keystream path's row of the table.
pub(super) struct Row {
    /// The path, as [`keystream_path`] reports it.
    pub(super) path: KeystreamPath,
    /// Where set, computes every refill and direct fill of this row; where not, the
    /// `chacha20` crate does, and the row runs on any CPU of the target.
    pub(super) kernel: Option<AsmKernel>,
}

impl Row {
    #[inline(always)]
    fn detected(&self) -> bool {
        self.kernel.is_none_or(|kernel| (kernel.detected)())
    }
}

/// The table, widest path first; the last row runs on every x86-64 CPU (SSE2 is in the
/// baseline); on other targets the one row is the `chacha20` crate alone.
#[cfg(target_arch = "x86_64")]
const TABLE: &[Row] = &[
    Row {
        kernel: Some(AsmKernel {
            lanes: 16,
            detected: avx512::detected,
            keystream: avx512::keystream,
            refill_and_block: Some(avx512::refill_and_block),
        }),
        ..row(KeystreamPath::Avx512)
    },
    Row {
        kernel: Some(AsmKernel {
            lanes: 8,
            detected: avx2::detected,
            keystream: avx2::keystream,
            refill_and_block: Some(avx2::refill_and_block),
        }),
        ..row(KeystreamPath::Avx2)
    },
    // Under Miri, which runs no assembly (and detects no AVX2 or AVX-512F), the crate.
    Row {
        kernel: if cfg!(miri) {
            None
        } else {
            Some(AsmKernel {
                lanes: 4,
                detected: sse2::detected,
                keystream: sse2::keystream,
                refill_and_block: Some(sse2::refill_and_block),
            })
        },
        ..row(KeystreamPath::Portable)
    },
];
/// On AArch64 with NEON, fkrng's NEON kernel in assembly (as `portable`: no pin tells them
/// apart); elsewhere the `chacha20` crate alone.
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
const TABLE: &[Row] = &[Row {
    kernel: Some(AsmKernel {
        lanes: 4,
        detected: || true,
        keystream: super::neon::keystream,
        refill_and_block: None,
    }),
    ..row(KeystreamPath::Portable)
}];
#[cfg(not(any(
    target_arch = "x86_64",
    all(target_arch = "aarch64", target_feature = "neon")
)))]
const TABLE: &[Row] = &[row(KeystreamPath::Portable)];
/// `small_stack.rs` computes refills and direct fills.
const SMALL_STACK: Row = row(KeystreamPath::SmallStack);

const fn row(path: KeystreamPath) -> Row {
    Row { path, kernel: None }
}

/// The keystream path that refills and direct fills take in this build on this CPU: the
/// widest kernel the CPU has (detected at run time), the one pinned at build time with
/// `--cfg fkrng_keystream="avx512"|"avx2"|"portable"` (a switch for tests), or, in builds
/// with debug assertions or at opt-level 0 and no pin, [`KeystreamPath::SmallStack`] where
/// the CPU has no assembly kernel (targets other than x86-64 and
/// AArch64 with NEON).
/// `fkrng --version` prints it as `keystream: <name>`.
///
/// # Panics
/// Only in a build pinned to a kernel this CPU lacks (for example `avx512` on a CPU without
/// AVX-512F): the pin never falls back, so that a test run meant for one kernel cannot pass
/// on another. Every read of such a build panics the same way.
#[inline]
pub fn keystream_path() -> KeystreamPath {
    selected().path
}

/// The row of [`keystream_path`] (which see, also for the panic).
#[inline(always)]
pub(super) fn selected() -> &'static Row {
    let row = TABLE
        .iter()
        .find(|row| PINNED.map_or_else(|| row.detected(), |pin| pin == row.path))
        .expect("the last row runs anywhere, and a pin names a row of this target");
    if PINNED.is_some() && !row.detected() {
        pin_unavailable(row.path);
    }
    if super::small_stack::IN_USE && row.kernel.is_none() {
        return &SMALL_STACK;
    }
    row
}

#[cold]
#[inline(never)]
fn pin_unavailable(pin: KeystreamPath) -> ! {
    let detected = TABLE
        .iter()
        .find(|row| row.detected())
        .map_or(KeystreamPath::Portable, |row| row.path);
    panic!(
        "fkrng: built with --cfg fkrng_keystream=\"{pin}\", but this CPU only has the \
         {detected} keystream path; the pin does not fall back"
    )
}
