//! The AArch64 Linux and Android scrub: all 32 SIMD registers and the caller-saved general
//! registers cleared, the stack below the computation zeroed, and a signal frame pushed
//! below the zeroed area during the computation found by sparse canary words and zeroed
//! too.
//!
//! AArch64 has no red zone. Its signal frame (Linux `arch/arm64/kernel/signal.c`,
//! `get_sigframe` and `setup_sigframe_layout`; qemu-user's `linux-user/aarch64/signal.c`
//! follows it) starts 16-byte aligned at `b` and ends just below the interrupted stack
//! pointer. Offsets from `b`, without `SA_SIGINFO` (the `siginfo` is written only with it):
//!
//! | Offset | Written | Content |
//! | --- | --- | --- |
//! | 0..128 | with `SA_SIGINFO` only | `siginfo` |
//! | 128..176 | yes | `uc_flags`, `uc_link`, `uc_stack`, the 8-byte signal mask |
//! | 176..304 | no | the rest of the 128-byte `sigset_t`, alignment |
//! | 304..584 | yes | `fault_address`, `x0`-`x30`, `sp`, `pc`, `pstate`: key words |
//! | 584..592 | no | alignment of `__reserved` |
//! | 592..1120 | yes | the FPSIMD record: `fpsr`, `fpcr`, `v0`-`v31`: key words |
//! | 1120.. | yes, as long as the records are | SVE record (`z0`-`z31`, whose low 128 bits are `v0`-`v31`), others, the end marker |
//! | then up to 4688 | no | the rest of the 4096-byte `__reserved` area |
//! | 4688..4704 | yes | the frame record (`x29`, `x30`) |
//!
//! Measured under qemu-aarch64 7.2 (its default `max` CPU, with SVE at 512 bits) by painting the
//! stack and raising a signal: written 280 bytes at `b + 304`, then 2776 bytes (FPSIMD and
//! SVE records) from `b + 592`, then nothing up to the frame record; 4.6 KiB from the
//! bottom of the frame to the interrupted stack pointer; `AT_MINSIGSTKSZ` not reported.
//!
//! So the key-bearing part lies at the bottom of the frame, about 4.4 KiB below the
//! interrupted stack pointer, far below the scrubbed area, while the frame's top, within
//! the scrubbed area, holds no key word; a contiguous band just below the scrubbed area can
//! lie wholly in the unwritten span. Instead, canary words are written every [`SPACING`]
//! bytes from just below the scrubbed area (at `T - 8`, `T` its lowest address) down to
//! one signal frame's size (`getauxval(AT_MINSIGSTKSZ)`) below it, and checked after the
//! computation. A frame with a key-bearing byte below `T` has `b + 304 < T`, and since
//! `T - b` is a multiple of 16, `T - 8` lies at `b + 312` or above. Then one of the canaries
//! falls on written bytes: `T - 8` itself when it lies in the registers or the FPSIMD
//! record; the one 256 bytes lower (in the registers) when `T - 8` lies in the 8-byte hole
//! at `b + 584`; and when `T - 8` lies above the FPSIMD record, the FPSIMD record's
//! 528 written bytes hold one of the canaries spaced 256 bytes apart (the frame's bottom
//! lies no lower than one signal frame's size below `T`, since the computation's deepest
//! stack pointer stays within the scrubbed area). A changed canary then makes the whole
//! signal frame's size below the scrubbed area be zeroed.

use super::super::SCRUB_BYTES;
use super::{ALT_SPACING, CANARY, Stacks, signal_frame, wipe_signal_frames};

/// Bytes between two canary words: at most the 280 written bytes of the general registers
/// less 8 (so that one canary falls in them whenever the word above lies in the hole after
/// them) and under the 528 bytes of the FPSIMD record.
const SPACING: usize = 256;

/// Signal frame size where the kernel does not report one (kernels before 4.18, and
/// qemu-user): `MINSIGSTKSZ` of `<asm/signal.h>`, above the 4704 bytes of a frame without
/// SVE state beyond the standard area.
pub(super) const FALLBACK_SIGNAL_FRAME: usize = 5120;

