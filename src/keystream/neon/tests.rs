//! The NEON kernel against the `chacha20` crate and RFC 8439, and the memory it writes: only
//! `out[.. 64 * blocks]`, nothing outside it, nothing on the stack.

use super::super::{BLOCK_LEN, Block, KEY_LEN, with_crate};
use super::*;

/// Bytes painted on each side of the output to catch stray stores.
const GUARD: usize = 80;
const PAINT: u8 = 0xa5;

fn key_for(seed: u64) -> [u8; KEY_LEN] {
    core::array::from_fn(|i| {
        (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 8 * 8)) as u8 ^ i as u8
    })
}

/// The crate's blocks `counter ..`, one call per block so that the counter wraps at 2^64.
fn reference(key: &[u8; KEY_LEN], counter: u64, blocks: usize) -> Vec<u8> {
    let mut out = vec![[0u8; BLOCK_LEN]; blocks];
    for (i, block) in out.iter_mut().enumerate() {
        with_crate(
            key,
            counter.wrapping_add(i as u64),
            core::slice::from_mut(block),
        );
    }
    out.concat()
}

/// The kernel's blocks into a buffer painted on both sides, the guards checked unchanged.
fn kernel_blocks(key: &[u8; KEY_LEN], counter: u64, blocks: usize) -> Vec<u8> {
    let mut buf = vec![PAINT; GUARD + BLOCK_LEN * blocks + GUARD];
    // SAFETY: 32 key bytes; `buf` holds 64 * blocks bytes from GUARD on; blocks >= 1.
    unsafe { keystream(key.as_ptr(), counter, buf[GUARD..].as_mut_ptr(), blocks) };
    let (body, after) = buf.split_at(GUARD + BLOCK_LEN * blocks);
    assert!(
        body[..GUARD].iter().chain(after).all(|&b| b == PAINT),
        "{blocks} blocks from {counter}: a store outside `out`"
    );
    body[GUARD..].to_vec()
}

/// Every block count of up to ten passes, from counters where no lane carries, where the
/// low word carries inside a pass (2^32 - 3), and where the 64-bit counter wraps.
#[test]
fn matches_the_chacha20_crate() {
    for (round, counter) in [0, 16, (1 << 32) - 3, u64::MAX - 1].into_iter().enumerate() {
        for blocks in 1..=40 {
            let key = key_for((round * 64 + blocks) as u64);
            assert_eq!(
                kernel_blocks(&key, counter, blocks),
                reference(&key, counter, blocks),
                "{blocks} blocks from {counter}"
            );
        }
    }
}

/// RFC 8439, appendix A.1, test vectors 1 and 2 (the zero key, blocks 0 and 1), and the
/// block after 2^64 - 1 is block 0.
#[test]
fn known_answers_and_the_counter_wraps() {
    let first = kernel_blocks(&[0; KEY_LEN], 0, 2);
    assert_eq!(
        first[..16],
        *b"\x76\xb8\xe0\xad\xa0\xf1\x3d\x90\x40\x5d\x6a\xe5\x53\x86\xbd\x28"
    );
    assert_eq!(
        first[48..64],
        *b"\x6a\x43\xb8\xf4\x15\x18\xa1\x1c\xc3\x87\xb6\x69\xb2\xee\x65\x86"
    );
    assert_eq!(
        first[64..80],
        *b"\x9f\x07\xe7\xbe\x55\x51\x38\x7a\x98\xba\x97\x7c\x73\x2d\x08\x0d"
    );
    let key = key_for(7);
    let wrapped = kernel_blocks(&key, u64::MAX, 2);
    assert_eq!(wrapped[BLOCK_LEN..], kernel_blocks(&key, 0, 1)[..]);
    assert_ne!(wrapped[..BLOCK_LEN], wrapped[BLOCK_LEN..]);
}

/// A refill: 16 blocks over the buffer whose first 32 bytes are the key.
#[test]
fn refill_over_its_own_key() {
    let key = key_for(99);
    let mut buf = [[PAINT; BLOCK_LEN]; 16];
    buf[0][..KEY_LEN].copy_from_slice(&key);
    let base = buf.as_flattened_mut().as_mut_ptr();
    // SAFETY: the key is the buffer's first 32 bytes, which holds 16 blocks.
    unsafe { keystream(base, 0, base, 16) };
    let want: Vec<Block> = reference(&key, 0, 16).as_chunks().0.to_vec();
    assert_eq!(buf.to_vec(), want);
}

