//! The x86-64 CPU features fkrng uses, from one pass of `CPUID` (its own module because
//! `no_std` builds need it, for the keystream kernels, as much as the OS layer does).

/// x86-64 features, as bits for [`has`]: AVX2 and AVX-512F count only when the OS saves
/// their registers (XCR0, read with `XGETBV`).
pub(crate) mod x86 {
    pub(crate) const AVX2: u8 = 1;
    pub(crate) const AVX512F: u8 = 2;
    pub(crate) const RDRAND: u8 = 4;
    pub(crate) const RDSEED: u8 = 8;
    /// Set with the others once the CPU has been asked.
    pub(super) const KNOWN: u8 = 0x80;
}

/// The bits of one pass of `CPUID` (two leaves: each `CPUID` exits to a hypervisor), or 0
/// before it. Relaxed: every thread that asks stores the same byte.
static FEATURES: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// Whether this CPU has every feature in `bits` ([`x86`]); asks it at the first call.
/// Under Miri, which emulates none, never.
#[inline]
pub(crate) fn has(bits: u8) -> bool {
    use core::sync::atomic::Ordering::Relaxed;
    let mut known = FEATURES.load(Relaxed);
    if known == 0 {
        known = detect();
        FEATURES.store(known, Relaxed);
    }
    known & bits == bits
}

/// The [`x86`] bits of this CPU, with `KNOWN`: `CPUID` leaf 1, then, where the CPU has
/// XSAVE, leaf 7 and (where the OS enabled XSAVE) `XGETBV`.
#[cold]
fn detect() -> u8 {
    use core::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
    if cfg!(miri) {
        return x86::KNOWN;
    }
    // SAFETY: `CPUID` exists on every x86-64 CPU and writes only its result registers
    // (a safe function in newer compilers, `unsafe` in those `rust-version` allows).
    #[allow(unused_unsafe)]
    let leaf1 = unsafe { __cpuid(1) };
    let (xsave, osxsave) = (leaf1.ecx & 1 << 26 != 0, leaf1.ecx & 1 << 27 != 0);
    // A query above the highest basic leaf returns another leaf's words (Intel SDM vol. 2A,
    // `CPUID`). XSAVE (leaf 1 ECX bit 26) is enumerated by leaf 0Dh, so a CPU with it has
    // leaf 7, without the `CPUID` of leaf 0 (a hypervisor exit); RDSEED, AVX2 and AVX-512F
    // came after XSAVE.
    // SAFETY: as above.
    #[allow(unused_unsafe)]
    let leaf7_ebx = if xsave {
        unsafe { __cpuid_count(7, 0).ebx }
    } else {
        0
    };
    // XCR0 is readable once the OS has enabled XSAVE (OSXSAVE, leaf 1 ECX bit 27).
    let xcr0 = if xsave && osxsave {
        // SAFETY: XSAVE is enabled (checked above), so `XGETBV` with ECX = 0 does not fault.
        unsafe { _xgetbv(0) }
    } else {
        0
    };
    features(leaf1.ecx, leaf7_ebx, xcr0)
}

/// The [`x86`] bits, with `KNOWN`, of leaf 1's ECX, leaf 7's EBX (0 where the CPU has no leaf
/// 7) and XCR0. Bit positions: Intel SDM vol. 2A, `CPUID`.
fn features(leaf1_ecx: u32, leaf7_ebx: u32, xcr0: u64) -> u8 {
    let bit = |word: u32, n: u32| word & (1 << n) != 0;
    // AVX2: leaf 7 EBX bit 5 with AVX (leaf 1 ECX bit 28) and the YMM state (XCR0 bits 1-2);
    // AVX-512F: leaf 7 EBX bit 16 with the ZMM state (bits 1-2, 5-7); RDRAND: leaf 1 ECX
    // bit 30; RDSEED: leaf 7 EBX bit 18.
    let avx2 = xcr0 & 0b110 == 0b110 && bit(leaf1_ecx, 28) && bit(leaf7_ebx, 5);
    let avx512f = xcr0 & 0b1110_0110 == 0b1110_0110 && bit(leaf7_ebx, 16);
    [
        (avx2, x86::AVX2),
        (avx512f, x86::AVX512F),
        (bit(leaf1_ecx, 30), x86::RDRAND),
        (bit(leaf7_ebx, 18), x86::RDSEED),
    ]
    .into_iter()
    .filter(|&(present, _)| present)
    .fold(x86::KNOWN, |known, (_, feature)| known | feature)
}

#[cfg(test)]
mod tests {
    /// Each feature as the standard library's detection reports it, alone and in pairs.
    #[cfg(not(miri))]
    #[test]
    fn features_agree_with_std() {
        use super::{has, x86};
        let std = [
            (x86::AVX2, std::arch::is_x86_feature_detected!("avx2")),
            (x86::AVX512F, std::arch::is_x86_feature_detected!("avx512f")),
            (x86::RDRAND, std::arch::is_x86_feature_detected!("rdrand")),
            (x86::RDSEED, std::arch::is_x86_feature_detected!("rdseed")),
        ];
        for (a, has_a) in std {
            assert_eq!(has(a), has_a, "feature bit {a}");
            for (b, has_b) in std {
                assert_eq!(has(a | b), has_a && has_b, "feature bits {a} and {b}");
            }
        }
    }

    /// Each bit from its own word, and nothing from leaf 7 when `detect` passes 0 for it (a
    /// CPU without XSAVE, which may have no leaf 7).
    #[test]
    fn features_come_from_their_bits() {
        use super::{features, x86};
        let (avx, rdrand) = (1 << 28, 1 << 30);
        let (avx2, avx512f, rdseed) = (1 << 5, 1 << 16, 1 << 18);
        let all = x86::KNOWN | x86::AVX2 | x86::AVX512F | x86::RDRAND | x86::RDSEED;
        assert_eq!(features(avx | rdrand, avx2 | avx512f | rdseed, 0xe6), all);
        assert_eq!(features(avx | rdrand, 0, 0xe6), x86::KNOWN | x86::RDRAND);
        assert_eq!(features(0, rdseed, 0), x86::KNOWN | x86::RDSEED);
        // The register state the OS saves: YMM alone keeps AVX-512F out, none keeps AVX2 out.
        assert_eq!(features(avx, avx2 | avx512f, 0b110), x86::KNOWN | x86::AVX2);
        assert_eq!(features(avx, avx2 | avx512f, 0), x86::KNOWN);
        assert_eq!(features(0, avx2, 0b110), x86::KNOWN);
    }
}
