//! The x86-64 Linux scrub: the registers cleared, the stack below the computation zeroed,
//! and a signal frame pushed below the zeroed area during the computation found by a canary
//! band and zeroed too (see the grandparent module).

use super::super::SCRUB_BYTES;
use super::{ALT_SPACING, CANARY, Stacks, signal_frame, wipe_signal_frames};

/// Zeroes every listed vector register by xoring it with itself, in one `asm!` block
/// that declares each one clobbered: SSE registers with `pxor r, r`; AVX-512 registers
/// with `vpxord r, r, r` and the mask registers with `kxorw k, k, k`, then `vzeroupper`
/// (VEX/EVEX code ends in the clean upper state, so later SSE code pays no transition).
/// Registers only: no memory, no stack, flags kept.
macro_rules! zero_vector_registers {
    (pxor [$($r:tt)*]) => {
        core::arch::asm!(
            $(concat!("pxor ", $r, ", ", $r),)*
            $(out($r) _,)*
            options(nomem, nostack, preserves_flags),
        )
    };
    (vpxord [$($r:tt)*] kxorw [$($k:tt)*]) => {
        core::arch::asm!(
            $(concat!("vpxord ", $r, ", ", $r, ", ", $r),)*
            $(concat!("kxorw ", $k, ", ", $k, ", ", $k),)*
            "vzeroupper",
            $(out($r) _,)*
            $(out($k) _,)*
            options(nomem, nostack, preserves_flags),
        )
    };
}

/// Bytes of the canary band below the scrubbed area.
const BAND: usize = 512;

/// Signal frame size where the kernel does not report one: AVX-512 state needs 3.3 KiB.
pub(super) const FALLBACK_SIGNAL_FRAME: usize = 4096;

cpufeatures::new!(cpuid_avx, "avx");

/// Asks valgrind whether it is running, by its documented client request
/// `RUNNING_ON_VALGRIND` (0x1001): a sequence of rotations of `rdi` by 128 bits in all
/// and `xchg rbx, rbx`, which changes nothing natively and which valgrind recognises,
/// answering in `rdx`.
#[cold]
#[inline(never)]
pub(super) fn ask_valgrind() -> bool {
    let request: [u64; 6] = [0x1001, 0, 0, 0, 0, 0];
    let answer: u64;
    // SAFETY: natively the rotations leave `rdi` as it was and the exchange is a no-op,
    // so `rdx` keeps 0; under valgrind it reads `request` and writes the answer to `rdx`.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") request.as_ptr(),
            inout("rdx") 0u64 => answer,
            inout("rdi") 0u64 => _,
            options(nostack),
        );
    }
    answer != 0
}

/// [`super::below`] outside valgrind: `compute`, then the registers cleared, the stack
/// below zeroed and a signal frame found below it zeroed too, and one found at the top of
/// the thread's free alternate signal stack. On an alternate signal stack every write
/// below the stack pointer stops at its base.
#[inline(always)]
pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
    let here: usize;
    // SAFETY: reads the stack pointer.
    unsafe {
        core::arch::asm!("mov {}, rsp", out(reg) here, options(nomem, nostack, preserves_flags))
    };
    let stacks = Stacks::now(here);
    let floor = stacks.floor;
    // SAFETY: writes the BAND bytes from SCRUB_BYTES + BAND to SCRUB_BYTES below the
    // stack pointer, none below `floor` (the base of the alternate signal stack this runs
    // on, else 0): stack that every keystream computation's scrub writes too (the read
    // paths' stack use, measured with this included, is in docs/SECURITY.md), below the
    // red zone and not part of any Rust object. `rep stosq` runs forward (the direction
    // flag is clear on entry to `asm!`); a count of 0 writes nothing.
    unsafe {
        core::arch::asm!(
            "lea rdi, [rsp - {below}]",
            "cmp rdi, {floor}",
            "cmovb rdi, {floor}",
            "lea rcx, [rsp - {scrub}]",
            "cmp rcx, {floor}",
            "cmovb rcx, {floor}",
            "sub rcx, rdi",
            "shr rcx, 3",
            "rep stosq",
            below = const SCRUB_BYTES + BAND,
            scrub = const SCRUB_BYTES,
            floor = in(reg) floor,
            in("rax") CANARY,
            out("rdi") _,
            out("rcx") _,
        );
    }
    let alt = stacks.arm();
    let r = compute();
    let sp: usize;
    let changed: u64;
    // SAFETY: clears the caller-saved registers (declared as outputs), then zeroes the
    // SCRUB_BYTES below the stack pointer (where the computation's frames were) and
    // compares the band written above, both no lower than `floor`: all stack below this
    // frame that the computation and the band write used, not part of any Rust object.
    // `vzeroall`/`vpxord` run only where the CPU has AVX/AVX-512F, as detected.
    unsafe {
        // Vector registers: all 32 (and the masks) with AVX-512F, all 16 whole with AVX,
        // else the 16 SSE registers. VEX/EVEX code ends in the clean upper state, so
        // later SSE code pays no transition.
        if super::super::super::avx512::detected() {
            clear_zmm();
        } else if cpuid_avx::get() {
            clear_ymm();
        } else {
            zero_vector_registers!(pxor [
                "xmm0" "xmm1" "xmm2" "xmm3" "xmm4" "xmm5" "xmm6" "xmm7"
                "xmm8" "xmm9" "xmm10" "xmm11" "xmm12" "xmm13" "xmm14" "xmm15"
            ]);
        }
        core::arch::asm!(
            "xor esi, esi",
            "xor r8d, r8d",
            "xor r9d, r9d",
            "xor r10d, r10d",
            "xor r11d, r11d",
            "xor eax, eax",
            "mov rdx, rsp",
            // Zero max(rsp - SCRUB_BYTES, floor)..rsp.
            "lea rdi, [rsp - {scrub}]",
            "cmp rdi, {floor}",
            "cmovb rdi, {floor}",
            "mov rcx, rdx",
            "sub rcx, rdi",
            "shr rcx, 3",
            "rep stosq",
            // Compare the band, max(rsp - SCRUB_BYTES - BAND, floor) up to
            // max(rsp - SCRUB_BYTES, floor).
            "lea rdi, [rsp - {below}]",
            "cmp rdi, {floor}",
            "cmovb rdi, {floor}",
            "lea rcx, [rsp - {scrub}]",
            "cmp rcx, {floor}",
            "cmovb rcx, {floor}",
            "jmp 3f",
            "2:",
            "mov r8, [rdi]",
            "xor r8, {canary}",
            "or rax, r8",
            "add rdi, 8",
            "3:",
            "cmp rdi, rcx",
            "jb 2b",
            "xor r8d, r8d",
            scrub = const SCRUB_BYTES,
            below = const SCRUB_BYTES + BAND,
            canary = in(reg) CANARY,
            floor = in(reg) floor,
            out("rax") changed,
            out("rdx") sp,
            out("rdi") _,
            out("rcx") _,
            out("rsi") _,
            out("r8") _,
            out("r9") _,
            out("r10") _,
            out("r11") _,
        );
    }
    if changed != 0 {
        // One signal frame's size below the scrubbed area, the band included.
        wipe_signal_frames(sp - SCRUB_BYTES, signal_frame().max(BAND), floor);
    }
    if let Some(alt) = alt.filter(|alt| alt.changed()) {
        alt.wipe(sp);
    }
    stacks.finish(sp);
    r
}

