//! What the CPU gives the diversifier ([`crate::lifecycle::diversifier`]): its cycle counter
//! and words of its random-number generator, read directly (no system call).

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

#[cfg(all(target_arch = "x86_64", not(miri)))]
use crate::cpuid::{has, x86};

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
