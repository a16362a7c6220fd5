//! Fork safety: a process-wide epoch, compared with every thread's state at every read and
//! moved by the fork handlers and [`crate::reseed_all`], and the [`ForkProtection`] report.
//! With wipe-on-fork pages (which also cover a raw `clone`), a forked child and its parent
//! both reseed before their next output. PIDs are never used: they are reused.

use crate::error::Error;
use crate::lifecycle::checks::CHECKS;
use crate::os::pages::{self, HONOURED, NOT_HONOURED};
use crate::os::{self, Handler};
use Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

#[inline(always)]
pub(crate) fn epoch() -> u64 {
    CHECKS.epoch.load(Relaxed)
}

/// Starts a new epoch: every thread reseeds before its next output.
pub(crate) fn bump_epoch() {
    CHECKS.epoch.fetch_add(1, Relaxed);
}

/// Counted by the prepare and child handlers; unlike the epoch ([`CHECKS`]), `reseed_all`
/// leaves it alone.
static FORKS: AtomicU64 = AtomicU64::new(0);

/// How many times the fork handlers ran in this process and its ancestors (a relaxed load):
/// a read that sees it move was interrupted by a `fork` from a signal handler.
pub(crate) fn forks() -> u64 {
    FORKS.load(Relaxed)
}

/// Forks under way: +1 in the prepare handler, -1 in the parent's, set to 0 in the child's.
static FORKS_UNDER_WAY: AtomicU32 = AtomicU32::new(0);

/// Whether a `fork` is under way (from fkrng's prepare handler to its parent or child handler):
/// a read from another library's fork handler then must neither reseed nor serve the state the
/// child inherits; another thread that sees the count merely takes the one-off path once.
pub(crate) fn fork_under_way() -> bool {
    FORKS_UNDER_WAY.load(Relaxed) != 0
}

/// The prepare handler: a fork under way, and a new epoch so that parent and child reseed.
extern "C" fn atfork_prepare() {
    // The count goes up first: a read that sees the new epoch sees the fork under way.
    FORKS_UNDER_WAY.fetch_add(1, Relaxed);
    FORKS.fetch_add(1, Relaxed);
    bump_epoch();
}

/// The parent handler: this fork is no longer under way (the count never goes below 0).
extern "C" fn atfork_parent() {
    // `try_update`, the new name (Rust 1.95; the old one is deprecated from 1.99), is
    // newer than the minimum supported Rust (1.89).
    #[allow(deprecated)]
    let _ = FORKS_UNDER_WAY.fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1));
}

/// The lifecycle's part of the child handler: a new epoch and no fork under way (the
/// parent's other threads' forks do not continue here). Async-signal-safe.
pub(crate) fn in_child() {
    bump_epoch();
    FORKS.fetch_add(1, Relaxed);
    FORKS_UNDER_WAY.store(0, Relaxed);
}

const HANDLERS_UNREGISTERED: u8 = 0;
const HANDLERS_REGISTERED: u8 = 1;
const HANDLERS_FAILED: u8 = 2;

/// Whether this process's fork handlers are registered (or the last try failed).
static HANDLERS: AtomicU8 = AtomicU8::new(HANDLERS_UNREGISTERED);

/// Registers the prepare and parent handlers and `child` (which must call [`in_child`])
/// once per process (Unix); a no-op elsewhere. On failure, [`Error`] with `pthread_atfork`'s
/// error number (`ENOMEM`), and the next thread set-up tries again.
pub(crate) fn register_atfork(child: Handler) -> Result<(), Error> {
    if HANDLERS.load(Acquire) == HANDLERS_REGISTERED {
        return Ok(());
    }
    let register = || os::register_atfork(atfork_prepare, atfork_parent, child);
    register_with(&HANDLERS, register)
}

/// Runs `register` (0 or an error number, as `pthread_atfork`) and records the outcome in
/// `state`. No lock or `Once`, so a child forked mid-registration never waits for a thread
/// it lacks; racing threads may each register (a fork then bumps the epoch more than once).
fn register_with(state: &AtomicU8, register: impl FnOnce() -> i32) -> Result<(), Error> {
    let code = register();
    if code == 0 {
        state.store(HANDLERS_REGISTERED, Release);
        return Ok(());
    }
    // A failure never hides an earlier success (another thread's registration).
    _ = state.compare_exchange(HANDLERS_UNREGISTERED, HANDLERS_FAILED, Relaxed, Relaxed);
    Err(Error::fork_handler(code))
}

/// How the state of one thread is protected against `fork`, as found for this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForkProtection {
    /// `MADV_WIPEONFORK` pages the kernel was seen to honour hold the state, plus the atfork epoch.
    WipeOnFork,
    /// Only the `pthread_atfork` epoch (other Unix systems, Linux before 4.14, emulators
    /// that ignore the advice): `fork()` is detected, a raw `clone` is not.
    AtforkEpoch,
    /// Neither mechanism exists on this platform (no `fork` there).
    None,
}

