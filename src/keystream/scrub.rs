//! Erasing what a keystream computation leaves behind, on every path and profile. Contract:
//! once the computation [`below`] runs returns (its key-derived values held in registers and
//! in never-inlined callees' frames below the caller), the vector and caller-saved general
//! registers are cleared (x86-64, AArch64) and [`SCRUB_BYTES`] below the caller zeroed, in a
//! frame of its own; nothing else is touched or registered with the OS. Registers saved in a
//! signal frame meanwhile are not reached (docs/SECURITY.md).

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
pub(super) fn scrub_stack() {
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
/// registers whole with AVX, else the 16 SSE registers) and the general registers that
/// System V makes caller-saved, which the computation may have left holding key-derived
/// words. A callee restores the registers its target's ABI makes callee-saved before it
/// returns, so those hold no key word.
///
/// Every block names each register it writes (`out("…") _`) and no others, on every
/// target: the compiler then keeps no value of its own in them across the block and saves
/// those the target's ABI makes callee-saved (Windows x64: rsi, rdi, xmm6-xmm15), so no
/// caller's value is lost on any ABI (`asm_blocks_keep_callee_saved_registers`).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn clear_registers() {
    if super::avx512::detected() {
        // SAFETY: CPUID reported AVX-512F (`detected`).
        unsafe { clear_zmm() };
    } else if cpuid_avx::get() {
        // SAFETY: CPUID reported AVX.
        unsafe { clear_ymm() };
    } else {
        clear_xmm();
    }
    clear_general();
}

