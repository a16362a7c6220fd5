//! fkrng against the other ways to get secure random bytes in Rust, each question one
//! criterion group with every peer measured in the same run:
//!
//! - `fill`: fills of 1 B to 1 MiB.
//! - `int`: one `u32` / `u64` (`fkrng::u32()`, and `next_u32` through a held `fkrng::rng()`
//!   handle, against a held `rand::rng()` handle); `FkeRng` is the bare generator (no
//!   thread-local lookup, re-entrancy flag, epoch or VM generation check), the floor under
//!   the thread-local reads.
//! - `sample`: `rand`'s extension methods through each generator's handle:
//!   `random_range(0..1000)` and a shuffle of 1000 elements.
//! - `array`: a 12-byte nonce and a 32-byte key.
//! - `threads`: aggregate throughput of 16-byte fills from 1, 2, 4, 64 and 512 threads.
//! - `first_read`: the first 16-byte read in a new thread (seeding and set-up), timed inside
//!   the thread: `fkrng` leases the zeroed slot of an exited thread (threads run one after
//!   another), `fkrng (new slot)` a slot no live thread left (the threads of a batch stay
//!   alive until it is done, so every one takes a slot of its own, and one in three a page
//!   never touched before).
//! - `snapshot` (only in builds with `--cfg fkrng_test_hooks`): reads with the VM generation
//!   counter of a stand-in device mapped and without.
//!
//! Peers: `rand::rng()` (rand 0.10, ChaCha12), raw `chacha20::ChaCha20Rng` (no key erasure),
//! `getrandom::fill` (the system call), the Linux vDSO getrandom called directly through the
//! `vdso-rng` crate (kernel 6.11 and later; skipped with a note elsewhere) and reads of
//! `/dev/urandom` from a file opened once.
//!
//! Group names start with the build: `avx512.` when built with `--cfg chacha20_avx512` (the
//! project's `.cargo/config.toml`), `default.` without it. `scripts/bench.sh` runs both
//! builds and `scripts/bench-report.py` renders the results into the tables of
//! `docs/BENCHMARKS.md` (its marked regions).

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use rand_core::{Rng, SeedableRng};
use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};

/// The build these numbers belong to (prefix of every group name).
const BUILD: &str = if cfg!(chacha20_avx512) {
    "avx512"
} else {
    "default"
};

/// Request sizes of the `fill` group, in bytes.
const FILL_SIZES: [usize; 11] = [1, 4, 8, 16, 32, 64, 256, 1024, 4096, 65536, 1 << 20];

/// Bytes per read in the `threads` and `first_read` groups.
const SMALL: usize = 16;

/// Reads per thread in one iteration of the `threads` group: even the smallest sample gives
/// each thread 400,000 reads (6.4 MB, a few milliseconds of one CPU, several scheduler
/// slices when 512 threads share two CPUs). With a tenth of that, starting and switching
/// between the threads weighed on every sample whatever the generator (docs/BENCHMARKS.md,
/// "Threads").
const READS_PER_ITER: u64 = 400_000;

fn group_name(question: &str) -> String {
    format!("{BUILD}.{question}")
}

