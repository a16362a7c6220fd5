//! The fast-key-erasure generator: ChaCha20 keystream, key erasure at every refill, and
//! zeroing of served bytes (D. J. Bernstein, "Fast-key-erasure random-number generators",
//! 2017-07-23).
//!
//! Layout of the state: one 1024-byte *output block* (16 ChaCha20 blocks of 64 bytes) whose
//! first 32 bytes hold the current key `K` and whose remaining 992 bytes are the buffer served
//! to callers. A refill runs ChaCha20 under `K` (nonce 0, block counter 0..16) straight over
//! the whole output block, so the new key lands where the old one was and the old key is gone
//! the moment the keystream is written. Bytes are served from the end of the block backwards in
//! the sense that `avail` counts the unserved bytes at its tail; every served byte is zeroed.
//!
//! An all-zero state (`avail == 0`) is "empty": the next read refills. That lets a page that
//! the kernel wiped on `fork` read as an empty, unseeded state without any extra check on the
//! small-read fast path.

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

/// The generator's state: the key and the buffer in one output block, and the count of
/// unserved bytes at its tail.
///
/// The all-zero value is a valid *empty* state (key zero, nothing to serve); callers that
/// seed it must do so before the first refill.
#[repr(C, align(64))]
pub(crate) struct FkeState {
    /// `block[..32]` is the key `K`; `block[32..]` is the buffer.
    block: [[u8; BLOCK_LEN]; REFILL_BLOCKS],
    /// Unserved bytes, at `block[REFILL_LEN - avail..]`; 0 ..= 992.
    avail: usize,
}

impl FkeState {
    /// An empty state with key `key`: the first read refills.
    pub(crate) const fn new(key: [u8; KEY_LEN]) -> Self {
        let mut block = [[0u8; BLOCK_LEN]; REFILL_BLOCKS];
        let mut i = 0;
        while i < KEY_LEN {
            block[0][i] = key[i];
            i += 1;
        }
        FkeState { block, avail: 0 }
    }

    /// The current key `K`.
    #[cfg(any(test, fuzzing, fkrng_test_hooks))]
    #[inline]
    pub(crate) fn key(&self) -> &[u8; KEY_LEN] {
        self.block[0]
            .first_chunk::<KEY_LEN>()
            .expect("a block holds a key")
    }

    #[inline]
    fn key_mut(&mut self) -> &mut [u8; KEY_LEN] {
        self.block[0]
            .first_chunk_mut::<KEY_LEN>()
            .expect("a block holds a key")
    }

    /// Unserved bytes in the buffer (0 to 992).
    #[inline]
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by the thread-local generator
    pub(crate) fn available(&self) -> usize {
        self.avail
    }

    /// The 992-byte buffer, served and unserved parts (for tests of the zeroing).
    #[cfg(any(test, fuzzing, fkrng_test_hooks))]
    pub(crate) fn buffer(&self) -> &[u8] {
        &self.block.as_flattened()[KEY_LEN..]
    }

    /// Copies `dest.len()` bytes from the buffer and zeroes them there.
    ///
    /// The caller guarantees `dest.len() <= self.avail`.
    #[inline(always)]
    pub(crate) fn serve(&mut self, dest: &mut [u8]) {
        // `avail` is read once: a signal handler that interrupts the copy may `clone` a
        // child in which the kernel has zeroed this state (wipe-on-fork), and the count the
        // child's copy goes on with must be the one its source range came from.
        let avail = self.avail;
        debug_assert!(dest.len() <= avail);
        // The unserved tail, then its first `dest.len()` bytes: written this way, the bounds
        // checks fold into the caller's `dest.len() <= avail` test.
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
        self.avail = avail - dest.len();
    }

