//! The thread-local generator: one fast-key-erasure state per OS thread, seeded lazily from
//! the OS, reseeded periodically, after `fork` and on demand, and served without a system
//! call, a lock, an atomic read-modify-write or a heap allocation on the small-read path.
//!
//! The thread-local slot holds only a pointer ([`STATE`]); the state itself lives in pages
//! from [`crate::memory::Pages`] (wipe-on-fork and do-not-dump on Linux). A second thread-local
//! ([`OWNER`]) owns those pages and, when the thread exits, wipes the state, unmaps it and
//! marks the slot torn down, so that reads from later thread-local destructors take
//! [`one_off::one_off_fill`].

mod one_off;
mod schedule;
mod spare;
mod state;
#[cfg(test)]
mod tests;

pub use schedule::{RESEED_INTERVAL_NS, RESEED_MIN_BYTES};

use crate::Error;
use crate::entropy::Os;
use crate::fork;
use crate::memory::{Advice, Pages};
use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{Ordering, compiler_fence};
pub(crate) use one_off::OneOff;
use one_off::one_off_fill;
use schedule::Monotonic;
pub(crate) use state::{Slot, ThreadState};

/// Marks a slot whose state was released at thread exit (or is being set up).
pub(crate) const UNAVAILABLE: *mut Slot = ptr::dangling_mut();

/// Owns a thread's state pages; its destructor wipes and releases them at thread exit.
pub(crate) struct Owner(pub(crate) Cell<Option<Pages<Slot>>>);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Some(pages) = self.0.take() {
            STATE.set(UNAVAILABLE);
            // A signal handler that runs from here on must find the slot released, not a
            // half-wiped state: keep the compiler from moving the store past the wipe.
            compiler_fence(Ordering::SeqCst);
            #[cfg(test)]
            // SAFETY: the pages hold an initialised `Slot` and are still mapped.
            let before =
                crate::test_hooks::lifecycle::Before::of(unsafe { &(*pages.as_ptr()).state });
            // No flag protocol here: a thread-local destructor never runs inside a read on
            // its thread, and a handler that interrupts it from now on finds the slot
            // released and takes the one-off path.
            // SAFETY: the pages hold an initialised `Slot`; the thread slot no longer points
            // to it, so no other reference exists on this thread (and none on others).
            unsafe { (*pages.as_ptr()).state.wipe() };
            #[cfg(test)]
            crate::test_hooks::lifecycle::record_release(before, &pages);
            spare::put(pages);
        }
    }
}

std::thread_local! {
    /// This thread's state: null before the first read, [`UNAVAILABLE`] after thread exit.
    pub(crate) static STATE: Cell<*mut Slot> = const { Cell::new(ptr::null_mut()) };
    pub(crate) static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// Fills `dest` from the calling thread's generator.
///
/// Always inlined, so that a caller's read of a known length compiles to the fast path with
/// that length: the thread-local load, the re-entrancy flag, the length, epoch and VM
/// generation checks, and one copy and zeroing; everything else is in out-of-line cold
/// functions. (`u32`, `u64` and `array` use [`take`] instead, which returns the bytes in
/// registers.)
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
        None => one_off_fill(dest, OneOff::Interrupted),
    }
}

/// The next `N` bytes of the calling thread's buffer, taken (and zeroed there) when the
/// thread's state is set up, no read is under way on this thread, the epoch and VM
/// generation are unchanged and at least `N` bytes are left; `None` (nothing taken)
/// otherwise, and then the caller reads through [`try_fill`]. The fast path of `u32`, `u64`
/// and `array`: the bytes come back in registers, not through a pointer.
#[inline(always)]
pub(crate) fn take<const N: usize>() -> Option<[u8; N]> {
    let p = STATE.get();
    if p.is_null() || p == UNAVAILABLE {
        return None;
    }
    // SAFETY: as in `try_fill`.
    unsafe { enter(p, |st| st.take::<N>()) }.flatten()
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
pub(crate) unsafe fn enter<R>(slot: *mut Slot, f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
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
        p = match set_up(fork::register_atfork, Advice::WipeOnFork)? {
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
    if p.is_null() && set_up(fork::register_atfork, Advice::WipeOnFork)?.is_some() {
        return try_fill(dest);
    }
    one_off_fill(dest, OneOff::Unavailable)
}

/// Registers the fork handlers (`register`), then maps this thread's state with `advice`
/// (or takes a spare one) and registers its owner. `Ok(None)` if the memory is refused or
/// the thread is exiting (the slot is then left for a later try or marked unavailable).
///
/// # Errors
/// The registration's error: no state is set up without fork protection, and the slot is
/// left empty for a later try.
#[cold]
pub(crate) fn set_up(
    register: impl FnOnce() -> Result<(), Error>,
    advice: Advice,
) -> Result<Option<*mut Slot>, Error> {
    // A signal handler that runs while this is under way takes the OS path.
    STATE.set(UNAVAILABLE);
    if let Err(e) = register() {
        STATE.set(ptr::null_mut());
        return Err(e);
    }
    let spare = spare::take(advice);
    #[cfg(any(test, feature = "test-hooks"))]
    crate::test_hooks::counters::count_state_set_up(spare.is_some());
    let Some(pages) = spare.or_else(|| Pages::<Slot>::new_zeroed(advice)) else {
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