/// The vDSO getrandom of this kernel, or `None` (with a note) where there is none.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod vdso {
    use std::sync::OnceLock;

    pub struct Vdso(vdso_rng::LocalState<'static>);

    fn pool() -> Option<&'static vdso_rng::Pool> {
        static POOL: OnceLock<Option<vdso_rng::Pool>> = OnceLock::new();
        POOL.get_or_init(|| match vdso_rng::Pool::new() {
            Ok(pool) => Some(pool),
            Err(e) => {
                eprintln!("note: no vDSO getrandom on this kernel ({e}); that peer is skipped");
                None
            }
        })
        .as_ref()
    }

    impl Vdso {
        pub fn new() -> Option<Self> {
            vdso_rng::LocalState::new(pool()?).ok().map(Vdso)
        }

        #[inline]
        pub fn fill(&mut self, dest: &mut [u8]) {
            self.0.fill(dest, 0).expect("vDSO getrandom");
        }
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod vdso {
    pub struct Vdso;

    impl Vdso {
        pub fn new() -> Option<Self> {
            eprintln!("note: the vDSO getrandom peer is measured on x86-64 Linux only; skipped");
            None
        }

        pub fn fill(&mut self, _: &mut [u8]) {}
    }
}

fn raw_chacha20() -> chacha20::ChaCha20Rng {
    chacha20::ChaCha20Rng::from_seed(fkrng::array())
}

fn urandom() -> File {
    File::open("/dev/urandom").expect("open /dev/urandom")
}

fn fill(c: &mut Criterion) {
    let mut g = c.benchmark_group(group_name("fill"));
    let mut buf = vec![0u8; 1 << 20];
    let mut rand_rng = rand::rng();
    let mut chacha = raw_chacha20();
    let mut vdso = vdso::Vdso::new();
    let mut file = urandom();
    for n in FILL_SIZES {
        let dest = &mut buf[..n];
        g.throughput(Throughput::Bytes(n as u64));
        g.bench_with_input(BenchmarkId::new("fkrng", n), &n, |b, _| {
            b.iter(|| fkrng::fill(black_box(&mut *dest)))
        });
        g.bench_with_input(BenchmarkId::new("rand::rng()", n), &n, |b, _| {
            b.iter(|| rand_rng.fill_bytes(black_box(&mut *dest)))
        });
        g.bench_with_input(BenchmarkId::new("ChaCha20Rng", n), &n, |b, _| {
            b.iter(|| chacha.fill_bytes(black_box(&mut *dest)))
        });
        if let Some(v) = vdso.as_mut() {
            g.bench_with_input(BenchmarkId::new("vDSO getrandom", n), &n, |b, _| {
                b.iter(|| v.fill(black_box(&mut *dest)))
            });
        }
        g.bench_with_input(BenchmarkId::new("getrandom syscall", n), &n, |b, _| {
            b.iter(|| getrandom::fill(black_box(&mut *dest)).expect("getrandom"))
        });
        g.bench_with_input(BenchmarkId::new("/dev/urandom", n), &n, |b, _| {
            b.iter(|| file.read_exact(black_box(&mut *dest)).expect("read"))
        });
    }
    g.finish();
}

fn int(c: &mut Criterion) {
    let mut g = c.benchmark_group(group_name("int"));
    let mut rand_rng = rand::rng();
    let mut chacha = raw_chacha20();
    let mut vdso = vdso::Vdso::new();
    g.throughput(Throughput::Bytes(4));
    g.bench_function("fkrng/u32", |b| b.iter(fkrng::u32));
    let mut fk_rng = fkrng::rng();
    g.bench_function("fkrng::rng()/next_u32", |b| b.iter(|| fk_rng.next_u32()));
    g.bench_function("rand::rng()/u32", |b| b.iter(|| rand_rng.next_u32()));
    g.bench_function("ChaCha20Rng/u32", |b| b.iter(|| chacha.next_u32()));
    let mut fke = fkrng::FkeRng::from_seed(fkrng::array());
    g.bench_function("FkeRng/u32", |b| b.iter(|| fke.next_u32()));
    if let Some(v) = vdso.as_mut() {
        g.bench_function("vDSO getrandom/u32", |b| {
            b.iter(|| {
                let mut x = [0u8; 4];
                v.fill(&mut x);
                u32::from_le_bytes(x)
            })
        });
    }
    g.bench_function("getrandom syscall/u32", |b| {
        b.iter(|| getrandom::u32().expect("getrandom"))
    });
    g.throughput(Throughput::Bytes(8));
    g.bench_function("fkrng/u64", |b| b.iter(fkrng::u64));
    g.bench_function("fkrng::rng()/next_u64", |b| b.iter(|| fk_rng.next_u64()));
    g.bench_function("rand::rng()/u64", |b| b.iter(|| rand_rng.next_u64()));
    g.bench_function("ChaCha20Rng/u64", |b| b.iter(|| chacha.next_u64()));
    g.bench_function("FkeRng/u64", |b| b.iter(|| fke.next_u64()));
    if let Some(v) = vdso.as_mut() {
        g.bench_function("vDSO getrandom/u64", |b| {
            b.iter(|| {
                let mut x = [0u8; 8];
                v.fill(&mut x);
                u64::from_le_bytes(x)
            })
        });
    }
    g.bench_function("getrandom syscall/u64", |b| {
        b.iter(|| getrandom::u64().expect("getrandom"))
    });
    g.finish();
}

/// `rand`'s extension methods, which draw through `next_u32`/`next_u64`: one uniform
/// integer below 6, 1000 and 1,000,000,007 (the last draws a second `u32` about one time in
/// four), and a Fisher-Yates shuffle of 1000 elements (999 such draws).
fn sample(c: &mut Criterion) {
    use rand::RngExt;
    use rand::seq::SliceRandom;
    let mut g = c.benchmark_group(group_name("sample"));
    let mut fk_rng = fkrng::rng();
    let mut rand_rng = rand::rng();
    g.bench_function("fkrng::rng()/random_range", |b| {
        b.iter(|| fk_rng.random_range(0..1000u32))
    });
    g.bench_function("rand::rng()/random_range", |b| {
        b.iter(|| rand_rng.random_range(0..1000u32))
    });
    g.bench_function("fkrng::rng()/random_range 0..6", |b| {
        b.iter(|| fk_rng.random_range(0..6u32))
    });
    g.bench_function("rand::rng()/random_range 0..6", |b| {
        b.iter(|| rand_rng.random_range(0..6u32))
    });
    g.bench_function("fkrng::rng()/random_range 0..1_000_000_007", |b| {
        b.iter(|| fk_rng.random_range(0..1_000_000_007u32))
    });
    g.bench_function("rand::rng()/random_range 0..1_000_000_007", |b| {
        b.iter(|| rand_rng.random_range(0..1_000_000_007u32))
    });
    let mut items: Vec<u32> = (0..1000).collect();
    g.bench_function("fkrng::rng()/shuffle 1000", |b| {
        b.iter(|| items.shuffle(&mut fk_rng))
    });
    g.bench_function("rand::rng()/shuffle 1000", |b| {
        b.iter(|| items.shuffle(&mut rand_rng))
    });
    g.finish();
}

fn array_of<const N: usize>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rand_rng: &mut rand::rngs::ThreadRng,
    chacha: &mut chacha20::ChaCha20Rng,
    vdso: &mut Option<vdso::Vdso>,
) {
    g.throughput(Throughput::Bytes(N as u64));
    let what = format!("array{N}");
    g.bench_function(format!("fkrng/{what}"), |b| b.iter(fkrng::array::<N>));
    g.bench_function(format!("rand::rng()/{what}"), |b| {
        b.iter(|| {
            let mut a = [0u8; N];
            rand_rng.fill_bytes(&mut a);
            a
        })
    });
    g.bench_function(format!("ChaCha20Rng/{what}"), |b| {
        b.iter(|| {
            let mut a = [0u8; N];
            chacha.fill_bytes(&mut a);
            a
        })
    });
    if let Some(v) = vdso.as_mut() {
        g.bench_function(format!("vDSO getrandom/{what}"), |b| {
            b.iter(|| {
                let mut a = [0u8; N];
                v.fill(&mut a);
                a
            })
        });
    }
    g.bench_function(format!("getrandom syscall/{what}"), |b| {
        b.iter(|| {
            let mut a = [0u8; N];
            getrandom::fill(&mut a).expect("getrandom");
            a
        })
    });
}

