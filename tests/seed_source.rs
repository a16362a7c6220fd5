//! Every seed comes from the kernel's random source, also where the `getrandom` system call
//! is refused and the device fallback is used.
//!
//! Each scenario runs in a forked child that installs a seccomp filter making `getrandom`
//! fail with `ENOSYS` (as sandboxes and old container runtimes do), so that seeding must go
//! through the device:
//!
//! - **A reused descriptor.** The child seeds once, closes every descriptor above stderr (as
//!   a daemon does when it starts) and opens a file of `0x41` bytes, which takes the lowest
//!   free number. A new thread's first read, and a forked grandchild's, must not be the
//!   stream of `FkeRng::from_seed([0x41; 32])`, which is what a seed read from that file
//!   through a cached descriptor number gives.
//! - **A file mounted over the device.** In a mount namespace of its own, the child
//!   bind-mounts that file over `/dev/urandom`; the first read must fail with an error that
//!   names the device, and emit nothing.
//! - **`/dev/urandom` alone.** In a mount namespace of its own, the child mounts a `/dev`
//!   that holds only `/dev/urandom` (no `/dev/random` to poll for the pool's readiness);
//!   its threads' first reads must seed, with distinct output.
//!
//! - **A failed reseed.** With `getrandom` failing with `EIO`, a read that must reseed after
//!   `reseed_all` returns the error and leaves zeros in the whole buffer, for reads served
//!   from the buffer (whose bytes it copies before it finds the state stale) and past it.
//!
//! Where a scenario's preconditions are missing (seccomp filters refused, as under
//! qemu-user; no permission to make a mount namespace) it prints why it was skipped.
//! Runs without the test harness, so that the process is single-threaded when it forks.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("seed source tests: Linux only (seccomp, mount namespaces), skipped");
}

#[cfg(target_os = "linux")]
mod linux {
    use fkrng::FkeRng;
    use fkrng_test_support::child::{self, How};
    use rand_core::{Rng, SeedableRng};
    use std::ffi::CString;
    use std::io::Write;

    /// Exit statuses of a scenario's child.
    const PASSED: i32 = 0;
    const SKIPPED: i32 = 77;

