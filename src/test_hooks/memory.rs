//! What one thread's generator costs in memory, for the memory figures of the benchmarks
//! (`benches/harness/thread_memory.rs`).

use crate::pool::Lease;
use crate::thread::{OWNER, STATE, ThreadState};

/// The memory of the calling thread's generator, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateMemory {
    /// The state itself: key, buffer and counters.
    pub state: usize,
    /// The pool memory it takes: its share of a page of the state pool (a 4 KiB page holds
    /// three states; the page's tail beyond them is unused), or of a 4096-byte unit of a
    /// heap chunk elsewhere.
    pub storage: usize,
    /// The two thread-local values (the state pointer with the re-entrancy flag, and the
    /// storage's owner), present in every thread of a program that links the library,
    /// whether or not it reads; the standard library's destructor registration flag for the
    /// owner is not counted.
    pub thread_locals: usize,
}

/// The calling thread's figures; `None` before its first read (no storage yet).
pub fn state_memory() -> Option<StateMemory> {
    Some(StateMemory {
        state: size_of::<ThreadState>(),
        storage: OWNER
            .try_with(|owner| {
                let lease = owner.0.take();
                let share = lease.as_ref().map(Lease::share);
                owner.0.set(lease);
                share
            })
            .ok()
            .flatten()?,
        thread_locals: STATE.with(size_of_val) + OWNER.with(size_of_val),
    })
}

/// The address range of the calling thread's state slot in the state pool (1152 bytes);
/// `None` before its first read and after its exit.
pub fn state_range() -> Option<(usize, usize)> {
    OWNER
        .try_with(|owner| {
            let pages = owner.0.take();
            let range = pages.as_ref().map(Lease::range);
            owner.0.set(pages);
            range
        })
        .ok()
        .flatten()
}

/// Leaves the calling thread's slot marked busy, as a read does that a signal handler's
/// `siglongjmp` abandoned: the thread's later reads take the one-off path. Returns the
/// slot's address; `None` before the thread's first read and after its exit.
pub fn abandon_read() -> Option<usize> {
    let p = crate::thread::slot();
    if !crate::thread::is_slot(p) {
        return None;
    }
    crate::thread::hooks::abandon_read_in_progress();
    Some(p as usize)
}

/// The thread state pool's published chunks and claimed slots.
pub fn pool_census() -> (usize, usize) {
    crate::thread::STATES.census()
}
