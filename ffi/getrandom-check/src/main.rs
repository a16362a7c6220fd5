//! Exercises the `getrandom` crate the way other crates do, and checks what it gets.
//!
//! `fill N`: N `getrandom::fill` calls (0.4) of 16 bytes, each result different from the
//! one before; prints the time per call. `fill03 N`: the same through getrandom 0.3.
//! `uuid N`: N `Uuid::new_v4()`, all distinct and of version 4. `fork`: a forked child's
//! next 32 bytes differ from the parent's. `signal`: fills from a signal handler that
//! interrupts fills (with fkrng's test hooks, `--cfg fkrng_test_hooks`: some took fkrng's
//! one-off path). `teardown`: fills from a thread-local destructor after fkrng's state is
//! released (with the hooks: through the one-off path). `serves yes|no`: what
//! `fkrng::getrandom_backend_serves()` must answer in this build. Exits non-zero when a
//! check fails.

// The backend is in fkrng; naming the crate links it.
#[cfg(feature = "fkrng")]
use fkrng as _;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

fn backend() -> &'static str {
    if cfg!(feature = "fkrng") {
        "fkrng"
    } else {
        "default"
    }
}

fn fail(what: &str) -> ! {
    eprintln!("getrandom-check: FAILED: {what}");
    std::process::exit(1)
}

fn fill_loop(n: u64, fill: impl Fn(&mut [u8; 16])) {
    let mut prev = [0u8; 16];
    let mut same = 0u64;
    let start = Instant::now();
    for _ in 0..n {
        let mut cur = [0u8; 16];
        fill(&mut cur);
        same += u64::from(cur == prev);
        prev = cur;
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "getrandom-check: backend={} calls={n} bytes=16 ns_per_call={ns:.1}",
        backend()
    );
    if same != 0 {
        fail(&format!("{same} results equal to the one before"));
    }
}

fn uuids(n: usize) {
    let mut seen = HashSet::with_capacity(n);
    for _ in 0..n {
        let id = uuid::Uuid::new_v4();
        if id.get_version_num() != 4 {
            fail("not a version 4 UUID");
        }
        seen.insert(id);
    }
    if seen.len() != n {
        fail(&format!("{} of {n} UUIDs distinct", seen.len()));
    }
    println!(
        "getrandom-check: backend={} uuids={n} distinct={}",
        backend(),
        seen.len()
    );
}

fn fork_child_differs() {
    let mut warm = [0u8; 64];
    getrandom::fill(&mut warm).unwrap_or_else(|_| fail("fill"));
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        fail("pipe");
    }
    // SAFETY: the child only fills, writes and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut child = [0u8; 32];
        let ok = getrandom::fill(&mut child).is_ok()
            // SAFETY: `child` is 32 readable bytes.
            && unsafe { libc::write(fds[1], child.as_ptr().cast(), 32) } == 32;
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    if pid < 0 {
        fail("fork");
    }
    let mut parent = [0u8; 32];
    getrandom::fill(&mut parent).unwrap_or_else(|_| fail("fill"));
    let mut child = [0u8; 32];
    // SAFETY: `child` is 32 writable bytes.
    let n = unsafe { libc::read(fds[0], child.as_mut_ptr().cast(), 32) };
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is writable.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if n != 32 || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        fail("the child's bytes");
    }
    if parent == child || child == [0u8; 32] {
        fail("the child's bytes equal the parent's");
    }
    println!(
        "getrandom-check: backend={} fork: the child's 32 bytes differ from the parent's",
        backend()
    );
}