    /// The audit architecture of this target (`linux/audit.h`), checked by the filter.
    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xc000_003e;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xc000_00b7;
    #[cfg(target_arch = "s390x")]
    const AUDIT_ARCH: u32 = 0x8000_0016;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "s390x")))]
    const AUDIT_ARCH: u32 = 0;

    /// Makes `getrandom` fail with `errno` for this thread and the threads and processes it
    /// makes from now on. Returns why it could not, if it could not.
    fn refuse_getrandom(errno: i32) -> Result<(), String> {
        if AUDIT_ARCH == 0 {
            return Err("no audit architecture known for this target".into());
        }
        let stmt = |code: u32, k: u32| libc::sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        };
        let jump = |k: u32, jt: u8, jf: u8| libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        };
        let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
        let ret = libc::BPF_RET | libc::BPF_K;
        // struct seccomp_data: nr at offset 0, arch at offset 4.
        let mut program = [
            stmt(load, 4),
            jump(AUDIT_ARCH, 0, 3),
            stmt(load, 0),
            jump(libc::SYS_getrandom as u32, 0, 1),
            stmt(ret, libc::SECCOMP_RET_ERRNO | errno as u32),
            stmt(ret, libc::SECCOMP_RET_ALLOW),
        ];
        fkrng_test_support::seccomp::install(&mut program)?;
        // The filter must really be in force.
        let mut probe = [0u8; 4];
        // SAFETY: `probe` is valid for writes of 4 bytes.
        let r = unsafe { libc::syscall(libc::SYS_getrandom, probe.as_mut_ptr(), 4, 0) };
        let e = std::io::Error::last_os_error().raw_os_error();
        if r != -1 || e != Some(errno) {
            return Err(format!(
                "filter installed but getrandom returned {r} ({e:?})"
            ));
        }
        Ok(())
    }

    /// The first 64 bytes a generator seeded with 32 bytes of `0x41` gives.
    fn stream_of_the_file() -> [u8; 64] {
        let mut out = [0u8; 64];
        FkeRng::from_seed([0x41; 32]).fill_bytes(&mut out);
        out
    }

    fn file_of_0x41() -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("fkrng-seed-file-{}", std::process::id()));
        std::fs::write(&path, [0x41u8; 4096]).unwrap();
        path
    }

    /// Closes every descriptor from 3 on, as a daemon does when it starts.
    fn close_all_above_stderr() {
        for fd in 3..1024 {
            // SAFETY: closing a descriptor number that may or may not be open.
            unsafe { libc::close(fd) };
        }
    }

    fn reused_descriptor() -> i32 {
        if let Err(why) = refuse_getrandom(libc::ENOSYS) {
            println!("  skipped: {why}");
            return SKIPPED;
        }
        let mut first = [0u8; 32];
        if let Err(e) = fkrng::try_fill(&mut first) {
            println!("  the device fallback failed: {e}");
            return 1;
        }
        let file = file_of_0x41();
        close_all_above_stderr();
        let reopened = std::fs::File::open(&file).unwrap();
        println!(
            "  the file of 0x41 bytes is now descriptor {}",
            std::os::fd::AsRawFd::as_raw_fd(&reopened)
        );
        let known = stream_of_the_file();
        let from_thread = std::thread::spawn(|| {
            let mut out = [0u8; 64];
            fkrng::try_fill(&mut out).map(|()| out)
        })
        .join()
        .unwrap();
        let mut status = PASSED;
        match from_thread {
            Ok(out) if out == known => {
                println!("  a new thread's first read is the file's stream");
                status = 1;
            }
            Ok(out) if out == [0u8; 64] => {
                println!("  a new thread's first read is all zero");
                status = 1;
            }
            Ok(_) => println!("  a new thread's first read: fresh bytes"),
            Err(e) => {
                println!("  a new thread's first read failed: {e}");
                status = 1;
            }
        }
        // A forked grandchild, whose state is wiped (or whose epoch moved), seeds again.
        let grandchild = run_in_child(|| {
            let mut out = [0u8; 64];
            match fkrng::try_fill(&mut out) {
                Ok(()) if out != stream_of_the_file() => PASSED,
                _ => 1,
            }
        });
        if grandchild != PASSED {
            println!("  a forked child's first read was the file's stream or failed");
            status = 1;
        }
        let _ = std::fs::remove_file(&file);
        status
    }

    fn device_replaced_by_a_file() -> i32 {
        // SAFETY: a new mount namespace for this single-threaded child only.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            println!(
                "  skipped: no mount namespace: {}",
                std::io::Error::last_os_error()
            );
            return SKIPPED;
        }
        let file = file_of_0x41();
        let source = CString::new(file.to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated strings; makes mounts private to this namespace, then
        // bind-mounts the file over the device path inside it.
        let mounted = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0
                && libc::mount(
                    source.as_ptr(),
                    c"/dev/urandom".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) == 0
        };
        if !mounted {
            println!("  skipped: bind mount: {}", std::io::Error::last_os_error());
            return SKIPPED;
        }
        if let Err(why) = refuse_getrandom(libc::ENOSYS) {
            println!("  skipped: {why}");
            return SKIPPED;
        }
        let mut out = [0u8; 64];
        match fkrng::try_fill(&mut out) {
            Err(e)
                if e.to_string()
                    .contains("/dev/urandom is not the kernel's random device") =>
            {
                if out != [0u8; 64] {
                    println!("  the error came with output");
                    return 1;
                }
                println!("  ok, as expected: the mounted file was refused (\"{e}\")");
                PASSED
            }
            Err(e) => {
                println!("  failed with another error: {e}");
                1
            }
            Ok(()) if out == stream_of_the_file() => {
                println!("  seeded from the mounted file");
                1
            }
            Ok(()) => {
                println!("  seeded from something other than the mounted file");
                1
            }
        }
    }

    /// A `/dev` that holds `/dev/urandom` alone (a tmpfs with that one device node, in a
    /// mount namespace of this child's own), and `getrandom` refused: seeds come from
    /// `/dev/urandom`, whose pool readiness is asked through it, since `/dev/random` cannot
    /// be polled.
    fn only_urandom() -> i32 {
        // SAFETY: a new mount namespace for this single-threaded child only.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            println!(
                "  skipped: no mount namespace: {}",
                std::io::Error::last_os_error()
            );
            return SKIPPED;
        }
        // SAFETY: NUL-terminated strings; makes mounts private to this namespace, mounts a
        // tmpfs over /dev inside it and makes the one device node 1:9 there.
        let made = unsafe {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0
                && libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    c"mode=0755".as_ptr().cast(),
                ) == 0
                && libc::mknod(
                    c"/dev/urandom".as_ptr(),
                    libc::S_IFCHR | 0o444,
                    libc::makedev(1, 9),
                ) == 0
        };
        if !made {
            println!(
                "  skipped: a /dev of its own: {}",
                std::io::Error::last_os_error()
            );
            return SKIPPED;
        }
        if std::path::Path::new("/dev/random").exists() {
            println!("  /dev/random is still there");
            return 1;
        }
        if let Err(why) = refuse_getrandom(libc::ENOSYS) {
            println!("  skipped: {why}");
            return SKIPPED;
        }
        let mut first = [0u8; 64];
        if let Err(e) = fkrng::try_fill(&mut first) {
            println!("  the first read failed: {e}");
            return 1;
        }
        // A new thread seeds from the device too.
        let other = std::thread::spawn(|| {
            let mut out = [0u8; 64];
            fkrng::try_fill(&mut out).map(|()| out)
        })
        .join()
        .unwrap();
        match other {
            Ok(other) if first != [0u8; 64] && other != [0u8; 64] && other != first => {
                println!("  ok: two threads seeded from /dev/urandom alone");
                PASSED
            }
            Ok(_) => {
                println!("  zero or repeated output");
                1
            }
            Err(e) => {
                println!("  a new thread's first read failed: {e}");
                1
            }
        }
    }

    /// A read that must reseed (after `reseed_all`) while `getrandom` fails with `EIO`, of
    /// sizes served from the buffer and past it: the error, and zeros in the whole buffer
    /// given, whatever it held and whatever the read had copied before it found the state
    /// stale.
    fn failed_reseed_leaves_zeros() -> i32 {
        fkrng::fill(&mut [0u8; 16]);
        if let Err(why) = refuse_getrandom(libc::EIO) {
            println!("  skipped: {why}");
            return SKIPPED;
        }
        for len in [1, 16, 500, 992, 4096] {
            fkrng::reseed_all();
            let mut out = vec![0xee_u8; len];
            match fkrng::try_fill(&mut out) {
                Err(e) if e.raw_os_error() == Some(libc::EIO) && out.iter().all(|&b| b == 0) => {}
                Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                    let kept = out.iter().filter(|&&b| b != 0).count();
                    println!("  {len} bytes: the error left {kept} non-zero bytes");
                    return 1;
                }
                other => {
                    println!("  {len} bytes: {other:?}, not EIO");
                    return 1;
                }
            }
        }
        println!("  ok: EIO and zeros for 1 to 4096 bytes");
        PASSED
    }

    /// Runs `scenario` in a forked child and returns its exit status. This process is
    /// single-threaded when it forks (no test harness, and scenarios join their threads), so
    /// the child may run ordinary code.
    fn run_in_child(scenario: fn() -> i32) -> i32 {
        let child = child::run(How::Fork, |_| {
            let status = scenario();
            std::io::stdout().flush().unwrap();
            status
        });
        child.status.code()
    }

    pub(super) fn main() {
        type Scenario = (&'static str, fn() -> i32);
        let scenarios: [Scenario; 4] = [
            (
                "a reused descriptor number is never read as a seed",
                reused_descriptor,
            ),
            (
                "a file mounted over /dev/urandom is refused",
                device_replaced_by_a_file,
            ),
            ("/dev/urandom alone (no /dev/random) seeds", only_urandom),
            (
                "a reseed that fails leaves zeros in the buffer",
                failed_reseed_leaves_zeros,
            ),
        ];
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for (name, scenario) in scenarios {
            println!("seed source: {name}");
            match run_in_child(scenario) {
                PASSED => passed += 1,
                SKIPPED => skipped += 1,
                status => {
                    println!("  FAILED (status {status})");
                    failed += 1;
                }
            }
        }
        println!("seed_source: {passed} passed, {failed} failed, {skipped} skipped");
        if failed > 0 {
            std::process::exit(1);
        }
    }
}
