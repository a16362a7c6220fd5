//! Erasing what a keystream computation of the `chacha20` crate or the small-stack code
//! leaves on the stack, on rows without an assembly kernel (targets other than x86-64 and
//! AArch64 with NEON, and Miri; the kernels write no stack and clear their own registers).
//! Contract: once the computation [`below`] runs returns (its key-derived values held in
//! never-inlined callees' frames below the caller), [`SCRUB_BYTES`] below the caller are
//! zeroed, in a frame of its own; nothing else is touched or registered with the OS.
//! Registers, and what a signal frame saved meanwhile, are not reached (docs/SECURITY.md).

/// Bytes of stack zeroed below the caller: at least the deepest a computation of this build
/// reaches on any path (`scrub_covers_the_deepest_keystream_frame`; docs/SECURITY.md).
pub(super) const SCRUB_BYTES: usize = if super::small_stack::IN_USE {
    3584
} else if cfg!(all(
    any(fkrng_opt_level = "2", fkrng_opt_level = "3"),
    not(debug_assertions)
)) {
    2048
} else {
    6144
};

/// Runs `compute`, then zeroes the stack below the caller.
#[inline(always)]
pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
    let r = compute();
    scrub_stack();
    r
}

/// Zeroes [`SCRUB_BYTES`] of stack just below the caller: one local array in a frame over
/// the area the computation's frames used, written with volatile stores, which the compiler
/// keeps although the array is never read.
#[inline(never)]
fn scrub_stack() {
    let mut area = [0usize; SCRUB_BYTES / size_of::<usize>()];
    for word in area.iter_mut() {
        // SAFETY: `word` is a valid, exclusive reference to an initialised `usize`.
        unsafe { core::ptr::write_volatile(word, 0) };
    }
}
