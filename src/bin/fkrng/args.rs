//! The command line: flags, COUNT, and the checks that clap's derive cannot express.
//!
//! Parsing is a function of the argument list ([`parse_from`]) so that tests and the fuzz
//! target `fuzz/fuzz_targets/cli_args.rs` can drive it without running the tool.

use clap::{ArgGroup, CommandFactory, FromArgMatches, Parser};
use std::ffi::OsString;

#[derive(Parser, Debug)]
#[command(
    name = "fkrng",
    version,
    about = "Write cryptographically secure random bytes (fast-key-erasure ChaCha20).",
    after_help = "COUNT is a whole number of bytes, optionally with a suffix: KiB, MiB, GiB, TiB \
                  (powers of 1024) or k, M, G, T (powers of 1000). Without a format, --hex is \
                  used. Exit status: 0 on success or when the reader closes the pipe, 1 when \
                  the OS random source or the output fails, 2 for bad arguments.",
    group(ArgGroup::new("format").args(["hex", "base64", "raw"]).multiple(false))
)]
struct Args {
    /// Lowercase hexadecimal (two digits per byte), then a newline.
    #[arg(long)]
    hex: bool,
    /// Standard base64 with padding, on one line, then a newline.
    #[arg(long)]
    base64: bool,
    /// Raw bytes. Without COUNT, writes until stdout is closed.
    #[arg(long)]
    raw: bool,
    /// How many random bytes to produce (required except with --raw).
    #[arg(value_parser = super::size::parse_count)]
    count: Option<u64>,
}

/// How the random bytes are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Two lowercase hex digits per byte, then a newline.
    Hex,
    /// Standard base64 with padding, then a newline.
    Base64,
    /// The bytes themselves.
    Raw,
}

/// What the command line asks for: a format and a byte count (`None`: raw until stdout
/// closes).
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub format: Format,
    pub count: Option<u64>,
}

/// What `--version` prints after the program name: the crate version, then a line naming
/// the keystream path this CPU gets (`keystream: avx512`, `avx2` or `portable`), for bug
/// reports. Built once per process (clap keeps a `'static` string).
fn version() -> &'static str {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{}\nkeystream: {}",
            env!("CARGO_PKG_VERSION"),
            fkrng::keystream_path()
        )
    })
}

/// Parses an argument list whose first item is the program name.
///
/// # Errors
/// A clap error for unknown flags, two formats, a bad COUNT, or a missing COUNT with
/// `--hex`/`--base64`; also for `--help` and `--version`, whose "error" is the text to
/// print (clap's `exit` prints it and exits with 0, or with 2 for real errors).
pub fn parse_from<I, T>(args: I) -> Result<Request, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = Args::command()
        .version(version())
        .try_get_matches_from(args)?;
    let args = Args::from_arg_matches(&matches)?;
    let format = if args.raw {
        Format::Raw
    } else if args.base64 {
        Format::Base64
    } else {
        Format::Hex
    };
    if args.count.is_none() && format != Format::Raw {
        return Err(clap::Error::raw(
            clap::error::ErrorKind::MissingRequiredArgument,
            "COUNT is required with --hex and --base64 (only --raw streams without one)\n",
        )
        .with_cmd(&Args::command()));
    }
    Ok(Request {
        format,
        count: args.count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_counts() {
        let p = |a: &[&str]| parse_from(a.iter().copied());
        assert_eq!(
            p(&["fkrng", "32"]).unwrap(),
            Request {
                format: Format::Hex,
                count: Some(32)
            }
        );
        assert_eq!(
            p(&["fkrng", "--base64", "1KiB"]).unwrap(),
            Request {
                format: Format::Base64,
                count: Some(1024)
            }
        );
        assert_eq!(
            p(&["fkrng", "--raw"]).unwrap(),
            Request {
                format: Format::Raw,
                count: None
            }
        );
    }

    #[test]
    fn bad_command_lines_are_errors() {
        use clap::error::ErrorKind;
        let kind = |a: &[&str]| parse_from(a.iter().copied()).unwrap_err().kind();
        assert_eq!(
            kind(&["fkrng", "--hex"]),
            ErrorKind::MissingRequiredArgument
        );
        assert_eq!(
            kind(&["fkrng", "--hex", "--raw", "4"]),
            ErrorKind::ArgumentConflict
        );
        assert_eq!(kind(&["fkrng", "--nope"]), ErrorKind::UnknownArgument);
        assert_eq!(kind(&["fkrng", "1.5"]), ErrorKind::ValueValidation);
        assert_eq!(kind(&["fkrng", "--help"]), ErrorKind::DisplayHelp);
    }

    #[test]
    fn version_names_the_keystream_path() {
        let e = parse_from(["fkrng", "--version"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(
            e.to_string(),
            format!(
                "fkrng {}\nkeystream: {}\n",
                env!("CARGO_PKG_VERSION"),
                fkrng::keystream_path()
            )
        );
    }
}
