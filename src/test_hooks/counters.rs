//! Process-wide counts of events that leave no trace in the output ([`crate::probe`]).

use crate::probe::{Event, total};

/// Reads of the OS's random source.
pub fn os_reads() -> u64 {
    total(Event::OsRead)
}

/// One-off reads made because a read was under way on the thread.
pub fn one_off_reads_interrupted() -> u64 {
    total(Event::OneOffInterrupted)
}

/// One-off reads made because the thread's state could not be had.
pub fn one_off_reads_unavailable() -> u64 {
    total(Event::OneOffUnavailable)
}

/// One-off reads made while a `fork` was under way.
pub fn one_off_reads_fork_under_way() -> u64 {
    total(Event::OneOffForkUnderWay)
}

/// Chunks of state slots published in the pool.
pub fn chunks_published() -> u64 {
    total(Event::ChunkPublished)
}

/// Thread states set up.
pub fn states_set_up() -> u64 {
    total(Event::StateSetUp)
}

/// Seeds served by the vDSO's `getrandom`.
pub fn vdso_fills() -> u64 {
    total(Event::VdsoFill)
}

/// Reseeds caused by a VM generation change.
pub fn snapshot_reseeds() -> u64 {
    total(Event::SnapshotReseed)
}

/// Reads whose bytes were copied across a fork or restore, discarded and served again.
pub fn discarded_reads() -> u64 {
    total(Event::DiscardedRead)
}
