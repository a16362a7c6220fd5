// The device is mapped on little-endian 64-bit Linux only.
#![cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]

use super::*;
use crate::os::pages::page_size;
use crate::os::vmclock::*;
use crate::test_hooks::lifecycle::unreseeded_continuation;
use crate::test_hooks::process::{forking, in_child, in_new_process};
use core::sync::atomic::{AtomicU32, fence};
use fkrng_test_support::child::{self, How, Status};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Barrier, Mutex};

/// [`crate::os::vmclock::map`] of a stand-in file (regular files accepted).
fn map(path: &Path) -> Result<Region, Unusable> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    crate::os::vmclock::map(&path, true)
}

/// A production build maps only a character device: a regular file of a page at the
/// device's path (which could shrink under the mapping and raise `SIGBUS`) is refused.
#[test]
fn only_a_character_device_is_mapped_outside_the_test_hooks() {
    let s = StandIn::new(5);
    assert!(
        map(s.path()).is_ok(),
        "the stand-in maps for the test hooks"
    );
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(s.path().as_os_str().as_bytes()).unwrap();
    assert_eq!(
        crate::os::vmclock::map(&path, false).err(),
        Some(Unusable::NotAPage)
    );
    let page = page_size();
    assert!(!mappable(libc::S_IFREG | 0o600, page as i64, page, false));
    assert!(mappable(libc::S_IFREG | 0o600, page as i64, page, true));
    assert!(!mappable(libc::S_IFREG | 0o600, 112, page, true));
    assert!(mappable(libc::S_IFCHR | 0o600, 0, page, false));
    assert!(!mappable(libc::S_IFDIR | 0o755, page as i64, page, true));
    // What is final, and what the next seed asks again.
    for e in [libc::ENOENT, libc::ENODEV, libc::ENXIO, libc::ENOTDIR] {
        assert!(Unusable::Open(e).is_final(), "errno {e}");
    }
    for e in [
        libc::EACCES,
        libc::EPERM,
        libc::EMFILE,
        libc::ENFILE,
        libc::ENOMEM,
        libc::EINTR,
        libc::EAGAIN,
    ] {
        assert!(!Unusable::Open(e).is_final(), "errno {e}");
    }
    assert!(!Unusable::Map(libc::ENOMEM).is_final());
    assert!(Unusable::NotAPage.is_final());
}

/// One test at a time: they count snapshot reseeds, a process-wide counter.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A stand-in for the device: a tmpfs file with the ABI layout, and a writable shared
/// mapping of it through which the test plays the hypervisor.
pub(crate) struct StandIn {
    path: PathBuf,
    page: *mut u8,
    len: usize,
}

// SAFETY: the mapping is shared memory written only with atomic stores.
unsafe impl Send for StandIn {}
// SAFETY: as above.
unsafe impl Sync for StandIn {}

impl StandIn {
    /// A valid page (magic, size of one page, version 1, the counter flag) holding
    /// `counter`.
    pub(crate) fn new(counter: u64) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!(
            "fkrng-vmclock-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let len = page_size();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .expect("create stand-in");
        file.set_len(len as u64).expect("size stand-in");
        use std::os::fd::AsRawFd;
        // SAFETY: a new writable shared mapping of the file just sized to `len`.
        let addr = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(addr, libc::MAP_FAILED, "map stand-in");
        let s = StandIn {
            path,
            page: addr.cast(),
            len,
        };
        // "VCLK" as bytes, so that the reader's constant and byte order are checked too.
        for (i, b) in b"VCLK".iter().enumerate() {
            s.byte(OFFSET_MAGIC + i, *b);
        }
        s.u32(OFFSET_SIZE).store(len as u32, Ordering::Relaxed);
        s.u32(OFFSET_VERSION).store(1, Ordering::Relaxed);
        s.u64(OFFSET_FLAGS).store(1 << 8, Ordering::Relaxed);
        s.u64(OFFSET_VM_GENERATION_COUNTER)
            .store(counter, Ordering::Relaxed);
        s
    }

    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn byte(&self, offset: usize, value: u8) {
        // SAFETY: inside the page; only set up before any reader maps the file.
        unsafe { self.page.add(offset).write_volatile(value) };
    }

