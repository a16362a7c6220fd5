//! State memory on Linux and Android: anonymous mappings, advised, and the smaps check.

use super::Advice;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Chunks are page mappings of their own, advised (not heap allocations).
pub(crate) const MAPPED: bool = true;

/// Maps zeroed pages for `layout` with `advice`: the address, the mapping's length, and
/// whether `MADV_WIPEONFORK` was accepted. `None` when `mmap` fails.
pub(crate) fn map(layout: Layout, advice: Advice) -> Option<(NonNull<u8>, usize, bool)> {
    let page = page_size();
    let len = layout.size().div_ceil(page) * page;
    debug_assert!(layout.align() <= page);
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    // SAFETY: an anonymous private mapping with no address hint; the result is checked below.
    let addr = unsafe { libc::mmap(core::ptr::null_mut(), len, prot, flags, -1, 0) };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let wiped = match advice {
        // SAFETY: `addr..addr + len` is the mapping made just above and owned here.
        Advice::WipeOnFork => (unsafe { libc::madvise(addr, len, libc::MADV_WIPEONFORK) }) == 0,
        #[cfg(test)]
        Advice::DontDumpOnly => false,
    };
    // SAFETY: as above. A failure (before Linux 3.4) only lets a core dump hold the state.
    unsafe { libc::madvise(addr, len, libc::MADV_DONTDUMP) };
    Some((NonNull::new(addr.cast::<u8>())?, len, wiped))
}

/// Whether a probe page mapped with `MADV_WIPEONFORK` shows `wf` in its `VmFlags` (qemu-user
/// accepts and ignores the advice); an unreadable `/proc` counts as not honoured.
pub(crate) fn probe_honoured() -> bool {
    let Some((ptr, len, accepted)) = map(Layout::new::<u8>(), Advice::WipeOnFork) else {
        return false;
    };
    let honoured = accepted
        && smaps_flags(ptr.as_ptr() as usize)
            .is_some_and(|flags| flags.split_whitespace().any(|f| f == "wf"));
    // SAFETY: the probe page was mapped just above and nothing else refers to it.
    unsafe { unmap(ptr, len, Layout::new::<u8>()) };
    honoured
}

/// Unmaps a mapping of [`map`].
///
/// # Safety
/// `ptr` and `len` come from one call of [`map`]; called once, the mapping unused after.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize, _layout: Layout) {
    // SAFETY: a mapping of `map`, with its address and length, unmapped once (caller's).
    unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// The system's page size, at least 4096 bytes.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
}

/// The unit no state straddles: the page size, kept for the fork child handler (no calls).
pub(crate) fn unit() -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    if PAGE.load(Ordering::Relaxed) == 0 {
        PAGE.store(page_size(), Ordering::Relaxed);
    }
    PAGE.load(Ordering::Relaxed)
}

/// The `VmFlags` of the `/proc/self/smaps` entry holding `addr`, streamed up to it through
/// a 4 KiB buffer by calls that are not cancellation points; `None` if unreadable or the
/// entry has none.
pub(crate) fn smaps_flags(addr: usize) -> Option<String> {
    use std::io::BufRead;
    let file = crate::os::nocancel::Descriptor::open(c"/proc/self/smaps").ok()?;
    let mut smaps = std::io::BufReader::with_capacity(4096, &file);
    // An entry begins with `start-end perms ...`; its field lines have no address range.
    let contains = |line: &str| {
        let (start, end) = line.split_whitespace().next()?.split_once('-')?;
        let hex = |s| usize::from_str_radix(s, 16).ok();
        Some((hex(start)?..hex(end)?).contains(&addr))
    };
    let mut line = String::with_capacity(256);
    let mut found = false;
    loop {
        line.clear();
        if smaps.read_line(&mut line).ok()? == 0 {
            return None;
        } else if !found {
            found = contains(&line) == Some(true);
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.trim().to_owned());
        } else if contains(&line).is_some() {
            // The next entry began: this one had no `VmFlags` line (before Linux 3.8).
            return None;
        }
    }
}
