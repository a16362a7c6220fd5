//! What this copy of fkrng gives back when its code is unmapped (a `dlclose` of a library that
//! embeds it) or its process exits: the thread-exit key, the state chunks that no thread holds
//! (through the closer [`at_unload`] names) and the vDSO state page. At an unload no thread
//! holds a slot or has the key set (docs/DESIGN.md, "Unload"); at exit other threads may still
//! read, so only what is sealed unused is freed.

use core::sync::atomic::{AtomicPtr, Ordering};

/// The `fn()` that frees the state chunks no thread holds, or null before a thread set up its
/// state. A plain store, not a `Once`: a child forked mid-set-up must never wait for it.
static CLOSE_STATES: AtomicPtr<()> = AtomicPtr::new(core::ptr::null_mut());

/// Makes `close_states` run at this copy's unload or the process's exit, after the thread-exit
/// key is deleted and before the vDSO state page is unmapped.
pub(crate) fn at_unload(close_states: fn()) {
    CLOSE_STATES.store(close_states as *mut (), Ordering::Release);
}

/// Run by the C library at this copy's unload or at exit (`DT_FINI_ARRAY`).
#[used]
#[unsafe(link_section = ".fini_array")]
static AT_UNLOAD: extern "C" fn() = run;

extern "C" fn run() {
    super::thread_exit::close();
    let close_states = CLOSE_STATES.load(Ordering::Acquire);
    if !close_states.is_null() {
        // SAFETY: only `fn()` values are stored in `CLOSE_STATES` (`at_unload`).
        unsafe { core::mem::transmute::<*mut (), fn()>(close_states)() };
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    super::vdso::close();
}