    pub(crate) fn u32(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: a 4-byte-aligned offset inside the writable mapping.
        unsafe { &*self.page.add(offset).cast::<AtomicU32>() }
    }

    pub(crate) fn u64(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: an 8-byte-aligned offset inside the writable mapping.
        unsafe { &*self.page.add(offset).cast::<AtomicU64>() }
    }

    /// A hypervisor update of the counter under the seqlock.
    pub(crate) fn set_counter(&self, value: u64) {
        let seq = self.u32(OFFSET_SEQ_COUNT);
        let s = seq.load(Ordering::Relaxed);
        seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.u64(OFFSET_VM_GENERATION_COUNTER)
            .store(value, Ordering::Relaxed);
        fence(Ordering::Release);
        seq.store(s.wrapping_add(2), Ordering::Relaxed);
    }

    /// The read-only mapping a reader uses, made as for the device.
    pub(crate) fn region(&self) -> Region {
        map(&self.path).expect("a valid stand-in maps")
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        // SAFETY: the writable mapping made in `new`, unmapped once. Readers' read-only
        // mappings (never unmapped, as for the device) keep the file's pages alive.
        unsafe { libc::munmap(self.page.cast(), self.len) };
        let _ = std::fs::remove_file(&self.path);
    }
}

#[test]
fn reader_takes_the_abi_offsets_in_little_endian_order() {
    let s = StandIn::new(0);
    for (i, b) in [1u8, 2, 3, 4, 5, 6, 7, 8].iter().enumerate() {
        s.byte(OFFSET_VM_GENERATION_COUNTER + i, *b);
    }
    s.byte(OFFSET_FLAGS + 1, 0x01); // bit 8
    s.byte(OFFSET_FLAGS + 7, 0x80); // an unrelated high bit
    let r = s.region();
    assert_eq!(
        r.settled(),
        Some((0x8000_0000_0000_0100, 0x0807_0605_0403_0201))
    );
    // SAFETY: the counter of a mapped page.
    assert_eq!(
        unsafe { (*r.counter()).load(Ordering::Relaxed) },
        0x0807_0605_0403_0201
    );
    assert_eq!(VMCLOCK_MAGIC.to_le_bytes(), *b"VCLK");
}

#[test]
fn unusable_pages_are_refused() {
    type Spoil = fn(&StandIn);
    let cases: [(&str, Spoil, Unusable); 6] = [
        (
            "bad magic",
            |s| s.byte(OFFSET_MAGIC, b'X'),
            Unusable::BadMagic,
        ),
        (
            "version 2",
            |s| s.u32(OFFSET_VERSION).store(2, Ordering::Relaxed),
            Unusable::BadVersion,
        ),
        (
            "size without the counter",
            |s| s.u32(OFFSET_SIZE).store(104, Ordering::Relaxed),
            Unusable::TooSmall,
        ),
        (
            "counter flag clear",
            |s| s.u64(OFFSET_FLAGS).store(0xff, Ordering::Relaxed),
            Unusable::NoCounter,
        ),
        (
            "wedged seqlock",
            |s| s.u32(OFFSET_SEQ_COUNT).store(3, Ordering::Relaxed),
            Unusable::Unsettled,
        ),
        (
            "shorter than a page",
            |s| {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(s.path())
                    .unwrap()
                    .set_len(112)
                    .unwrap()
            },
            Unusable::NotAPage,
        ),
    ];
    for (what, spoil, expected) in cases {
        let s = StandIn::new(5);
        assert!(map(s.path()).is_ok(), "{what}: the unspoilt page maps");
        spoil(&s);
        assert_eq!(map(s.path()).err(), Some(expected), "{what}");
    }
    let missing = StandIn::new(5);
    let path = missing.path().to_owned();
    drop(missing);
    assert_eq!(map(&path).err(), Some(Unusable::Open(libc::ENOENT)));
    assert_eq!(
        map(std::path::Path::new("/")).err(),
        Some(Unusable::NotAPage)
    );
}