/// [`super::below`] outside valgrind: `compute`, then the registers cleared, the stack
/// below zeroed and a signal frame found below it zeroed too, and one found at the top of
/// the thread's free alternate signal stack. On an alternate signal stack every write
/// below the stack pointer stops at its base.
#[inline(always)]
pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
    let here: usize;
    // SAFETY: reads the stack pointer.
    unsafe {
        core::arch::asm!("mov {}, sp", out(reg) here, options(nomem, nostack, preserves_flags))
    };
    let stacks = Stacks::now(here);
    let floor = stacks.floor;
    // Canary words at T - 8, T - 8 - SPACING, ..., no lower than one frame's size below T
    // and, on an alternate signal stack, no lower than its base.
    let mut canaries = (signal_frame() / SPACING).max(1);
    // Bytes zeroed below the stack pointer: SCRUB_BYTES, or down to the floor in whole
    // 64-byte turns.
    let mut scrub = SCRUB_BYTES;
    if floor != 0 {
        let room = here.saturating_sub(floor);
        canaries = match room.checked_sub(SCRUB_BYTES + 8) {
            Some(left) => canaries.min(left / SPACING + 1),
            None => 0,
        };
        scrub = scrub.min(room & !63);
    }
    // SAFETY: stores `canaries` words, every SPACING bytes from SCRUB_BYTES + 8 below the
    // stack pointer down, none below `floor`: stack below this frame that a signal frame
    // pushed during the computation could occupy too (the read paths' stack use, measured
    // with this included, is in docs/SECURITY.md), not part of any Rust object (AArch64
    // has no red zone, and the compiler keeps nothing below the stack pointer).
    unsafe {
        core::arch::asm!(
            "cbz {n}, 3f",
            "mov {at}, sp",
            "sub {at}, {at}, #{first}",
            "2:",
            "str {canary}, [{at}], #-{spacing}",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "3:",
            first = const SCRUB_BYTES + 8,
            spacing = const SPACING,
            canary = in(reg) CANARY,
            at = out(reg) _,
            n = inout(reg) canaries => _,
        );
    }
    let alt = stacks.arm();
    let r = compute();
    let sp: usize;
    let changed: u64;
    // SAFETY: clears all 32 SIMD registers whole and the caller-saved general registers
    // x1-x17 (x18 is the platform register, left alone), all declared as outputs; then
    // zeroes the `scrub` bytes below the stack pointer (SCRUB_BYTES, where the
    // computation's frames were, or fewer down to the floor) and reads the canaries written
    // above: all stack below this frame and above the floor, not part of any Rust object. v8-v15 are callee-saved in their low 64 bits only: the compiler saves
    // and restores those for this function's caller, and the restore clears the high ones.
    unsafe {
        core::arch::asm!(
            "movi v0.16b, #0",
            "movi v1.16b, #0",
            "movi v2.16b, #0",
            "movi v3.16b, #0",
            "movi v4.16b, #0",
            "movi v5.16b, #0",
            "movi v6.16b, #0",
            "movi v7.16b, #0",
            "movi v8.16b, #0",
            "movi v9.16b, #0",
            "movi v10.16b, #0",
            "movi v11.16b, #0",
            "movi v12.16b, #0",
            "movi v13.16b, #0",
            "movi v14.16b, #0",
            "movi v15.16b, #0",
            "movi v16.16b, #0",
            "movi v17.16b, #0",
            "movi v18.16b, #0",
            "movi v19.16b, #0",
            "movi v20.16b, #0",
            "movi v21.16b, #0",
            "movi v22.16b, #0",
            "movi v23.16b, #0",
            "movi v24.16b, #0",
            "movi v25.16b, #0",
            "movi v26.16b, #0",
            "movi v27.16b, #0",
            "movi v28.16b, #0",
            "movi v29.16b, #0",
            "movi v30.16b, #0",
            "movi v31.16b, #0",
            // Zero sp - scrub .. sp (scrub a multiple of 64), 64 bytes a turn.
            "mov x9, sp",
            "sub x10, x9, x13",
            "cbz x13, 4f",
            "2:",
            "stp q0, q1, [x10], #64",
            "stp q2, q3, [x10, #-32]",
            "cmp x10, x9",
            "b.ne 2b",
            "4:",
            // Or together the differences of the canaries from CANARY.
            "mov x0, xzr",
            "cbz x12, 5f",
            "sub x10, x9, #{first}",
            "3:",
            "ldr x11, [x10], #-{spacing}",
            "eor x11, x11, x14",
            "orr x0, x0, x11",
            "subs x12, x12, #1",
            "b.ne 3b",
            "5:",
            "mov x1, xzr",
            "mov x2, xzr",
            "mov x3, xzr",
            "mov x4, xzr",
            "mov x5, xzr",
            "mov x6, xzr",
            "mov x7, xzr",
            "mov x8, xzr",
            "mov x10, xzr",
            "mov x11, xzr",
            "mov x13, xzr",
            "mov x15, xzr",
            "mov x16, xzr",
            "mov x17, xzr",
            first = const SCRUB_BYTES + 8,
            spacing = const SPACING,
            inout("x12") canaries => _,
            inout("x13") scrub => _,
            inout("x14") CANARY => _,
            out("x0") changed,
            out("x9") sp,
            out("x1") _, out("x2") _, out("x3") _, out("x4") _,
            out("x5") _, out("x6") _, out("x7") _, out("x8") _,
            out("x10") _, out("x11") _, out("x15") _,
            out("x16") _, out("x17") _,
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
        );
    }
    if changed != 0 {
        // The whole frame: one signal frame's size below the scrubbed area, every canary
        // included.
        wipe_signal_frames(
            sp - SCRUB_BYTES,
            signal_frame().max(canaries * SPACING + 8),
            floor,
        );
    }
    if let Some(alt) = alt.filter(|alt| alt.changed()) {
        alt.wipe(sp);
    }
    stacks.finish(sp);
    r
}

