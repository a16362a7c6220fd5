//! Snapshot safety: following the VM generation counter of the VMClock device, so that a
//! guest restored from a snapshot (possibly many times, each copy with the same memory)
//! reseeds every thread's generator before its next output, without a restore hook.
//!
//! # The device
//!
//! A hypervisor that offers VMClock (Firecracker, QEMU) exposes one page of shared memory
//! holding a little-endian `struct vmclock_abi`; Linux's `ptp_vmclock` driver lets user space
//! map it read-only through the misc device `/dev/vmclock0` (exactly one page, at offset 0,
//! `PROT_READ` only). The fields used here, as in the kernel's
//! `include/uapi/linux/vmclock-abi.h` (offsets worked out from the header in torvalds/linux
//! at commit 3495064b, the version that has `vm_generation_counter` and
//! `VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT`; earlier versions of the header end after
//! `time_maxerror_*` and have neither), and the driver's `mmap` rules from
//! `drivers/ptp/ptp_vmclock.c` at commit 1a7c3068:
//!
//! | offset | size | field                   | use                                        |
//! |-------:|-----:|-------------------------|--------------------------------------------|
//! | 0      | 4    | `magic`                 | must be `0x4b4c4356` ("VCLK")              |
//! | 4      | 4    | `size`                  | must cover the counter (at least 112)      |
//! | 8      | 2    | `version`               | must be 1                                  |
//! | 12     | 4    | `seq_count`             | seqlock: odd while the hypervisor writes   |
//! | 24     | 8    | `flags`                 | bit 8: `VM_GEN_COUNTER_PRESENT`            |
//! | 104    | 8    | `vm_generation_counter` | a new, never-repeating value per restore   |
//!
//! # How reads follow it
//!
//! Once per process, at the first seeding, [`settled_generation`] probes the device: open it
//! read-only, map one page `PROT_READ`/`MAP_SHARED`, close the descriptor, validate magic,
//! size, version and the flag. On success a process-wide pointer ([`COUNTER`]) is switched
//! from a static fallback word (always 0) to the mapped counter. Every read compares the
//! value behind that pointer (one load of the pointer, one of the counter) with the value
//! its thread's state saw at its last reseed; on a mismatch the read takes the slow path,
//! which reseeds before any output. The value stored at a reseed is read under the seqlock.
//!
//! Anything that keeps the device from being used (no device, `EACCES` for non-root users,
//! bad magic, size or version, the flag clear, a seqlock that never settles while probing,
//! `mmap` failure, a big-endian or 32-bit host, another OS) leaves the fallback word in
//! place: reads behave as without this mechanism, and [`snapshot_protection`] says so.

// The device is used on little-endian 64-bit Linux only; elsewhere its reader stays unused.
#![cfg_attr(
    not(all(
        target_os = "linux",
        target_endian = "little",
        target_pointer_width = "64"
    )),
    allow(dead_code)
)]

use core::sync::atomic::{AtomicPtr, AtomicU8, AtomicU32, AtomicU64, Ordering, fence};

/// The fallback counter when no device is mapped: never changes.
static UNMAPPED: AtomicU64 = AtomicU64::new(0);

/// The process-wide pointer to the counter every read compares with, alone on a cache line
/// so that no frequently written static next to it slows every read down.
#[repr(C, align(64))]
struct CounterLine(AtomicPtr<AtomicU64>);

/// Points to [`UNMAPPED`], or to `vm_generation_counter` in the mapped device page (which
/// is never unmapped once published).
static COUNTER: CounterLine = CounterLine(AtomicPtr::new(core::ptr::addr_of!(UNMAPPED).cast_mut()));

/// `magic` of a VMClock page: "VCLK" in little-endian byte order.
pub(crate) const VMCLOCK_MAGIC: u32 = 0x4b4c_4356;
/// The only `version` of the ABI.
pub(crate) const VMCLOCK_VERSION: u16 = 1;
/// `flags` bit: the hypervisor maintains `vm_generation_counter`.
pub(crate) const VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT: u64 = 1 << 8;