/// A page the process may not open, as `/dev/vmclock0` (mode 0600, owned by root) is for
/// other users: checked as an unprivileged user, in a child when the tests run as root.
#[test]
fn unreadable_device_is_refused() {
    let s = StandIn::new(5);
    std::fs::set_permissions(
        s.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o000),
    )
    .unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert_eq!(map(s.path()).err(), Some(Unusable::Open(libc::EACCES)));
        return;
    }
    let _fork = forking();
    // The child drops its privileges, runs `map` (system calls and one allocation for the
    // path; glibc's malloc is usable in a forked child) and exits with the result.
    let status = child::run(How::Fork, |_| {
        // SAFETY: setgid and setuid have no memory preconditions.
        if unsafe { libc::setgid(65534) != 0 || libc::setuid(65534) != 0 } {
            return 2;
        }
        let refused = map(s.path()).err() == Some(Unusable::Open(libc::EACCES));
        if refused { 0 } else { 1 }
    })
    .status;
    assert_eq!(
        status,
        Status::Exited(0),
        "an unprivileged mapping was not refused with EACCES"
    );
}

#[test]
fn wedged_seqlock_gives_up_after_the_bound() {
    let s = StandIn::new(9);
    let r = s.region();
    assert_eq!(r.settled(), Some((1 << 8, 9)));
    s.u32(OFFSET_SEQ_COUNT).store(1, Ordering::Relaxed);
    assert_eq!(r.settled(), None);
}

