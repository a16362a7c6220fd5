//! The C ABI of fkrng (`include/fkrng.h`): random bytes and integers from the calling
//! thread's fast-key-erasure generator, for C, C++, Python (`ctypes`) and any other code in
//! the process, built as `libfkrng_ffi.a` and `libfkrng_ffi.so`.
//!
//! Besides the `fkrng_*` functions, the libraries define OpenBSD's `arc4random_buf`,
//! `arc4random` and `arc4random_uniform`, so that a program linked against this library
//! before the C library, or run with `LD_PRELOAD=libfkrng_ffi.so`, gets those calls served
//! by fkrng (one system call per thread seeding instead of glibc's per-call work).
//!
//! No call unwinds into C. `fkrng_fill` and `fkrng_reseed` report an OS failure as -1 with
//! `errno` set; the functions that return a value or nothing (`fkrng_u32`, `fkrng_u64`,
//! `arc4random*`) cannot report one, and abort the process with a one-line message on
//! stderr instead, as OpenBSD's do: they never return bytes from an unseeded key. Only
//! `ENOSYS` and `EPERM` from `getrandom(2)` (a kernel without it, a seccomp filter) send a
//! seed to `/dev/urandom`; any other error of the system call (`EINTR` is retried), a
//! failure of `/dev/urandom` or of the check that the pool is ready (`EAGAIN` where the
//! entropy count is low), and a failed `pthread_atfork` (`ENOMEM`) are reported, so check
//! `fkrng_fill`'s and `fkrng_reseed`'s results.
//!
//! A call that succeeds leaves `errno` as the caller had it. System calls made on the way
//! set it (the VMClock device probe at a process's first seeding fails with `ENOENT` on
//! most machines; the `/dev/urandom` fallback follows an `ENOSYS`), so every function puts
//! the caller's value back before it returns, and sets `errno` only when it reports a
//! failure.
//!
//! Linux and Android only: elsewhere the C library has its own `arc4random` family.

#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!("fkrng-ffi builds for Linux and Android only");

use core::ffi::{c_int, c_void};
use core::fmt::Write as _;

/// The calling thread's `errno` variable.
#[cfg(target_os = "linux")]
#[inline(always)]
fn errno_location() -> *mut c_int {
    // SAFETY: `__errno_location` has no preconditions; it returns this thread's `errno`.
    unsafe { libc::__errno_location() }
}

/// The calling thread's `errno` variable.
#[cfg(target_os = "android")]
#[inline(always)]
fn errno_location() -> *mut c_int {
    // SAFETY: `__errno` has no preconditions; it returns this thread's `errno`.
    unsafe { libc::__errno() }
}

/// Sets the calling thread's `errno`.
fn set_errno(code: c_int) {
    // SAFETY: the pointer is this thread's `errno`, valid for the thread's lifetime.
    unsafe { *errno_location() = code };
}

/// Runs `f` and then gives `errno` back the value it had before: what the system calls
/// inside `f` left there (a failed `open` of the VMClock device, say) must not reach a
/// caller whose call succeeded. A call that fails sets `errno` after this returns.
#[inline(always)]
fn keeping_errno<R>(f: impl FnOnce() -> R) -> R {
    let errno = errno_location();
    // SAFETY: `errno` is this thread's `errno`, valid for the thread's lifetime; `f` runs
    // on this thread (a forked child continues on the same thread, at the same address).
    let saved = unsafe { *errno };
    let r = f();
    // SAFETY: as above.
    unsafe { *errno = saved };
    r
}

