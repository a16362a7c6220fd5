//! `ThreadRng`, the handle to the calling thread's generator (its traits: other `compat/` files).

use core::fmt;

/// A handle to the calling thread's generator, for APIs that take a `rand_core` RNG: a
/// `rand_core` 0.10 `Rng` and `CryptoRng` (and so `rand`'s extension methods), and with the
/// features `rand_core_0_6`, `rand_core_0_9` those generations' `RngCore` and `CryptoRng`.
///
/// Zero-sized and stateless: every call reads the generator of the calling thread, as
/// [`crate::fill`] does, so it is `Send` and `Sync` (moved to another thread, or resumed
/// there after an `.await`, it reads that thread's generator). `Clone` and `Default` give
/// another handle; `Debug` shows nothing.
///
/// # Panics
/// The infallible `rand_core` methods panic as [`crate::fill`] does, naming the caller's line
/// (through 0.10's `Rng` methods, the line in `rand_core`'s blanket implementation).
/// [`crate::try_fill`], and `rand_core` 0.6's `try_fill_bytes`, return the error instead.
///
/// ```
/// use rand_core::Rng;
/// let mut rng = fkrng::rng();
/// let here = rng.next_u64();
/// let there = std::thread::spawn(move || rng.next_u64()).join().unwrap();
/// assert_ne!(here, there);
///
/// // A future holding a handle across an `.await` is `Send` (`tokio::spawn` accepts it).
/// fn spawnable<F: std::future::Future + Send>(_: F) {}
/// spawnable(async {
///     let mut rng = fkrng::rng();
///     let first = rng.next_u64();
///     std::future::ready(()).await;
///     (first, rng.next_u64())
/// });
/// ```
#[derive(Clone, Default)]
pub struct ThreadRng {
    // Private: handles come only from `fkrng::rng()` and `Default`.
    _private: (),
}

impl fmt::Debug for ThreadRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadRng").finish_non_exhaustive()
    }
}
