//! Tells the keystream code which optimisation level it is compiled at, which no `cfg`
//! shows: the stack depth of a keystream computation, and so the area zeroed below it
//! (`src/keystream/scrub.rs`) and the choice of the small-stack code
//! (`src/keystream/small_stack.rs`), depend on it. Cargo gives build scripts the level in
//! `OPT_LEVEL`, with the package's profile settings (`[profile.*.package.fkrng]`) applied;
//! it becomes `--cfg fkrng_opt_level="…"` (`0`, `1`, `2`, `3`, `s` or `z`). A build that sets
//! no such variable (another build system) gets no cfg, and the library takes the choice
//! that is safe at every level.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=OPT_LEVEL");
    if let Ok(level) = std::env::var("OPT_LEVEL")
        && ["0", "1", "2", "3", "s", "z"].contains(&level.as_str())
    {
        println!("cargo::rustc-cfg=fkrng_opt_level=\"{level}\"");
    }
}