fn array(c: &mut Criterion) {
    let mut g = c.benchmark_group(group_name("array"));
    let mut rand_rng = rand::rng();
    let mut chacha = raw_chacha20();
    let mut vdso = vdso::Vdso::new();
    array_of::<12>(&mut g, &mut rand_rng, &mut chacha, &mut vdso);
    array_of::<32>(&mut g, &mut rand_rng, &mut chacha, &mut vdso);
    g.finish();
}

/// Wall time for `threads` threads to do `iters` × 400,000 16-byte reads each with a reader
/// from `make_reader`, from the moment all of them have done a first read (seeding) until
/// the last one finishes.
///
/// No lock is taken between the start and the stop: the threads count themselves ready on
/// an atomic and poll a flag (yielding), which the clock's thread sets right after starting
/// the clock; the thread that finishes last, counted down on another atomic, reads the clock
/// itself and wakes the clock's thread. Threads exit only after that, at a barrier. A reader
/// that panics still counts itself ready and finished, and its panic is raised again once
/// every thread is past the barrier, so the benchmark fails instead of hanging.
fn parallel_reads<R: FnMut(&mut [u8])>(
    threads: usize,
    iters: u64,
    make_reader: impl Fn() -> R + Sync,
) -> Duration {
    let ready = AtomicUsize::new(0);
    let go = AtomicBool::new(false);
    let running = AtomicUsize::new(threads);
    let end = OnceLock::new();
    let exit = Barrier::new(threads);
    let clock_thread = std::thread::current();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let first = catch_unwind(AssertUnwindSafe(|| {
                    let mut read = make_reader();
                    let mut buf = [0u8; SMALL];
                    read(&mut buf);
                    (read, buf)
                }));
                ready.fetch_add(1, Ordering::Release);
                while !go.load(Ordering::Acquire) {
                    std::thread::yield_now();
                }
                let outcome = first.and_then(|(mut read, mut buf)| {
                    catch_unwind(AssertUnwindSafe(|| {
                        for _ in 0..iters * READS_PER_ITER {
                            read(black_box(&mut buf));
                        }
                    }))
                });
                if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                    end.set(Instant::now()).expect("one last thread");
                    clock_thread.unpark();
                }
                exit.wait();
                if let Err(panic) = outcome {
                    resume_unwind(panic);
                }
            });
        }
        while ready.load(Ordering::Acquire) < threads {
            std::thread::yield_now();
        }
        let start = Instant::now();
        go.store(true, Ordering::Release);
        loop {
            if let Some(end) = end.get() {
                return *end - start;
            }
            std::thread::park();
        }
    })
}

