//! Fork safety of the thread-local generator, end to end: a child process's first read must
//! differ from everything its parent emitted before the fork and emits after it, however the
//! child was made.
//!
//! Runs without the test harness (`harness = false`) so that the process is single-threaded
//! unless a scenario starts threads itself, and so that the first scenario forks before the
//! process has ever read. Children only read the generator, `write` to a pipe, `fork` (for a
//! grandchild), `waitpid` and `_exit`.
//!
//! Every 32-byte value a child sends back is checked against every byte offset of every
//! stream the parent side recorded (the parent's reads before and after each fork, and the
//! reads of other threads), and against every other child's values.
//!
//! What is asserted follows [`fkrng::fork_protection`]: children made by `fork()` under any
//! protection, children made by a raw `clone` (no atfork handler) only under `WipeOnFork`,
//! the only protection that promises to catch them. Scenarios left out for that reason are
//! named in the output with the reason, never dropped silently. A run that sets
//! `FKRNG_EXPECT_FORK_PROTECTION` (`WipeOnFork`, `AtforkEpoch`) fails when the protection
//! found is another.
//!
//! Needs the test hooks (`--cfg fkrng_test_hooks`: README's test command) to count the OS
//! reads before the first fork and to map a stand-in VMClock page; says "skipped" without
//! them.

#[cfg(all(unix, fkrng_test_hooks))]
fn main() {
    unix::main();
}

#[cfg(not(unix))]
fn main() {
    println!("fork tests: no fork on this platform, skipped");
}

#[cfg(all(unix, not(fkrng_test_hooks)))]
fn main() {
    println!("fork tests: skipped (needs --cfg fkrng_test_hooks: README's test command)");
}

#[cfg(all(unix, fkrng_test_hooks))]
mod unix {
    use fkrng_test_support::child::{self, How, Pipe};
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    type Value = [u8; 32];

    /// What the parent side saw and what the children sent.
    #[derive(Default)]
    struct Record {
        /// Output streams recorded on the parent side (each a concatenation of reads).
        streams: Vec<Vec<u8>>,
        /// Values sent by children and grandchildren, with the scenario that made them.
        children: Vec<(&'static str, Value)>,
    }

    /// 32 bytes from this thread's generator, in a child: exits with status 3 on an OS error
    /// instead of unwinding.
    fn child_read() -> Value {
        let mut v = [0u8; 32];
        if fkrng::try_fill(&mut v).is_err() {
            // SAFETY: ends the child at once, without running the parent's cleanup.
            unsafe { libc::_exit(3) }
        }
        v
    }

    /// Whether fkrng promises that a raw-`clone` child gets fresh output here: only with
    /// wipe-on-fork pages (under `AtforkEpoch` no handler runs in such a child). Known once
    /// the process has read.
    #[cfg(target_os = "linux")]
    fn raw_clone_promised() -> bool {
        if let (Ok(expected), Some(found)) = (
            std::env::var("FKRNG_EXPECT_FORK_PROTECTION"),
            fkrng::fork_protection(),
        ) {
            assert_eq!(
                format!("{found:?}"),
                expected,
                "FKRNG_EXPECT_FORK_PROTECTION"
            );
        }
        match fkrng::fork_protection() {
            Some(fkrng::ForkProtection::WipeOnFork) => true,
            Some(_) => false,
            None => panic!("fork protection asked before the first read"),
        }
    }

    /// Starts a child made by `how` that runs `body(pipe)` and `_exit(0)`s; returns the
    /// 32-byte values it wrote, after checking it exited with status 0.
    fn in_child(how: How, body: &dyn Fn(&Pipe)) -> Vec<Value> {
        let bytes = child::run(how, |pipe| {
            body(pipe);
            0
        })
        .expect_success(&format!("{how:?}"));
        assert_eq!(bytes.len() % 32, 0);
        bytes
            .chunks_exact(32)
            .map(|c| c.try_into().expect("32 bytes"))
            .collect()
    }

