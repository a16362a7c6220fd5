//! The reseed schedule: fresh OS bytes are mixed into a thread's key once its byte budget
//! (1 to 2 MiB) is spent or 60 s have passed, checked only when keystream is made.

/// Lower end of the reseed byte budget: 1 MiB of output since the last (re)seed. Each
/// (re)seed draws its budget uniformly from [`RESEED_MIN_BYTES`, 2 × `RESEED_MIN_BYTES`)
/// bytes, and the reseed comes at the first refill or direct fill past it.
pub const RESEED_MIN_BYTES: u64 = 1 << 20;
/// Time after which a thread reseeds at its next refill, in nanoseconds: 60 s (the Linux crng's).
pub const RESEED_INTERVAL_NS: u64 = 60 * 1_000_000_000;

/// A monotonic clock in nanoseconds, injectable for tests.
pub(crate) trait Clock {
    fn now_ns(&self) -> u64;
}

/// The monotonic clock the 60-second reseed check reads, once per refill.
pub(crate) struct Monotonic;

impl Clock for Monotonic {
    #[inline]
    fn now_ns(&self) -> u64 {
        crate::os::clock::monotonic_ns()
    }
}

/// When the current key came from the OS and how much output it may produce. All-zero
/// means "never seeded", as a wiped-on-fork page reads.
#[repr(C)]
#[derive(Default)]
pub(crate) struct Lifecycle {
    pub(crate) seeded: bool,
    /// The [`crate::lifecycle::checks::Checks::epoch`] value at the last (re)seed.
    pub(crate) epoch: u64,
    /// Keystream bytes produced since the last (re)seed.
    pub(crate) produced: u64,
    /// Reseed once `produced` reaches this: uniform in [1 MiB, 2 MiB).
    pub(crate) budget: u64,
    /// [`Clock::now_ns`] at the last (re)seed.
    pub(crate) seeded_at_ns: u64,
    /// The VM generation counter ([`crate::lifecycle::snapshot::generation`]) at the last (re)seed.
    pub(crate) generation: u64,
}

impl Lifecycle {
    /// Whether a reseed is due: the byte budget is spent, 60 seconds have passed, or the clock
    /// reads earlier than at the last seed (a checkpoint restored on another host: maybe twice).
    pub(crate) fn due(&self, now_ns: u64) -> bool {
        self.produced >= self.budget
            || now_ns < self.seeded_at_ns
            || now_ns - self.seeded_at_ns >= RESEED_INTERVAL_NS
    }

    /// Starts a new budget (from the 32-bit `draw`) and interval at `now_ns`, after a (re)seed.
    pub(crate) fn restart(&mut self, draw: u32, now_ns: u64) {
        self.produced = 0;
        self.budget = RESEED_MIN_BYTES + (u64::from(draw) & (RESEED_MIN_BYTES - 1));
        self.seeded_at_ns = now_ns;
    }
}
