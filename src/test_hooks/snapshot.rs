//! Hooks for the snapshot tests and benchmark: a stand-in file (a tmpfs page with the VMClock
//! ABI layout) in place of `/dev/vmclock0`, named by `FKRNG_TEST_VMCLOCK_PATH`
//! (`scripts/vmclock-stand-in.sh` writes one) in a program that called
//! [`stand_in_from_env`] (no other program, such as the `fkrng` tool built in this
//! repository, reads that variable); [`follow_device`] switches the process between
//! the mapped counter and the fallback word, so that one benchmark run measures reads both
//! ways; and, in the unit tests, a stand-in page that the whole process follows
//! (`follow`, a unit-test helper), in a test that runs alone in a process of its own.

use crate::snapshot::{COUNTER, UNMAPPED};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Set by [`stand_in_from_env`]: only then are the environment variables read.
static FROM_ENV: AtomicBool = AtomicBool::new(false);

/// Lets this process (and its forked children) take the stand-in named by
/// `FKRNG_TEST_VMCLOCK_PATH` in place of the device, and stop when it is refused and
/// `FKRNG_TEST_VMCLOCK_MUST_MAP` is set. Call it before the process's first read: the
/// device is probed once, at the first seeding.
pub fn stand_in_from_env() {
    FROM_ENV.store(true, Ordering::Relaxed);
}

/// The mapped counter, once the probe succeeded.
static DEVICE_COUNTER: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

/// Records the counter the probe mapped, for [`follow_device`].
pub(crate) fn remember_device(counter: *const AtomicU64) {
    DEVICE_COUNTER.store(counter.cast_mut(), Ordering::Relaxed);
}

/// Points every thread's check at the mapped counter (`true`, if the probe mapped one)
/// or at the fallback word (`false`); each thread reseeds once at its next read, as the
/// value it compares with changes. Returns whether the mapped counter is followed.
pub fn follow_device(on: bool) -> bool {
    let device = DEVICE_COUNTER.load(Ordering::Relaxed);
    let target = if on && !device.is_null() {
        device
    } else {
        core::ptr::addr_of!(UNMAPPED).cast_mut()
    };
    COUNTER.0.store(target, Ordering::Release);
    !core::ptr::eq(target, &UNMAPPED)
}

/// The stand-in named by `FKRNG_TEST_VMCLOCK_PATH`, probed in place of the device.
pub(crate) fn stand_in_path() -> Option<std::ffi::OsString> {
    if !FROM_ENV.load(Ordering::Relaxed) {
        return None;
    }
    std::env::var_os("FKRNG_TEST_VMCLOCK_PATH")
}

/// Stops a run that sets `FKRNG_TEST_VMCLOCK_MUST_MAP` (the lifecycle tests re-run with the
/// stand-in present) when the stand-in was refused, rather than let it pass without it.
#[cfg_attr(
    not(all(
        target_os = "linux",
        target_endian = "little",
        target_pointer_width = "64"
    )),
    allow(dead_code)
)]
pub(crate) fn stand_in_refused(why: &dyn core::fmt::Debug) {
    if FROM_ENV.load(Ordering::Relaxed) && std::env::var_os("FKRNG_TEST_VMCLOCK_MUST_MAP").is_some()
    {
        // Straight to the descriptor: the test harness captures `eprintln!`.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("fkrng test hooks: the stand-in was refused: {why:?}\n").as_bytes(),
        );
        std::process::abort();
    }
}

/// From now on every thread compares its state with `region`'s counter: the unit tests'
/// stand-in page in place of the device (each such test runs alone in a process of its
/// own, `test_hooks::lifecycle::in_new_process`). Probes the device first, so that the
/// process's one probe cannot replace the stand-in later.
#[cfg(all(
    test,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
pub(crate) fn follow(region: crate::snapshot::Region) {
    crate::snapshot::settled_generation();
    COUNTER
        .0
        .store(region.counter().cast_mut(), Ordering::Release);
}
