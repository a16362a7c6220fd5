//! `RustlsRandom`: the thread-local generator as a rustls 0.23 `SecureRandom`.

use ::rustls::crypto::{GetRandomFailed, SecureRandom};

/// fkrng's thread-local generator as rustls 0.23's [`SecureRandom`], for the `secure_random`
/// field of a [`CryptoProvider`](::rustls::crypto::CryptoProvider); each `fill` is a
/// [`crate::try_fill`]. rustls draws its handshake randoms, session IDs and session-ticket
/// nonces and keys from it; key-exchange secrets come from the provider's own code. `fips()`
/// is `false`: fast key erasure is not a FIPS-approved DRBG.
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
/// `fill` returns [`GetRandomFailed`], with zeros in `buf`, when the thread cannot seed or
/// reseed from the OS (as [`crate::try_fill`]); rustls then aborts the handshake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RustlsRandom;

impl SecureRandom for RustlsRandom {
    #[inline]
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        crate::try_fill(buf).map_err(|_| GetRandomFailed)
    }
}
