//! Reads at thread exit after fkrng has released the thread's state.
//!
//! On Unix fkrng releases a thread's state in the destructor of a `pthread` key of its own,
//! created at the process's first state set-up. glibc and musl run a thread's key
//! destructors in the order of the keys, and a key created later gets a later place, so the
//! destructor of a key created after fkrng's runs after the release.

use std::ffi::c_void;

/// Creates a key whose `destructor` runs after fkrng's release on threads that set it
/// ([`set`]). The caller has made an fkrng read before (that creates fkrng's key).
///
/// # Panics
/// If `pthread_key_create` fails.
pub fn key_after_release(destructor: unsafe extern "C" fn(*mut c_void)) -> libc::pthread_key_t {
    let mut key = 0;
    // SAFETY: `key` is a valid place; the destructor is a function, alive for the program.
    let created = unsafe { libc::pthread_key_create(&mut key, Some(destructor)) };
    assert_eq!(created, 0, "pthread_key_create");
    key
}

/// Gives `key` the value `value` (not 0) on the calling thread, so that its destructor runs
/// with that value when the thread exits.
///
/// # Panics
/// If `value` is 0 or `pthread_setspecific` fails.
pub fn set(key: libc::pthread_key_t, value: usize) {
    assert_ne!(
        value, 0,
        "a key's destructor runs only for a value other than 0"
    );
    // SAFETY: the value is never dereferenced, by this crate or by the destructors.
    let set = unsafe { libc::pthread_setspecific(key, std::ptr::without_provenance(value)) };
    assert_eq!(set, 0, "pthread_setspecific");
}
