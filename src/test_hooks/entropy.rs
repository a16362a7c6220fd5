//! The one fake entropy source of the unit tests.

use crate::error::Error;
use crate::generator::KEY_LEN;
use crate::lifecycle::seed::Entropy;

/// What a [`FakeEntropy`] hands out.
#[derive(Clone, Copy)]
enum Bytes {
    /// Byte `i` of call `n` (counted from 1) is `(n + i) | 1`: never all zero, and
    /// different at every call.
    Counter,
    /// A 32-byte seed, then a budget draw (little-endian), at every call of 36 bytes.
    Fixed { seed: [u8; KEY_LEN], draw: u32 },
    /// All zero (a source that "succeeds" without writing).
    Zeros,
}

/// A fake OS source: configurable bytes, fails while `fail` is set, and counts the calls
/// that succeeded in `calls`.
pub(crate) struct FakeEntropy {
    pub(crate) calls: u32,
    pub(crate) fail: bool,
    bytes: Bytes,
}

impl FakeEntropy {
    fn new(bytes: Bytes) -> Self {
        FakeEntropy {
            calls: 0,
            fail: false,
            bytes,
        }
    }

    /// A working source of the counter pattern.
    pub(crate) fn counter() -> Self {
        Self::new(Bytes::Counter)
    }

    /// A source that fails until `fail` is cleared (then the counter pattern).
    pub(crate) fn failing() -> Self {
        FakeEntropy {
            fail: true,
            ..Self::counter()
        }
    }

    /// A source of `seed` and the budget draw `draw` (reads of 36 bytes only).
    pub(crate) fn fixed(seed: [u8; KEY_LEN], draw: u32) -> Self {
        Self::new(Bytes::Fixed { seed, draw })
    }

    /// A source that returns zeros and reports success.
    pub(crate) fn zeros() -> Self {
        Self::new(Bytes::Zeros)
    }
}

impl Entropy for FakeEntropy {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        if self.fail {
            return Err(getrandom::Error::UNEXPECTED.into());
        }
        self.calls += 1;
        match self.bytes {
            Bytes::Counter => {
                for (i, b) in dest.iter_mut().enumerate() {
                    *b = (self.calls as u8).wrapping_add(i as u8) | 1;
                }
            }
            Bytes::Fixed { seed, draw } => {
                dest[..KEY_LEN].copy_from_slice(&seed);
                dest[KEY_LEN..].copy_from_slice(&draw.to_le_bytes());
            }
            Bytes::Zeros => dest.fill(0),
        }
        Ok(())
    }
}
