//! The OS random source on Linux and Android: the `getrandom(2)` system call, and where the
//! kernel lacks it (before Linux 3.17: `ENOSYS`) or a seccomp filter refuses it (`ENOSYS` or
//! `EPERM`, as container runtimes and sandboxes do), the kernel's random character device.
//!
//! The device is opened, checked and closed for every seed; no descriptor is kept between
//! seeds. A descriptor kept open can be closed behind the library's back (daemons close
//! every descriptor when they start) and its number reused for an ordinary file, whose
//! contents would then be read as the seed. Before it is read, the opened file must be the
//! character device `1:9` (`/dev/urandom`, `drivers/char/mem.c` and `Documentation/admin-guide/devices.txt`
//! in the kernel); anything else, such as a regular file bind-mounted over the path, is
//! refused with [`Error::NOT_RANDOM_DEVICE`]. Before the first read of the device in a
//! process, `/dev/random` (`1:8`) is polled for readability once, which waits for the kernel's
//! pool to be initialised, as the `getrandom` call itself would. Where `/dev/random` is not
//! there (a sandbox that exposes `/dev/urandom` alone), the kernel's entropy count, asked
//! through `/dev/urandom`, must show an initialised pool instead ([`pool_known_ready`]).
//!
//! The system call is made directly (`syscall(SYS_getrandom, …)`), not through the C
//! library's wrapper, so that it is the kernel that answers on every C library version.

use crate::Error;
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, Ordering};

/// The kernel's non-blocking random device and its device number (major 1, minor 9).
const URANDOM: (&CStr, u32, u32) = (c"/dev/urandom", 1, 9);
/// The kernel's blocking random device (major 1, minor 8), polled once for pool readiness.
const RANDOM: (&CStr, u32, u32) = (c"/dev/random", 1, 8);

/// Set once `/dev/random` was seen readable: the pool is initialised for good.
static POOL_READY: AtomicBool = AtomicBool::new(false);

/// Set once the `getrandom` system call has filled a request in this process: the kernel's
/// pool is initialised and the call is allowed, so later seeds of new threads may come from
/// the vDSO ([`fill_new_thread`]).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
static SYSCALL_ANSWERED: AtomicBool = AtomicBool::new(false);

/// Fills `dest` from the kernel: the system call, or the checked device where the call is
/// missing or refused.
pub(crate) fn fill(dest: &mut [u8]) -> Result<(), Error> {
    or_device(dest, fill_by_syscall)
}

/// As [`fill`], for a new thread's first seed: from the kernel's `getrandom` in the vDSO
/// (`super::vdso`) once the system call has answered in this process, where the vDSO has
/// one and a state of its is free; else as [`fill`]. The process's first seed, and every
/// reseed, stay system calls: what a seccomp filter or a tracer governs, and the readiness
/// wait of the kernel's pool.
pub(crate) fn fill_new_thread(dest: &mut [u8]) -> Result<(), Error> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    if SYSCALL_ANSWERED.load(Ordering::Relaxed) {
        return or_device(dest, |dest| {
            super::vdso::fill(dest).unwrap_or_else(|| fill_by_syscall(dest))
        });
    }
    fill(dest)
}

/// `first(dest)`, and the checked device where it finds the system call missing or
/// refused.
fn or_device(
    dest: &mut [u8],
    first: impl FnOnce(&mut [u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    match first(dest) {
        Err(e) if e == Error::from_errno(libc::ENOSYS) || e == Error::from_errno(libc::EPERM) => {
            fill_from_device(dest)
        }
        other => other,
    }
}

/// `getrandom(dest, 0)` until `dest` is full, retrying on `EINTR`.
fn fill_by_syscall(dest: &mut [u8]) -> Result<(), Error> {
    let filled = fill_exact(dest, |chunk| {
        // SAFETY: `chunk` is valid for writes of `chunk.len()` bytes; the kernel writes at
        // most that many and returns their number or -1.
        unsafe {
            libc::syscall(
                libc::SYS_getrandom,
                chunk.as_mut_ptr(),
                chunk.len(),
                0 as libc::c_uint,
            ) as isize
        }
    });
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    if filled.is_ok() {
        SYSCALL_ANSWERED.store(true, Ordering::Relaxed);
    }
    filled
}

/// Opens the device at `path` read-only and checks that it is the character device
/// `major:minor`; the descriptor is closed again on every error path.
fn open_device((path, major, minor): (&CStr, u32, u32)) -> Result<Descriptor, Error> {
    let fd = loop {
        // SAFETY: `path` is a NUL-terminated string; `open` has no other preconditions.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOCTTY,
            )
        };
        if fd >= 0 {
            break Descriptor(fd);
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(Error::from_errno(e));
        }
    };
    // SAFETY: `libc::stat` is plain data, valid when all-zero.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd.0` is an open descriptor and `st` a valid, writable `stat`.
    if unsafe { libc::fstat(fd.0, &mut st) } != 0 {
        return Err(Error::from_errno(errno()));
    }
    let is_char = st.st_mode & libc::S_IFMT == libc::S_IFCHR;
    // `major` and `minor` return `u32` on glibc and musl, `c_int` on Android.
    let number = (
        i64::from(libc::major(st.st_rdev)),
        i64::from(libc::minor(st.st_rdev)),
    );
    if !is_char || number != (i64::from(major), i64::from(minor)) {
        return Err(Error::NOT_RANDOM_DEVICE);
    }
    Ok(fd)
}

