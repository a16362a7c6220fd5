//! The `fkrng` command-line tool: output lengths per format, streaming into a closed pipe,
//! and every kind of bad input.
#![cfg(feature = "cli")]

use std::io::Read;
use std::process::{Command, Output, Stdio};

/// The tool as a command: run directly, or through the emulator named by
/// `FKRNG_TEST_RUNNER` (a program and its arguments, such as `qemu-aarch64 -L
/// /usr/aarch64-linux-gnu`) when the tests run for another architecture.
fn tool() -> Command {
    let exe = env!("CARGO_BIN_EXE_fkrng");
    let runner = std::env::var("FKRNG_TEST_RUNNER").unwrap_or_default();
    let mut runner = runner.split_whitespace();
    match runner.next() {
        Some(emulator) => {
            let mut command = Command::new(emulator);
            command.args(runner).arg(exe);
            command
        }
        None => Command::new(exe),
    }
}

fn fkrng(args: &[&str]) -> Output {
    tool()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run fkrng")
}

fn stdout_text(out: &Output) -> &str {
    std::str::from_utf8(&out.stdout).expect("text output")
}

#[test]
fn hex_lengths() {
    for (n, digits) in [
        (0usize, 0usize),
        (1, 2),
        (32, 64),
        (1000, 2000),
        (100_000, 200_000),
        (1_600_000, 3_200_000),
    ] {
        let out = fkrng(&["--hex", &n.to_string()]);
        assert!(out.status.success());
        let text = stdout_text(&out);
        assert_eq!(text.len(), digits + 1, "--hex {n}");
        assert!(text.ends_with('\n'));
        assert!(
            text[..digits]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}

#[test]
fn default_format_is_hex() {
    let out = fkrng(&["16"]);
    assert!(out.status.success());
    assert_eq!(stdout_text(&out).trim_end().len(), 32);
}

#[test]
fn base64_lengths() {
    for (n, chars) in [
        (0usize, 0usize),
        (1, 4),
        (2, 4),
        (3, 4),
        (48, 64),
        (49, 68),
        (100_000, 133_336),
        (1_600_000, 2_133_336),
    ] {
        let out = fkrng(&["--base64", &n.to_string()]);
        assert!(out.status.success());
        let text = stdout_text(&out);
        assert_eq!(text.len(), chars + 1, "--base64 {n}");
        let body = text.trim_end();
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
        );
        let pad = body.bytes().rev().take_while(|&b| b == b'=').count();
        assert_eq!(pad, (3 - n % 3) % 3, "--base64 {n}");
    }
}

#[test]
fn raw_lengths_and_units() {
    for (arg, len) in [
        ("0", 0usize),
        ("1", 1),
        ("991", 991),
        ("992", 992),
        ("4096", 4096),
        ("1KiB", 1024),
        ("3MiB", 3 << 20),
        ("2k", 2000),
        ("1M", 1_000_000),
    ] {
        let out = fkrng(&["--raw", arg]);
        assert!(out.status.success(), "--raw {arg}");
        assert_eq!(out.stdout.len(), len, "--raw {arg}");
        assert!(out.stderr.is_empty());
    }
}

#[test]
fn two_runs_differ_and_output_is_not_zero() {
    let a = fkrng(&["--raw", "64"]).stdout;
    let b = fkrng(&["--raw", "64"]).stdout;
    assert_ne!(a, b);
    assert_ne!(a, vec![0u8; 64]);
}

#[test]
fn raw_stream_ends_quietly_when_the_reader_closes() {
    let mut child = tool()
        .arg("--raw")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fkrng");
    let mut stdout = child.stdout.take().unwrap();
    let mut first = vec![0u8; 1 << 20];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "closed pipe ends with status 0");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(first, vec![0u8; 1 << 20]);
}

#[test]
fn bad_input_is_a_short_error_with_status_2() {
    let cases: &[&[&str]] = &[
        &["--hex", "abc"],                  // not a number
        &["--hex", "1.5"],                  // fractional
        &["--raw", "2.5MiB"],               // fractional with a unit
        &["--hex", "-4"],                   // negative
        &["--hex", "--", "-4"],             // negative, past the option parser
        &["--hex", ""],                     // empty
        &["--hex", "99999999999999999999"], // too large
        &["--raw", "20000000000GiB"],       // too large after the unit
        &["--hex", "10XB"],                 // unknown suffix
        &["--hex", "10kib"],                // suffixes are case-sensitive
        &["--frobnicate"],                  // unknown flag
        &["--hex", "--base64", "8"],        // two formats at once
        &["--hex", "--raw", "8"],           // two formats at once
        &["--hex"],                         // missing count
        &["--hex", "8", "9"],               // extra argument
    ];
    for args in cases {
        let out = fkrng(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} wrote output");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.lines().count() <= 8, "{args:?}: long message: {err}");
    }
}

#[test]
fn help_explains_every_option() {
    let out = fkrng(&["--help"]);
    assert!(out.status.success());
    let help = stdout_text(&out);
    for needle in [
        "--hex", "--base64", "--raw", "COUNT", "KiB", "GiB", "status",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}