/// Zeroes xmm0-xmm15.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
pub(super) fn clear_xmm() {
    // SAFETY: writes only the registers it names as outputs; no memory, stack or flags.
    unsafe {
        core::arch::asm!(
            "pxor xmm0, xmm0\npxor xmm1, xmm1\npxor xmm2, xmm2\npxor xmm3, xmm3",
            "pxor xmm4, xmm4\npxor xmm5, xmm5\npxor xmm6, xmm6\npxor xmm7, xmm7",
            "pxor xmm8, xmm8\npxor xmm9, xmm9\npxor xmm10, xmm10\npxor xmm11, xmm11",
            "pxor xmm12, xmm12\npxor xmm13, xmm13\npxor xmm14, xmm14\npxor xmm15, xmm15",
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _, out("xmm4") _,
            out("xmm5") _, out("xmm6") _, out("xmm7") _, out("xmm8") _, out("xmm9") _,
            out("xmm10") _, out("xmm11") _, out("xmm12") _, out("xmm13") _, out("xmm14") _,
            out("xmm15") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Zeroes ymm0-ymm15 whole (`vzeroall`).
///
/// # Safety
/// Only on a CPU with AVX.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx")]
#[inline]
pub(super) unsafe fn clear_ymm() {
    // SAFETY: AVX is present (the caller's contract); writes only the registers it names.
    unsafe {
        core::arch::asm!(
            "vzeroall",
            out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _, out("ymm4") _,
            out("ymm5") _, out("ymm6") _, out("ymm7") _, out("ymm8") _, out("ymm9") _,
            out("ymm10") _, out("ymm11") _, out("ymm12") _, out("ymm13") _, out("ymm14") _,
            out("ymm15") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Zeroes rax, rcx, rdx, rsi, rdi and r8-r11 (and the flags).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
pub(super) fn clear_general() {
    // SAFETY: writes only the registers it names as outputs, and the flags; no memory.
    unsafe {
        core::arch::asm!(
            "xor eax, eax\nxor ecx, ecx\nxor edx, edx\nxor esi, esi\nxor edi, edi",
            "xor r8d, r8d\nxor r9d, r9d\nxor r10d, r10d\nxor r11d, r11d",
            out("rax") _, out("rcx") _, out("rdx") _, out("rsi") _, out("rdi") _, out("r8") _,
            out("r9") _, out("r10") _, out("r11") _,
            options(nomem, nostack),
        );
    }
}

/// Zeroes zmm0-zmm31 whole and the mask registers k1-k7, ending in the clean upper state.
///
/// # Safety
/// Only on a CPU with AVX-512F.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn clear_zmm() {
    // SAFETY: AVX-512F is present (the caller's contract); writes only the registers it
    // names (`vzeroall` zeroes zmm0-zmm15 whole).
    unsafe {
        core::arch::asm!(
            "vpxord zmm16, zmm16, zmm16\nvpxord zmm17, zmm17, zmm17",
            "vpxord zmm18, zmm18, zmm18\nvpxord zmm19, zmm19, zmm19",
            "vpxord zmm20, zmm20, zmm20\nvpxord zmm21, zmm21, zmm21",
            "vpxord zmm22, zmm22, zmm22\nvpxord zmm23, zmm23, zmm23",
            "vpxord zmm24, zmm24, zmm24\nvpxord zmm25, zmm25, zmm25",
            "vpxord zmm26, zmm26, zmm26\nvpxord zmm27, zmm27, zmm27",
            "vpxord zmm28, zmm28, zmm28\nvpxord zmm29, zmm29, zmm29",
            "vpxord zmm30, zmm30, zmm30\nvpxord zmm31, zmm31, zmm31",
            "kxorw k1, k1, k1\nkxorw k2, k2, k2\nkxorw k3, k3, k3\nkxorw k4, k4, k4",
            "kxorw k5, k5, k5\nkxorw k6, k6, k6\nkxorw k7, k7, k7",
            "vzeroall",
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _, out("zmm4") _,
            out("zmm5") _, out("zmm6") _, out("zmm7") _, out("zmm8") _, out("zmm9") _,
            out("zmm10") _, out("zmm11") _, out("zmm12") _, out("zmm13") _, out("zmm14") _,
            out("zmm15") _, out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _, out("zmm24") _,
            out("zmm25") _, out("zmm26") _, out("zmm27") _, out("zmm28") _, out("zmm29") _,
            out("zmm30") _, out("zmm31") _, out("k1") _, out("k2") _, out("k3") _, out("k4") _,
            out("k5") _, out("k6") _, out("k7") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// Clears all 32 SIMD registers whole and the caller-saved general registers x0-x17;
/// never x18 (the platform register Apple and Windows reserve). The block names each
/// register it writes, so the compiler saves the low halves of v8-v15, which AAPCS64
/// makes callee-saved (`asm_blocks_keep_callee_saved_registers`).
#[cfg(all(target_arch = "aarch64", not(miri)))]
#[inline(always)]
pub(super) fn clear_registers() {
    // SAFETY: writes only the registers it names as outputs; no memory, stack or flags.
    unsafe {
        core::arch::asm!(
            "movi v0.16b, #0\nmovi v1.16b, #0\nmovi v2.16b, #0\nmovi v3.16b, #0",
            "movi v4.16b, #0\nmovi v5.16b, #0\nmovi v6.16b, #0\nmovi v7.16b, #0",
            "movi v8.16b, #0\nmovi v9.16b, #0\nmovi v10.16b, #0\nmovi v11.16b, #0",
            "movi v12.16b, #0\nmovi v13.16b, #0\nmovi v14.16b, #0\nmovi v15.16b, #0",
            "movi v16.16b, #0\nmovi v17.16b, #0\nmovi v18.16b, #0\nmovi v19.16b, #0",
            "movi v20.16b, #0\nmovi v21.16b, #0\nmovi v22.16b, #0\nmovi v23.16b, #0",
            "movi v24.16b, #0\nmovi v25.16b, #0\nmovi v26.16b, #0\nmovi v27.16b, #0",
            "movi v28.16b, #0\nmovi v29.16b, #0\nmovi v30.16b, #0\nmovi v31.16b, #0",
            "mov x0, xzr\nmov x1, xzr\nmov x2, xzr\nmov x3, xzr\nmov x4, xzr",
            "mov x5, xzr\nmov x6, xzr\nmov x7, xzr\nmov x8, xzr\nmov x9, xzr",
            "mov x10, xzr\nmov x11, xzr\nmov x12, xzr\nmov x13, xzr\nmov x14, xzr",
            "mov x15, xzr\nmov x16, xzr\nmov x17, xzr",
            out("v0") _, out("v1") _, out("v2") _, out("v3") _, out("v4") _, out("v5") _,
            out("v6") _, out("v7") _, out("v8") _, out("v9") _, out("v10") _, out("v11") _,
            out("v12") _, out("v13") _, out("v14") _, out("v15") _, out("v16") _, out("v17") _,
            out("v18") _, out("v19") _, out("v20") _, out("v21") _, out("v22") _, out("v23") _,
            out("v24") _, out("v25") _, out("v26") _, out("v27") _, out("v28") _, out("v29") _,
            out("v30") _, out("v31") _, out("x0") _, out("x1") _, out("x2") _, out("x3") _,
            out("x4") _, out("x5") _, out("x6") _, out("x7") _, out("x8") _, out("x9") _,
            out("x10") _, out("x11") _, out("x12") _, out("x13") _, out("x14") _, out("x15") _,
            out("x16") _, out("x17") _,
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// No register clearing on other architectures and under Miri (docs/SECURITY.md).
#[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
#[inline(always)]
fn clear_registers() {}
