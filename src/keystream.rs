//! ChaCha20 keystream for refills and direct fills: D. J. Bernstein's original ChaCha20 (RFC
//! 8439's block function, 64-bit block counter in words 12-13, zero 64-bit nonce in words
//! 14-15): the assembly kernel of the row `keystream/dispatch.rs` selects, or on rows
//! without one the `chacha20` crate. Every path gives the same bytes (`tests/kat.rs`, unit
//! tests).
//!
//! Invariant: on a row with an assembly kernel (AVX-512F, AVX2, SSE2, NEON), every refill
//! and direct fill is that kernel, which writes no stack, reads the key from the state and
//! clears its registers; elsewhere every key-derived value lives in registers or in the frames of a never-inlined
//! `*_below` callee, below its caller, which holds no key word; [`scrub::below`] clears the
//! registers (x86-64) and zeroes those frames when the callee returns.

use chacha20::ChaCha20LegacyCore;
use chacha20::cipher::array::Array;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};
use zeroize::Zeroize;

/// Size of the key `K` in bytes (ChaCha20's 256-bit key).
pub const KEY_LEN: usize = 32;
/// Size of one ChaCha20 block in bytes (RFC 8439, section 2.3).
pub const BLOCK_LEN: usize = 64;

/// One keystream block.
pub(crate) type Block = [u8; BLOCK_LEN];

/// "expand 32-byte k" as four little-endian words (RFC 8439, section 2.3).
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The key held in the first 32 bytes of a block.
fn key_of(block: &Block) -> &[u8; KEY_LEN] {
    block.first_chunk().expect("a block holds a key")
}

/// The keystream of a direct fill: blocks 16 on under the key in the first 32 bytes of
/// `blocks` into `dest[992..]`, then blocks 0..16 over `blocks` (as [`refill_in_place`]).
/// `dest[..992]` may be used as scratch: the caller overwrites it with the refill's buffer.
/// Computes no block that `dest` does not reach where whole passes of the widest kernel
/// leave one block (a rider).
///
/// # Panics
/// If `dest` is shorter than 992 bytes.
#[inline]
pub(crate) fn direct_fill_in_place(blocks: &mut [Block; 16], dest: &mut [u8]) {
    let (head, rest) = dest.split_at_mut(16 * BLOCK_LEN - KEY_LEN);
    match dispatch::selected().kernel {
        Some(kernel) => direct_fill_with_kernel(kernel, blocks, head, rest),
        None => scrub::below(|| direct_fill_unscrubbed(blocks, rest)),
    }
}

/// [`direct_fill_in_place`] with an assembly kernel, which leaves nothing to scrub: the
/// blocks of `rest` straight from the kernel, except that its last block, where it is
/// partial or (with a rider) alone in its pass, rides along the refill (into `head` if
/// partial; without a rider, a call of its own). No key
/// word is copied: the kernels read the key from `blocks`.
fn direct_fill_with_kernel(
    kernel: dispatch::AsmKernel,
    blocks: &mut [Block; 16],
    head: &mut [u8],
    rest: &mut [u8],
) {
    let alone = kernel.refill_and_block.is_some() && rest.len() / BLOCK_LEN % kernel.lanes == 1;
    let ride = !rest.len().is_multiple_of(BLOCK_LEN) || alone;
    let direct = rest.len().div_ceil(BLOCK_LEN) - usize::from(ride);
    let state = blocks.as_mut_ptr().cast::<u8>();
    let (rest, last) = rest.split_at_mut(direct * BLOCK_LEN);
    let extra = if last.len() == BLOCK_LEN {
        last.as_mut_ptr()
    } else {
        head.as_mut_ptr()
    };
    // SAFETY: the kernels are the selected row's, which this CPU has (`selected` panics on a
    // pin to a row it lacks); `state` is 1024 bytes with the key first; `rest` holds
    // `direct` blocks, and `extra` 64 bytes (`head` is 992) outside the state.
    unsafe {
        if direct > 0 {
            run(kernel.keystream, state, 16, rest.as_mut_ptr(), direct);
        }
        match kernel.refill_and_block.filter(|_| ride) {
            Some(refill_and_block) => {
                refill_and_block(state, 16 + direct as u64, state, extra);
                crate::probe::kernel_call(1);
            }
            None => {
                if ride {
                    run(kernel.keystream, state, 16 + direct as u64, extra, 1);
                }
                run(kernel.keystream, state, 0, state, 16);
            }
        }
    }
    if last.len() < BLOCK_LEN {
        last.copy_from_slice(&head[..last.len()]);
    }
}

