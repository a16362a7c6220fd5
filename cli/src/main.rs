//! `fkrng`: random bytes from the command line, like `openssl rand`.
//!
//! ```text
//! fkrng 32                # hex to a terminal or a pipe (K=$(fkrng 32)), raw bytes to a file
//! fkrng 32 > key.bin      # 32 raw bytes, as openssl rand 32 writes them
//! fkrng --hex 32          # 64 hex digits and a newline (also: fkrng -hex 32)
//! fkrng --base64 48       # 64 base64 characters and a newline
//! fkrng --base64url 32    # 43 URL-safe base64 characters (no padding) and a newline
//! fkrng --raw | head -c 100   # raw bytes until stdout closes
//! fkrng --raw --out key.bin 32   # as > key.bin opens it; a new file gets mode 0600
//! ```
//!
//! Exit status: 0 on success (also when the reader closes the pipe of an endless `--raw`,
//! and with stdout on `/dev/null`), 1 when the OS random source or the output fails (also
//! when a COUNT cannot be delivered whole because the reader went, and when stdout was
//! closed at start), 2 for bad arguments (also raw bytes for a terminal).

mod args;
mod file;
mod interrupt;
mod output;
mod size;

use args::{Command, Format, Request};
use base64::Engine as _;
use output::Kind;
use std::io::{self, Write};
use std::process::ExitCode;
use zeroize::Zeroize;

/// Random bytes written in chunks of this many raw bytes (a multiple of 3, so that base64
/// pads only the last chunk, and of 64 for the generator's direct path).
const CHUNK: usize = 768 * 1024;

/// Why a run failed: bad arguments (status 2) or a failed output or random source (1).
enum Failure {
    Usage(args::Error),
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

fn main() -> ExitCode {
    // A write past the file-size limit (`ulimit -f`) fails with `EFBIG` and ends the run by
    // that error, which names the file and removes a new one, instead of SIGXFSZ killing
    // the run with the file half written.
    // SAFETY: sets SIGXFSZ's disposition to ignore; no handler is installed.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let result = args::parse_from(std::env::args_os())
        .map_err(Failure::Usage)
        .and_then(run);
    // The message is written as well as stderr allows (a full or closed stderr does not
    // change the status).
    let (status, message) = match result {
        Ok(()) => return ExitCode::SUCCESS,
        Err(Failure::Io(e)) => (ExitCode::FAILURE, format!("fkrng: {e}\n")),
        Err(Failure::Usage(e)) => (ExitCode::from(2), e.render()),
    };
    let _ = io::stderr().write_all(message.as_bytes());
    status
}

/// Carries out `command`: prints the text, or writes the random bytes to `--out`'s file or
/// to stdout in the format [`format_for`] chooses. A reader that closes the pipe ends an
/// endless stream successfully; a COUNT that was not delivered whole is an error.
fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Print(text) => {
            let mut out = output::Stdout::open().map_err(output::stdout_error)?;
            out.write_all(text.as_bytes())?;
        }
        Command::Write(Request {
            format,
            format_given,
            count,
            out,
        }) => match out.map_or(Ok(file::Target::Stdout), |path| file::open(&path))? {
            file::Target::Stdout => {
                let mut out = output::Stdout::open().map_err(output::stdout_error)?;
                let format = format_for(format, format_given, out.kind())?;
                match stream(format, count, &mut out, &mut Buffers::new()) {
                    Err(e) if count.is_none() && e.kind() == io::ErrorKind::BrokenPipe => {}
                    written => written?,
                }
            }
            file::Target::File(mut out) => {
                let format = format_for(format, format_given, out.kind())?;
                stream(format, count, &mut out, &mut Buffers::new())?;
                out.commit();
            }
        },
    }
    Ok(())
}

/// The format to write to an output of `kind`: `format` when it was `given`; without a
/// format flag, raw bytes to a regular file (as `openssl rand` writes there) and hex to
/// anything else, so that a pipe or a shell variable gets text that no NUL byte or
/// trailing newline can shorten. Raw bytes are never written to a terminal.
fn format_for(format: Format, given: bool, kind: Kind) -> Result<Format, Failure> {
    let format = match kind {
        _ if given => format,
        Kind::File => Format::Raw,
        Kind::Terminal | Kind::Other => Format::Hex,
    };
    if format == Format::Raw && kind == Kind::Terminal {
        return Err(Failure::Usage(args::Error::raw_to_terminal()));
    }
    Ok(format)
}

