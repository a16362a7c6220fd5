//! What the CPU gives: to the diversifier ([`crate::lifecycle::diversifier`]) its cycle
//! counter and words of its random-number generator, read directly (no system call); to the
//! keystream paths, its x86-64 features ([`has`]).

/// The CPU's cycle counter (x86-64 `RDTSC`, AArch64 `CNTVCT_EL0`), or 0 where none is read.
pub(crate) fn cycle_counter() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `rdtsc` exists on every x86-64 CPU and has no preconditions.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let v: u64;
        // SAFETY: reads the virtual counter (readable at EL0); no memory is touched.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack)) };
        v
    }
    #[cfg(any(not(any(target_arch = "x86_64", target_arch = "aarch64")), miri))]
    0
}

/// x86-64 features, as bits for [`has`]: AVX2 and AVX-512F count only when the OS saves
/// their registers (XCR0, read with `XGETBV`).
#[cfg(target_arch = "x86_64")]
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
#[cfg(target_arch = "x86_64")]
static FEATURES: core::sync::atomic::AtomicU8 = core::sync::atomic::AtomicU8::new(0);

/// Whether this CPU has every feature in `bits` ([`x86`]); asks it at the first call.
/// Under Miri, which emulates none, never.
#[cfg(target_arch = "x86_64")]
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

/// The [`x86`] bits of this CPU, with `KNOWN`. Bit positions: Intel SDM vol. 2A, `CPUID`
/// (leaf 7 is read without checking the highest leaf, as `cpufeatures` and `chacha20` do).
#[cfg(target_arch = "x86_64")]
#[cold]
fn detect() -> u8 {
    use core::arch::x86_64::{__cpuid, __cpuid_count, _xgetbv};
    if cfg!(miri) {
        return x86::KNOWN;
    }
    let bit = |word: u32, n: u32| word & (1 << n) != 0;
    // SAFETY: `CPUID` exists on every x86-64 CPU and writes only its result registers
    // (a safe function in newer compilers, `unsafe` in those `rust-version` allows).
    #[allow(unused_unsafe)]
    let (leaf1, leaf7) = unsafe { (__cpuid(1), __cpuid_count(7, 0)) };
    // XCR0 is readable once the OS has enabled XSAVE (leaf 1 ECX: XSAVE bit 26, OSXSAVE 27).
    let xcr0 = if bit(leaf1.ecx, 26) && bit(leaf1.ecx, 27) {
        // SAFETY: XSAVE is enabled (checked above), so `XGETBV` with ECX = 0 does not fault.
        unsafe { _xgetbv(0) }
    } else {
        0
    };
    // AVX2: leaf 7 EBX bit 5 with AVX (leaf 1 ECX bit 28) and the YMM state (XCR0 bits 1-2);
    // AVX-512F: leaf 7 EBX bit 16 with the ZMM state (bits 1-2, 5-7); RDRAND: leaf 1 ECX
    // bit 30; RDSEED: leaf 7 EBX bit 18.
    let avx2 = xcr0 & 0b110 == 0b110 && bit(leaf1.ecx, 28) && bit(leaf7.ebx, 5);
    let avx512f = xcr0 & 0b1110_0110 == 0b1110_0110 && bit(leaf7.ebx, 16);
    [
        (avx2, x86::AVX2),
        (avx512f, x86::AVX512F),
        (bit(leaf1.ecx, 30), x86::RDRAND),
        (bit(leaf7.ebx, 18), x86::RDSEED),
    ]
    .into_iter()
    .filter(|&(present, _)| present)
    .fold(x86::KNOWN, |known, (_, feature)| known | feature)
}

/// Tries per word of the CPU's generator (Intel: ten `RDRAND` failures mean a broken CPU).
const RETRIES: usize = 10;

/// A word from x86-64 `RDSEED`, else `RDRAND`, or AArch64 `RNDR` (Linux and Android);
/// `None` where there is none or it kept failing.
pub(crate) fn random_word() -> Option<u64> {
    #[allow(unused_variables)] // where the CPU has no generator
    let retry = |step: &dyn Fn(&mut u64) -> bool| {
        (0..RETRIES).find_map(|_| {
            let mut v = 0u64;
            step(&mut v).then_some(v)
        })
    };
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if has(x86::RDSEED) || has(x86::RDRAND) {
        use core::arch::x86_64::{_rdrand64_step, _rdseed64_step};
        // SAFETY: the CPU has RDSEED (checked first); `v` is a valid out-pointer.
        let rdseed = |v: &mut u64| has(x86::RDSEED) && unsafe { _rdseed64_step(v) } == 1;
        // SAFETY: the CPU has RDRAND (checked first); `v` is a valid out-pointer.
        let rdrand = |v: &mut u64| has(x86::RDRAND) && unsafe { _rdrand64_step(v) } == 1;
        return retry(&rdseed).or_else(|| retry(&rdrand));
    }
    #[cfg(all(
        target_arch = "aarch64",
        not(miri),
        any(target_os = "linux", target_os = "android")
    ))]
    if std::arch::is_aarch64_feature_detected!("rand") {
        return retry(&|v: &mut u64| {
            let failed: u64;
            // SAFETY: the CPU has FEAT_RNG (checked above), which makes RNDR readable at
            // EL0; it sets NZCV.Z on failure. No memory is touched.
            unsafe {
                core::arch::asm!("mrs {v}, s3_3_c2_c4_0", "cset {f}, eq", v = out(reg) *v,
                    f = out(reg) failed, options(nomem, nostack))
            };
            failed == 0
        });
    }
    None
}

#[cfg(test)]
mod tests {
    /// Each feature as the standard library's detection reports it, alone and in pairs.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
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
}
