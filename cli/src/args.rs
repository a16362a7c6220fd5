//! The command line: flags, COUNT, and the checks that clap's derive cannot express.
//!
//! Parsing is a function of the argument list ([`parse_from`]) so that tests and the fuzz
//! target `fuzz/fuzz_targets/cli_args.rs` can drive it without running the tool.
//!
//! Rules beyond clap's own:
//! - openssl's single-dash spellings `-hex`, `-base64`, `-raw` and `-out` are aliases of
//!   the double-dash flags (so `fkrng -hex 32` does what `openssl rand -hex 32` does);
//!   openssl's other options (`-rand`, `-writerand`, `-engine`, `-provider`,
//!   `-provider-path`, `-propquery`), with one dash or two, are an error that says so;
//! - `--out` needs a COUNT (a file is not filled without end) and a format flag
//!   (`openssl rand -out` writes raw bytes; here the user says which);
//! - without a format flag the request says so ([`Request::format_given`]): the caller
//!   writes raw bytes to a regular file and hex to anything else;
//! - `--help` and `--version` print to stdout only when they are the whole command line;
//!   with anything else (`fkrng -h 32`, `fkrng -hx 32`) they are an error;
//! - an argument that starts with a dash look-alike (an em dash from a word processor) is an
//!   error that names the flag it probably meant;
//! - every error is one line of message, the usage line and a pointer to `--help`.

use clap::{ArgGroup, CommandFactory, Parser};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "fkrng",
    version,
    about = "Write cryptographically secure random bytes (fast-key-erasure ChaCha20).",
    after_help = "COUNT is a whole number of bytes, optionally with a suffix read as GNU head \
                  and dd read it: K, k or KiB = 1024 and KB or kB = 1000 bytes; likewise \
                  M/MiB/MB, G/GiB/GB, T/TiB/TB, P/PiB/PB and E/EiB/EB; B = 1 byte. A COUNT of \
                  0 writes nothing.\n\n\
                  Without a format flag, fkrng writes raw bytes to a regular file, as \
                  openssl rand does (fkrng 32 > key.bin), and hex to anything else: a \
                  terminal, a pipe, $(fkrng 32). Raw bytes are never written to a terminal.\n\n\
                  --out FILE opens FILE as a shell's > FILE does, under the kernel's rules \
                  for links and sticky directories: an existing file is truncated and \
                  written in place, keeping its inode, owner, group, mode, ACLs and hard \
                  links; a new one is created exclusively (O_CREAT|O_EXCL) with mode 0600 \
                  and removed again if the run fails or SIGINT, SIGTERM, SIGHUP or SIGQUIT \
                  ends it before it is complete. A symbolic link to a missing file is \
                  refused. --out - is stdout, and so is a FILE that is the file stdout is on \
                  (/dev/stdout; likewise stderr): it is written through that descriptor, as \
                  a shell redirection would, keeping what is around it. --out needs a COUNT \
                  and a format flag.\n\n\
                  openssl's spellings -hex, -base64, -raw and -out work too; its -rand, \
                  -writerand, -engine, -provider, -provider-path and -propquery are refused. \
                  --help and --version work only alone.\n\n\
                  Exit status: 0 on success, also when the reader closes the pipe of an \
                  endless --raw and when stdout is /dev/null opened for writing; 1 when \
                  the OS random source or the output fails: a COUNT that the reader did not \
                  take whole (fkrng --raw 4MiB | head -c 100), a stdout that was closed when \
                  fkrng started (\"Bad file descriptor\"), a FILE that cannot be written; 2 \
                  for bad arguments and raw bytes to a terminal.",
    disable_help_flag = true,
    disable_version_flag = true,
    group(ArgGroup::new("format").args(["hex", "base64", "base64url", "raw"]).multiple(false))
)]
struct Args {
    /// Lowercase hexadecimal (two digits per byte), then a newline.
    #[arg(long)]
    hex: bool,
    /// Standard base64 with padding, on one line, then a newline.
    #[arg(long)]
    base64: bool,
    /// URL-safe base64 (- and _ for + and /) without padding, then a newline.
    #[arg(long)]
    base64url: bool,
    /// Raw bytes (never to a terminal). Without COUNT, writes until stdout is closed.
    #[arg(long)]
    raw: bool,
    /// Write to FILE (as > FILE opens it; a new one gets mode 0600) instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print help (only as the sole argument).
    #[arg(short, long)]
    help: bool,
    /// Print the version (only as the sole argument).
    #[arg(short = 'V', long)]
    version: bool,
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
    /// URL-safe base64 (`-` and `_` for `+` and `/`) without padding, then a newline.
    Base64Url,
    /// The bytes themselves.
    Raw,
}