/// The `errno` value for an fkrng error: its OS error number, `EIO` for errors without one
/// (a seed of zero bytes, a bad length, a `/dev/urandom` that is not the kernel's device).
fn errno_of(e: &fkrng::Error) -> c_int {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// A fixed buffer for the abort message: formatting into it allocates nothing and takes no
/// lock, so it works in a signal handler and when the heap is in a bad state.
struct Message {
    bytes: [u8; 256],
    len: usize,
}

impl core::fmt::Write for Message {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.bytes.len() - self.len;
        let n = s.len().min(room);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Writes `fkrng: FUNCTION: ERROR` and a newline to stderr and aborts the process.
#[cold]
#[inline(never)]
fn abort_with(function: &str, what: &dyn core::fmt::Display) -> ! {
    let mut m = Message {
        bytes: [0; 256],
        len: 0,
    };
    let _ = write!(m, "fkrng: {function}: {what}");
    m.len = m.len.min(m.bytes.len() - 1);
    m.bytes[m.len] = b'\n';
    m.len += 1;
    // The raw system call, not the C library's `write`: that is a cancellation point, where a
    // pending `pthread_cancel` would end the thread inside this call instead of the abort.
    // SAFETY: `m.bytes[..m.len]` is initialised and readable; `write` and `abort` have no
    // other preconditions, and a short or failed write changes nothing here.
    unsafe {
        libc::syscall(
            libc::SYS_write,
            libc::STDERR_FILENO,
            m.bytes.as_ptr(),
            m.len,
        );
        libc::abort()
    }
}

/// Runs `f` with the caller's `errno` kept ([`keeping_errno`]); a panic inside it (none is
/// expected) aborts with a message instead of unwinding into the C caller. Every exported
/// function calls into fkrng through this.
#[inline(always)]
fn no_unwind<R>(function: &str, f: impl FnOnce() -> R) -> R {
    keeping_errno(
        || match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(r) => r,
            Err(_) => abort_with(function, &"internal panic"),
        },
    )
}

/// Fills `len` bytes at `buf` from the calling thread's generator (`fkrng::try_fill`).
///
/// Returns 0 on success, with `errno` as the caller left it. Returns -1 with `errno` set
/// when `buf` is NULL while `len` is not 0 (`EINVAL`) or `len` exceeds `PTRDIFF_MAX`
/// (`EINVAL`), writing nothing to `buf`, or when the OS random source fails at a
/// (re)seeding: the OS error number, or `EIO` for a failure without one, with `len` zero
/// bytes in `buf` (never output). `len` 0 returns 0 and touches nothing.
///
/// Safe in signal handlers and thread-local destructors (those reads use a one-off
/// generator keyed from the OS) and in forked children (they reseed first), once the
/// calling thread has made one call outside a signal handler: a thread's first call sets
/// up its state, which is not async-signal-safe (glibc allocates to register the
/// thread-exit destructor).
///
/// # Safety
/// `buf` is NULL or valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fkrng_fill(buf: *mut c_void, len: usize) -> c_int {
    if len == 0 {
        return 0;
    }
    if buf.is_null() || len > isize::MAX as usize {
        set_errno(libc::EINVAL);
        return -1;
    }
    // SAFETY: the caller guarantees `buf` is valid for writes of `len` bytes (and `len` is at
    // most `isize::MAX`). The memory belongs to C code, which Rust cannot see as uninitialised;
    // `try_fill` only writes to it: keystream on success, zeros over all `len` bytes (never
    // the caller's old bytes, never output) on error.
    let dest = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    match no_unwind("fkrng_fill", || fkrng::try_fill(dest)) {
        Ok(()) => 0,
        Err(e) => {
            set_errno(errno_of(&e));
            -1
        }
    }
}

/// A random `uint32_t` from 4 bytes (little-endian) of the calling thread's generator.
///
/// Aborts the process with a one-line message on stderr if the OS random source fails at a
/// (re)seeding; never returns a value from an unseeded key.
#[unsafe(no_mangle)]
pub extern "C" fn fkrng_u32() -> u32 {
    match no_unwind("fkrng_u32", fkrng::try_u32) {
        Ok(v) => v,
        Err(e) => abort_with("fkrng_u32", &e),
    }
}

/// A random `uint64_t` from 8 bytes (little-endian) of the calling thread's generator.
///
/// Aborts as [`fkrng_u32`] does.
#[unsafe(no_mangle)]
pub extern "C" fn fkrng_u64() -> u64 {
    match no_unwind("fkrng_u64", fkrng::try_u64) {
        Ok(v) => v,
        Err(e) => abort_with("fkrng_u64", &e),
    }
}

/// Reseeds the calling thread's generator now with 32 fresh bytes from the OS
/// (`fkrng::reseed`).
///
/// Returns 0 with `errno` unchanged, or -1 with `errno` set to the OS error number (`EIO`
/// without one); on error the thread keeps its current key.
#[unsafe(no_mangle)]
pub extern "C" fn fkrng_reseed() -> c_int {
    match no_unwind("fkrng_reseed", fkrng::reseed) {
        Ok(()) => 0,
        Err(e) => {
            set_errno(errno_of(&e));
            -1
        }
    }
}

