//! Memory per thread: starts 10,000 threads (64 KiB stacks) that each make one 16-byte read
//! and then wait, and prints how much the process's resident memory grew, against the same
//! threads making no read (`none`) and reading `rand::rng()` instead (`rand`).
//!
//! Usage: `thread_memory fkrng|rand|none [THREADS]`. Prints
//! `reader=… threads=… rss_growth_kib=… per_thread_bytes=… maps_growth=…`: the growth of the
//! resident memory and of the kernel mappings (lines of `/proc/self/maps`) while the threads
//! wait; the difference between a reader's figures and `none`'s is what the generator costs
//! per thread. For `fkrng` the
//! line goes on with the sizes of one thread's generator, from the test hooks (builds with
//! `--cfg fkrng_test_hooks`, as `scripts/bench.sh` builds it):
//! `state_bytes=… storage_bytes=… thread_local_bytes=…`.

use rand_core::Rng;
use std::hint::black_box;
use std::sync::Barrier;

/// Resident set size of this process in KiB, from `/proc/self/statm` (Linux).
fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    pages * page / 1024
}

/// One thread's generator sizes after `read`, as the rest of the output line; `None` for a
/// reader other than fkrng.
#[cfg(fkrng_test_hooks)]
fn state_figures(read: fn()) -> Option<String> {
    let m = std::thread::spawn(move || {
        read();
        fkrng::test_hooks::memory::state_memory()
    })
    .join()
    .expect("state figures")?;
    Some(format!(
        " state_bytes={} storage_bytes={} thread_local_bytes={}",
        m.state, m.storage, m.thread_locals
    ))
}

#[cfg(not(fkrng_test_hooks))]
fn state_figures(_: fn()) -> Option<String> {
    None
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reader = args.next().unwrap_or_else(|| "fkrng".into());
    let threads: usize = match args.next().map_or(Ok(10_000), |n| n.parse()) {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("thread_memory: THREADS must be a positive number");
            std::process::exit(2);
        }
    };
    let read: fn() = match reader.as_str() {
        "fkrng" => || {
            black_box(fkrng::array::<16>());
        },
        "rand" => || {
            let mut b = [0u8; 16];
            rand::rng().fill_bytes(&mut b);
            black_box(b);
        },
        "none" => || {},
        other => {
            eprintln!("thread_memory: unknown reader {other:?} (fkrng, rand or none)");
            std::process::exit(2);
        }
    };
    let all_read = Barrier::new(threads + 1);
    let release = Barrier::new(threads + 1);
    let before = rss_kib();
    let maps_before = fkrng_test_support::maps::count() as u64;
    let (grown, maps_grown) = std::thread::scope(|s| {
        for i in 0..threads {
            let spawned = std::thread::Builder::new()
                .stack_size(64 << 10)
                .spawn_scoped(s, || {
                    read();
                    all_read.wait();
                    release.wait();
                });
            if let Err(e) = spawned {
                // The threads already started wait at the barrier for ever: leave without
                // joining them.
                eprintln!(
                    "thread_memory: cannot start thread {} of {threads}: {e}",
                    i + 1
                );
                std::process::exit(1);
            }
        }
        all_read.wait();
        let grown = rss_kib().saturating_sub(before);
        let maps_grown = (fkrng_test_support::maps::count() as u64).saturating_sub(maps_before);
        release.wait();
        (grown, maps_grown)
    });
    // After the measurement: this thread's state, spare once it exits, would otherwise be
    // taken by the first measured thread instead of new pages.
    let state = state_figures(read);
    print!(
        "reader={reader} threads={threads} rss_growth_kib={grown} per_thread_bytes={} \
         maps_growth={maps_grown}",
        grown * 1024 / threads as u64
    );
    println!("{}", state.unwrap_or_default());
}
