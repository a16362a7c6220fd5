//! ChaCha20 keystream blocks for refills and direct fills: fkrng's own kernels on x86-64
//! (a sixteen-block AVX-512 kernel on CPUs with AVX-512F, an eight-block AVX2 kernel on CPUs
//! with AVX2, both detected at run time, with or without `std`) and the `chacha20` crate
//! everywhere else and for what the kernels leave over (fewer than eight blocks, or a block
//! counter that would carry into its high word). Which kernels a build runs is one table,
//! `keystream/dispatch.rs`; the path's names and the build-time pin are in
//! `keystream/path.rs`.
//!
//! The kernels compute consecutive blocks at once in the "one word of every block per
//! register" layout: sixteen vector registers hold word `i` of blocks `n..n + 16` (AVX-512,
//! `keystream/avx512.rs`) or `n..n + 8` (AVX2, `keystream/avx2.rs`), so every quarter round is
//! plain lane-wise adds, xors and rotations with no shuffling between the column and diagonal
//! rounds, and the results are transposed once into block order at the end. A refill (16
//! blocks) is one AVX-512 pass. The `chacha20` crate's AVX2 backend keeps two blocks per
//! register and shuffles the rows every half round (docs/BENCHMARKS.md compares the two).
//! All produce the ChaCha20 keystream of D. J. Bernstein's original definition (RFC
//! 8439's block function, 64-bit block counter in words 12-13, 64-bit nonce in words 14-15,
//! here always zero); `tests/kat.rs` checks refills and direct fills against an independent
//! implementation and the unit tests (`keystream/tests.rs`) check each kernel against the
//! `chacha20` crate.
//!
//! ChaCha is add-rotate-xor only, so the kernels run in constant time like the crate's
//! backends. Every keystream computation (kernel or crate) runs in a callee that is never
//! inlined, and the stack area below the caller, where that callee's frames were, is zeroed
//! after it returns (`keystream/scrub.rs`, with signal frames pushed below it and the
//! registers on x86-64 Linux and AArch64 Linux and Android), so no spilled key word
//! outlives the refill; elsewhere
//! key-derived values can remain in vector registers until later code reuses them (see
//! docs/SECURITY.md, "Keystream residue and stack use"). Builds with debug assertions or at
//! opt-level 0, with no pin, compute keystream with `keystream/small_stack.rs` instead, for
//! a small stack at opt-level 0 ([`KeystreamPath::SmallStack`]).

use chacha20::ChaCha20LegacyCore;
use chacha20::cipher::array::Array;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};

/// Size of the key `K` in bytes (ChaCha20's 256-bit key).
pub const KEY_LEN: usize = 32;
/// Size of one ChaCha20 block in bytes (RFC 8439, section 2.3).
pub const BLOCK_LEN: usize = 64;

/// One keystream block.
pub(crate) type Block = [u8; BLOCK_LEN];

/// "expand 32-byte k" as four little-endian words (RFC 8439, section 2.3).
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// Writes keystream blocks `counter..counter + out.len()` under `key` (nonce zero) to `out`.
#[inline]
pub(crate) fn write_blocks(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    let row = dispatch::selected();
    let (counter, out) = if row.passes.is_empty() {
        (counter, out)
    } else {
        let mut words = dispatch::key_words(key);
        let left = dispatch::with_kernels(row, &words, counter, out);
        zeroize::Zeroize::zeroize(&mut words);
        left
    };
    if !out.is_empty() {
        with_crate(key, counter, out);
    }
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
    let whole = blocks.len() - blocks.len() % TAIL_BLOCKS;
    write_blocks(key, counter, &mut blocks[..whole]);
    let rest = &mut out[whole * BLOCK_LEN..];
    if rest.is_empty() {
        return;
    }
    let mut scratch = [[0u8; BLOCK_LEN]; TAIL_BLOCKS];
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
/// `scratch`: all eight through the path's tail kernel where it has one (the AVX-512
/// path); otherwise eight through `write_blocks` when more than two are needed (one whole
/// AVX2 pass where the path has one), else just those blocks (see [`dispatch::Row::tail`]).
#[inline]
fn write_tail(
    key: &[u8; KEY_LEN],
    counter: u64,
    needed: usize,
    scratch: &mut [Block; TAIL_BLOCKS],
) {
    debug_assert!((1..=TAIL_BLOCKS).contains(&needed));
    if let Some(tail) = dispatch::selected().tail {
        let mut words = dispatch::key_words(key);
        // SAFETY: the tail kernel is that of the selected row, which this CPU has (a pin to
        // a row it lacks panics in `selected`).
        unsafe { tail(&words, counter, scratch) };
        zeroize::Zeroize::zeroize(&mut words);
                crate::probe::kernel_call(2);
        return;
    }
    let computed = if needed > 2 { TAIL_BLOCKS } else { needed };
    write_blocks(key, counter, &mut scratch[..computed]);
}

/// Blocks per tail, the part of a byte fill that whole passes leave (8, 512 bytes): the
/// AVX-512 tail kernel's output and, on the AVX2 path, one pass of its kernel.
/// `write_bytes` works in these units.
const TAIL_BLOCKS: usize = 8;

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
    let row = dispatch::selected();
    if !row.passes.is_empty() {
        let mut words = dispatch::key_words(blocks[0].first_chunk().expect("a block holds a key"));
        // The key is now in `words`, so the kernels may write over `blocks`; where none
        // may, all 16 blocks are left and the key is still in place for the crate.
        let left = dispatch::with_kernels(row, &words, 0, blocks).1.len();
        zeroize::Zeroize::zeroize(&mut words);
        // All or nothing: every pass width divides 16 and the counter starts at 0, so the
        // kernels write all 16 blocks or none. Had they written some, block 0 (the key the
        // crate reads below) would already be keystream.
        debug_assert!(
            left == 0 || left == 16,
            "the kernels left {left} of a refill's 16 blocks"
        );
        let done = left == 0;
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

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod dispatch;
mod path;
mod scrub;
mod small_stack;

use path::PINNED;
pub use path::{KeystreamPath, keystream_path};

#[cfg(test)]
mod tests;
