//! The CLI's whole command line (src/bin/fkrng/args.rs: clap, the format group, COUNT) on
//! any argument list: it never panics; an accepted command line has exactly one format and a
//! COUNT unless it is `--raw`; a rejected one renders a clap error message.
//!
//! Input: arguments separated by NUL bytes (any other bytes, also invalid UTF-8, are kept),
//! at most 16 of them, after the program name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

#[path = "../../src/bin/fkrng/size.rs"]
mod size;

#[path = "../../src/bin/fkrng/args.rs"]
mod args;

fuzz_target!(|data: &[u8]| {
    let list = std::iter::once(OsString::from("fkrng")).chain(
        data.split(|&b| b == 0)
            .take(16)
            .map(|a| OsString::from_vec(a.to_vec())),
    );
    match args::parse_from(list) {
        Ok(request) => {
            assert!(
                request.count.is_some() || request.format == args::Format::Raw,
                "{request:?} accepted without COUNT"
            );
        }
        Err(e) => {
            let text = e.to_string();
            assert!(!text.is_empty());
        }
    }
});
