//! The process's kernel mappings, for the harnesses that measure what the generator costs
//! in them (`benches/harness/thread_ceiling.rs`, `process_first_read.rs`).

/// Lines of `/proc/self/maps`: the process's kernel mappings.
///
/// # Panics
/// If `/proc/self/maps` cannot be read.
pub fn count() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("/proc/self/maps")
        .lines()
        .count()
}

/// Adds `n` one-page mappings that the kernel cannot merge (one anonymous mapping of `n`
/// pages, every other page made `PROT_NONE`), as a long-running process accumulates
/// them; they stay for the process's lifetime.
///
/// # Errors
/// A message naming the call the kernel refused.
pub fn add_unmergeable(n: usize) -> Result<(), &'static str> {
    if n == 0 {
        return Ok(());
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    // SAFETY: an anonymous private mapping with no address hint; checked below.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            n * page,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err("cannot map the filler pages");
    }
    for i in (1..n).step_by(2) {
        // SAFETY: page `i` lies inside the mapping made above, which nothing else uses.
        let r = unsafe {
            libc::mprotect(
                base.cast::<u8>().add(i * page).cast(),
                page,
                libc::PROT_NONE,
            )
        };
        if r != 0 {
            return Err("mprotect of a filler page failed");
        }
    }
    Ok(())
}
