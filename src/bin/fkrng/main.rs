//! `fkrng`: random bytes from the command line, like `openssl rand`.
//!
//! ```text
//! fkrng --hex 32          # 64 hex digits and a newline
//! fkrng --base64 48       # 64 base64 characters and a newline
//! fkrng --raw 1GiB > f    # raw bytes
//! fkrng --raw | head -c 100   # raw bytes until stdout closes
//! ```
//!
//! Exit status: 0 on success (also when the reader closes the pipe early), 1 when the OS
//! random source or the output fails, 2 for bad arguments.

mod args;
mod size;

use args::Format;
use base64::Engine as _;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::process::ExitCode;

/// Random bytes written in chunks of this many raw bytes (a multiple of 3 for base64 and
/// of 64 for the generator's direct path).
const CHUNK: usize = 768 * 1024;

fn main() -> ExitCode {
    let request = args::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    match run(request.format, request.count) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fkrng: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `count` random bytes (forever when `None`) in `format` to stdout, using one
/// fixed buffer for the whole run.
fn run(format: Format, count: Option<u64>) -> io::Result<()> {
    // Unbuffered: a duplicate of fd 1, so chunks go out in one write each, with no
    // line-buffering copy in between.
    let mut out = std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?);
    let mut random = vec![0u8; CHUNK];
    let mut text = vec![0u8; CHUNK * 2];
    let mut left = count;
    loop {
        let n = match left {
            Some(0) => break,
            Some(l) => usize::try_from(l.min(CHUNK as u64)).expect("CHUNK fits"),
            None => CHUNK,
        };
        let random = &mut random[..n];
        fkrng::try_fill(random)?;
        match format {
            Format::Raw => out.write_all(random)?,
            Format::Hex => {
                let text = &mut text[..2 * n];
                hex::encode_to_slice(&*random, text).expect("2 digits per byte");
                out.write_all(text)?;
            }
            Format::Base64 => {
                let len = base64::engine::general_purpose::STANDARD
                    .encode_slice(&*random, &mut text)
                    .expect("text buffer holds 4/3 of a chunk");
                out.write_all(&text[..len])?;
            }
        }
        if let Some(l) = left.as_mut() {
            *l -= n as u64;
        }
    }
    random.fill(0);
    if !matches!(format, Format::Raw) {
        out.write_all(b"\n")?;
    }
    Ok(())
}
