//! Hooks into the thread-local generator for the unit tests: a state without wipe-on-fork,
//! what a state would serve next, and the record of every state release at thread exit.

use crate::generator::KEY_LEN;
use crate::thread::{set_up, slot};

/// Sets up the calling thread's state, before its first read, in pages without
/// wipe-on-fork (`Advice::DontDumpOnly`), so that only the atfork epoch protects it.
pub(crate) fn set_up_without_wipe_on_fork() {
    assert!(slot().is_null(), "the thread has read before");
    let pool = &crate::thread::hooks::STATES_WITHOUT_WIPE_ON_FORK;
    let p = set_up(crate::thread::register_atfork, pool);
    assert!(matches!(p, Ok(Some(_))), "set-up failed");
}

/// What this thread's state would serve next without a reseed (the unserved rest of its
/// buffer, then keystream under its key) and the VM generation it last reseeded at; `None`
/// before its first read. For the snapshot tests (little-endian 64-bit Linux) and the test
/// of reads interrupted by a fork (Linux, with the test hooks).
#[cfg(all(
    target_os = "linux",
    any(
        all(target_endian = "little", target_pointer_width = "64"),
        fkrng_test_hooks
    )
))]
pub(crate) fn unreseeded_continuation() -> Option<(Vec<u8>, [u8; KEY_LEN], u64)> {
    let p = slot();
    if !crate::thread::is_slot(p) {
        return None;
    }
    // SAFETY: a slot (`is_slot`) is this thread's live slot, which stays mapped until the
    // thread's owner resets the slot first (as in `thread::try_fill`).
    Some(unsafe {
        crate::thread::enter(p, |st| {
            let buffer = st.fke.buffer();
            let rest = buffer[buffer.len() - st.fke.available()..].to_vec();
            (rest, *st.fke.key(), st.life.generation)
        })
    })
}

pub(crate) use crate::probe::hooks::{Release, releases};
