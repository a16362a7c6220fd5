//! Test hooks, in one home: what the tests, benchmarks and fuzz targets of this repository
//! need to see or steer inside the library, and nothing a user of the crate gets.
//!
//! Compiled only with `cfg(test)` (the unit tests), `cfg(fuzzing)` (set by `cargo fuzz`) or
//! `--cfg fkrng_test_hooks`, which `.cargo/config.toml` sets for every build of this
//! repository (integration tests, benchmarks, the measurement builds of its scripts) and
//! which a build of the published crate by a dependent never has: there the module and
//! every call into it are absent. No Cargo feature turns them on. Hidden from the
//! documentation; not a stable API.
//!
//! - [`counters`]: process-wide counts of events that leave no trace in the output.
//! - [`memory`]: the sizes of a thread's state, its storage and its thread-locals.
//! - [`snapshot`]: a stand-in file in place of the VMClock device, and switching the
//!   counter every read compares with.
//! - `keystream`: a read-only view of an `FkeRng`'s state (`FkeRng::inspect`) for the
//!   differential unit tests and fuzz target.
//! - `entropy` (unit tests only): the one fake OS source.
//! - `lifecycle` (unit tests only): a thread's state without wipe-on-fork, a look at what it
//!   would serve next, the check of every release at thread exit, and the fork helper.

#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod counters;
#[cfg(all(test, feature = "std"))]
pub(crate) mod entropy;
pub(crate) mod keystream;
#[cfg(all(test, feature = "std"))]
pub(crate) mod lifecycle;
#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod memory;
#[cfg(all(feature = "std", any(test, fkrng_test_hooks)))]
pub mod snapshot;