    /// `n` bytes read from this thread's generator in 32-byte reads.
    fn stream(n: usize) -> Vec<u8> {
        let mut out = vec![0u8; n];
        for chunk in out.chunks_mut(32) {
            fkrng::fill(chunk);
        }
        out
    }

    /// Forks (or clones) a child whose first read is recorded, with the parent's output
    /// before and after it.
    fn parent_and_child(rec: &mut Record, name: &'static str, how: How) {
        let before = stream(4096);
        let child = in_child(how, &|pipe| pipe.send(&child_read()));
        let after = stream(4096);
        rec.streams.push(before);
        rec.streams.push(after);
        rec.children.extend(child.into_iter().map(|v| (name, v)));
    }

    fn fork_before_the_parent_ever_read(rec: &mut Record) {
        assert_eq!(
            fkrng::test_hooks::counters::os_reads(),
            0,
            "nothing read before this scenario"
        );
        let name = "fork() before the parent ever read";
        let child = in_child(How::Fork, &|pipe| pipe.send(&child_read()));
        rec.streams.push(stream(4096));
        rec.children.extend(child.into_iter().map(|v| (name, v)));
    }

    fn fork_from_a_thread_that_never_read(rec: &mut Record) {
        let name = "fork() from a thread that never read";
        let (child, after) = std::thread::spawn(move || {
            let child = in_child(How::Fork, &|pipe| pipe.send(&child_read()));
            (child, stream(4096))
        })
        .join()
        .unwrap();
        rec.streams.push(after);
        rec.children.extend(child.into_iter().map(|v| (name, v)));
    }

    fn grandchild(rec: &mut Record, how: How, name: &'static str) {
        let before = stream(4096);
        // The child reads, forks a grandchild that sends its first read, then reads again:
        // it sends [its first read, its later reads.., the grandchild's first read].
        let values = in_child(how, &|pipe| {
            pipe.send(&child_read());
            let grand = in_child(How::Fork, &|pipe| pipe.send(&child_read()));
            for _ in 0..8 {
                pipe.send(&child_read());
            }
            for v in &grand {
                pipe.send(v);
            }
        });
        let after = stream(4096);
        assert_eq!(values.len(), 10, "child and grandchild values");
        // The child's stream (its first and later reads) is recorded as a stream too, so the
        // grandchild is checked against its parent's output as well as its grandparent's.
        let child_stream: Vec<u8> = values[..9].concat();
        rec.children.push((name, values[0]));
        rec.children.push((name, values[9]));
        rec.streams
            .extend([before, after, child_stream[32..].to_vec()]);
    }

