//! ChaCha20 keystream blocks for refills and direct fills: fkrng's own kernels on x86-64
//! (a sixteen-block AVX-512 kernel on CPUs with AVX-512F, an eight-block AVX2 kernel on CPUs
//! with AVX2, both detected at run time) and the `chacha20` crate everywhere else and for
//! what the kernels leave over (fewer than eight blocks, or a block counter that would carry
//! into its high word).
//!
//! The kernels compute consecutive blocks at once in the "one word of every block per
//! register" layout: sixteen vector registers hold word `i` of blocks `n..n + 16` (AVX-512,
//! `keystream/avx512.rs`) or `n..n + 8` (AVX2, `keystream/avx2.rs`), so every quarter round is
//! plain lane-wise adds, xors and rotations with no shuffling between the column and diagonal
//! rounds, and the results are transposed once into block order at the end. A refill (16
//! blocks) is one AVX-512 pass. The `chacha20` crate's AVX2 backend keeps two blocks per
//! register and shuffles the rows every half round, which costs about half again as much per
//! byte. All produce the ChaCha20 keystream of D. J. Bernstein's original definition (RFC
//! 8439's block function, 64-bit block counter in words 12-13, 64-bit nonce in words 14-15,
//! here always zero); `tests/kat.rs` checks refills and direct fills against an independent
//! implementation and the unit tests below check each kernel against the `chacha20` crate.
//!
//! ChaCha is add-rotate-xor only, so the kernels run in constant time like the crate's
//! backends. Every keystream computation (kernel or crate) runs in a callee that is never
//! inlined, and the stack area below the caller, where that callee's frames were, is zeroed
//! after it returns (`keystream/scrub.rs`, with signal frames pushed below it and the
//! registers on x86-64 Linux), so no spilled key word outlives the refill; elsewhere
//! key-derived values can remain in vector registers until later code reuses them (see
//! docs/SECURITY.md, "Keystream residue and stack use"). Builds with debug assertions and
//! no pin compute keystream with `keystream/small_stack.rs` instead, for a small stack at
//! opt-level 0 ([`KeystreamPath::SmallStack`]).

use chacha20::ChaCha20LegacyCore;
use chacha20::cipher::array::Array;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};

/// Size of the key `K` in bytes (ChaCha20's 256-bit key).
pub const KEY_LEN: usize = 32;
/// Size of one ChaCha20 block in bytes (RFC 8439, section 2.3).
pub const BLOCK_LEN: usize = 64;

/// One keystream block.
pub(crate) type Block = [u8; BLOCK_LEN];

/// The keystream path that refills and direct fills take: one of fkrng's x86-64 kernels, the
/// `chacha20` crate, or (in builds with debug assertions) fkrng's one-block plain-Rust code.
/// [`keystream_path`] names the one this build takes on this CPU. Every path gives the same
/// bytes; more may be added (for example for other architectures).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeystreamPath {
    /// fkrng's sixteen-block AVX-512 kernel (x86-64 CPUs with AVX-512F), with its
    /// eight-block AVX2 kernel for what is left of a fill after whole 16-block passes (1 KiB
    /// each) and its eight-block AVX-512 tail kernel for partial passes.
    Avx512,
    /// fkrng's eight-block AVX2 kernel (x86-64 CPUs with AVX2 but not AVX-512F), 512 bytes
    /// per pass.
    Avx2,
    /// The `chacha20` crate alone, with the backend it picks for itself (SSE2, AVX2 or, when
    /// built with `--cfg chacha20_avx512`, AVX-512 on x86-64; NEON on AArch64; plain Rust
    /// elsewhere): every target that is not x86-64, builds without the `std` feature (which
    /// the run-time CPU detection needs), and x86-64 CPUs without AVX2.
    Portable,
    /// fkrng's ChaCha20 one block at a time in plain Rust (`keystream/small_stack.rs`),
    /// which needs about 3 KiB of stack even unoptimised: builds with debug assertions (every
    /// Cargo profile at opt-level 0, such as a dependent's debug build) take it unless a path
    /// is pinned, because unoptimised SIMD code needs more stack than a 16 KiB thread has.
    SmallStack,
}

