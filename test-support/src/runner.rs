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