    /// Takes the next `N` unserved bytes (`N` at most 992) as an array and zeroes them in the
    /// buffer, or `None` (nothing taken) when fewer than `N` are left. The integer and array
    /// reads' fast path: the bytes go straight to registers, with no output buffer to zero
    /// first and no copy through memory.
    #[inline(always)]
    pub(crate) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let avail = self.avail;
        // The slice check below covers this one too, but the separate test gives faster
        // code: one range check folding both made a `u32` 2.80 ns instead of 2.62.
        if avail < N {
            return None;
        }
        let buffer = self.block.as_flattened_mut();
        let src = buffer[REFILL_LEN - avail..].first_chunk_mut::<N>()?;
        let out = *src;
        *src = [0; N];
        self.avail = avail - N;
        Some(out)
    }

    /// Serves bytes from the buffer first, then produces the rest of `dest` by refills and
    /// direct fills exactly as the spec's `fill` loop says. `before_keystream(self, bytes)`
    /// runs before each batch of keystream with the number of bytes about to be produced
    /// (1024 for a refill, 32 + n for a direct fill), so the thread-local generator can
    /// account for output and reseed there; it never runs when the buffer alone suffices.
    #[inline]
    pub(crate) fn fill_with<E>(
        &mut self,
        mut dest: &mut [u8],
        mut before_keystream: impl FnMut(&mut Self, usize) -> Result<(), E>,
    ) -> Result<(), E> {
        while !dest.is_empty() {
            if self.avail > 0 {
                let m = dest.len().min(self.avail);
                let (now, rest) = dest.split_at_mut(m);
                self.serve(now);
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
        // The keystream overwrites the old key in place: no copy of Z[..32] is made.
        keystream::refill_in_place(&mut self.block);
        self.avail = BUFFER_LEN;
    }

    /// The spec's direct path for a request of 992 bytes or more with an empty buffer:
    /// `Z = keystream(K, 32 + n)`, `K = Z[..32]`, `dest = Z[32..]`.
    ///
    /// Blocks 16 on go straight into `dest[992..]` first, under the current `K`; then
    /// `Z[..1024]`, exactly what a refill computes, is computed as one, in place (the new key
    /// lands where the old one was), and its 992 buffer bytes are moved to the front of
    /// `dest` and zeroed. No copy of the old key is made outside the keystream code, whose
    /// frames are scrubbed.
    #[inline(never)]
    fn direct_fill(&mut self, dest: &mut [u8]) {
        debug_assert_eq!(self.avail, 0);
        debug_assert!(dest.len() >= BUFFER_LEN);
        let (head, rest) = dest.split_at_mut(BUFFER_LEN);
        keystream::direct_fill_in_place(&mut self.block, rest);
        let buffer = &mut self.block.as_flattened_mut()[KEY_LEN..];
        head.copy_from_slice(buffer);
        buffer.zeroize();
    }

    /// Reseeds by mixing: `K = K XOR s`, then wipes and empties the buffer.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by the thread-local generator
    pub(crate) fn mix_key(&mut self, s: &[u8; KEY_LEN]) {
        for (k, s) in self.key_mut().iter_mut().zip(s) {
            *k ^= s;
        }
        self.wipe_buffer();
    }

    /// Zeroes the 992-byte buffer and marks it empty; the key is kept.
    #[cfg_attr(not(feature = "std"), allow(dead_code))] // used by the thread-local generator
    pub(crate) fn wipe_buffer(&mut self) {
        self.block.as_flattened_mut()[KEY_LEN..].zeroize();
        self.avail = 0;
    }

    /// Zeroes the key, the buffer and the count, and every padding byte of the state (a
    /// move of the state may have copied stack residue into its padding).
    pub(crate) fn wipe(&mut self) {
        // SAFETY: `FkeState` is plain data (a byte array and an integer) whose all-zero value is
        // valid (the empty state); `self` is a valid, exclusive pointer to it.
        unsafe { zeroize::zeroize_flat_type(self as *mut Self) };
    }
}

impl fmt::Debug for FkeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FkeState").finish_non_exhaustive()
    }
}

