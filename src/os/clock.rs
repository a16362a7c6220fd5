//! The monotonic clock of the reseed schedule, in nanoseconds: Linux's
//! `CLOCK_MONOTONIC_COARSE` (ms resolution), else `Instant` since the first call; 0 on
//! WebAssembly without an OS (only bytes then reseed).

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
