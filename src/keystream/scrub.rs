//! Zeroing the stack below a keystream computation: its dead frames, and on x86-64 Linux
//! and AArch64 Linux and Android the signal frames the kernel may have pushed below it.
//!
//! Every keystream computation runs in a callee that is never inlined ([`below`]), so its
//! frames, and those of every kernel or `chacha20` crate backend it calls, lie below the
//! caller's stack pointer; the caller keeps no key or state word of its own. Afterwards the
//! caller zeroes [`SCRUB_BYTES`] below its stack pointer, at least the deepest stack the
//! computation reaches plus the x86-64 red zone (measured by the unit test
//! `scrub_covers_the_deepest_keystream_frame`).
//!
//! A signal that interrupts the computation makes the kernel save the interrupted
//! registers, vector registers with key and state words among them, in a frame below the
//! interrupted stack pointer (and, on x86-64, its 128-byte red zone); the frame is up to
//! `getauxval(AT_MINSIGSTKSZ)` bytes long (3.3 KiB with AVX-512 state, 4.6 KiB on AArch64
//! without SVE state beyond the standard area) and is not erased when the handler returns
//! (Linux `arch/x86/kernel/signal.c` and `arch/arm64/kernel/signal.c`, `get_sigframe`).
//! The caller therefore writes canaries below the scrubbed area before the computation and
//! checks them afterwards; a changed canary means that a signal frame lies there, and then
//! one signal frame's size below the scrubbed area is zeroed too. Where the canaries go
//! follows each kernel's frame layout:
//!
//! - x86-64 Linux: a 512-byte band just below the scrubbed area. A frame that reaches below
//!   the scrubbed area crosses the band and overwrites part of it (its lowest bytes hold
//!   the handler's return address and the saved registers; the largest span of an x86
//!   signal frame that the kernel leaves unwritten is the 256 bytes of unused XSAVE area
//!   after the AVX state). Without a signal that costs one 512-byte write and one 512-byte
//!   compare per computation.
//! - AArch64 Linux and Android: one word every 256 bytes from just below the scrubbed area
//!   down to one signal frame's size below it (20 words for a 5120-byte frame). The frame
//!   keeps the registers at its bottom, about 4.4 KiB below the interrupted stack pointer,
//!   under an unwritten span of up to 3.5 KiB, so a band just below the scrubbed area could
//!   miss it; the spacing is below the length of the frame's written register spans
//!   (`signal_frames/aarch64.rs` gives the layout and the argument).
//!
//! A handler installed with `SA_ONSTACK` runs on the thread's alternate signal stack
//! (`sigaltstack(2)`) instead, and the kernel writes the frame at that stack's top, not
//! below the interrupted code. On x86-64 with glibc's rseq area (`signal_frames/rseq.rs`)
//! the area tells whether a signal came during the computation, and only then is the
//! alternate stack asked for and one frame's size at its top zeroed; elsewhere (described
//! next) before each computation one `sigaltstack` query asks for
//! the thread's alternate stack. If one is configured and the computation does not run on
//! it (the kernel does not report it in use, and the stack pointer lies outside it), canary
//! words are written every 256 bytes from 8 bytes below its 16-byte aligned top down to one
//! signal frame's size below it: bytes the kernel itself overwrites with a frame whenever
//! the thread takes such a signal, so no live data of a handler lies there. Every frame
//! holds 256 contiguous bytes of general registers, so it changes one of them; then, after
//! a second query confirms that the same stack is still configured and not in use, one
//! signal frame's size below its top is zeroed. If the computation runs on the alternate
//! stack, every write below its stack pointer (the canaries, the scrub and the wipe) stops
//! at the stack's base. A stack armed with `SS_AUTODISARM` is reported disabled while a
//! handler runs on it: there nothing is written at its top, and the writes below the stack
//! pointer are not clamped (docs/SECURITY.md).
//!
//! Before the zeroing, the vector and the caller-saved general registers are cleared (on
//! AArch64 all 32 SIMD registers whole, since only the low halves of v8-v15 are
//! callee-saved), so a signal that arrives during the zeroing saves no key material either.
//!
//! Elsewhere, and under valgrind (whose memcheck rejects accesses below the stack pointer),
//! the scrub zeroes a local array of [`SCRUB_BYTES`] in a frame of its own, kept by an
//! empty `asm!` block that takes its address on x86-64 and AArch64 (volatile stores on the
//! other architectures), and signal frames below the computation are not erased
//! (docs/SECURITY.md).