fn threads(c: &mut Criterion) {
    let mut g = c.benchmark_group(group_name("threads"));
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(20);
    for k in [1usize, 2, 4, 64, 512] {
        // One iteration: 400,000 16-byte reads on each of the `k` threads.
        g.throughput(Throughput::Bytes(SMALL as u64 * READS_PER_ITER * k as u64));
        g.bench_with_input(BenchmarkId::new("fkrng", k), &k, |b, &k| {
            b.iter_custom(|iters| parallel_reads(k, iters, || fkrng::fill))
        });
        g.bench_with_input(BenchmarkId::new("rand::rng()", k), &k, |b, &k| {
            b.iter_custom(|iters| {
                parallel_reads(k, iters, || {
                    let mut rng = rand::rng();
                    move |d: &mut [u8]| rng.fill_bytes(d)
                })
            })
        });
    }
    g.finish();
}

/// Total time of the first read in each of `iters` new threads, timed inside the thread
/// around the read alone: thread creation and joining (tens of microseconds, and the
/// noisiest part on a virtual machine) are not counted. Thread-exit costs (fkrng wipes and
/// unmaps its state there) are not counted either.
fn first_reads(iters: u64, read: fn()) -> Duration {
    (0..iters)
        .map(|_| {
            std::thread::spawn(move || {
                let start = Instant::now();
                read();
                start.elapsed()
            })
            .join()
            .expect("thread")
        })
        .sum()
}

