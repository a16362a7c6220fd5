//! Everything fkrng asks of the operating system and the CPU, and nothing else: the random
//! source, state pages and their advice, fork handler registration, clocks, the CPU's random
//! words and counter, and the VMClock device. Every `libc` call of the crate is here.

#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
mod entropy;
pub(crate) mod atfork;
pub(crate) mod clock;
pub(crate) mod diversifier;
pub(crate) mod pages;
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
pub(crate) mod vdso;
pub(crate) mod vmclock;

use crate::Error;

/// Fills `dest` from the OS's random source: the `getrandom` system call on Linux and
/// Android (retrying on `EINTR`, with a checked device fallback), the `getrandom` crate's
/// source elsewhere (`getentropy`, `ProcessPrng`, WASI's `random_get`).
///
/// # Errors
/// The source's failure; `dest` is then not to be used.
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    crate::probe::count(crate::probe::Event::OsRead);
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    return entropy::fill(dest);
    #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
    return getrandom::fill(dest).map_err(Error::from);
}

/// As [`fill`], for a new thread's first seed: from the vDSO's `getrandom` where it serves
/// (x86-64 Linux 6.11 and later), else [`fill`].
///
/// # Errors
/// As [`fill`].
pub(crate) fn fill_new_thread(dest: &mut [u8]) -> Result<(), Error> {
    crate::probe::count(crate::probe::Event::OsRead);
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    return entropy::fill_new_thread(dest);
    #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
    return fill(dest);
}
