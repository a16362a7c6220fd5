//! Steady-state small reads: `fkrng::fill` of 16 bytes, 1,000,000 times by default (about
//! 15.3 MiB), on the main thread. `scripts/count-syscalls.sh` runs it under `strace` to count
//! the `getrandom` system calls (first seeding plus one reseed per 1 to 2 MiB of keystream),
//! and this program itself counts heap allocations made by the reads after the first (there
//! must be none).
//!
//! Usage: `small_reads [READS] [BYTES_PER_READ]`. Prints `reads=… bytes=… allocations=…`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting allocations and reallocations.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s; the counter is a relaxed atomic add.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged (see the impl).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn arg(n: usize, default: usize) -> Result<usize, String> {
    match std::env::args().nth(n) {
        None => Ok(default),
        Some(s) => s
            .parse()
            .map_err(|_| format!("small_reads: not a count: {s:?}")),
    }
}

fn main() {
    let (reads, size) = match (arg(1, 1_000_000), arg(2, 16)) {
        (Ok(r), Ok(s)) if s <= 4096 => (r, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
        _ => {
            eprintln!("small_reads: at most 4096 bytes per read");
            std::process::exit(2);
        }
    };
    let mut buf = [0u8; 4096];
    let dest = &mut buf[..size];
    // The first read sets the thread up (its state mapping, the fork check, which reads
    // /proc/self/smaps); allocations are counted from the second read on.
    fkrng::fill(black_box(&mut *dest));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let mut acc = 0u8;
    for _ in 1..reads {
        fkrng::fill(black_box(&mut *dest));
        acc ^= dest[0];
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    black_box(acc);
    println!(
        "reads={reads} bytes={} allocations={allocations}",
        reads * size
    );
}
