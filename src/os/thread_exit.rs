//! A last-chance destructor at thread exit: POSIX runs `pthread` key destructors in rounds (up to
//! `PTHREAD_DESTRUCTOR_ITERATIONS`) while keys hold values, so a value set by another key's
//! destructor still gets its destructor run, unlike a thread-local destructor registered then.

use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};

/// The process's key plus one; 0 before it is created.
static KEY: AtomicUsize = AtomicUsize::new(0);

/// Arranges for `destructor` to run at the calling thread's exit, after its thread-local
/// destructors; `false` if no key could be created (`EAGAIN`, `ENOMEM`; a later call retries).
pub(crate) fn arm(destructor: unsafe extern "C" fn(*mut c_void)) -> bool {
    let mut key = KEY.load(Ordering::Acquire);
    if key == 0 {
        let mut new: libc::pthread_key_t = 0;
        // SAFETY: `new` is a valid place for the key; `destructor` lives for the whole program.
        if unsafe { libc::pthread_key_create(&mut new, Some(destructor)) } != 0 {
            return false;
        }
        key = new as usize + 1;
        if let Err(theirs) = KEY.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: the key was created above and never given a value.
            unsafe { libc::pthread_key_delete(new) };
            key = theirs;
        }
    }
    let key = (key - 1) as libc::pthread_key_t;
    // Any non-null value makes the destructor run; it is never dereferenced.
    // SAFETY: `key` is a key this process created and never deletes.
    unsafe { libc::pthread_setspecific(key, core::ptr::dangling::<c_void>()) == 0 }
}