/// Fills `dest` from `/dev/urandom`, opened and checked for this call alone.
#[cold]
fn fill_from_device(dest: &mut [u8]) -> Result<(), Error> {
    if !POOL_READY.load(Ordering::Relaxed) {
        wait_for_pool()?;
        POOL_READY.store(true, Ordering::Relaxed);
    }
    let fd = open_device(URANDOM)?;
    fill_exact(dest, |chunk| {
        // SAFETY: `fd.0` is open, and `chunk` is valid for writes of `chunk.len()` bytes.
        unsafe { libc::read(fd.0, chunk.as_mut_ptr().cast(), chunk.len()) }
    })
}

/// Waits until `/dev/random` is readable: the kernel's pool has been initialised. Where
/// `/dev/random` is absent or refused (`ENOENT`, `EACCES`, `EPERM`), asks the entropy count
/// instead ([`pool_known_ready`]); a path that opens something other than the device is
/// refused as for `/dev/urandom`.
fn wait_for_pool() -> Result<(), Error> {
    let fd = match open_device(RANDOM) {
        Ok(fd) => fd,
        Err(e)
            if [libc::ENOENT, libc::EACCES, libc::EPERM]
                .iter()
                .any(|&code| e == Error::from_errno(code)) =>
        {
            return pool_known_ready();
        }
        Err(e) => return Err(e),
    };
    let mut pfd = libc::pollfd {
        fd: fd.0,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one valid, writable `pollfd`.
        if unsafe { libc::poll(&mut pfd, 1, -1) } >= 0 {
            return Ok(());
        }
        let e = errno();
        if e != libc::EINTR && e != libc::EAGAIN {
            return Err(Error::from_errno(e));
        }
    }
}

/// `RNDGETENTCNT` (`linux/random.h`): `_IOR('R', 0x00, int)`, whose encoding puts the read
/// direction at bit 30 on most architectures and at bit 29 on MIPS, PowerPC and SPARC.
const RNDGETENTCNT: libc::c_ulong = if cfg!(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "powerpc",
    target_arch = "powerpc64",
    target_arch = "sparc",
    target_arch = "sparc64"
)) {
    0x4004_5200
} else {
    0x8004_5200
};

/// The entropy count (in bits) at which every kernel generation has initialised its pool:
/// from Linux 5.18 on the count is the pool's initialisation progress, ready at exactly 256
/// bits and never lowered afterwards; from 4.8 to 5.17 the generator was initialised when
/// the count first reached 128 bits (the count may fall again later, but never reaches 256
/// before that).
const READY_BITS: libc::c_int = 256;

/// Whether the kernel's pool is initialised, for a process that cannot poll `/dev/random`:
/// `Ok` when the entropy count (`RNDGETENTCNT`, asked through the checked `/dev/urandom`
/// descriptor; no privilege needed) is at least [`READY_BITS`], else `EAGAIN`.
///
/// Reading `/dev/urandom` alone is not enough: no kernel makes it wait for the pool (from
/// 5.18 on a read of an uninitialised pool first tries to initialise it from CPU timing
/// jitter, and returns bytes whether that worked or not), so a seed read early in boot could
/// be guessable. A count below [`READY_BITS`] is therefore an error, even though on kernels
/// before 5.18 an initialised pool whose count was spent can show one: the seed is retried
/// at the next read, and no output comes from a pool not known to be ready.
fn pool_known_ready() -> Result<(), Error> {
    let fd = open_device(URANDOM)?;
    let mut bits: libc::c_int = 0;
    loop {
        // SAFETY: `fd.0` is open; `RNDGETENTCNT` writes one `int` to the pointer given.
        if unsafe { libc::ioctl(fd.0, RNDGETENTCNT as _, &mut bits) } == 0 {
            break;
        }
        let e = errno();
        if e != libc::EINTR {
            return Err(Error::from_errno(e));
        }
    }
    if bits >= READY_BITS {
        Ok(())
    } else {
        Err(Error::from_errno(libc::EAGAIN))
    }
}

