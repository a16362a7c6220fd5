//! Prints the calling thread's first 32 random bytes as 64 hex digits and a newline: the
//! probe that `scripts/inject-entropy-failures.sh` runs under `strace` fault injection.
//!
//! ```text
//! first_bytes try    # fkrng::try_fill: on an OS failure, one line on stderr and exit 1
//! first_bytes fill   # fkrng::fill: on an OS failure, fill's one-line panic (exit 101)
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut bytes = [0u8; 32];
    match mode.as_str() {
        "try" => {
            if let Err(e) = fkrng::try_fill(&mut bytes) {
                eprintln!("first_bytes: {e}");
                return ExitCode::FAILURE;
            }
        }
        "fill" => fkrng::fill(&mut bytes),
        _ => {
            eprintln!("usage: first_bytes try|fill");
            return ExitCode::from(2);
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    println!("{hex}");
    ExitCode::SUCCESS
}
