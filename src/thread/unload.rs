//! What this copy of fkrng gives back when its code is unmapped (a `dlclose` of a library that
//! embeds it) or its process exits: the thread-exit key, and every state chunk and the vDSO
//! state page that no thread holds.
//!
//! At an unload no thread holds a slot or still has the key set: a thread that leased a slot
//! registered its owner's thread-local destructor, which keeps the library mapped until it has
//! run (the C library counts them per library), and that destructor releases the slot and
//! clears the key first; a thread whose first read came after its thread-local destructors
//! registered one that never runs, so the library stays mapped for good. At exit other threads
//! may still read: only what is sealed unused is freed ([`crate::pool::StatePool::close`]), and
//! the key stays if a call is using it.

/// Run by the C library at this copy's unload or at exit (`DT_FINI_ARRAY`), in ELF binaries,
/// shared libraries and static executables alike.
#[used]
#[unsafe(link_section = ".fini_array")]
static AT_UNLOAD: extern "C" fn() = at_unload;

extern "C" fn at_unload() {
    crate::os::thread_exit::close();
    super::STATES.close();
    #[cfg(target_arch = "x86_64")]
    crate::os::vdso::close();
}
