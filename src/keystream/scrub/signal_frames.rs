//! The scrub where signal frames below a keystream computation are found and zeroed (x86-64
//! Linux; AArch64 Linux and Android): the parts both architectures share, the signal frame
//! size, the valgrind switch and the zeroing of the frames found. How each architecture
//! clears its registers and finds a frame is in its own module, since its kernel lays the
//! frame out differently (see the parent module).

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
use aarch64 as arch;
#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
use x86_64 as arch;

/// See [`super::below`]. Under valgrind, the local-array scrub of [`super::scrub_stack`];
/// otherwise the architecture's scrub with signal frame detection.
#[inline(always)]
pub(in crate::keystream) fn below<R>(compute: impl FnOnce() -> R) -> R {
    if under_valgrind() {
        let r = compute();
        super::scrub_stack();
        return r;
    }
    arch::below(compute)
}

/// The canary: an arbitrary odd pattern, neither zero nor a register's usual content, nor
/// a word a signal frame's bookkeeping fields would hold.
const CANARY: u64 = 0x5c3a_91e7_0f6d_24b9;

/// `AT_MINSIGSTKSZ` from `<linux/auxvec.h>`: the kernel's signal frame size, as the largest
/// frame this machine's register state can need (Linux 4.18 and later on AArch64, 5.14 and
/// later on x86).
const AT_MINSIGSTKSZ: libc::c_ulong = 51;

/// The signal frame size, read from the auxiliary vector once (0: not read yet).
static SIGNAL_FRAME: AtomicUsize = AtomicUsize::new(0);

/// Whether the process runs under valgrind: 0 not known yet, 1 no, 2 yes.
static VALGRIND: AtomicU8 = AtomicU8::new(0);

/// Whether the process runs under valgrind, whose memcheck rejects every access below
/// the stack pointer (and which delivers signals itself): there the scrub is the local
/// array of [`super::scrub_stack`], in a frame of its own.
#[inline(always)]
fn under_valgrind() -> bool {
    match VALGRIND.load(Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = arch::ask_valgrind();
            VALGRIND.store(if yes { 2 } else { 1 }, Relaxed);
            yes
        }
    }
}

/// The signal frame size this kernel uses, in bytes (`getauxval(AT_MINSIGSTKSZ)`, or the
/// architecture's [`arch::FALLBACK_SIGNAL_FRAME`] where it reports none, as qemu-user does).
fn signal_frame() -> usize {
    let mut size = SIGNAL_FRAME.load(Relaxed);
    if size == 0 {
        // SAFETY: reads the auxiliary vector; async-signal-safe (no locks, no memory).
        let reported = unsafe { libc::getauxval(AT_MINSIGSTKSZ) } as usize;
        size = if reported == 0 {
            arch::FALLBACK_SIGNAL_FRAME
        } else {
            reported
        };
        SIGNAL_FRAME.store(size, Relaxed);
    }
    size
}

/// Zeroes the `depth` bytes below `top`, the lowest address of the area the scrub zeroed
/// (`SCRUB_BYTES` below the stack pointer of the frame that ran the computation): where a
/// signal frame pushed during the computation lies, since the computation's deepest stack
/// pointer (plus the x86-64 red zone and alignment) stays within the scrubbed area. On an
/// alternate signal stack the zeroing stops at its base.
#[cold]
#[inline(never)]
fn wipe_signal_frames(top: usize, depth: usize) {
    #[cfg(any(test, feature = "test-hooks"))]
    crate::test_hooks::counters::count_signal_frame_wipe();
    let mut bottom = top - depth;
    // SAFETY: `current` is a valid out-pointer; a null `ss` only queries.
    unsafe {
        let mut current: libc::stack_t = core::mem::zeroed();
        if libc::sigaltstack(core::ptr::null(), &mut current) == 0
            && current.ss_flags & libc::SS_ONSTACK != 0
        {
            bottom = bottom.max(current.ss_sp as usize);
        }
    }
    // Whole words from the first one at or above `bottom`.
    let bottom = bottom.next_multiple_of(8);
    if bottom < top {
        // SAFETY: `bottom..top` lies below this function's own frame (which lies within the
        // scrubbed area above `top`): the canaries, and the stack a signal frame that reached
        // them was pushed into (not part of any Rust object); on an alternate signal stack,
        // no lower than its base.
        unsafe { arch::zero_stack(bottom, top) };
    }
}
