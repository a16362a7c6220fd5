//! Steady-state small reads: `fkrng::fill` of 16 bytes, 1,000,000 times by default (about
//! 15.3 MiB), on the main thread. `scripts/count-syscalls.sh` runs it under `strace` to count
//! the `getrandom` system calls (first seeding plus one reseed per 1 to 2 MiB of keystream),
//! and this program itself counts heap allocations made by the reads after the first (there
//! must be none).
//!
//! Usage: `small_reads [READS] [BYTES_PER_READ]`. Prints `reads=… bytes=… allocations=…`.
//! With 0 reads it never calls fkrng: the baseline of what the program does without it.

use fkrng_test_support::alloc::{Counting, allocations};
use std::hint::black_box;

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
    // The first read sets the thread up (its state mapping, the fork handlers, the VMClock
    // probe); allocations are counted from the second read on.
    if reads > 0 {
        fkrng::fill(black_box(&mut *dest));
    }
    let before = allocations();
    let mut acc = 0u8;
    for _ in 1..reads {
        fkrng::fill(black_box(&mut *dest));
        acc ^= dest[0];
    }
    let allocations = allocations() - before;
    black_box(acc);
    println!(
        "reads={reads} bytes={} allocations={allocations}",
        reads * size
    );
}
