//! fkrng: a fast, fork-safe, backtracking-resistant cryptographic random number generator.
//!
//! Each thread owns a fast-key-erasure ChaCha20 generator seeded from the OS, which reseeds
//! at the first refill or direct fill after 1 to 2 MiB of output or 60 s (a single large read
//! is one batch under one key), in a forked child, after a detected VM snapshot restore
//! ([`snapshot_protection`]) and on request ([`reseed`], [`reseed_all`]). [`FkeRng`] is the
//! same construction, seeded by the caller. Design and guarantees: docs/DESIGN.md and
//! docs/SECURITY.md; nonces: [`nonces`].
//!
//! ```
//! # #[cfg(feature = "std")] {
//! let nonce: [u8; 12] = fkrng::array(); // a 96-bit AEAD nonce
//! let mut salt = [0u8; 16];
//! fkrng::fill(&mut salt);
//! use rand::RngExt; // `rand_core` 0.10 traits, `rand` 0.10 extension methods
//! let die: u8 = fkrng::rng().random_range(1..=6);
//! assert!((1..=6).contains(&die));
//! # }
//! ```
//!
//! # Crate features
//! - `std` (default): the thread-local generator, OS seeding and [`Error`]; without it only
//!   [`FkeRng`] is built (`no_std`).
//! - `rand_core_0_6`, `rand_core_0_9`: those generations' `RngCore`, `CryptoRng` and
//!   `SeedableRng` for [`FkeRng`] and (with `std`) [`ThreadRng`]; neither needs `std`.
//! - `rustls`: `RustlsRandom`, a `rustls` 0.23 `SecureRandom` (implies `std`).
//! - `getrandom_backend` (Linux and Android only; implies `std`): in a binary built with
//!   `--cfg getrandom_backend="custom"` that names the crate (`use fkrng as _;`), every
//!   `getrandom` 0.3 and 0.4 call is served by the calling thread's generator (README.md).
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// Without `std` the crate docs above still name the thread-local items, which are not built.
#![cfg_attr(not(feature = "std"), allow(rustdoc::broken_intra_doc_links))]
// Unit tests that need the support crate need `--cfg fkrng_test_hooks`; else helpers go unused.
#![cfg_attr(all(test, not(fkrng_test_hooks)), allow(dead_code, unused_imports))]

#[cfg(feature = "std")]
mod claims;
mod compat;
#[cfg(target_arch = "x86_64")]
mod cpuid;
mod generator;
mod keystream;
mod probe;

#[cfg(feature = "std")]
mod error;
#[cfg(feature = "std")]
mod lifecycle;
#[cfg(feature = "std")]
mod os;
#[cfg(feature = "std")]
mod pool;
#[cfg(feature = "std")]
mod thread;

/// Generating AEAD nonces with fkrng: sizes, per-key limits, forks and snapshots (the text
/// of `docs/NONCES.md`; its examples run as doctests).
#[cfg(feature = "std")]
pub mod nonces {
    #![doc = include_str!("../docs/NONCES.md")]
}

/// Hooks for this repository's tests (hidden, unstable; unit tests, `--cfg fkrng_test_hooks`).
#[cfg(any(test, fuzzing, fkrng_test_hooks))]
#[doc(hidden)]
pub mod test_hooks;

pub use generator::{BUFFER_LEN, FkeRng, KEY_LEN, REFILL_LEN};
pub use keystream::{KeystreamPath, keystream_path};

#[cfg(feature = "getrandom_backend")]
pub use compat::getrandom_backend::getrandom_backend_serves;
#[cfg(feature = "rustls")]
pub use compat::rustls::RustlsRandom;
#[cfg(feature = "std")]
pub use {
    compat::thread_rng::ThreadRng,
    error::Error,
    lifecycle::fork::{ForkProtection, fork_protection},
    lifecycle::reseed::{RESEED_INTERVAL_NS, RESEED_MIN_BYTES},
    lifecycle::snapshot::{SnapshotProtection, snapshot_protection},
};

