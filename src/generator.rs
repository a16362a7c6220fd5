//! The fast-key-erasure generator (docs/DESIGN.md, "The construction"): a refill overwrites
//! the 1024-byte block, key `K` then buffer, in place with keystream under `K`.

use crate::keystream;
pub use crate::keystream::{BLOCK_LEN, KEY_LEN};
use core::fmt;
use zeroize::Zeroize;

/// Blocks produced per refill: 16 blocks, 1024 bytes.
pub const REFILL_BLOCKS: usize = 16;
/// Bytes produced per refill (key plus buffer): 1024.
pub const REFILL_LEN: usize = REFILL_BLOCKS * BLOCK_LEN;
/// Bytes served from one refill: 992 (1024 minus the 32-byte next key).
pub const BUFFER_LEN: usize = REFILL_LEN - KEY_LEN;

/// The key and buffer block and the count of unserved bytes; served bytes are zeroed. All
/// zero is the valid empty, unseeded state (so a page wiped on `fork` needs no check).
#[repr(C, align(64))]
pub(crate) struct FkeState {
    /// `block[..32]` is the key `K`; `block[32..]` is the buffer.
    block: [[u8; BLOCK_LEN]; REFILL_BLOCKS],
    /// Unserved bytes (`avail`, 0 ..= 992, at `block[REFILL_LEN - avail..]`) negated, wrapping
    /// (0 when empty): the first is at `REFILL_LEN + neg_avail`, an addition, no subtraction.
    neg_avail: usize,
}

impl FkeState {
    /// Byte offsets of the unserved count and of the block's end (the first unserved byte is
    /// at `BLOCK_END + neg_avail`), for the `asm!` fast path of `crate::thread`.
    #[cfg(all(feature = "std", target_arch = "x86_64", not(miri)))]
    pub(crate) const NEG_AVAIL_AT: usize = core::mem::offset_of!(FkeState, neg_avail);
    #[cfg(all(feature = "std", target_arch = "x86_64", not(miri)))]
    pub(crate) const BLOCK_END: usize = core::mem::offset_of!(FkeState, block) + REFILL_LEN;

    /// An empty state with key `key`: the first read refills.
    pub(crate) const fn new(key: [u8; KEY_LEN]) -> Self {
        let mut block = [[0u8; BLOCK_LEN]; REFILL_BLOCKS];
        block[0].split_at_mut(KEY_LEN).0.copy_from_slice(&key);
        let neg_avail = 0;
        FkeState { block, neg_avail }
    }

    /// Unserved bytes in the buffer (0 to 992), for the tests (a serve reads the count itself).
    #[cfg(any(test, fuzzing, fkrng_test_hooks))]
    pub(crate) fn available(&self) -> usize {
        self.neg_avail.wrapping_neg()
    }

    /// The negated count, read once (volatile: no add-to-memory reloads it): a signal handler
    /// interrupting a read may `clone` a child whose state is wiped on fork, and the child must
    /// test, slice and store the count its bytes came from, not one made from its zero (past
    /// the buffer). Every read of the count that a serve uses is this one.
    #[inline(always)]
    fn neg_avail_once(&self) -> usize {
        // SAFETY: an initialised, aligned field, read through a pointer made from a reference.
        unsafe { core::ptr::read_volatile(&raw const self.neg_avail) }
    }

    /// Copies `dest.len()` bytes out of the buffer, zeroed there, if that many are unserved;
    /// `false` (nothing copied) otherwise. The count is read once: see [`Self::neg_avail_once`].
    #[inline(always)]
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by the thread-local generator
    pub(crate) fn serve(&mut self, dest: &mut [u8]) -> bool {
        let avail = self.neg_avail_once().wrapping_neg();
        if dest.len() > avail {
            return false;
        }
        self.serve_from(dest, avail);
        true
    }

    /// [`Self::serve`] with the count `avail` (`dest.len() <= avail`) already read.
    #[inline(always)]
    fn serve_from(&mut self, dest: &mut [u8], avail: usize) {
        // Sliced so that the bounds checks fold into the caller's `dest.len() <= avail`.
        let buffer = self.block.as_flattened_mut();
        let unserved = &mut buffer[REFILL_LEN - avail..];
        let src = &mut unserved[..dest.len()];
        crate::probe::at(crate::probe::Point::BeforeCopy);
        if dest.len() <= 64 {
            take_small(dest, src);
        } else {
            dest.copy_from_slice(src);
            src.fill(0);
        }
        self.neg_avail = (avail - dest.len()).wrapping_neg();
    }