/// Makes every thread of the process reseed from the OS before its next output
/// (`fkrng::reseed_all`): call it after restoring a VM snapshot or a checkpoint.
///
/// Always returns 0: the reseeds happen at each thread's next read, which reports (or, for
/// the functions without an error return, aborts on) an OS failure itself.
#[unsafe(no_mangle)]
pub extern "C" fn fkrng_reseed_all() -> c_int {
    no_unwind("fkrng_reseed_all", fkrng::reseed_all);
    0
}

/// OpenBSD's `arc4random_buf`: fills `len` bytes at `buf` from the calling thread's
/// generator. `len` 0 does nothing.
///
/// Aborts the process with a one-line message on stderr if the OS random source fails at a
/// (re)seeding, or if `buf` is NULL while `len` is not 0 (the function has no error return).
///
/// # Safety
/// `buf` is valid for writes of `len` bytes, or `len` is 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn arc4random_buf(buf: *mut c_void, len: usize) {
    if len == 0 {
        return;
    }
    if buf.is_null() || len > isize::MAX as usize {
        abort_with("arc4random_buf", &"NULL buffer or length above PTRDIFF_MAX");
    }
    // SAFETY: as in `fkrng_fill`: the caller guarantees `buf` is valid for writes of `len`
    // bytes, C memory that `try_fill` only writes to.
    let dest = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    if let Err(e) = no_unwind("arc4random_buf", || fkrng::try_fill(dest)) {
        abort_with("arc4random_buf", &e);
    }
}

/// OpenBSD's `arc4random`: a random `uint32_t`, as [`fkrng_u32`] (and aborting as it
/// does).
#[unsafe(no_mangle)]
pub extern "C" fn arc4random() -> u32 {
    match no_unwind("arc4random", fkrng::try_u32) {
        Ok(v) => v,
        Err(e) => abort_with("arc4random", &e),
    }
}

/// OpenBSD's `arc4random_uniform`: a uniformly distributed integer in `[0, upper_bound)`,
/// without modulo bias; 0 when `upper_bound` is 0 or 1.
///
/// Draws 32-bit values and rejects those below `2^32 mod upper_bound`, so that the values
/// kept cover a whole multiple of `upper_bound`; fewer than half of the draws are rejected
/// for any bound, so the expected number of draws is below 2. Aborts as [`arc4random`]
/// does.
#[unsafe(no_mangle)]
pub extern "C" fn arc4random_uniform(upper_bound: u32) -> u32 {
    uniform(upper_bound, || arc4random())
}

/// `arc4random_uniform` over any source of 32-bit draws.
#[inline]
fn uniform(upper_bound: u32, mut draw: impl FnMut() -> u32) -> u32 {
    if upper_bound < 2 {
        return 0;
    }
    // 2^32 mod upper_bound, computed in 32 bits: (2^32 - upper_bound) mod upper_bound.
    let min = upper_bound.wrapping_neg() % upper_bound;
    loop {
        let r = draw();
        if r >= min {
            return r % upper_bound;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_rejects_exactly_the_biased_low_values() {
        // upper 3: 2^32 mod 3 = 1, so only 0 is rejected.
        let mut draws = [0u32, 0, 1].into_iter();
        assert_eq!(uniform(3, || draws.next().unwrap()), 1);
        assert_eq!(
            draws.next(),
            None,
            "two rejections, then the third draw kept"
        );
        // upper 2^31 + 1: 2^32 mod it = 2^31 - 1; the first draw kept is 2^31 - 1.
        let upper = (1u32 << 31) + 1;
        let mut draws = [5u32, (1 << 31) - 2, (1 << 31) - 1].into_iter();
        assert_eq!(uniform(upper, || draws.next().unwrap()), (1 << 31) - 1);
        // A power of two rejects nothing.
        let mut draws = [0u32].into_iter();
        assert_eq!(uniform(1 << 20, || draws.next().unwrap()), 0);
        // 0 and 1 draw nothing.
        assert_eq!(uniform(0, || unreachable!()), 0);
        assert_eq!(uniform(1, || unreachable!()), 0);
        assert_eq!(uniform(u32::MAX, || u32::MAX - 1), u32::MAX - 1);
    }

    #[test]
    fn the_abort_message_is_cut_to_one_line_of_the_buffer() {
        let mut m = Message {
            bytes: [0; 256],
            len: 0,
        };
        let long = "x".repeat(300);
        write!(m, "fkrng: f: {long}").unwrap();
        assert_eq!(m.len, 256);
        assert!(m.bytes.starts_with(b"fkrng: f: xxx"));
    }
}
