//! The `fkrng` command-line tool: output lengths per format, the format rule without a flag,
//! `--out`, streaming into a closed pipe, a closed, `/dev/null` or non-blocking stdout, and
//! every kind of bad input.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The tool as a command: run directly, or through the emulator named by
/// `FKRNG_TEST_RUNNER` (a program and its arguments, such as `qemu-aarch64 -L
/// /usr/aarch64-linux-gnu`) when the tests run for another architecture.
fn tool() -> Command {
    fkrng_test_support::runner::command(env!("CARGO_BIN_EXE_fkrng"))
}

/// The tool as a command run by nobody (65534): a copy of the binary in a directory of
/// the system's temporary directory that every user may enter, since the build's own
/// directory may be closed to other users (a checkout under a 0700 directory).
fn tool_as_nobody() -> Command {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let path = COPY.get_or_init(|| {
        let dir = scratch_dir("bin");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.join("fkrng");
        std::fs::copy(env!("CARGO_BIN_EXE_fkrng"), &path).expect("copy the tool");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    });
    let mut command = fkrng_test_support::runner::command(path);
    command.uid(NOBODY).gid(NOBODY);
    command
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

/// Without a format flag, a pipe gets hex and a newline (the rule's "anything else").
#[test]
fn no_format_to_a_pipe_is_hex() {
    for (n, digits) in [(16usize, 32usize), (32, 64), (1 << 20, 2 << 20)] {
        let out = fkrng(&[&n.to_string()]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert!(out.stderr.is_empty(), "{out:?}");
        let text = stdout_text(&out);
        assert_eq!(text.len(), digits + 1, "{n}");
        assert!(text[..digits].bytes().all(|b| b.is_ascii_hexdigit()), "{n}");
        assert!(text.ends_with('\n'));
    }
    assert!(fkrng(&["0"]).stdout.is_empty());
}

/// A pseudo-terminal: the controlling side and the path of the terminal's own side.
fn pty() -> (std::fs::File, String) {
    use std::ffi::CStr;
    use std::os::fd::FromRawFd;
    // SAFETY: posix_openpt returns a new descriptor (owned by the File below) or -1;
    // grantpt/unlockpt/ptsname_r act on that descriptor, ptsname_r writing at most
    // `name.len()` bytes into `name`, which stays alive for the call.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = std::fs::File::from_raw_fd(fd);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let name = CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_owned();
        (master, name)
    }
}

/// Runs fkrng with `args` (in which `{tty}` stands for the terminal's path) and a fresh
/// pseudo-terminal as stdout: its status, its stderr and what reached the terminal.
fn on_terminal(args: &[&str]) -> (ExitStatus, String, Vec<u8>) {
    let (mut master, name) = pty();
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&name)
        .expect("open the terminal side");
    let mut child = tool()
        .args(args.iter().map(|a| a.replace("{tty}", &name)))
        .stdin(Stdio::null())
        .stdout(terminal)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fkrng");
    let status = wait_or_kill(&mut child);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    // No one holds the terminal side open now: the controlling side reads what is
    // buffered, then fails with EIO.
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match master.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.raw_os_error() == Some(libc::EIO) => break,
            Err(e) => panic!("read the terminal: {e}"),
        }
    }
    (status, err, got)
}

/// Without a format flag, a terminal gets hex: 32 digits for 16 bytes, then the newline
/// (which the terminal shows as CR LF).
#[test]
fn no_format_to_a_terminal_is_hex() {
    let (status, err, got) = on_terminal(&["16"]);
    assert_eq!(status.code(), Some(0), "{err}");
    let text = std::str::from_utf8(&got).expect("text");
    assert_eq!(text.len(), 34, "{text:?}");
    assert!(text.ends_with("\r\n"), "{text:?}");
    assert!(
        text[..32]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
        "{text:?}"
    );
}

/// Raw bytes never reach a terminal: `--raw` with or without a COUNT, on stdout or named by
/// `--out`, is refused with status 2 and nothing written. (Were it not, the endless `--raw`
/// would fill the terminal and never exit, and the guard in `wait_or_kill` would fail.)
#[test]
fn raw_bytes_never_go_to_a_terminal() {
    for args in [
        &["--raw"][..],
        &["--raw", "16"],
        &["-raw", "1"],
        &["--raw", "--out", "{tty}", "16"],
        &["--raw", "--out", "-", "16"],
        &["--raw", "--out", "/dev/stdout", "16"],
    ] {
        let (status, err, got) = on_terminal(args);
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(
            err.lines().next().unwrap_or_default(),
            "error: raw bytes are not written to a terminal; say --hex or --base64, or send \
             the output to a file or pipe",
            "{args:?}"
        );
        assert!(got.is_empty(), "{args:?} wrote {got:?} to the terminal");
    }
    // Text still goes there through --out.
    let (status, err, got) = on_terminal(&["--hex", "--out", "{tty}", "4"]);
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(got.len(), 10, "{got:?}");
}

