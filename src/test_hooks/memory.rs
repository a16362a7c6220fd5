//! What one thread's generator costs in memory, for the memory figures of the benchmarks
//! (`benches/harness/thread_memory.rs`).

use crate::memory::Pages;
use crate::thread::{OWNER, STATE, Slot};

/// The memory of the calling thread's generator, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateMemory {
    /// The state itself: key, buffer, counters and the re-entrancy flag.
    pub state: usize,
    /// The storage that holds it: whole pages on Linux and Android (wipe-on-fork advice
    /// applies to pages, so a state shares its pages with nothing else); the allocation
    /// elsewhere.
    pub storage: usize,
    /// The two thread-local values (the state pointer and the storage's owner), present in
    /// every thread of a program that links the library, whether or not it reads; the
    /// standard library's destructor registration flag for the owner is not counted.
    pub thread_locals: usize,
}

/// The calling thread's figures; `None` before its first read (no storage yet).
pub fn state_memory() -> Option<StateMemory> {
    Some(StateMemory {
        state: size_of::<Slot>(),
        storage: state_range().map(|(start, end)| end - start)?,
        thread_locals: STATE.with(size_of_val) + OWNER.with(size_of_val),
    })
}

/// The address range of the calling thread's state storage (the whole mapping on Linux);
/// `None` before its first read and after its exit.
pub(crate) fn state_range() -> Option<(usize, usize)> {
    OWNER
        .try_with(|owner| {
            let pages = owner.0.take();
            let range = pages.as_ref().map(Pages::range);
            owner.0.set(pages);
            range
        })
        .ok()
        .flatten()
}
