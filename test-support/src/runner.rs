//! Commands that run a test's own binaries on the architecture under test.
//!
//! Cross-architecture runs (scripts/platforms.sh) set `FKRNG_TEST_RUNNER` to an emulator
//! and its arguments, such as `qemu-aarch64 -L /usr/aarch64-linux-gnu`; a test that starts
//! one of the built binaries itself (a tool, or its own binary again) must start it through
//! that emulator. Natively the variable is unset and the binary runs directly.

use std::ffi::OsStr;
use std::process::Command;

/// The emulator command line from `FKRNG_TEST_RUNNER`, empty when it is unset.
pub fn emulator() -> String {
    std::env::var("FKRNG_TEST_RUNNER").unwrap_or_default()
}

/// A command that runs the binary `exe`: through the emulator `FKRNG_TEST_RUNNER` names
/// (its first word the program, the rest its arguments, then `exe`), or directly.
pub fn command(exe: impl AsRef<OsStr>) -> Command {
    let emulator = emulator();
    let mut words = emulator.split_whitespace();
    match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(exe);
            command
        }
        None => Command::new(exe),
    }
}

/// Whether this run must find the vDSO's `getrandom` (which fkrng uses for new threads'
/// first seeds): x86-64 Linux 6.11 or later, run natively. Emulators and
/// valgrind present vDSO images of their own, without it.
pub fn vdso_getrandom_expected() -> bool {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return false;
    }
    let under_tool = !emulator().is_empty()
        || std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("vgpreload"));
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut numbers = release.split(|c: char| !c.is_ascii_digit());
    let mut number = || numbers.next().and_then(|n| n.parse::<u32>().ok());
    !under_tool && (number(), number()) >= (Some(6), Some(11))
}
