//! docs/SECURITY.md's rule for sandboxes, "read once, then install the filter", holds for
//! threads started later, under a filter that lists the `mmap` flags it allows (as
//! Chromium's `RestrictMmapFlags` does): a forked child reads once on its main thread, then
//! installs a kill-by-default seccomp filter that allows `mmap` only with `PROT_NONE` or
//! `PROT_READ | PROT_WRITE` and `MAP_PRIVATE | MAP_ANONYMOUS`, with `MAP_NORESERVE`,
//! `MAP_STACK` and `MAP_FIXED` (what glibc's allocator and `pthread_create` use), and the
//! other system calls threads need; then 200 threads live at once read 16 bytes each. A
//! call outside the filter kills the child with `SIGSYS`; the 200 values must be distinct.
//!
//! x86-64 Linux only (the system call numbers); elsewhere, and where seccomp filters are
//! refused (qemu-user), it prints why it was skipped. Runs without the test harness, so that
//! the process is single-threaded when it forks and has not read before.

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn main() {
    linux::main();
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn main() {
    println!("sandbox: x86-64 Linux only (seccomp, system call numbers), skipped");
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod linux {
    use fkrng_test_support::child::{self, How, Status};
    use std::sync::{Arc, Barrier};

    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const THREADS: usize = 200;
    const SKIPPED: i32 = 77;

    /// System calls allowed whatever their arguments: thread start and exit (glibc, the
    /// Rust runtime; glibc's allocator reads `/sys/devices/system/cpu/online` at a thread's
    /// first arena), memory, futexes, output, and `getrandom` (reseeds).
    const ALLOWED: &[libc::c_long] = &[
        libc::SYS_brk,
        libc::SYS_clone,
        libc::SYS_clone3,
        libc::SYS_close,
        libc::SYS_exit,
        libc::SYS_exit_group,
        libc::SYS_futex,
        libc::SYS_getpid,
        libc::SYS_getrandom,
        libc::SYS_gettid,
        libc::SYS_madvise,
        libc::SYS_mprotect,
        libc::SYS_munmap,
        libc::SYS_newfstatat,
        libc::SYS_openat,
        libc::SYS_read,
        libc::SYS_rseq,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sched_getaffinity,
        libc::SYS_sched_yield,
        libc::SYS_set_robust_list,
        libc::SYS_sigaltstack,
        libc::SYS_write,
    ];
    /// The only `mmap` protections and flags allowed.
    const PROT: u32 = (libc::PROT_READ | libc::PROT_WRITE) as u32;
    const FLAGS: u32 = (libc::MAP_PRIVATE
        | libc::MAP_ANONYMOUS
        | libc::MAP_NORESERVE
        | libc::MAP_STACK
        | libc::MAP_FIXED) as u32;

    fn install_filter() -> Result<(), String> {
        let stmt = |code: u32, k: u32| libc::sock_filter {
            code: code as u16,
            jt: 0,
            jf: 0,
            k,
        };
        let jump = |op: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
            code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
            jt,
            jf,
            k,
        };
        let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
        let ret = libc::BPF_RET | libc::BPF_K;
        let kill = stmt(ret, libc::SECCOMP_RET_KILL_PROCESS);
        let allow = stmt(ret, libc::SECCOMP_RET_ALLOW);
        // struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (low word first).
        let mut program = vec![
            stmt(load, 4),
            jump(libc::BPF_JEQ, AUDIT_ARCH_X86_64, 1, 0),
            kill,
            stmt(load, 0),
        ];
        let n = ALLOWED.len() as u8;
        for (i, &nr) in ALLOWED.iter().enumerate() {
            // To `allow` (after the remaining checks and the `mmap` block of 8).
            program.push(jump(libc::BPF_JEQ, nr as u32, n - i as u8 + 8, 0));
        }
        program.extend([
            jump(libc::BPF_JEQ, libc::SYS_mmap as u32, 0, 7),
            stmt(load, 16 + 8 * 2),
            jump(libc::BPF_JSET, !PROT, 5, 0),
            stmt(load, 16 + 8 * 3),
            jump(libc::BPF_JSET, !FLAGS, 3, 0),
            stmt(load, 16 + 8 * 4),
            // A descriptor of -1 (no file).
            jump(libc::BPF_JEQ, u32::MAX, 2, 0),
            kill,
            kill,
            allow,
        ]);
        fkrng_test_support::seccomp::install(&mut program)
    }

    fn read16() -> [u8; 16] {
        let mut v = [0u8; 16];
        fkrng::fill(&mut v);
        v
    }

    /// In the child: one read, the filter, then 200 threads alive at once that read.
    fn read_once_then_filter_then_threads() -> i32 {
        let first = read16();
        if let Err(why) = install_filter() {
            println!("sandbox: {why}; skipped");
            return SKIPPED;
        }
        let all_started = Arc::new(Barrier::new(THREADS));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let all_started = Arc::clone(&all_started);
                std::thread::spawn(move || {
                    all_started.wait();
                    read16()
                })
            })
            .collect();
        let mut values: Vec<[u8; 16]> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        values.push(first);
        values.sort();
        values.dedup();
        if values.len() == THREADS + 1 { 0 } else { 1 }
    }

    pub(super) fn main() {
        let child = child::run(How::Fork, |_| read_once_then_filter_then_threads());
        match child.status {
            Status::Exited(0) => println!(
                "sandbox: {THREADS} threads read under an mmap-flag filter installed after one read: ok"
            ),
            Status::Exited(SKIPPED) => {}
            Status::Exited(1) => panic!("sandbox: repeated values"),
            other => panic!(
                "sandbox: the child ended with {other:?} (signal 31, SIGSYS: a call outside the filter)"
            ),
        }
    }
}
