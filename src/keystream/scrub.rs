//! Zeroing the stack below a keystream computation: its dead frames, and on x86-64 Linux the
//! signal frames the kernel may have pushed below it.
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
//! interrupted stack pointer and its 128-byte red zone; the frame is up to
//! `getauxval(AT_MINSIGSTKSZ)` bytes long (3.3 KiB with AVX-512 state) and is not erased
//! when the handler returns (Linux `arch/x86/kernel/signal.c`, `get_sigframe`). On x86-64
//! Linux the caller therefore writes a 512-byte canary band just below the scrubbed area
//! before the computation and checks it afterwards. A frame that reaches below the scrubbed
//! area crosses the band and overwrites part of it (its lowest bytes hold the handler's
//! return address and the saved registers; the largest span of an x86 signal frame that the
//! kernel leaves unwritten is the 256 bytes of unused XSAVE area after the AVX state), so a
//! changed band means that a signal frame lies there: then one signal frame's size below the
//! scrubbed area (the band included) is zeroed too, clamped to the alternate signal stack when the
//! code runs on one (`sigaltstack(2)`). Without a signal that costs one 512-byte write and
//! one 512-byte compare per computation. Before the zeroing, the vector and the
//! caller-saved general registers are cleared, so a signal that arrives during the zeroing
//! saves no key material either.
//!
//! Elsewhere, and under valgrind (whose memcheck rejects accesses below the stack pointer),
//! the scrub zeroes a local array of [`SCRUB_BYTES`] in a frame of its own, kept by an
//! empty `asm!` block that takes its address (volatile stores where `asm!` is not stable),
//! and signal frames below the computation are not erased (docs/SECURITY.md).

/// Bytes below the caller's stack pointer that are zeroed after a keystream computation:
/// at least the deepest stack the computation's frames reach on any path (fkrng's kernels,
/// the `chacha20` crate's backends), plus the 128-byte red zone and 64 bytes of signal-frame
/// alignment. Unoptimised builds (recognised by their debug assertions, which every Cargo
/// profile with opt-level 0 enables by default) keep every intermediate of the crate's
/// generic code in frames of their own and need several times more.
pub(super) const SCRUB_BYTES: usize = if cfg!(debug_assertions) {
    SCRUB_BYTES_UNOPTIMISED
} else {
    SCRUB_BYTES_OPTIMISED
};

/// [`SCRUB_BYTES`] of optimised builds.
const SCRUB_BYTES_OPTIMISED: usize = 2048;

/// [`SCRUB_BYTES`] of builds with debug assertions (opt-level 0 by default).
const SCRUB_BYTES_UNOPTIMISED: usize = 3584;

/// Runs `compute` (which must call a function that is never inlined, holding every
/// key-derived value in its frames) and zeroes the stack below the caller afterwards, and,
/// on x86-64 Linux, any signal frame pushed below it during the computation.
#[inline(always)]
pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", feature = "std"))]
    {
        signal_frames::below(compute)
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", feature = "std")))]
    {
        let r = compute();
        scrub_stack();
        r
    }
}

