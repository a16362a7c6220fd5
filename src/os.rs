//! The OS seam: everything fkrng asks of the OS and the CPU (random source, state pages, fork
//! handlers, thread-exit and unload hooks, clocks, CPU random words and counter, the VMClock
//! device); every `libc` call is here, and nothing here imports a layer above.
//!
//! Contract: every function and module named below exists on every target, with the same
//! signature; where the platform lacks the facility it does nothing and says so in its
//! result (no fork handlers: [`FORKS`] is false; no thread-exit key: `arm` returns false; no
//! device: the VMClock probe's answer is final). The platform family is chosen once, here:
//! Linux and Android (system call, vDSO, checked device, advised pages), other Unix systems
//! (the `getrandom` crate, fork handlers, a thread-exit key), everything else and Miri (the
//! `getrandom` crate alone).

pub(crate) mod clock;
pub(crate) mod cpu;
pub(crate) mod pages;
pub(crate) mod vmclock;

use crate::error::Error;

cfg_if::cfg_if! {
    if #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))] {
        mod entropy;
        pub(crate) mod nocancel;
        pub(crate) mod thread_exit;
        mod unload;
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        mod valgrind;
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        pub(crate) mod vdso;
        pub(crate) use unload::at_unload;
        /// Whether the process can be duplicated by `fork`, whose handlers fkrng registers.
        pub(crate) const FORKS: bool = true;
    } else if #[cfg(all(unix, not(miri)))] {
        pub(crate) mod thread_exit;
        pub(crate) const FORKS: bool = true;
        /// No unload entry here: what a copy holds stays until the process exits.
        pub(crate) fn at_unload(_: fn()) {}
    } else {
        /// No thread-exit key here: a thread's slot is released by its thread-local destructor.
        pub(crate) mod thread_exit {
            pub(crate) fn arm(_: unsafe extern "C" fn(*mut core::ffi::c_void)) -> bool {
                false
            }
            pub(crate) fn disarm() {}
        }
        pub(crate) const FORKS: bool = false;
        pub(crate) fn at_unload(_: fn()) {}
    }
}

/// Fills `dest` from the OS's random source ([`source`]). On error, discard `dest`.
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    source(dest, None)
}

/// As [`fill`], for a new thread's first seed, with no vDSO state that predates `epoch` (the
/// fork epoch: forks and `reseed_all`).
pub(crate) fn fill_new_thread(dest: &mut [u8], epoch: u64) -> Result<(), Error> {
    source(dest, Some(epoch))
}

/// The one choice of random source. On Linux and Android the `getrandom` system call, or the
/// checked `/dev/urandom` where it is missing or refused; for a new thread's first seed
/// (`new_thread` holds the fork epoch), once the system call has answered in this process,
/// the vDSO's `getrandom` (x86-64 Linux 6.11+) where it can serve, its state page mapped
/// before that (`vdso::prepare`). Elsewhere, and under Miri, the `getrandom` crate.
fn source(dest: &mut [u8], new_thread: Option<u64>) -> Result<(), Error> {
    crate::probe::count(crate::probe::Event::OsRead);
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    if let Some(epoch) = new_thread {
        if entropy::SYSCALL_ANSWERED.load(core::sync::atomic::Ordering::Relaxed) {
            return entropy::or_device(dest, |dest| {
                vdso::fill(dest, epoch).unwrap_or_else(|| entropy::fill_by_syscall(dest))
            });
        }
        vdso::prepare();
    }
    let _ = new_thread;
    cfg_if::cfg_if! {
        if #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))] {
            entropy::or_device(dest, entropy::fill_by_syscall)
        } else {
            getrandom::fill(dest).map_err(Error::from)
        }
    }
}

/// Stops helgrind and DRD from checking the `len` bytes at `addr` (valgrind's client
/// requests, x86-64 Linux); no effect outside them or elsewhere.
pub(crate) fn untrack(addr: *const u8, len: usize) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    valgrind::untrack(addr, len);
    let _ = (addr, len);
}

/// In a forked child (the child handler): the vDSO states' claims cleared, but the one this
/// thread holds (x86-64 Linux); nothing elsewhere. Async-signal-safe.
pub(crate) fn reset_after_fork() {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    vdso::reset_after_fork();
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
