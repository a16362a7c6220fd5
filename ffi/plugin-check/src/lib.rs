//! The plugin's one function: fills `len` bytes at `buf` from the calling thread's fkrng
//! generator. Returns 0, or -1 if `buf` is null.

/// # Safety
/// `buf` is null or valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn plugin_fill(buf: *mut u8, len: usize) -> i32 {
    if buf.is_null() {
        return -1;
    }
    // SAFETY: the caller's contract.
    fkrng::fill(unsafe { std::slice::from_raw_parts_mut(buf, len) });
    0
}
