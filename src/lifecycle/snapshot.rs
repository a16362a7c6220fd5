//! Snapshot safety: every thread's state records the VM generation counter of the VMClock
//! device (`/dev/vmclock0`, Linux's `ptp_vmclock` driver; the ABI reader is
//! [`crate::os::vmclock`]) at its (re)seed, and every read compares it with the counter as
//! it reads now, so a guest restored from a snapshot reseeds before its next output.
//!
//! Invariant: [`COUNTER`] points either to [`UNMAPPED`] (always 0) or into the device page,
//! which is never unmapped once published. The device is probed once, at the process's
//! first seeding; anything that keeps it from being used leaves the fallback word, and
//! [`snapshot_protection`] then reports [`SnapshotProtection::ManualOnly`].

// The device is used on little-endian 64-bit Linux only; elsewhere its reader stays unused.
#![cfg_attr(
    not(all(
        target_os = "linux",
        target_endian = "little",
        target_pointer_width = "64",
        not(miri)
    )),
    allow(dead_code)
)]

// (The tests use the repository's support crate, so they build where the cfg is set.)
#[cfg(all(
    test,
    fkrng_test_hooks,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
mod tests;

use crate::os::vmclock::OFFSET_VM_GENERATION_COUNTER;
pub(crate) use crate::os::vmclock::Region;
#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
use crate::os::vmclock::map;
use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

/// The fallback counter when no device is mapped: never changes.
pub(crate) static UNMAPPED: AtomicU64 = AtomicU64::new(0);

/// The process-wide pointer to the counter every read compares with, alone on a cache line
/// so that no frequently written static next to it slows every read down.
#[repr(C, align(64))]
pub(crate) struct CounterLine(pub(crate) AtomicPtr<AtomicU64>);

/// Points to [`UNMAPPED`], or to `vm_generation_counter` in the mapped device page (which
/// is never unmapped once published).
pub(crate) static COUNTER: CounterLine =
    CounterLine(AtomicPtr::new(core::ptr::addr_of!(UNMAPPED).cast_mut()));

/// The device node of the first VMClock device.
const DEVICE: &str = "/dev/vmclock0";

/// How a process's thread-local generators are protected against VM snapshot restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotProtection {
    /// The VMClock device's `vm_generation_counter` is mapped (`/dev/vmclock0`, Linux
    /// `ptp_vmclock` driver, a hypervisor that sets `VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT`):
    /// every thread reseeds before its first output after a restore, with no hook.
    VmGenerationCounter,
    /// No usable generation counter (no device, no permission, an older hypervisor or
    /// kernel, another OS): only a call of [`crate::reseed_all`] after a restore protects
    /// the clones from replaying each other's stream.
    ManualOnly,
}

const UNKNOWN: u8 = 0;
const PROBING: u8 = 1;
const MAPPED: u8 = 2;
const MANUAL_ONLY: u8 = 3;

/// Where the probe stands: [`UNKNOWN`], [`PROBING`] (one thread maps the device; others do
/// not wait for it), [`MAPPED`] or [`MANUAL_ONLY`].
static PROBE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The snapshot protection in force for this process's thread-local generators; `None`
/// until the first thread has seeded (the device is probed then).
///
/// Linux only, on little-endian 64-bit hosts; every other platform reports
/// [`SnapshotProtection::ManualOnly`]. Never fails or panics: an unusable device is
/// reported as `ManualOnly`. The device is the one of Linux's `ptp_vmclock` driver
/// (`drivers/ptp/ptp_vmclock.c`, ABI in `include/uapi/linux/vmclock-abi.h`); see
/// `docs/SECURITY.md` for the hypervisors and kernels that provide the counter.
pub fn snapshot_protection() -> Option<SnapshotProtection> {
    match PROBE.load(Ordering::Acquire) {
        MAPPED => Some(SnapshotProtection::VmGenerationCounter),
        MANUAL_ONLY => Some(SnapshotProtection::ManualOnly),
        _ => None,
    }
}

/// The counter the calling thread compares with.
#[inline(always)]
fn counter() -> *const AtomicU64 {
    // Acquire pairs with the Release store that publishes a mapping.
    COUNTER.0.load(Ordering::Acquire)
}

