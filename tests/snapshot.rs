//! Snapshot safety through the VM generation counter, end to end, with a stand-in for the
//! VMClock device: a tmpfs file with the ABI layout that the library maps in place of
//! `/dev/vmclock0`, and that this test writes as the hypervisor would.
//!
//! Needs a build with the test hooks (`--cfg fkrng_test_hooks`, which README's test command
//! sets; the stand-in's path then comes from `FKRNG_TEST_VMCLOCK_PATH`, read because this
//! program calls `stand_in_from_env`). Other builds print "skipped".
//!
//! Runs without the test harness, so that the process is single-threaded and has not read
//! the generator when it forks the children that probe unusable stand-ins (the device is
//! probed at a process's first seeding, again only after a failure that can pass), and so
//! that the reseed counters are exact.

#[cfg(all(
    fkrng_test_hooks,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
fn main() {
    hooked::main();
}

#[cfg(not(all(
    fkrng_test_hooks,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
)))]
fn main() {
    println!(
        "snapshot tests: need a little-endian 64-bit Linux build with --cfg fkrng_test_hooks \
         (README's test command); skipped"
    );
}

#[cfg(all(
    fkrng_test_hooks,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
mod hooked {
    use fkrng::SnapshotProtection;
    use fkrng::test_hooks::counters::{os_reads, snapshot_reseeds};
    use fkrng_test_support::child::{self, How, Status};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};
    use std::sync::{Arc, Barrier};

    const SEQ_COUNT: usize = 12;
    const FLAGS: usize = 24;
    const COUNTER: usize = 104;
    const PAGE: usize = 4096;

    /// A stand-in page and a writable shared mapping of it (the hypervisor's side).
    struct StandIn {
        path: PathBuf,
        page: *mut u8,
    }

    impl StandIn {
        /// A valid page (written byte by byte, independently of the library's reader)
        /// holding `counter`.
        fn new(name: &str, counter: u64) -> Self {
            let dir = if Path::new("/dev/shm").is_dir() {
                PathBuf::from("/dev/shm")
            } else {
                std::env::temp_dir()
            };
            let path = dir.join(format!("fkrng-snapshot-{}-{name}", std::process::id()));
            let mut bytes = vec![0u8; PAGE];
            bytes[0..4].copy_from_slice(b"VCLK");
            bytes[4..8].copy_from_slice(&(PAGE as u32).to_le_bytes());
            bytes[8..10].copy_from_slice(&1u16.to_le_bytes());
            bytes[FLAGS + 1] = 0x01; // bit 8: VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT
            bytes[COUNTER..COUNTER + 8].copy_from_slice(&counter.to_le_bytes());
            std::fs::write(&path, &bytes).expect("write stand-in");
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .expect("open stand-in");
            use std::os::fd::AsRawFd;
            // SAFETY: a new writable shared mapping of the one-page file.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    PAGE,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    file.as_raw_fd(),
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED, "map stand-in");
            StandIn {
                path,
                page: addr.cast(),
            }
        }

        fn u32(&self, offset: usize) -> &AtomicU32 {
            // SAFETY: an aligned offset inside the mapped page, which is never unmapped.
            unsafe { &*self.page.add(offset).cast::<AtomicU32>() }
        }

        fn u64(&self, offset: usize) -> &AtomicU64 {
            // SAFETY: as above.
            unsafe { &*self.page.add(offset).cast::<AtomicU64>() }
        }

        /// A hypervisor update of the counter under the seqlock.
        fn set_counter(&self, value: u64) {
            let seq = self.u32(SEQ_COUNT);
            let s = seq.load(Ordering::Relaxed);
            seq.store(s + 1, Ordering::Relaxed);
            fence(Ordering::Release);
            self.u64(COUNTER).store(value, Ordering::Relaxed);
            fence(Ordering::Release);
            seq.store(s + 2, Ordering::Relaxed);
        }
    }

    /// Names `path` as the stand-in that this process's first seeding probes in place of
    /// the device: before that seeding, in a process (or child) that has not yet named one.
    fn use_stand_in(path: &Path) {
        // SAFETY: called while this process (or child) has a single thread.
        unsafe { std::env::set_var("FKRNG_TEST_VMCLOCK_PATH", path) };
        fkrng::test_hooks::snapshot::stand_in_from_env();
    }

    /// In a child forked before this process's first read: points the probe at `path`
    /// (after `prepare`), reads, and reports `snapshot_protection()`. A panic or a hang in
    /// the read fails the test (exit status, or the CI time limit).
    fn protection_in_child(path: &Path, prepare: fn()) -> Option<SnapshotProtection> {
        // The process is single-threaded here; the child only sets an environment variable,
        // reads the generator and `_exit`s.
        let child = child::run(How::Fork, |_| {
            prepare();
            use_stand_in(path);
            match std::panic::catch_unwind(|| {
                let mut b = [0u8; 16];
                fkrng::fill(&mut b);
                fkrng::snapshot_protection()
            }) {
                Ok(Some(SnapshotProtection::VmGenerationCounter)) => 10,
                Ok(Some(SnapshotProtection::ManualOnly)) => 11,
                Ok(None) => 12,
                Err(_) => 13,
            }
        });
        match child.status {
            Status::Exited(10) => Some(SnapshotProtection::VmGenerationCounter),
            Status::Exited(11) => Some(SnapshotProtection::ManualOnly),
            Status::Exited(12) => None,
            Status::Exited(code) => panic!("the child's read failed (exit status {code})"),
            Status::Signalled(signal) => panic!("child died: signal {signal}"),
        }
    }

    fn no_preparation() {}

    fn drop_privileges() {
        // SAFETY: plain system calls in a single-threaded child.
        unsafe {
            if libc::geteuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                libc::_exit(20);
            }
        }
    }

    /// Every way a stand-in can be unusable degrades to `ManualOnly` (no permission: to `None`,
    /// undecided), silently: the read succeeds, nothing hangs or panics.
    fn unusable_devices_degrade_silently() {
        let good = StandIn::new("good", 1);
        assert_eq!(
            protection_in_child(&good.path, no_preparation),
            Some(SnapshotProtection::VmGenerationCounter),
            "the valid stand-in is used"
        );
        let bad_magic = StandIn::new("bad-magic", 1);
        // SAFETY: the first byte of the mapped page.
        unsafe { bad_magic.page.write_volatile(b'X') };
        let no_flag = StandIn::new("no-flag", 1);
        no_flag.u64(FLAGS).store(0, Ordering::Relaxed);
        let wedged = StandIn::new("wedged", 1);
        wedged.u32(SEQ_COUNT).store(7, Ordering::Relaxed);
        let unreadable = StandIn::new("unreadable", 1);
        std::fs::set_permissions(
            &unreadable.path,
            std::os::unix::fs::PermissionsExt::from_mode(0o000),
        )
        .unwrap();
        let absent = good.path.with_extension("absent");
        for (what, path, prepare) in [
            ("bad magic", &bad_magic.path, no_preparation as fn()),
            ("flag clear", &no_flag.path, no_preparation),
            ("wedged seqlock", &wedged.path, no_preparation),
            ("absent", &absent, no_preparation),
        ] {
            assert_eq!(
                protection_in_child(path, prepare),
                Some(SnapshotProtection::ManualOnly),
                "{what}"
            );
        }
        // No permission can change (a wider mode, a reloaded policy): undecided, probed again
        // at the next seed.
        assert_eq!(
            protection_in_child(&unreadable.path, drop_privileges),
            None,
            "unreadable"
        );
        for s in [good, bad_magic, no_flag, wedged, unreadable] {
            let _ = std::fs::remove_file(&s.path);
        }
    }

    /// Descriptors exhausted at the process's first read (a server at its limit) leave the
    /// probe open: once they are freed, the next seed maps the device, and a counter change
    /// makes the next read reseed.
    fn exhausted_descriptors_leave_the_probe_open() {
        let s = StandIn::new("emfile", 1);
        let child = child::run(How::Fork, |_| {
            use_stand_in(&s.path);
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `limit` is a valid, writable `rlimit`; a lower soft limit keeps the
            // loop below short.
            unsafe {
                libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
                limit.rlim_cur = limit.rlim_cur.min(64);
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
            let mut held = Vec::new();
            loop {
                // SAFETY: dup has no memory preconditions.
                match unsafe { libc::dup(0) } {
                    -1 if std::io::Error::last_os_error().raw_os_error() == Some(libc::EMFILE) => {
                        break;
                    }
                    -1 => return 20,
                    fd => held.push(fd),
                }
            }
            read16();
            let open_after_emfile = fkrng::snapshot_protection().is_none();
            for fd in held {
                // SAFETY: a descriptor duplicated above, closed once.
                unsafe { libc::close(fd) };
            }
            // A new thread's first seed probes again; then this thread reseeds once, as it
            // follows the mapped counter instead of the fallback word.
            std::thread::spawn(read16).join().unwrap();
            read16();
            let mapped =
                fkrng::snapshot_protection() == Some(SnapshotProtection::VmGenerationCounter);
            let before = snapshot_reseeds();
            s.set_counter(2);
            read16();
            let reseeds = snapshot_reseeds() - before;
            match (open_after_emfile, mapped, reseeds) {
                (true, true, 1) => 0,
                (false, _, _) => 21,
                (_, false, _) => 22,
                _ => 23,
            }
        });
        let _ = std::fs::remove_file(&s.path);
        assert_eq!(
            child.status,
            Status::Exited(0),
            "21: the probe closed at EMFILE, 22: not mapped after, 23: no single reseed"
        );
    }

    fn read16() -> [u8; 16] {
        let mut v = [0u8; 16];
        fkrng::fill(&mut v);
        v
    }

    /// The process maps the stand-in at its first seeding; a counter change makes every
    /// thread (this one, a busy one, an idle one) reseed once before its next output.
    fn every_thread_reseeds_once_after_a_change(s: &StandIn) {
        assert_eq!(
            fkrng::snapshot_protection(),
            None,
            "not probed before a read"
        );
        let first = read16();
        assert_eq!(
            fkrng::snapshot_protection(),
            Some(SnapshotProtection::VmGenerationCounter)
        );
        const THREADS: usize = 2;
        let seeded = Arc::new(Barrier::new(THREADS + 1));
        let changed = Arc::new(Barrier::new(THREADS + 1));
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let (seeded, changed) = (Arc::clone(&seeded), Arc::clone(&changed));
                std::thread::spawn(move || {
                    let mut values = vec![read16()];
                    if i == 0 {
                        // Busy: reads right up to the change.
                        values.extend((0..50).map(|_| read16()));
                    }
                    seeded.wait();
                    changed.wait();
                    values.push(read16());
                    values.push(read16());
                    values
                })
            })
            .collect();
        seeded.wait();
        let (reads_before, reseeds_before) = (os_reads(), snapshot_reseeds());
        assert_eq!(reseeds_before, 0, "no reseed while the counter stood still");
        s.set_counter(43);
        changed.wait();
        let mut values: Vec<[u8; 16]> = vec![first, read16(), read16()];
        for t in threads {
            values.extend(t.join().unwrap());
        }
        assert_eq!(
            snapshot_reseeds() - reseeds_before,
            THREADS as u64 + 1,
            "each thread reseeded once"
        );
        assert_eq!(os_reads() - reads_before, THREADS as u64 + 1);
        let n = values.len();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), n, "a repeated 16-byte value");
    }

    /// A seqlock wedged in an update (odd `seq_count` for good) never hangs a read, and a
    /// counter that changed meanwhile still makes the next read reseed.
    fn wedged_seqlock_never_hangs_and_still_reseeds(s: &StandIn) {
        let seq = s.u32(SEQ_COUNT);
        let even = seq.load(Ordering::Relaxed);
        seq.store(even + 1, Ordering::Relaxed);
        s.u64(COUNTER).store(44, Ordering::Relaxed);
        let before = snapshot_reseeds();
        read16();
        read16();
        assert_eq!(snapshot_reseeds() - before, 1, "one reseed for the change");
        seq.store(even + 2, Ordering::Relaxed);
        read16();
        assert_eq!(snapshot_reseeds() - before, 1);
        assert_eq!(
            fkrng::snapshot_protection(),
            Some(SnapshotProtection::VmGenerationCounter)
        );
    }

    /// A host that clears the counter-present flag (a live migration to one that does not
    /// keep the counter) ends the protection at the next reseed: reported as manual only,
    /// and the reads go on from that reseed, which already counts the fallback counter.
    fn a_cleared_counter_flag_ends_the_protection(s: &StandIn) {
        read16();
        s.u64(FLAGS).store(0, Ordering::Relaxed);
        let before = os_reads();
        fkrng::reseed().expect("reseed");
        assert_eq!(
            fkrng::snapshot_protection(),
            Some(SnapshotProtection::ManualOnly)
        );
        let values = [read16(), read16()];
        assert_ne!(values[0], values[1]);
        assert_eq!(os_reads() - before, 1, "the reseed alone");
    }

    pub fn main() {
        // Each stand-in is named where it is used (`use_stand_in`): in the children that
        // probe unusable ones, then in this process before its first read.
        unusable_devices_degrade_silently();
        println!("unusable devices degrade silently: ok");
        exhausted_descriptors_leave_the_probe_open();
        println!("exhausted descriptors leave the probe open: ok");
        let s = StandIn::new("live", 42);
        use_stand_in(&s.path);
        every_thread_reseeds_once_after_a_change(&s);
        println!("every thread reseeds once after a change: ok");
        wedged_seqlock_never_hangs_and_still_reseeds(&s);
        println!("a wedged seqlock never hangs a read and still reseeds: ok");
        a_cleared_counter_flag_ends_the_protection(&s);
        println!("a cleared counter flag ends the protection: ok");
        let _ = std::fs::remove_file(&s.path);
    }
}
