//! Hooks for the crate's own tests and fuzz targets, compiled only in builds with
//! `cfg(test)`, `cfg(fuzzing)` (set by `cargo fuzz`) or `--cfg fkrng_test_hooks`; no Cargo
//! feature turns them on, so no dependent can enable them in an ordinary build.

mod keystream;