/// The fork protection in force for this process's thread-local generators.
///
/// `None` until a thread's generator has been set up (at its first read), and on Unix for
/// as long as the fork handlers could not be registered (`pthread_atfork` failed): reads
/// then fail with an [`Error`] instead of running from a state that a fork would copy
/// unnoticed, so no generator runs unprotected.
///
/// On Linux and Android the first call after a state was set up checks that the kernel
/// honours `MADV_WIPEONFORK` (no read does) by mapping a probe page and reading
/// `/proc/self/smaps` (0.1 ms to some milliseconds: docs/SECURITY.md); an emulator that
/// ignores the advice, or an unreadable `/proc`, gives `AtforkEpoch`. Later calls are a load.
pub fn fork_protection() -> Option<ForkProtection> {
    protection(pages::wipe_on_fork(), HANDLERS.load(Relaxed), os::FORKS)
}

/// [`fork_protection`] from the wipe-on-fork finding, the handlers' registration and whether
/// the OS forks ([`os::FORKS`]; parameters, so that other systems' answers are tested on Linux
/// too).
fn protection(wipe_on_fork: u8, handlers: u8, forks: bool) -> Option<ForkProtection> {
    if forks && handlers != HANDLERS_REGISTERED {
        return None;
    }
    match wipe_on_fork {
        HONOURED => Some(ForkProtection::WipeOnFork),
        NOT_HONOURED if forks => Some(ForkProtection::AtforkEpoch),
        NOT_HONOURED => Some(ForkProtection::None),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::pages::UNKNOWN;

    #[test]
    fn a_failed_registration_is_an_error_and_leaves_no_protection() {
        let state = AtomicU8::new(HANDLERS_UNREGISTERED);
        let e = register_with(&state, || libc::ENOMEM).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOMEM));
        assert!(
            e.to_string()
                .starts_with("cannot register the fork handler: "),
            "{e}"
        );
        assert_eq!(state.load(Ordering::Relaxed), HANDLERS_FAILED);
        for wipe in [UNKNOWN, HONOURED, NOT_HONOURED] {
            assert_eq!(protection(wipe, HANDLERS_FAILED, true), None);
            assert_eq!(protection(wipe, HANDLERS_UNREGISTERED, true), None);
        }
        // A later success registers; a later failure does not hide it.
        register_with(&state, || 0).unwrap();
        assert_eq!(state.load(Ordering::Relaxed), HANDLERS_REGISTERED);
        register_with(&state, || libc::ENOMEM).unwrap_err();
        assert_eq!(state.load(Ordering::Relaxed), HANDLERS_REGISTERED);
        assert_eq!(
            protection(HONOURED, HANDLERS_REGISTERED, true),
            Some(ForkProtection::WipeOnFork)
        );
        assert_eq!(
            protection(NOT_HONOURED, HANDLERS_REGISTERED, true),
            Some(ForkProtection::AtforkEpoch)
        );
        assert_eq!(protection(UNKNOWN, HANDLERS_REGISTERED, true), None);
    }

    /// A child forked while another thread is inside the registration (a thread that does
    /// not exist in the child) registers at its own first read without waiting for it.
    #[cfg(all(unix, fkrng_test_hooks))]
    #[test]
    fn a_child_forked_during_registration_does_not_wait_for_it() {
        use fkrng_test_support::child::{self, How, Status};
        use std::sync::atomic::AtomicBool;
        use std::time::Duration;
        static STATE: AtomicU8 = AtomicU8::new(HANDLERS_UNREGISTERED);
        static INSIDE: AtomicBool = AtomicBool::new(false);
        static RELEASE: AtomicBool = AtomicBool::new(false);
        let registering = std::thread::spawn(|| {
            register_with(&STATE, || {
                INSIDE.store(true, Ordering::SeqCst);
                while !RELEASE.load(Ordering::SeqCst) {
                    std::thread::yield_now();
                }
                0
            })
        });
        while !INSIDE.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Releases the registering thread however this test ends.
        struct Release;
        impl Drop for Release {
            fn drop(&mut self) {
                RELEASE.store(true, Ordering::SeqCst);
            }
        }
        let release = Release;
        let _fork = crate::test_hooks::process::forking();
        // A hang is what this test looks for: give the child 30 seconds (it needs
        // microseconds); the helper kills it then. The child only calls `register_with`
        // (atomics and a closure returning 0).
        let child = child::run_within(How::Fork, Duration::from_secs(30), |_| {
            let registered = register_with(&STATE, || 0).is_ok()
                && STATE.load(Ordering::SeqCst) == HANDLERS_REGISTERED;
            if registered { 0 } else { 1 }
        });
        drop(release);
        registering.join().unwrap().unwrap();
        let child = child.expect("the child waited for a registration under way in its parent");
        assert_eq!(
            child.status,
            Status::Exited(0),
            "the child did not register"
        );
    }

    /// What `fork_protection` reports on Unix and non-Unix systems for each finding.
    #[test]
    fn fork_protection_per_system() {
        for forks in [true, false] {
            assert_eq!(protection(UNKNOWN, HANDLERS_REGISTERED, forks), None);
            assert_eq!(
                protection(HONOURED, HANDLERS_REGISTERED, forks),
                Some(ForkProtection::WipeOnFork)
            );
        }
        assert_eq!(
            protection(NOT_HONOURED, HANDLERS_REGISTERED, true),
            Some(ForkProtection::AtforkEpoch)
        );
        assert_eq!(
            protection(NOT_HONOURED, HANDLERS_REGISTERED, false),
            Some(ForkProtection::None)
        );
        // Without fork there are no handlers to register.
        assert_eq!(
            protection(NOT_HONOURED, HANDLERS_UNREGISTERED, false),
            Some(ForkProtection::None)
        );
    }
}