/// Fills `dest` with random bytes from the calling thread's generator (an empty `dest` does
/// nothing). In a signal handler that interrupted a read, or a thread-local destructor after
/// the thread's release, the bytes come from a one-off OS-keyed generator; a thread's first
/// read is not async-signal-safe (docs/SECURITY.md, "Limits").
///
/// # Panics
/// Where [`try_fill`] returns an error: a one-line message naming it, at the caller's line
/// (`#[track_caller]`, as for every panicking read). A failed periodic reseed does not panic.
#[cfg(feature = "std")]
#[inline(always)]
#[track_caller]
pub fn fill(dest: &mut [u8]) {
    if let Err(e) = thread::try_fill(dest) {
        fill_failed(e)
    }
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
#[track_caller]
fn fill_failed(e: Error) -> ! {
    panic!("fkrng: {e}")
}

/// [`fill`], or the error that kept the thread from seeding: then `dest` holds zeros (never
/// output, whatever the read had copied before it found the state stale), and the next
/// call tries the OS again.
///
/// # Errors
/// [`Error`] when the OS random source fails or returns only zero bytes where the thread must
/// seed (first use, after a `fork`, [`reseed_all`] or a detected VM snapshot restore) or where
/// the read is served by a one-off generator keyed from the OS (in a signal handler that
/// interrupted a read, after the thread's state was released at exit, when the memory for
/// the state is refused), or its first read cannot register the fork handler (`pthread_atfork`).
#[cfg(feature = "std")]
#[inline(always)]
pub fn try_fill(dest: &mut [u8]) -> Result<(), Error> {
    thread::try_fill(dest)
}

/// `N` random bytes from the calling thread's generator (`array::<12>()`: a 96-bit nonce).
///
/// # Panics
/// As [`fill`].
#[cfg(feature = "std")]
#[inline(always)]
#[track_caller]
pub fn array<const N: usize>() -> [u8; N] {
    match thread::take() {
        Some(bytes) => bytes,
        None => array_slow(),
    }
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
#[track_caller]
fn array_slow<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    fill(&mut bytes);
    bytes
}

/// A random `u32` from 4 bytes (little-endian) of the calling thread's generator.
///
/// # Panics
/// As [`fill`].
#[cfg(feature = "std")]
#[inline(always)]
#[track_caller]
pub fn u32() -> u32 {
    u32::from_le_bytes(array())
}

/// A random `u64` from 8 bytes (little-endian) of the calling thread's generator.
///
/// # Panics
/// As [`fill`].
#[cfg(feature = "std")]
#[inline(always)]
#[track_caller]
pub fn u64() -> u64 {
    u64::from_le_bytes(array())
}

/// [`array()`], or the error that kept the thread from seeding.
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[inline]
pub fn try_array<const N: usize>() -> Result<[u8; N], Error> {
    thread::take().map_or_else(try_array_slow, Ok)
}

#[cfg(feature = "std")]
#[cold]
#[inline(never)]
fn try_array_slow<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    try_fill(&mut bytes)?;
    Ok(bytes)
}

/// [`u32()`] (4 bytes, little-endian), or the error that kept the thread from seeding.
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[inline]
pub fn try_u32() -> Result<u32, Error> {
    try_array().map(u32::from_le_bytes)
}

/// [`u64()`] (8 bytes, little-endian), or the error that kept the thread from seeding.
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[inline]
pub fn try_u64() -> Result<u64, Error> {
    try_array().map(u64::from_le_bytes)
}

/// Fills possibly uninitialised memory (`Box::new_uninit_slice`, `Vec::spare_capacity_mut`)
/// as [`fill`] does, after zeroing it, and returns it as `dest.len()` initialised bytes.
///
/// # Panics
/// As [`fill`]; [`try_fill_uninit`] returns the error instead.
#[cfg(feature = "std")]
#[inline]
#[track_caller]
pub fn fill_uninit(dest: &mut [core::mem::MaybeUninit<u8>]) -> &mut [u8] {
    match try_fill_uninit(dest) {
        Ok(bytes) => bytes,
        Err(e) => fill_failed(e),
    }
}

/// [`fill_uninit`], or the error that kept the thread from seeding (`dest` then holds zeros).
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[inline]
pub fn try_fill_uninit(dest: &mut [core::mem::MaybeUninit<u8>]) -> Result<&mut [u8], Error> {
    dest.fill(core::mem::MaybeUninit::new(0));
    // SAFETY: every element was initialised just above, and `MaybeUninit<u8>` has the layout
    // of `u8`, so the memory is a valid `[u8]` for the borrow of `dest`.
    let bytes = unsafe { &mut *(dest as *mut [core::mem::MaybeUninit<u8>] as *mut [u8]) };
    try_fill(bytes)?;
    Ok(bytes)
}

/// A [`ThreadRng`] handle to the calling thread's generator, for APIs that take a `rand_core` RNG.
#[cfg(feature = "std")]
#[inline]
pub fn rng() -> ThreadRng {
    ThreadRng::default()
}

/// Reseeds the calling thread's generator now: `K = K XOR S XOR D` with 32 fresh OS bytes `S`
/// and the diversifier `D` (which separates VM clones whose kernels give them one `S`), and
/// the buffer is wiped. Does nothing (returns `Ok`) from a signal handler that interrupted a
/// read, during thread exit, or when the memory for the thread's state is refused (its reads
/// then use one-off generators); as a thread's first use it is not async-signal-safe.
///
/// # Errors
/// [`Error`] when the OS source fails (the key is kept), or, on the thread's first use, when
/// the fork handler cannot be registered (`pthread_atfork`).
#[cfg(feature = "std")]
pub fn reseed() -> Result<(), Error> {
    thread::reseed()
}

/// Makes every thread reseed from the OS before its next output (a new process-wide epoch).
/// Call it after a VM snapshot or process checkpoint (CRIU) restore, unless
/// [`snapshot_protection`] reports [`SnapshotProtection::VmGenerationCounter`] (then it only
/// costs one extra reseed per thread). If a thread's reseed then fails, its next read fails
/// rather than emit from the old state. Never fails, never panics.
#[cfg(feature = "std")]
pub fn reseed_all() {
    lifecycle::fork::bump_epoch();
}
