//! The thread-local generator: one fast-key-erasure state per OS thread, seeded lazily from
//! the OS, reseeded periodically, after `fork` and on demand, and served without a system
//! call, a lock, an atomic read-modify-write or a heap allocation on the small-read path.
//!
//! The thread-local slot holds a pointer and the re-entrancy flag ([`STATE`]); the state
//! itself lives in a slot leased from the state pool [`STATES`]
//! ([`crate::pool::StatePool`]: many states to a chunk, wipe-on-fork and do-not-dump on
//! Linux). A second thread-local ([`OWNER`]) holds the lease and, when the thread exits,
//! marks the thread's slot torn down (so that reads from later thread-local destructors
//! take [`one_off_fill`]), then zeroes the whole slot and returns it to the pool.

mod state;
#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::lifecycle::fork;
use crate::lifecycle::one_off::{OneOff, one_off_fill};
use crate::lifecycle::reseed::Monotonic;
use crate::lifecycle::seed::Os;
use crate::os::pages::Advice;
use crate::pool::{Lease, StatePool};
use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering, compiler_fence};
pub(crate) use state::{Slot, ThreadState};

/// Marks a slot whose state was released at thread exit (or is being set up).
pub(crate) const UNAVAILABLE: *mut Slot = ptr::dangling_mut();

/// Every thread's state: slots of wipe-on-fork chunks (40 KiB of claim words and chunk
/// addresses; the chunks are mapped as threads need them).
pub(crate) static STATES: StatePool<Slot> = StatePool::new(Advice::WipeOnFork);

/// The states that tests set up without wipe-on-fork, in chunks of their own: such slots
/// never reach a thread that asked for wipe-on-fork.
#[cfg(test)]
static STATES_WITHOUT_WIPE_ON_FORK: StatePool<Slot> = StatePool::new(Advice::DontDumpOnly);

fn pool(advice: Advice) -> &'static StatePool<Slot> {
    match advice {
        Advice::WipeOnFork => &STATES,
        #[cfg(test)]
        Advice::DontDumpOnly => &STATES_WITHOUT_WIPE_ON_FORK,
    }
}

/// Holds a thread's lease of its state slot; its destructor zeroes the slot and returns it
/// to the pool at thread exit.
pub(crate) struct Owner(pub(crate) Cell<Option<Lease<Slot>>>);

impl Owner {
    /// Marks the thread's slot unavailable, zeroes the slot and returns it to the pool.
    fn release(&self) {
        let Some(lease) = self.0.take() else {
            return;
        };
        set_slot(UNAVAILABLE);
        // A signal handler that runs from here on must find the slot released, not a
        // half-wiped state. No flag protocol: no destructor runs inside a read on its
        // thread. The whole slot is zeroed, so a busy flag left by an abandoned read is
        // not inherited by the next thread.
        compiler_fence(Ordering::SeqCst);
        #[cfg(test)]
        {
            // SAFETY: the slot holds an initialised `Slot`; the thread slot no longer
            // points to it, so no other reference exists.
            let st = unsafe { &(*lease.as_ptr()).state };
            let before = (st.life.seeded, st.fke.key() != &[0; 32], st.fke.available());
            lease.wipe();
            let (start, end) = lease.range();
            crate::probe::hooks::released(start as *const u8, end - start, before);
        }
        drop(lease);
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.release();
    }
}

/// The thread-exit key's destructor ([`crate::os::thread_exit`]): releases a slot whose
/// owner's thread-local destructor never ran, because the thread's first read came after
/// its thread-local destructors (from a `pthread` key destructor). Otherwise a no-op.
#[cfg(all(unix, not(miri)))]
unsafe extern "C" fn release_at_exit(_: *mut core::ffi::c_void) {
    let _ = OWNER.try_with(Owner::release);
}

/// The fork child handler, registered at a thread's set-up ([`register_atfork`]): the
/// lifecycle's new epoch, then the pool's claims of the parent's other threads cleared, so
/// that their slots serve the child's new threads. When the forking thread is setting up or
/// releasing its state (a fork from a signal handler that interrupted that), which slot it
/// holds is not known: every claim is left as it was (those slots stay unused in the
/// child, never shared). Async-signal-safe: atomic loads and stores.
extern "C" fn atfork_child() {
    fork::in_child();
    let Ok(p) = STATE.try_with(|t| t.slot.get()) else {
        return;
    };
    if p == UNAVAILABLE {
        return;
    }
    let keep = (!p.is_null()).then_some(p.cast_const());
    STATES.reset_after_fork(keep);
    #[cfg(test)]
    STATES_WITHOUT_WIPE_ON_FORK.reset_after_fork(keep);
    // The vDSO's states, wiped by the kernel: their claims are cleared unless this thread
    // forked during a lease of its own.
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    crate::os::vdso::reset_after_fork();
}

/// Registers the process's fork handlers, with [`atfork_child`] as the child's.
pub(crate) fn register_atfork() -> Result<(), Error> {
    fork::register_atfork(atfork_child)
}