/// As [`first_reads`], but no measured thread takes a slot another released: 16 threads
/// that have read and the measured threads of a batch of 32 stay alive until the batch is
/// done, so that no state is released in between.
fn first_reads_new_slot(iters: u64, read: fn()) -> Duration {
    const HOLDERS: usize = 16;
    const BATCH: u64 = 32;
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let batch = left.min(BATCH);
        left -= batch;
        let held = Barrier::new(HOLDERS + 1);
        let release = Barrier::new(HOLDERS + batch as usize + 1);
        total += std::thread::scope(|s| {
            for _ in 0..HOLDERS {
                s.spawn(|| {
                    read();
                    held.wait();
                    release.wait();
                });
            }
            held.wait();
            let timed: Vec<_> = (0..batch)
                .map(|_| {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let release = &release;
                    s.spawn(move || {
                        let start = Instant::now();
                        read();
                        tx.send(start.elapsed()).expect("send");
                        release.wait();
                    });
                    rx.recv().expect("timed read")
                })
                .collect();
            release.wait();
            timed.into_iter().sum::<Duration>()
        });
    }
    total
}

fn first_read(c: &mut Criterion) {
    let mut g = c.benchmark_group(group_name("first_read"));
    g.throughput(Throughput::Bytes(SMALL as u64));
    g.bench_function("fkrng", |b| {
        b.iter_custom(|iters| {
            first_reads(iters, || {
                black_box(fkrng::array::<SMALL>());
            })
        })
    });
    g.bench_function("fkrng (new slot)", |b| {
        b.iter_custom(|iters| {
            first_reads_new_slot(iters, || {
                black_box(fkrng::array::<SMALL>());
            })
        })
    });
    g.bench_function("rand::rng()", |b| {
        b.iter_custom(|iters| {
            first_reads(iters, || {
                let mut buf = [0u8; SMALL];
                rand::rng().fill_bytes(&mut buf);
                black_box(buf);
            })
        })
    });
    g.finish();
}

/// `snapshot` (builds with `--cfg fkrng_test_hooks` only; `scripts/bench-snapshot.sh`): the
/// cost of following the VM generation counter. 4- and 16-byte fills with every thread's
/// check pointed at a mapped stand-in of the VMClock page, then at the fallback word used
/// when no device is mapped, alternating three rounds in one run, with `rand::rng()` for
/// the 4-byte ratio.
#[cfg(fkrng_test_hooks)]
fn snapshot(c: &mut Criterion) {
    if std::env::var_os("FKRNG_TEST_VMCLOCK_PATH").is_none() {
        return; // no stand-in named: a run other than scripts/bench-snapshot.sh
    }
    let mut g = c.benchmark_group(group_name("snapshot"));
    let mut buf = [0u8; SMALL];
    fkrng::fill(&mut buf); // the first seeding maps the stand-in
    assert!(
        fkrng::test_hooks::snapshot::follow_device(true),
        "no stand-in mapped: run scripts/bench-snapshot.sh"
    );
    let mut rand_rng = rand::rng();
    for round in 1..=3 {
        for (mode, on) in [("counter mapped", true), ("fallback word", false)] {
            fkrng::test_hooks::snapshot::follow_device(on);
            for n in [4, SMALL] {
                g.throughput(Throughput::Bytes(n as u64));
                let id = BenchmarkId::new(format!("fkrng, {mode}, round {round}"), n);
                g.bench_function(id, |b| b.iter(|| fkrng::fill(black_box(&mut buf[..n]))));
            }
        }
        g.throughput(Throughput::Bytes(4));
        let id = BenchmarkId::new(format!("rand::rng(), round {round}"), 4);
        g.bench_function(id, |b| {
            b.iter(|| rand_rng.fill_bytes(black_box(&mut buf[..4])))
        });
    }
    g.finish();
}

fn config() -> Criterion {
    // The stand-in VMClock page that scripts/bench-snapshot.sh names is taken at the
    // process's first read, which comes after this (each group's configuration is made
    // before its benchmarks run).
    #[cfg(fkrng_test_hooks)]
    fkrng::test_hooks::snapshot::stand_in_from_env();
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(1))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = fill, int, sample, array, threads, first_read
}
#[cfg(fkrng_test_hooks)]
criterion_group! {
    name = snapshot_benches;
    config = config();
    targets = snapshot
}
#[cfg(not(fkrng_test_hooks))]
criterion_main!(benches);
#[cfg(fkrng_test_hooks)]
criterion_main!(benches, snapshot_benches);
