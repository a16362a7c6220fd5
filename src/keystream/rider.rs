//! One ChaCha20 block in general-purpose registers riding along a vector pass, its quarter
//! rounds between the pass's on integer ports the vector code leaves idle: a direct fill one
//! block past whole passes (993 to 1,056 bytes, every power of two from 1 KiB) computes it
//! with its refill. Words that do not fit the registers spill into the scrubbed frame.

use super::{Block, SIGMA};
use zeroize::Zeroize;

/// The working state of block `counter` (any 64-bit counter) under the key words.
pub(super) struct Rider([u32; 16]);

impl Rider {
    #[inline(always)]
    pub(super) fn new(key: &[u32; 8], counter: u64) -> Self {
        let mut x = [0u32; 16];
        x[..4].copy_from_slice(&SIGMA);
        x[4..12].copy_from_slice(key);
        x[12] = counter as u32;
        x[13] = (counter >> 32) as u32;
        Rider(x)
    }

    /// The quarter round on words `a`, `b`, `c`, `d` (RFC 8439, section 2.1).
    #[inline(always)]
    pub(super) fn quarter(&mut self, [a, b, c, d]: [usize; 4]) {
        let x = &mut self.0;
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(16);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(12);
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(8);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(7);
        // Names the words as general-purpose registers, so that the optimiser cannot turn
        // the rider into vector code competing with the pass it rides along.
        #[cfg(not(miri))]
        // SAFETY: the template is a comment: it reads, writes and jumps nowhere.
        unsafe {
            core::arch::asm!(
                "/* {0:e} {1:e} {2:e} {3:e} */",
                inout(reg) x[a],
                inout(reg) x[b],
                inout(reg) x[c],
                inout(reg) x[d],
                options(pure, nomem, nostack, preserves_flags)
            );
        }
    }

    /// After the twenty rounds: adds the input words back and writes the block to `out`.
    #[inline(always)]
    pub(super) fn finish(mut self, key: &[u32; 8], counter: u64, out: &mut Block) {
        let mut input = Rider::new(key, counter);
        for ((dst, x), i) in out.chunks_exact_mut(4).zip(self.0).zip(input.0) {
            dst.copy_from_slice(&x.wrapping_add(i).to_le_bytes());
        }
        self.0.zeroize();
        input.0.zeroize();
    }
}
