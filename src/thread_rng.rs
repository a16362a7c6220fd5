//! `ThreadRng`, the handle to the calling thread's generator. Its `rand_core` trait
//! implementations, of every generation, are in `compat/`.

use core::{fmt, marker::PhantomData};

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
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
///
/// # Async code
///
/// `ThreadRng` is `!Send` on purpose: a future that holds one across an `.await` may resume
/// on another thread of a work-stealing executor, where the handle would read a generator
/// that is not the current thread's. (Reading another thread's generator would need a lock
/// or atomic on every read, which the small-read path avoids.) Such a future is itself
/// `!Send`, and `tokio::spawn` and similar executors reject it at compile time. In async
/// code, call [`crate::fill`], [`crate::array`] and friends, which hold nothing across an
/// `.await`, or take a fresh handle with [`crate::rng()`] after each `.await` and let it drop
/// before the next:
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
///     let message = next_message().await;
///     // A free function holds no handle across the next `.await`.
///     let nonce: [u8; 12] = fkrng::array();
///     let _more = next_message().await;
///     // A handle taken after the `.await` and dropped before the next one.
///     let id = fkrng::rng().next_u64();
///     let _ = message;
///     (nonce, id)
/// }
///
/// // The future is `Send`, so a multi-threaded executor accepts it.
/// fn assert_send<F: Future + Send>(f: F) -> F {
///     f
/// }
/// let mut future = pin!(assert_send(seal_loop()));
/// // A minimal executor: these futures never wait, so one poll finishes them.
/// let Poll::Ready((nonce, id)) = future.as_mut().poll(&mut Context::from_waker(Waker::noop()))
/// else {
///     panic!("the future waited");
/// };
/// assert_ne!((nonce, id), ([0u8; 12], 0));
/// ```
///
/// Holding a handle across an `.await` makes the future `!Send`:
///
/// ```compile_fail
/// async fn held() {
///     let mut rng = fkrng::rng();
///     std::future::ready(()).await;
///     let _ = rand_core::Rng::next_u32(&mut rng);
/// }
/// fn assert_send<F: Send>(_: F) {}
/// assert_send(held());
/// ```
#[derive(Clone, Default)]
pub struct ThreadRng {
    _not_send: PhantomData<*const ()>,
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl ThreadRng {
    pub(crate) const fn new() -> Self {
        ThreadRng {
            _not_send: PhantomData,
        }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl fmt::Debug for ThreadRng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadRng").finish_non_exhaustive()
    }
}