impl KeystreamPath {
    /// The lower-case name used by `fkrng --version` and by the `fkrng_keystream` build
    /// switch: `avx512`, `avx2` or `portable` (and `small-stack`, which is not a pin).
    pub const fn name(self) -> &'static str {
        match self {
            KeystreamPath::Avx512 => "avx512",
            KeystreamPath::Avx2 => "avx2",
            KeystreamPath::Portable => "portable",
            KeystreamPath::SmallStack => "small-stack",
        }
    }

    /// Whether a kernel of `self`'s path may run under `path`: the AVX-512 path also uses
    /// the AVX2 kernel for remainders, the portable path no kernel at all.
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    #[inline(always)]
    fn runs_under(self, path: KeystreamPath) -> bool {
        match self {
            KeystreamPath::Avx512 => path == KeystreamPath::Avx512,
            KeystreamPath::Avx2 => matches!(path, KeystreamPath::Avx512 | KeystreamPath::Avx2),
            KeystreamPath::Portable | KeystreamPath::SmallStack => true,
        }
    }
}

impl core::fmt::Display for KeystreamPath {
    /// Writes [`KeystreamPath::name`].
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

// The build-time pin of the keystream path, for tests: `--cfg fkrng_keystream="avx512"`,
// `"avx2"` or `"portable"` in RUSTFLAGS (see docs/ASSURANCE.md). A pin to a kernel this
// target cannot have is a build error; one to a kernel this CPU lacks panics at the first
// refill (see `keystream_path`).
#[cfg(all(
    any(fkrng_keystream = "avx512", fkrng_keystream = "avx2"),
    not(all(target_arch = "x86_64", feature = "std"))
))]
compile_error!(
    "--cfg fkrng_keystream=\"avx512\" or \"avx2\" needs target_arch x86_64 and the std feature"
);
#[cfg(any(
    all(fkrng_keystream = "avx512", fkrng_keystream = "avx2"),
    all(fkrng_keystream = "avx512", fkrng_keystream = "portable"),
    all(fkrng_keystream = "avx2", fkrng_keystream = "portable")
))]
compile_error!("more than one --cfg fkrng_keystream value given");

/// The keystream path fixed at build time by `--cfg fkrng_keystream="..."`, if any.
const PINNED: Option<KeystreamPath> = if cfg!(fkrng_keystream = "avx512") {
    Some(KeystreamPath::Avx512)
} else if cfg!(fkrng_keystream = "avx2") {
    Some(KeystreamPath::Avx2)
} else if cfg!(fkrng_keystream = "portable") {
    Some(KeystreamPath::Portable)
} else {
    None
};

