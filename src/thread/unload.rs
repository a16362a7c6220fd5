//! What this copy of fkrng gives back when its code is unmapped (a `dlclose` of a library that
//! embeds it) or its process exits: the thread-exit key, and the state chunks and vDSO state page
//! that no thread holds. At an unload no thread holds a slot or has the key set (docs/DESIGN.md,
//! "Unload"); at exit other threads may still read, so only what is sealed unused is freed.

/// Run by the C library at this copy's unload or at exit (`DT_FINI_ARRAY`).
#[used]
#[unsafe(link_section = ".fini_array")]
static AT_UNLOAD: extern "C" fn() = at_unload;

extern "C" fn at_unload() {
    crate::os::thread_exit::close();
    super::STATES.close();
    #[cfg(target_arch = "x86_64")]
    crate::os::vdso::close();
}