/// The generation counter as it reads now (the fast-path check): one load of the
/// process-wide pointer, one relaxed load of the counter, no seqlock.
///
/// A read that overlaps a hypervisor update may see the old value; the update is complete
/// before a restored guest runs again, so the first read after a restore sees the new one.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // SAFETY: `counter()` points to `UNMAPPED` or into a mapped, page-aligned device page
    // that is never unmapped; the counter is 8-byte aligned (offset 104). Relaxed 64-bit
    // loads on a 64-bit target are plain loads, which are allowed on read-only memory.
    unsafe { (*counter()).load(Ordering::Relaxed) }
}

/// The generation counter read consistently, for a state that is about to (re)seed: probes
/// the device first if this is the process's first seeding.
///
/// Reads under the seqlock; when it does not settle within the bound, returns the counter as
/// it reads now. That is safe: the caller reseeds anyway, and a later value that differs
/// makes the next read reseed again.
///
/// The counter-present flag is honoured here, at every (re)seed: a host that clears it (a
/// live migration to a hypervisor that does not keep the counter) ends the protection for
/// the rest of the process. [`snapshot_protection`] then reports
/// [`SnapshotProtection::ManualOnly`], and reads compare with the fallback counter (every
/// other thread reseeds once more, at its next read).
#[cold]
pub(crate) fn settled_generation() -> u64 {
    if PROBE.load(Ordering::Acquire) == UNKNOWN {
        probe_once();
    }
    match mapped_region() {
        Some(region) => match region.settled() {
            Some((flags, _))
                if flags & crate::os::vmclock::VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT == 0 =>
            {
                lapse();
                generation()
            }
            Some((_, g)) => g,
            None => generation(),
        },
        None => generation(),
    }
}

/// The counter is no longer kept: reads follow the fallback counter from now on, and the
/// protection is reported as manual only.
#[cold]
fn lapse() {
    COUNTER
        .0
        .store(core::ptr::addr_of!(UNMAPPED).cast_mut(), Ordering::Release);
    PROBE.store(MANUAL_ONLY, Ordering::Release);
}

/// The mapped device page, if any.
fn mapped_region() -> Option<Region> {
    let p = COUNTER.0.load(Ordering::Acquire);
    if core::ptr::eq(p, &UNMAPPED) {
        return None;
    }
    // SAFETY: a published counter pointer is `OFFSET_VM_GENERATION_COUNTER` bytes into a
    // mapped page (see `probe_once`).
    Some(Region(unsafe {
        p.cast::<u8>().sub(OFFSET_VM_GENERATION_COUNTER)
    }))
}

/// Claims the probe and maps the device, or returns at once if another thread has claimed
/// it: no thread ever waits here (a child forked while another thread probed must not hang;
/// it keeps the fallback counter).
#[cold]
#[inline(never)]
fn probe_once() {
    if PROBE
        .compare_exchange(UNKNOWN, PROBING, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    match map_device() {
        Some(region) => {
            #[cfg(any(test, fkrng_test_hooks))]
            DEVICE_COUNTER.store(region.counter().cast_mut(), Ordering::Relaxed);
            COUNTER
                .0
                .store(region.counter().cast_mut(), Ordering::Release);
            PROBE.store(MAPPED, Ordering::Release);
        }
        None => PROBE.store(MANUAL_ONLY, Ordering::Release),
    }
}

/// The device path: `/dev/vmclock0`, or in builds with the test hooks (never a build of
/// the published crate) the stand-in they name.
fn device_path() -> std::ffi::OsString {
    #[cfg(any(test, fkrng_test_hooks))]
    if let Some((path, _)) = STAND_IN.get() {
        return path.clone();
    }
    DEVICE.into()
}

/// Builds with the test hooks only: the file mapped instead of [`DEVICE`], and whether a
/// failure to map it aborts the process (set by `test_hooks::snapshot`).
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) static STAND_IN: std::sync::OnceLock<(std::ffi::OsString, bool)> =
    std::sync::OnceLock::new();

/// Builds with the test hooks only: the mapped counter, which the hooks can switch
/// [`COUNTER`] back to after pointing it elsewhere.
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) static DEVICE_COUNTER: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
fn map_device() -> Option<Region> {
    let mapped = map(std::path::Path::new(&device_path()));
    #[cfg(any(test, fkrng_test_hooks))]
    if let (Err(why), Some((_, true))) = (&mapped, STAND_IN.get()) {
        std::eprintln!("fkrng test hooks: the stand-in was refused: {why:?}");
        std::process::abort();
    }
    mapped.ok()
}

#[cfg(not(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
)))]
fn map_device() -> Option<Region> {
    let _ = device_path();
    None
}
