//! The thread-local generator: one state per OS thread in a slot leased from the pool [`STATES`],
//! reached through [`STATE`]. [`OWNER`] holds the lease; at thread exit it marks the slot
//! [`UNAVAILABLE`] (later reads take [`one_off_fill`]), zeroes it and returns it. The small-read
//! path makes no system call, lock, atomic read-modify-write or heap allocation.

#[cfg(any(test, fkrng_test_hooks))]
pub(crate) mod hooks;
mod state;
#[cfg(test)]
mod tests;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod word;

use crate::error::Error;
use crate::lifecycle::one_off::one_off_fill;
use crate::lifecycle::{fork, reseed::Monotonic, seed::Os};
use crate::os::pages::Advice;
use crate::pool::{Lease, StatePool};
use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering, compiler_fence};
pub(crate) use state::ThreadState;

/// Marks a slot whose state was released at thread exit (or is being set up).
pub(crate) const UNAVAILABLE: *mut ThreadState = ptr::without_provenance_mut(1);

/// Stands in the thread-local for the slot while a read of it runs ([`enter`]).
pub(crate) const BUSY: *mut ThreadState = ptr::without_provenance_mut(BUSY_ADDR);
const BUSY_ADDR: usize = 2;

/// Whether `p`, read from [`STATE`], is a slot to read: not null, [`UNAVAILABLE`] or [`BUSY`]
/// (one comparison: a slot lies in a mapped page, above the first).
#[inline(always)]
pub(crate) fn is_slot(p: *mut ThreadState) -> bool {
    p.addr() > BUSY.addr()
}

/// Every thread's state, in wipe-on-fork chunks mapped as threads need them.
pub(crate) static STATES: StatePool<ThreadState> = StatePool::new(Advice::WipeOnFork);

/// Holds a thread's lease of its slot; its destructor releases it at thread exit.
pub(crate) struct Owner(pub(crate) Cell<Option<Lease<ThreadState>>>);

impl Owner {
    /// Marks the thread's slot unavailable, zeroes the slot and returns it to the pool.
    fn release(&self) {
        let Some(lease) = self.0.take() else {
            return;
        };
        set_slot(UNAVAILABLE);
        // Now a handler finds the slot released, not half-wiped (no destructor runs mid-read).
        compiler_fence(Ordering::SeqCst);
        // The thread-exit key has nothing left to do: the C library then calls no code of this
        // copy after the thread-local destructors, when a `dlclose` may have unmapped it.
        crate::os::thread_exit::disarm();
        #[cfg(test)]
        tests::record_release(&lease);
        drop(lease);
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.release();
    }
}

/// The thread-exit key's destructor ([`crate::os::thread_exit`]): releases the slot of a
/// thread whose first read came after its thread-local destructors; otherwise a no-op.
unsafe extern "C" fn release_at_exit(_: *mut core::ffi::c_void) {
    let _ = OWNER.try_with(Owner::release);
}

/// The fork child handler: a new epoch, then the claims of the parent's other threads
/// cleared. While the forking thread sets up or releases its state, its slot is unknown and
/// every claim stays (those slots go unused in the child); during a read (a handler's fork)
/// its slot is the one its owner holds. Async-signal-safe.
extern "C" fn atfork_child() {
    fork::in_child();
    let mut p = STATE
        .try_with(|t| t.slot.load(Ordering::Relaxed))
        .unwrap_or(UNAVAILABLE);
    if p == BUSY {
        // Set up before (BUSY follows a set-up), so the owner is live: no destructor to register.
        p = OWNER
            .try_with(|owner| {
                let lease = owner.0.take();
                let held = lease.as_ref().map_or(UNAVAILABLE, Lease::as_ptr);
                owner.0.set(lease);
                held
            })
            .unwrap_or(UNAVAILABLE);
    }
    if !p.is_null() && !is_slot(p) {
        return;
    }
    let keep = (!p.is_null()).then_some(p.cast_const());
    STATES.reset_after_fork(keep);
    #[cfg(test)]
    hooks::STATES_WITHOUT_WIPE_ON_FORK.reset_after_fork(keep);
    // The vDSO states' claims, kept if this thread forked during a lease of its own.
    crate::os::reset_after_fork();
}

/// What the thread states give back at this copy's unload or the process's exit
/// ([`crate::os::at_unload`]): the chunks no thread holds.
fn close_states() {
    STATES.close();
}

/// Registers the process's fork handlers, with [`atfork_child`] as the child's.
pub(crate) fn register_atfork() -> Result<(), Error> {
    fork::register_atfork(atfork_child)
}

/// What a thread keeps in its thread-local memory: one word, the pointer to its slot, which
/// also says whether a read is under way, so that the fast path makes one thread-local load.
pub(crate) struct ThreadSlot {
    /// This thread's slot: null before the first read, [`BUSY`] while a read runs
    /// ([`enter`]; not in the wipe-on-fork slot, so a child forked by a handler mid-read keeps
    /// it: docs/DESIGN.md, "The flag protocol"), [`UNAVAILABLE`] after thread exit.
    /// An atomic (relaxed: plain loads and stores) because this thread's signal handlers read
    /// and write it too; the fences around its stores order the state's accesses.
    slot: AtomicPtr<ThreadState>,
}

std::thread_local! {
    pub(crate) static STATE: ThreadSlot =
        const { ThreadSlot { slot: AtomicPtr::new(ptr::null_mut()) } };
    pub(crate) static OWNER: Owner = const { Owner(Cell::new(None)) };
}

