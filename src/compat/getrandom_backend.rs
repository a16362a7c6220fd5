//! The `getrandom_backend` feature: `__getrandom_v03_custom`, the one function `getrandom`
//! 0.3 and 0.4 call in a binary built with `--cfg getrandom_backend="custom"`, served by
//! [`crate::try_fill`] (docs/DESIGN.md, "The getrandom backend and the C ABI"). fkrng's own
//! seeds never go through the `getrandom` crate, so nothing recurses.

#[cfg(not(any(target_os = "linux", target_os = "android")))]
compile_error!(
    "fkrng's `getrandom_backend` feature needs fkrng's own OS random source, which exists on \
     Linux and Android only; elsewhere fkrng seeds through the `getrandom` crate, which would \
     call back into fkrng"
);

#[cfg(all(miri, getrandom_backend = "custom"))]
compile_error!(
    "fkrng's `getrandom_backend` feature cannot serve --cfg getrandom_backend=\"custom\" under \
     Miri, where fkrng itself seeds through the `getrandom` crate: run Miri without that cfg"
);

/// OS error number `n` becomes `Error::new_custom(n)` (`getrandom` has no public constructor
/// for OS errors); errors without a number become `Error::UNEXPECTED`.
fn to_getrandom_error(e: crate::Error) -> getrandom::Error {
    match e.raw_os_error().and_then(|n| u16::try_from(n).ok()) {
        Some(n) => getrandom::Error::new_custom(n),
        None => getrandom::Error::UNEXPECTED,
    }
}

/// Fills `len` maybe-uninitialised bytes at `dest` from this thread's generator (zeros on error).
///
/// # Safety
/// `dest` is valid for writes of `len` bytes, or `len` is 0.
pub(crate) unsafe fn fill_raw(dest: *mut u8, len: usize) -> Result<(), getrandom::Error> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: the caller guarantees `dest` is valid for writes of `len` bytes; zeroing them
    // first makes them initialised, so the slice is sound even for uninitialised memory.
    let buf = unsafe {
        core::ptr::write_bytes(dest, 0, len);
        core::slice::from_raw_parts_mut(dest, len)
    };
    crate::try_fill(buf).map_err(to_getrandom_error)
}

/// Set by the first call of [`__getrandom_v03_custom`]: `getrandom` reached fkrng.
static SERVED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether this binary's `getrandom` 0.4 calls (and its 0.3 calls, which follow the same
/// `--cfg getrandom_backend="custom"`) are served by fkrng: makes one 1-byte
/// `getrandom::fill` and reports whether fkrng's backend answered it. `false` in a binary
/// built without the cfg (for example a `RUSTFLAGS` that replaces the one setting it): its
/// `getrandom` then asks the OS itself, one system call per call. Never fails or panics; a
/// failing fill still reports who was asked. `getrandom` 0.2 callers (rand 0.8's `OsRng`,
/// ring) never reach fkrng, whatever this returns.
pub fn getrandom_backend_serves() -> bool {
    let _ = getrandom::fill(&mut [0u8; 1]);
    SERVED.load(core::sync::atomic::Ordering::Relaxed)
}

/// The `getrandom` crate's custom backend. Not in the unit-test build, whose binary also
/// links the library: the symbol would be defined twice.
///
/// # Safety
/// As [`fill_raw`]: `getrandom` passes a buffer valid for writes of `len` bytes.
#[cfg(not(test))]
#[unsafe(no_mangle)]
unsafe extern "Rust" fn __getrandom_v03_custom(
    dest: *mut u8,
    len: usize,
) -> Result<(), getrandom::Error> {
    SERVED.store(true, core::sync::atomic::Ordering::Relaxed);
    // SAFETY: forwarded from the caller's guarantee.
    unsafe { fill_raw(dest, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit-test binary has no `__getrandom_v03_custom` and no cfg: `getrandom` asks
    /// the OS, and the query says so.
    #[test]
    fn the_query_reports_a_build_without_the_backend() {
        assert!(!getrandom_backend_serves());
    }

    #[test]
    fn fills_the_whole_buffer_and_accepts_empty_requests() {
        let mut a = [0u8; 48];
        let mut b = [0u8; 48];
        // SAFETY: both arrays are valid for writes of 48 bytes.
        unsafe {
            fill_raw(a.as_mut_ptr(), a.len()).unwrap();
            fill_raw(b.as_mut_ptr(), b.len()).unwrap();
        }
        assert_ne!(a, [0u8; 48]);
        assert_ne!(a, b);
        // The last bytes are written too, not only a prefix.
        assert_ne!(a[32..], [0u8; 16]);
        // SAFETY: a zero-length request may pass a dangling pointer; nothing is written.
        unsafe { fill_raw(core::ptr::NonNull::dangling().as_ptr(), 0).unwrap() };
    }

    #[test]
    fn os_errors_keep_their_number() {
        let e = to_getrandom_error(crate::Error::from_errno(libc::EPERM));
        assert_eq!(e, getrandom::Error::new_custom(libc::EPERM as u16));
        assert_eq!(
            to_getrandom_error(crate::Error::ALL_ZERO),
            getrandom::Error::UNEXPECTED
        );
    }
}
