//! The state pool's memory where there are no wipe-on-fork pages (every OS but Linux and
//! Android, and Miri): zeroed heap allocations. Compiled on Linux for its unit test too.

#![cfg_attr(
    all(any(target_os = "linux", target_os = "android"), not(miri)),
    allow(dead_code)
)]

use super::Advice;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Chunks are heap allocations here, not page mappings.
pub(crate) const MAPPED: bool = false;

/// A zeroed allocation for `layout`: address, size, `false` (no wipe-on-fork); `None` if refused.
///
/// # Panics
/// If `layout` is zero-sized (a chunk is 64 KiB).
pub(crate) fn map(layout: Layout, _advice: Advice) -> Option<(NonNull<u8>, usize, bool)> {
    assert!(layout.size() > 0, "zero-sized state");
    // SAFETY: the layout is not zero-sized (checked above).
    let raw = unsafe { std::alloc::alloc_zeroed(layout) };
    Some((NonNull::new(raw)?, layout.size(), false))
}

/// The unit no pooled state straddles: 4096 bytes, as a page elsewhere, for one layout.
pub(crate) fn unit() -> usize {
    4096
}

/// No wipe-on-fork here: never honoured.
pub(crate) fn probe_honoured() -> bool {
    false
}

/// Frees an allocation made by [`map`].
///
/// # Safety
/// `ptr` came from `map(layout, _)` with this `layout`; freed once, unused afterwards.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, _len: usize, layout: Layout) {
    // SAFETY: allocated with this layout by `map` (caller's contract).
    unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The storage of other systems: zeroed, writable over its whole size, aligned, freed.
    #[test]
    fn heap_storage_of_other_systems_is_zeroed_and_aligned() {
        #[repr(align(64))]
        struct State([u64; 160]);
        let layout = Layout::new::<State>();
        for _ in 0..4 {
            let (ptr, len, wiped) = map(layout, Advice::WipeOnFork).expect("memory");
            assert_eq!((len, wiped), (size_of::<State>(), false));
            assert_eq!(ptr.as_ptr() as usize % 64, 0, "alignment");
            // SAFETY: a live, zeroed allocation for one `State`, used by this thread only.
            let state = unsafe { &mut *ptr.as_ptr().cast::<State>() };
            assert!(state.0.iter().all(|&w| w == 0), "zeroed");
            state.0.fill(u64::MAX);
            // SAFETY: from `map(layout, _)`, freed once, not used afterwards.
            unsafe { unmap(ptr, len, layout) };
        }
    }
}
