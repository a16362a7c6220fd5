//! Hooks for the snapshot tests and benchmark: a stand-in file (a tmpfs page with the VMClock
//! ABI layout) in place of `/dev/vmclock0`, named by `FKRNG_TEST_VMCLOCK_PATH`
//! (`scripts/vmclock-stand-in.sh` writes one) in a program that called
//! [`stand_in_from_env`] (no other program, such as the `fkrng` tool built in this
//! repository, reads that variable); [`follow_device`] switches the process between
//! the mapped counter and the fallback word, so that one benchmark run measures reads both
//! ways; and, in the unit tests, a stand-in page that the whole process follows
//! (`follow`, a unit-test helper), in a test that runs alone in a process of its own.

use crate::lifecycle::snapshot::{CHECKS, DEVICE_COUNTER, STAND_IN, UNMAPPED};
use core::sync::atomic::Ordering;

/// Lets this process (and its forked children) take the stand-in named by
/// `FKRNG_TEST_VMCLOCK_PATH` in place of the device, and stop when it is refused and
/// `FKRNG_TEST_VMCLOCK_MUST_MAP` is set. Call it before the process's first read: the
/// device is probed at the first seeding (again later only after a failure that can pass).
pub fn stand_in_from_env() {
    if let Some(path) = std::env::var_os("FKRNG_TEST_VMCLOCK_PATH") {
        let must_map = std::env::var_os("FKRNG_TEST_VMCLOCK_MUST_MAP").is_some();
        let _ = STAND_IN.set((path, must_map));
    }
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
    CHECKS.counter.store(target, Ordering::Release);
    !core::ptr::eq(target, &UNMAPPED)
}

/// From now on every thread compares its state with `region`'s counter: the unit tests'
/// stand-in page in place of the device (each such test runs alone in a process of its
/// own, `test_hooks::process::in_new_process`). Probes the device first, so that the
/// process's one probe cannot replace the stand-in later.
#[cfg(all(
    test,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
pub(crate) fn follow(region: crate::lifecycle::snapshot::Region) {
    crate::lifecycle::snapshot::settled_generation();
    CHECKS
        .counter
        .store(region.counter().cast_mut(), Ordering::Release);
}
