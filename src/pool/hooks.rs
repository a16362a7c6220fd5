//! Views of the pool for the unit tests and the test hooks.

use super::{Lease, StatePool};
use core::sync::atomic::Ordering::{Acquire, Relaxed};

impl<T> StatePool<T> {
    /// Chunks published and slots claimed.
    pub(crate) fn census(&self) -> (usize, usize) {
        let published = self
            .chunks
            .iter()
            .take_while(|c| !c.base.load(Acquire).is_null());
        published.fold((0, 0), |(chunks, claimed), c| {
            let bits: u32 = c.claimed.iter().map(|w| w.load(Relaxed).count_ones()).sum();
            (chunks + 1, claimed + bits as usize)
        })
    }
}

impl<T> Lease<T> {
    /// The slot's address range, for the tests and [`crate::test_hooks::memory`].
    pub(crate) fn range(&self) -> (usize, usize) {
        let start = self.ptr.as_ptr() as usize;
        (start, start + size_of::<T>())
    }

    /// Bytes of chunk memory per slot (a unit divided by its slots), for the memory figures.
    pub(crate) fn share(&self) -> usize {
        let g = StatePool::<T>::geometry();
        g.unit / g.per_unit
    }
}