/// The hypervisor writes the 64-bit counter as two 32-bit halves under the seqlock; a
/// reader must only ever get values that were whole, never a mix that could pass for
/// the old value, and never an older value once an update has completed.
#[test]
fn torn_writes_are_never_read() {
    /// Settled reads to make while the writer keeps updating (and at least 100 of them
    /// seeing a new value).
    const READS: u64 = 2_000;
    let s = Arc::new(StandIn::new(0));
    let r = s.region();
    let done_upto = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (s, done_upto, stop) = (Arc::clone(&s), Arc::clone(&done_upto), Arc::clone(&stop));
        std::thread::spawn(move || {
            let seq = s.u32(OFFSET_SEQ_COUNT);
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                k += 1;
                // Value k has k in both halves: a torn read has unequal halves.
                let s0 = seq.load(Ordering::Relaxed);
                seq.store(s0 + 1, Ordering::Relaxed);
                fence(Ordering::Release);
                s.u32(OFFSET_VM_GENERATION_COUNTER)
                    .store(k as u32, Ordering::Relaxed);
                // A slow writer: a wide window in which the halves disagree.
                for _ in 0..32 {
                    std::hint::spin_loop();
                }
                s.u32(OFFSET_VM_GENERATION_COUNTER + 4)
                    .store(k as u32, Ordering::Relaxed);
                fence(Ordering::Release);
                seq.store(s0 + 2, Ordering::Relaxed);
                done_upto.store(k, Ordering::Release);
            }
        })
    };
    let (mut reads, mut changes, mut last) = (0u64, 0u64, 0u64);
    while done_upto.load(Ordering::Acquire) == 0 {
        std::thread::yield_now();
    }
    // Until enough reads have overlapped enough updates.
    while reads < READS || changes < 100 {
        let completed = done_upto.load(Ordering::Acquire);
        let Some((_, g)) = r.settled() else {
            continue; // the writer held the seqlock for all tries
        };
        let (hi, lo) = (g >> 32, g & 0xffff_ffff);
        assert_eq!(hi, lo, "torn value {g:#x} after {reads} reads");
        assert!(
            lo >= completed,
            "value {lo} read after update {completed} completed"
        );
        assert!(lo >= last, "went back from {last} to {lo}");
        changes += u64::from(lo != last);
        last = lo;
        reads += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// Reads 32 bytes on this thread and checks they come from a reseeded state: one more
/// snapshot reseed, and not the bytes the state would have produced without it.
fn read_after_restore(expected_generation: u64) -> [u8; 32] {
    let (rest, key, _) = unreseeded_continuation().expect("seeded before");
    let mut would_be = rest;
    let mut more = [0u8; 64];
    <crate::FkeRng as rand_core::SeedableRng>::from_seed(key).fill(&mut more);
    would_be.extend_from_slice(&more);
    let mut out = [0u8; 32];
    crate::fill(&mut out);
    assert_ne!(out[..], would_be[..32], "served from the restored state");
    let (_, _, generation) = unreseeded_continuation().unwrap();
    assert_eq!(generation, expected_generation);
    out
}

#[test]
fn counter_change_reseeds_every_thread_before_its_next_output() {
    // The whole process follows the stand-in: alone in a process of its own.
    if in_new_process(
        "lifecycle::snapshot::tests::counter_change_reseeds_every_thread_before_its_next_output",
    )
    .is_some()
    {
        return;
    }
    let _serial = serial();
    let s = StandIn::new(7);
    let region = s.region();
    let region_addr = region.0 as usize;
    // Main (this) thread, a busy thread and a thread that stays idle until after the
    // change; each seeds while the counter is 7.
    let before_change = Arc::new(Barrier::new(3));
    let after_change = Arc::new(Barrier::new(3));
    let spawn = |busy: bool| {
        let (b1, b2) = (Arc::clone(&before_change), Arc::clone(&after_change));
        std::thread::spawn(move || {
            crate::test_hooks::snapshot::follow(Region(region_addr as *const u8));
            crate::fill(&mut [0u8; 16]);
            if busy {
                // Reads while the counter is unchanged: no reseed.
                for _ in 0..10 {
                    crate::fill(&mut [0u8; 16]);
                }
            }
            b1.wait();
            b2.wait();
            read_after_restore(8)
        })
    };
    crate::test_hooks::snapshot::follow(region);
    crate::fill(&mut [0u8; 16]);
    let busy = spawn(true);
    let idle = spawn(false);
    let start = crate::test_hooks::counters::snapshot_reseeds();
    before_change.wait();
    assert_eq!(
        crate::test_hooks::counters::snapshot_reseeds(),
        start,
        "no reseed before the change"
    );
    s.set_counter(8);
    after_change.wait();
    let ours = read_after_restore(8);
    let theirs = [busy.join().unwrap(), idle.join().unwrap()];
    assert_eq!(
        crate::test_hooks::counters::snapshot_reseeds() - start,
        3,
        "one reseed per thread"
    );
    assert!(theirs.iter().all(|t| *t != ours) && theirs[0] != theirs[1]);
    // Later reads: no further reseed.
    crate::fill(&mut [0u8; 16]);
    assert_eq!(crate::test_hooks::counters::snapshot_reseeds() - start, 3);
}

/// The stand-in page a cloned child follows instead of its parent's: the same address
/// in a restored guest holds another counter value.
static CHILD_PAGE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// In a child: follows the child's page, then reads 32 bytes, which must come from a
/// reseed made for the changed counter (else exit status 1).
fn child_after_restore() -> Option<[u8; 32]> {
    crate::test_hooks::snapshot::follow(Region(CHILD_PAGE.load(Ordering::Relaxed).cast_const()));
    let before = crate::test_hooks::counters::snapshot_reseeds();
    let mut out = [0u8; 32];
    crate::try_fill(&mut out).ok()?;
    (crate::test_hooks::counters::snapshot_reseeds() == before + 1).then_some(out)
}

fn next_32() -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    crate::try_fill(&mut out).ok()?;
    Some(out)
}

/// Two processes with the same memory, as two guests restored from one snapshot: a raw
/// `clone` (no atfork handler) of a thread whose state is not wipe-on-fork. Without a
/// counter change the child replays its parent; with one (the child's page holds a new
/// value), the child's first read comes from a reseeded state.
#[test]
fn clones_of_a_snapshot_diverge_at_the_first_read_after_the_change() {
    // The whole process follows the stand-in: alone in a process of its own.
    if in_new_process(
        "lifecycle::snapshot::tests::clones_of_a_snapshot_diverge_at_the_first_read_after_the_change",
    )
    .is_some()
    {
        return;
    }
    let _serial = serial();
    std::thread::spawn(|| {
        crate::test_hooks::lifecycle::set_up_without_wipe_on_fork();
        let ours = StandIn::new(40);
        let theirs = StandIn::new(41);
        crate::test_hooks::snapshot::follow(ours.region());
        CHILD_PAGE.store(theirs.region().0.cast_mut(), Ordering::Relaxed);
        crate::fill(&mut [0u8; 16]);

        // Control: same counter in both, so the child replays the parent.
        let replayed = in_child(true, next_32);
        assert_eq!(
            Some(replayed),
            next_32(),
            "the clone did not replay its parent"
        );

        let child = in_child(true, child_after_restore);
        let mut parent = vec![0u8; 4096];
        for chunk in parent.chunks_mut(32) {
            crate::fill(chunk);
        }
        assert!(
            !parent.windows(32).any(|w| w == child),
            "the restored clone replayed the other's stream"
        );
        assert_ne!(child, [0u8; 32]);
    })
    .join()
    .unwrap();
}

