//! Read access to the generator's state for the unit tests and the test hooks.

use super::{FkeRng, FkeState, KEY_LEN};

impl FkeState {
    /// The current key `K`.
    #[inline]
    pub(crate) fn key(&self) -> &[u8; KEY_LEN] {
        self.block[0].first_chunk().expect("32 bytes")
    }

    /// The 992-byte buffer, served and unserved parts (for tests of the zeroing).
    pub(crate) fn buffer(&self) -> &[u8] {
        &self.block.as_flattened()[KEY_LEN..]
    }
}

impl FkeRng {
    /// The state.
    pub(crate) fn fke(&self) -> &FkeState {
        &self.fke
    }
}