    /// Takes the next `N` unserved bytes as an array, zeroing them in the buffer, or `None`
    /// (nothing taken) when fewer than `N` are left.
    #[inline(always)]
    pub(crate) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        // One comparison for `N <= avail <= 992`: the next unserved byte's offset in the
        // buffer, `992 - avail`, is at most `992 - N` then, and wraps past it otherwise.
        let neg_avail = self.neg_avail_once();
        let at = neg_avail.wrapping_add(BUFFER_LEN);
        if at > BUFFER_LEN.checked_sub(N)? {
            return None;
        }
        // In bounds by the check above (`KEY_LEN + at + N <= REFILL_LEN`): no panic branch.
        let buffer = self.block.as_flattened_mut();
        let src = buffer[KEY_LEN + at..].first_chunk_mut::<N>()?;
        let out = *src;
        *src = [0; N];
        self.neg_avail = neg_avail.wrapping_add(N);
        Some(out)
    }

    /// Fills `dest` from the buffer, then by refills and a direct fill.
    /// `before_keystream(self, n)` runs before each keystream batch of `n` bytes (1024, or
    /// 32 + `dest.len()` for a direct fill), never when the buffer alone suffices.
    #[inline]
    pub(crate) fn fill_with<E>(
        &mut self,
        mut dest: &mut [u8],
        mut before_keystream: impl FnMut(&mut Self, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        while !dest.is_empty() {
            let avail = self.neg_avail_once().wrapping_neg();
            if avail > 0 {
                let m = dest.len().min(avail);
                let (now, rest) = dest.split_at_mut(m);
                self.serve_from(now, avail);
                dest = rest;
            } else if dest.len() >= BUFFER_LEN {
                before_keystream(self, KEY_LEN + dest.len())?;
                self.direct_fill(dest);
                return Ok(());
            } else {
                before_keystream(self, REFILL_LEN)?;
                self.refill();
            }
        }
        Ok(())
    }

    /// `Z = keystream(K, 1024)`; `K = Z[..32]`; buffer = `Z[32..]`, all 992 bytes unserved.
    #[inline(never)]
    pub(crate) fn refill(&mut self) {
        keystream::refill_in_place(&mut self.block);
        self.neg_avail = BUFFER_LEN.wrapping_neg();
    }

    /// For `dest.len() >= 992` with an empty buffer: `Z = keystream(K, 32 + n)`, `K = Z[..32]`,
    /// `dest = Z[32..]`; `Z[..1024]` is an in-place refill whose buffer moves to `dest`.
    #[inline(never)]
    fn direct_fill(&mut self, dest: &mut [u8]) {
        debug_assert_eq!(self.neg_avail, 0);
        debug_assert!(dest.len() >= BUFFER_LEN);
        keystream::direct_fill_in_place(&mut self.block, dest);
        let buffer = &mut self.block.as_flattened_mut()[KEY_LEN..];
        dest[..BUFFER_LEN].copy_from_slice(buffer);
        buffer.zeroize();
    }

    /// Reseeds by mixing: `K = K XOR s`, then zeroes the 992-byte buffer and marks it empty.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by the thread-local generator
    pub(crate) fn mix_key(&mut self, s: &[u8; KEY_LEN]) {
        for (k, s) in self.block[0][..KEY_LEN].iter_mut().zip(s) {
            *k ^= s;
        }
        self.block.as_flattened_mut()[KEY_LEN..].zeroize();
        self.neg_avail = 0;
    }

    /// Zeroes the whole state, padding included (a move may have copied stack residue there).
    pub(crate) fn wipe(&mut self) {
        // SAFETY: `FkeState` is plain data whose all-zero value is valid (the empty state);
        // `self` is a valid, exclusive pointer to it.
        unsafe { zeroize::zeroize_flat_type(self as *mut Self) };
    }
}

