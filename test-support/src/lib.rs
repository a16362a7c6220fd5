//! Test support for fkrng, shared by the unit tests (`src/generator/differential.rs`), the
//! integration tests in `tests/` and the fuzz targets in `fuzz/`.
//!
//! None of it depends on fkrng: the reference model and its ChaCha20 are independent of the
//! code they check, and the unit tests can use this crate without a second copy of fkrng.
//!
//! - [`model`]: the reference model of the fast-key-erasure generator.
//! - [`chacha`]: the ChaCha20 block function the model and the residue test compute with.
//! - [`kat`]: the known-answer vectors of `tests/data/fke-kat.txt`, parsed.
//! - [`sampling`]: checks of sampled values shared by the consumer tests.
//! - [`child`]: run a closure in a `fork()`ed or raw-`clone`d child, get its bytes back.
//! - [`seccomp`]: install a seccomp filter program.
//! - [`signals`]: signal handlers and periodic timer signals.
//! - [`stack`]: painted thread and signal stacks that measure how deep code reached.
//! - [`alloc`]: a global allocator that counts allocations.
//! - [`runner`]: commands that run the tests' binaries through the emulator of a
//!   cross-architecture run.

pub mod alloc;
pub mod chacha;
pub mod kat;
pub mod model;
pub mod runner;
pub mod sampling;

#[cfg(unix)]
pub mod child;
#[cfg(target_os = "linux")]
pub mod maps;
#[cfg(target_os = "linux")]
pub mod seccomp;
#[cfg(target_os = "linux")]
pub mod signals;
#[cfg(target_os = "linux")]
pub mod stack;
