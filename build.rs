//! Tells the keystream code which optimisation level it is compiled at, which no `cfg`
//! shows: the stack depth of a keystream computation, and so the area zeroed below it
//! (`src/keystream/scrub.rs`) and the choice of the small-stack code
//! (`src/keystream/small_stack.rs`), depend on it. Cargo gives build scripts the profile's
//! level in `OPT_LEVEL` (with `[profile.*.package.fkrng]` applied) and the flags it adds to
//! every rustc call in `CARGO_ENCODED_RUSTFLAGS` (`RUSTFLAGS`, `build.rustflags`,
//! `target.*.rustflags`), which come after the profile's and so decide: the last `opt-level`
//! (or `-O`) there wins over `OPT_LEVEL`. The level becomes `--cfg fkrng_opt_level="…"`
//! (`0`, `1`, `2`, `3`, `s` or `z`). A build that shows no level, or one not in that list
//! (another build system), gets no cfg, and the library takes the choice that is safe at
//! every level.

const LEVELS: [&str; 6] = ["0", "1", "2", "3", "s", "z"];

/// The last optimisation level set in `flags` (0x1f-separated, as Cargo encodes them):
/// `-C opt-level=L`, `-Copt-level=L`, `--codegen opt-level=L`, `--codegen=opt-level=L`, or
/// `-O` (level 3; the levels 2 and 3 make the same choice).
fn level_in(flags: &str) -> Option<&str> {
    let mut level = None;
    let mut codegen_next = false;
    for flag in flags.split('\x1f') {
        let option = if std::mem::take(&mut codegen_next) {
            Some(flag)
        } else if flag == "-C" || flag == "--codegen" {
            codegen_next = true;
            None
        } else if flag == "-O" {
            level = Some("3");
            None
        } else {
            flag.strip_prefix("-C")
                .or_else(|| flag.strip_prefix("--codegen="))
        };
        if let Some(value) = option.and_then(|o| o.trim().strip_prefix("opt-level=")) {
            level = Some(value);
        }
    }
    level
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=OPT_LEVEL");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let profile = std::env::var("OPT_LEVEL").unwrap_or_default();
    let level = level_in(&flags).unwrap_or(&profile);
    if LEVELS.contains(&level) {
        println!("cargo::rustc-cfg=fkrng_opt_level=\"{level}\"");
    }
}