    /// Three threads read in a loop while a fourth, which has read too, forks children (and
    /// on Linux raw-clones them); every child's first read is checked against all threads'
    /// recorded output.
    fn multi_threaded_parent(rec: &mut Record) {
        const READERS: usize = 3;
        const RECORDED: usize = 256 << 10;
        const CHILDREN: usize = 16;
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(std::sync::Barrier::new(READERS + 1));
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                let stop = Arc::clone(&stop);
                let started = Arc::clone(&started);
                std::thread::spawn(move || {
                    let mut out = stream(32);
                    started.wait();
                    let mut reads = 0u64;
                    let mut v = [0u8; 32];
                    while !stop.load(Ordering::Relaxed) {
                        fkrng::fill(&mut v);
                        if out.len() < RECORDED {
                            out.extend_from_slice(&v);
                        }
                        reads += 1;
                    }
                    (out, reads)
                })
            })
            .collect();
        let forker = std::thread::spawn(move || {
            let mut own = stream(1024);
            let mut children = Vec::new();
            started.wait();
            for i in 0..CHILDREN {
                #[cfg(target_os = "linux")]
                let how = if i % 2 == 1 && raw_clone_promised() {
                    How::RawClone
                } else {
                    How::Fork
                };
                #[cfg(not(target_os = "linux"))]
                let how = {
                    let _ = i;
                    How::Fork
                };
                children.extend(in_child(how, &|pipe| pipe.send(&child_read())));
                own.extend(stream(2048));
            }
            (own, children)
        });
        let (own, children) = forker.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        let name = "fork()/clone from a multi-threaded parent";
        assert_eq!(children.len(), CHILDREN);
        rec.children.extend(children.into_iter().map(|v| (name, v)));
        rec.streams.push(own);
        for r in readers {
            let (out, reads) = r.join().unwrap();
            assert!(reads > 0, "the readers ran during the forks");
            rec.streams.push(out);
        }
    }

    /// Every child value is non-zero, unique among children, and at no byte offset of any
    /// recorded stream; the recorded streams never repeat a 32-byte read.
    fn check(rec: &Record) {
        let mut children: HashMap<Value, &str> = HashMap::new();
        for (name, v) in &rec.children {
            assert_ne!(*v, [0u8; 32], "{name}: all-zero child value");
            if let Some(other) = children.insert(*v, name) {
                panic!("{name} / {other}: two children sent the same value");
            }
        }
        for s in &rec.streams {
            for w in s.windows(32) {
                if let Some(name) = children.get(w) {
                    panic!("{name}: a child's read appears in the parent side's output");
                }
            }
        }
        let mut reads: Vec<&[u8]> = rec.streams.iter().flat_map(|s| s.chunks(32)).collect();
        let total = reads.len();
        reads.sort_unstable();
        reads.dedup();
        assert_eq!(
            reads.len(),
            total,
            "the parent side repeated a 32-byte read"
        );
    }

    pub fn main() {
        // The stand-in VMClock page, where a run names one (.ci/run's snapshot section).
        fkrng::test_hooks::snapshot::stand_in_from_env();
        let mut rec = Record::default();
        let mut passed = Vec::new();
        let mut skipped: Vec<&'static str> = Vec::new();
        let mut run = |name: &'static str, f: &dyn Fn(&mut Record)| {
            let values_before = rec.children.len();
            f(&mut rec);
            passed.push((name, rec.children.len() - values_before));
        };
        // Must run first: the process has not read yet.
        run(
            "fork() before the parent ever read",
            &fork_before_the_parent_ever_read,
        );
        run("fork() after the parent read", &|r| {
            parent_and_child(r, "fork() after the parent read", How::Fork)
        });
        #[cfg(target_os = "linux")]
        if raw_clone_promised() {
            run("raw clone (no atfork handler)", &|r| {
                parent_and_child(r, "raw clone (no atfork handler)", How::RawClone)
            });
        } else {
            skipped.push("raw clone (no atfork handler)");
        }
        run(
            "fork() from a thread that never read",
            &fork_from_a_thread_that_never_read,
        );
        run("grandchild: fork() then fork()", &|r| {
            grandchild(r, How::Fork, "grandchild: fork() then fork()")
        });
        #[cfg(target_os = "linux")]
        if raw_clone_promised() {
            run("grandchild: raw clone then fork()", &|r| {
                grandchild(r, How::RawClone, "grandchild: raw clone then fork()")
            });
        } else {
            skipped.push("grandchild: raw clone then fork()");
            skipped.push("multi-threaded parent: its 8 raw-clone children (16 fork() instead)");
        }
        run("multi-threaded parent", &multi_threaded_parent);
        // The parent keeps working after all of it.
        let parent = stream(65536);
        rec.streams.push(parent);
        check(&rec);
        for (name, values) in &passed {
            println!("ok: {name} ({values} child values)");
        }
        for name in &skipped {
            println!(
                "skipped: {name}: fork protection is {:?}, under which a raw clone runs no \
                 atfork handler and fkrng promises nothing for its child",
                fkrng::fork_protection()
            );
        }
        println!(
            "fork protection: {:?}; {} fork scenarios passed, {} skipped, {} child values \
             checked against {} bytes of parent-side output",
            fkrng::fork_protection(),
            passed.len(),
            skipped.len(),
            rec.children.len(),
            rec.streams.iter().map(Vec::len).sum::<usize>()
        );
    }
}
