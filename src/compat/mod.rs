//! The `rand_core` trait implementations of [`FkeRng`](crate::FkeRng) and `ThreadRng`, one
//! file per `rand_core` generation: 0.10 always, and the older generations for crates that
//! have not moved to 0.10 yet.
//!
//! Each older generation is behind its own feature and its own renamed dependency, so a build
//! pulls in only the generations it asks for:
//!
//! | Feature         | `rand_core` | Traits for [`FkeRng`](crate::FkeRng) and `ThreadRng`  |
//! | --------------- | ----------- | ----------------------------------------------------- |
//! | (always)        | 0.10        | `TryRng`, `TryCryptoRng` (so `Rng`, `CryptoRng`)      |
//! | `rand_core_0_9` | 0.9         | `RngCore`, `CryptoRng` (so `TryRngCore`, `TryCryptoRng`) |
//! | `rand_core_0_6` | 0.6         | `RngCore`, `CryptoRng` (so `CryptoRngCore`)           |
//!
//! `FkeRng` also implements each generation's `SeedableRng` with the same 32-byte seed, so
//! `from_seed` gives the same stream whichever generation's trait is used. None of these
//! needs `std`; `ThreadRng` exists only with it.

mod rand_core_010;
#[cfg(feature = "rand_core_0_6")]
mod rand_core_06;
#[cfg(feature = "rand_core_0_9")]
mod rand_core_09;
