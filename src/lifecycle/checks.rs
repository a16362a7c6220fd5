//! What every read compares its state with once its bytes are copied: the process-wide fork
//! epoch ([`crate::lifecycle::fork`]) and the VM generation counter
//! ([`crate::lifecycle::snapshot`]).

use core::sync::atomic::{AtomicPtr, AtomicU64};

/// The fallback counter when no device is mapped: never changes.
pub(crate) static UNMAPPED: AtomicU64 = AtomicU64::new(0);

/// What every read compares its state with after the copy, on one 64-byte cache line that
/// nothing writes often, reached through one address (one relocation in a dependent's code).
#[repr(C, align(64))]
pub(crate) struct Checks {
    /// Process-wide reseed epoch: bumped in a forked child and by `reseed_all`.
    pub(crate) epoch: AtomicU64,
    /// The VM generation counter ([`crate::lifecycle::snapshot`]). Invariant: points to
    /// [`UNMAPPED`] or to `vm_generation_counter` in a never-unmapped page.
    pub(crate) counter: AtomicPtr<AtomicU64>,
}

pub(crate) static CHECKS: Checks = Checks {
    epoch: AtomicU64::new(1),
    counter: AtomicPtr::new(core::ptr::addr_of!(UNMAPPED).cast_mut()),
};
