//! Seeding: 32 bytes of key material and a 32-bit budget draw from the OS ([`Os`]) or a test.

use crate::error::Error;
use crate::generator::{FkeState, KEY_LEN};
use crate::lifecycle::diversifier::diversifier;
use zeroize::Zeroize;

/// A source of seed material: the OS ([`Os`]), or a test's failures and known values.
pub(crate) trait Entropy {
    /// Fills `dest` entirely with fresh bytes or fails.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error>;

    /// As [`Self::fill`], for a new thread's first seed, where the source has a cheaper way
    /// for it (the vDSO on Linux, [`crate::os::fill_new_thread`]).
    fn fill_new_thread(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        self.fill(dest)
    }

    /// Writes a 32-byte seed into `key` and returns a 32-bit draw (for the reseed byte budget),
    /// refusing an all-zero seed (a source that "succeeded" without writing). On error `key` is all
    /// zero. The seed is never returned or passed by value: such moves leave unwiped stack copies.
    fn seed(&mut self, key: &mut [u8; KEY_LEN]) -> Result<u32, Error> {
        seed_from(key, |raw| self.fill(raw))
    }

    /// As [`Self::seed`], for a new thread's first seed ([`Self::fill_new_thread`]).
    fn seed_new_thread(&mut self, key: &mut [u8; KEY_LEN]) -> Result<u32, Error> {
        seed_from(key, |raw| self.fill_new_thread(raw))
    }
}

/// [`Entropy::seed`] with the bytes of `fill`.
fn seed_from(
    key: &mut [u8; KEY_LEN],
    fill: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> Result<u32, Error> {
    let mut raw = [0u8; KEY_LEN + 4];
    let filled = fill(&mut raw);
    key.copy_from_slice(&raw[..KEY_LEN]);
    let extra = u32::from_le_bytes(*raw.last_chunk().expect("4 draw bytes"));
    raw.zeroize();
    if let Err(e) = filled {
        key.zeroize();
        return Err(e);
    }
    if key.iter().all(|&b| b == 0) {
        return Err(Error::ALL_ZERO);
    }
    Ok(extra)
}

/// `K = K ⊕ S ⊕ D` in `fke`, buffer wiped and emptied: `S` from `seed` (an [`Entropy::seed`],
/// all zero on error), `D` the diversifier (CPU words with `cpu_rng`). On error `fke` is
/// unchanged; `S` is wiped either way.
pub(crate) fn mix_fresh_seed(
    fke: &mut FkeState,
    cpu_rng: bool,
    seed: impl FnOnce(&mut [u8; KEY_LEN]) -> Result<u32, Error>,
) -> Result<u32, Error> {
    let mut s = [0u8; KEY_LEN];
    let draw = seed(&mut s);
    if draw.is_ok() {
        fke.mix_key(&s);
        diversifier(&mut s, cpu_rng);
        fke.mix_key(&s);
    }
    s.zeroize();
    draw
}

/// The operating system's source ([`crate::os::fill`]).
pub(crate) struct Os;

impl Entropy for Os {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        crate::os::fill(dest)
    }

    #[inline]
    fn fill_new_thread(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        crate::os::fill_new_thread(dest, crate::lifecycle::fork::epoch())
    }
}
