//! Process-wide lifecycle of the thread-local generators: fork epoch, VM generation, reseed
//! schedule, OS seeding, and the one-off generator for reads that cannot use a thread's state.

pub(crate) mod checks;
pub(crate) mod diversifier;
pub(crate) mod fork;
pub(crate) mod one_off;
pub(crate) mod reseed;
pub(crate) mod seed;
pub(crate) mod snapshot;
