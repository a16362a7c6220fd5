//! Other crates' traits and hooks: `ThreadRng`, the `rand_core` 0.10, 0.9 and 0.6 traits of
//! `FkeRng` and `ThreadRng`, the `rustls` random source and the `getrandom` custom backend.

/// An older `rand_core` generation (crate `$rc`): `RngCore` and `CryptoRng` for `FkeRng` and
/// (with `std`) `ThreadRng`, whose methods panic as `crate::fill` does, and `SeedableRng` for
/// `FkeRng`. The two blocks add items to the `RngCore` implementations.
#[cfg(any(feature = "rand_core_0_6", feature = "rand_core_0_9"))]
macro_rules! rand_core_impls {
    ($rc:ident, { $($fke:tt)* }, { $($thread:tt)* }) => {
        impl $rc::RngCore for crate::FkeRng {
            #[inline]
            fn next_u32(&mut self) -> u32 {
                crate::FkeRng::next_u32(self)
            }
            #[inline]
            fn next_u64(&mut self) -> u64 {
                crate::FkeRng::next_u64(self)
            }
            #[inline]
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                self.fill(dest);
            }
            $($fke)*
        }

        impl $rc::CryptoRng for crate::FkeRng {}

        impl $rc::SeedableRng for crate::FkeRng {
            /// The initial key `K`, 32 bytes: the stream of `rand_core` 0.10's `from_seed`.
            type Seed = [u8; crate::KEY_LEN];

            #[inline]
            fn from_seed(seed: Self::Seed) -> Self {
                <crate::FkeRng as rand_core::SeedableRng>::from_seed(seed)
            }
        }

        #[cfg(feature = "std")]
        impl $rc::RngCore for crate::ThreadRng {
            #[inline]
            #[track_caller]
            fn next_u32(&mut self) -> u32 {
                crate::u32()
            }
            #[inline]
            #[track_caller]
            fn next_u64(&mut self) -> u64 {
                crate::u64()
            }
            #[inline]
            #[track_caller]
            fn fill_bytes(&mut self, dest: &mut [u8]) {
                crate::fill(dest);
            }
            $($thread)*
        }

        #[cfg(feature = "std")]
        impl $rc::CryptoRng for crate::ThreadRng {}
    };
}

#[cfg(feature = "getrandom_backend")]
pub(crate) mod getrandom_backend;
mod rand_core_010;
#[cfg(feature = "rand_core_0_6")]
mod rand_core_06;
// `rand_core` 0.9's blanket implementations add `TryRngCore` and `TryCryptoRng`.
#[cfg(feature = "rand_core_0_9")]
rand_core_impls!(rand_core_09, {}, {});
#[cfg(feature = "rustls")]
pub(crate) mod rustls;
#[cfg(feature = "std")]
pub(crate) mod thread_rng;
