//! Many live threads and the state pool, counted exactly, in a process of its own (no test
//! harness, so no other test's threads come and go meanwhile):
//!
//! - The states of 400 live threads that have read lie in at most 8 kernel mappings (one
//!   per 50 threads; the pool maps one chunk per 192 states with 4 KiB pages), and the
//!   threads add at most 40 mappings in all beyond what they cost without reading (thread
//!   stacks land a little differently from run to run): counted in `/proc/self/maps`. A
//!   mapping per state adds about 400.
//! - A read abandoned mid-way slows only its own thread: the next thread takes the slot
//!   zeroed, busy flag included, and makes no one-off read.
//! - A new thread's first seed comes from the vDSO's `getrandom` where the kernel has one
//!   (x86-64 Linux 6.11 and later), once the process has seeded by the system call.
//!
//! Needs the test hooks (`--cfg fkrng_test_hooks`: README's test command), whose counters
//! and state addresses it reads; says "skipped" without them.

#[cfg(fkrng_test_hooks)]
fn main() {
    hooked::main();
}

#[cfg(not(fkrng_test_hooks))]
fn main() {
    println!("many_threads: skipped (needs --cfg fkrng_test_hooks: README's test command)");
}

#[cfg(fkrng_test_hooks)]
mod hooked {
    use fkrng::test_hooks::counters::{chunks_published, one_off_reads_interrupted, os_reads};
    use std::sync::Barrier;

    const THREADS: usize = 400;

    pub fn main() {
        live_threads_that_read_add_a_mapping_per_chunk_not_per_thread();
        a_slot_left_busy_by_an_abandoned_read_never_slows_the_next_thread();
        a_new_threads_first_seed_comes_from_the_vdso();
        println!("many_threads: 3 passed");
    }

    /// Lines of `/proc/self/maps` while `THREADS` threads (64 KiB stacks) wait, each after
    /// `read`; the threads exit before this returns.
    #[cfg(target_os = "linux")]
    fn mappings_while_live(read: fn()) -> (usize, usize) {
        let (ready, release) = (Barrier::new(THREADS + 1), Barrier::new(THREADS + 1));
        let slots = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..THREADS)
                .map(|_| {
                    std::thread::Builder::new()
                        .stack_size(64 << 10)
                        .spawn_scoped(s, || {
                            read();
                            if let Some((start, _)) = fkrng::test_hooks::memory::state_range() {
                                slots.lock().unwrap().push(start);
                            }
                            ready.wait();
                            release.wait();
                        })
                        .expect("a thread")
                })
                .collect();
            ready.wait();
            let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
            release.wait();
            // The mappings that hold a state: `start-end` ranges containing one.
            let holding = maps
                .lines()
                .filter_map(|line| {
                    let (start, end) = line.split_whitespace().next()?.split_once('-')?;
                    let (start, end) = (
                        usize::from_str_radix(start, 16).ok()?,
                        usize::from_str_radix(end, 16).ok()?,
                    );
                    let slots = slots.lock().unwrap();
                    slots.iter().any(|s| (start..end).contains(s)).then_some(())
                })
                .count();
            // Joined one by one: the scope's own wait ends when each closure returns, before
            // the thread's destructors release its slot, which a later test would then see.
            for thread in threads {
                thread.join().expect("a thread");
            }
            (maps.lines().count(), holding)
        })
    }

    #[cfg(target_os = "linux")]
    fn live_threads_that_read_add_a_mapping_per_chunk_not_per_thread() {
        // One malloc arena for every thread: a thread's first read registers its state's owner
        // for destruction, which allocates, and glibc would map an arena (one or two mappings)
        // for each of up to 8 threads per CPU that allocate at once, which idle threads do not.
        #[cfg(target_env = "gnu")]
        // SAFETY: mallopt only sets an allocator parameter.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1)
        };
        // The process's first read and its chunk, before anything is counted.
        fkrng::fill(&mut [0u8; 16]);
        let (idle, _) = mappings_while_live(|| {});
        let chunks = chunks_published();
        let (reading, holding) = mappings_while_live(|| fkrng::fill(&mut [0u8; 16]));
        let new_chunks = chunks_published() - chunks;
        let added = reading.saturating_sub(idle);
        println!(
            "many_threads: {THREADS} live threads: {idle} mappings idle, {reading} after a read \
             each ({added} more; {holding} of them hold the states; {new_chunks} chunks published)"
        );
        // Exact: the mappings that hold the 400 states (at most one per 50 threads).
        assert!(
            holding <= THREADS / 50,
            "{holding} mappings hold {THREADS} states"
        );
        // The whole process, whose thread stacks the kernel places a little differently from
        // run to run (a few mappings either way): a mapping per state would add about 400.
        assert!(
            added <= THREADS / 10,
            "{added} mappings for {THREADS} threads"
        );
        assert!(new_chunks <= 3, "{new_chunks} chunks for {THREADS} states");
    }

    #[cfg(not(target_os = "linux"))]
    fn live_threads_that_read_add_a_mapping_per_chunk_not_per_thread() {
        println!("many_threads: no /proc/self/maps here, mapping count skipped");
    }

    fn a_slot_left_busy_by_an_abandoned_read_never_slows_the_next_thread() {
        let abandoned = std::thread::spawn(|| {
            fkrng::fill(&mut [0u8; 16]);
            let slot = fkrng::test_hooks::memory::abandon_read().expect("a state");
            let before = one_off_reads_interrupted();
            fkrng::fill(&mut [0u8; 16]);
            assert_eq!(
                one_off_reads_interrupted() - before,
                1,
                "the abandoned read's flag was not seen"
            );
            slot
        })
        .join()
        .expect("the abandoning thread");
        let (slot, one_offs, seeds) = std::thread::spawn(|| {
            let (one_offs, seeds) = (one_off_reads_interrupted(), os_reads());
            for _ in 0..1000 {
                fkrng::fill(&mut [0u8; 16]);
            }
            let slot = fkrng::test_hooks::memory::state_range().expect("a state").0;
            (
                slot,
                one_off_reads_interrupted() - one_offs,
                os_reads() - seeds,
            )
        })
        .join()
        .expect("the next thread");
        assert_eq!(slot, abandoned, "the next thread leased another slot");
        assert_eq!(one_offs, 0, "one-off reads of the next thread");
        assert_eq!(seeds, 1, "OS reads of the next thread");
    }

    /// Ten new threads in turn, each after the process's first read: one OS read each, and
    /// each from the vDSO where it must have `getrandom`, else none from it.
    fn a_new_threads_first_seed_comes_from_the_vdso() {
        use fkrng::test_hooks::counters::vdso_fills;
        fkrng::fill(&mut [0u8; 16]);
        let (vdso, seeds) = (vdso_fills(), os_reads());
        for _ in 0..10 {
            std::thread::spawn(|| fkrng::fill(&mut [0u8; 16]))
                .join()
                .expect("a new thread");
        }
        let (vdso, seeds) = (vdso_fills() - vdso, os_reads() - seeds);
        println!("many_threads: 10 new threads: {seeds} OS reads, {vdso} from the vDSO");
        assert_eq!(seeds, 10, "OS reads of 10 new threads");
        let expected = if fkrng_test_support::runner::vdso_getrandom_expected() {
            10
        } else {
            0
        };
        assert_eq!(vdso, expected, "seeds from the vDSO");
    }
}
