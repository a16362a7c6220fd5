//! The CLI's whole command line (cli/src/args.rs: clap, the format group, COUNT) on
//! any argument list: it never panics; an accepted command line has exactly one format and a
//! COUNT unless it is `--raw`; a rejected one has a one-line message.
//!
//! Input: arguments separated by NUL bytes (any other bytes, also invalid UTF-8, are kept),
//! at most 16 of them, after the program name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

#[path = "../../cli/src/size.rs"]
mod size;

#[path = "../../cli/src/args.rs"]
mod args;

fuzz_target!(|data: &[u8]| {
    let list = std::iter::once(OsString::from("fkrng")).chain(
        data.split(|&b| b == 0)
            .take(16)
            .map(|a| OsString::from_vec(a.to_vec())),
    );
    match args::parse_from(list) {
        Ok(args::Command::Write(request)) => {
            assert!(
                request.count.is_some() || request.format == args::Format::Raw,
                "{request:?} accepted without COUNT"
            );
        }
        Ok(args::Command::Print(text)) => assert!(!text.is_empty()),
        Err(e) => {
            // One message line; the rendering adds the usage line and the --help pointer.
            assert!(!e.message().is_empty() && !e.message().contains('\n'), "{e:?}");
            assert!(e.render().starts_with("error: "));
        }
    }
});
