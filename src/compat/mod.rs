//! What other crates' traits and hooks see of fkrng: `ThreadRng`, the `rand_core` trait
//! implementations of [`FkeRng`](crate::FkeRng) and `ThreadRng` (0.10 always; 0.9 and 0.6
//! behind their features, each a renamed dependency, with the same 32-byte seed for
//! `SeedableRng`), the `rustls` random source and the `getrandom` custom backend.

#[cfg(feature = "getrandom_backend")]
mod getrandom_backend;
mod rand_core_010;
#[cfg(feature = "rand_core_0_6")]
mod rand_core_06;
#[cfg(feature = "rand_core_0_9")]
mod rand_core_09;
#[cfg(feature = "rustls")]
pub(crate) mod rustls;
#[cfg(feature = "std")]
pub(crate) mod thread_rng;
