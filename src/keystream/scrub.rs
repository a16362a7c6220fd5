//! Erasing what a keystream computation leaves behind, on every path and profile. Contract:
//! once the computation [`below`] runs returns (its key-derived values held in registers and
//! in never-inlined callees' frames below the caller), the vector and caller-saved general
//! registers are cleared (x86-64) and [`SCRUB_BYTES`] below the caller zeroed, in a
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
/// registers whole with AVX (`vzeroall`), else the 16 SSE registers) and the caller-saved
/// general registers, which the computation may have left holding key-derived words. Each
/// block declares the C ABI's caller-saved registers clobbered, a superset of what it writes.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[inline(always)]
fn clear_registers() {
    // SAFETY: each block only writes caller-saved registers, declared clobbered; the
    // AVX-512 and AVX forms run only where CPUID reported those features.
    unsafe {
        if super::avx512::detected() {
            clear_zmm();
        } else if cpuid_avx::get() {
            core::arch::asm!(
                "vzeroall",
                clobber_abi("C"),
                options(nomem, nostack, preserves_flags)
            );
        } else {
            core::arch::asm!(
                "pxor xmm0, xmm0\npxor xmm1, xmm1\npxor xmm2, xmm2\npxor xmm3, xmm3",
                "pxor xmm4, xmm4\npxor xmm5, xmm5\npxor xmm6, xmm6\npxor xmm7, xmm7",
                "pxor xmm8, xmm8\npxor xmm9, xmm9\npxor xmm10, xmm10\npxor xmm11, xmm11",
                "pxor xmm12, xmm12\npxor xmm13, xmm13\npxor xmm14, xmm14\npxor xmm15, xmm15",
                clobber_abi("C"),
                options(nomem, nostack, preserves_flags),
            );
        }
        core::arch::asm!(
            "xor eax, eax\nxor ecx, ecx\nxor edx, edx\nxor esi, esi\nxor edi, edi",
            "xor r8d, r8d\nxor r9d, r9d\nxor r10d, r10d\nxor r11d, r11d",
            clobber_abi("C"),
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
    // SAFETY: AVX-512F is present (the caller's contract); caller-saved registers only.
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
            clobber_abi("C"),
            options(nomem, nostack, preserves_flags),
        );
    }
}

/// No register clearing on other architectures (on AArch64 with NEON the assembly kernel
/// runs instead) and under Miri (docs/SECURITY.md).
#[cfg(any(not(target_arch = "x86_64"), miri))]
#[inline(always)]
fn clear_registers() {}