#[test]
fn protection_reported_for_this_host() {
    crate::fill(&mut [0u8; 1]);
    let expected = match crate::os::vmclock::map_device() {
        Ok(_) => Some(SnapshotProtection::VmGenerationCounter),
        Err(true) => Some(SnapshotProtection::ManualOnly),
        Err(false) => None, // an answer that can change: probed again at the next seed
    };
    assert_eq!(crate::snapshot_protection(), expected);
}

/// The stand-in whose counter [`restore_now`] moves, as a restore in the middle of a read.
static RESTORED: std::sync::atomic::AtomicPtr<StandIn> =
    std::sync::atomic::AtomicPtr::new(core::ptr::null_mut());

fn restore_now() {
    // SAFETY: set by the test below to a stand-in that outlives every read it makes.
    let s = unsafe { &*RESTORED.load(Ordering::SeqCst) };
    let g = s.u64(OFFSET_VM_GENERATION_COUNTER).load(Ordering::Relaxed);
    s.set_counter(g + 1);
}

/// A restore (the counter moves) while a 16-byte read runs, before or after its bytes are
/// copied out of the state: the read returns neither the bytes the state held for it nor
/// zeros, but bytes of a state reseeded for the new counter value.
#[test]
fn a_read_during_which_the_counter_moves_is_served_again() {
    use crate::probe::{Point, hooks::arm};
    // The whole process follows the stand-in: alone in a process of its own.
    if in_new_process(
        "lifecycle::snapshot::tests::a_read_during_which_the_counter_moves_is_served_again",
    )
    .is_some()
    {
        return;
    }
    let _serial = serial();
    let s = StandIn::new(20);
    crate::test_hooks::snapshot::follow(s.region());
    RESTORED.store(core::ptr::addr_of!(s).cast_mut(), Ordering::SeqCst);
    crate::fill(&mut [0u8; 16]);
    let mut generation = 20;
    // Every case is run and checked; the failures are reported together.
    let mut failed = Vec::new();
    for (point, fixed) in [
        (Point::BeforeCopy, false),
        (Point::AfterCopy, false),
        (Point::AfterCopy, true),
    ] {
        let case = format!("{point:?}, array {fixed}");
        crate::fill(&mut [0u8; 16]);
        let (rest, _, seen) = unreseeded_continuation().unwrap();
        assert_eq!(seen, generation, "{case}: seeded at the current counter");
        assert!(
            rest.len() >= 16,
            "{case}: the read is served from the buffer"
        );
        let reseeds = crate::test_hooks::counters::snapshot_reseeds();
        arm(point, restore_now);
        let out = if fixed {
            crate::array::<16>()
        } else {
            let mut out = [0u8; 16];
            crate::fill(&mut out);
            out
        };
        generation += 1;
        assert_eq!(
            s.u64(OFFSET_VM_GENERATION_COUNTER).load(Ordering::Relaxed),
            generation,
            "{case}: the hook ran"
        );
        let reseeded = crate::test_hooks::counters::snapshot_reseeds() - reseeds;
        let mut check = |ok: bool, what: &str| {
            if !ok {
                failed.push(format!("{case}: {what} ({out:?})"));
            }
        };
        check(out != [0u8; 16], "zero output");
        check(out[..] != rest[..16], "served from the restored state");
        check(reseeded == 1, "not served again after one reseed");
        // The next read reseeds for the new counter at the latest.
        crate::fill(&mut [0u8; 16]);
        let (_, _, seen) = unreseeded_continuation().unwrap();
        assert_eq!(seen, generation, "{case}: reseeded for the new counter");
    }
    RESTORED.store(core::ptr::null_mut(), Ordering::SeqCst);
    assert!(failed.is_empty(), "{failed:#?}");
}
