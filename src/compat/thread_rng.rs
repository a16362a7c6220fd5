//! `ThreadRng`, the handle to the calling thread's generator. Its `rand_core` trait
//! implementations, of every generation, are in `compat/`.

use core::fmt;

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
/// A handle to the calling thread's fast-key-erasure generator, for APIs that take a
/// `rand_core` RNG (`rand_core::Rng`, `CryptoRng`, and through them `rand`'s extension
/// methods).
///
/// The handle is zero-sized and holds no state: every call reads the generator of the
/// thread that makes the call, exactly like [`crate::fill`]. So it is `Send` and `Sync`: a
/// handle moved to another thread, or held across an `.await` in a task that a
/// work-stealing executor resumes on another thread, reads that thread's generator from
/// then on, which is as good as the first (each thread's generator is seeded from the OS
/// on its own). It is `Clone` and `Default` (both give another such handle).
///
/// With the features `rand_core_0_6` and `rand_core_0_9` it also implements those
/// generations' `RngCore` and `CryptoRng`, for crates not yet on `rand_core` 0.10; with
/// `rand_core_0_6`, `try_fill_bytes` returns the OS error instead of panicking.
///
/// # Panics
/// The `rand_core` methods are infallible by signature, so when the OS random source fails
/// at this thread's first seeding (or at a reseed after `fork` or [`crate::reseed_all`]) they
/// panic with a one-line message naming the OS error, as [`crate::fill`] does. Use
/// [`crate::try_fill`] to handle that error instead. The panic names the caller's line
/// (`#[track_caller]`) for the methods of `TryRng` (0.10) and of `RngCore` (0.6, 0.9);
/// through `rand_core` 0.10's `Rng` methods it names the line in `rand_core`'s blanket
/// implementation that calls them.
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
/// A handle moves into a spawned thread, which then reads its own generator:
///
/// ```
/// use rand_core::Rng;
/// let mut rng = fkrng::rng();
/// let here = rng.next_u64();
/// let there = std::thread::spawn(move || rng.next_u64()).join().unwrap();
/// assert_ne!(here, there);
/// ```
///
/// # Async code
///
/// A future that holds a handle across an `.await` stays `Send`, so `tokio::spawn` and
/// other multi-threaded executors accept it:
///
/// ```
/// use rand_core::Rng;
/// use std::future::Future;
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
///
/// async fn next_message() -> Vec<u8> {
///     b"hello".to_vec()
/// }
///
/// async fn seal_loop() -> ([u8; 12], u64) {
///     let mut rng = fkrng::rng();
///     let first = rng.next_u64();
///     // The handle is held across this `.await`.
///     let message = next_message().await;
///     let mut nonce = [0u8; 12];
///     rng.fill_bytes(&mut nonce);
///     let _ = message;
///     (nonce, first)
/// }
///
/// fn assert_send<F: Future + Send>(f: F) -> F {
///     f
/// }
/// let mut future = pin!(assert_send(seal_loop()));
/// // A minimal executor: this future never waits, so one poll finishes it.
/// let Poll::Ready((nonce, id)) = future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
/// else {
///     panic!("the future waited");
/// };
/// assert_ne!((nonce, id), ([0u8; 12], 0));
/// ```
#[derive(Clone, Default)]
pub struct ThreadRng {
    // Private, so that handles come only from `fkrng::rng()` and `Default`.
    _private: (),
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl ThreadRng {
    pub(crate) const fn new() -> Self {
        ThreadRng { _private: () }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl fmt::Debug for ThreadRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadRng").finish_non_exhaustive()
    }
}