/// The two buffers of a run: `CHUNK` random bytes and their text form (hex needs two
/// characters per byte). Both are zeroed after each write and again when dropped.
struct Buffers {
    random: Vec<u8>,
    text: Vec<u8>,
}

impl Buffers {
    fn new() -> Self {
        Self {
            random: vec![0u8; CHUNK],
            text: vec![0u8; CHUNK * 2],
        }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        self.random.zeroize();
        self.text.zeroize();
    }
}

/// Writes `count` random bytes (forever when `None`) in `format` to `out`, using the
/// fixed `buffers` for the whole run. Text formats end with a newline unless `count` is 0
/// (nothing at all is written then, as `openssl rand -hex 0` does).
///
/// Every chunk's random bytes and text are zeroed right after their write, whether it
/// succeeded or failed.
///
/// # Errors
/// The OS random source's error ([`fkrng::Error`], whose message names the source) or the
/// write's error (which `out` words as its own, naming stdout or the file).
fn stream(
    format: Format,
    count: Option<u64>,
    out: &mut impl Write,
    buffers: &mut Buffers,
) -> io::Result<()> {
    let mut left = count;
    loop {
        let n = match left {
            Some(0) => break,
            Some(l) => usize::try_from(l.min(CHUNK as u64)).expect("CHUNK fits"),
            None => CHUNK,
        };
        let random = &mut buffers.random[..n];
        let written =
            fkrng::try_fill(random)
                .map_err(io::Error::other)
                .and_then(|()| match format {
                    Format::Raw => out.write_all(random),
                    Format::Hex => {
                        let text = &mut buffers.text[..2 * n];
                        hex::encode_to_slice(&*random, text).expect("2 digits per byte");
                        let written = out.write_all(text);
                        text.zeroize();
                        written
                    }
                    Format::Base64 | Format::Base64Url => {
                        let engine = if format == Format::Base64 {
                            &base64::engine::general_purpose::STANDARD
                        } else {
                            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                        };
                        let len = engine
                            .encode_slice(&*random, &mut buffers.text)
                            .expect("text buffer holds 4/3 of a chunk");
                        let text = &mut buffers.text[..len];
                        let written = out.write_all(text);
                        text.zeroize();
                        written
                    }
                });
        random.zeroize();
        written?;
        if let Some(l) = left.as_mut() {
            *l -= n as u64;
        }
    }
    if format != Format::Raw && count != Some(0) {
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that keeps what it is given and fails after `fail_after` bytes.
    struct Sink {
        got: Vec<u8>,
        fail_after: usize,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.got.len() >= self.fail_after {
                return Err(io::Error::other("sink full"));
            }
            let n = buf.len().min(self.fail_after - self.got.len());
            self.got.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// After every run, also one whose write fails halfway through a chunk, both buffers
    /// hold only zeros, while what was written was not zero.
    #[test]
    fn buffers_are_zeroed_after_writes_and_failed_writes() {
        for format in [Format::Hex, Format::Base64, Format::Base64Url, Format::Raw] {
            for (count, fail_after) in [(1000u64, usize::MAX), (2 * CHUNK as u64, 1 << 20)] {
                let mut sink = Sink {
                    got: Vec::new(),
                    fail_after,
                };
                let mut buffers = Buffers::new();
                let result = stream(format, Some(count), &mut sink, &mut buffers);
                assert_eq!(result.is_err(), fail_after != usize::MAX, "{format:?}");
                assert!(sink.got.iter().filter(|&&b| b != 0).count() > sink.got.len() / 2);
                assert!(
                    buffers.random.iter().all(|&b| b == 0),
                    "{format:?} {count}: random bytes left in the buffer"
                );
                assert!(
                    buffers.text.iter().all(|&b| b == 0),
                    "{format:?} {count}: text left in the buffer"
                );
            }
        }
    }

    #[test]
    fn count_zero_writes_nothing() {
        for format in [Format::Hex, Format::Base64, Format::Base64Url, Format::Raw] {
            let mut sink = Sink {
                got: Vec::new(),
                fail_after: usize::MAX,
            };
            stream(format, Some(0), &mut sink, &mut Buffers::new()).unwrap();
            assert!(sink.got.is_empty(), "{format:?}");
        }
    }
}
