//! A panic of an infallible entry point names the caller's line, not fkrng's: `fill`,
//! `array`, `u32`, `u64`, `fill_uninit` and `ThreadRng`'s trait methods carry
//! `#[track_caller]`.
//!
//! The panic needs an OS random source that fails at the first seeding. In a forked child a
//! seccomp filter makes every `getrandom` system call fail with `EIO` (an error fkrng
//! returns rather than falls back from); each entry point is then called once, and the
//! location its panic reports must be this file at the line of the call.
//!
//! x86-64 Linux only: the filter compares system call numbers, which differ per
//! architecture, and under qemu-user it would filter the emulator's own calls.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    filtered::main();
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    println!("track_caller: needs x86-64 Linux (a seccomp filter by system call number); skipped");
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod filtered {
    use fkrng_test_support::child::{self, How};
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::Mutex;

    /// The child's exit status when it cannot install the filter.
    const REFUSED: i32 = 3;

    /// Where the last panic was raised: `file:line`.
    static LOCATION: Mutex<Option<String>> = Mutex::new(None);

    /// Makes every later `getrandom` system call of this process fail with `EIO`; `false`
    /// where seccomp filters are refused (valgrind, some emulators and sandboxes).
    fn fail_getrandom() -> bool {
        const BPF_LD_W_ABS: u16 = 0x20;
        const BPF_JEQ_K: u16 = 0x15;
        const BPF_RET_K: u16 = 0x06;
        let filter = [
            // The system call number (offset 0 of `struct seccomp_data`).
            libc::sock_filter {
                code: BPF_LD_W_ABS,
                jt: 0,
                jf: 0,
                k: 0,
            },
            libc::sock_filter {
                code: BPF_JEQ_K,
                jt: 0,
                jf: 1,
                k: libc::SYS_getrandom as u32,
            },
            libc::sock_filter {
                code: BPF_RET_K,
                jt: 0,
                jf: 0,
                k: libc::SECCOMP_RET_ERRNO | libc::EIO as u32,
            },
            libc::sock_filter {
                code: BPF_RET_K,
                jt: 0,
                jf: 0,
                k: libc::SECCOMP_RET_ALLOW,
            },
        ];
        let program = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: plain prctl and seccomp calls; `program` points at `filter`, which lives
        // across the call (the kernel copies the program).
        unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
                && libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &program as *const libc::sock_fprog,
                ) == 0
        }
    }

    /// Calls `f`, which must panic, and returns the line its panic named in this file.
    fn panic_line(f: impl FnOnce()) -> Option<u32> {
        *LOCATION.lock().unwrap() = None;
        let result = panic::catch_unwind(AssertUnwindSafe(f));
        assert!(result.is_err(), "the call did not panic");
        let location = LOCATION.lock().unwrap().take()?;
        let (file, line) = location.rsplit_once(':')?;
        (file.ends_with("tests/track_caller.rs")).then(|| line.parse().ok())?
    }

    pub(super) fn main() {
        let child = child::run(How::Fork, |pipe| {
            panic::set_hook(Box::new(|info| {
                if let Some(l) = info.location() {
                    *LOCATION.lock().unwrap() = Some(format!("{}:{}", l.file(), l.line()));
                }
            }));
            if !fail_getrandom() {
                return REFUSED;
            }
            assert!(
                fkrng::try_fill(&mut [0u8; 16]).is_err(),
                "getrandom still works"
            );

            let mut report = String::new();
            // The call and `line!()` come from one invocation, on one line.
            macro_rules! at {
                ($name:expr, $call:expr) => {
                    let got = panic_line(|| {
                        let _ = $call;
                    });
                    report.push_str(&format!("{} {} {got:?}\n", $name, line!()));
                };
            }
            at!("fill", fkrng::fill(&mut [0u8; 16]));
            at!("array", fkrng::array::<12>());
            at!("u32", fkrng::u32());
            at!("u64", fkrng::u64());
            let mut uninit = [std::mem::MaybeUninit::<u8>::uninit(); 8];
            at!("fill_uninit", fkrng::fill_uninit(&mut uninit));
            {
                use rand_core::TryRng;
                let mut r = fkrng::rng();
                at!("try_next_u32", r.try_next_u32());
                at!("try_next_u64", r.try_next_u64());
                at!("try_fill_bytes", r.try_fill_bytes(&mut [0; 4]));
            }
            #[cfg(feature = "rand_core_0_6")]
            {
                use rand_core_06::RngCore;
                let mut r = fkrng::rng();
                at!("0.6 next_u32", r.next_u32());
                at!("0.6 next_u64", r.next_u64());
                at!("0.6 fill_bytes", r.fill_bytes(&mut [0; 4]));
            }
            #[cfg(feature = "rand_core_0_9")]
            {
                use rand_core_09::RngCore;
                let mut r = fkrng::rng();
                at!("0.9 next_u32", r.next_u32());
                at!("0.9 next_u64", r.next_u64());
                at!("0.9 fill_bytes", r.fill_bytes(&mut [0; 4]));
            }
            pipe.send(report.as_bytes());
            0
        });
        if child.status == child::Status::Exited(REFUSED) {
            println!("track_caller: seccomp filters are refused here; skipped (runs natively)");
            return;
        }
        let report = String::from_utf8(child.expect_success("the filtered child")).unwrap();
        let mut checked = 0;
        for line in report.lines() {
            let (name, rest) = line.rsplit_once(' ').unwrap();
            let (name, expected) = name.rsplit_once(' ').unwrap();
            assert_eq!(
                rest,
                format!("Some({expected})"),
                "{name}: its panic should name this file's line {expected}"
            );
            checked += 1;
        }
        let expected = 8
            + 3 * usize::from(cfg!(feature = "rand_core_0_6"))
            + 3 * usize::from(cfg!(feature = "rand_core_0_9"));
        assert_eq!(checked, expected);
        println!("track_caller: {checked} entry points name the caller's line");
    }
}
