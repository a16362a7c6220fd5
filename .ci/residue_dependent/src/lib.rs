//! Nothing: this crate exists for its test, `tests/residue/` of the repository built as a
//! dependent builds fkrng (see Cargo.toml).
