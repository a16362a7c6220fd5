//! `ThreadRng`, the handle to the calling thread's generator, and the `rand_core` trait
//! implementations of both generators.

use crate::FkeRng;
use core::convert::Infallible;
#[cfg(feature = "std")]
use core::{fmt, marker::PhantomData};
use rand_core::{TryCryptoRng, TryRng};

#[cfg(feature = "std")]
/// A handle to the calling thread's fast-key-erasure generator, for APIs that take a
/// `rand_core` RNG (`rand_core::Rng`, `CryptoRng`, and through them `rand`'s extension
/// methods).
///
/// The handle is zero-sized and holds no state: every call reads the thread's generator,
/// exactly like [`crate::fill`]. It is `Clone` and `Default` (both give another handle to
/// the same generator), but neither `Send` nor `Sync`, since it stands for the generator of
/// the thread that made it.
///
/// With the features `rand_core_0_6` and `rand_core_0_9` it also implements those
/// generations' `RngCore` and `CryptoRng`, for crates not yet on `rand_core` 0.10; with
/// `rand_core_0_6`, `try_fill_bytes` returns the OS error instead of panicking.
///
/// # Panics
/// The `rand_core` methods are infallible by signature, so when the OS random source fails
/// at this thread's first seeding (or at a reseed after `fork` or [`crate::reseed_all`]) they
/// panic with a one-line message naming the OS error, as [`crate::fill`] does. Use
/// [`crate::try_fill`] to handle that error instead.
///
/// ```
/// use rand_core::Rng;
/// let mut rng = fkrng::rng();
/// let key: u64 = rng.next_u64();
/// let mut salt = [0u8; 16];
/// rng.fill_bytes(&mut salt);
/// # let _ = key;
/// ```
///
/// A handle cannot move to another thread, where it would stand for the wrong generator:
///
/// ```compile_fail
/// fn needs_send<T: Send>(_: T) {}
/// needs_send(fkrng::rng());
/// ```
#[derive(Clone, Default)]
pub struct ThreadRng {
    _not_send: PhantomData<*const ()>,
}

#[cfg(feature = "std")]
impl ThreadRng {
    pub(crate) const fn new() -> Self {
        ThreadRng {
            _not_send: PhantomData,
        }
    }
}

#[cfg(feature = "std")]
impl fmt::Debug for ThreadRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadRng").finish_non_exhaustive()
    }
}

#[cfg(feature = "std")]
impl TryRng for ThreadRng {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(crate::u32())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(crate::u64())
    }

    #[inline]
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), Infallible> {
        crate::fill(dest);
        Ok(())
    }
}

#[cfg(feature = "std")]
impl TryCryptoRng for ThreadRng {}

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
