//! The monotonic clock of the reseed schedule, in nanoseconds: Linux's
//! `CLOCK_MONOTONIC_COARSE` (ms resolution), else `Instant` since the first call; 0 on
//! WebAssembly without an OS (only bytes then reseed). And the clocks the diversifier mixes in.

cfg_if::cfg_if! {
    if #[cfg(any(target_os = "linux", target_os = "android"))] {
        pub(crate) fn monotonic_ns() -> u64 {
            // SAFETY: `timespec` is plain data, valid all-zero.
            let mut ts: libc::timespec = unsafe { core::mem::zeroed() };
            // SAFETY: writes only to `ts`, zero on failure (then only the byte budget reseeds).
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
            let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
            let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
            secs.saturating_mul(1_000_000_000).saturating_add(nanos)
        }
    } else if #[cfg(all(target_family = "wasm", any(target_os = "unknown", target_os = "none")))] {
        pub(crate) fn monotonic_ns() -> u64 {
            0
        }
    } else {
        pub(crate) fn monotonic_ns() -> u64 {
            static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            let base = *BASE.get_or_init(std::time::Instant::now);
            u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
        }
    }
}

/// The monotonic and real-time clocks in nanoseconds, combined (0 where there are none).
pub(crate) fn clocks() -> u64 {
    #[cfg(all(any(unix, target_os = "wasi"), not(miri)))]
    {
        let read = |clock| {
            // SAFETY: `timespec` is plain data, valid all-zero.
            let mut ts: libc::timespec = unsafe { core::mem::zeroed() };
            // SAFETY: writes only to `ts`, which stays zero on failure.
            unsafe { libc::clock_gettime(clock, &mut ts) };
            (ts.tv_sec as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(ts.tv_nsec as u64)
        };
        read(libc::CLOCK_MONOTONIC) ^ read(libc::CLOCK_REALTIME).rotate_left(32)
    }
    #[cfg(not(all(any(unix, target_os = "wasi"), not(miri))))]
    0
}