/// Template lines that paint the 4 KiB below the stack pointer with a pattern (x6-x8).
macro_rules! paint {
    () => {
        concat!(
            "mov x8, sp\nsub x6, x8, #4096\nmov x7, #0x5555555555555555\n",
            "6:\nstr x7, [x6], #8\ncmp x6, x8\nb.ne 6b",
        )
    };
}

/// Template lines that count into x9 the 8-byte words of the 4 KiB below the stack pointer
/// that no longer hold the pattern (x6-x10).
macro_rules! count_changed {
    () => {
        concat!(
            "mov x8, sp\nsub x6, x8, #4096\nmov x7, #0x5555555555555555\nmov x9, xzr\n",
            "7:\nldr x10, [x6], #8\ncmp x10, x7\ncinc x9, x9, ne\ncmp x6, x8\nb.ne 7b",
        )
    };
}

/// `f` with every signal blocked: a handler's frame would land below the stack pointer.
fn signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: `set` is a filled signal set; `old` receives the previous mask, restored below.
    let mut old = unsafe { core::mem::zeroed::<libc::sigset_t>() };
    unsafe {
        let mut set = core::mem::zeroed::<libc::sigset_t>();
        libc::sigfillset(&mut set);
        assert_eq!(libc::pthread_sigmask(libc::SIG_SETMASK, &set, &mut old), 0);
    }
    let result = f();
    // SAFETY: restores the mask saved above.
    let restored = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, core::ptr::null_mut()) };
    assert_eq!(restored, 0);
    result
}

/// The words below the stack pointer that `blocks` blocks from counter 0 into `out` change:
/// the kernel's template in one `asm!` block between the painting and the count, with a
/// deliberate store below sp where asked (the count must then find it).
fn kernel_stack_words_changed(out: &mut [u8], blocks: usize, deliberate_store: bool) -> u64 {
    assert!(out.len() >= BLOCK_LEN * blocks);
    let key = key_for(3);
    let (k, o) = (key.as_ptr(), out.as_mut_ptr());
    macro_rules! painted {
        ($extra:literal) => {
            signals_blocked(|| {
                let changed: u64;
                // SAFETY: the kernel's contract as in `keystream`; the painting and the
                // count touch only the 4 KiB below sp, this thread's dead stack (no frame
                // is below this one, and signals are blocked).
                unsafe {
                    kernel!(k, 0u64, o, blocks; paint!(), concat!($extra, "\n", count_changed!());
                        out("x6") _, out("x7") _, out("x8") _, out("x9") changed, out("x10") _)
                };
                changed
            })
        };
    }
    if deliberate_store {
        painted!("str xzr, [sp, #-64]")
    } else {
        painted!("")
    }
}

/// The kernel's template writes nothing below the stack pointer, for one pass, a partial
/// pass and a refill's 16 blocks; the same count finds the one word a deliberate store changes.
#[test]
fn kernel_writes_nothing_on_the_stack() {
    let mut out = vec![0u8; BLOCK_LEN * 16];
    for blocks in [1, 3, 4, 16] {
        assert_eq!(
            kernel_stack_words_changed(&mut out, blocks, false),
            0,
            "{blocks} blocks"
        );
        assert_eq!(
            out[..BLOCK_LEN * blocks],
            reference(&key_for(3), 0, blocks)[..]
        );
    }
    assert_eq!(kernel_stack_words_changed(&mut out, 1, true), 1);
}

/// [`keystream`] itself, inlined between the painting and the count, in this build's
/// optimisation level: no frame of its own, no call, nothing written below the stack pointer.
#[test]
fn keystream_writes_nothing_on_the_stack() {
    let key = key_for(5);
    let mut out = vec![0u8; BLOCK_LEN * 16];
    let (k, o) = (key.as_ptr(), out.as_mut_ptr());
    let changed = signals_blocked(|| {
        let changed: u64;
        // SAFETY: the painting and the count touch only the 4 KiB below sp, this thread's
        // dead stack; 32 key bytes, 16 blocks of `out`.
        unsafe {
            asm!(paint!(), out("x6") _, out("x7") _, out("x8") _);
            keystream(k, 0, o, 16);
            asm!(count_changed!(), out("x6") _, out("x7") _, out("x8") _, out("x9") changed,
                out("x10") _);
        }
        changed
    });
    assert_eq!(changed, 0);
    assert_eq!(out, reference(&key, 0, 16));
}
