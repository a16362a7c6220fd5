//! The OS source as a new thread's first seed reads it, for the residue test's scan of what
//! the vDSO's `getrandom` leaves behind.

/// Fills `dest` as a new thread's first seed is filled (`entropy::fill_new_thread`): from
/// the vDSO's `getrandom` where fkrng uses it, else the system call.
///
/// # Errors
/// The OS source's error.
pub fn fill_as_new_thread(dest: &mut [u8]) -> Result<(), crate::error::Error> {
    crate::os::fill_new_thread(dest, crate::lifecycle::fork::epoch())
}

/// Whether the vDSO's `getrandom` was found (x86-64 Linux 6.11 and later).
pub fn vdso_getrandom_found() -> bool {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(miri)))]
    return crate::os::vdso::function().is_some();
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(miri))))]
    return false;
}
