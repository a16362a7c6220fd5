//! The thread-local generator: one fast-key-erasure state per OS thread, seeded lazily from
//! the OS, reseeded periodically, after `fork` and on demand, and served without a system
//! call, a lock, an atomic read-modify-write or a heap allocation on the small-read path.
//!
//! The thread-local slot holds only a pointer ([`STATE`]); the state itself lives in pages
//! from [`crate::fork::Pages`] (wipe-on-fork and do-not-dump on Linux). A second thread-local
//! ([`OWNER`]) owns those pages and, when the thread exits, wipes the state, unmaps it and
//! marks the slot torn down, so that reads from later thread-local destructors take
//! [`fresh_from_os`].

use crate::Error;
use crate::entropy::{Entropy, Os};
use crate::fork::{self, Pages};
use crate::generator::{Core, KEY_LEN};
use crate::probe::{self, OneOff};
use crate::snapshot;
use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering, compiler_fence};
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use std::sync::OnceLock;
#[cfg(not(any(target_os = "linux", target_os = "android")))]
use std::time::Instant;
use zeroize::Zeroize;

/// Lower end of the reseed byte budget: 1 MiB of output since the last (re)seed.
pub const RESEED_MIN_BYTES: u64 = 1 << 20;
/// Time after which a thread reseeds at its next refill: 60 seconds (the Linux kernel's
/// crng reseed interval), in nanoseconds.
pub const RESEED_INTERVAL_NS: u64 = 60 * 1_000_000_000;

/// A monotonic clock in nanoseconds, injectable for tests.
pub(crate) trait Clock {
    fn now_ns(&self) -> u64;
}

/// The monotonic clock the 60-second reseed check reads, once per refill.
///
/// On Linux and Android this is `CLOCK_MONOTONIC_COARSE`: the kernel's timekeeping as of
/// the last timer tick (a resolution of 1 to 10 milliseconds, ample for a 60-second
/// interval), read from the vDSO data page without reading the CPU's time-stamp counter,
/// about a fifth of the cost of `CLOCK_MONOTONIC` (6 against 28 nanoseconds measured here).
/// Elsewhere it is `std::time::Instant`, counted from the first call in the process.
pub(crate) struct Monotonic;

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

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
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
struct Lifecycle {
    seeded: bool,
    /// The [`fork::EPOCH`] value at the last (re)seed.
    epoch: u64,
    /// Keystream bytes produced since the last (re)seed.
    produced: u64,
    /// Reseed once `produced` reaches this: uniform in [1 MiB, 2 MiB).
    budget: u64,
    /// [`Clock::now_ns`] at the last (re)seed.
    seeded_at_ns: u64,
    /// The VM generation counter ([`snapshot::generation`]) at the last (re)seed.
    generation: u64,
}

impl Lifecycle {
    /// Whether a reseed is due: the byte budget is spent, 60 seconds have passed, or the
    /// monotonic clock reads earlier than at the last seed, which it only does when the
    /// process was moved to another machine or restored from a snapshot (a checkpoint
    /// restored on another host), where the state may exist twice.
    fn due(&self, now_ns: u64) -> bool {
        self.produced >= self.budget
            || now_ns < self.seeded_at_ns
            || now_ns - self.seeded_at_ns >= RESEED_INTERVAL_NS
    }
}

/// One thread's generator. Valid when all-zero (empty and unseeded).
#[repr(C)]
pub(crate) struct ThreadState {
    core: Core,
    life: Lifecycle,
}

/// What a thread's state pages hold: the generator and its re-entrancy flag, which is kept
/// outside the generator so that checking it never reads memory that a `&mut ThreadState`
/// covers. Valid when all-zero.
#[repr(C)]
pub(crate) struct Slot {
    /// Set while a read runs on this thread (see [`enter`]).
    busy: AtomicBool,
    state: ThreadState,
}

impl ThreadState {
    #[cfg(test)]
    fn zeroed() -> Box<Self> {
        Box::new(ThreadState {
            core: Core::new([0; KEY_LEN]),
            life: Lifecycle::default(),
        })
    }

