//! `rand_core` 0.9: `RngCore` and `CryptoRng` (its blanket implementations add `TryRngCore`
//! and `TryCryptoRng`), and `SeedableRng` for `FkeRng`.

rand_core_impls!(rand_core_09, {}, {});
