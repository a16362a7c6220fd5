//! The thread-local generator's hooks for the unit tests and the test hooks.

/// States that tests set up without wipe-on-fork, in chunks of their own.
#[cfg(test)]
pub(crate) static STATES_WITHOUT_WIPE_ON_FORK: crate::pool::StatePool<super::ThreadState> =
    crate::pool::StatePool::new(crate::os::pages::Advice::DontDumpOnly);

/// Leaves a read marked under way, as a `siglongjmp` out of a handler does.
pub(crate) fn abandon_read_in_progress() {
    super::set_slot(super::BUSY);
}
