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

/// Runs `f` on the key (created with `destructor`, if given, where there is none) while
/// [`close`] cannot delete it; `None` once closed or where there is no key.
fn with_key<R>(
    destructor: Option<Destructor>,
    f: impl FnOnce(libc::pthread_key_t) -> R,
) -> Option<R> {
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
    let result = (key != 0 && key != CLOSED).then(|| f((key - 1) as libc::pthread_key_t));
    USERS.fetch_sub(1, SeqCst);
    result
}

/// Arranges for `destructor` to run at the calling thread's exit, after its thread-local
/// destructors; `false` if no key could be created (`EAGAIN`, `ENOMEM`; a later call retries)
/// or it was closed.
pub(crate) fn arm(destructor: Destructor) -> bool {
    // Any non-null value makes the destructor run; it is never dereferenced.
    // SAFETY: a live key of this process (`with_key`).
    let set = |key| unsafe { libc::pthread_setspecific(key, core::ptr::dangling::<c_void>()) };
    with_key(Some(destructor), set) == Some(0)
}

/// Undoes [`arm`] for the calling thread, whose exit then calls no destructor of this copy of
/// the code (which a `dlclose` after its thread-local destructors may unmap).
pub(crate) fn disarm() {
    // SAFETY: a live key of this process (`with_key`); a null value is always valid.
    with_key(None, |key| unsafe {
        libc::pthread_setspecific(key, core::ptr::null())
    });
}

/// Deletes the key unless a call is using it (only at process exit, where other threads still
/// run); later calls find no key. Called once, at this copy's unload or the process's exit.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) fn close() {
    let key = KEY.swap(CLOSED, SeqCst);
    if key != 0 && key != CLOSED && USERS.load(SeqCst) == 0 {
        // SAFETY: a key this process created; no call uses it now or will (CLOSED).
        unsafe { libc::pthread_key_delete((key - 1) as libc::pthread_key_t) };
    }
}
