//! Everything fkrng asks of the OS and the CPU (random source, state pages, fork handlers,
//! clocks, CPU random words and counter, the VMClock device): every `libc` call is here.

pub(crate) mod clock;
pub(crate) mod cpu;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
mod entropy;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) mod nocancel;
pub(crate) mod pages;
#[cfg(all(unix, not(miri)))]
pub(crate) mod thread_exit;
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
pub(crate) mod valgrind;
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
pub(crate) mod vdso;
pub(crate) mod vmclock;

use crate::error::Error;

/// Fills `dest` from the OS's random source: the `getrandom` system call (or the checked
/// `/dev/urandom`) on Linux and Android, else the `getrandom` crate. On error, discard `dest`.
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    crate::probe::count(crate::probe::Event::OsRead);
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    return entropy::or_device(dest, entropy::fill_by_syscall);
    #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
    return getrandom::fill(dest).map_err(Error::from);
}

/// As [`fill`], for a new thread's first seed: once the system call has answered in this
/// process, from the vDSO's `getrandom` (x86-64 Linux 6.11+) where it can serve, with no
/// vDSO state that predates `epoch` (the fork epoch: forks and `reseed_all`). Before that,
/// the vDSO's state page is mapped (`vdso::prepare`).
pub(crate) fn fill_new_thread(dest: &mut [u8], epoch: u64) -> Result<(), Error> {
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    let _ = epoch;
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    if entropy::SYSCALL_ANSWERED.load(core::sync::atomic::Ordering::Relaxed) {
        crate::probe::count(crate::probe::Event::OsRead);
        return entropy::or_device(dest, |dest| {
            vdso::fill(dest, epoch).unwrap_or_else(|| entropy::fill_by_syscall(dest))
        });
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    vdso::prepare();
    fill(dest)
}

/// A fork handler: an `extern "C"` function without arguments.
pub(crate) type Handler = extern "C" fn();

/// Registers fork handlers with `pthread_atfork`: 0, or its error number (`ENOMEM`).
/// Without `fork` (not Unix, or Miri) this registers nothing and returns 0.
#[cfg_attr(any(not(unix), miri), allow(unused_variables))]
pub(crate) fn register_atfork(prepare: Handler, parent: Handler, child: Handler) -> i32 {
    #[cfg(all(unix, not(miri)))]
    // SAFETY: the handlers are argument-less `extern "C"` functions that live for the whole
    // program; their own contracts make them safe in a forked child.
    return unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    #[cfg(any(not(unix), miri))]
    return 0;
}