pub(crate) const OFFSET_MAGIC: usize = 0;
pub(crate) const OFFSET_SIZE: usize = 4;
pub(crate) const OFFSET_VERSION: usize = 8;
pub(crate) const OFFSET_SEQ_COUNT: usize = 12;
pub(crate) const OFFSET_FLAGS: usize = 24;
pub(crate) const OFFSET_VM_GENERATION_COUNTER: usize = 104;
/// Bytes of the structure up to the end of `vm_generation_counter`.
pub(crate) const ABI_LEN_WITH_COUNTER: u32 = 112;

/// Tries of the seqlock protocol before giving up on a consistent read: a hypervisor
/// update takes well under a microsecond, and 1024 spins are tens of microseconds.
const SEQLOCK_TRIES: u32 = 1024;

/// The device node of the first VMClock device.
const DEVICE: &str = "/dev/vmclock0";

/// How a process's thread-local generators are protected against VM snapshot restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotProtection {
    /// The VMClock device's `vm_generation_counter` is mapped (`/dev/vmclock0`, Linux
    /// `ptp_vmclock` driver, a hypervisor that sets `VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT`):
    /// every thread reseeds before its first output after a restore, with no hook.
    VmGenerationCounter,
    /// No usable generation counter (no device, no permission, an older hypervisor or
    /// kernel, another OS): only a call of [`crate::reseed_all`] after a restore protects
    /// the clones from replaying each other's stream.
    ManualOnly,
}

const UNKNOWN: u8 = 0;
const PROBING: u8 = 1;
const MAPPED: u8 = 2;
const MANUAL_ONLY: u8 = 3;

/// Where the probe stands: [`UNKNOWN`], [`PROBING`] (one thread maps the device; others do
/// not wait for it), [`MAPPED`] or [`MANUAL_ONLY`].
static PROBE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The snapshot protection in force for this process's thread-local generators; `None`
/// until the first thread has seeded (the device is probed then).
///
/// Linux only, on little-endian 64-bit hosts; every other platform reports
/// [`SnapshotProtection::ManualOnly`]. Never fails or panics: an unusable device is
/// reported as `ManualOnly`. The device is the one of Linux's `ptp_vmclock` driver
/// (`drivers/ptp/ptp_vmclock.c`, ABI in `include/uapi/linux/vmclock-abi.h`); see
/// `docs/SECURITY.md` for the hypervisors and kernels that provide the counter.
pub fn snapshot_protection() -> Option<SnapshotProtection> {
    match PROBE.load(Ordering::Acquire) {
        MAPPED => Some(SnapshotProtection::VmGenerationCounter),
        MANUAL_ONLY => Some(SnapshotProtection::ManualOnly),
        _ => None,
    }
}

/// The counter the calling thread compares with.
#[inline(always)]
fn counter() -> *const AtomicU64 {
    #[cfg(test)]
    if let Some(region) = test_hook::thread_region() {
        return region.counter();
    }
    // Acquire pairs with the Release store that publishes a mapping.
    COUNTER.0.load(Ordering::Acquire)
}

/// The generation counter as it reads now (the fast-path check): one load of the
/// process-wide pointer, one relaxed load of the counter, no seqlock.
///
/// A read that overlaps a hypervisor update may see the old value; the update is complete
/// before a restored guest runs again, so the first read after a restore sees the new one.
#[inline(always)]
pub(crate) fn generation() -> u64 {
    // SAFETY: `counter()` points to `UNMAPPED` or into a mapped, page-aligned device page
    // that is never unmapped; the counter is 8-byte aligned (offset 104). Relaxed 64-bit
    // loads on a 64-bit target are plain loads, which are allowed on read-only memory.
    unsafe { (*counter()).load(Ordering::Relaxed) }
}

/// The generation counter read consistently, for a state that is about to (re)seed: probes
/// the device first if this is the process's first seeding.
///
/// Reads under the seqlock; when it does not settle within the bound, returns the counter as
/// it reads now. That is safe: the caller reseeds anyway, and a later value that differs
/// makes the next read reseed again.
#[cold]
pub(crate) fn settled_generation() -> u64 {
    if PROBE.load(Ordering::Acquire) == UNKNOWN {
        probe_once();
    }
    #[cfg(test)]
    if let Some(region) = test_hook::thread_region() {
        return region.settled().map_or_else(generation, |(_, g)| g);
    }
    match mapped_region() {
        Some(region) => region.settled().map_or_else(generation, |(_, g)| g),
        None => generation(),
    }
}

