//! Generating AEAD nonces with fkrng: sizes, per-key limits, forks and snapshots.
//!
//! This module holds documentation only (the text of `docs/NONCES.md`); its examples run as
//! doctests.
#![doc = include_str!("../docs/NONCES.md")]
