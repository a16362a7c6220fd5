//! The `fkrng` command-line tool: output lengths per format, streaming into a closed pipe,
//! a closed or non-blocking stdout, and every kind of bad input.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The tool as a command: run directly, or through the emulator named by
/// `FKRNG_TEST_RUNNER` (a program and its arguments, such as `qemu-aarch64 -L
/// /usr/aarch64-linux-gnu`) when the tests run for another architecture.
fn tool() -> Command {
    fkrng_test_support::runner::command(env!("CARGO_BIN_EXE_fkrng"))
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
        (1usize, 2usize),
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
        (1usize, 4usize),
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
        ("7B", 7),
        ("2K", 2048),
        ("2k", 2048),
        ("2KB", 2000),
        ("2kB", 2000),
        ("1M", 1 << 20),
        ("1MB", 1_000_000),
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
        &["--hex", "10b"],                  // GNU's 512-byte blocks: ambiguous
        &["--hex", "10m"],                  // only k has a lowercase form
        &["--frobnicate"],                  // unknown flag
        &["--hex", "--base64", "8"],        // two formats at once
        &["--hex", "--raw", "8"],           // two formats at once
        &["--hex"],                         // missing count
        &["--hex", "8", "9"],               // extra argument
        &[],                                // no COUNT at all
        &["-h", "32"],                      // help with other arguments
        &["-hx", "32"],                     // a cluster with help in it
        &["--help", "--hex"],               // help with other arguments
        &["-V", "32"],                      // version with other arguments
        &["\u{2014}hex", "32"],             // an em dash for --
        &["-hexx", "32"],                   // not an openssl spelling
    ];
    for args in cases {
        let out = fkrng(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} wrote output");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        // One message line, the usage line and the pointer to --help (clap's blank lines
        // between them), as README describes.
        let lines: Vec<&str> = err.lines().filter(|l| !l.is_empty()).collect();
        assert_eq!(lines.len(), 3, "{args:?}: {err}");
        assert!(lines[1].starts_with("Usage: fkrng "), "{args:?}: {err}");
        assert_eq!(lines[2], "For more information, try '--help'.", "{args:?}");
    }
}

#[test]
fn openssl_spellings_work() {
    for (args, len) in [
        (&["-hex", "32"][..], 65usize),
        (&["-base64", "48"], 65),
        (&["-raw", "5"], 5),
    ] {
        let out = fkrng(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(out.stdout.len(), len, "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}");
    }
}

#[test]
fn help_and_version_only_when_alone() {
    for args in [&["--help"][..], &["-h"], &["-help"]] {
        let out = fkrng(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(stdout_text(&out).starts_with("Write cryptographically secure"));
    }
    for args in [&["--version"][..], &["-V"]] {
        let out = fkrng(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let first = stdout_text(&out).lines().next().unwrap_or_default();
        assert_eq!(first, concat!("fkrng ", env!("CARGO_PKG_VERSION")));
    }
}

#[test]
fn no_arguments_asks_for_a_count_only() {
    let out = fkrng(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    let message = err.lines().next().unwrap_or_default();
    assert!(message.contains("COUNT"), "{err}");
    assert!(!message.contains("--"), "names a flag not given: {err}");
}

#[test]
fn count_zero_writes_nothing() {
    for format in ["--hex", "--base64", "--raw"] {
        let out = fkrng(&[format, "0"]);
        assert_eq!(out.status.code(), Some(0), "{format} 0");
        assert!(out.stdout.is_empty(), "{format} 0 wrote {:?}", out.stdout);
    }
}

/// Waits for `child`; a child still running after a minute is killed and the test fails
/// (a guard against hanging the suite, not a timing assertion).
fn wait_or_kill(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            child.kill().expect("kill");
            child.wait().expect("wait");
            panic!("fkrng did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs fkrng through `sh -c` with `redirect` applied to its stdout.
fn fkrng_redirected(redirect: &str, args: &[&str]) -> (ExitStatus, String) {
    let runner = fkrng_test_support::runner::emulator();
    let script = format!("exec {runner} \"$0\" \"$@\" {redirect}");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_fkrng"))
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sh");
    let mut err = String::new();
    let mut stderr = child.stderr.take().unwrap();
    let status = wait_or_kill(&mut child);
    stderr.read_to_string(&mut err).unwrap();
    (status, err)
}

#[test]
fn closed_stdout_is_an_error() {
    for args in [&["16"][..], &["--raw"], &["--base64", "1GiB"], &["--help"]] {
        let (status, err) = fkrng_redirected(">&-", args);
        assert_eq!(status.code(), Some(1), "{args:?} >&-: {err}");
        assert!(err.contains("Bad file descriptor"), "{args:?} >&-: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?} >&-: {err}");
    }
}

#[test]
fn dev_null_stdout_still_works() {
    for args in [&["16"][..], &["--raw", "16MiB"]] {
        let (status, err) = fkrng_redirected("> /dev/null", args);
        assert_eq!(status.code(), Some(0), "{args:?} > /dev/null: {err}");
        assert!(err.is_empty(), "{args:?} > /dev/null: {err}");
    }
}

/// A non-blocking pipe as stdout, read slowly: the tool waits for room instead of failing
/// with EAGAIN, and every byte arrives.
#[test]
fn non_blocking_stdout_gets_every_byte() {
    use std::os::fd::AsRawFd;
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    // SAFETY: F_GETFL/F_SETFL on a descriptor owned by `writer`; no pointers.
    unsafe {
        let fd = writer.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert!(flags >= 0);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
    }
    let mut child = tool()
        .args(["--raw", "10MiB"])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fkrng");
    let mut total = 0usize;
    let mut nonzero = 0usize;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        // Slower than the tool: the pipe stays full and its writes meet EAGAIN.
        std::thread::sleep(Duration::from_millis(2));
        let n = reader.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        total += n;
        nonzero += buf[..n].iter().filter(|&&b| b != 0).count();
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = wait_or_kill(&mut child);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(total, 10 << 20);
    assert!(nonzero > total / 2);
}

#[test]
fn help_explains_every_option() {
    let out = fkrng(&["--help"]);
    assert!(out.status.success());
    let help = stdout_text(&out);
    for needle in [
        "--hex", "--base64", "--raw", "COUNT", "KiB", "GiB", "KB", "status", "-hex",
    ] {
        assert!(help.contains(needle), "--help lacks {needle}");
    }
}

/// The tool, even built inside this repository (where the test hooks are compiled in), does
/// not let the environment name a stand-in for the VMClock device or stop it: only test
/// programs that ask for it read those variables.
#[test]
fn test_hook_variables_are_ignored() {
    let out = tool()
        .args(["--hex", "8"])
        .env("FKRNG_TEST_VMCLOCK_PATH", "/nonexistent/vmclock")
        .env("FKRNG_TEST_VMCLOCK_MUST_MAP", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run fkrng");
    assert!(out.status.success(), "{out:?}");
    let text = stdout_text(&out);
    assert_eq!(text.trim_end().len(), 16, "{text:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}
