//! A point inside a read of the thread's state where a unit test can run code of its own,
//! as a signal handler that interrupted the read would: raise a signal whose handler forks,
//! or change the VM generation counter of a stand-in page. Unit tests only.

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// Where in a read the hook runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Point {
    /// The bytes to serve are located in the buffer, none copied yet.
    BeforeCopy = 1,
    /// The bytes are copied out and zeroed in the buffer, the read not yet returned.
    AfterCopy = 2,
}

/// The armed point (0: none).
static POINT: AtomicU8 = AtomicU8::new(0);
/// The armed function, as a `fn()` address (0: none).
static HOOK: AtomicUsize = AtomicUsize::new(0);

/// Runs `hook` once, at the next read of this process that reaches `point`.
pub(crate) fn arm(point: Point, hook: fn()) {
    HOOK.store(hook as usize, Ordering::SeqCst);
    POINT.store(point as u8, Ordering::SeqCst);
}

/// Called by reads at `point`: runs the armed hook, if it is armed for `point`, and disarms
/// it first (the read that the hook restarts, and reads the hook makes, do not run it).
#[inline(never)]
pub(crate) fn at(point: Point) {
    if POINT.load(Ordering::SeqCst) != point as u8 {
        return;
    }
    POINT.store(0, Ordering::SeqCst);
    let hook = HOOK.swap(0, Ordering::SeqCst);
    if hook != 0 {
        // SAFETY: a non-zero `HOOK` was stored by `arm` from a `fn()`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
}