    /// The small-read fast path: a length check, one relaxed atomic load of the epoch, two
    /// loads of the VM generation counter (its address, its value), a copy and a zeroing.
    #[inline(always)]
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        if dest.len() <= self.core.available()
            && self.life.epoch == fork::epoch()
            && self.life.generation == snapshot::generation()
        {
            self.core.serve(dest);
            Ok(())
        } else {
            self.fill_slow(dest, &mut Os, &Monotonic)
        }
    }

    /// Seeds or reseeds if the state is unseeded, from an older epoch (fork, `reseed_all`) or
    /// from another VM generation (snapshot restore), then fills, reseeding periodically
    /// before a refill or direct fill.
    #[cold]
    #[inline(never)]
    fn fill_slow(
        &mut self,
        dest: &mut [u8],
        os: &mut impl Entropy,
        clock: &impl Clock,
    ) -> Result<(), Error> {
        if dest.is_empty() {
            // Nothing to produce: no (re)seed, so no OS read and no OS error.
            return Ok(());
        }
        let restored = self.life.seeded && self.life.generation != snapshot::generation();
        if !self.life.seeded || self.life.epoch != fork::epoch() || restored {
            // Strict: no output from an unseeded, inherited or restored key.
            self.reseed(os, clock)?;
            if restored {
                probe::count_snapshot_reseed();
            }
        }
        let Self { core, life, .. } = self;
        core.fill_with(dest, |core, bytes| {
            let now = clock.now_ns();
            if life.due(now) {
                // A failed periodic reseed keeps the (still secret) key; the next refill
                // tries again.
                let mut s = [0u8; KEY_LEN];
                if let Ok(draw) = os.seed(&mut s) {
                    core.mix_key(&s);
                    life.restart(draw, now);
                }
                s.zeroize();
            }
            life.produced = life.produced.saturating_add(bytes as u64);
            Ok::<(), Error>(())
        })
    }

    /// `K = K XOR S` with 32 fresh OS bytes `S`, buffer wiped and emptied, counters reset.
    /// An unseeded state has `K = 0`, so this is also the first seeding.
    fn reseed(&mut self, os: &mut impl Entropy, clock: &impl Clock) -> Result<(), Error> {
        let epoch = fork::epoch();
        let generation = snapshot::settled_generation();
        let mut s = [0u8; KEY_LEN];
        let draw = os.seed(&mut s)?;
        self.core.mix_key(&s);
        s.zeroize();
        self.life.seeded = true;
        self.life.epoch = epoch;
        self.life.generation = generation;
        self.life.restart(draw, clock.now_ns());
        Ok(())
    }

    /// Zeroes every byte of the state, padding included: struct assignments may copy stack
    /// residue (bytes of earlier seeds or keystream) into padding, so field-by-field zeroing
    /// is not enough. The result is the empty, unseeded state.
    fn wipe(&mut self) {
        // SAFETY: `ThreadState` is plain data (byte arrays, integers, bools, no pointers or
        // `Drop` fields) and the all-zero value is a valid state, as `Pages::new_zeroed`
        // relies on; `self` is a valid, exclusive pointer to it.
        unsafe { zeroize::zeroize_flat_type(self as *mut Self) };
    }
}

impl Lifecycle {
    fn restart(&mut self, draw: u32, now_ns: u64) {
        self.produced = 0;
        self.budget = RESEED_MIN_BYTES + (u64::from(draw) & (RESEED_MIN_BYTES - 1));
        self.seeded_at_ns = now_ns;
    }
}

/// Marks a slot whose state was released at thread exit (or is being set up).
const UNAVAILABLE: *mut Slot = ptr::dangling_mut();

/// Owns a thread's state pages; its destructor wipes and releases them at thread exit.
struct Owner(Cell<Option<Pages<Slot>>>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(pages) = self.0.take() {
            STATE.set(UNAVAILABLE);
            // A signal handler that runs from here on must find the slot released, not a
            // half-wiped state: keep the compiler from moving the store past the wipe.
            compiler_fence(Ordering::SeqCst);
            #[cfg(test)]
            // SAFETY: the pages hold an initialised `Slot` and are still mapped.
            let before = tests::Before::of(unsafe { &(*pages.as_ptr()).state });
            // SAFETY: the pages hold an initialised `Slot`; the thread slot no longer points
            // to it, so no other reference exists on this thread (and none on others).
            unsafe { (*pages.as_ptr()).state.wipe() };
            #[cfg(test)]
            tests::record_release(before, &pages);
            spare::put(pages);
        }
    }
}