/// Overwrites [`SCRUB_BYTES`] bytes of the stack just below the caller's frame with zeros:
/// one local array in a frame that reuses the area the computation's frames used. The
/// zeroing is kept by an `asm!` block that takes the array's address and, as far as the
/// compiler knows, reads it (where `asm!` is not stable, by volatile writes of whole words),
/// so no optimiser may drop the stores as dead.
#[inline(never)]
fn scrub_stack() {
    let mut area = [0usize; SCRUB_BYTES / size_of::<usize>()];
    #[cfg(any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "arm",
        target_arch = "aarch64",
        target_arch = "riscv32",
        target_arch = "riscv64",
        target_arch = "loongarch64"
    ))]
    // SAFETY: the block is empty: it reads, writes and jumps nowhere; without `nomem` the
    // compiler must assume it reads the memory `area` points to, so the zeroes are stored.
    unsafe {
        core::arch::asm!("/* {0} */", in(reg) area.as_mut_ptr(), options(nostack, preserves_flags));
    }
    #[cfg(not(any(
        target_arch = "x86",
        target_arch = "x86_64",
        target_arch = "arm",
        target_arch = "aarch64",
        target_arch = "riscv32",
        target_arch = "riscv64",
        target_arch = "loongarch64"
    )))]
    for word in area.iter_mut() {
        // SAFETY: `word` is a valid, exclusive reference to an initialised `usize`.
        unsafe { core::ptr::write_volatile(word, 0) };
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", feature = "std"))]
mod signal_frames {
    use super::SCRUB_BYTES;
    use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// Bytes of the canary band below the scrubbed area.
    const BAND: usize = 512;

    /// The canary: an arbitrary odd pattern, neither zero nor a register's usual content.
    const CANARY: u64 = 0x5c3a_91e7_0f6d_24b9;

    /// `AT_MINSIGSTKSZ` from `<linux/auxvec.h>`: the kernel's signal frame size (Linux 5.14
    /// and later on x86).
    const AT_MINSIGSTKSZ: libc::c_ulong = 51;

    /// Signal frame size where the kernel does not report one: AVX-512 state needs 3.3 KiB.
    const FALLBACK_SIGNAL_FRAME: usize = 4096;

    /// The signal frame size, read from the auxiliary vector once (0: not read yet).
    static SIGNAL_FRAME: AtomicUsize = AtomicUsize::new(0);

    cpufeatures::new!(cpuid_avx, "avx");

    /// Whether the process runs under valgrind: 0 not known yet, 1 no, 2 yes.
    static VALGRIND: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

    /// Whether the process runs under valgrind, whose memcheck rejects every access below
    /// the stack pointer (and which delivers signals itself): there the scrub is the local
    /// array of [`super::scrub_stack`], in a frame of its own.
    #[inline(always)]
    fn under_valgrind() -> bool {
        match VALGRIND.load(Relaxed) {
            1 => false,
            2 => true,
            _ => ask_valgrind(),
        }
    }

    /// Asks valgrind whether it is running, by its documented client request
    /// `RUNNING_ON_VALGRIND` (0x1001): a sequence of rotations of `rdi` by 128 bits in all
    /// and `xchg rbx, rbx`, which changes nothing natively and which valgrind recognises,
    /// answering in `rdx`.
    #[cold]
    #[inline(never)]
    fn ask_valgrind() -> bool {
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
        let yes = answer != 0;
        VALGRIND.store(if yes { 2 } else { 1 }, Relaxed);
        yes
    }

    /// See [`super::below`].
    #[inline(always)]
    pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
        if under_valgrind() {
            let r = compute();
            super::scrub_stack();
            return r;
        }
        // SAFETY: writes the BAND bytes from SCRUB_BYTES + BAND to SCRUB_BYTES below the
        // stack pointer: stack that every keystream computation's scrub writes too (the read
        // paths' stack use, measured with this included, is in docs/SECURITY.md), below the
        // red zone and not part of any Rust object. `rep stosq` leaves the flags alone and
        // runs forward (the direction flag is clear on entry to `asm!`).
        unsafe {
            core::arch::asm!(
                "lea rdi, [rsp - {below}]",
                "mov ecx, {words}",
                "rep stosq",
                below = const SCRUB_BYTES + BAND,
                words = const BAND / 8,
                in("rax") CANARY,
                out("rdi") _,
                out("rcx") _,
                options(preserves_flags),
            );
        }
        let r = compute();
        let sp: usize;
        let changed: u64;
        // SAFETY: clears the caller-saved registers (declared as outputs), then zeroes the
        // SCRUB_BYTES below the stack pointer (where the computation's frames were) and
        // compares the band written above: all stack below this frame that the computation
        // and the band write used, not part of any Rust object. `vzeroall`/`vpxord` run only
        // where the CPU has AVX/AVX-512F, as detected.
        unsafe {
            // Vector registers: all 32 (and the masks) with AVX-512F, all 16 whole with AVX,
            // else the 16 SSE registers. VEX/EVEX code ends in the clean upper state, so
            // later SSE code pays no transition.
            if super::super::avx512::detected() {
                clear_zmm();
            } else if cpuid_avx::get() {
                clear_ymm();
            } else {
                core::arch::asm!(
                    "pxor xmm0, xmm0",
                    "pxor xmm1, xmm1",
                    "pxor xmm2, xmm2",
                    "pxor xmm3, xmm3",
                    "pxor xmm4, xmm4",
                    "pxor xmm5, xmm5",
                    "pxor xmm6, xmm6",
                    "pxor xmm7, xmm7",
                    "pxor xmm8, xmm8",
                    "pxor xmm9, xmm9",
                    "pxor xmm10, xmm10",
                    "pxor xmm11, xmm11",
                    "pxor xmm12, xmm12",
                    "pxor xmm13, xmm13",
                    "pxor xmm14, xmm14",
                    "pxor xmm15, xmm15",
                    out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                    out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                    out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                    out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                    options(nomem, nostack, preserves_flags),
                );
            }
            core::arch::asm!(
                "xor esi, esi",
                "xor r8d, r8d",
                "xor r9d, r9d",
                "xor r10d, r10d",
                "xor r11d, r11d",
                "xor eax, eax",
                "mov rdx, rsp",
                "lea rdi, [rsp - {scrub}]",
                "mov ecx, {scrub_words}",
                "rep stosq",
                // rdi is now rsp: compare the band below the scrubbed area.
                "lea rdi, [rsp - {below}]",
                "mov ecx, {band_words}",
                "2:",
                "mov r8, [rdi]",
                "xor r8, {canary}",
                "or rax, r8",
                "add rdi, 8",
                "dec ecx",
                "jnz 2b",
                "xor r8d, r8d",
                scrub = const SCRUB_BYTES,
                scrub_words = const SCRUB_BYTES / 8,
                below = const SCRUB_BYTES + BAND,
                band_words = const BAND / 8,
                canary = in(reg) CANARY,
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
            wipe_signal_frames(sp);
        }
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
            core::arch::asm!(
                "vpxord zmm0, zmm0, zmm0",
                "vpxord zmm1, zmm1, zmm1",
                "vpxord zmm2, zmm2, zmm2",
                "vpxord zmm3, zmm3, zmm3",
                "vpxord zmm4, zmm4, zmm4",
                "vpxord zmm5, zmm5, zmm5",
                "vpxord zmm6, zmm6, zmm6",
                "vpxord zmm7, zmm7, zmm7",
                "vpxord zmm8, zmm8, zmm8",
                "vpxord zmm9, zmm9, zmm9",
                "vpxord zmm10, zmm10, zmm10",
                "vpxord zmm11, zmm11, zmm11",
                "vpxord zmm12, zmm12, zmm12",
                "vpxord zmm13, zmm13, zmm13",
                "vpxord zmm14, zmm14, zmm14",
                "vpxord zmm15, zmm15, zmm15",
                "vpxord zmm16, zmm16, zmm16",
                "vpxord zmm17, zmm17, zmm17",
                "vpxord zmm18, zmm18, zmm18",
                "vpxord zmm19, zmm19, zmm19",
                "vpxord zmm20, zmm20, zmm20",
                "vpxord zmm21, zmm21, zmm21",
                "vpxord zmm22, zmm22, zmm22",
                "vpxord zmm23, zmm23, zmm23",
                "vpxord zmm24, zmm24, zmm24",
                "vpxord zmm25, zmm25, zmm25",
                "vpxord zmm26, zmm26, zmm26",
                "vpxord zmm27, zmm27, zmm27",
                "vpxord zmm28, zmm28, zmm28",
                "vpxord zmm29, zmm29, zmm29",
                "vpxord zmm30, zmm30, zmm30",
                "vpxord zmm31, zmm31, zmm31",
                "kxorw k1, k1, k1",
                "kxorw k2, k2, k2",
                "kxorw k3, k3, k3",
                "kxorw k4, k4, k4",
                "kxorw k5, k5, k5",
                "kxorw k6, k6, k6",
                "kxorw k7, k7, k7",
                "vzeroupper",
                out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
                out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
                out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
                out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
                out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
                out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
                out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _,
                out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
                out("k1") _, out("k2") _, out("k3") _, out("k4") _,
                out("k5") _, out("k6") _, out("k7") _,
                options(nomem, nostack, preserves_flags),
            );
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

    /// The signal frame size this kernel uses (`getauxval(AT_MINSIGSTKSZ)`, or
    /// [`FALLBACK_SIGNAL_FRAME`] where it reports none).
    fn signal_frame() -> usize {
        let mut size = SIGNAL_FRAME.load(Relaxed);
        if size == 0 {
            // SAFETY: reads the auxiliary vector; async-signal-safe (no locks, no memory).
            let reported = unsafe { libc::getauxval(AT_MINSIGSTKSZ) } as usize;
            size = if reported == 0 {
                FALLBACK_SIGNAL_FRAME
            } else {
                reported
            };
            SIGNAL_FRAME.store(size, Relaxed);
        }
        size
    }

    /// Zeroes one signal frame's size below the scrubbed area of the frame whose stack
    /// pointer is `sp` (the band included): where a signal frame pushed during the
    /// computation lies, since the computation's deepest stack pointer plus the red zone and
    /// 64 bytes of alignment stays within the scrubbed area. On an alternate signal stack
    /// the zeroing stops at its base.
    #[cold]
    #[inline(never)]
    fn wipe_signal_frames(sp: usize) {
        crate::probe::count_signal_frame_wipe();
        let top = sp - SCRUB_BYTES;
        let mut bottom = top - signal_frame().max(BAND);
        // SAFETY: `current` is a valid out-pointer; a null `ss` only queries.
        unsafe {
            let mut current: libc::stack_t = core::mem::zeroed();
            if libc::sigaltstack(core::ptr::null(), &mut current) == 0
                && current.ss_flags & libc::SS_ONSTACK != 0
            {
                bottom = bottom.max(current.ss_sp as usize);
            }
        }
        bottom &= !7;
        // SAFETY: zeroes `bottom..top`, below this function's own frame (which lies within
        // the SCRUB_BYTES below `sp`): the band, and the stack a signal frame that reached
        // the band was pushed into (not part of any Rust object); on an alternate signal
        // stack, no lower than its base.
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
}
