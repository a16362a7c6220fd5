//! A read-only view of an [`FkeRng`]'s state, for the differential unit tests and the
//! differential fuzz target, which compare it with the reference model after every step.

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