/// The mapped device page, if any.
fn mapped_region() -> Option<Region> {
    let p = COUNTER.0.load(Ordering::Acquire);
    if core::ptr::eq(p, &UNMAPPED) {
        return None;
    }
    // SAFETY: a published counter pointer is `OFFSET_VM_GENERATION_COUNTER` bytes into a
    // mapped page (see `probe_once`).
    Some(Region(unsafe {
        p.cast::<u8>().sub(OFFSET_VM_GENERATION_COUNTER)
    }))
}

/// Claims the probe and maps the device, or returns at once if another thread has claimed
/// it: no thread ever waits here (a child forked while another thread probed must not hang;
/// it keeps the fallback counter).
#[cold]
#[inline(never)]
fn probe_once() {
    if PROBE
        .compare_exchange(UNKNOWN, PROBING, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    match map_device() {
        Some(region) => {
            #[cfg(fkrng_test_hooks)]
            test_hooks::DEVICE_COUNTER.store(region.counter().cast_mut(), Ordering::Relaxed);
            COUNTER
                .0
                .store(region.counter().cast_mut(), Ordering::Release);
            PROBE.store(MAPPED, Ordering::Release);
        }
        None => PROBE.store(MANUAL_ONLY, Ordering::Release),
    }
}

/// The device path: `/dev/vmclock0`, or in builds with `--cfg fkrng_test_hooks` (never a
/// release build) the stand-in named by `FKRNG_TEST_VMCLOCK_PATH`.
fn device_path() -> std::ffi::OsString {
    #[cfg(fkrng_test_hooks)]
    if let Some(path) = std::env::var_os("FKRNG_TEST_VMCLOCK_PATH") {
        return path;
    }
    DEVICE.into()
}

#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
fn map_device() -> Option<Region> {
    let mapped = map(std::path::Path::new(&device_path()));
    // Test runs that must have the stand-in (the lifecycle tests re-run with it present)
    // stop here rather than pass without it.
    #[cfg(fkrng_test_hooks)]
    if let Err(why) = &mapped
        && std::env::var_os("FKRNG_TEST_VMCLOCK_MUST_MAP").is_some()
    {
        // Straight to the descriptor: the test harness captures `eprintln!`.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("fkrng test hooks: the stand-in was refused: {why:?}\n").as_bytes(),
        );
        std::process::abort();
    }
    mapped.ok()
}

#[cfg(not(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
)))]
fn map_device() -> Option<Region> {
    let _ = device_path();
    None
}

/// Why a file could not serve as the generation counter.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// `open` failed with this `errno` (`ENOENT`: no device; `EACCES`: not permitted).
    Open(i32),
    /// Neither a character device nor a regular file of at least a page.
    NotAPage,
    /// `mmap` failed with this `errno`.
    Map(i32),
    BadMagic,
    BadVersion,
    /// `size` does not reach the end of `vm_generation_counter`.
    TooSmall,
    /// The seqlock did not settle while the flags were read.
    Unsettled,
    /// `VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT` is clear.
    NoCounter,
}

/// Opens `path` read-only, maps its first page `PROT_READ`/`MAP_SHARED`, closes the
/// descriptor and validates the page; the mapping is removed again unless it is usable.
#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
pub(crate) fn map(path: &std::path::Path) -> Result<Region, Unusable> {
    use std::os::unix::ffi::OsStrExt;
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    let c_path =
        std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(|_| Unusable::Open(0))?;
    let page = page_size();
    // SAFETY: `c_path` is a NUL-terminated string; the result is checked.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(Unusable::Open(errno()));
    }
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is writable.
    let stat_ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    let kind = st.st_mode & libc::S_IFMT;
    let is_page = stat_ok
        && (kind == libc::S_IFCHR
            || (kind == libc::S_IFREG && usize::try_from(st.st_size).unwrap_or(0) >= page));
    if !is_page {
        // SAFETY: closes the descriptor opened above, once.
        unsafe { libc::close(fd) };
        return Err(Unusable::NotAPage);
    }
    // SAFETY: a new read-only shared mapping of one page at offset 0 of an open file, with
    // no address hint; the result is checked against MAP_FAILED.
    let addr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            page,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    let map_errno = errno();
    // SAFETY: closes the descriptor opened above, once; the mapping stays valid without it.
    unsafe { libc::close(fd) };
    if addr == libc::MAP_FAILED {
        return Err(Unusable::Map(map_errno));
    }
    let region = Region(addr.cast::<u8>().cast_const());
    let valid = region.validate();
    if valid.is_err() {
        // SAFETY: the mapping made above, not published anywhere, unmapped once.
        unsafe { libc::munmap(addr, page) };
    }
    valid.map(|()| region)
}

