//! A new thread's first 16-byte read, timed inside the thread around the read alone
//! (creating and joining the thread are not counted): fkrng and `rand::rng()` in turns,
//! median of THREADS new threads each.
//!
//! Usage: `new_thread_read [THREADS] [joined|live]` (200 and `joined` by default). `joined`:
//! each thread exits before the next starts (an exited thread's state is there to reuse);
//! `live`: every thread waits until all have read, so each takes a state no thread had.
//! Prints `mode=… threads=… fkrng_median_ns=… rand_median_ns=… ratio=…`, and on Linux the
//! page faults the reads took (`fkrng_faults=… rand_faults=…`, medians): first touches of
//! a new thread's stack and of new heap or state memory.

use rand_core::Rng;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

fn fkrng_read() {
    black_box(fkrng::array::<16>());
}

fn rand_read() {
    let mut b = [0u8; 16];
    rand::rng().fill_bytes(&mut b);
    black_box(b);
}

/// Minor page faults of the calling thread so far (0 where not counted).
fn faults() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `getrusage` writes one `rusage`, which is plain data valid when zeroed.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage`.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } == 0 {
            return usage.ru_minflt as u64;
        }
    }
    0
}

fn median(mut ns: Vec<u64>) -> u64 {
    ns.sort_unstable();
    ns[ns.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads: usize = match args.next().map_or(Ok(200), |n| n.parse()) {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("new_thread_read: THREADS must be a positive number");
            std::process::exit(2);
        }
    };
    let live = match args.next().as_deref() {
        None | Some("joined") => false,
        Some("live") => true,
        Some(other) => {
            eprintln!("new_thread_read: unknown mode {other:?} (joined or live)");
            std::process::exit(2);
        }
    };
    // The process's first read (fork handlers, the first mapping) is not a new thread's.
    fkrng_read();
    rand_read();
    let timed = |read: fn()| {
        let before = faults();
        let start = Instant::now();
        read();
        let ns = start.elapsed().as_nanos() as u64;
        (ns, faults() - before)
    };
    let (mut fkrng_ns, mut rand_ns) = (Vec::new(), Vec::new());
    if live {
        let done = Barrier::new(2 * threads + 1);
        std::thread::scope(|s| {
            let mut handles = Vec::new();
            for _ in 0..threads {
                for (read, is_fkrng) in [(fkrng_read as fn(), true), (rand_read, false)] {
                    let done = &done;
                    let h = s.spawn(move || {
                        let ns = timed(read);
                        done.wait();
                        (ns, is_fkrng)
                    });
                    handles.push(h);
                }
            }
            done.wait();
            for h in handles {
                let (ns, is_fkrng) = h.join().expect("reader thread");
                if is_fkrng {
                    fkrng_ns.push(ns)
                } else {
                    rand_ns.push(ns)
                }
            }
        });
    } else {
        for _ in 0..threads {
            fkrng_ns.push(
                std::thread::spawn(move || timed(fkrng_read))
                    .join()
                    .unwrap(),
            );
            rand_ns.push(std::thread::spawn(move || timed(rand_read)).join().unwrap());
        }
    }
    let split = |v: Vec<(u64, u64)>| -> (Vec<u64>, Vec<u64>) { v.into_iter().unzip() };
    let ((f, f_faults), (r, r_faults)) = (split(fkrng_ns), split(rand_ns));
    let (f, r) = (median(f), median(r));
    println!(
        "mode={} threads={threads} fkrng_median_ns={f} rand_median_ns={r} ratio={:.2} \
         fkrng_faults={} rand_faults={}",
        if live { "live" } else { "joined" },
        f as f64 / r as f64,
        median(f_faults),
        median(r_faults)
    );
}