#[inline(always)]
pub(crate) fn slot() -> *mut ThreadState {
    STATE.with(|t| t.slot.load(Ordering::Relaxed))
}

#[inline(always)]
fn set_slot(p: *mut ThreadState) {
    STATE.with(|t| t.slot.store(p, Ordering::Relaxed));
}

/// Fills `dest` from the calling thread's generator. Always inlined, so that a read of a
/// known length compiles to the fast path with that length; everything else is cold.
#[inline(always)]
pub(crate) fn try_fill(dest: &mut [u8]) -> Result<(), Error> {
    let p = slot();
    if !is_slot(p) {
        return fill_without_state(p, dest);
    }
    // SAFETY: a slot (`is_slot`) points to this thread's slot, which stays mapped until
    // `OWNER`'s destructor resets the thread-local first.
    unsafe { enter(p, |st| st.fill(dest)) }
}

/// The fast path of `u32`, `u64` and `array` (bytes in registers): the next `N` bytes of the
/// thread's buffer, or `None` when the state is not set up, a read is under way, the state
/// is stale or fewer than `N` are left; the caller then reads through [`try_fill`]. On
/// x86-64, 4 and 8 bytes take the same steps in one `asm!` block ([`word`]).
#[inline(always)]
pub(crate) fn take<const N: usize>() -> Option<[u8; N]> {
    // `word::take` only for 4 and 8 (its contract), so that no other size instantiates it.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    match N {
        4 => return word::take::<4>().and_then(|bytes| bytes.as_slice().try_into().ok()),
        8 => return word::take::<8>().and_then(|bytes| bytes.as_slice().try_into().ok()),
        _ => {}
    }
    let p = slot();
    if !is_slot(p) {
        return None;
    }
    // SAFETY: as in `try_fill`.
    unsafe { enter(p, |st| st.take::<N>()) }
}

/// Runs `f` on the generator in `slot` with [`BUSY`] in the thread-local meanwhile, so that a
/// signal handler interrupting it reads elsewhere, then puts `slot` back. Only this thread
/// and its handlers use the thread-local, and a handler runs to completion (one between the
/// caller's load and the store here finishes its read first and puts the slot back), so
/// program order suffices: the fences keep the state's accesses between the stores.
///
/// # Safety
/// `slot` points to this thread's live slot and was just read from [`STATE`] (`is_slot`).
#[inline(always)]
pub(crate) unsafe fn enter<R>(slot: *mut ThreadState, f: impl FnOnce(&mut ThreadState) -> R) -> R {
    set_slot(BUSY);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: `slot` is live (caller's contract); no other reference to it while BUSY is set.
    let result = f(unsafe { &mut *slot });
    compiler_fence(Ordering::SeqCst);
    set_slot(slot);
    result
}

/// Reseeds the calling thread's generator now.
pub(crate) fn reseed() -> Result<(), Error> {
    let mut p = slot();
    if p.is_null() {
        p = set_up(register_atfork, &STATES)?.unwrap_or(UNAVAILABLE);
    }
    if !is_slot(p) {
        return Ok(());
    }
    // SAFETY: as in `try_fill`.
    unsafe { enter(p, |st| st.reseed(&mut Os, &Monotonic)) }
}

#[cold]
#[inline(never)]
fn fill_without_state(p: *mut ThreadState, dest: &mut [u8]) -> Result<(), Error> {
    if dest.is_empty() {
        return Ok(());
    }
    if p == BUSY {
        return one_off_fill(dest, crate::probe::Event::OneOffInterrupted)
            .map_err(|e| failed(dest, e));
    }
    if p.is_null() {
        match set_up(register_atfork, &STATES) {
            Ok(Some(_)) => return try_fill(dest),
            Ok(None) => {}
            Err(e) => return Err(failed(dest, e)),
        }
    }
    one_off_fill(dest, crate::probe::Event::OneOffUnavailable).map_err(|e| failed(dest, e))
}

/// A failed fill's error, with `dest` zeroed: every read that returns an error leaves
/// zeros in `dest`, whatever it had copied there before it failed.
#[cold]
fn failed(dest: &mut [u8], e: Error) -> Error {
    zeroize::Zeroize::zeroize(dest);
    e
}

/// Registers the fork handlers (`register`), then leases this thread's slot from `pool`.
/// `Ok(None)` when the memory is refused (a later read tries again) or the thread is exiting
/// (the slot stays unavailable). On `register`'s error no state is set up, for a later try.
#[cold]
pub(crate) fn set_up(
    register: impl FnOnce() -> Result<(), Error>,
    pool: &'static StatePool<ThreadState>,
) -> Result<Option<*mut ThreadState>, Error> {
    // A signal handler that runs while this is under way takes the OS path.
    set_slot(UNAVAILABLE);
    let lease = match register().map(|()| pool.lease()) {
        Ok(Some(lease)) => lease,
        refused => {
            set_slot(ptr::null_mut());
            return refused.map(|_| None);
        }
    };
    crate::probe::count(crate::probe::Event::StateSetUp);
    let p = lease.as_ptr();
    // Fails once this thread's destructors have run: the lease drops, the thread stays UNAVAILABLE.
    if OWNER.try_with(|owner| owner.0.set(Some(lease))).is_err() {
        return Ok(None);
    }
    // Releases the slot where `OWNER`'s destructor never runs (a first read in a key destructor).
    crate::os::thread_exit::arm(release_at_exit);
    crate::os::at_unload(close_states);
    set_slot(p);
    Ok(Some(p))
}