#[cfg(target_os = "linux")]
fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
}

/// A mapped VMClock page (the device, or a stand-in file in tests). Fields are read with
/// atomic loads only: the hypervisor changes them under us.
#[derive(Clone, Copy)]
pub(crate) struct Region(pub(crate) *const u8);

impl Region {
    fn u32_at(self, offset: usize) -> u32 {
        // SAFETY: `offset` is one of the 4-byte-aligned field offsets above, inside the
        // mapped page; relaxed loads are plain loads, allowed on read-only memory.
        u32::from_le(unsafe { (*self.0.add(offset).cast::<AtomicU32>()).load(Ordering::Relaxed) })
    }

    fn u64_at(self, offset: usize) -> u64 {
        // SAFETY: as in `u32_at`, for the 8-byte-aligned fields.
        u64::from_le(unsafe { (*self.0.add(offset).cast::<AtomicU64>()).load(Ordering::Relaxed) })
    }

    /// The counter's address in this page.
    pub(crate) fn counter(self) -> *const AtomicU64 {
        // SAFETY: offset 104 lies inside the mapped page.
        unsafe { self.0.add(OFFSET_VM_GENERATION_COUNTER).cast() }
    }

    /// `flags` and `vm_generation_counter` read under the seqlock (an even `seq_count`,
    /// the fields, the same `seq_count` again), or `None` after [`SEQLOCK_TRIES`] tries.
    pub(crate) fn settled(self) -> Option<(u64, u64)> {
        for _ in 0..SEQLOCK_TRIES {
            let before = self.u32_at(OFFSET_SEQ_COUNT);
            if before & 1 == 1 {
                core::hint::spin_loop();
                continue;
            }
            // The field loads must not be satisfied before the first `seq_count` load, nor
            // the second `seq_count` load before them (the hypervisor's writes are ordered
            // with write barriers: `seq_count`, the fields, `seq_count`).
            fence(Ordering::Acquire);
            let flags = self.u64_at(OFFSET_FLAGS);
            let generation = self.u64_at(OFFSET_VM_GENERATION_COUNTER);
            fence(Ordering::Acquire);
            if self.u32_at(OFFSET_SEQ_COUNT) == before {
                return Some((flags, generation));
            }
            core::hint::spin_loop();
        }
        None
    }

    fn validate(self) -> Result<(), Unusable> {
        if self.u32_at(OFFSET_MAGIC) != VMCLOCK_MAGIC {
            return Err(Unusable::BadMagic);
        }
        if self.u32_at(OFFSET_VERSION) & 0xffff != u32::from(VMCLOCK_VERSION) {
            return Err(Unusable::BadVersion);
        }
        if self.u32_at(OFFSET_SIZE) < ABI_LEN_WITH_COUNTER {
            return Err(Unusable::TooSmall);
        }
        let (flags, _) = self.settled().ok_or(Unusable::Unsettled)?;
        if flags & VMCLOCK_FLAG_VM_GEN_COUNTER_PRESENT == 0 {
            return Err(Unusable::NoCounter);
        }
        Ok(())
    }
}

/// Hooks for the snapshot tests and benchmark, built only with `--cfg fkrng_test_hooks`
/// (never part of a release build or of the API): the stand-in's path comes from
/// `FKRNG_TEST_VMCLOCK_PATH` (see [`device_path`]), and [`test_hooks::follow_device`]
/// switches the process between the mapped counter and the fallback word, so that one
/// benchmark run can measure reads both ways.
#[cfg(fkrng_test_hooks)]
pub mod test_hooks {
    use super::{COUNTER, UNMAPPED};
    use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

    /// The mapped counter, once the probe succeeded.
    pub(super) static DEVICE_COUNTER: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

