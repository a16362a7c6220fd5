//! Material that differs between two clones of one VM snapshot whatever their kernels give:
//! mixed into a thread's key at every (re)seed, with the CPU's random number generator on
//! top at the reseeds a snapshot restore or [`crate::reseed_all`] triggers.
//!
//! Two clones restored from one snapshot run kernels whose generators hold the same state
//! until each kernel reseeds itself (vmgenid's notification comes later, from an ACPI event;
//! the VMClock driver does not touch the kernel's generator; a guest without either waits
//! for the kernel's next scheduled reseed), so the 32 bytes `S` that `getrandom` gives each
//! clone right after the restore can be the same, and so would the reseeded keys `K ⊕ S`.
//! Mixing in a value `D` that differs between the clones makes their keys differ:
//!
//! - a cycle counter (the time-stamp counter on x86-64, the virtual counter `CNTVCT_EL0` on
//!   AArch64) and the monotonic and real-time clocks in nanoseconds: clones resumed at
//!   different instants read different values, cheaply (tens of nanoseconds), at every
//!   seed;
//! - at restore and `reseed_all` reseeds, three 64-bit words from the CPU's generator where
//!   it has one: `RDSEED` (bounded retries), else `RDRAND` (bounded retries) on x86-64, and
//!   `RNDR` on AArch64 with FEAT_RNG. They differ between clones even when both resume at
//!   the same instant, and cost about a microsecond, so they are kept to those reseeds.
//!
//! The key becomes `K ⊕ S ⊕ D`. `D` is computed from the CPU and clocks alone, never from
//! `K` or `S`, so it is independent of them, and XOR with an independent value cannot make
//! the key easier to guess than `K ⊕ S` was: whatever `D` is, each value of `K ⊕ S` maps to
//! exactly one key. (A CPU that could choose `D` by reading `K ⊕ S` from memory could read
//! the key itself.) A `D` of all zeros (no counter, no CPU generator) leaves `K ⊕ S`.

use crate::generator::KEY_LEN;

/// Writes the diversifier into `d`: the counter and clocks always, and with `cpu_rng` the
/// CPU generator's words where the CPU has one (left zero where it has none, or where it
/// kept failing within the retry bound).
pub(crate) fn diversifier(d: &mut [u8; KEY_LEN], cpu_rng: bool) {
    d.fill(0);
    d[..8].copy_from_slice(&cycle_counter().to_le_bytes());
    d[8..16].copy_from_slice(&clocks().to_le_bytes());
    if cpu_rng {
        // Three words, the first over the clocks' (XOR keeps both). The CPU's words become
        // key material: the one copy made here is wiped.
        for chunk in d[8..].chunks_exact_mut(8) {
            let mut word = cpu_random_word().unwrap_or(0).to_le_bytes();
            for (b, w) in chunk.iter_mut().zip(&word) {
                *b ^= w;
            }
            zeroize::Zeroize::zeroize(&mut word);
        }
    }
    #[cfg(test)]
    LAST.set(*d);
}

#[cfg(test)]
std::thread_local! {
    /// The last diversifier made on this thread, for the unit tests that check a reseeded
    /// key exactly (`K ⊕ S ⊕ D`).
    pub(crate) static LAST: core::cell::Cell<[u8; KEY_LEN]> =
        const { core::cell::Cell::new([0; KEY_LEN]) };
}

/// The monotonic and real-time clocks in nanoseconds, combined (0 where there is no
/// clock).
fn clocks() -> u64 {
    #[cfg(all(unix, not(miri)))]
    {
        let read = |clock| {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid, writable `timespec`; on failure it stays zero.
            unsafe { libc::clock_gettime(clock, &mut ts) };
            (ts.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(ts.tv_nsec as u64)
        };
        read(libc::CLOCK_MONOTONIC) ^ read(libc::CLOCK_REALTIME).rotate_left(32)
    }
    #[cfg(not(all(unix, not(miri))))]
    {
        0
    }
}

/// The CPU's cycle counter, or 0 where none is read.
fn cycle_counter() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: `rdtsc` exists on every x86-64 CPU and has no preconditions.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let v: u64;
        // SAFETY: reads the virtual counter, which Linux and Android make readable at EL0;
        // no memory is touched.
        unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) v, options(nomem, nostack)) };
        v
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", not(miri)),
        all(target_arch = "aarch64", not(miri))
    )))]
    {
        0
    }
}

