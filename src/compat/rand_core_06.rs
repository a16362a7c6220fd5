//! `rand_core` 0.6 traits (`RngCore`, `CryptoRng`, `SeedableRng`), for the crates still on
//! that generation (`aes-gcm` 0.10, `ed25519-dalek` 2, `rand` 0.8, ...).

use crate::FkeRng;
use crate::KEY_LEN;
use rand_core_06::{CryptoRng, RngCore, SeedableRng};

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_6")))]
impl RngCore for FkeRng {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        FkeRng::next_u32(self)
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        FkeRng::next_u64(self)
    }

    #[inline]
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.fill(dest);
    }

    /// Never fails.
    #[inline]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
        self.fill(dest);
        Ok(())
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_6")))]
impl CryptoRng for FkeRng {}

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_6")))]
impl SeedableRng for FkeRng {
    /// The initial key `K`, 32 bytes: the same stream as `rand_core` 0.10's `from_seed`.
    type Seed = [u8; KEY_LEN];

    #[inline]
    fn from_seed(seed: Self::Seed) -> Self {
        <FkeRng as rand_core::SeedableRng>::from_seed(seed)
    }
}

#[cfg(feature = "std")]
mod thread_rng {
    use crate::ThreadRng;
    use core::num::NonZeroU32;
    use rand_core_06::{CryptoRng, RngCore};

    #[cfg_attr(docsrs, doc(cfg(all(feature = "rand_core_0_6", feature = "std"))))]
    impl RngCore for ThreadRng {
        /// # Panics
        /// As [`crate::fill`].
        #[inline]
        #[track_caller]
        fn next_u32(&mut self) -> u32 {
            crate::u32()
        }

        /// # Panics
        /// As [`crate::fill`].
        #[inline]
        #[track_caller]
        fn next_u64(&mut self) -> u64 {
            crate::u64()
        }

        /// # Panics
        /// As [`crate::fill`].
        #[inline]
        #[track_caller]
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            crate::fill(dest);
        }

        /// Returns the OS error instead of panicking when this thread cannot seed (the one
        /// `rand_core` generation whose trait has a fallible method of its own): its code is
        /// the OS `errno` when the OS gave one, else `rand_core::Error::CUSTOM_START`.
        #[inline]
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core_06::Error> {
            crate::try_fill(dest).map_err(to_rand_core_error)
        }
    }

    #[cfg_attr(docsrs, doc(cfg(all(feature = "rand_core_0_6", feature = "std"))))]
    impl CryptoRng for ThreadRng {}

    /// The code of an fkrng error without an OS `errno`: `rand_core`'s first custom code.
    const NO_OS_CODE: NonZeroU32 = NonZeroU32::new(rand_core_06::Error::CUSTOM_START).unwrap();

    /// `rand_core` 0.6 keeps OS errors as their positive `errno` (below `INTERNAL_START`).
    #[cold]
    fn to_rand_core_error(e: crate::Error) -> rand_core_06::Error {
        let code = e
            .raw_os_error()
            .and_then(|c| u32::try_from(c).ok())
            .filter(|&c| c < rand_core_06::Error::INTERNAL_START)
            .and_then(NonZeroU32::new)
            .unwrap_or(NO_OS_CODE);
        rand_core_06::Error::from(code)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn errors_without_an_os_code_map_to_custom_start() {
            for e in [
                crate::Error::ALL_ZERO,
                crate::Error::from(getrandom::Error::UNSUPPORTED),
            ] {
                let code = to_rand_core_error(e).code().map(NonZeroU32::get);
                assert_eq!(code, Some(rand_core_06::Error::CUSTOM_START));
            }
        }

        #[test]
        fn try_fill_bytes_fills() {
            let mut a = [0u8; 48];
            let mut b = [0u8; 48];
            RngCore::try_fill_bytes(&mut ThreadRng::default(), &mut a).expect("seeded");
            RngCore::try_fill_bytes(&mut ThreadRng::default(), &mut b).expect("seeded");
            assert_ne!(a, b);
            assert_ne!(a, [0u8; 48]);
        }
    }
}
