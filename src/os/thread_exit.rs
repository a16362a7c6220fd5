//! A last-chance destructor at thread exit: POSIX runs `pthread` key destructors in rounds (up to
//! `PTHREAD_DESTRUCTOR_ITERATIONS`) while keys hold values, so a value set by another key's
//! destructor still gets its destructor run, unlike a thread-local destructor registered then.
//! The key is deleted only by [`close`], and only while no call is between reading it and using it.

use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

type Destructor = unsafe extern "C" fn(*mut c_void);

/// The process's key plus one; 0 before it is created, [`CLOSED`] after [`close`].
static KEY: AtomicUsize = AtomicUsize::new(0);
const CLOSED: usize = usize::MAX;
/// Calls between their read of [`KEY`] and their last use of the key.
static USERS: AtomicUsize = AtomicUsize::new(0);

/// Sets the calling thread's value of the key, first creating the key with `destructor` (if
/// given) where there is none, while [`close`] cannot delete it; `false` once closed or keyless.
fn set(value: *const c_void, destructor: Option<Destructor>) -> bool {
    // Sequentially consistent with `close`: either it sees this user, or this sees CLOSED.
    USERS.fetch_add(1, SeqCst);
    let mut key = KEY.load(SeqCst);
    let mut new: libc::pthread_key_t = 0;
    // SAFETY: `new` is a valid place for the key; `close` deletes the key before this copy of
    // `destructor` is unmapped.
    if key == 0
        && destructor.is_some()
        && unsafe { libc::pthread_key_create(&mut new, destructor) } == 0
    {
        key = new as usize + 1;
        if let Err(theirs) = KEY.compare_exchange(0, key, SeqCst, SeqCst) {
            // SAFETY: the key was created above and never given a value.
            unsafe { libc::pthread_key_delete(new) };
            key = theirs;
        }
    }
    // SAFETY: a key this process created, and not deleted (not CLOSED, and counted in USERS).
    let set = key != 0
        && key != CLOSED
        && unsafe { libc::pthread_setspecific((key - 1) as libc::pthread_key_t, value) } == 0;
    USERS.fetch_sub(1, SeqCst);
    set
}

/// Arranges for `destructor` to run at the calling thread's exit, after its thread-local
/// destructors; `false` if no key could be created (`EAGAIN`, `ENOMEM`; a later call retries)
/// or it was closed.
pub(crate) fn arm(destructor: Destructor) -> bool {
    // Any non-null value makes the destructor run; it is never dereferenced.
    set(core::ptr::dangling(), Some(destructor))
}

/// Undoes [`arm`]: the calling thread's exit then calls no code of this copy (which a `dlclose`
/// after its thread-local destructors may unmap).
pub(crate) fn disarm() {
    set(core::ptr::null(), None);
}

/// Deletes the key unless a call is using it (only at exit, where other threads still run);
/// later calls find no key. Called once, at this copy's unload or the process's exit.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn close() {
    let key = KEY.swap(CLOSED, SeqCst);
    if key != 0 && key != CLOSED && USERS.load(SeqCst) == 0 {
        // SAFETY: a key this process created; no call uses it now or will (CLOSED).
        unsafe { libc::pthread_key_delete((key - 1) as libc::pthread_key_t) };
    }
}