    /// Points every thread's check at the mapped counter (`true`, if the probe mapped one)
    /// or at the fallback word (`false`); each thread reseeds once at its next read, as the
    /// value it compares with changes. Returns whether the mapped counter is followed.
    pub fn follow_device(on: bool) -> bool {
        let device = DEVICE_COUNTER.load(Ordering::Relaxed);
        let target = if on && !device.is_null() {
            device
        } else {
            core::ptr::addr_of!(UNMAPPED).cast_mut()
        };
        COUNTER.0.store(target, Ordering::Release);
        !core::ptr::eq(target, &UNMAPPED)
    }
}

/// Test hook: a thread that calls [`test_hook::follow`] compares its state with a stand-in
/// page (a tmpfs file with the ABI layout) instead of the process-wide counter, so that unit
/// tests can change "the generation" without disturbing tests on other threads. Compiled
/// only into the crate's own unit tests.
#[cfg(test)]
pub(crate) mod test_hook {
    use super::Region;
    use core::cell::Cell;

    std::thread_local! {
        static REGION: Cell<*const u8> = const { Cell::new(core::ptr::null()) };
    }

    pub(crate) fn thread_region() -> Option<Region> {
        let p = REGION.get();
        (!p.is_null()).then_some(Region(p))
    }

    /// From now on the calling thread follows `region`'s counter.
    pub(crate) fn follow(region: Region) {
        REGION.set(region.0);
    }
}

#[cfg(all(
    test,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
mod tests {
    use super::*;
    use crate::thread::{tests::in_child, unreseeded_continuation};
    use std::path::PathBuf;
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Barrier, Mutex};

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
        let _fork = crate::thread::tests::forking();
        // SAFETY: the child only drops its privileges, runs `map` (system calls and one
        // allocation for the path; glibc's malloc is usable in a forked child) and `_exit`s
        // with the result.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: as above; ends the child without unwinding.
            unsafe {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    libc::_exit(2);
                }
                let refused = map(s.path()).err() == Some(Unusable::Open(libc::EACCES));
                libc::_exit(if refused { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: reaps the child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status));
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
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
                test_hook::follow(Region(region_addr as *const u8));
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
        test_hook::follow(region);
        crate::fill(&mut [0u8; 16]);
        let busy = spawn(true);
        let idle = spawn(false);
        let start = crate::probe::snapshot_reseeds();
        before_change.wait();
        assert_eq!(
            crate::probe::snapshot_reseeds(),
            start,
            "no reseed before the change"
        );
        s.set_counter(8);
        after_change.wait();
        let ours = read_after_restore(8);
        let theirs = [busy.join().unwrap(), idle.join().unwrap()];
        assert_eq!(
            crate::probe::snapshot_reseeds() - start,
            3,
            "one reseed per thread"
        );
        assert!(theirs.iter().all(|t| *t != ours) && theirs[0] != theirs[1]);
        // Later reads: no further reseed.
        crate::fill(&mut [0u8; 16]);
        assert_eq!(crate::probe::snapshot_reseeds() - start, 3);
    }

    /// The stand-in page a cloned child follows instead of its parent's: the same address
    /// in a restored guest holds another counter value.
    static CHILD_PAGE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

    /// In a child: follows the child's page, then reads 32 bytes, which must come from a
    /// reseed made for the changed counter (else exit status 1).
    fn child_after_restore() -> Option<[u8; 32]> {
        test_hook::follow(Region(CHILD_PAGE.load(Ordering::Relaxed).cast_const()));
        let before = crate::probe::snapshot_reseeds();
        let mut out = [0u8; 32];
        crate::try_fill(&mut out).ok()?;
        (crate::probe::snapshot_reseeds() == before + 1).then_some(out)
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
        let _serial = serial();
        std::thread::spawn(|| {
            crate::fork::test_hook::WITHOUT_WIPE_ON_FORK.set(true);
            let ours = StandIn::new(40);
            let theirs = StandIn::new(41);
            test_hook::follow(ours.region());
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
        let expected = if map(std::path::Path::new(DEVICE)).is_ok() {
            SnapshotProtection::VmGenerationCounter
        } else {
            SnapshotProtection::ManualOnly
        };
        assert_eq!(crate::snapshot_protection(), Some(expected));
    }
}
