//! `RustlsRandom`: the thread-local generator as a `rustls` random source
//! (`rustls::crypto::SecureRandom`, rustls 0.23).

use ::rustls::crypto::{GetRandomFailed, SecureRandom};

/// fkrng's thread-local generator as rustls's [`SecureRandom`], for a
/// [`CryptoProvider`](::rustls::crypto::CryptoProvider) whose `secure_random` field should come
/// from fkrng instead of the provider's own source.
///
/// Each [`fill`](SecureRandom::fill) is a [`crate::try_fill`] on the calling thread's
/// generator. rustls draws from this source the 32-byte client and server randoms of every
/// handshake, 32-byte session IDs, and the nonces and keys of session tickets it issues. The
/// ephemeral key-exchange secrets are drawn by the provider's key-exchange implementation (for
/// example *ring*'s own RNG), not through this trait.
///
/// The type is a unit struct, so `&RustlsRandom` is the `&'static dyn SecureRandom` that
/// `CryptoProvider` expects:
///
/// ```
/// use rustls::crypto::{CryptoProvider, ring};
///
/// let provider = CryptoProvider {
///     secure_random: &fkrng::RustlsRandom,
///     ..ring::default_provider()
/// };
/// # let _ = provider;
/// ```
///
/// # Errors
/// `fill` returns [`GetRandomFailed`] (and writes nothing) when the calling thread cannot
/// seed or reseed from the OS: at its first use, after a `fork`, after
/// [`crate::reseed_all`] or after a detected VM snapshot restore. rustls then aborts the
/// handshake; it never panics here.
///
/// It reports `fips() == false`: ChaCha20 fast key erasure is not a FIPS-approved DRBG.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(docsrs, doc(cfg(feature = "rustls")))]
pub struct RustlsRandom;

impl SecureRandom for RustlsRandom {
    #[inline]
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        crate::try_fill(buf).map_err(|_| GetRandomFailed)
    }
}