/// A seedable fast-key-erasure ChaCha20 generator (the value-stable construction of
/// `docs/DESIGN.md`, after D. J. Bernstein's 2017 post "Fast-key-erasure random-number
/// generators").
///
/// The state is a 32-byte key and a 992-byte buffer. Each refill computes 1024 bytes (16
/// ChaCha20 blocks, RFC 8439 with an all-zero nonce and block counter 0) under the current
/// key, replaces the key with the first 32 of them and serves the other 992; requests of 992
/// bytes or more that find the buffer empty are written straight into the caller's memory.
/// Served bytes are zeroed in the buffer, so the state never holds anything that recomputes
/// output already handed out (backtracking resistance).
///
/// Its output for a given seed is value-stable: the same bytes on every platform and in
/// every release, checked against known-answer vectors from an independent ChaCha20.
///
/// Moving an `FkeRng` is a byte copy that Rust does not wipe behind it, so a generator moved
/// after use leaves its old state (key and unserved buffer) in the memory it moved from. Put
/// it where it will live (a `Box`, a struct field) before the first read. Construction is
/// such a move too: `from_seed` takes the seed and returns the generator by value, and
/// `Box::new` copies it once more, so the seed (the key of the first 1024 bytes of output)
/// can stay in dead stack frames until they are reused, like the caller's own copy of the
/// seed. The thread-local generator (`fkrng::fill` and friends) is seeded in place and has
/// neither.
///
/// `FkeRng` is deliberately neither `Clone` nor `Copy` (two copies would repeat each other's
/// output); its `Debug` shows no key or buffer bytes, and dropping it zeroizes the state.
/// It implements [`rand_core::SeedableRng`] with a 32-byte seed and
/// [`rand_core::TryRng`]/[`rand_core::TryCryptoRng`] with `Infallible` errors, so it is a
/// [`rand_core::Rng`] and [`rand_core::CryptoRng`].
///
/// `SeedableRng`'s provided `seed_from_u64` works too, but its seed is a 64-bit number
/// (2^64 possible streams, found by trying them all): for reproducible tests and
/// simulations only, never for keys, nonces or anything secret. Seed from 32 secret bytes
/// (`from_seed`), or use the thread-local generator.
/// The features `rand_core_0_6` and `rand_core_0_9` add those generations' `RngCore`,
/// `CryptoRng` and `SeedableRng` (same seed, same stream), also without `std`.
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
/// Copies would replay the same stream, so there are none:
///
/// ```compile_fail
/// use rand_core::SeedableRng;
/// let a = fkrng::FkeRng::from_seed([1; 32]);
/// let b = a.clone();
/// ```
pub struct FkeRng {
    fke: FkeState,
}

impl FkeRng {
    /// Fills `dest` with the next `dest.len()` bytes of the stream. A zero-length `dest`
    /// changes nothing. Never fails and never panics.
    #[inline]
    pub fn fill(&mut self, dest: &mut [u8]) {
        let done: Result<(), core::convert::Infallible> = self.fke.fill_with(dest, |_, _| Ok(()));
        let Ok(()) = done;
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

    /// The state, for the unit tests and the test hooks.
    #[cfg(any(test, fuzzing, fkrng_test_hooks))]
    pub(crate) fn fke(&self) -> &FkeState {
        &self.fke
    }
}

impl rand_core::SeedableRng for FkeRng {
    /// The initial key `K`, 32 bytes.
    type Seed = [u8; KEY_LEN];

    fn from_seed(seed: Self::Seed) -> Self {
        let mut seed = seed;
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

mod small_copy;
use small_copy::take_small;

// The reference model comes from this repository's support crate, a path dev-dependency that
// the published package does not carry; builds in the repository set the cfg
// (.cargo/config.toml), so that `cargo test` of the unpacked package still compiles.
#[cfg(all(test, fkrng_test_hooks))]
mod differential;

#[cfg(test)]
mod tests;
