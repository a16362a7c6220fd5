//! The kernel's random source: the raw `getrandom` system call, or where it is missing or
//! refused (`ENOSYS`, `EPERM`) `/dev/urandom`, read only once the pool is known ready, after
//! `fstat` shows the device 1:9, through a descriptor opened for that seed alone.

use super::nocancel::{Descriptor, errno};
use crate::error::Error;
use core::ffi::CStr;
use core::sync::atomic::{AtomicBool, Ordering};

/// The devices and their numbers; `/dev/random` is polled once for the pool's readiness.
const URANDOM: (&CStr, u32, u32) = (c"/dev/urandom", 1, 9);
const RANDOM: (&CStr, u32, u32) = (c"/dev/random", 1, 8);
/// Set once the pool was seen initialised: it stays so.
static POOL_READY: AtomicBool = AtomicBool::new(false);
/// Set once the system call has filled a request: the pool is ready and the call allowed.
pub(super) static SYSCALL_ANSWERED: AtomicBool = AtomicBool::new(false);

/// `first(dest)`, then the checked device if it failed with `ENOSYS` or `EPERM`.
pub(super) fn or_device(
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

/// `getrandom(dest, 0)` until `dest` is full (see [`fill_exact`]).
pub(super) fn fill_by_syscall(dest: &mut [u8]) -> Result<(), Error> {
    let filled = fill_exact(dest, |chunk| {
        let (ptr, len) = (chunk.as_mut_ptr(), chunk.len());
        // SAFETY: `ptr` is valid for writes of `len` bytes; the kernel writes at most that
        // many and returns their number or -1.
        unsafe { libc::syscall(libc::SYS_getrandom, ptr, len, 0 as libc::c_uint) as isize }
    });
    if filled.is_ok() {
        SYSCALL_ANSWERED.store(true, Ordering::Relaxed);
    }
    filled
}

/// Opens `path` read-only and checks it is the character device `major:minor`; else
/// `open`'s or `fstat`'s `errno` or [`Error::NOT_RANDOM_DEVICE`], the descriptor closed.
fn open_device((path, major, minor): (&CStr, u32, u32)) -> Result<Descriptor, Error> {
    let fd = Descriptor::open(path).map_err(Error::from_errno)?;
    // SAFETY: `libc::stat` is plain data, valid when all-zero.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: `fd` is an open descriptor and `st` a valid, writable `stat`.
    if unsafe { libc::fstat(fd.raw(), &mut st) } != 0 {
        return Err(Error::from_errno(errno()));
    }
    let is_char = st.st_mode & libc::S_IFMT == libc::S_IFCHR;
    // `major` and `minor` return `u32` on glibc and musl, `c_int` on Android.
    let major_ok = i64::from(libc::major(st.st_rdev)) == i64::from(major);
    let minor_ok = i64::from(libc::minor(st.st_rdev)) == i64::from(minor);
    let device = is_char && major_ok && minor_ok;
    device.then_some(fd).ok_or(Error::NOT_RANDOM_DEVICE)
}

/// Fills `dest` from `/dev/urandom`, once the pool is known ready.
#[cold]
fn fill_from_device(dest: &mut [u8]) -> Result<(), Error> {
    if !POOL_READY.load(Ordering::Relaxed) {
        wait_for_pool()?;
        POOL_READY.store(true, Ordering::Relaxed);
    }
    let fd = open_device(URANDOM)?;
    fill_exact(dest, |chunk| fd.read(chunk))
}

/// Waits until `/dev/random` polls readable; if absent or refused, asks [`pool_known_ready`].
fn wait_for_pool() -> Result<(), Error> {
    let fd = match open_device(RANDOM) {
        Ok(fd) => fd,
        Err(e) => match e.raw_os_error() {
            Some(libc::ENOENT | libc::EACCES | libc::EPERM) => return pool_known_ready(),
            _ => return Err(e),
        },
    };
    retried(libc::EAGAIN, || fd.wait_readable()).map(drop)
}

/// The entropy count (bits) from which every kernel has initialised its pool.
const READY_BITS: libc::c_int = 256;

/// `Ok` when the entropy count (through the checked `/dev/urandom`) reaches [`READY_BITS`],
/// else `EAGAIN`: a read of `/dev/urandom` never waits for the pool.
fn pool_known_ready() -> Result<(), Error> {
    let fd = open_device(URANDOM)?;
    let mut bits: libc::c_int = 0;
    // `RNDGETENTCNT`, `_IOR('R', 0x00, int)`.
    let request = libc::_IOR::<libc::c_int>(b'R'.into(), 0x00);
    // SAFETY: `fd` is open; `RNDGETENTCNT` writes one `int` to the pointer given.
    let ioctl = || unsafe { libc::ioctl(fd.raw(), request as _, &mut bits) };
    retried(libc::EINTR, ioctl)?;
    let ready = bits >= READY_BITS;
    ready.then_some(()).ok_or(Error::from_errno(libc::EAGAIN))
}

/// `call`'s non-negative result, calling again on `EINTR` or `also`; else the `errno`.
fn retried(also: i32, mut call: impl FnMut() -> libc::c_int) -> Result<libc::c_int, Error> {
    loop {
        match call() {
            result if result >= 0 => return Ok(result),
            _ if [libc::EINTR, also].contains(&errno()) => {}
            _ => return Err(Error::from_errno(errno())),
        }
    }
}

/// Calls `read_some` (bytes written at the start of its argument, or -1 and `errno`) until
/// `dest` is full. Errors: the `errno` (`EINTR` retried), or [`Error::BAD_LENGTH`] for 0 or
/// more bytes than asked (a broken emulator, a tracer's injected result).
pub(crate) fn fill_exact(
    mut dest: &mut [u8],
    mut read_some: impl FnMut(&mut [u8]) -> isize,
) -> Result<(), Error> {
    while !dest.is_empty() {
        match usize::try_from(read_some(dest)) {
            Ok(n) if n > 0 && n <= dest.len() => dest = &mut dest[n..],
            Ok(_) => return Err(Error::BAD_LENGTH),
            Err(_) if errno() == libc::EINTR => {}
            Err(_) => return Err(Error::from_errno(errno())),
        }
    }
    Ok(())
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