/// The keystream path that refills and direct fills take in this build on this CPU: the
/// widest kernel the CPU has (detected at run time with CPUID, cached by `std`), or the one
/// pinned at build time with `--cfg fkrng_keystream="avx512"|"avx2"|"portable"` (a switch
/// for tests), or in builds with debug assertions and no pin
/// [`KeystreamPath::SmallStack`]. `fkrng --version` prints it as `keystream: <name>`.
///
/// # Panics
/// Only in a build pinned to a kernel this CPU lacks (for example `avx512` on a CPU without
/// AVX-512F): the pin never falls back to another path, so that a test run meant for one
/// kernel cannot pass on another. Every read of such a build panics the same way.
#[inline]
pub fn keystream_path() -> KeystreamPath {
    if small_stack::IN_USE {
        return KeystreamPath::SmallStack;
    }
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    {
        let detected = if avx512::detected() {
            KeystreamPath::Avx512
        } else if avx2::detected() {
            KeystreamPath::Avx2
        } else {
            KeystreamPath::Portable
        };
        match PINNED {
            None => detected,
            Some(pin) if pin.runs_under(detected) => pin,
            Some(pin) => pin_unavailable(pin, detected),
        }
    }
    #[cfg(not(all(target_arch = "x86_64", feature = "std")))]
    {
        // The only path here; a pin to another one is a build error (above).
        PINNED.unwrap_or(KeystreamPath::Portable)
    }
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
#[cold]
#[inline(never)]
fn pin_unavailable(pin: KeystreamPath, detected: KeystreamPath) -> ! {
    panic!(
        "fkrng: built with --cfg fkrng_keystream=\"{pin}\", but this CPU only has the \
         {detected} keystream path; the pin does not fall back"
    )
}

/// "expand 32-byte k" as four little-endian words (RFC 8439, section 2.3).
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The key as eight little-endian words, the kernels' input.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
#[inline(always)]
fn key_words(key: &[u8; KEY_LEN]) -> [u32; 8] {
    core::array::from_fn(|i| {
        u32::from_le_bytes(*key[4 * i..].first_chunk().expect("4 bytes of the key"))
    })
}

/// Whether blocks `counter..counter + blocks` keep the high counter word (word 13) fixed:
/// the kernels add lane offsets to the low word only.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
#[inline(always)]
fn low_counter_fits(counter: u64, blocks: usize) -> bool {
    counter.saturating_add(blocks as u64) <= 1 << 32
}

/// Writes keystream blocks `counter..counter + out.len()` under `key` (nonce zero) to `out`.
#[inline]
pub(crate) fn write_blocks(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    let (counter, out) = {
        let mut words = key_words(key);
        let left = with_kernels(&words, counter, out);
        zeroize::Zeroize::zeroize(&mut words);
        left
    };
    if !out.is_empty() {
        with_crate(key, counter, out);
    }
}

/// One of fkrng's pass kernels: blocks per pass, the CPU feature it needs, and the kernel.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
struct Kernel {
    /// The keystream path this kernel belongs to.
    path: KeystreamPath,
    lanes: usize,
    /// Whether this CPU has the kernel's instruction set (detected at run time).
    detected: fn() -> bool,
    /// Writes keystream blocks `counter..counter + out.len()` under the key words.
    ///
    /// # Safety
    /// Only where [`Kernel::usable`]`(path, counter, out.len())` holds for some path.
    write: unsafe fn(key: &[u32; 8], counter: u64, out: &mut [Block]),
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
impl Kernel {
    /// Whether the kernel may write `blocks` blocks from `counter` on: a whole, non-zero
    /// number of passes, no carry out of the low counter word (the kernels add lane offsets
    /// to word 12 only), the kernel part of `path`, and its instruction set present.
    #[inline(always)]
    fn usable(&self, path: KeystreamPath, counter: u64, blocks: usize) -> bool {
        blocks.is_multiple_of(self.lanes)
            && blocks > 0
            && low_counter_fits(counter, blocks)
            && self.path.runs_under(path)
            && (self.detected)()
    }
}

/// The pass kernels, fastest first.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
const KERNELS: [Kernel; 2] = [
    Kernel {
        path: KeystreamPath::Avx512,
        lanes: avx512::LANES,
        detected: avx512::detected,
        write: avx512::write_blocks,
    },
    Kernel {
        path: KeystreamPath::Avx2,
        lanes: avx2::LANES,
        detected: avx2::detected,
        write: avx2::write_blocks,
    },
];

/// Writes the longest prefix of `out` that whole kernel passes can cover (16-block AVX-512
/// passes first, then 8-block AVX2 passes), and returns the counter and blocks left over
/// for the crate: fewer than 8 blocks, or all of them on a CPU without AVX2 or where the
/// low counter word would carry.
#[cfg(all(target_arch = "x86_64", feature = "std"))]
#[inline]
fn with_kernels<'a>(
    words: &[u32; 8],
    mut counter: u64,
    mut out: &'a mut [Block],
) -> (u64, &'a mut [Block]) {
    let path = keystream_path();
    for kernel in &KERNELS {
        let whole = out.len() - out.len() % kernel.lanes;
        if kernel.usable(path, counter, whole) {
            let (head, rest) = core::mem::take(&mut out).split_at_mut(whole);
            // SAFETY: `usable(path, counter, whole)` holds, and `head` is `whole` blocks long.
            unsafe { (kernel.write)(words, counter, head) };
            #[cfg(test)]
            tests::count_call(if kernel.lanes == avx512::LANES { 0 } else { 1 });
            counter += whole as u64;
            out = rest;
        }
    }
    (counter, out)
}

/// Writes the keystream from the start of block `counter` on into `out`, any number of bytes:
/// whole kernel passes straight into `out`, the rest (under eight blocks) through a scratch
/// pass that is wiped afterwards. The computation runs in a callee of its own, whose frames
/// (and those of every kernel or crate backend it calls) are zeroed after it returns
/// ([`scrub::below`]).
#[inline]
#[cfg_attr(not(test), allow(dead_code))] // direct fills use `direct_fill_in_place`
pub(crate) fn write_bytes(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    scrub::below(|| write_bytes_below(key, counter, out));
}

/// The keystream of a direct fill: blocks 16 on under the key held in the first 32 bytes of
/// `blocks` into `rest`, then blocks 0..16 over `blocks` (as [`refill_in_place`]), in one
/// computation whose frames are zeroed after it returns ([`scrub::below`]).
#[inline]
pub(crate) fn direct_fill_in_place(blocks: &mut [Block; 16], rest: &mut [u8]) {
    scrub::below(|| {
        write_bytes_below(
            blocks[0].first_chunk().expect("a block holds a key"),
            16,
            rest,
        );
        refill_below(blocks);
    });
}

/// [`write_bytes`] without the scrub: every key-derived value it or its callees make lives
/// in frames below the caller's.
#[inline(never)]
fn write_bytes_below(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    if small_stack::IN_USE {
        small_stack::write(key, counter, out);
        return;
    }
    let (blocks, _) = out.as_chunks_mut::<BLOCK_LEN>();
    let whole = blocks.len() - blocks.len() % PASS;
    write_blocks(key, counter, &mut blocks[..whole]);
    let rest = &mut out[whole * BLOCK_LEN..];
    if rest.is_empty() {
        return;
    }
    let mut scratch = [[0u8; BLOCK_LEN]; PASS];
    write_tail(
        key,
        counter.wrapping_add(whole as u64),
        rest.len().div_ceil(BLOCK_LEN),
        &mut scratch,
    );
    rest.copy_from_slice(&scratch.as_flattened()[..rest.len()]);
    zeroize::Zeroize::zeroize(scratch.as_flattened_mut());
}

/// Writes at least the first `needed` (1 to 8) of the blocks from `counter` on to
/// `scratch`: eight through the AVX-512 tail kernel on the AVX-512 path; otherwise
/// eight through `write_blocks` when more than two are needed (one whole pass of the AVX2
/// kernel costs less than the crate's one-block-at-a-time tail), else just those blocks.
#[inline]
fn write_tail(key: &[u8; KEY_LEN], counter: u64, needed: usize, scratch: &mut [Block; PASS]) {
    debug_assert!((1..=PASS).contains(&needed));
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    if keystream_path() == KeystreamPath::Avx512 {
        let mut words = key_words(key);
        // SAFETY: the AVX-512 path is taken only where the CPU has AVX-512F (detected at
        // run time; a pin to it panics otherwise).
        unsafe { avx512::write_eight(&words, counter, scratch) };
        zeroize::Zeroize::zeroize(&mut words);
        #[cfg(test)]
        tests::count_call(2);
        return;
    }
    let computed = if needed > 2 { PASS } else { needed };
    write_blocks(key, counter, &mut scratch[..computed]);
}

/// Blocks per pass of the AVX2 kernel and per tail (8); `write_bytes` works in these units.
const PASS: usize = 8;

/// Overwrites `blocks` with the 16 keystream blocks 0..16 of the key held in the first 32
/// bytes of `blocks` (the key is read before anything is written). The computation runs in
/// a callee of its own, whose frames are zeroed after it returns ([`scrub::below`]).
#[inline]
pub(crate) fn refill_in_place(blocks: &mut [Block; 16]) {
    scrub::below(|| refill_below(blocks));
}

/// [`refill_in_place`] without the scrub: every key-derived value it or its callees make
/// lives in frames below the caller's.
#[inline(never)]
fn refill_below(blocks: &mut [Block; 16]) {
    if small_stack::IN_USE {
        let mut key = *blocks[0].first_chunk().expect("a block holds a key");
        small_stack::write(&key, 0, blocks.as_flattened_mut());
        zeroize::Zeroize::zeroize(&mut key);
        return;
    }
    #[cfg(all(target_arch = "x86_64", feature = "std"))]
    {
        let mut words = key_words(blocks[0].first_chunk().expect("a block holds a key"));
        // The key is now in `words`, so the kernels may write over `blocks`; where none
        // may, all 16 blocks are left and the key is still in place for the crate.
        let done = with_kernels(&words, 0, blocks).1.is_empty();
        zeroize::Zeroize::zeroize(&mut words);
        if done {
            return;
        }
    }
    let key: &[u8; KEY_LEN] = blocks[0].first_chunk().expect("a block holds a key");
    let mut cipher = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
    // The keystream overwrites the old key in place: no copy of it is made besides the
    // cipher's state, which is zeroized by its `Drop`.
    cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(blocks));
}

/// The `chacha20` crate's cipher (its SSE2/AVX2/AVX-512/NEON/portable backends). Its frames
/// are left for the scrub of the function that called into the keystream code.
fn with_crate(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    let mut cipher = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
    cipher.set_block_pos(counter);
    cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(out));
    // `cipher` is zeroized by its `Drop`.
}

#[cfg(all(target_arch = "x86_64", feature = "std"))]
mod avx2;
#[cfg(all(target_arch = "x86_64", feature = "std"))]
mod avx512;
mod scrub;
mod small_stack;

#[cfg(test)]
mod tests;