std::thread_local! {
    /// This thread's state: null before the first read, [`UNAVAILABLE`] after thread exit.
    static STATE: Cell<*mut Slot> = const { Cell::new(ptr::null_mut()) };
    static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// Fills `dest` from the calling thread's generator.
///
/// Always inlined, so that a caller's fixed-size read (`u32`, `u64`, `array`) compiles to
/// the fast path with its length known: the thread-local load, the re-entrancy flag, the
/// length and epoch checks, and one fixed-width copy and zeroing; everything else is in
/// out-of-line cold functions.
#[inline(always)]
pub(crate) fn try_fill(dest: &mut [u8]) -> Result<(), Error> {
    let p = STATE.get();
    if p.is_null() || p == UNAVAILABLE {
        return fill_without_state(p, dest);
    }
    // SAFETY: a non-null slot other than UNAVAILABLE points to this thread's slot, which
    // stays mapped until `OWNER`'s destructor resets the thread-local first.
    match unsafe { enter(p, |st| st.fill(dest)) } {
        Some(result) => result,
        None => fresh_from_os(dest, OneOff::Interrupted),
    }
}

/// Runs `f` on the generator in `slot`, unless a read is already under way on this thread
/// (this call comes from a signal handler that interrupted it): then `None`, and the state
/// is not touched.
///
/// The flag protocol, in one place: check `busy`, set it, use the state, clear it. Only
/// this thread and its signal handlers ever use the slot, and a handler runs to completion
/// between two instructions of the code it interrupts, so program order on this thread is
/// all that matters: the compiler fences keep the state's accesses between the two stores,
/// and the flag is an atomic reached through the raw pointer, disjoint from the `&mut` that
/// `f` gets. The check and the set are not one atomic step, and need not be: a handler that
/// runs between them finds the flag clear, runs a whole read of its own and clears the flag
/// again before this read touches anything.
///
/// # Safety
/// `slot` points to this thread's live slot.
#[inline(always)]
unsafe fn enter<R>(slot: *mut Slot, f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    // SAFETY: the caller guarantees `slot` is live; `busy` and `state` are distinct fields,
    // and no other reference to `state` exists while the flag is set (see above).
    unsafe {
        let busy = &(*slot).busy;
        if busy.load(Ordering::Relaxed) {
            return None;
        }
        busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        let result = f(&mut (*slot).state);
        compiler_fence(Ordering::SeqCst);
        busy.store(false, Ordering::Relaxed);
        Some(result)
    }
}

/// Reseeds the calling thread's generator now.
pub(crate) fn reseed() -> Result<(), Error> {
    let mut p = STATE.get();
    if p.is_null() {
        p = match set_up(fork::register_atfork)? {
            Some(p) => p,
            None => return Ok(()),
        };
    }
    if p == UNAVAILABLE {
        return Ok(());
    }
    // SAFETY: as in `try_fill`.
    unsafe { enter(p, |st| st.reseed(&mut Os, &Monotonic)) }.unwrap_or(Ok(()))
}

#[cold]
#[inline(never)]
fn fill_without_state(p: *mut Slot, dest: &mut [u8]) -> Result<(), Error> {
    if dest.is_empty() {
        return Ok(());
    }
    if p.is_null() && set_up(fork::register_atfork)?.is_some() {
        return try_fill(dest);
    }
    fresh_from_os(dest, OneOff::Unavailable)
}

/// Registers the fork handlers (`register`), then maps this thread's state and registers
/// its owner. `Ok(None)` if the memory is refused or the thread is exiting (the slot is
/// then left for a later try or marked unavailable).
///
/// # Errors
/// The registration's error: no state is set up without fork protection, and the slot is
/// left empty for a later try.
#[cold]
fn set_up(register: impl FnOnce() -> Result<(), Error>) -> Result<Option<*mut Slot>, Error> {
    // A signal handler that runs while this is under way takes the OS path.
    STATE.set(UNAVAILABLE);
    if let Err(e) = register() {
        STATE.set(ptr::null_mut());
        return Err(e);
    }
    let spare = spare::take();
    probe::count_state_set_up(spare.is_some());
    let Some(pages) = spare.or_else(Pages::<Slot>::new_zeroed) else {
        STATE.set(ptr::null_mut());
        return Ok(None);
    };
    let p = pages.as_ptr();
    // Fails only once this thread's destructors have run; the pages are then released
    // and the slot stays unavailable.
    if OWNER.try_with(|owner| owner.0.set(Some(pages))).is_err() {
        return Ok(None);
    }
    STATE.set(p);
    Ok(Some(p))
}

/// Wiped states of exited threads, kept for the next threads' first reads.
///
/// Setting up a state in new pages costs three system calls (`mmap` and two `madvise`), a
/// page fault at first touch and an `munmap` at thread exit, several microseconds in all,
/// which is most of a new thread's first read. An exiting thread wipes its state (every
/// byte zero: the empty, unseeded state) and leaves its pages here, up to `SPARE_STATES`;
/// a new thread takes them and seeds from the OS at its first read exactly as in new pages.
/// The pages keep their wipe-on-fork and do-not-dump marks, and hold nothing but zeros
/// while spare.
///
/// Both ends only ever *try* the lock, so a thread never waits here, and a child forked
/// while another thread held the lock (a lock it can never release in the child) simply
/// maps and unmaps pages as before.
mod spare {
    use super::Slot;
    use crate::fork::Pages;
    use std::sync::Mutex;

    /// Spare states kept at most: 16 (64 KiB with 4 KiB pages).
    pub(super) const SPARE_STATES: usize = 16;

    static SPARE: Mutex<[Option<Pages<Slot>>; SPARE_STATES]> =
        Mutex::new([const { None }; SPARE_STATES]);

    /// A wiped state, if one is spare and the lock is free.
    pub(super) fn take() -> Option<Pages<Slot>> {
        #[cfg(test)]
        if crate::fork::test_hook::WITHOUT_WIPE_ON_FORK.get() {
            return None;
        }
        SPARE.try_lock().ok()?.iter_mut().find_map(Option::take)
    }

    /// Keeps `pages` (holding a wiped state) for a later thread, or unmaps them when the
    /// spares are full or the lock is taken.
    pub(super) fn put(pages: Pages<Slot>) {
        #[cfg(test)]
        if crate::fork::test_hook::WITHOUT_WIPE_ON_FORK
            .try_with(|hook| hook.get())
            .unwrap_or(true)
        {
            // Pages made without wipe-on-fork must not reach other threads.
            return;
        }
        if let Ok(mut slots) = SPARE.try_lock()
            && let Some(slot) = slots.iter_mut().find(|slot| slot.is_none())
        {
            *slot = Some(pages);
        }
    }
}

/// Bytes for a read that cannot use the thread's state (a signal handler interrupting a
/// read, a destructor after thread exit, no memory for the state): a one-off generator keyed
/// with 32 fresh OS bytes, wiped when done.
#[cold]
#[inline(never)]
pub(crate) fn fresh_from_os(dest: &mut [u8], why: OneOff) -> Result<(), Error> {
    if dest.is_empty() {
        return Ok(());
    }
    probe::count_one_off(why);
    // Seeded in place (`K = 0 XOR S`) rather than through `FkeRng::from_seed`, whose
    // by-value seed and return would leave copies of the key in dead stack frames.
    let mut one_off = Core::new([0; KEY_LEN]);
    let mut s = [0u8; KEY_LEN];
    let draw = Os.seed(&mut s);
    one_off.mix_key(&s);
    s.zeroize();
    if let Err(e) = draw {
        one_off.wipe();
        return Err(e);
    }
    let done: Result<(), core::convert::Infallible> = one_off.fill_with(dest, |_, _| Ok(()));
    let Ok(()) = done;
    one_off.wipe();
    Ok(())
}

/// The address range of this thread's state pages (tests of the mapping's flags).
#[cfg(all(any(target_os = "linux", target_os = "android"), test))]
pub(crate) fn state_range() -> Option<(usize, usize)> {
    OWNER.with(|o| {
        let pages = o.0.take();
        let range = pages.as_ref().map(Pages::range);
        o.0.set(pages);
        range
    })
}

/// What this thread's state would serve next without a reseed (the unserved rest of its
/// buffer, then keystream under its key) and the VM generation it last reseeded at; `None`
/// before its first read. For the snapshot tests (little-endian 64-bit Linux).
#[cfg(all(
    test,
    target_os = "linux",
    target_endian = "little",
    target_pointer_width = "64"
))]
pub(crate) fn unreseeded_continuation() -> Option<(Vec<u8>, [u8; KEY_LEN], u64)> {
    let p = STATE.get();
    if p.is_null() || p == UNAVAILABLE {
        return None;
    }
    // SAFETY: this thread's live state; no read runs on this thread during the call.
    let st = unsafe { &(*p).state };
    let buffer = st.core.buffer();
    let rest = buffer[buffer.len() - st.core.available()..].to_vec();
    Some((rest, *st.core.key(), st.life.generation))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// What a thread's state held just before its owner wiped and released it.
    pub(super) struct Before {
        seeded: bool,
        key_nonzero: bool,
        available: usize,
    }

    impl Before {
        pub(super) fn of(st: &ThreadState) -> Self {
            Before {
                seeded: st.life.seeded,
                key_nonzero: st.core.key() != &[0; KEY_LEN],
                available: st.core.available(),
            }
        }
    }

    /// One state release at thread exit: the state's address, what it held before the wipe,
    /// and whether every byte of its pages was zero after it.
    struct Release {
        addr: usize,
        before: Before,
        pages_zero_after: bool,
    }

    static RELEASES: std::sync::Mutex<Vec<Release>> = std::sync::Mutex::new(Vec::new());

    /// Checks every byte of the state's pages (the whole mapping on Linux) just before
    /// they are released.
    pub(super) fn record_release(before: Before, pages: &Pages<Slot>) {
        let addr = pages.as_ptr() as usize;
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let len = pages.range().1 - addr;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let len = size_of::<Slot>();
        let pages_zero_after = (0..len).all(|i| {
            // SAFETY: `addr..addr + len` is the live allocation behind `pages` (on Linux the
            // whole zero-filled mapping). Volatile byte loads read the memory as the machine
            // holds it, padding included, which is what a memory disclosure would see.
            unsafe { ptr::read_volatile((addr + i) as *const u8) == 0 }
        });
        RELEASES.lock().unwrap().push(Release {
            addr,
            before,
            pages_zero_after,
        });
    }

    /// Keeps the process-wide epoch steady for the tests that count a state's reseeds. A
    /// `fork()` in a parallel test bumps the epoch in this process too (the atfork prepare
    /// handler), which would reseed their state mid-count: those tests hold this lock for
    /// reading, and the tests that fork hold it for writing.
    static EPOCH_USERS: std::sync::RwLock<()> = std::sync::RwLock::new(());

    /// Held by a test that counts reseeds: no fork starts in this process meanwhile.
    pub(crate) fn steady_epoch() -> std::sync::RwLockReadGuard<'static, ()> {
        EPOCH_USERS
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Held by a test around its `fork()`: waits for the reseed-counting tests to finish.
    pub(crate) fn forking() -> std::sync::RwLockWriteGuard<'static, ()> {
        EPOCH_USERS
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Hands out a counter pattern (never all zero), or fails while `fail` is set.
    struct FakeOs {
        calls: u32,
        fail: bool,
    }

    impl FakeOs {
        fn working() -> Self {
            FakeOs {
                calls: 0,
                fail: false,
            }
        }

        fn failing() -> Self {
            FakeOs {
                calls: 0,
                fail: true,
            }
        }
    }

    impl Entropy for FakeOs {
        fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
            if self.fail {
                return Err(getrandom::Error::UNEXPECTED.into());
            }
            self.calls += 1;
            for (i, b) in dest.iter_mut().enumerate() {
                *b = (self.calls as u8).wrapping_add(i as u8) | 1;
            }
            Ok(())
        }
    }

    struct FakeClock(Cell<u64>);

    impl Clock for FakeClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
    }

    fn read(st: &mut ThreadState, n: usize, os: &mut FakeOs, clock: &FakeClock) -> Vec<u8> {
        let mut out = vec![0u8; n];
        st.fill_slow(&mut out, os, clock).unwrap();
        out
    }

    #[test]
    fn first_read_seeds_once_and_budget_is_in_range() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(5));
        read(&mut st, 16, &mut os, &clock);
        assert_eq!(os.calls, 1);
        assert!(st.life.seeded);
        assert!((RESEED_MIN_BYTES..2 * RESEED_MIN_BYTES).contains(&st.life.budget));
        assert_eq!(st.life.produced, 1024);
        assert_eq!(st.life.seeded_at_ns, 5);
    }

    #[test]
    fn byte_budget_triggers_reseed_at_a_refill() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 16, &mut os, &clock);
        let budget = st.life.budget;
        // Direct fills of 64 KiB: each produces 32 + 65536 bytes of keystream.
        let per = 65536 + 32;
        let fills_before_due = budget.div_ceil(per) as usize;
        for _ in 0..fills_before_due {
            read(&mut st, 65536, &mut os, &clock);
        }
        assert_eq!(os.calls, 1, "no reseed before the budget is spent");
        read(&mut st, 65536, &mut os, &clock);
        assert_eq!(
            os.calls, 2,
            "reseed at the first direct fill past the budget"
        );
        assert_eq!(st.life.produced, per);
    }

    #[test]
    fn sixty_seconds_trigger_reseed_only_at_refill() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(1_000));
        read(&mut st, 16, &mut os, &clock);
        clock.0.set(1_000 + RESEED_INTERVAL_NS - 1);
        read(&mut st, 976, &mut os, &clock); // empties the buffer exactly
        assert_eq!(os.calls, 1);
        clock.0.set(1_000 + RESEED_INTERVAL_NS);
        assert_eq!(st.core.available(), 0);
        read(&mut st, 16, &mut os, &clock);
        assert_eq!(os.calls, 2);
        assert_eq!(st.life.seeded_at_ns, 1_000 + RESEED_INTERVAL_NS);
    }

    #[test]
    fn failed_periodic_reseed_keeps_key_and_retries() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 992, &mut os, &clock);
        clock.0.set(RESEED_INTERVAL_NS * 2);
        os.fail = true;
        let key_before = *st.core.key();
        let out = read(&mut st, 16, &mut os, &clock);
        assert_ne!(out, vec![0u8; 16]);
        assert_ne!(
            *st.core.key(),
            key_before,
            "the refill still erased the key"
        );
        assert_eq!(os.calls, 1);
        read(&mut st, 976, &mut os, &clock);
        os.fail = false;
        read(&mut st, 16, &mut os, &clock);
        assert_eq!(os.calls, 2, "retried at the next refill");
    }

    #[test]
    fn unseeded_state_with_failing_os_emits_nothing() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::failing();
        let clock = FakeClock(Cell::new(0));
        let mut out = [0u8; 16];
        assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
        assert_eq!(out, [0u8; 16]);
        assert!(!st.life.seeded);
        assert_eq!(st.core.available(), 0);
    }

    #[test]
    fn all_zero_entropy_is_refused() {
        let _epoch = steady_epoch();
        struct Zeros;
        impl Entropy for Zeros {
            fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
                dest.fill(0);
                Ok(())
            }
        }
        let mut st = ThreadState::zeroed();
        let mut out = [0u8; 8];
        let err = st
            .fill_slow(&mut out, &mut Zeros, &FakeClock(Cell::new(0)))
            .unwrap_err();
        assert_eq!(err, Error::ALL_ZERO);
        assert_eq!(out, [0u8; 8]);
    }

    #[test]
    fn epoch_change_reseeds_before_output_and_failure_is_fatal() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 16, &mut os, &clock);
        st.life.epoch = st.life.epoch.wrapping_sub(1); // as if `reseed_all` or a fork ran
        os.fail = true;
        let mut out = [0u8; 16];
        assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
        assert_eq!(out, [0u8; 16]);
        os.fail = false;
        let key_before = *st.core.key();
        read(&mut st, 16, &mut os, &clock);
        assert_eq!(os.calls, 2);
        assert_eq!(st.life.epoch, fork::epoch());
        assert_ne!(*st.core.key(), key_before);
    }

    #[test]
    fn generation_change_reseeds_before_output_and_failure_is_fatal() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 16, &mut os, &clock);
        let (buffer_left, key_before) = (st.core.available(), *st.core.key());
        // As if a snapshot restore had changed the VM generation counter.
        st.life.generation = st.life.generation.wrapping_add(1);
        os.fail = true;
        let mut out = [0u8; 16];
        assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
        assert_eq!(out, [0u8; 16], "nothing served from the restored state");
        assert_eq!(st.core.available(), buffer_left);
        os.fail = false;
        let out = read(&mut st, 16, &mut os, &clock);
        assert_eq!(os.calls, 2);
        assert_ne!(*st.core.key(), key_before);
        assert_eq!(st.life.generation, snapshot::generation());
        assert_ne!(out, [0u8; 16]);
    }

    #[test]
    fn thread_exit_wipes_state_before_release() {
        // A thread reads 123 bytes (seeding its state and leaving 992 - 123 unserved bytes)
        // and reports where its state lives; its exit must zero every byte of those pages.
        let addr = std::thread::spawn(|| {
            let mut b = [0u8; 123];
            crate::fill(&mut b);
            STATE.get() as usize
        })
        .join()
        .unwrap();
        let log = RELEASES.lock().unwrap();
        let ours: Vec<&Release> = log.iter().filter(|r| r.addr == addr).collect();
        assert!(
            ours.iter().any(|r| r.before.seeded
                && r.before.key_nonzero
                && r.before.available == 992 - 123),
            "the thread's state was released holding a seeded key and 869 unserved bytes"
        );
        for r in log.iter() {
            assert!(
                r.pages_zero_after,
                "a state at {:#x} (seeded: {}, key non-zero: {}, unserved bytes: {}) was released with non-zero bytes",
                r.addr, r.before.seeded, r.before.key_nonzero, r.before.available
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn state_pages_are_wipe_on_fork_and_dont_dump() {
        crate::fill(&mut [0u8; 1]);
        if !madvise_honoured("wf and dd flags of the state pages") {
            return;
        }
        let (start, _) = state_range().expect("state mapped");
        let flags = crate::fork::smaps_flags(start).expect("mapping listed in smaps");
        let flags: Vec<&str> = flags.split_whitespace().collect();
        assert!(flags.contains(&"wf"), "{flags:?}");
        assert!(flags.contains(&"dd"), "{flags:?}");
        assert_eq!(
            crate::fork_protection(),
            Some(crate::ForkProtection::WipeOnFork)
        );
    }

    /// Hands out a fixed seed and budget draw.
    struct Fixed {
        seed: [u8; KEY_LEN],
        draw: u32,
        calls: u32,
    }

    impl Entropy for Fixed {
        fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
            self.calls += 1;
            dest[..KEY_LEN].copy_from_slice(&self.seed);
            dest[KEY_LEN..].copy_from_slice(&self.draw.to_le_bytes());
            Ok(())
        }
    }

    #[test]
    fn budget_spans_one_to_two_mib_and_reseed_comes_at_the_first_refill_past_it() {
        let _epoch = steady_epoch();
        for (draw, budget) in [
            (0, RESEED_MIN_BYTES),
            (u32::MAX, 2 * RESEED_MIN_BYTES - 1),
            (0x0012_3456, RESEED_MIN_BYTES + 0x2_3456),
        ] {
            let mut os = Fixed {
                seed: [3; KEY_LEN],
                draw,
                calls: 0,
            };
            let clock = FakeClock(Cell::new(0));
            let mut st = ThreadState::zeroed();
            let mut out = [0u8; 16];
            st.fill_slow(&mut out, &mut os, &clock).unwrap();
            assert_eq!(st.life.budget, budget);
            // Refills of 1024 bytes: the reseed runs before the refill that starts with
            // `produced >= budget`, i.e. before refill number ceil(budget / 1024) + 1.
            let refills_before = budget.div_ceil(1024);
            let mut refills = 1;
            while refills < refills_before {
                st.fill_slow(&mut [0u8; 992], &mut os, &clock).unwrap();
                refills += 1;
            }
            assert_eq!(st.life.produced, refills_before * 1024);
            assert_eq!(os.calls, 1, "draw {draw:#x}: no reseed inside the budget");
            let mut rest = vec![0u8; st.core.available()];
            st.fill_slow(&mut rest, &mut os, &clock).unwrap();
            assert_eq!(os.calls, 1, "draw {draw:#x}: the buffer is served first");
            st.fill_slow(&mut [0u8; 1], &mut os, &clock).unwrap();
            assert_eq!(os.calls, 2, "draw {draw:#x}: reseed at the next refill");
            assert_eq!(st.life.produced, 1024);
        }
    }

    #[test]
    fn time_is_checked_only_when_keystream_is_made() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 16, &mut os, &clock);
        clock.0.set(10 * RESEED_INTERVAL_NS);
        // Served from the buffer: no reseed however late it is.
        read(&mut st, 900, &mut os, &clock);
        assert_eq!(os.calls, 1);
        // A direct fill makes keystream, so it reseeds first.
        read(&mut st, 76 + 4096, &mut os, &clock);
        assert_eq!(os.calls, 2);
        assert_eq!(st.life.seeded_at_ns, 10 * RESEED_INTERVAL_NS);
        // A clock that reads earlier than at the last seed (the process restored on
        // another host) makes the next keystream reseed first, once.
        clock.0.set(5);
        read(&mut st, 4096, &mut os, &clock);
        assert_eq!(os.calls, 3, "a clock that went backwards counts as due");
        assert_eq!(st.life.seeded_at_ns, 5);
        read(&mut st, 4096, &mut os, &clock);
        assert_eq!(os.calls, 3, "and only once");
    }

    #[test]
    fn reseed_mixes_the_key_and_discards_the_buffer() {
        let _epoch = steady_epoch();
        let seed = [0x5a; KEY_LEN];
        let clock = FakeClock(Cell::new(0));
        let mut a = ThreadState::zeroed();
        let mut b = ThreadState::zeroed();
        for st in [&mut a, &mut b] {
            let mut os = Fixed {
                seed,
                draw: 0,
                calls: 0,
            };
            st.fill_slow(&mut [0u8; 8], &mut os, &clock).unwrap();
        }
        let key_before = *a.core.key();
        let s = [0xc3; KEY_LEN];
        let mut os = Fixed {
            seed: s,
            draw: 7,
            calls: 0,
        };
        a.reseed(&mut os, &clock).unwrap();
        let mixed: Vec<u8> = key_before.iter().zip(&s).map(|(k, s)| k ^ s).collect();
        assert_eq!(a.core.key()[..], mixed[..], "K = K XOR S");
        assert_eq!(a.core.available(), 0);
        assert!(a.core.buffer().iter().all(|&x| x == 0), "buffer wiped");
        assert_eq!(a.life.budget, RESEED_MIN_BYTES + 7);
        // The twin that did not reseed serves its old buffer; the reseeded one does not.
        let mut quiet = FakeOs::failing();
        let (mut x, mut y) = ([0u8; 64], [0u8; 64]);
        a.fill_slow(&mut x, &mut quiet, &clock).unwrap();
        b.fill_slow(&mut y, &mut quiet, &clock).unwrap();
        assert_ne!(x, y);
    }

    #[test]
    fn failed_reseed_keeps_key_and_buffer() {
        let _epoch = steady_epoch();
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::working();
        let clock = FakeClock(Cell::new(0));
        read(&mut st, 16, &mut os, &clock);
        let key = *st.core.key();
        let avail = st.core.available();
        os.fail = true;
        assert!(st.reseed(&mut os, &clock).is_err());
        assert_eq!(*st.core.key(), key);
        assert_eq!(st.core.available(), avail);
        assert!(st.life.seeded);
    }

    /// Runs `child` in a child process made by `fork()` (atfork handlers run) or by a raw
    /// `clone` system call (none run) and returns the 32 bytes it sends back through a pipe.
    /// The child only reads the generator, writes and `_exit`s.
    #[cfg(target_os = "linux")]
    pub(crate) fn in_child(raw_clone: bool, child: fn() -> Option<[u8; 32]>) -> [u8; 32] {
        let _fork = forking();
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child runs only `child` (a generator read: at most a `getrandom`
        // system call and atomics), `write` and `_exit`, which are safe in a child of a
        // multi-threaded process.
        let pid = unsafe {
            if raw_clone {
                // s390x's clone takes the new stack first and the flags second.
                #[cfg(not(target_arch = "s390x"))]
                let pid = libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0);
                #[cfg(target_arch = "s390x")]
                let pid = libc::syscall(libc::SYS_clone, 0, libc::SIGCHLD, 0, 0, 0);
                pid as libc::pid_t
            } else {
                libc::fork()
            }
        };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let (out, code) = match child() {
                Some(out) => (out, 0),
                None => ([0; 32], 1),
            };
            // SAFETY: writes 32 bytes from `out`, then ends the child without unwinding.
            unsafe {
                libc::write(fds[1], out.as_ptr().cast(), 32);
                libc::_exit(code);
            }
        }
        let mut got = [0u8; 32];
        let mut status = 0;
        // SAFETY: reads into `got` (at most 32 bytes), closes our descriptors, reaps `pid`.
        unsafe {
            libc::close(fds[1]);
            let mut n = 0;
            while n < 32 {
                let r = libc::read(fds[0], got[n..].as_mut_ptr().cast(), 32 - n);
                assert!(r > 0, "child sent {n} bytes");
                n += r as usize;
            }
            libc::close(fds[0]);
            assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        got
    }

    #[cfg(target_os = "linux")]
    fn next_32() -> Option<[u8; 32]> {
        let mut out = [0u8; 32];
        crate::try_fill(&mut out).ok()?;
        Some(out)
    }

    /// Whether this kernel honours `madvise` advice (`fork_protection()` is `WipeOnFork`),
    /// so that the `wf` and `dd` page flags are promised. Where it is not (qemu-user accepts
    /// and ignores the advice), prints which `claim` is skipped and why. A run that sets
    /// `FKRNG_EXPECT_FORK_PROTECTION` (scripts/platforms.sh) fails when the protection
    /// found is another.
    #[cfg(target_os = "linux")]
    fn madvise_honoured(claim: &str) -> bool {
        // A state mapped through the test hook leaves the process-wide check undone: a read
        // on a fresh thread makes it.
        if crate::fork_protection().is_none() {
            std::thread::spawn(|| crate::fill(&mut [0u8; 1]))
                .join()
                .unwrap();
        }
        let found = crate::fork_protection().expect("known after a first read");
        if let Ok(expected) = std::env::var("FKRNG_EXPECT_FORK_PROTECTION") {
            assert_eq!(
                format!("{found:?}"),
                expected,
                "FKRNG_EXPECT_FORK_PROTECTION"
            );
        }
        let honoured = found == crate::ForkProtection::WipeOnFork;
        if !honoured {
            eprintln!(
                "skipped: {claim}: fork protection is {found:?}, so this kernel or emulator \
                 did not honour MADV_WIPEONFORK and no page flag is promised"
            );
        }
        honoured
    }

    /// With wipe-on-fork switched off for this thread's state, only the atfork epoch keeps a
    /// `fork()` child from replaying the parent; a raw `clone` (no atfork handler) shows
    /// that the switch took effect.
    #[cfg(target_os = "linux")]
    #[test]
    fn atfork_epoch_alone_reseeds_a_forked_child() {
        std::thread::spawn(|| {
            fork::test_hook::WITHOUT_WIPE_ON_FORK.set(true);
            crate::fill(&mut [0u8; 16]);
            let (start, _) = state_range().expect("state mapped");
            let flags = fork::smaps_flags(start).expect("mapping listed in smaps");
            let flags: Vec<&str> = flags.split_whitespace().collect();
            assert!(
                !flags.contains(&"wf"),
                "hook left wipe-on-fork on: {flags:?}"
            );
            if madvise_honoured("dd flag of the hook's state pages") {
                assert!(flags.contains(&"dd"), "{flags:?}");
            }

            // Control: no wipe-on-fork and no atfork handler, so the child replays the
            // parent's next 32 bytes (the documented limit of the epoch alone).
            let replayed = in_child(true, next_32);
            assert_eq!(Some(replayed), next_32());

            // fork(): the prepare handler starts a new epoch in the parent before the fork
            // (and the child handler another in the child), so both sides reseed first.
            let epoch_before = fork::epoch();
            let child = in_child(false, next_32);
            assert!(
                fork::epoch() > epoch_before,
                "the prepare handler bumped the parent's epoch"
            );
            let mut parent = vec![0u8; 4096];
            for chunk in parent.chunks_mut(32) {
                crate::fill(chunk);
            }
            assert!(
                !parent.windows(32).any(|w| w == child),
                "the child replayed the parent's stream"
            );
            assert_ne!(child, [0u8; 32]);
        })
        .join()
        .unwrap();
    }

    /// A library that registered its own fork child handler before fkrng's first read has
    /// it run first in the child; where that handler reads fkrng, with wipe-on-fork off,
    /// it must not get the parent's next bytes (the prepare handler moved the epoch before
    /// the fork). Needs a process in which fkrng has not registered its handlers yet, so
    /// the test runs itself again in a new process.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_handler_registered_before_fkrng_gets_fresh_bytes() {
        const NAME: &str =
            "thread::tests::a_child_handler_registered_before_fkrng_gets_fresh_bytes";
        const IN_NEW_PROCESS: &str = "FKRNG_TEST_IN_NEW_PROCESS";
        if std::env::var_os(IN_NEW_PROCESS).is_some() {
            return child_handler_order_in_this_process();
        }
        // Under an emulator (`FKRNG_TEST_RUNNER`, as in the runs for other architectures)
        // the test binary runs through it again.
        let runner = std::env::var("FKRNG_TEST_RUNNER").unwrap_or_default();
        let mut runner = runner.split_whitespace();
        let exe = std::env::current_exe().unwrap();
        let mut command = match runner.next() {
            Some(emulator) => {
                let mut command = std::process::Command::new(emulator);
                command.args(runner).arg(exe);
                command
            }
            None => std::process::Command::new(exe),
        };
        let out = command
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(IN_NEW_PROCESS, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("the earlier child handler read fresh bytes"),
            "{text}"
        );
    }

    #[cfg(target_os = "linux")]
    fn child_handler_order_in_this_process() {
        use core::sync::atomic::AtomicU8;
        static READ_IN_CHILD: [AtomicU8; 32] = [const { AtomicU8::new(0) }; 32];
        extern "C" fn earlier_child_handler() {
            let mut out = [0u8; 32];
            if crate::try_fill(&mut out).is_ok() {
                for (slot, b) in READ_IN_CHILD.iter().zip(out) {
                    slot.store(b, Ordering::Relaxed);
                }
            }
        }
        assert_eq!(
            crate::fork_protection(),
            None,
            "fkrng was set up before the handler"
        );
        // SAFETY: registers a handler that lives for the whole program.
        assert_eq!(
            unsafe { libc::pthread_atfork(None, None, Some(earlier_child_handler)) },
            0
        );
        fork::test_hook::WITHOUT_WIPE_ON_FORK.set(true);
        crate::fill(&mut [0u8; 16]);
        let child = in_child(false, || {
            Some(core::array::from_fn(|i| {
                READ_IN_CHILD[i].load(Ordering::Relaxed)
            }))
        });
        let parent_next = next_32().unwrap();
        assert_ne!(child, [0u8; 32], "the handler's read failed in the child");
        assert_ne!(
            child, parent_next,
            "the earlier child handler read the parent's next bytes"
        );
        println!("the earlier child handler read fresh bytes");
    }

    /// When the fork handlers cannot be registered, a thread sets up no state and its read
    /// fails; the next read tries again.
    #[test]
    fn no_state_is_set_up_without_fork_handlers() {
        std::thread::spawn(|| {
            let failed = set_up(|| Err(Error::fork_handler(libc::ENOMEM)));
            assert_eq!(failed, Err(Error::fork_handler(libc::ENOMEM)));
            assert!(STATE.get().is_null(), "the slot is left for a later try");
            assert!(OWNER.with(|o| {
                let pages = o.0.take();
                let none = pages.is_none();
                o.0.set(pages);
                none
            }));
            let mut out = [0u8; 16];
            try_fill(&mut out).unwrap();
            assert!(!STATE.get().is_null() && STATE.get() != UNAVAILABLE);
        })
        .join()
        .unwrap();
    }

    /// `crate::reseed` on a live thread: the bytes that would have come next (the rest of
    /// the buffer, then a refill under the old key) are not what comes next.
    #[test]
    fn public_reseed_changes_the_stream() {
        std::thread::spawn(|| {
            crate::fill(&mut [0u8; 16]);
            let p = STATE.get();
            // SAFETY: this thread's live state; no read runs while we look at it.
            let (rest_of_buffer, key) = unsafe {
                let core = &(*p).state.core;
                (core.buffer()[16..].to_vec(), *core.key())
            };
            let mut after_buffer = [0u8; 32];
            <crate::FkeRng as rand_core::SeedableRng>::from_seed(key).fill(&mut after_buffer);
            crate::reseed().unwrap();
            // SAFETY: as above.
            assert_eq!(
                unsafe { (*p).state.core.available() },
                0,
                "buffer discarded"
            );
            let mut out = [0u8; 32];
            crate::fill(&mut out);
            assert_ne!(out[..], rest_of_buffer[..32]);
            assert_ne!(out, after_buffer);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn slot_is_pointer_sized() {
        assert_eq!(
            size_of::<Cell<*mut Slot>>(),
            size_of::<usize>(),
            "the thread-local slot holds only a pointer"
        );
    }

    #[test]
    fn empty_read_needs_no_seed_and_sets_up_nothing() {
        let _epoch = steady_epoch();
        // An unseeded state and an OS source that fails: nothing to produce, so no error
        // and no OS read.
        let mut st = ThreadState::zeroed();
        let mut os = FakeOs::failing();
        assert_eq!(
            st.fill_slow(&mut [], &mut os, &FakeClock(Cell::new(0))),
            Ok(())
        );
        assert!(!st.life.seeded);
        // A thread whose only read is empty maps no state.
        let slot_null = std::thread::spawn(|| {
            try_fill(&mut []).unwrap();
            STATE.get().is_null()
        })
        .join()
        .unwrap();
        assert!(slot_null, "an empty first read set up a state");
    }
}
