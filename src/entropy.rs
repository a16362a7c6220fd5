//! OS entropy: on Linux and Android the `getrandom` system call, with a device fallback that
//! is checked at every seed ([`linux`]); elsewhere the platform's source through the
//! `getrandom` crate (`getentropy` on macOS and the BSDs, `ProcessPrng` on Windows, WASI's
//! `random_get`).

use crate::Error;
use crate::generator::KEY_LEN;

/// A source of seed material; the thread-local generator reads it through this trait so that
/// tests can inject failures and known values.
pub(crate) trait Entropy {
    /// Fills `dest` entirely with fresh bytes or fails.
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error>;

    /// As [`Self::fill`], for a new thread's first seed, where the source has a cheaper way
    /// for it (the vDSO on Linux, [`fill_new_thread`]).
    fn fill_new_thread(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        self.fill(dest)
    }

    /// Writes a 32-byte seed into `key` and returns a 32-bit draw (for the reseed byte
    /// budget), refusing an all-zero seed: a source that "succeeds" without writing (a
    /// fault-injecting tracer, a broken emulator) must not turn into a known key.
    ///
    /// The seed goes straight from one zeroized scratch buffer into the caller's `key`: it is
    /// never returned or passed by value, since every such move leaves a copy in a stack
    /// frame that nothing wipes (and that outlives the read, for example in an exited
    /// thread's cached stack). On error `key` is all zero.
    fn seed(&mut self, key: &mut [u8; KEY_LEN]) -> Result<u32, Error> {
        seed_from(key, |raw| self.fill(raw))
    }

    /// As [`Self::seed`], for a new thread's first seed ([`Self::fill_new_thread`]).
    fn seed_new_thread(&mut self, key: &mut [u8; KEY_LEN]) -> Result<u32, Error> {
        seed_from(key, |raw| self.fill_new_thread(raw))
    }
}

/// [`Entropy::seed`] with the bytes of `fill`.
fn seed_from(
    key: &mut [u8; KEY_LEN],
    fill: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> Result<u32, Error> {
    let mut raw = [0u8; KEY_LEN + 4];
    let filled = fill(&mut raw);
    key.copy_from_slice(&raw[..KEY_LEN]);
    let extra = u32::from_le_bytes([
        raw[KEY_LEN],
        raw[KEY_LEN + 1],
        raw[KEY_LEN + 2],
        raw[KEY_LEN + 3],
    ]);
    zeroize::Zeroize::zeroize(&mut raw);
    if let Err(e) = filled {
        zeroize::Zeroize::zeroize(key);
        return Err(e);
    }
    if key.iter().all(|&b| b == 0) {
        return Err(Error::ALL_ZERO);
    }
    Ok(extra)
}

/// The operating system's source.
pub(crate) struct Os;

impl Entropy for Os {
    #[inline]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        #[cfg(any(test, feature = "test-hooks"))]
        crate::test_hooks::counters::count_os_read();
        fill(dest)
    }

    #[inline]
    fn fill_new_thread(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        #[cfg(any(test, feature = "test-hooks"))]
        crate::test_hooks::counters::count_os_read();
        fill_new_thread(dest)
    }
}

/// As [`fill`], for a new thread's first seed: on x86-64 Linux, from the
/// kernel's `getrandom` in the vDSO (Linux 6.11 and later) once the system call has answered
/// in this process, which saves the system call (`vdso`); elsewhere [`fill`].
pub(crate) fn fill_new_thread(dest: &mut [u8]) -> Result<(), Error> {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    return linux::fill_new_thread(dest);
    #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
    return fill(dest);
}

/// Fills `dest` straight from the OS: the kernel's source on Linux and Android (retrying on
/// `EINTR`), the `getrandom` crate's elsewhere.
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    return linux::fill(dest);
    // (Miri runs the `getrandom` crate's calls, not the device fallback of `linux`.)
    #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
    return getrandom::fill(dest).map_err(Error::from);
}

#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
mod linux;

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
pub(crate) mod vdso;

pub(crate) mod diversifier;
