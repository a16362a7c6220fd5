//! The reseed schedule: a thread's key is replaced with fresh OS bytes (mixed in) once its
//! random byte budget (1 to 2 MiB of keystream) is spent or 60 seconds have passed, checked
//! only when keystream is made (a refill or a direct fill), never on the small-read path.

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))
)))]
use std::sync::OnceLock;
#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))
)))]
use std::time::Instant;

/// Lower end of the reseed byte budget: 1 MiB of output since the last (re)seed. Each
/// (re)seed draws its budget uniformly from [`RESEED_MIN_BYTES`, 2 × `RESEED_MIN_BYTES`)
/// bytes, and the reseed comes at the first refill or direct fill past it.
pub const RESEED_MIN_BYTES: u64 = 1 << 20;
/// Time after which a thread reseeds at its next refill: 60 seconds (the Linux kernel's
/// crng reseed interval), in nanoseconds.
pub const RESEED_INTERVAL_NS: u64 = 60 * 1_000_000_000;

/// A monotonic clock in nanoseconds, injectable for tests.
pub(super) trait Clock {
    fn now_ns(&self) -> u64;
}

/// The monotonic clock the 60-second reseed check reads, once per refill.
///
/// On Linux and Android this is `CLOCK_MONOTONIC_COARSE`: the kernel's timekeeping as of
/// the last timer tick (a resolution of 1 to 10 milliseconds, ample for a 60-second
/// interval), read from the vDSO data page without reading the CPU's time-stamp counter,
/// which makes it cheaper than `CLOCK_MONOTONIC` (docs/BENCHMARKS.md gives the figures).
/// Elsewhere it is `std::time::Instant`, counted from the first call in the process; on
/// WebAssembly without an OS (`wasm32-unknown-unknown`, where `Instant::now` panics) there is
/// no clock, it reads 0, and the byte budget alone schedules reseeds.
pub(super) struct Monotonic;

impl Clock for Monotonic {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn now_ns(&self) -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable `timespec`; `clock_gettime` writes only to it.
        // The coarse monotonic clock exists since Linux 2.6.32 and cannot fail with a valid
        // pointer; were it to, `ts` stays zero and the check falls back on the byte budget.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
        secs.saturating_mul(1_000_000_000).saturating_add(nanos)
    }

    #[cfg(all(target_family = "wasm", any(target_os = "unknown", target_os = "none")))]
    fn now_ns(&self) -> u64 {
        0
    }

    #[cfg(not(any(
        target_os = "linux",
        target_os = "android",
        all(target_family = "wasm", any(target_os = "unknown", target_os = "none"))
    )))]
    fn now_ns(&self) -> u64 {
        static BASE: OnceLock<Instant> = OnceLock::new();
        let base = *BASE.get_or_init(Instant::now);
        u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// When the current key came from the OS and how much output it may produce.
///
/// All-zero means "never seeded", which is what a wiped-on-fork page reads as.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Lifecycle {
    pub(crate) seeded: bool,
    /// The [`crate::fork::EPOCH`] value at the last (re)seed.
    pub(crate) epoch: u64,
    /// Keystream bytes produced since the last (re)seed.
    pub(crate) produced: u64,
    /// Reseed once `produced` reaches this: uniform in [1 MiB, 2 MiB).
    pub(crate) budget: u64,
    /// [`Clock::now_ns`] at the last (re)seed.
    pub(crate) seeded_at_ns: u64,
    /// The VM generation counter ([`crate::snapshot::generation`]) at the last (re)seed.
    pub(crate) generation: u64,
}

impl Lifecycle {
    /// Whether a reseed is due: the byte budget is spent, 60 seconds have passed, or the
    /// monotonic clock reads earlier than at the last seed, which it only does when the
    /// process was moved to another machine or restored from a snapshot (a checkpoint
    /// restored on another host), where the state may exist twice.
    pub(super) fn due(&self, now_ns: u64) -> bool {
        self.produced >= self.budget
            || now_ns < self.seeded_at_ns
            || now_ns - self.seeded_at_ns >= RESEED_INTERVAL_NS
    }
}

impl Lifecycle {
    /// Starts a new budget (from the 32-bit `draw`) and interval at `now_ns`, after a
    /// (re)seed.
    pub(super) fn restart(&mut self, draw: u32, now_ns: u64) {
        self.produced = 0;
        self.budget = RESEED_MIN_BYTES + (u64::from(draw) & (RESEED_MIN_BYTES - 1));
        self.seeded_at_ns = now_ns;
    }
}