/// Asks valgrind whether it is running, by its documented client request
/// `RUNNING_ON_VALGRIND` (0x1001): rotations of `x12` by 128 bits in all and
/// `orr x10, x10, x10`, which change nothing natively and which valgrind recognises,
/// reading the request from `x4` and answering in `x3`.
#[cold]
#[inline(never)]
pub(super) fn ask_valgrind() -> bool {
    let request: [u64; 6] = [0x1001, 0, 0, 0, 0, 0];
    let answer: u64;
    // SAFETY: natively the rotations leave `x12` as it was and the `orr` is a no-op, so
    // `x3` keeps 0; under valgrind it reads `request` and writes the answer to `x3`.
    unsafe {
        core::arch::asm!(
            "ror x12, x12, #3",
            "ror x12, x12, #13",
            "ror x12, x12, #51",
            "ror x12, x12, #61",
            "orr x10, x10, x10",
            in("x4") request.as_ptr(),
            inout("x3") 0u64 => answer,
            inout("x12") 0u64 => _,
            inout("x10") 0u64 => _,
            options(nostack, preserves_flags),
        );
    }
    answer != 0
}

/// Whether any of the `words` canary words every `ALT_SPACING` bytes down from `start`
/// differs from [`CANARY`]; the register that held each word is cleared afterwards, and
/// the answer is 0 or 1, so no register keeps a word of a signal frame found there.
///
/// # Safety
/// The words must be readable.
#[inline]
pub(super) unsafe fn canaries_changed(start: usize, words: usize) -> bool {
    let changed: u64;
    // SAFETY: reads the words, as the caller's contract allows; registers declared.
    unsafe {
        core::arch::asm!(
            "mov {acc}, xzr",
            "cbz {n}, 3f",
            "2:",
            "ldr {w}, [{at}], #-{spacing}",
            "eor {w}, {w}, {canary}",
            "orr {acc}, {acc}, {w}",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            "3:",
            "mov {w}, xzr",
            "cmp {acc}, #0",
            "cset {acc}, ne",
            canary = in(reg) CANARY,
            spacing = const ALT_SPACING,
            at = inout(reg) start => _,
            n = inout(reg) words => _,
            w = out(reg) _,
            acc = out(reg) changed,
            options(nostack, readonly),
        );
    }
    changed != 0
}

/// Zeroes `bottom..top` (8-byte aligned, `bottom < top`) one word at a time.
///
/// # Safety
/// `bottom..top` must be writable and no live object's memory.
#[inline]
pub(super) unsafe fn zero_stack(bottom: usize, top: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!(
            "2:",
            "str xzr, [{at}], #8",
            "cmp {at}, {top}",
            "b.ne 2b",
            at = inout(reg) bottom => _,
            top = in(reg) top,
            options(nostack),
        );
    }
}