static HANDLED: AtomicU32 = AtomicU32::new(0);
static FAILED_IN_HANDLER: AtomicU32 = AtomicU32::new(0);
static LAST: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_alarm(_: libc::c_int) {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() || b == [0u8; 8] {
        FAILED_IN_HANDLER.fetch_add(1, Ordering::Relaxed);
    }
    LAST.store(u64::from_le_bytes(b), Ordering::Relaxed);
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// Whether fkrng's test hooks are in this build (fkrng linked, `--cfg fkrng_test_hooks`).
const HOOKS: bool = cfg!(all(feature = "fkrng", fkrng_test_hooks));

fn one_off(kind: &str) -> u64 {
    #[cfg(all(feature = "fkrng", fkrng_test_hooks))]
    return match kind {
        "interrupted" => fkrng::test_hooks::counters::one_off_reads_interrupted(),
        _ => fkrng::test_hooks::counters::one_off_reads_unavailable(),
    };
    #[cfg(not(all(feature = "fkrng", fkrng_test_hooks)))]
    {
        let _ = kind;
        0
    }
}

fn signal_fills() {
    // SAFETY: an all-zero `sigaction` is valid; the handler is async-signal-safe through
    // fkrng's one-off path (and the system call of the default backend).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        let tick = libc::timeval {
            tv_sec: 0,
            tv_usec: 200,
        };
        let timer = libc::itimerval {
            it_interval: tick,
            it_value: tick,
        };
        libc::setitimer(libc::ITIMER_REAL, &timer, std::ptr::null_mut());
    }
    let before = one_off("interrupted");
    let mut buf = [0u8; 16];
    while HANDLED.load(Ordering::Relaxed) < 2000 {
        getrandom::fill(&mut buf).unwrap_or_else(|_| fail("fill"));
    }
    // SAFETY: an all-zero timer stops it.
    unsafe {
        let off: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_REAL, &off, std::ptr::null_mut());
    }
    let interrupted = one_off("interrupted") - before;
    if FAILED_IN_HANDLER.load(Ordering::Relaxed) != 0 {
        fail("a fill in the signal handler failed or returned zeros");
    }
    if HOOKS && interrupted == 0 {
        fail("no handler's fill interrupted a fill (one-off reads: 0)");
    }
    println!(
        "getrandom-check: backend={} signal: {} handler fills, {interrupted} one-off reads for interrupted fills",
        backend(),
        HANDLED.load(Ordering::Relaxed)
    );
}

struct FillOnDrop(std::sync::mpsc::Sender<[u8; 32]>);

impl Drop for FillOnDrop {
    fn drop(&mut self) {
        // fkrng's own state was set up after this value was registered, so its destructor
        // has already run: this read finds the state released.
        let mut b = [0u8; 32];
        if getrandom::fill(&mut b).is_ok() {
            let _ = self.0.send(b);
        }
    }
}

thread_local! {
    static LATE: std::cell::RefCell<Option<FillOnDrop>> = const { std::cell::RefCell::new(None) };
}

fn teardown_fills() {
    let before = one_off("unavailable");
    let (tx, rx) = std::sync::mpsc::channel();
    let during = std::thread::spawn(move || {
        LATE.with(|late| *late.borrow_mut() = Some(FillOnDrop(tx)));
        let mut b = [0u8; 32];
        getrandom::fill(&mut b).unwrap_or_else(|_| fail("fill"));
        b
    })
    .join()
    .unwrap_or_else(|_| fail("thread"));
    let late = rx
        .recv()
        .unwrap_or_else(|_| fail("no fill from the thread-local destructor"));
    let unavailable = one_off("unavailable") - before;
    if late == [0u8; 32] || late == during {
        fail("the destructor's bytes");
    }
    if HOOKS && unavailable != 1 {
        fail(&format!(
            "{unavailable} one-off reads for released states, 1 expected"
        ));
    }
    println!(
        "getrandom-check: backend={} teardown: a destructor's fill after thread exit, {unavailable} one-off read",
        backend()
    );
}

/// `serves yes|no`: `fkrng::getrandom_backend_serves()` gives the answer expected of this
/// build (`yes` with the cfg, `no` without it).
fn serves(expected: bool) {
    #[cfg(feature = "fkrng")]
    let serves = fkrng::getrandom_backend_serves();
    #[cfg(not(feature = "fkrng"))]
    let serves = false;
    println!(
        "getrandom-check: backend={} getrandom_backend_serves={serves}",
        backend()
    );
    if serves != expected {
        fail("getrandom_backend_serves() gave the wrong answer");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| -> u64 {
        args.get(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000)
    };
    match args.first().map(String::as_str) {
        Some("fill") => fill_loop(n(1), |b| {
            getrandom::fill(b).unwrap_or_else(|_| fail("fill"))
        }),
        Some("fill03") => fill_loop(n(1), |b| {
            getrandom03::fill(b).unwrap_or_else(|_| fail("fill"))
        }),
        Some("uuid") => uuids(n(1) as usize),
        Some("fork") => fork_child_differs(),
        Some("signal") => signal_fills(),
        Some("teardown") => teardown_fills(),
        Some("serves") => serves(args.get(1).map(String::as_str) == Some("yes")),
        _ => {
            eprintln!(
                "usage: fkrng-getrandom-check fill|fill03|uuid [N] | fork | signal | teardown \
                 | serves yes|no"
            );
            std::process::exit(2)
        }
    }
}
