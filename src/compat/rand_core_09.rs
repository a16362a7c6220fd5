//! `rand_core` 0.9 traits, for the crates still on that generation (`rand` 0.9, ...).
//!
//! In 0.9 the infallible `RngCore` and the marker `CryptoRng: RngCore` are the traits to
//! implement; `TryRngCore` and `TryCryptoRng` (error type `Infallible`) follow from them by
//! `rand_core`'s blanket implementations.

use crate::FkeRng;
use crate::KEY_LEN;
use rand_core_09::{CryptoRng, RngCore, SeedableRng};

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_9")))]
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
}

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_9")))]
impl CryptoRng for FkeRng {}

#[cfg_attr(docsrs, doc(cfg(feature = "rand_core_0_9")))]
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
    use rand_core_09::{CryptoRng, RngCore};

    #[cfg_attr(docsrs, doc(cfg(all(feature = "rand_core_0_9", feature = "std"))))]
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
    }

    #[cfg_attr(docsrs, doc(cfg(all(feature = "rand_core_0_9", feature = "std"))))]
    impl CryptoRng for ThreadRng {}
}