/// Calls an assembly kernel (counted in the unit tests). Safety: as the kernel's.
#[inline(always)]
unsafe fn run(
    keystream: dispatch::Keystream,
    key: *const u8,
    counter: u64,
    out: *mut u8,
    n: usize,
) {
    // SAFETY: the caller's contract.
    unsafe { keystream(key, counter, out, n) };
    crate::probe::kernel_call(0);
}

/// [`direct_fill_in_place`] unscrubbed. Inlined, so that the choice is made in the
/// caller's frame and a fill reaches no deeper than its two computations.
#[inline(always)]
fn direct_fill_unscrubbed(blocks: &mut [Block; 16], rest: &mut [u8]) {
    write_bytes_below(key_of(&blocks[0]), 16, rest);
    refill_below(blocks);
}

/// Writes the keystream from block `counter` into `out` (any length): whole blocks straight
/// into `out`, a partial last one via one block of scratch, wiped afterwards. One frame, so
/// that every path stays within the scrub. Unscrubbed ([`scrub::below`]).
#[inline(never)]
fn write_bytes_below(key: &[u8; KEY_LEN], counter: u64, out: &mut [u8]) {
    if dispatch::selected().path == KeystreamPath::SmallStack {
        small_stack::write(key, counter, out);
        return;
    }
    let (blocks, rest) = out.as_chunks_mut::<BLOCK_LEN>();
    with_crate(key, counter, blocks);
    if rest.is_empty() {
        return;
    }
    let mut scratch = [[0u8; BLOCK_LEN]; 1];
    with_crate(key, counter.wrapping_add(blocks.len() as u64), &mut scratch);
    rest.copy_from_slice(&scratch[0][..rest.len()]);
    scratch.as_flattened_mut().zeroize();
}

/// Overwrites `blocks` with keystream blocks 0..16 of the key in the first 32 bytes of
/// `blocks`, in a scrubbed callee ([`scrub::below`]).
#[inline]
pub(crate) fn refill_in_place(blocks: &mut [Block; 16]) {
    if let Some(kernel) = dispatch::selected().kernel {
        let state = blocks.as_mut_ptr().cast::<u8>();
        // SAFETY: the kernel is the selected row's, which this CPU has; `state` is 1024
        // bytes with the key first, and the kernel's output may start at its key.
        unsafe { run(kernel.keystream, state, 0, state, 16) };
        return;
    }
    scrub::below(|| refill_below(blocks));
}

/// [`refill_in_place`] unscrubbed.
#[inline(never)]
fn refill_below(blocks: &mut [Block; 16]) {
    if dispatch::selected().path == KeystreamPath::SmallStack {
        let mut key = *key_of(&blocks[0]);
        small_stack::write(&key, 0, blocks.as_flattened_mut());
        key.zeroize();
        return;
    }
    // The cipher's state is the only copy of the key (zeroized by its `Drop`); the
    // keystream then overwrites the key in place.
    let mut cipher = ChaCha20LegacyCore::new(key_of(&blocks[0]).into(), &[0u8; 8].into());
    cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(blocks));
}

/// The `chacha20` crate's cipher, whose state is zeroized by its `Drop`.
fn with_crate(key: &[u8; KEY_LEN], counter: u64, out: &mut [Block]) {
    let mut cipher = ChaCha20LegacyCore::new(key.into(), &[0u8; 8].into());
    cipher.set_block_pos(counter);
    cipher.write_keystream_blocks(Array::cast_slice_from_core_mut(out));
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod dispatch;
#[cfg(all(target_arch = "aarch64", target_feature = "neon"))]
mod neon;
mod path;
mod scrub;
mod small_stack;
#[cfg(target_arch = "x86_64")]
mod sse2;

pub use dispatch::keystream_path;
pub use path::KeystreamPath;
use path::PINNED;

#[cfg(test)]
mod tests;
