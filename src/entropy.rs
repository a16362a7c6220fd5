//! OS entropy: the `getrandom` system call (or the platform's equivalent) through the
//! `getrandom` crate, which on Linux falls back to `/dev/urandom` (after polling
//! `/dev/random` once) on kernels without the system call.

use crate::Error;
use crate::generator::KEY_LEN;

/// A source of seed material; the thread-local generator reads it through this trait so that
/// tests can inject failures and known values.
pub(crate) trait Entropy {
    /// Fills `dest` entirely with fresh bytes or fails.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error>;

    /// A 32-byte seed plus a 32-bit draw (for the reseed byte budget), refusing an all-zero
    /// seed: a source that "succeeds" without writing (a fault-injecting tracer, a broken
    /// emulator) must not turn into a known key.
    fn seed(&mut self) -> Result<([u8; KEY_LEN], u32), Error> {
        let mut raw = [0u8; KEY_LEN + 4];
        self.fill(&mut raw)?;
        let (key, extra) = raw.split_at(KEY_LEN);
        let key: [u8; KEY_LEN] = key.try_into().expect("32 bytes");
        let extra = u32::from_le_bytes(extra.try_into().expect("4 bytes"));
        zeroize::Zeroize::zeroize(&mut raw);
        if key == [0; KEY_LEN] {
            return Err(Error::ALL_ZERO);
        }
        Ok((key, extra))
    }
}

/// The operating system's source.
pub(crate) struct Os;

impl Entropy for Os {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        crate::probe::count_os_read();
        fill(dest)
    }
}

/// Fills `dest` straight from the OS (one `getrandom` call per 32 MiB on Linux; the crate
/// retries on `EINTR`).
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    getrandom::fill(dest).map_err(Error::from)
}
