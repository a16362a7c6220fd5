//! The state's memory on Linux and Android: anonymous private mappings of whole pages (the
//! state pool's chunks), marked `MADV_WIPEONFORK` (Linux 4.14) and `MADV_DONTDUMP` (Linux 3.4), and the
//! `/proc/self/smaps` lookup that shows whether the kernel honours the first (made only
//! when [`crate::fork_protection`] asks, never by a read).

use super::Advice;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Maps zeroed pages for `layout` with `advice`: the address, the mapping's length, and
/// whether `MADV_WIPEONFORK` was accepted. `None` when `mmap` fails.
pub(crate) fn map(layout: Layout, advice: Advice) -> Option<(NonNull<u8>, usize, bool)> {
    let page = page_size();
    let len = layout.size().div_ceil(page) * page;
    debug_assert!(layout.align() <= page);
    // SAFETY: an anonymous private mapping with no address hint has no
    // preconditions; the result is checked against MAP_FAILED.
    let addr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    let wiped = match advice {
        // SAFETY: `addr..addr + len` is the mapping made just above and owned here.
        Advice::WipeOnFork => (unsafe { libc::madvise(addr, len, libc::MADV_WIPEONFORK) }) == 0,
        #[cfg(test)]
        Advice::DontDumpOnly => false,
    };
    // SAFETY: as above. Failure (kernels before 3.4) only means a core dump could
    // include the state, so it is ignored.
    unsafe { libc::madvise(addr, len, libc::MADV_DONTDUMP) };
    Some((NonNull::new(addr.cast::<u8>())?, len, wiped))
}

/// Whether the kernel honours `MADV_WIPEONFORK`: a probe page of its own is mapped with
/// the advice, looked up in `/proc/self/smaps` (its `VmFlags` must carry `wf`) and
/// unmapped. Some emulators (qemu-user) accept any advice and ignore it; an unreadable
/// `/proc` (a sandbox) counts as not honoured.
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

/// Unmaps a mapping made by [`map`].
///
/// # Safety
/// `ptr` and `len` come from one call of [`map`]; called once, nothing uses the mapping
/// afterwards.
pub(crate) unsafe fn unmap(ptr: NonNull<u8>, len: usize, _layout: Layout) {
    // SAFETY: the mapping was made by `map` with this address and length and is
    // unmapped exactly once (caller's contract).
    unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// The system's page size, at least 4096 bytes.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
}

/// The unit that no pooled state straddles: the page size, asked once and then kept (so
/// that the fork child handler, which must be async-signal-safe, makes no library call).
pub(crate) fn unit() -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            let page = page_size();
            PAGE.store(page, Ordering::Relaxed);
            page
        }
        page => page,
    }
}

/// The `VmFlags` of the mapping that contains `addr`, from `/proc/self/smaps` (the kernel
/// may have merged neighbouring mappings with equal flags into one entry).
///
/// Read as a stream, a line at a time through a 4 KiB buffer, up to the entry of `addr`: a
/// process with tens of thousands of mappings has megabytes of smaps, which are never held
/// in memory at once.
pub(crate) fn smaps_flags(addr: usize) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open("/proc/self/smaps").ok()?;
    let mut smaps = std::io::BufReader::with_capacity(4096, file);
    // An entry's first line is `start-end perms offset dev inode [path]`; the lines of its
    // fields (`Size:`, ..., `VmFlags:`) have no address range.
    let contains = |line: &str| {
        let range = line.split_whitespace().next()?;
        let (start, end) = range.split_once('-')?;
        let start = usize::from_str_radix(start, 16).ok()?;
        let end = usize::from_str_radix(end, 16).ok()?;
        Some(start <= addr && addr < end)
    };
    let mut line = String::with_capacity(256);
    let mut found = false;
    loop {
        line.clear();
        if smaps.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !found {
            found = contains(&line) == Some(true);
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            return Some(flags.trim().to_owned());
        } else if contains(&line).is_some() {
            // The next entry began: this one had no `VmFlags` line (kernels before 3.8).
            return None;
        }
    }
}
