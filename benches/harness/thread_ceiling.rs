//! The thread ceiling under the kernel's mapping limit (`vm.max_map_count`): fills this
//! process's mappings up to `HEADROOM` below the limit with one-page mappings of alternating
//! protection (which the kernel cannot merge), then starts threads (64 KiB stacks) that each
//! make one 16-byte read and wait, until a thread cannot be started. Each thread stack costs
//! the C library a mapping and a guard mapping; a generator that maps memory per thread
//! lowers the ceiling further.
//!
//! Usage: `thread_ceiling fkrng|rand|none [HEADROOM]` (HEADROOM: mappings, 5000 by default).
//! Prints `reader=… headroom=… threads=… maps_per_thread=…`.

use fkrng_test_support::maps;
use rand_core::Rng;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The read each started thread makes (a `fn()` as an address).
static READ: AtomicUsize = AtomicUsize::new(0);
/// Threads that have made their read.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A started thread: one read, then it waits for ever.
extern "C" fn reader(_: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `READ` holds a `fn()` stored by `main` before any thread starts.
    let read: fn() = unsafe { core::mem::transmute::<usize, fn()>(READ.load(Ordering::Relaxed)) };
    read();
    STARTED.fetch_add(1, Ordering::Release);
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

fn fail(message: &str) -> ! {
    eprintln!("thread_ceiling: {message}");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "fkrng".into());
    let headroom: usize = match args.next().map_or(Ok(5000), |n| n.parse()) {
        Ok(n) if n >= 100 => n,
        _ => fail("HEADROOM must be a number of mappings, at least 100"),
    };
    let read: fn() = match name.as_str() {
        "fkrng" => || {
            black_box(fkrng::array::<16>());
        },
        "rand" => || {
            let mut b = [0u8; 16];
            rand::rng().fill_bytes(&mut b);
            black_box(b);
        },
        "none" => || {},
        other => fail(&format!("unknown reader {other:?} (fkrng, rand or none)")),
    };
    let limit: usize = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| fail("cannot read /proc/sys/vm/max_map_count"));
    let filler = limit
        .checked_sub(maps::count() + headroom)
        .unwrap_or_else(|| fail("fewer free mappings than HEADROOM"));
    if let Err(e) = maps::add_unmergeable(filler) {
        fail(e);
    }
    let before = maps::count();
    // Threads are started with `pthread_create`, as a C program starts them: the standard
    // library's threads also map an alternate signal stack each, and abort the process when
    // that mapping fails.
    READ.store(read as usize, Ordering::Relaxed);
    // SAFETY: a zeroed `pthread_attr_t` is initialised by `pthread_attr_init` before use.
    let mut attr: libc::pthread_attr_t = unsafe { core::mem::zeroed() };
    // SAFETY: `attr` is a valid attribute object, initialised once and set before use.
    unsafe {
        libc::pthread_attr_init(&mut attr);
        libc::pthread_attr_setstacksize(&mut attr, 64 << 10);
    }
    let mut threads = 0usize;
    loop {
        // SAFETY: `pthread_t` is an integer or a pointer, written by `pthread_create`.
        let mut id: libc::pthread_t = unsafe { core::mem::zeroed() };
        // SAFETY: `reader` has the signature pthread expects and uses no argument; `attr`
        // is initialised.
        let r = unsafe { libc::pthread_create(&mut id, &attr, reader, core::ptr::null_mut()) };
        if r != 0 {
            break;
        }
        threads += 1;
    }
    while STARTED.load(Ordering::Acquire) < threads {
        std::thread::yield_now();
    }
    let grown = maps::count().saturating_sub(before);
    println!(
        "reader={name} headroom={headroom} threads={threads} maps_per_thread={:.3}",
        grown as f64 / threads.max(1) as f64
    );
    std::process::exit(0);
}