/// What a thread keeps in its thread-local memory: the pointer to its slot and the
/// re-entrancy flag, one thread-local so that the fast path reaches both from one address.
pub(crate) struct ThreadSlot {
    /// This thread's slot: null before the first read, [`UNAVAILABLE`] after thread exit.
    slot: Cell<*mut Slot>,
    /// Set while a read runs on this thread ([`enter`]). Thread-local, not in the
    /// wipe-on-fork slot: a child forked by a handler that interrupted a read keeps the flag
    /// set, so the handler's reads there take the one-off path instead of reseeding the
    /// state under the interrupted read.
    busy: AtomicBool,
}

std::thread_local! {
    /// This thread's slot pointer and re-entrancy flag.
    pub(crate) static STATE: ThreadSlot = const {
        ThreadSlot { slot: Cell::new(ptr::null_mut()), busy: AtomicBool::new(false) }
    };
    pub(crate) static OWNER: Owner = const { Owner(Cell::new(None)) };
}

/// This thread's slot: null before the first read, [`UNAVAILABLE`] after thread exit.
#[inline(always)]
pub(crate) fn slot() -> *mut Slot {
    STATE.with(|t| t.slot.get())
}

#[inline(always)]
fn set_slot(p: *mut Slot) {
    STATE.with(|t| t.slot.set(p));
}

/// Marks a read under way on this thread and leaves it so, as a read does that a signal
/// handler's `siglongjmp` abandoned (test hooks).
#[cfg(any(test, fkrng_test_hooks))]
pub(crate) fn abandon_read_in_progress() {
    STATE.with(|t| t.busy.store(true, Ordering::Relaxed));
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
    let p = slot();
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
    let p = slot();
    if p.is_null() || p == UNAVAILABLE {
        return None;
    }
    // SAFETY: as in `try_fill`.
    unsafe { enter(p, |st| st.take::<N>()) }.flatten()
}

/// Runs `f` on the generator in `slot`, unless a read is already under way on this thread
/// (a signal handler interrupted it): then `None`, and the state is not touched.
///
/// The flag protocol, in one place: check `busy`, set it, use the state, clear it. Only
/// this thread and its handlers use the slot, and a handler runs to completion between two
/// instructions of the code it interrupts, so program order is all that matters: the
/// compiler fences keep the state's accesses between the two stores. A handler that runs
/// between the check and the set finds the flag clear and completes a whole read of its
/// own before this one touches anything.
///
/// # Safety
/// `slot` points to this thread's live slot.
#[inline(always)]
pub(crate) unsafe fn enter<R>(slot: *mut Slot, f: impl FnOnce(&mut ThreadState) -> R) -> Option<R> {
    let busy = STATE.with(|t| &raw const t.busy);
    // SAFETY: a thread-local without a destructor stays valid for its thread's whole life,
    // which this call is part of.
    let busy = unsafe { &*busy };
    if busy.load(Ordering::Relaxed) {
        return None;
    }
    busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    // SAFETY: the caller guarantees `slot` is live; no other reference to its state exists
    // while the flag is set (see above).
    let result = f(unsafe { &mut (*slot).state });
    compiler_fence(Ordering::SeqCst);
    busy.store(false, Ordering::Relaxed);
    Some(result)
}

/// Reseeds the calling thread's generator now.
pub(crate) fn reseed() -> Result<(), Error> {
    let mut p = slot();
    if p.is_null() {
        p = match set_up(register_atfork, Advice::WipeOnFork)? {
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
    if p.is_null() && set_up(register_atfork, Advice::WipeOnFork)?.is_some() {
        return try_fill(dest);
    }
    one_off_fill(dest, OneOff::Unavailable)
}

/// Registers the fork handlers (`register`), then leases this thread's state slot from the
/// pool for `advice` and registers its owner. `Ok(None)` if the memory is refused or the
/// thread is exiting (the slot is then left for a later try or marked unavailable).
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
    set_slot(UNAVAILABLE);
    if let Err(e) = register() {
        set_slot(ptr::null_mut());
        return Err(e);
    }
    let Some(lease) = pool(advice).lease() else {
        set_slot(ptr::null_mut());
        return Ok(None);
    };
    crate::probe::count(crate::probe::Event::StateSetUp);
    let p = lease.as_ptr();
    // Fails only once this thread's destructors have run; the slot is then released and
    // the thread's slot stays unavailable.
    if OWNER.try_with(|owner| owner.0.set(Some(lease))).is_err() {
        return Ok(None);
    }
    // A thread whose first read comes from a key destructor never runs `OWNER`'s
    // destructor: the thread-exit key releases the slot then. Without a key the slot is
    // still released at a normal thread exit.
    #[cfg(all(unix, not(miri)))]
    crate::os::thread_exit::arm(release_at_exit);
    set_slot(p);
    Ok(Some(p))
}
