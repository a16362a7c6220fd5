//! `rand_core` 0.6: `RngCore` and `CryptoRng`, and `SeedableRng` for `FkeRng`; the one
//! generation with a fallible method of its own, `try_fill_bytes`.

#[cfg(feature = "std")]
use core::num::NonZeroU32;

rand_core_impls!(
    rand_core_06,
    {
        /// Never fails.
        #[inline]
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
            self.fill(dest);
            Ok(())
        }
    },
    {
        /// Returns the error instead of panicking when this thread cannot seed: its code is the
        /// OS `errno` when there is one, else `rand_core::Error::CUSTOM_START`.
        #[inline]
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
            crate::try_fill(dest).map_err(to_rand_core_error)
        }
    }
);

/// `rand_core` 0.6 keeps OS errors as their positive `errno` (below `INTERNAL_START`).
#[cfg(feature = "std")]
#[cold]
fn to_rand_core_error(e: crate::Error) -> rand_core_06::Error {
    let code = e
        .raw_os_error()
        .and_then(|c| u32::try_from(c).ok())
        .filter(|&c| c < rand_core_06::Error::INTERNAL_START)
        .and_then(NonZeroU32::new)
        .unwrap_or(const { NonZeroU32::new(rand_core_06::Error::CUSTOM_START).unwrap() });
    rand_core_06::Error::from(code)
}

#[cfg(all(test, feature = "std"))]
mod tests;
