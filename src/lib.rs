//! fkrng: a fast, fork-safe, backtracking-resistant cryptographic random number generator.
//!
//! Each thread owns a ChaCha20 generator with *fast key erasure* (D. J. Bernstein,
//! "Fast-key-erasure random-number generators", 2017): it is seeded with 32 bytes from the
//! OS (`getrandom`), and every refill of its 992-byte buffer also replaces its key with fresh
//! keystream, while every byte it hands out is zeroed in the buffer. Memory read after the
//! fact therefore cannot reveal earlier output (backtracking resistance). Small reads are
//! copies from the thread's buffer: no system call, no lock, no heap allocation.
//!
//! The thread's generator reseeds from the OS every 1 to 2 MiB of output (a random budget)
//! or 60 seconds, in a forked child before its first output, in a Linux guest restored from a
//! VM snapshot when the VMClock generation counter is mapped ([`snapshot_protection`]), and
//! on request ([`reseed`], [`reseed_all`]).
//!
//! ```
//! # #[cfg(feature = "std")] { // (the thread-local generator needs `std`)
//! // A 96-bit AEAD nonce and a 256-bit key.
//! let nonce: [u8; 12] = fkrng::array();
//! let key: [u8; 32] = fkrng::array();
//!
//! // Any length, from the calling thread's generator.
//! let mut salt = [0u8; 16];
//! fkrng::fill(&mut salt);
//!
//! // Where an RNG is expected (`rand_core` 0.10 traits, `rand` 0.10 extension methods).
//! use rand::RngExt;
//! let mut rng = fkrng::rng();
//! let die: u8 = rng.random_range(1..=6);
//! assert!((1..=6).contains(&die));
//! # let _ = (nonce, key);
//! # }
//! ```
//!
//! For a reproducible stream from a seed, use [`FkeRng`], the same construction without the
//! thread-local lifecycle.
//!
//! # Nonces
//!
//! A 96-bit AEAD nonce (AES-GCM, ChaCha20-Poly1305) is `fkrng::array::<12>()`, or the
//! cipher crate's own nonce type drawn from [`rng()`]; a 192-bit XChaCha20-Poly1305 nonce is
//! `fkrng::array::<24>()`. Random 96-bit nonces allow at most 2^32 messages per key (NIST
//! SP 800-38D); a forked child never repeats its parent's nonces, and after a VM snapshot or
//! checkpoint restore call [`reseed_all`] (not needed for VM restores where
//! [`snapshot_protection`] reports the VMClock generation counter). The [`nonces`] module has the details and the
//! examples (`examples/aead_nonce.rs`, `examples/seal_file_nonce.rs`).
//!
//! # Crate features
//! - `std` (default): the thread-local generator, OS seeding and [`Error`]. Without it, only
//!   [`FkeRng`] is built (`no_std`).
//! - `rand_core_0_6`, `rand_core_0_9`: the `RngCore`, `CryptoRng` and `SeedableRng` traits of
//!   those `rand_core` generations for [`FkeRng`] and (with `std`) [`ThreadRng`], for crates
//!   not yet on `rand_core` 0.10 (`aes-gcm` 0.10, `ed25519-dalek` 2, `rand` 0.8 and 0.9).
//!   Neither needs `std`.
//! - `rustls`: `RustlsRandom`, the thread-local generator as a `rustls` 0.23
//!   `SecureRandom` for a `CryptoProvider` (implies `std`).
//! - `getrandom_backend` (Linux and Android only; a compile error elsewhere): defines the
//!   `getrandom` crate's custom backend, so that in a binary built with
//!   `--cfg getrandom_backend="custom"` every `getrandom` 0.3 and 0.4 call (and so `uuid`,
//!   `rand`'s and RustCrypto's `OsRng`) is served by the calling thread's generator, with no
//!   system call per request. Name the crate once in the binary (`use fkrng as _;`) so that
//!   it is linked. See README.md, "Every getrandom call in a program" (implies `std`).
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
// The unit tests that need this repository's support crate (a path dev-dependency the
// published package does not carry) build only with `--cfg fkrng_test_hooks`, which the
// repository's test command sets; in a test build of the unpacked package the helpers they
// share stay unused.
#![cfg_attr(
    all(test, not(fkrng_test_hooks)),
    allow(dead_code, unused_imports)
)]

