//! The process's first 16-byte read, in a small process or a large one: before the read the
//! program makes MAPPINGS one-page mappings of alternating protection (which the kernel
//! cannot merge) and touches MIB MiB of heap memory, as a long-running server has; then it
//! times the first read of the generator named and counts the heap allocations it makes.
//!
//! Usage: `process_first_read fkrng|rand [MAPPINGS] [MIB]` (0 and 0 by default). Prints
//! `reader=… mappings=… touched_mib=… first_read_ns=… allocations=… allocated_bytes=…`.

use fkrng_test_support::alloc::{Counting, allocated_bytes, allocations};
use fkrng_test_support::maps;
use rand_core::Rng;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: Counting = Counting;

fn fail(message: &str) -> ! {
    eprintln!("process_first_read: {message}");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "fkrng".into());
    let mut number = |what: &str| -> usize {
        args.next()
            .map_or(Ok(0), |n| n.parse())
            .unwrap_or_else(|_| fail(&format!("{what} must be a number")))
    };
    let (mappings, mib) = (number("MAPPINGS"), number("MIB"));
    if let Err(e) = maps::add_unmergeable(mappings) {
        fail(e);
    }
    let touched = vec![1u8; mib << 20];
    black_box(&touched);
    let (allocs, bytes) = (allocations(), allocated_bytes());
    let start = Instant::now();
    match name.as_str() {
        "fkrng" => {
            black_box(fkrng::array::<16>());
        }
        "rand" => {
            let mut b = [0u8; 16];
            rand::rng().fill_bytes(&mut b);
            black_box(b);
        }
        other => fail(&format!("unknown reader {other:?} (fkrng or rand)")),
    }
    let ns = start.elapsed().as_nanos();
    println!(
        "reader={name} mappings={mappings} touched_mib={mib} first_read_ns={ns} allocations={} \
         allocated_bytes={}",
        allocations() - allocs,
        allocated_bytes() - bytes
    );
}
