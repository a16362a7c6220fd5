//! A read-only view of an [`FkeRng`]'s state, for the differential unit tests and the
//! differential fuzz target, which compare it with the reference model after every step;
//! and, in the unit tests, a count of the SIMD kernel calls made on each thread.

use crate::generator::{FkeRng, KEY_LEN};

/// What [`FkeRng::inspect`] shows: the key, the count of unserved bytes and the buffer,
/// borrowed (no copy of the key or the buffer is made).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct Inspect<'a> {
    /// The key `K` (32 bytes).
    pub key: &'a [u8; KEY_LEN],
    /// Unserved bytes in the buffer (0 to 992).
    pub available: usize,
    /// The 992-byte buffer; its unserved bytes are the last `available` ones.
    pub buffer: &'a [u8],
}

impl FkeRng {
    /// A read-only view of the state (see [`Inspect`]).
    #[doc(hidden)]
    pub fn inspect(&self) -> Inspect<'_> {
        let fke = self.fke();
        Inspect {
            key: fke.key(),
            available: fke.available(),
            buffer: fke.buffer(),
        }
    }
}

#[cfg(test)]
std::thread_local! {
    /// Kernel calls made on this thread: the 16-block AVX-512 kernel, the 8-block AVX2
    /// kernel, the AVX-512 tail kernel.
    pub(crate) static KERNEL_CALLS: core::cell::Cell<[u64; 3]> =
        const { core::cell::Cell::new([0; 3]) };
}

/// Counts a kernel call in slot `index` of [`KERNEL_CALLS`].
#[cfg(test)]
pub(crate) fn count_kernel_call(index: usize) {
    KERNEL_CALLS.with(|calls| {
        let mut n = calls.get();
        n[index] += 1;
        calls.set(n);
    });
}
