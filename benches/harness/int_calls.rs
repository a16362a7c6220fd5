//! The integer paths through a held handle, `fkrng::rng()` against `rand::rng()`:
//! `next_u32`, `next_u64`, `random_range(0..6)` and `random_range(0..1_000_000_007)`; and
//! the bare generator's, a boxed `FkeRng` (no thread-local lookup or lifecycle check).
//!
//! Usage:
//! - `int_calls time [BATCHES]` (51 by default): for each call, BATCHES batches of 200,000
//!   calls of each generator in turns, in one process. Prints one line per call:
//!   `call=… fkrng_ns=… rand_ns=… ratio=… fke_rng_ns=… fke_rng_ratio=…` (medians of the
//!   batches, nanoseconds per call; the ratios are to `rand::rng()`'s time).
//! - `int_calls count CALL fkrng|rand N`: N calls of one generator after one warm-up call,
//!   for `valgrind --tool=callgrind` (scripts/count-instructions.sh takes the difference of two
//!   N to count the instructions per call). Prints `call=… reader=… calls=…`.

use rand::RngExt;
use rand_core::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

const CALLS: [&str; 4] = ["next_u32", "next_u64", "range_6", "range_1e9"];
const BATCH: u32 = 200_000;

/// `n` calls of `call` on `rng`, folded so that none is optimised away.
#[inline(never)]
fn run<R: Rng>(rng: &mut R, call: &str, n: u64) -> u64 {
    let mut acc = 0u64;
    match call {
        "next_u32" => (0..n).for_each(|_| acc ^= u64::from(rng.next_u32())),
        "next_u64" => (0..n).for_each(|_| acc ^= rng.next_u64()),
        "range_6" => (0..n).for_each(|_| acc ^= u64::from(rng.random_range(0..6u32))),
        "range_1e9" => (0..n).for_each(|_| acc ^= u64::from(rng.random_range(0..1_000_000_007u32))),
        _ => unreachable!("checked by the caller"),
    }
    black_box(acc)
}

/// Nanoseconds per call of one batch.
fn batch<R: Rng>(rng: &mut R, call: &str) -> f64 {
    let start = Instant::now();
    run(rng, call, u64::from(BATCH));
    start.elapsed().as_nanos() as f64 / f64::from(BATCH)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fail(message: &str) -> ! {
    eprintln!("int_calls: {message}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["time", rest @ ..] => {
            let batches: usize = match rest {
                [] => 51,
                [n] => n
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .unwrap_or_else(|| fail("BATCHES must be a positive number")),
                _ => fail("usage: int_calls time [BATCHES]"),
            };
            let (mut fk, mut rd) = (fkrng::rng(), rand::rng());
            let mut bare = Box::new(fkrng::FkeRng::from_seed([7; 32]));
            for call in CALLS {
                let (mut f, mut r, mut b) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..batches {
                    f.push(batch(&mut fk, call));
                    r.push(batch(&mut rd, call));
                    b.push(batch(&mut *bare, call));
                }
                let (f, r, b) = (median(f), median(r), median(b));
                println!(
                    "call={call} fkrng_ns={f:.3} rand_ns={r:.3} ratio={:.3} fke_rng_ns={b:.3} \
                     fke_rng_ratio={:.3}",
                    f / r,
                    b / r
                );
            }
        }
        ["count", call, reader, n] if CALLS.contains(call) => {
            let n: u64 = n.parse().unwrap_or_else(|_| fail("N must be a number"));
            match *reader {
                "fkrng" => {
                    let mut rng = fkrng::rng();
                    run(&mut rng, call, 1);
                    run(&mut rng, call, n);
                }
                "rand" => {
                    let mut rng = rand::rng();
                    run(&mut rng, call, 1);
                    run(&mut rng, call, n);
                }
                _ => fail("the reader is fkrng or rand"),
            }
            println!("call={call} reader={reader} calls={n}");
        }
        _ => fail(
            "usage: int_calls time [BATCHES] | int_calls count next_u32|next_u64|range_6|range_1e9 fkrng|rand N",
        ),
    }
}
