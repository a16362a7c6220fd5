//! The size sweep: `fkrng::fill`, `rand::rng()`'s `fill_bytes` and a raw
//! `chacha20::ChaCha20Rng`'s `fill_bytes` of every size from 1 byte to 1 MiB on a doubling
//! grid, plus the sizes around the 992-byte buffer (991, 992, 993, 1,024, 1,025, 1,984,
//! 2,048), in one run. `scripts/bench-sweep.sh` runs it once per keystream path this CPU
//! can take and `scripts/bench-report.py --sweep` renders the results (docs/BENCHMARKS.md,
//! "Size sweep").
//!
//! Built as an example (not a criterion group) because of how it samples: a round times
//! one batch of calls of every generator at every size in turn, each batch about
//! `BATCH_US` microseconds (one call at least), and the run is many rounds, so that every
//! size meets the same mix of quiet and busy moments of the machine and the report can
//! take a low percentile over the rounds (the time of an undisturbed batch; other work
//! only ever slows a batch). Criterion measures one benchmark after another, each for
//! seconds: on a machine whose other CPU runs builds, neighbouring sizes then meet
//! different loads. The first round is a warm-up and is not printed. Before each batch of
//! fkrng the thread's buffer is emptied, so that requests of 992 bytes and more are direct
//! fills from the first call on, as they are in a loop of one size.
//!
//! Usage: `size_sweep [ROUNDS] [BATCH_US] [SIZE,...]` (defaults 101, 100 and no sizes
//! beyond the sweep's; each from 1 to 1,048,576). Prints the keystream
//! path, then one line per measurement: `generator<TAB>bytes<TAB>round<TAB>ns per call`.

use rand_core::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::Instant;

/// The sizes: powers of two from 1 B to 1 MiB, the sizes around the buffer, and `extra`.
fn sizes(extra: &[usize]) -> Vec<usize> {
    let mut sizes: Vec<usize> = (0..=20).map(|k| 1 << k).collect();
    sizes.extend([991, 992, 993, 1025, 1984]);
    sizes.extend(extra);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

const GENERATORS: [&str; 3] = ["fkrng", "rand::rng()", "ChaCha20Rng"];

fn arg(n: usize, default: u64) -> u64 {
    std::env::args().nth(n).map_or(default, |s| {
        s.parse().unwrap_or_else(|_| {
            eprintln!("size_sweep: not a number: {s:?}");
            std::process::exit(2)
        })
    })
}

fn main() {
    let rounds = arg(1, 101);
    let batch_ns = arg(2, 100) * 1000;
    let extra: Vec<usize> = std::env::args().nth(3).map_or(Vec::new(), |list| {
        list.split(',')
            .map(|s| match s.parse() {
                Ok(n) if (1..=1 << 20).contains(&n) => n,
                _ => {
                    eprintln!("size_sweep: not a size from 1 to 1048576: {s:?}");
                    std::process::exit(2)
                }
            })
            .collect()
    });
    let sizes = sizes(&extra);
    let mut buf = vec![0u8; 1 << 20];
    let mut rand_rng = rand::rng();
    let mut chacha = chacha20::ChaCha20Rng::from_seed(fkrng::array());
    let mut fill = |generator: usize, dest: &mut [u8], calls: u64| -> u64 {
        if generator == 0 {
            // The buffer emptied (1,984 bytes from any state end with a direct fill), so
            // that fills of 992 bytes and more are direct fills from the first call on, as
            // they are in a loop of one size; otherwise what the previous batch left would
            // serve some of them (a 993-byte fill that finds `a` bytes takes them and
            // refills, leaving `a - 1`).
            fkrng::fill(&mut [0; 1984]);
        }
        let start = Instant::now();
        for _ in 0..calls {
            match generator {
                0 => fkrng::fill(black_box(&mut *dest)),
                1 => rand_rng.fill_bytes(black_box(&mut *dest)),
                _ => chacha.fill_bytes(black_box(&mut *dest)),
            }
        }
        start.elapsed().as_nanos() as u64
    };
    // Calls per batch: from one batch of 10 calls (of one call from 64 KiB on).
    let mut calls = vec![[1u64; GENERATORS.len()]; sizes.len()];
    for (i, &n) in sizes.iter().enumerate() {
        for (g, c) in calls[i].iter_mut().enumerate() {
            let probe = if n >= 1 << 16 { 1 } else { 10 };
            fill(g, &mut buf[..n], probe);
            let ns = fill(g, &mut buf[..n], probe).max(1);
            *c = (batch_ns * probe / ns).max(1);
        }
    }
    println!("path\t{}", fkrng::keystream_path());
    for round in 0..=rounds {
        for (i, &n) in sizes.iter().enumerate() {
            // The generators take turns at going first.
            for k in 0..GENERATORS.len() {
                let g = (k + round as usize) % GENERATORS.len();
                let ns = fill(g, &mut buf[..n], calls[i][g]);
                if round > 0 {
                    let per_call = ns as f64 / calls[i][g] as f64;
                    println!("{}\t{n}\t{round}\t{per_call:.2}", GENERATORS[g]);
                }
            }
        }
    }
}