/// A seedable fast-key-erasure ChaCha20 generator: the thread-local generator's construction
/// without its lifecycle (docs/DESIGN.md, "The construction"). For a 32-byte seed and a
/// sequence of read sizes its output is value-stable, the same bytes on every platform and in
/// every release. Every 1024-byte refill (16 RFC 8439 blocks, nonce and counter 0) replaces
/// the key; served bytes are zeroed. The bytes depend on how reads are split, not only on
/// their total: where a read still needs 992 bytes or more once the buffer's unserved bytes
/// are taken, the rest is a direct fill (keystream under the current key straight into it),
/// so one `fill` of 4096 bytes and 4096 fills of one byte give different bytes. Reads below
/// 992 bytes, integers and arrays included, give the same bytes however they are split.
///
/// A `rand_core` 0.10 `SeedableRng` (32-byte seed), [`rand_core::Rng`] and
/// [`rand_core::CryptoRng`]; with `rand_core_0_6`, `rand_core_0_9` those generations' traits,
/// same stream. `seed_from_u64` gives only 2^64 streams: never for secrets.
///
/// Not `Clone` (copies would repeat output); `Debug` shows no state; dropping it zeroizes it.
/// A move is a byte copy Rust does not wipe: put it where it lives (a `Box`, a field) before
/// the first read. `from_seed` and `Box::new` may leave copies of the seed in dead stack
/// frames; the thread-local generator is seeded in place.
///
/// ```
/// use fkrng::FkeRng;
/// use rand_core::{Rng, SeedableRng};
///
/// let mut rng = FkeRng::from_seed([0u8; 32]);
/// let mut nonce = [0u8; 12];
/// rng.fill_bytes(&mut nonce);
/// assert_eq!(nonce[..4], [0xda, 0x41, 0x59, 0x7c]);
/// ```
///
/// ```compile_fail
/// use rand_core::SeedableRng;
/// let a = fkrng::FkeRng::from_seed([1; 32]);
/// let b = a.clone(); // not `Clone`
/// ```
pub struct FkeRng {
    fke: FkeState,
}

impl FkeRng {
    /// Fills `dest` with the next `dest.len()` bytes of the stream, past the buffer's unserved
    /// bytes by a direct fill where 992 or more are still needed ([`FkeRng`]). Never fails,
    /// never panics.
    #[inline]
    pub fn fill(&mut self, dest: &mut [u8]) {
        let Ok(()) = self
            .fke
            .fill_with(dest, |_, _| Ok::<(), core::convert::Infallible>(()));
    }

    /// The next 4 bytes of the stream as a little-endian `u32`.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        u32::from_le_bytes(self.array())
    }

    /// The next 8 bytes of the stream as a little-endian `u64`.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        u64::from_le_bytes(self.array())
    }

    /// The next `N` bytes of the stream as an array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> [u8; N] {
        if let Some(bytes) = self.fke.take::<N>() {
            return bytes;
        }
        let mut out = [0u8; N];
        self.fill(&mut out);
        out
    }
}

impl rand_core::SeedableRng for FkeRng {
    /// The initial key `K`, 32 bytes.
    type Seed = [u8; KEY_LEN];

    fn from_seed(mut seed: Self::Seed) -> Self {
        let rng = FkeRng {
            fke: FkeState::new(seed),
        };
        seed.zeroize();
        rng
    }
}

impl Drop for FkeRng {
    fn drop(&mut self) {
        self.fke.wipe();
    }
}

impl zeroize::ZeroizeOnDrop for FkeRng {}

impl fmt::Debug for FkeRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FkeRng").finish_non_exhaustive()
    }
}

/// Moves `src` into `dest` (`dest.len() == src.len() <= 64`) and zeroes it with two overlapping
/// fixed-width chunks (head and tail), not `memcpy` and `memset` calls (docs/DESIGN.md, "Speed").
#[inline(always)]
fn take_small(dest: &mut [u8], src: &mut [u8]) {
    /// Moves and zeroes the first and the last `W` bytes of `src` (`W <= n <= 2 W`).
    #[inline(always)]
    fn head_tail<const W: usize>(dest: &mut [u8], src: &mut [u8]) {
        debug_assert!(W <= src.len() && src.len() <= 2 * W);
        let head: [u8; W] = *src.first_chunk().expect("n >= W");
        let tail: [u8; W] = *src.last_chunk().expect("n >= W");
        *dest.first_chunk_mut().expect("n >= W") = head;
        *dest.last_chunk_mut().expect("n >= W") = tail;
        *src.first_chunk_mut::<W>().expect("n >= W") = [0; W];
        *src.last_chunk_mut::<W>().expect("n >= W") = [0; W];
    }
    debug_assert!(dest.len() == src.len() && src.len() <= 64);
    match src.len() {
        32..=64 => head_tail::<32>(dest, src),
        16..=31 => head_tail::<16>(dest, src),
        8..=15 => head_tail::<8>(dest, src),
        4..=7 => head_tail::<4>(dest, src),
        2..=3 => head_tail::<2>(dest, src),
        1 => {
            dest[0] = src[0];
            src[0] = 0;
        }
        _ => {}
    }
}

// Needs the repository's support crate, which the published package lacks.
#[cfg(all(test, fkrng_test_hooks))]
mod differential;

#[cfg(any(test, fuzzing, fkrng_test_hooks))]
mod hooks;
#[cfg(test)]
mod tests;
