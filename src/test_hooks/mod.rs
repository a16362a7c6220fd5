//! Test hooks, in one home: what the tests, benchmarks and fuzz targets of this repository
//! need to see or steer inside the library, and nothing a user of the crate gets.
//!
//! Compiled only with `cfg(test)` (the unit tests), `cfg(fuzzing)` (set by `cargo fuzz`) or
//! the `test-hooks` feature, which this repository's test command turns on
//! (`cargo test --workspace --all-features`) and its scripts name where they build tests,
//! benchmarks or measurement programs. The tool as README's run command or
//! `cargo install --path cli` builds it, and every dependent's build that does not name the
//! feature, has neither the module nor any call into it. Hidden from the documentation;
//! not a stable API, and not for shipped builds: some hooks are steered by environment
//! variables (a stand-in file for the VMClock device).
//!
//! - [`counters`]: process-wide counts of events that leave no trace in the output.
//! - [`memory`]: the sizes of a thread's state, its storage and its thread-locals.
//! - [`os`]: the OS source as a new thread's first seed reads it (the vDSO where used).
//! - [`snapshot`]: a stand-in file in place of the VMClock device, and switching the
//!   counter every read compares with.
//! - `keystream`: a read-only view of an `FkeRng`'s state (`FkeRng::inspect`) for the
//!   differential unit tests and fuzz target.
//! - `entropy` (unit tests only): the one fake OS source.
//! - `lifecycle` (unit tests only): a thread's state without wipe-on-fork, a look at what it
//!   would serve next, the check of every release at thread exit, and the fork helper.
//! - `reads` (unit tests only): a hook that runs inside a read, as a signal handler would.

#[cfg(all(feature = "std", any(test, feature = "test-hooks")))]
pub mod counters;
#[cfg(all(test, feature = "std"))]
pub(crate) mod entropy;
pub(crate) mod keystream;
#[cfg(all(test, feature = "std"))]
pub(crate) mod lifecycle;
#[cfg(all(feature = "std", any(test, feature = "test-hooks")))]
pub mod memory;
#[cfg(all(feature = "std", any(test, feature = "test-hooks")))]
pub mod os;
#[cfg(all(test, feature = "std"))]
pub(crate) mod reads;
#[cfg(all(feature = "std", any(test, feature = "test-hooks")))]
pub mod snapshot;