impl Format {
    /// The flag that asks for this format.
    pub fn flag(self) -> &'static str {
        match self {
            Self::Hex => "--hex",
            Self::Base64 => "--base64",
            Self::Base64Url => "--base64url",
            Self::Raw => "--raw",
        }
    }
}

/// What the command line asks for: a format, a byte count (`None`: raw until stdout
/// closes) and where to write.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    /// The format given, or [`Format::Hex`] when none was.
    pub format: Format,
    /// Whether a format flag was given; without one, the output decides (see the module
    /// documentation).
    pub format_given: bool,
    pub count: Option<u64>,
    /// `--out FILE`: the file to write instead of stdout (always with a COUNT and a format).
    pub out: Option<PathBuf>,
}

/// What to do: write random bytes, or print the help or version text.
#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    /// Write random bytes.
    Write(Request),
    /// Print this text (the help or the version) to stdout and exit with 0.
    Print(String),
}

/// A bad command line: one line of message; [`Error::render`] adds the usage line and the
/// pointer to `--help`.
#[derive(Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// Raw bytes asked for and a terminal to write them to.
    #[allow(dead_code)]
    pub fn raw_to_terminal() -> Self {
        Self::new(
            "raw bytes are not written to a terminal; say --hex or --base64, or send the \
             output to a file or pipe",
        )
    }

    /// The message alone (one line, no "error: " prefix), for tests and the fuzz target.
    #[allow(dead_code)]
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The whole text for stderr: `error: <message>`, the usage line and the `--help`
    /// pointer, each followed by a blank line as clap lays them out.
    pub fn render(&self) -> String {
        let usage = Args::command().render_usage().to_string();
        format!(
            "error: {}\n\n{}\n\nFor more information, try '--help'.\n",
            self.message,
            usage.trim_end()
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// openssl's single-dash spellings and the flags they stand for.
const OPENSSL_ALIASES: [(&str, &str); 5] = [
    ("-hex", "--hex"),
    ("-base64", "--base64"),
    ("-raw", "--raw"),
    ("-out", "--out"),
    ("-help", "--help"),
];

/// `openssl rand` options this tool does not have: it seeds from the OS alone and has one
/// generator.
const OPENSSL_ONLY: [&str; 6] = [
    "rand",
    "writerand",
    "engine",
    "provider",
    "provider-path",
    "propquery",
];

/// An error for one of openssl's options this tool lacks (`-rand`, `--engine`,
/// `--provider=x`, ...), or `None`.
fn openssl_only(arg: &OsStr) -> Option<Error> {
    let text = arg.to_str()?;
    let name = text.strip_prefix("--").or_else(|| text.strip_prefix('-'))?;
    let name = name.split_once('=').map_or(name, |(n, _)| n);
    OPENSSL_ONLY
        .contains(&name)
        .then(|| Error::new(format!("openssl's -{name} is not supported")))
}

/// Characters that look like a hyphen-minus but are not one: what word processors and some
/// keyboards put in place of `-` or `--`.
const DASH_LOOKALIKES: [(char, &str); 8] = [
    ('\u{2010}', "a hyphen (U+2010)"),
    ('\u{2011}', "a non-breaking hyphen (U+2011)"),
    ('\u{2012}', "a figure dash (U+2012)"),
    ('\u{2013}', "an en dash (U+2013)"),
    ('\u{2014}', "an em dash (U+2014)"),
    ('\u{2015}', "a horizontal bar (U+2015)"),
    ('\u{2212}', "a minus sign (U+2212)"),
    ('\u{FE63}', "a small hyphen-minus (U+FE63)"),
];

/// The flag names an argument may have meant, for hints.
const FLAG_NAMES: [&str; 7] = [
    "hex",
    "base64",
    "base64url",
    "raw",
    "out",
    "help",
    "version",
];

/// An error for an argument that begins with a dash look-alike, naming the flag it meant
/// (or the `--` form in general), or `None` for an ordinary argument.
fn lookalike_dash(arg: &OsStr) -> Option<Error> {
    let text = arg.to_str()?;
    let first = text.chars().next()?;
    let (_, what) = DASH_LOOKALIKES.iter().find(|(c, _)| *c == first)?;
    let name =
        text.trim_start_matches(|c: char| c == '-' || DASH_LOOKALIKES.iter().any(|d| d.0 == c));
    let hint = if FLAG_NAMES.contains(&name) {
        format!("did you mean '--{name}'?")
    } else {
        "options begin with two ASCII hyphens, as in '--hex'".to_owned()
    };
    Some(Error::new(format!(
        "'{}' begins with {what}, not '-'; {hint}",
        one_line(text)
    )))
}

/// `text` for a one-line message: control characters (a newline, an escape) written as
/// Rust escapes (`\n`, `\u{1b}`), everything else as it is.
pub fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The argument list with openssl's aliases replaced by the flags they stand for (up to a
/// `--`, after which arguments are taken as they are).
fn expand_aliases(args: impl IntoIterator<Item = OsString>) -> Result<Vec<OsString>, Error> {
    let mut out = Vec::new();
    let mut options_end = false;
    for (i, arg) in args.into_iter().enumerate() {
        if i > 0 && !options_end {
            if arg == "--" {
                options_end = true;
            } else if let Some(e) = openssl_only(&arg) {
                return Err(e);
            } else if let Some(&(_, flag)) = OPENSSL_ALIASES.iter().find(|(a, _)| arg == *a) {
                out.push(flag.into());
                continue;
            } else if let Some(file) = arg.to_str().and_then(|a| a.strip_prefix("-out=")) {
                out.push(format!("--out={file}").into());
                continue;
            } else if let Some(e) = lookalike_dash(&arg) {
                return Err(e);
            } else if arg
                .to_str()
                .and_then(|a| a.strip_prefix('-'))
                .is_some_and(|d| d.starts_with(|c: char| c.is_ascii_digit()))
            {
                return Err(Error::new(format!(
                    "invalid COUNT '{}': a count cannot be negative",
                    one_line(&arg.to_string_lossy())
                )));
            }
        }
        out.push(arg);
    }
    Ok(out)
}

/// One line from clap's error text: its message with any tip appended.
fn from_clap(e: &clap::Error) -> Error {
    let text = e.to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut message = lines
        .next()
        .unwrap_or("bad command line")
        .trim_start_matches("error: ")
        .to_owned();
    for tip in lines.filter_map(|l| l.strip_prefix("tip: ")) {
        message.push_str("; ");
        message.push_str(tip);
    }
    Error::new(message)
}

/// Parses an argument list whose first item is the program name.
///
/// # Errors
/// [`Error`] for unknown flags and openssl's options this tool lacks, two formats, a bad
/// COUNT, a missing COUNT with a text format or `--out`, `--out` without a format, `--help`
/// or `--version` together with other arguments, and arguments that begin with a dash
/// look-alike.
pub fn parse_from<I, T>(args: I) -> Result<Command, Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = expand_aliases(args.into_iter().map(Into::into))?;
    let given = args.len().saturating_sub(1);
    let args = Args::try_parse_from(&args).map_err(|e| {
        // clap quotes arguments as they are; a control character in one (a newline) would
        // break the one-line message.
        let control = |a: &OsString| a.to_str().is_some_and(|t| t.chars().any(char::is_control));
        if !args.iter().any(control) {
            return from_clap(&e);
        }
        // A bad COUNT: the parser's own message, which quotes the text escaped.
        if e.kind() == clap::error::ErrorKind::ValueValidation
            && let Some(why) = std::error::Error::source(&e)
        {
            return Error::new(format!("invalid COUNT: {why}"));
        }
        // Otherwise clap's message for the list with the characters escaped (the same
        // error, unless escaping cured it).
        let escaped = args.iter().map(|a| match a.to_str() {
            Some(text) => OsString::from(one_line(text)),
            None => a.clone(),
        });
        from_clap(&Args::try_parse_from(escaped).err().unwrap_or(e))
    })?;
    if args.help || args.version {
        let flag = if args.help { "--help" } else { "--version" };
        if given != 1 || (args.help && args.version) {
            return Err(Error::new(format!(
                "{flag} takes no other arguments; run 'fkrng {flag}' alone"
            )));
        }
        let mut command = Args::command();
        let text = if args.help {
            command.render_help().to_string()
        } else {
            // The version, then the keystream path this CPU gets, for bug reports.
            format!(
                "{}keystream: {}\n",
                command.render_version(),
                fkrng::keystream_path()
            )
        };
        return Ok(Command::Print(text));
    }
    let format = if args.raw {
        Format::Raw
    } else if args.base64 {
        Format::Base64
    } else if args.base64url {
        Format::Base64Url
    } else {
        Format::Hex
    };
    let format_given = args.hex || args.base64 || args.base64url || args.raw;
    if args.out.is_some() {
        if args.count.is_none() {
            return Err(Error::new(
                "--out needs a COUNT: a file is not filled without end, e.g. 'fkrng --raw \
                 --out key.bin 32'",
            ));
        }
        if !format_given {
            return Err(Error::new(
                "--out needs a format: --raw for raw bytes (what openssl rand -out writes) \
                 or --hex",
            ));
        }
    }
    if args.count.is_none() && format != Format::Raw {
        let message = if format_given {
            let flag = format.flag();
            format!("{flag} needs a COUNT: how many random bytes, e.g. 'fkrng {flag} 32'")
        } else {
            "missing COUNT: how many random bytes to write, e.g. 'fkrng 32'".to_owned()
        };
        return Err(Error::new(message));
    }
    Ok(Command::Write(Request {
        format,
        format_given,
        count: args.count,
        out: args.out,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Command, Error> {
        parse_from(std::iter::once("fkrng").chain(a.iter().copied()))
    }

    /// A request with the format given and no `--out`.
    fn write(format: Format, count: Option<u64>) -> Result<Command, Error> {
        Ok(Command::Write(Request {
            format,
            format_given: true,
            count,
            out: None,
        }))
    }

    #[test]
    fn formats_and_counts() {
        assert_eq!(
            parse(&["32"]),
            Ok(Command::Write(Request {
                format: Format::Hex,
                format_given: false,
                count: Some(32),
                out: None,
            }))
        );
        assert_eq!(parse(&["--hex", "32"]), write(Format::Hex, Some(32)));
        assert_eq!(
            parse(&["--base64", "1KiB"]),
            write(Format::Base64, Some(1024))
        );
        assert_eq!(
            parse(&["--base64url", "32"]),
            write(Format::Base64Url, Some(32))
        );
        assert_eq!(parse(&["--raw"]), write(Format::Raw, None));
        assert_eq!(parse(&["--raw", "--", "8"]), write(Format::Raw, Some(8)));
    }

    #[test]
    fn openssl_spellings_are_aliases() {
        assert_eq!(parse(&["-hex", "32"]), write(Format::Hex, Some(32)));
        assert_eq!(parse(&["-base64", "32"]), write(Format::Base64, Some(32)));
        assert_eq!(parse(&["-raw", "4"]), write(Format::Raw, Some(4)));
        assert_eq!(parse(&["32", "-hex"]), write(Format::Hex, Some(32)));
    }

    #[test]
    fn out_takes_a_file_with_one_or_two_dashes() {
        for args in [
            &["-out", "k.bin", "--raw", "32"][..],
            &["--out", "k.bin", "--raw", "32"],
            &["--out=k.bin", "-raw", "32"],
            &["-out=k.bin", "-raw", "32"],
            &["--raw", "32", "-out", "k.bin"],
        ] {
            assert_eq!(
                parse(args),
                Ok(Command::Write(Request {
                    format: Format::Raw,
                    format_given: true,
                    count: Some(32),
                    out: Some(PathBuf::from("k.bin")),
                })),
                "{args:?}"
            );
        }
        let hex = parse(&["--hex", "--out", "k.txt", "16"]);
        assert!(
            matches!(&hex, Ok(Command::Write(r)) if r.format == Format::Hex && r.out.is_some()),
            "{hex:?}"
        );
    }

    #[test]
    fn out_needs_a_count_and_a_format() {
        let e = parse(&["--raw", "--out", "k.bin"]).unwrap_err();
        assert!(e.message().starts_with("--out needs a COUNT"), "{e}");
        let e = parse(&["--out", "k.bin", "32"]).unwrap_err();
        assert!(e.message().starts_with("--out needs a format"), "{e}");
        assert!(
            e.message().contains("--raw") && e.message().contains("--hex"),
            "{e}"
        );
        let e = parse(&["-out", "k.bin"]).unwrap_err();
        assert!(e.message().starts_with("--out needs a COUNT"), "{e}");
    }

    #[test]
    fn openssl_only_options_say_so() {
        for (arg, name) in [
            ("-rand", "rand"),
            ("--rand", "rand"),
            ("-writerand", "writerand"),
            ("-engine", "engine"),
            ("-provider", "provider"),
            ("--provider=default", "provider"),
            ("-provider-path", "provider-path"),
            ("-propquery", "propquery"),
        ] {
            let e = parse(&["--raw", arg, "x", "32"]).unwrap_err();
            assert_eq!(
                e.message(),
                format!("openssl's -{name} is not supported"),
                "{arg}"
            );
        }
        // After `--` they are arguments, and so a bad COUNT.
        let e = parse(&["--raw", "--", "-rand"]).unwrap_err();
        assert!(e.message().contains("-rand"), "{e}");
        assert!(!e.message().contains("openssl"), "{e}");
    }

    #[test]
    fn help_and_version_only_alone() {
        for alone in ["--help", "-h", "-help"] {
            let Ok(Command::Print(text)) = parse(&[alone]) else {
                panic!("{alone} alone is not help");
            };
            assert!(text.contains("Usage: fkrng"), "{alone}: {text}");
        }
        for alone in ["--version", "-V"] {
            let Ok(Command::Print(text)) = parse(&[alone]) else {
                panic!("{alone} alone is not the version");
            };
            assert_eq!(
                text,
                format!(
                    "fkrng {}\nkeystream: {}\n",
                    env!("CARGO_PKG_VERSION"),
                    fkrng::keystream_path()
                )
            );
        }
        for bad in [
            &["-h", "32"][..],
            &["-hx", "32"],
            &["--help", "--hex", "32"],
            &["32", "--help"],
            &["-V", "32"],
            &["--version", "--raw"],
            &["-hV"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn dash_lookalikes_name_the_flag() {
        let e = parse(&["\u{2014}hex", "32"]).unwrap_err();
        assert!(
            e.message().contains("em dash") && e.message().contains("'--hex'"),
            "{e}"
        );
        let e = parse(&["\u{2013}\u{2013}base64", "32"]).unwrap_err();
        assert!(
            e.message().contains("en dash") && e.message().contains("'--base64'"),
            "{e}"
        );
        let e = parse(&["32", "\u{2014}frob"]).unwrap_err();
        assert!(e.message().contains("two ASCII hyphens"), "{e}");
    }

    #[test]
    fn missing_count_names_only_given_flags() {
        let e = parse(&[]).unwrap_err();
        assert!(e.message().contains("COUNT"), "{e}");
        assert!(!e.message().contains("--"), "names a flag not given: {e}");
        for flag in ["--hex", "--base64", "--base64url"] {
            let e = parse(&[flag]).unwrap_err();
            assert!(e.message().starts_with(&format!("{flag} ")), "{e}");
        }
    }

    #[test]
    fn errors_are_one_message_line() {
        for bad in [
            &["--hex", "--raw", "4"][..],
            &["--nope"],
            &["--hx", "4"],
            &["1.5"],
            &["-4"],
            &["--hex", "--", "-4"],
            &["8", "9"],
            &["--hex=4"],
            &["-rand", "f", "32"],
            &["--out", "f", "32"],
            &["--out", "f", "--raw"],
        ] {
            let e = parse(bad).unwrap_err();
            assert!(
                !e.message().is_empty() && !e.message().contains('\n'),
                "{bad:?}: {e:?}"
            );
            let text = e.render();
            let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
            assert_eq!(lines.len(), 3, "{bad:?}: {text}");
            assert!(lines[0].starts_with("error: "), "{bad:?}: {text}");
            assert!(lines[1].starts_with("Usage: fkrng"), "{bad:?}: {text}");
            assert_eq!(lines[2], "For more information, try '--help'.");
        }
    }
}