/// Clears all 32 AVX-512 registers and the mask registers k1 to k7, leaving the upper
/// state clean (`vzeroupper`).
///
/// # Safety
/// Only on a CPU with AVX-512F.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn clear_zmm() {
    // SAFETY: AVX-512F is present (the caller's contract); registers only.
    unsafe {
        zero_vector_registers!(vpxord [
            "zmm0" "zmm1" "zmm2" "zmm3" "zmm4" "zmm5" "zmm6" "zmm7"
            "zmm8" "zmm9" "zmm10" "zmm11" "zmm12" "zmm13" "zmm14" "zmm15"
            "zmm16" "zmm17" "zmm18" "zmm19" "zmm20" "zmm21" "zmm22" "zmm23"
            "zmm24" "zmm25" "zmm26" "zmm27" "zmm28" "zmm29" "zmm30" "zmm31"
        ] kxorw ["k1" "k2" "k3" "k4" "k5" "k6" "k7"]);
    }
}

/// Clears the 16 AVX registers whole.
///
/// # Safety
/// Only on a CPU with AVX.
#[target_feature(enable = "avx")]
#[inline]
unsafe fn clear_ymm() {
    // SAFETY: AVX is present (the caller's contract); registers only.
    unsafe {
        core::arch::asm!(
            "vzeroall",
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
            out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
            out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
            out("ymm12") _, out("ymm13") _, out("ymm14") _, out("ymm15") _,
            options(nomem, nostack, preserves_flags),
        );
    }
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
            "xor eax, eax",
            "test rcx, rcx",
            "jz 3f",
            "2:",
            "mov rdx, [rdi]",
            "xor rdx, {canary}",
            "or rax, rdx",
            "sub rdi, {spacing}",
            "dec rcx",
            "jnz 2b",
            "3:",
            "xor edx, edx",
            "test rax, rax",
            "setnz dl",
            "mov eax, edx",
            canary = in(reg) CANARY,
            spacing = const ALT_SPACING,
            inout("rdi") start => _,
            inout("rcx") words => _,
            out("rax") changed,
            out("rdx") _,
            options(nostack, readonly),
        );
    }
    changed != 0
}

/// Zeroes `bottom..top` (8-byte aligned) with `rep stosq`.
///
/// # Safety
/// `bottom..top` must be writable and no live object's memory.
#[inline]
pub(super) unsafe fn zero_stack(bottom: usize, top: usize) {
    // SAFETY: the caller's contract; `rep stosq` leaves the flags alone and runs forward
    // (the direction flag is clear on entry to `asm!`).
    unsafe {
        core::arch::asm!(
            "rep stosq",
            in("rdi") bottom,
            in("rcx") (top - bottom) / 8,
            in("rax") 0u64,
            lateout("rdi") _,
            lateout("rcx") _,
            options(nostack, preserves_flags),
        );
    }
}