/// Calls `read_some` until `dest` is full: it returns the bytes written to the start of its
/// argument, or -1 with `errno` set (`EINTR` retries). A count larger than what was asked
/// for (a broken emulator or a tracer's injected result) is an error, and so is 0.
pub(crate) fn fill_exact(
    mut dest: &mut [u8],
    mut read_some: impl FnMut(&mut [u8]) -> isize,
) -> Result<(), Error> {
    while !dest.is_empty() {
        let n = read_some(dest);
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(Error::from_errno(e));
        }
        match usize::try_from(n) {
            Ok(n) if n > 0 && n <= dest.len() => dest = &mut dest[n..],
            _ => return Err(Error::BAD_LENGTH),
        }
    }
    Ok(())
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// An open descriptor, closed on drop.
struct Descriptor(libc::c_int);

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: the descriptor was opened by `open_device` and is closed exactly once.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    fn c_path(path: &std::path::Path) -> CString {
        CString::new(path.as_os_str().as_bytes()).unwrap()
    }

    #[test]
    fn the_random_devices_pass_the_check() {
        let _only_us = DEVICES.lock().unwrap();
        open_device(URANDOM).expect("/dev/urandom is 1:9");
        open_device(RANDOM).expect("/dev/random is 1:8");
        let mut seed = [0u8; 36];
        fill_from_device(&mut seed).unwrap();
        assert_ne!(seed, [0u8; 36]);
    }

    #[test]
    fn anything_else_at_the_path_is_refused() {
        // A regular file full of a known byte, as a reused descriptor or a file mounted
        // over the device path would present.
        let file = std::env::temp_dir().join(format!("fkrng-not-a-device-{}", std::process::id()));
        std::fs::write(&file, [0x41u8; 64]).unwrap();
        let path = c_path(&file);
        let refused = open_device((&path, 1, 9)).err();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(refused, Some(Error::NOT_RANDOM_DEVICE));
        // Other character devices: /dev/null (1:3) and /dev/zero (1:5).
        assert_eq!(
            open_device((c"/dev/null", 1, 9)).err(),
            Some(Error::NOT_RANDOM_DEVICE)
        );
        assert_eq!(
            open_device((c"/dev/zero", 1, 9)).err(),
            Some(Error::NOT_RANDOM_DEVICE)
        );
        // /dev/urandom checked against the wrong number.
        assert_eq!(
            open_device((c"/dev/urandom", 1, 8)).err(),
            Some(Error::NOT_RANDOM_DEVICE)
        );
        assert_eq!(
            open_device((c"/nonexistent/urandom", 1, 9))
                .err()
                .and_then(|e| e.raw_os_error()),
            Some(libc::ENOENT)
        );
    }

    /// Held by the tests that open the random devices, so that counting open descriptors
    /// of `/dev/urandom` sees only the test's own.
    static DEVICES: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Descriptors of this process open on `/dev/urandom`.
    fn urandom_descriptors() -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target == std::path::Path::new("/dev/urandom"))
            .count()
    }

    #[test]
    fn the_device_is_closed_after_every_seed() {
        let _only_us = DEVICES.lock().unwrap();
        let before = urandom_descriptors();
        for _ in 0..3 {
            let mut seed = [0u8; 36];
            fill_from_device(&mut seed).unwrap();
        }
        assert_eq!(urandom_descriptors(), before, "a descriptor was kept");
    }

    #[test]
    fn short_reads_are_completed_and_bad_counts_refused() {
        // Short reads: the loop asks again for the rest.
        let mut calls = 0;
        let mut dest = [0u8; 10];
        fill_exact(&mut dest, |chunk| {
            calls += 1;
            chunk[0] = calls;
            1
        })
        .unwrap();
        assert_eq!(dest, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // A count larger than asked for, or zero, is an error and not a success.
        assert_eq!(fill_exact(&mut [0u8; 4], |_| 32), Err(Error::BAD_LENGTH));
        assert_eq!(fill_exact(&mut [0u8; 4], |_| 0), Err(Error::BAD_LENGTH));
        // An error number is returned as such.
        let failed = fill_exact(&mut [0u8; 4], |_| {
            // SAFETY: sets this thread's errno, as a failing system call would.
            unsafe { *libc::__errno_location() = libc::EAGAIN };
            -1
        });
        assert_eq!(failed, Err(Error::from_errno(libc::EAGAIN)));
    }
}