mod compat;
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
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod nonces {
    #![doc = include_str!("../docs/NONCES.md")]
}

/// Hooks for this repository's tests (hidden, unstable): only in its unit tests and in
/// builds with `--cfg fkrng_test_hooks`, which README's test command sets.
#[cfg(any(test, fuzzing, fkrng_test_hooks))]
#[doc(hidden)]
pub mod test_hooks;

pub use generator::{BUFFER_LEN, FkeRng, KEY_LEN, REFILL_LEN};
pub use keystream::{KeystreamPath, keystream_path};

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use error::Error;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use lifecycle::fork::{ForkProtection, fork_protection};
#[cfg(feature = "rustls")]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub use compat::rustls::RustlsRandom;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use lifecycle::snapshot::{SnapshotProtection, snapshot_protection};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use lifecycle::reseed::{RESEED_INTERVAL_NS, RESEED_MIN_BYTES};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use compat::thread_rng::ThreadRng;

/// Fills `dest` with random bytes from the calling thread's generator.
///
/// Reads up to the bytes left in the thread's 992-byte buffer are a copy and a zeroing;
/// larger ones refill (16 ChaCha20 blocks) or, from 992 bytes on with an empty buffer, write
/// keystream straight into `dest`. An empty `dest` does nothing.
///
/// # Panics
/// If the OS random source fails when this thread first seeds, or when it must reseed
/// after a `fork`, after [`reseed_all`] or after a VM snapshot restore detected through the
/// VM generation counter ([`snapshot_protection`]); or if the thread's first read cannot
/// register the fork handler (`pthread_atfork`): the message is one line naming the OS error,
/// and the panic names the caller's line (`#[track_caller]`, as do [`array()`], [`u32()`],
/// [`u64()`] and [`fill_uninit`]). Use [`try_fill`] to get the error instead. A failed *periodic* reseed does not panic (the
/// generator keeps its key and retries at the next refill).
///
/// # Signal handlers and thread exit
/// A read that interrupts another read on the same thread (from a signal handler), or that
/// runs in a thread-local destructor after this thread's generator was released, gets bytes
/// from a one-off generator keyed with 32 fresh OS bytes: no lock, no repeated output. A
/// thread's first read maps and registers its state, which is not async-signal-safe; do not
/// make it from a signal handler.
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
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

/// Fills `dest` with random bytes from the calling thread's generator, or returns the OS
/// error that kept the thread from seeding (first use, after `fork`, after [`reseed_all`]).
///
/// On error nothing is written to `dest` and no output is produced from an unseeded,
/// all-zero or inherited key; the next call tries the OS again.
///
/// # Errors
/// [`Error`] when the OS random source (`getrandom`) fails or returns only zero bytes at a
/// seeding or a forced reseed (first use, after a `fork`, [`reseed_all`] or a detected VM
/// snapshot restore), or when the thread's first read cannot register the fork handler
/// (`pthread_atfork`).
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline(always)]
pub fn try_fill(dest: &mut [u8]) -> Result<(), Error> {
    thread::try_fill(dest)
}

/// `N` random bytes from the calling thread's generator: `array::<12>()` is a 96-bit AEAD
/// nonce, `array::<32>()` a 256-bit key.
///
/// # Panics
/// As [`fill`].
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline(always)]
#[track_caller]
pub fn array<const N: usize>() -> [u8; N] {
    match thread::take() {
        Some(bytes) => bytes,
        None => array_slow(),
    }
}

/// [`array`] when the buffer cannot serve it: through [`fill`], out of line.
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
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
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
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline(always)]
#[track_caller]
pub fn u64() -> u64 {
    u64::from_le_bytes(array())
}

/// `N` random bytes from the calling thread's generator, or the OS error that kept the thread
/// from seeding: the fallible twin of [`array()`], for code migrating from
/// `getrandom::fill(&mut buf)?`.
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
pub fn try_array<const N: usize>() -> Result<[u8; N], Error> {
    match thread::take() {
        Some(bytes) => Ok(bytes),
        None => try_array_slow(),
    }
}

/// [`try_array`] when the buffer cannot serve it: through [`try_fill`], out of line.
#[cfg(feature = "std")]
#[cold]
#[inline(never)]
fn try_array_slow<const N: usize>() -> Result<[u8; N], Error> {
    let mut bytes = [0u8; N];
    try_fill(&mut bytes)?;
    Ok(bytes)
}