/// Bytes below the caller's stack pointer that are zeroed after a keystream computation:
/// at least the deepest stack the computation's frames reach on any path (fkrng's kernels,
/// the `chacha20` crate's backends), plus the 128-byte red zone and 64 bytes of signal-frame
/// alignment, as measured for the optimisation level this build has (`fkrng_opt_level`,
/// from build.rs; docs/SECURITY.md has the figures):
///
/// - the small-stack code (debug assertions, opt-level 0, or a level the build script could
///   not tell): 3584 bytes (2727 measured at opt-level 0, 520 to 607 at 1, `s` and `z`);
/// - the kernels and the crate at opt-level 2 or 3 without debug assertions: 2048 (at most
///   1719 measured);
/// - every other build (opt-level 1, `s` or `z` without debug assertions, where the
///   kernels and the crate keep more in their frames, and pinned builds): 4608 (at most
///   4247 measured, the crate at `z`).
pub(super) const SCRUB_BYTES: usize = if super::small_stack::IN_USE {
    SCRUB_BYTES_SMALL_STACK
} else if cfg!(all(
    any(fkrng_opt_level = "2", fkrng_opt_level = "3"),
    not(debug_assertions)
)) {
    SCRUB_BYTES_OPTIMISED
} else {
    SCRUB_BYTES_SIZE_OPTIMISED
};

/// [`SCRUB_BYTES`] of builds at opt-level 2 or 3 without debug assertions.
const SCRUB_BYTES_OPTIMISED: usize = 2048;

/// [`SCRUB_BYTES`] of builds that compute keystream with the small-stack code.
const SCRUB_BYTES_SMALL_STACK: usize = 3584;

/// [`SCRUB_BYTES`] of the other builds: opt-level 1, `s` and `z` without debug assertions,
/// and builds pinned to a keystream path.
const SCRUB_BYTES_SIZE_OPTIMISED: usize = 4608;

cfg_if::cfg_if! {
    if #[cfg(all(
        feature = "std",
        not(miri),
        any(
            all(target_arch = "x86_64", target_os = "linux"),
            all(target_arch = "aarch64", any(target_os = "linux", target_os = "android"))
        )
    ))] {
        mod signal_frames;
        /// Whether keystream computations on this thread learn of signals from the rseq
        /// area, without a `sigaltstack` query each (x86-64 with glibc's area).
        #[cfg(any(test, feature = "test-hooks"))]
        pub(crate) fn signals_watched() -> bool {
            #[cfg(target_arch = "x86_64")]
            return signal_frames::rseq::available();
            #[cfg(not(target_arch = "x86_64"))]
            return false;
        }
        /// Whether a thread's set-up spares its first computation the `sigaltstack` query
        /// (the rseq watch, on a kernel that clears `rseq_cs` at every signal).
        #[cfg(any(test, feature = "test-hooks"))]
        pub(crate) fn set_up_spares_the_query() -> bool {
            #[cfg(target_arch = "x86_64")]
            return signal_frames::rseq::available() && signal_frames::rseq::every_signal_clears();
            #[cfg(not(target_arch = "x86_64"))]
            return false;
        }
        /// Runs `compute` (which must call a function that is never inlined, holding every
        /// key-derived value in its frames), then clears the registers, zeroes the stack
        /// below the caller and any signal frame pushed below it during the computation.
        pub(super) use signal_frames::below;
        pub(crate) use signal_frames::off_alternate_stack;
    } else {
        /// Runs `compute` (which must call a function that is never inlined, holding every
        /// key-derived value in its frames) and zeroes the stack below the caller
        /// afterwards.
        #[inline(always)]
        pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
            let r = compute();
            scrub_stack();
            r
        }
        /// No alternate stack is asked for here: nothing to record.
        #[cfg(feature = "std")]
        #[inline(always)]
        pub(crate) fn off_alternate_stack() {}
        /// No signal frames are looked for here, so no rseq watch either.
        #[cfg(any(test, feature = "test-hooks"))]
        pub(crate) fn signals_watched() -> bool {
            false
        }
        /// No query to spare here.
        #[cfg(any(test, feature = "test-hooks"))]
        pub(crate) fn set_up_spares_the_query() -> bool {
            false
        }
    }
}

/// Overwrites [`SCRUB_BYTES`] bytes of the stack just below the caller's frame with zeros:
/// one local array in a frame that reuses the area the computation's frames used. The
/// zeroing is kept by an `asm!` block that takes the array's address and, as far as the
/// compiler knows, reads it, so no optimiser may drop the stores as dead. That block is used
/// on x86-64 and AArch64 (where this scrub serves valgrind runs and systems other than
/// Linux and Android); elsewhere (s390x, whose emulated residue tests run this path,
/// WebAssembly and the rest) and under Miri, which runs no inline assembly, volatile writes
/// of whole words keep the zeroing.
#[inline(never)]
fn scrub_stack() {
    let mut area = [0usize; SCRUB_BYTES / size_of::<usize>()];
    #[cfg(all(any(target_arch = "x86_64", target_arch = "aarch64"), not(miri)))]
    // SAFETY: the block is empty: it reads, writes and jumps nowhere; without `nomem` the
    // compiler must assume it reads the memory `area` points to, so the zeroes are stored.
    unsafe {
        core::arch::asm!("/* {0} */", in(reg) area.as_mut_ptr(), options(nostack, preserves_flags));
    }
    #[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
    for word in area.iter_mut() {
        // SAFETY: `word` is a valid, exclusive reference to an initialised `usize`.
        unsafe { core::ptr::write_volatile(word, 0) };
    }
}
