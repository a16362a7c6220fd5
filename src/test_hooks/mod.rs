//! What this repository's tests, benchmarks and fuzz targets need to see or steer inside the
//! library, and nothing a user of the crate gets. Compiled only in the unit tests
//! (`cfg(test)`), under `cargo fuzz` (`cfg(fuzzing)`: [`Inspect`] alone) and with
//! `--cfg fkrng_test_hooks`, which README's test command sets through
//! `--config .cargo/test-hooks.toml`. No Cargo feature or environment variable turns it on.
//! Hidden from the documentation; not a stable API.

#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod counters;
#[cfg(all(test, feature = "std"))]
pub(crate) mod entropy;
#[cfg(all(test, feature = "std"))]
pub(crate) mod lifecycle;
#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod memory;
#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod os;
#[cfg(all(test, feature = "std"))]
pub(crate) mod process;
#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod snapshot;

use crate::generator::{FkeRng, KEY_LEN};

/// A read-only view of an [`FkeRng`]'s state.
#[derive(Clone, Copy)]
pub struct Inspect<'a> {
    /// The current key.
    pub key: &'a [u8; KEY_LEN],
    /// Unserved bytes at the end of the buffer.
    pub available: usize,
    /// The whole buffer (served bytes read as zero).
    pub buffer: &'a [u8],
}

impl FkeRng {
    /// The generator's state, for the differential tests and the fuzz target.
    pub fn inspect(&self) -> Inspect<'_> {
        let fke = self.fke();
        Inspect {
            key: fke.key(),
            available: fke.available(),
            buffer: fke.buffer(),
        }
    }
}