/// A random `u32` from 4 bytes (little-endian) of the calling thread's generator, or the OS
/// error that kept the thread from seeding: the fallible twin of [`u32()`].
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
pub fn try_u32() -> Result<u32, Error> {
    try_array().map(u32::from_le_bytes)
}

/// A random `u64` from 8 bytes (little-endian) of the calling thread's generator, or the OS
/// error that kept the thread from seeding: the fallible twin of [`u64()`].
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
pub fn try_u64() -> Result<u64, Error> {
    try_array().map(u64::from_le_bytes)
}

/// Fills possibly uninitialised memory with random bytes from the calling thread's generator
/// and returns it as initialised bytes, as `getrandom::fill_uninit` does: for buffers made
/// with `Box::new_uninit_slice` or `Vec::spare_capacity_mut`.
///
/// `dest` is zeroed first (one pass over its `dest.len()` bytes) so that the generator only
/// ever writes into initialised memory; then it is filled as by [`fill`].
///
/// # Panics
/// As [`fill`]; [`try_fill_uninit`] returns the error instead.
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
#[track_caller]
pub fn fill_uninit(dest: &mut [core::mem::MaybeUninit<u8>]) -> &mut [u8] {
    match try_fill_uninit(dest) {
        Ok(bytes) => bytes,
        Err(e) => fill_failed(e),
    }
}

/// The fallible twin of [`fill_uninit`]: fills `dest` and returns it as initialised bytes,
/// or returns the OS error that kept the thread from seeding (then `dest` holds zeros).
///
/// # Errors
/// As [`try_fill`].
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
pub fn try_fill_uninit(dest: &mut [core::mem::MaybeUninit<u8>]) -> Result<&mut [u8], Error> {
    for byte in dest.iter_mut() {
        byte.write(0);
    }
    // SAFETY: every element of `dest` was initialised just above, and `MaybeUninit<u8>` has
    // the size, alignment and layout of `u8`, so the same memory is a valid `[u8]` for the
    // lifetime of the borrow of `dest`.
    let bytes = unsafe { &mut *(dest as *mut [core::mem::MaybeUninit<u8>] as *mut [u8]) };
    try_fill(bytes)?;
    Ok(bytes)
}

/// A [`ThreadRng`] handle to the calling thread's generator, for APIs that take a
/// `rand_core` RNG.
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
#[inline]
pub fn rng() -> ThreadRng {
    ThreadRng::new()
}

/// Reseeds the calling thread's generator now: `K = K XOR S` with 32 fresh bytes `S` from
/// the OS, and its buffer is wiped. Mixing keeps the old key's secrecy if the OS source is
/// weak, and gains fresh entropy if the old state leaked.
///
/// Called from a signal handler that interrupted a read, or during thread exit, it does
/// nothing (those reads are served from the OS directly). As the thread's first use it
/// sets up the thread's state, as a first read does, which is not async-signal-safe: do
/// not make that first call from a signal handler.
///
/// # Errors
/// [`Error`] when the OS source fails (the generator then keeps its key), or, on the
/// thread's first use, when the fork handler cannot be registered (`pthread_atfork`).
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub fn reseed() -> Result<(), Error> {
    thread::reseed()
}

/// Makes every thread of the process reseed from the OS before its next output, by starting
/// a new process-wide epoch; each read compares its thread's epoch with it (one relaxed
/// atomic load on the small-read path).
///
/// Call it where the whole process may have been duplicated without a `fork`: right after a
/// VM snapshot is restored (Firecracker, AWS Lambda SnapStart, QEMU savevm/loadvm), or after
/// a process checkpoint is restored (CRIU). Where [`snapshot_protection`] reports
/// [`SnapshotProtection::VmGenerationCounter`], VM snapshot restores are detected without
/// this call; it stays harmless there (one extra reseed per thread). Every clone of a
/// snapshot would otherwise replay the same stream. A reseed that fails after this call
/// makes that thread's next read fail (`try_fill` returns the error, `fill` panics) rather
/// than emit from the old state.
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub fn reseed_all() {
    lifecycle::fork::bump_epoch();
}
