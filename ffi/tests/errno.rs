//! Calls that succeed leave `errno` alone. One test in this file, so that its first
//! `fkrng_fill` is the first call of the process: the one that seeds the thread and probes
//! for the VMClock device (whose `open` fails with `ENOENT` where there is none).
//! ffi/tests/c/errno_test.c checks the same from C, and under `ENOSYS` for `getrandom`
//! (scripts/ffi.sh).

use fkrng_ffi::{fkrng_fill, fkrng_reseed, fkrng_reseed_all, fkrng_u64};

/// Above any `errno` value the kernel or the C library sets.
const SENTINEL: i32 = 7919;

fn set_errno(v: i32) {
    // SAFETY: this thread's `errno`, valid for the thread's lifetime.
    unsafe { *libc::__errno_location() = v };
}

fn errno() -> i32 {
    // SAFETY: as above.
    unsafe { *libc::__errno_location() }
}

/// Sets `errno` to the sentinel, makes the call and returns what it returned and what
/// `errno` held afterwards.
fn with_sentinel<R>(call: impl FnOnce() -> R) -> (R, i32) {
    set_errno(SENTINEL);
    let r = call();
    (r, errno())
}

#[test]
fn successful_calls_leave_errno_unchanged() {
    let mut buf = [0u8; 32];
    // SAFETY (each fill): `buf` is valid for writes of 32 bytes.
    let first = with_sentinel(|| unsafe { fkrng_fill(buf.as_mut_ptr().cast(), 32) });
    assert_eq!(first, (0, SENTINEL), "the process's first fkrng_fill");
    assert_ne!(buf, [0u8; 32]);

    assert_eq!(
        with_sentinel(|| fkrng_reseed()),
        (0, SENTINEL),
        "fkrng_reseed"
    );
    let after_reseed = with_sentinel(|| unsafe { fkrng_fill(buf.as_mut_ptr().cast(), 32) });
    assert_eq!(after_reseed, (0, SENTINEL), "fkrng_fill after fkrng_reseed");

    assert_eq!(
        with_sentinel(|| fkrng_reseed_all()),
        (0, SENTINEL),
        "fkrng_reseed_all"
    );
    let after_all = with_sentinel(|| unsafe { fkrng_fill(buf.as_mut_ptr().cast(), 32) });
    assert_eq!(
        after_all,
        (0, SENTINEL),
        "fkrng_fill after fkrng_reseed_all"
    );
    assert_eq!(with_sentinel(|| fkrng_u64()).1, SENTINEL, "fkrng_u64");

    // A failure still sets errno.
    let refused = with_sentinel(|| unsafe { fkrng_fill(core::ptr::null_mut(), 16) });
    assert_eq!(refused, (-1, libc::EINVAL), "fkrng_fill(NULL, 16)");
}
