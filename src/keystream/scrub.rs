//! Erasing what a keystream computation leaves behind, on every path and profile.
//!
//! Contract: [`below`] runs a computation that holds every key-derived value in registers
//! and in the frames of a never-inlined callee (below the caller's stack pointer). When it
//! returns, the vector and caller-saved general registers are cleared (x86-64, AArch64),
//! then [`SCRUB_BYTES`] of stack below the caller are zeroed through a local array of a
//! frame of its own: only within the depth a keystream computation of this build needs on
//! whatever stack it runs, nothing anywhere else, and nothing is registered with the OS.
//! Registers saved in a signal frame during the computation are not reached
//! (docs/SECURITY.md).

/// Bytes of stack zeroed below the caller: at least the deepest a computation of this build
/// reaches on any path (`scrub_covers_the_deepest_keystream_frame`; figures per level in
/// docs/SECURITY.md); 4608 for opt-level 1, `s` and `z`, and pinned unoptimised builds.
pub(super) const SCRUB_BYTES: usize = if super::small_stack::IN_USE {
    3584
} else if cfg!(all(
    any(fkrng_opt_level = "2", fkrng_opt_level = "3"),
    not(debug_assertions)
)) {
    2048
} else {
    4608
};

/// Runs `compute`, then clears the registers and zeroes the stack below the caller.
#[inline(always)]
pub(super) fn below<R>(compute: impl FnOnce() -> R) -> R {
    let r = compute();
    clear_registers();
    scrub_stack();
    r
}

/// Zeroes [`SCRUB_BYTES`] of stack just below the caller: one local array in a frame over
/// the area the computation's frames used. An `asm!` block that takes the array's address
/// (volatile writes where there is none, and under Miri) keeps the stores.
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

#[cfg(all(target_arch = "x86_64", not(miri)))]
cpufeatures::new!(cpuid_avx, "avx");

/// Clears the vector registers (all 32 and the mask registers with AVX-512F, the 16 AVX
/// registers whole with AVX, else the 16 SSE registers) and the caller-saved general
/// registers, which the computation may have left holding key-derived words.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn clear_registers() {
    // SAFETY: each block only writes the registers it declares as outputs; the AVX-512 and
    // AVX forms run only where CPUID reported those features.
    unsafe {
        if super::avx512::detected() {
            clear_zmm();
        } else if cpuid_avx::get() {
            clear_ymm();
        } else {
            core::arch::asm!(
                "pxor xmm0, xmm0", "pxor xmm1, xmm1", "pxor xmm2, xmm2", "pxor xmm3, xmm3",
                "pxor xmm4, xmm4", "pxor xmm5, xmm5", "pxor xmm6, xmm6", "pxor xmm7, xmm7",
                "pxor xmm8, xmm8", "pxor xmm9, xmm9", "pxor xmm10, xmm10", "pxor xmm11, xmm11",
                "pxor xmm12, xmm12", "pxor xmm13, xmm13", "pxor xmm14, xmm14", "pxor xmm15, xmm15",
                out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
                out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
                out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
                out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
                options(nomem, nostack, preserves_flags),
            );
        }
        core::arch::asm!(
            "xor eax, eax", "xor ecx, ecx", "xor edx, edx", "xor esi, esi", "xor edi, edi",
            "xor r8d, r8d", "xor r9d, r9d", "xor r10d, r10d", "xor r11d, r11d",
            out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _,
            out("r8") _, out("r9") _, out("r10") _, out("r11") _,
            options(nomem, nostack),
        );
    }
}

/// Clears the 32 AVX-512 registers and the mask registers, ending in the clean upper state.
///
/// # Safety
/// Only on a CPU with AVX-512F.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn clear_zmm() {
    // SAFETY: AVX-512F is present (the caller's contract); registers only.
    unsafe {
        core::arch::asm!(
            "vpxord zmm16, zmm16, zmm16", "vpxord zmm17, zmm17, zmm17",
            "vpxord zmm18, zmm18, zmm18", "vpxord zmm19, zmm19, zmm19",
            "vpxord zmm20, zmm20, zmm20", "vpxord zmm21, zmm21, zmm21",
            "vpxord zmm22, zmm22, zmm22", "vpxord zmm23, zmm23, zmm23",
            "vpxord zmm24, zmm24, zmm24", "vpxord zmm25, zmm25, zmm25",
            "vpxord zmm26, zmm26, zmm26", "vpxord zmm27, zmm27, zmm27",
            "vpxord zmm28, zmm28, zmm28", "vpxord zmm29, zmm29, zmm29",
            "vpxord zmm30, zmm30, zmm30", "vpxord zmm31, zmm31, zmm31",
            "kxorw k1, k1, k1", "kxorw k2, k2, k2", "kxorw k3, k3, k3", "kxorw k4, k4, k4",
            "kxorw k5, k5, k5", "kxorw k6, k6, k6", "kxorw k7, k7, k7",
            "vzeroall",
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
#[cfg(all(target_arch = "x86_64", not(miri)))]
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

/// Clears all 32 SIMD registers whole (only the low halves of v8-v15 are callee-saved) and
/// the caller-saved general registers x0-x17.
#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
fn clear_registers() {
    // SAFETY: the block only writes the registers it declares as outputs.
    unsafe {
        core::arch::asm!(
            "movi v0.16b, #0", "movi v1.16b, #0", "movi v2.16b, #0", "movi v3.16b, #0",
            "movi v4.16b, #0", "movi v5.16b, #0", "movi v6.16b, #0", "movi v7.16b, #0",
            "movi v8.16b, #0", "movi v9.16b, #0", "movi v10.16b, #0", "movi v11.16b, #0",
            "movi v12.16b, #0", "movi v13.16b, #0", "movi v14.16b, #0", "movi v15.16b, #0",
            "movi v16.16b, #0", "movi v17.16b, #0", "movi v18.16b, #0", "movi v19.16b, #0",
            "movi v20.16b, #0", "movi v21.16b, #0", "movi v22.16b, #0", "movi v23.16b, #0",
            "movi v24.16b, #0", "movi v25.16b, #0", "movi v26.16b, #0", "movi v27.16b, #0",
            "movi v28.16b, #0", "movi v29.16b, #0", "movi v30.16b, #0", "movi v31.16b, #0",
            "mov x0, xzr", "mov x1, xzr", "mov x2, xzr", "mov x3, xzr", "mov x4, xzr",
            "mov x5, xzr", "mov x6, xzr", "mov x7, xzr", "mov x8, xzr", "mov x9, xzr",
            "mov x10, xzr", "mov x11, xzr", "mov x12, xzr", "mov x13, xzr", "mov x14, xzr",
            "mov x15, xzr", "mov x16, xzr", "mov x17, xzr",
            out("v0") _, out("v1") _, out("v2") _, out("v3") _,
            out("v4") _, out("v5") _, out("v6") _, out("v7") _,
            out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _,
            out("v16") _, out("v17") _, out("v18") _, out("v19") _,
            out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _,
            out("v28") _, out("v29") _, out("v30") _, out("v31") _,
            out("x0") _, out("x1") _, out("x2") _, out("x3") _, out("x4") _,
            out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            out("x10") _, out("x11") _, out("x12") _, out("x13") _, out("x14") _,
            out("x15") _, out("x16") _, out("x17") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// No register clearing on other architectures and under Miri (docs/SECURITY.md).
#[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
#[inline(always)]
fn clear_registers() {}