/// Attempts of `RDSEED`, `RDRAND` or `RNDR` before giving up on a word. Intel documents that
/// `RDRAND` failing ten times in a row means a broken CPU; `RDSEED` fails more often under
/// load, and then `RDRAND` is tried.
#[cfg(any(
    all(target_arch = "x86_64", not(miri)),
    all(
        target_arch = "aarch64",
        not(miri),
        any(target_os = "linux", target_os = "android")
    )
))]
const RETRIES: usize = 10;

#[cfg(all(target_arch = "x86_64", not(miri)))]
cpufeatures::new!(has_rdrand, "rdrand");
#[cfg(all(target_arch = "x86_64", not(miri)))]
cpufeatures::new!(has_rdseed, "rdseed");

/// One 64-bit word from the CPU's generator, if it has one that answered.
fn cpu_random_word() -> Option<u64> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if has_rdseed::get() {
            for _ in 0..RETRIES {
                let mut v = 0u64;
                // SAFETY: the CPU has RDSEED (checked above); `v` is a valid out-pointer.
                if unsafe { rdseed(&mut v) } == 1 {
                    return Some(v);
                }
            }
        }
        if has_rdrand::get() {
            for _ in 0..RETRIES {
                let mut v = 0u64;
                // SAFETY: the CPU has RDRAND (checked above); `v` is a valid out-pointer.
                if unsafe { rdrand(&mut v) } == 1 {
                    return Some(v);
                }
            }
        }
        None
    }
    #[cfg(all(
        target_arch = "aarch64",
        not(miri),
        any(target_os = "linux", target_os = "android")
    ))]
    {
        if !std::arch::is_aarch64_feature_detected!("rand") {
            return None;
        }
        for _ in 0..RETRIES {
            let v: u64;
            let failed: u64;
            // SAFETY: the CPU has FEAT_RNG (checked above), which makes RNDR readable at
            // EL0; it sets NZCV.Z on failure. No memory is touched.
            unsafe {
                core::arch::asm!(
                    "mrs {v}, s3_3_c2_c4_0",
                    "cset {f}, eq",
                    v = out(reg) v,
                    f = out(reg) failed,
                    options(nomem, nostack),
                )
            };
            if failed == 0 {
                return Some(v);
            }
        }
        None
    }
    #[cfg(not(any(
        all(target_arch = "x86_64", not(miri)),
        all(
            target_arch = "aarch64",
            not(miri),
            any(target_os = "linux", target_os = "android")
        )
    )))]
    {
        None
    }
}

/// `RDSEED` for one 64-bit word: 1 on success. (Callable only where the CPU has
/// RDSEED, which makes the call `unsafe` outside code compiled for it.)
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "rdseed")]
fn rdseed(v: &mut u64) -> i32 {
    // Newer compilers let this function call the intrinsic without `unsafe`; Rust 1.89, the
    // minimum version, requires the block.
    #[allow(unused_unsafe)]
    // SAFETY: this function is compiled for the feature the intrinsic needs; `v` is a valid
    // out-pointer.
    unsafe {
        core::arch::x86_64::_rdseed64_step(v)
    }
}

/// `RDRAND` for one 64-bit word: 1 on success. (Callable only where the CPU has
/// RDRAND, which makes the call `unsafe` outside code compiled for it.)
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "rdrand")]
fn rdrand(v: &mut u64) -> i32 {
    // Newer compilers let this function call the intrinsic without `unsafe`; Rust 1.89, the
    // minimum version, requires the block.
    #[allow(unused_unsafe)]
    // SAFETY: this function is compiled for the feature the intrinsic needs; `v` is a valid
    // out-pointer.
    unsafe {
        core::arch::x86_64::_rdrand64_step(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter part differs from call to call, and the CPU part is present exactly where
    /// the CPU has a generator. (Miri reads no counter, clock or CPU generator: there `D` is
    /// zero.)
    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri has no cycle counter, clock or CPU generator here"
    )]
    fn diversifiers_differ_between_calls() {
        let mut a = [0u8; KEY_LEN];
        let mut b = [0u8; KEY_LEN];
        diversifier(&mut a, false);
        diversifier(&mut b, false);
        assert_ne!(a[..16], b[..16], "the counter and clocks moved");
        assert_eq!(a[16..], [0u8; 16], "no CPU words without cpu_rng");
        assert_ne!(a[..16], [0u8; 16], "a counter and clocks were read");
        diversifier(&mut a, true);
        diversifier(&mut b, true);
        if cpu_random_word().is_some() {
            assert_ne!(a[16..], b[16..], "two draws of the CPU generator");
            assert_ne!(a[16..], [0u8; 16]);
        }
    }
}
