//! The VMClock device's page (`struct vmclock_abi`, see `lifecycle::snapshot`): mapping,
//! validation, seqlock read. Only atomic loads: the hypervisor changes fields under us.
// Where `map` is not built, the unit tests alone use the ABI's constants and validation.
#![cfg_attr(
    not(all(
        target_os = "linux",
        target_endian = "little",
        target_pointer_width = "64"
    )),
    allow(dead_code)
)]

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

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
/// Tries of the seqlock before giving up (tens of µs; an update takes well under one).
const SEQLOCK_TRIES: u32 = 1024;

/// Why a file could not serve as the generation counter: `open` or `mmap` failed with the
/// `errno`; not a character device (nor, for the test hooks' stand-in, a regular file of a
/// page); a bad `magic`, `version` or `size` (short of the counter); the seqlock did not
/// settle; no counter flag.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unusable {
    Open(i32),
    NotAPage,
    Map(i32),
    BadMagic,
    BadVersion,
    TooSmall,
    Unsettled,
    NoCounter,
}

#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
impl Unusable {
    /// Whether the answer holds for the life of the process: no such device (`ENOENT`,
    /// `ENODEV`, `ENXIO`, `ENOTDIR`, not a character device), or a device whose page has no
    /// valid counter (a seqlock that stays odd for [`SEQLOCK_TRIES`] tries included).
    /// Anything else can change, so the probe is made again at the next seed: no permission
    /// (`EACCES`, `EPERM`: a udev rule or an administrator may widen the device's mode, a
    /// security policy may be reloaded), exhausted descriptors or memory (`EMFILE`, `ENFILE`,
    /// `ENOMEM`), an interrupted call (`EINTR`, `EAGAIN`).
    pub(crate) fn is_final(&self) -> bool {
        use libc::{ENODEV, ENOENT, ENOTDIR, ENXIO};
        match self {
            Self::Open(e) => matches!(*e, ENOENT | ENODEV | ENXIO | ENOTDIR),
            Self::Map(e) => *e == libc::ENODEV,
            Self::NotAPage | Self::BadMagic | Self::BadVersion | Self::TooSmall => true,
            Self::NoCounter | Self::Unsettled => true,
        }
    }
}

/// Whether a file of mode `mode` and `size` bytes may be mapped: a character device, or a
/// regular file of at least a page only when `stand_in` (the test hooks' stand-in; a
/// production build passes `false`, so a file that could shrink under the mapping and
/// raise `SIGBUS` is never mapped).
#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
pub(crate) fn mappable(mode: libc::mode_t, size: i64, page: usize, stand_in: bool) -> bool {
    let kind = mode & libc::S_IFMT;
    let big_enough = usize::try_from(size).is_ok_and(|size| size >= page);
    kind == libc::S_IFCHR || (stand_in && kind == libc::S_IFREG && big_enough)
}

/// Maps the first page of `path` read-only and shared and validates it; the descriptor is
/// closed, the mapping kept only when returned. `stand_in`: see [`mappable`].
#[cfg(all(
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64",
    not(miri)
))]
pub(crate) fn map(path: &core::ffi::CStr, stand_in: bool) -> Result<Region, Unusable> {
    let page = super::pages::linux::page_size();
    // Closed on return; a mapping stays valid without it.
    let file = super::nocancel::Descriptor::open(path).map_err(Unusable::Open)?;
    let fd = file.raw();
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is writable.
    let stat_ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    if !(stat_ok && mappable(st.st_mode, st.st_size, page, stand_in)) {
        return Err(Unusable::NotAPage);
    }
    let (prot, flags) = (libc::PROT_READ, libc::MAP_SHARED);
    // SAFETY: a new read-only shared mapping of one page at offset 0 of an open file, with
    // no address hint; the result is checked against MAP_FAILED.
    let addr = unsafe { libc::mmap(core::ptr::null_mut(), page, prot, flags, fd, 0) };
    if addr == libc::MAP_FAILED {
        return Err(Unusable::Map(super::nocancel::errno()));
    }
    let region = Region(addr.cast::<u8>().cast_const());
    let valid = region.validate();
    if valid.is_err() {
        // SAFETY: the mapping made above, not published anywhere, unmapped once.
        unsafe { libc::munmap(addr, page) };
    }
    valid.map(|()| region)
}

cfg_if::cfg_if! {
    if #[cfg(all(
        target_os = "linux", target_endian = "little", target_pointer_width = "64", not(miri)
    ))] {
        /// The device node of the first VMClock device.
        const DEVICE: &core::ffi::CStr = c"/dev/vmclock0";

        /// The first VMClock device's page, mapped ([`map`]), or whether its absence is final
        /// ([`Unusable::is_final`]).
        pub(crate) fn map_device() -> Result<Region, bool> {
            map(DEVICE, false).map_err(|why| why.is_final())
        }

        /// As [`map_device`], for the test hooks' stand-in file at `path` (a regular file is
        /// accepted); with `must_map`, a refusal aborts the process with its reason.
        #[cfg(any(test, fkrng_test_hooks))]
        pub(crate) fn map_stand_in(path: &std::ffi::OsStr, must_map: bool) -> Result<Region, bool> {
            use std::os::unix::ffi::OsStrExt;
            let path = std::ffi::CString::new(path.as_bytes()).map_err(|_| true)?;
            let mapped = map(&path, true);
            if let (Err(why), true) = (&mapped, must_map) {
                std::eprintln!("fkrng test hooks: the stand-in was refused: {why:?}");
                std::process::abort();
            }
            mapped.map_err(|why| why.is_final())
        }
    } else {
        /// No device here: the answer is final (the protection is manual).
        pub(crate) fn map_device() -> Result<Region, bool> {
            Err(true)
        }

        /// As [`map_device`].
        #[cfg(any(test, fkrng_test_hooks))]
        pub(crate) fn map_stand_in(_: &std::ffi::OsStr, _: bool) -> Result<Region, bool> {
            Err(true)
        }
    }
}

/// A mapped VMClock page (the device, or a stand-in file in tests).
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
    /// the fields, the same `seq_count` again); `None` after [`SEQLOCK_TRIES`] tries.
    pub(crate) fn settled(self) -> Option<(u64, u64)> {
        for _ in 0..SEQLOCK_TRIES {
            let before = self.u32_at(OFFSET_SEQ_COUNT);
            if before & 1 == 0 {
                // Keeps the field loads between the `seq_count` loads (the writer's order).
                fence(Ordering::Acquire);
                let flags = self.u64_at(OFFSET_FLAGS);
                let generation = self.u64_at(OFFSET_VM_GENERATION_COUNTER);
                fence(Ordering::Acquire);
                if self.u32_at(OFFSET_SEQ_COUNT) == before {
                    return Some((flags, generation));
                }
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
