//! Counters of lifecycle events, and points at which this crate's unit tests interrupt a
//! read. Contract: outside the crate's unit tests and builds with `--cfg fkrng_test_hooks`,
//! every function here is empty and inlined, so a build that a dependent makes counts and
//! stops nothing. Imports nothing of the crate.

// Without `std` only keystream and generator points are reached.
#![cfg_attr(not(feature = "std"), allow(dead_code))]

/// An event the tests count ([`count`]).
#[derive(Clone, Copy)]
pub(crate) enum Event {
    /// A read of the OS's random source.
    OsRead,
    /// A one-off read made because a read was under way on the thread (a signal handler's).
    OneOffInterrupted,
    /// A one-off read made because the thread's state could not be had.
    OneOffUnavailable,
    /// A one-off read made while a `fork` was under way.
    OneOffForkUnderWay,
    /// A chunk of state slots mapped and published in the pool.
    ChunkPublished,
    /// A thread's state set up.
    StateSetUp,
    /// A seed served by the vDSO's `getrandom` (x86-64 Linux).
    #[allow(dead_code)] // counted by `os::vdso` (x86-64 Linux) only
    VdsoFill,
    /// A vDSO state zeroed before its first use in a new epoch (x86-64 Linux).
    #[allow(dead_code)] // counted by `os::vdso` (x86-64 Linux) only
    VdsoStateCleared,
    /// A reseed caused by a VM generation change.
    SnapshotReseed,
    /// Bytes copied across a fork or restore, discarded and served again.
    DiscardedRead,
}

#[cfg(any(test, fkrng_test_hooks))]
static COUNTS: [core::sync::atomic::AtomicU64; 10] =
    [const { core::sync::atomic::AtomicU64::new(0) }; 10];

/// Counts `event` (tests only).
#[inline(always)]
pub(crate) fn count(event: Event) {
    #[cfg(any(test, fkrng_test_hooks))]
    COUNTS[event as usize].fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    let _ = event;
}

/// How many times `event` happened in this process.
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) fn total(event: Event) -> u64 {
    COUNTS[event as usize].load(core::sync::atomic::Ordering::Relaxed)
}

/// Where in a read a unit test may run code of its own ([`at`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Point {
    /// Before a served read copies bytes out of the buffer.
    BeforeCopy = 1,
    /// After the copy, before the state is checked for a fork or restore.
    AfterCopy = 2,
    /// After a reseed of a thread's state mixed its seed into the key.
    AfterSeed = 3,
}

/// Runs the hook armed for `point`, once (unit tests only).
#[inline(always)]
pub(crate) fn at(point: Point) {
    #[cfg(test)]
    hooks::at(point);
    let _ = point;
}

/// Counts a call of an assembly kernel on this thread (`which` 0: blocks, 1: a refill with
/// a rider; tests).
#[inline(always)]
pub(crate) fn kernel_call(which: usize) {
    #[cfg(test)]
    hooks::KERNEL_CALLS.with(|calls| {
        let mut n = calls.get();
        n[which] += 1;
        calls.set(n);
    });
    let _ = which;
}

#[cfg(test)]
pub(crate) mod hooks {
    use crate::probe::Point;
    use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

    std::thread_local! {
        /// Assembly kernel calls on this thread: blocks, refill with a rider.
        pub(crate) static KERNEL_CALLS: core::cell::Cell<[u64; 2]> =
            const { core::cell::Cell::new([0; 2]) };
    }

    /// A thread's state slot as it was released at thread exit.
    pub(crate) struct Release {
        pub(crate) addr: usize,
        /// Before the wipe: whether the state was seeded, its key non-zero, and its
        /// unserved bytes.
        pub(crate) before: (bool, bool, usize),
        /// Whether every byte of the slot read zero after the wipe.
        pub(crate) pages_zero_after: bool,
    }

    static RELEASES: std::sync::Mutex<Vec<Release>> = std::sync::Mutex::new(Vec::new());

    /// Every release recorded in this process so far.
    pub(crate) fn releases() -> std::sync::MutexGuard<'static, Vec<Release>> {
        RELEASES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records the release of the `len` bytes at `addr`, already wiped.
    pub(crate) fn released(addr: *const u8, len: usize, before: (bool, bool, usize)) {
        // SAFETY: the caller passes its own live lease's bytes.
        let pages_zero_after =
            (0..len).all(|i| unsafe { core::ptr::read_volatile(addr.add(i)) } == 0);
        let addr = addr as usize;
        releases().push(Release {
            addr,
            before,
            pages_zero_after,
        });
    }

    static POINT: AtomicU8 = AtomicU8::new(0);
    static HOOK: AtomicUsize = AtomicUsize::new(0);

    /// Runs `hook` the next time a read reaches `point`.
    pub(crate) fn arm(point: Point, hook: fn()) {
        HOOK.store(hook as usize, Ordering::SeqCst);
        POINT.store(point as u8, Ordering::SeqCst);
    }

    #[inline(never)]
    pub(super) fn at(point: Point) {
        if POINT.load(Ordering::SeqCst) != point as u8 {
            return;
        }
        POINT.store(0, Ordering::SeqCst);
        let hook = HOOK.swap(0, Ordering::SeqCst);
        if hook != 0 {
            // SAFETY: HOOK only ever holds 0 or a `fn()` stored by `arm`.
            let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
            hook();
        }
    }
}
