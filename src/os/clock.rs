//! The monotonic clock of the reseed schedule.

/// Nanoseconds on a monotonic clock. On Linux and Android `CLOCK_MONOTONIC_COARSE`: the
/// kernel's time as of the last tick (1 to 10 ms resolution, ample for a 60-second
/// interval), read from the vDSO without the time-stamp counter. Elsewhere
/// `std::time::Instant` since the first call; 0 on WebAssembly without an OS, where only the
/// byte budget schedules reseeds.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec`; `clock_gettime` writes only to it. It
    // cannot fail with a valid pointer; were it to, `ts` stays zero and the byte budget
    // still schedules reseeds.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// See the Linux version.
#[cfg(all(target_family = "wasm", any(target_os = "unknown", target_os = "none")))]
pub(crate) fn monotonic_ns() -> u64 {
    0
}

/// See the Linux version.
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))
)))]
pub(crate) fn monotonic_ns() -> u64 {
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(std::time::Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