/// Without a format flag, a regular file as stdout gets the raw bytes, as `openssl rand 32
/// > key.bin` writes them: also a file opened for appending, whose bytes stay in front.
#[test]
fn no_format_to_a_regular_file_is_raw() {
    let dir = scratch_dir("stdout-file");
    let path = dir.join("key.bin");
    for count in [32usize, 1 << 20] {
        let out = tool()
            .arg(count.to_string())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&path).unwrap())
            .output()
            .expect("run fkrng");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{count}: {err}");
        assert!(err.is_empty(), "{err}");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), count);
        assert!(bytes.iter().any(|b| !b.is_ascii_hexdigit()), "hex, not raw");
    }
    std::fs::write(&path, b"before\n").unwrap();
    let (status, err) = fkrng_redirected(&format!(">> '{}'", path.display()), &["16"]);
    assert_eq!(status.code(), Some(0), "{err}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 7 + 16);
    assert_eq!(&bytes[..7], b"before\n");
    std::fs::remove_dir_all(&dir).unwrap();
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

/// `--base64url`: the URL-safe alphabet (`-` and `_`, never `+`, `/` or `=`), no padding, so
/// 4n/3 characters rounded up (43 for 32 bytes, as Python's `secrets.token_urlsafe(32)`),
/// then a newline; also across chunks.
#[test]
fn base64url_lengths_and_alphabet() {
    for (n, chars) in [
        (1usize, 2usize),
        (2, 3),
        (3, 4),
        (32, 43),
        (48, 64),
        (49, 66),
        (1_600_000, 2_133_334),
    ] {
        let out = fkrng(&["--base64url", &n.to_string()]);
        assert_eq!(out.status.code(), Some(0), "--base64url {n}");
        let text = stdout_text(&out);
        assert_eq!(text.len(), chars + 1, "--base64url {n}");
        assert!(text.ends_with('\n'));
        let body = &text[..chars];
        assert!(
            body.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "--base64url {n}: {body:.80}"
        );
        if n == 1_600_000 {
            assert!(body.contains('-') && body.contains('_'));
        }
    }
    let out = fkrng(&["--base64url"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: --base64url needs a COUNT"), "{err}");
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
        &["--base64", "--base64url", "8"],  // two formats at once
        &["--hex"],                         // missing count
        &["--hex", "8", "9"],               // extra argument
        &[],                                // no COUNT at all
        &["-h", "32"],                      // help with other arguments
        &["-hx", "32"],                     // a cluster with help in it
        &["--help", "--hex"],               // help with other arguments
        &["-V", "32"],                      // version with other arguments
        &["\u{2014}hex", "32"],             // an em dash for --
        &["-hexx", "32"],                   // not an openssl spelling
        &["--out", "f", "32"],              // --out without a format
        &["--raw", "--out", "f"],           // --out without a count
        &["-out"],                          // --out without a file
        &["-rand", "f", "--raw", "32"],     // an openssl option fkrng lacks
        &["--hex", "1\n2"],                 // a newline, shown escaped on one line
        &["--he\nx", "4"],                  // the same in an unknown flag
        &["\u{2014}hex\nx", "4"],           // and in a dash look-alike
        &["-1K"],                           // negative, with a suffix
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

/// A count with a character that is neither a digit nor part of a suffix is refused with a
/// message that names the character (a thousands separator is not called a fraction).
#[test]
fn bad_count_names_the_character() {
    let rest = "cannot be in a count; a count is digits and an optional suffix, e.g. 1000 or 1KiB";
    for (count, message) in [
        ("1,000", format!("\"1,000\": ',' {rest}")),
        ("1 KiB", format!("\"1 KiB\": ' ' {rest}")),
        ("2_000", format!("\"2_000\": '_' {rest}")),
        (
            "1.5",
            "\"1.5\": '.' cannot be in a count; counts are whole bytes, not fractions".into(),
        ),
    ] {
        let out = fkrng(&["--hex", count]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{count}: {err}");
        assert!(out.stdout.is_empty(), "{count}");
        assert_eq!(
            err.lines().next().unwrap_or_default(),
            format!("error: invalid value '{count}' for '[COUNT]': {message}"),
        );
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

/// openssl's options that fkrng lacks are named in the message, with one dash or two.
#[test]
fn openssl_only_options_are_refused_by_name() {
    for (args, name) in [
        (&["-rand", "/dev/urandom", "-hex", "32"][..], "rand"),
        (&["-writerand", "seed", "-hex", "32"], "writerand"),
        (&["-hex", "32", "-engine", "rdrand"], "engine"),
        (&["-provider", "default", "-raw", "8"], "provider"),
        (&["-provider-path", "/x", "-raw", "8"], "provider-path"),
        (&["-propquery", "fips=yes", "-raw", "8"], "propquery"),
        (&["--rand=/dev/urandom", "--raw", "8"], "rand"),
    ] {
        let out = fkrng(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(
            err.lines().next(),
            Some(format!("error: openssl's -{name} is not supported").as_str()),
            "{args:?}: {err}"
        );
        assert!(err.contains("For more information, try '--help'."), "{err}");
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
    for args in [
        &["16"][..],
        &["--raw"],
        &["--base64", "1GiB"],
        &["--help"],
        // Its links reopen the runtime's `/dev/null` stand-in: refused as well.
        &["--hex", "--out", "/dev/stdout", "16"],
        &["--hex", "--out", "/dev/fd/1", "16"],
        &["--hex", "--out", "/proc/self/fd/1", "16"],
    ] {
        let (status, err) = fkrng_redirected(">&-", args);
        assert_eq!(status.code(), Some(1), "{args:?} >&-: {err}");
        assert!(err.contains("Bad file descriptor"), "{args:?} >&-: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?} >&-: {err}");
    }
}

/// `--out /dev/stderr` with stderr closed at start fails (status 1) rather than writing
/// into the runtime's `/dev/null` stand-in; `--out /dev/null` with stdout closed is
/// `/dev/null` as named, and succeeds.
#[test]
fn closed_stderr_through_its_link_is_an_error() {
    let (status, _) = fkrng_redirected("2>&-", &["--hex", "--out", "/dev/stderr", "8"]);
    assert_eq!(status.code(), Some(1));
    let (status, err) = fkrng_redirected(">&-", &["--hex", "--out", "/dev/null", "8"]);
    assert_eq!(status.code(), Some(0), "{err}");
}

/// `--out FILE` where stdout is FILE opened read-only (`1< FILE`) opens FILE by its path,
/// as `>` would, instead of writing through the read-only descriptor.
#[test]
fn out_to_the_file_stdout_reads_opens_it_anew() {
    let dir = scratch_dir("read-only-stdout");
    let path = dir.join("key.bin");
    std::fs::write(&path, b"old key\n").unwrap();
    let out = tool()
        .args(["--raw", "--out", path.to_str().unwrap(), "8"])
        .stdin(Stdio::null())
        .stdout(std::fs::File::open(&path).unwrap())
        .output()
        .expect("run fkrng");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read(&path).unwrap();
    assert_eq!(written.len(), 8);
    assert_ne!(written, b"old key\n"[..8]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stderr that cannot take the message (`/dev/full`) does not turn an error into a panic:
/// the status stays 2 for bad arguments and 1 for a failed output.
#[test]
fn full_stderr_keeps_the_status() {
    for (args, status) in [
        (&["--nope"][..], 2),
        (&["1.5"], 2),
        (&["--raw", "--out", "/dev/full", "8"], 1),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let out = tool()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(full)
            .output()
            .expect("run fkrng");
        assert_eq!(out.status.code(), Some(status), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `/dev/null` as stdout, opened write-only as a shell's `>` opens it or read-write as
/// launchers that discard output (`1<>`, Python's `subprocess.DEVNULL`, `daemon(3)`) open
/// it: the output is discarded and the status is 0, also without a format flag.
#[test]
fn dev_null_stdout_still_works() {
    for redirect in ["> /dev/null", "1<> /dev/null"] {
        for args in [
            &["16"][..],
            &["--hex", "16"],
            &["--raw", "16MiB"],
            &["--help"],
        ] {
            let (status, err) = fkrng_redirected(redirect, args);
            assert_eq!(status.code(), Some(0), "{args:?} {redirect}: {err}");
            assert!(err.is_empty(), "{args:?} {redirect}: {err}");
        }
    }
}

/// The same with `/dev/null` opened read-write by this process and handed over as fd 1,
/// checked to really be read-write.
#[test]
fn read_write_dev_null_from_a_launcher() {
    use std::os::fd::AsRawFd;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .expect("open /dev/null");
    // SAFETY: F_GETFL on a descriptor `null` owns; no pointers.
    let flags = unsafe { libc::fcntl(null.as_raw_fd(), libc::F_GETFL) };
    assert_eq!(flags & libc::O_ACCMODE, libc::O_RDWR);
    for args in [&["--raw", "1MiB"][..], &["--base64", "32"], &["32"]] {
        let out = tool()
            .args(args)
            .stdin(Stdio::null())
            .stdout(null.try_clone().unwrap())
            .stderr(Stdio::piped())
            .output()
            .expect("run fkrng");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Python's `subprocess.run(..., stdout=subprocess.DEVNULL)`, when python3 is installed.
#[test]
fn python_devnull_launch() {
    if Command::new("python3").arg("--version").output().is_err() {
        println!("python3 not found; skipping the Python launcher check");
        return;
    }
    let mut argv = vec![env!("CARGO_BIN_EXE_fkrng").to_owned()];
    let runner = fkrng_test_support::runner::emulator();
    let mut full: Vec<String> = runner.split_whitespace().map(str::to_owned).collect();
    full.append(&mut argv);
    full.extend(["--hex".to_owned(), "32".to_owned()]);
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import subprocess, sys\n\
             r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n\
             print(r.returncode)",
        )
        .args(&full)
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(stdout_text(&out), "0\n", "{err}");
    assert!(err.is_empty(), "{err}");
}

/// A stdout closed before exec with `pre_exec` (not through a shell) is refused too.
#[test]
fn stdout_closed_before_exec_is_an_error() {
    use std::os::unix::process::CommandExt;
    let mut command = tool();
    command
        .args(["--hex", "16"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: the closure runs in the child between fork and exec and calls only close(2),
    // which is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::close(1);
            Ok(())
        });
    }
    let out = command.output().expect("run fkrng");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        "fkrng: standard output: Bad file descriptor (os error 9)\n"
    );
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
        "--hex",
        "--base64",
        "--base64url",
        "--raw",
        "COUNT",
        "KiB",
        "GiB",
        "KB",
        "status",
        "-hex",
        "--out",
        "-out",
        "0600",
        "terminal",
        "/dev/null",
        "-rand",
        "-provider-path",
        "fkrng writes raw bytes to a regular file, as openssl rand does (fkrng 32 > key.bin), \
         and hex to anything else",
        "O_CREAT|O_EXCL",
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

/// A directory of its own for one test, empty, under the system's temporary directory.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fkrng-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).expect("create the scratch directory");
    dir
}

/// The names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `-out`/`--out` writes exactly the bytes asked for to a new file of mode 0600, and
/// nothing to stdout.
#[test]
fn out_writes_a_0600_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("out");
    for (flag, format, count, len) in [
        ("-out", "-raw", "32", 32usize),
        ("--out", "--raw", "1MiB", 1 << 20),
        ("--out", "--hex", "16", 33),
        ("-out", "-base64", "48", 65),
        ("--out", "--raw", "0", 0),
    ] {
        let path = dir.join(format!("key{format}{count}"));
        let out = fkrng(&[format, flag, path.to_str().unwrap(), count]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{flag} {format} {count}: {err}");
        assert!(out.stdout.is_empty() && err.is_empty(), "{err}");
        let meta = std::fs::metadata(&path).expect("the file exists");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{path:?}");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), len, "{flag} {format} {count}");
        if format == "--hex" {
            assert!(bytes[..32].iter().all(|b| b.is_ascii_hexdigit()));
            assert_eq!(bytes[32], b'\n');
        }
    }
    // `--out=FILE`, and stdout closed: the file does not need it.
    let path = dir.join("eq");
    let (status, err) = fkrng_redirected(
        ">&-",
        &["--raw", &format!("--out={}", path.display()), "64"],
    );
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read(&path).unwrap().len(), 64);
    // Mode 0600 whatever the umask: one that would widen it, one that would narrow it.
    for umask in ["000", "277"] {
        let name = format!("umask{umask}");
        let (status, err) = shell(&dir, &format!("umask {umask}; fkrng --raw --out {name} 8"));
        assert_eq!(status.code(), Some(0), "{err}");
        let meta = std::fs::metadata(dir.join(&name)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o7777, 0o600, "umask {umask}");
    }
    assert_eq!(names_in(&dir).len(), 8, "{:?}", names_in(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The user and group the tests give files to, and run the tool as, when they run as root:
/// nobody and nogroup (65534).
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// As root, a scratch directory of `mode` for a test that gives files to nobody; as another
/// user, `None`, after saying that the test is skipped.
fn root_scratch_dir(name: &str, mode: u32) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        println!("not root: cannot give files to another user; skipping");
        return None;
    }
    let dir = scratch_dir(name);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
    Some(dir)
}

/// An existing file is written in place, as `>` writes it: the same inode, holding only the
/// new bytes, with its owner, group, mode and extended attributes, and a hard link to it
/// reads the new bytes. Modes 0640, 0604 and 02750 and, when the tests run as root, owner
/// nobody:nogroup.
#[test]
fn out_writes_an_existing_file_in_place() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = scratch_dir("in-place");
    let path = dir.join("key.bin");
    let link = dir.join("hard-link");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    std::fs::hard_link(&path, &link).unwrap();
    let attr = c"user.fkrng-test";
    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: both strings are NUL-terminated and the value is 3 readable bytes.
    let has_xattr = unsafe {
        libc::setxattr(c_path.as_ptr(), attr.as_ptr(), b"yes".as_ptr().cast(), 3, 0) == 0
    };
    for mode in [0o640, 0o604, 0o2750] {
        if is_root() {
            std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let old = std::fs::metadata(&path).unwrap();
        let out = fkrng(&["--raw", "--out", path.to_str().unwrap(), "32"]);
        assert_eq!(out.status.code(), Some(0), "{mode:o}: {out:?}");
        let new = std::fs::metadata(&path).unwrap();
        assert_eq!(new.ino(), old.ino(), "{mode:o}");
        assert_eq!(
            (new.uid(), new.gid(), new.mode() & 0o7777, new.nlink()),
            (old.uid(), old.gid(), mode, 2),
            "{mode:o}"
        );
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 32);
        assert_ne!(bytes, vec![b'x'; 32]);
        assert_eq!(std::fs::read(&link).unwrap(), bytes, "the hard link");
        if has_xattr {
            let mut value = [0u8; 8];
            // SAFETY: NUL-terminated strings; `value` has room for the 8 bytes offered.
            let n = unsafe {
                libc::getxattr(
                    c_path.as_ptr(),
                    attr.as_ptr(),
                    value.as_mut_ptr().cast(),
                    value.len(),
                )
            };
            assert_eq!(n, 3, "the extended attribute is kept");
            assert_eq!(&value[..3], b"yes");
        }
        assert_eq!(names_in(&dir), ["hard-link", "key.bin"]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of root's that the group nogroup may write, written by nobody: in place, as `>`
/// would, keeping root as its owner and its mode 0660.
#[test]
fn out_writes_a_file_of_another_owner_in_place() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(dir) = root_scratch_dir("not-mine", 0o755) else {
        return;
    };
    let path = dir.join("shared.key");
    std::fs::write(&path, b"old key\n").unwrap();
    std::os::unix::fs::chown(&path, Some(0), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o660)).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let out = tool_as_nobody()
        .args(["--raw", "--out", path.to_str().unwrap(), "32"])
        .stdin(Stdio::null())
        .output()
        .expect("run fkrng");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(
        (
            meta.ino(),
            meta.uid(),
            meta.gid(),
            meta.mode() & 0o7777,
            meta.len()
        ),
        (ino, 0, NOBODY, 0o660, 32)
    );
    assert_eq!(names_in(&dir), ["shared.key"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// In a directory the user may not write, an existing file they may write is written in
/// place, and a new one is refused naming the path, with nothing made. (Root may write
/// anywhere, so as root the tool runs as nobody, on a file of nobody's.)
#[test]
fn out_in_a_read_only_directory() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("read-only");
    let path = dir.join("key.bin");
    std::fs::write(&path, b"old key\n").unwrap();
    let command = || {
        if is_root() { tool_as_nobody() } else { tool() }
    };
    if is_root() {
        std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let existing = command()
        .args(["--raw", "--out", path.to_str().unwrap(), "32"])
        .stdin(Stdio::null())
        .output()
        .expect("run fkrng");
    let new = dir.join("new.bin");
    let refused = command()
        .args(["--raw", "--out", new.to_str().unwrap(), "32"])
        .stdin(Stdio::null())
        .output()
        .expect("run fkrng");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(existing.status.code(), Some(0), "{existing:?}");
    assert_eq!(std::fs::read(&path).unwrap().len(), 32);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert_eq!(
        err,
        format!(
            "fkrng: {}: Permission denied (os error 13)\n",
            new.display()
        )
    );
    assert_eq!(names_in(&dir), ["key.bin"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--out /proc/version`, a file that exists and cannot be written: the message is the
/// kernel's answer to opening it for writing (as a user who may not) or to the write (as
/// root), naming the path.
#[test]
fn out_to_proc_version_names_what_failed() {
    let path = "/proc/version";
    if !std::path::Path::new(path).is_file() {
        println!("no {path}; skipping");
        return;
    }
    let e = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write(&mut f, &[0u8; 8]))
        .expect_err("/proc/version is not writable");
    let out = fkrng(&["--raw", "--out", path, "8"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err, format!("fkrng: {path}: {e}\n"));
}

/// `--out` through a symbolic link to a file writes that file in place and keeps the link;
/// a link to a missing name (relative, absolute, or a chain of two) is refused with status
/// 1 and creates nothing.
#[test]
fn out_through_a_symbolic_link() {
    use std::os::unix::fs::{MetadataExt, symlink};
    let dir = scratch_dir("symlink");
    std::fs::write(dir.join("existing"), b"old").unwrap();
    let ino = std::fs::metadata(dir.join("existing")).unwrap().ino();
    symlink("existing", dir.join("to-existing")).unwrap();
    let out = fkrng(&[
        "--raw",
        "--out",
        dir.join("to-existing").to_str().unwrap(),
        "16",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let meta = std::fs::metadata(dir.join("existing")).unwrap();
    assert_eq!((meta.ino(), meta.len()), (ino, 16));
    symlink("new-target", dir.join("dangling")).unwrap();
    symlink(dir.join("absolute-target"), dir.join("dangling-absolute")).unwrap();
    symlink("dangling", dir.join("chain")).unwrap();
    for link in ["dangling", "dangling-absolute", "chain"] {
        let path = dir.join(link);
        let out = fkrng(&["--raw", "--out", path.to_str().unwrap(), "8"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{link}: {err}");
        assert_eq!(
            err,
            format!(
                "fkrng: {}: a symbolic link to a missing file; a new file is not created \
                 through a link\n",
                path.display()
            )
        );
    }
    assert_eq!(
        names_in(&dir),
        [
            "chain",
            "dangling",
            "dangling-absolute",
            "existing",
            "to-existing"
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// In a sticky world-writable directory (as /tmp), as root: a dangling link that nobody
/// planted makes no file where it points, and a file nobody created first is treated as a
/// shell's `>` treats it under this kernel's `fs.protected_regular` (refused where that is
/// set, written in place where it is not): the same status, and no key in a file the
/// planted name's owner could read unless `>` would put it there too.
#[test]
fn out_in_a_sticky_directory_follows_the_kernel() {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = root_scratch_dir("sticky", 0o1777) else {
        return;
    };
    let link = dir.join("planted-link");
    std::os::unix::fs::symlink(dir.join("where-it-points"), &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = fkrng(&["--raw", "--out", link.to_str().unwrap(), "32"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(names_in(&dir), ["planted-link"]);
    let results: Vec<_> = ["fkrng --raw 32 > {}", "fkrng --raw --out {} 32"]
        .iter()
        .enumerate()
        .map(|(i, form)| {
            let name = format!("planted-{i}");
            let path = dir.join(&name);
            std::fs::write(&path, b"").unwrap();
            std::os::unix::fs::chown(&path, Some(NOBODY), Some(NOBODY)).unwrap();
            let ino = std::fs::metadata(&path).unwrap().ino();
            let (status, _) = shell(&dir, &form.replace("{}", &name));
            let meta = std::fs::metadata(&path).unwrap();
            (status.success(), meta.ino() == ino, meta.uid(), meta.len())
        })
        .collect();
    assert_eq!(results[0], results[1], "> and --out differ");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A write that fails halfway (the file size limit, which binds root too; SIGXFSZ left at
/// its default action, which would end the run with the file half written) exits 1
/// naming the path: a new file is
/// removed again, an existing one keeps its inode and holds what was written, as `>`
/// leaves it.
#[test]
fn failed_out_write_removes_a_new_file() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    let dir = scratch_dir("fail");
    let existing = dir.join("existing.bin");
    std::fs::write(&existing, b"old key\n").unwrap();
    let ino = std::fs::metadata(&existing).unwrap().ino();
    for path in [dir.join("new.bin"), existing.clone()] {
        let mut command = tool();
        command
            .args(["--raw", "--out", path.to_str().unwrap(), "1MiB"])
            .stdin(Stdio::null());
        // SIGXFSZ keeps its default action (ending the process): the tool must turn the
        // limit into a write error itself.
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // setrlimit(2), which is async-signal-safe, with a valid rlimit.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 64 << 10,
                    rlim_max: 64 << 10,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = command.output().expect("run fkrng");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert_eq!(
            err,
            format!("fkrng: {}: File too large (os error 27)\n", path.display())
        );
    }
    let meta = std::fs::metadata(&existing).unwrap();
    assert_eq!((meta.ino(), meta.len()), (ino, 64 << 10));
    assert_eq!(names_in(&dir), ["existing.bin"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Outputs that cannot be written: exit 1 with the path in the message, nothing created.
#[test]
fn unwritable_out_is_an_error_naming_the_path() {
    let dir = scratch_dir("unwritable");
    let missing = dir.join("no-such-dir").join("key.bin");
    for (path, reason) in [
        (missing.to_str().unwrap(), "No such file or directory"),
        (dir.to_str().unwrap(), "Is a directory"),
        ("/dev/full", "No space left on device"),
    ] {
        let out = fkrng(&["--raw", "--out", path, "32"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path}: {err}");
        assert!(out.stdout.is_empty(), "{path}");
        assert!(
            err.starts_with(&format!("fkrng: {path}: {reason}")),
            "{path}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(names_in(&dir).is_empty(), "{:?}", names_in(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `script` with `sh -c` in `dir`, where the command `fkrng` runs the tool (behind the
/// emulator, if any): the shell's status and stderr.
fn shell(dir: &std::path::Path, script: &str) -> (ExitStatus, String) {
    let runner = fkrng_test_support::runner::emulator();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("fkrng() {{ {runner} \"$0\" \"$@\"; }}; {script}"))
        .arg(env!("CARGO_BIN_EXE_fkrng"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--out` naming the file the tool's stdout (or stderr) is on writes through that
/// descriptor, as a redirection would: what the caller wrote before and after stays, in
/// order, around the key, and the status is 0.
#[test]
fn out_to_the_file_stdout_is_on_keeps_what_surrounds_it() {
    let dir = scratch_dir("stdout-is-out");
    for (out, redirect) in [
        ("/dev/stdout", "> log"),
        ("/dev/fd/1", "> log"),
        ("log", ">> log"),
        ("/dev/stderr", "2> log"),
    ] {
        let fd = if redirect.starts_with('2') { ">&2" } else { "" };
        std::fs::write(dir.join("log"), b"").unwrap();
        let (status, err) = shell(
            &dir,
            &format!(
                "( echo before {fd}; fkrng --hex --out {out} 8; echo \"status $?\" {fd}; \
                 echo after {fd} ) {redirect}"
            ),
        );
        assert!(status.success(), "{out}: {err}");
        let log = std::fs::read_to_string(dir.join("log")).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 4, "{out} {redirect}: {log:?} {err}");
        assert_eq!(lines[0], "before", "{out}: {log:?}");
        assert_eq!(lines[1].len(), 16, "{out}: {log:?}");
        assert!(lines[1].bytes().all(|b| b.is_ascii_hexdigit()), "{log:?}");
        assert_eq!(lines[2..], ["status 0", "after"], "{out}: {log:?}");
        assert_eq!(names_in(&dir), ["log"], "{out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--out -` (and `-out -`) is standard output: the text arrives there and no file named
/// `-` is made.
#[test]
fn out_dash_is_stdout() {
    let dir = scratch_dir("dash");
    for args in [
        &["--hex", "--out", "-", "8"][..],
        &["-base64", "-out", "-", "3"],
    ] {
        let out = tool()
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .expect("run fkrng");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        let text = stdout_text(&out);
        assert_eq!(
            text.len(),
            if args[0] == "--hex" { 17 } else { 5 },
            "{text:?}"
        );
        assert!(text.ends_with('\n'), "{text:?}");
        assert!(names_in(&dir).is_empty(), "{args:?}: {:?}", names_in(&dir));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--out` without a format or a count is refused before any file is made.
#[test]
fn out_without_format_or_count_makes_no_file() {
    let dir = scratch_dir("noformat");
    let path = dir.join("key.bin");
    let path = path.to_str().unwrap();
    for (args, start) in [
        (
            &["-out", path, "32"][..],
            "error: --out needs a format: --raw",
        ),
        (&["--raw", "--out", path], "error: --out needs a COUNT"),
    ] {
        let out = fkrng(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(start), "{args:?}: {err}");
    }
    assert!(names_in(&dir).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `script` with `bash -c` and `set -o pipefail` in `dir`, where the command `fkrng`
/// runs the tool: the shell's whole output.
fn bash(dir: &std::path::Path, script: &str) -> Output {
    let runner = fkrng_test_support::runner::emulator();
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -o pipefail; fkrng() {{ {runner} \"$0\" \"$@\"; }}; {script}"
        ))
        .arg(env!("CARGO_BIN_EXE_fkrng"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run bash")
}

/// The shell idioms for a 32-byte secret, each run twice under `set -o pipefail`: status 0,
/// nothing on stderr (no warning from bash about a NUL byte), a value of the expected
/// length that differs between the runs, and never the hash of empty input.
#[test]
fn shell_idioms_give_a_fresh_value() {
    let dir = scratch_dir("idioms");
    let empty_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    for (script, len) in [
        ("fkrng 32 | sha256sum", 68usize),
        ("T=$(fkrng 32 | base64 -w0); printf %s \"$T\"", 88),
        ("fkrng 32 | tee key.bin > /dev/null; cat key.bin", 65),
        ("K=$(fkrng 32); printf %s \"$K\"", 64),
        (
            "rm -f .env; fkrng 32 >> .env; fkrng 32 >> .env; cat .env",
            64,
        ),
        ("fkrng 32 > key.bin; cat key.bin", 32),
    ] {
        let runs: Vec<Vec<u8>> = (0..2)
            .map(|_| {
                let out = bash(&dir, script);
                let err = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(0), "{script}: {err}");
                assert!(err.is_empty(), "{script}: {err}");
                assert_eq!(out.stdout.len(), len, "{script}: {:?}", out.stdout);
                assert!(!out.stdout.starts_with(empty_sha256.as_bytes()), "{script}");
                out.stdout
            })
            .collect();
        assert_ne!(runs[0], runs[1], "{script}");
        if script.contains(">> .env") {
            assert_ne!(runs[0][..32], runs[0][32..], "{script}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A COUNT the reader does not take whole (4 MiB, more than a pipe holds, into `head -c
/// 100`) exits 1 with one line, which `set -o pipefail` passes on; an endless `--raw` into
/// the same reader exits 0.
#[test]
fn count_cut_short_by_the_reader_exits_1() {
    let dir = scratch_dir("epipe");
    for (script, status) in [
        ("fkrng --raw 4MiB | head -c 100 | wc -c", 1),
        ("fkrng --hex 4MiB | head -c 100 | wc -c", 1),
        ("fkrng --raw | head -c 100 | wc -c", 0),
    ] {
        let out = bash(&dir, script);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{script}: {err}");
        assert_eq!(stdout_text(&out).trim(), "100", "{script}");
        let expected = if status == 1 {
            "fkrng: standard output: Broken pipe (os error 32)\n"
        } else {
            ""
        };
        assert_eq!(err, expected, "{script}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Starts `fkrng --raw --out path 1TiB` (3 GiB where a count must fit a 32-bit `usize`;
/// with no core file, for SIGQUIT, and SIGHUP ignored when `hup_ignored`) and waits until its
/// file holds bytes (a guard ends a wait of over a minute).
fn writing_a_large_file(path: &std::path::Path, hup_ignored: bool) -> Child {
    use std::os::unix::process::CommandExt;
    let count = if cfg!(target_pointer_width = "64") {
        "1TiB"
    } else {
        "3GiB"
    };
    let mut command = tool();
    command
        .args(["--raw", "--out", path.to_str().unwrap(), count])
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // setrlimit(2) and signal(2), both async-signal-safe, with valid rlimits.
    unsafe {
        command.pre_exec(move || {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            // A run whose signal is lost stops at 16 GiB (EFBIG) instead of filling the disk
            // (the 32-bit count is 3 GiB already).
            #[cfg(target_pointer_width = "64")]
            libc::setrlimit(
                libc::RLIMIT_FSIZE,
                &libc::rlimit {
                    rlim_cur: 16 << 30,
                    rlim_max: 16 << 30,
                },
            );
            if hup_ignored {
                libc::signal(libc::SIGHUP, libc::SIG_IGN);
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("spawn fkrng");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::metadata(path).map_or(0, |m| m.len()) == 0 {
        assert!(Instant::now() < deadline, "fkrng wrote nothing");
        assert!(child.try_wait().unwrap().is_none(), "fkrng exited");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

/// SIGINT, SIGTERM, SIGHUP or SIGQUIT in the middle of a large `--out` to a new file ends
/// the run by that signal and leaves no file; to an existing file, the file stays (same
/// inode). SIGHUP that the tool was started with ignored (`nohup`) stays ignored.
#[test]
fn signal_during_out_leaves_no_new_file() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = scratch_dir("signal");
    let path = dir.join("big.bin");
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        let mut child = writing_a_large_file(&path, false);
        // SAFETY: kill sends a signal to the child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = wait_or_kill(&mut child);
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(
            names_in(&dir).is_empty(),
            "signal {signal}: {:?}",
            names_in(&dir)
        );
    }
    std::fs::write(&path, b"old").unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let mut child = writing_a_large_file(&path, false);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    assert_eq!(wait_or_kill(&mut child).signal(), Some(libc::SIGTERM));
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    std::fs::remove_file(&path).unwrap();
    let mut child = writing_a_large_file(&path, true);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGHUP) }, 0);
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let status = wait_or_kill(&mut child);
    assert_eq!(
        status.signal(),
        Some(libc::SIGTERM),
        "SIGHUP was not ignored"
    );
    assert!(names_in(&dir).is_empty(), "{:?}", names_in(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}
