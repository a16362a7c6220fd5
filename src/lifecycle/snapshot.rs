//! Snapshot safety: every thread's state records the VMClock device's VM generation counter
//! (ABI reader: [`crate::os::vmclock`]) at its (re)seed and every read compares it with the
//! counter now, so a guest restored from a snapshot reseeds before its next output. The
//! device is probed at the process's first seeding, and again at later seeds while the
//! answer was one that can change.

pub(crate) use crate::lifecycle::checks::{CHECKS, UNMAPPED};
pub(crate) use crate::os::vmclock::Region;
use crate::os::vmclock::{OFFSET_VM_GENERATION_COUNTER, VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT};
#[cfg(any(test, fkrng_test_hooks))]
use core::sync::atomic::{AtomicPtr, AtomicU64};
use core::sync::atomic::{AtomicU8, Ordering};

/// How a process's thread-local generators are protected against VM snapshot restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotProtection {
    /// The VMClock device's `vm_generation_counter` is mapped (`/dev/vmclock0`, Linux
    /// `ptp_vmclock` driver, a hypervisor that sets `VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT`):
    /// every thread reseeds before its first output after a restore, with no hook.
    VmGenerationCounter,
    /// No usable generation counter (no device, an older hypervisor or
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
/// until a thread first tries to seed (the device is probed then, before the OS is read:
/// also when that read then fails), and while the probe's
/// answer was one that can change (no permission, `EACCES` or `EPERM`; `EMFILE`, `ENFILE`,
/// `ENOMEM`, `EINTR`, `EAGAIN`: the next seed probes again). Never fails or panics:
/// anything but a usable device on little-endian 64-bit Linux reports
/// [`SnapshotProtection::ManualOnly`] (docs/SECURITY.md, "VM snapshots").
pub fn snapshot_protection() -> Option<SnapshotProtection> {
    match PROBE.load(Ordering::Acquire) {
        MAPPED => Some(SnapshotProtection::VmGenerationCounter),
        MANUAL_ONLY => Some(SnapshotProtection::ManualOnly),
        _ => None,
    }
}

/// The generation counter as it reads now (the fast-path check), without the seqlock: the
/// hypervisor's update is complete before a restored guest runs again.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // SAFETY: `CHECKS.counter` points to `UNMAPPED` or at offset 104 (8-byte aligned) of a mapped
    // device page that is never unmapped; relaxed 64-bit loads are plain loads, allowed on
    // read-only memory. The Acquire pairs with the Release store that publishes a mapping.
    unsafe { (*CHECKS.counter.load(Ordering::Acquire)).load(Ordering::Relaxed) }
}

/// The generation counter read under the seqlock, for a state about to (re)seed (probing the device
/// at the process's first seeding); unsettled, the counter as it reads now (the caller reseeds
/// anyway). A cleared counter-present flag ends the protection for good ([`lapse`]).
#[cold]
pub(crate) fn settled_generation() -> u64 {
    if PROBE.load(Ordering::Acquire) == UNKNOWN {
        probe_once();
    }
    match mapped_region().and_then(|region| region.settled()) {
        Some((flags, _)) if flags & VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT == 0 => {
            lapse();
            generation()
        }
        Some((_, g)) => g,
        None => generation(),
    }
}

/// Ends the protection: reads follow the fallback counter, reported as manual only.
#[cold]
fn lapse() {
    let unmapped = core::ptr::addr_of!(UNMAPPED).cast_mut();
    CHECKS.counter.store(unmapped, Ordering::Release);
    PROBE.store(MANUAL_ONLY, Ordering::Release);
}

/// The mapped device page, if any.
fn mapped_region() -> Option<Region> {
    let p = CHECKS.counter.load(Ordering::Acquire);
    if core::ptr::eq(p, &UNMAPPED) {
        return None;
    }
    // SAFETY: a published counter is `OFFSET_VM_GENERATION_COUNTER` bytes into a mapped page.
    let page = unsafe { p.cast::<u8>().sub(OFFSET_VM_GENERATION_COUNTER) };
    Some(Region(page))
}

/// Claims the probe and maps the device, or returns at once if another thread has claimed
/// it: a child forked mid-probe must not hang (it keeps the fallback counter). An answer
/// that can change (descriptors or memory exhausted, an interrupted call: see
/// [`crate::os::vmclock::Unusable::is_final`]) leaves the probe [`UNKNOWN`] for the next
/// seed.
#[cold]
#[inline(never)]
fn probe_once() {
    let claimed = PROBE.compare_exchange(UNKNOWN, PROBING, Ordering::Acquire, Ordering::Relaxed);
    if claimed.is_err() {
        return;
    }
    match map_device() {
        Ok(region) => {
            let counter = region.counter().cast_mut();
            #[cfg(any(test, fkrng_test_hooks))]
            DEVICE_COUNTER.store(counter, Ordering::Relaxed);
            CHECKS.counter.store(counter, Ordering::Release);
            PROBE.store(MAPPED, Ordering::Release);
        }
        Err(true) => PROBE.store(MANUAL_ONLY, Ordering::Release),
        Err(false) => PROBE.store(UNKNOWN, Ordering::Release),
    }
}

/// The file mapped instead of [`DEVICE`], and whether failing to map it aborts (test hooks).
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) static STAND_IN: std::sync::OnceLock<(std::ffi::OsString, bool)> =
    std::sync::OnceLock::new();

/// The mapped counter, which the test hooks can switch [`CHECKS`]' counter back to.
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) static DEVICE_COUNTER: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

#[cfg(all(test, fkrng_test_hooks))]
mod tests;

/// The mapped device page (or the test hooks' stand-in), or whether its absence is final.
fn map_device() -> Result<Region, bool> {
    #[cfg(any(test, fkrng_test_hooks))]
    if let Some((path, must_map)) = STAND_IN.get() {
        return crate::os::vmclock::map_stand_in(path, *must_map);
    }
    crate::os::vmclock::map_device()
}
