//! `rand_core` 0.10: `TryRng` and `TryCryptoRng` with `Infallible` errors, which make both
//! generators a `Rng` and a `CryptoRng`. (`FkeRng`'s `SeedableRng` is in `generator.rs`.)

use crate::FkeRng;
use core::convert::Infallible;
use rand_core::{TryCryptoRng, TryRng};

impl TryRng for FkeRng {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.next_u32())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.next_u64())
    }

    #[inline]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        self.fill(dest);
        Ok(())
    }
}

impl TryCryptoRng for FkeRng {}

#[cfg(feature = "std")]
impl TryRng for crate::ThreadRng {
    type Error = Infallible;

    #[inline]
    #[track_caller]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(crate::u32())
    }

    #[inline]
    #[track_caller]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(crate::u64())
    }

    #[inline]
    #[track_caller]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        crate::fill(dest);
        Ok(())
    }
}

#[cfg(feature = "std")]
impl TryCryptoRng for crate::ThreadRng {}
