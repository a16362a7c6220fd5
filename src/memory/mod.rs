//! The state's memory: page-backed storage for one thread's generator, zero-initialised,
//! and on Linux and Android marked wipe-on-fork and do-not-dump.
//!
//! - **Wipe-on-fork (Linux 4.14 and later).** The kernel hands a child zero pages at the
//!   address of an `MADV_WIPEONFORK` mapping (`madvise(2)`); a zeroed state reads as empty and
//!   unseeded, so the child's first read seeds from the OS. This covers `fork()`, `clone()`
//!   calls that run no atfork handlers, and every thread of a multi-threaded parent.
//! - **Do-not-dump.** `MADV_DONTDUMP` leaves the key and buffer out of core dumps.
//! - **The honoured check.** Some emulators accept any `madvise` advice and ignore it, so
//!   when [`crate::fork_protection`] first asks ([`wipe_on_fork`]), a probe page mapped with
//!   the advice is looked up in `/proc/self/smaps` (read as a stream, up to its entry):
//!   unless its `VmFlags` carry `wf`, the process counts as having no wipe-on-fork. No read
//!   of the generator opens anything under `/proc`: a read needs only the advice accepted,
//!   and the atfork epoch covers `fork()` either way.
//!
//! The OS-specific part is one small seam, one file per backend, picked here: `linux.rs`
//! (an anonymous private mapping per state) and `other.rs` (a zeroed heap allocation, every
//! other OS; also compiled on Linux for its unit test). Each backend provides `map` (zeroed
//! storage for a layout, with the advice applied, reporting whether wipe-on-fork was
//! accepted), `probe_honoured` (whether the OS shows the advice in force on a probe page of
//! its own) and `unmap`.

use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};

// Under Miri, which cannot run `mmap` advice or read `/proc`, the heap backend of other
// systems serves Linux too.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
mod linux;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
use linux as os;
#[cfg(any(not(any(target_os = "linux", target_os = "android")), test, miri))]
mod other;
#[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
use other as os;

#[cfg(all(
    any(
        all(
            target_os = "linux",
            target_endian = "little",
            target_pointer_width = "64"
        ),
        all(any(target_os = "linux", target_os = "android"), test)
    ),
    not(miri)
))]
pub(crate) use linux::page_size;
#[cfg(all(any(target_os = "linux", target_os = "android"), test, not(miri)))]
pub(crate) use linux::smaps_flags;

/// [`wipe_on_fork`]: no mapping made yet.
pub(crate) const UNKNOWN: u8 = 0;
/// [`wipe_on_fork`]: the kernel was seen to honour `MADV_WIPEONFORK`.
pub(crate) const HONOURED: u8 = 1;
/// [`wipe_on_fork`]: no wipe-on-fork (refused, ignored, or not on this OS).
pub(crate) const NOT_HONOURED: u8 = 2;
/// Every state mapping so far had `MADV_WIPEONFORK` accepted; not yet checked against
/// `/proc/self/smaps` (that waits for [`wipe_on_fork`]).
const ACCEPTED: u8 = 3;

/// Whether this process's kernel really wipes `MADV_WIPEONFORK` pages in a child.
static WIPE_ON_FORK: AtomicU8 = AtomicU8::new(UNKNOWN);

/// What this process found out about wipe-on-fork: [`UNKNOWN`] before its first state
/// mapping, then [`HONOURED`] or [`NOT_HONOURED`]. The first call after a mapping whose
/// advice was accepted checks that the kernel honours it (one probe page and a read of
/// `/proc/self/smaps` up to its entry, [`os::probe_honoured`]); later calls are one load.
/// Called by [`crate::fork_protection`] only, never on a read.
pub(crate) fn wipe_on_fork() -> u8 {
    let found = WIPE_ON_FORK.load(Ordering::Relaxed);
    if found != ACCEPTED {
        return found;
    }
    let verdict = if os::probe_honoured() {
        HONOURED
    } else {
        NOT_HONOURED
    };
    // A mapping whose advice was refused meanwhile has set NOT_HONOURED: keep that.
    match WIPE_ON_FORK.compare_exchange(ACCEPTED, verdict, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => verdict,
        Err(now) => now,
    }
}

/// The advice a state's pages are mapped with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Wipe-on-fork and do-not-dump: every state of the library.
    WipeOnFork,
    /// Do-not-dump only, as on a system without wipe-on-fork: lets the tests show that the
    /// atfork epoch alone reseeds a forked child. Such pages are never spare for another
    /// thread, and leave the process-wide finding of [`wipe_on_fork`] untouched.
    #[cfg(test)]
    DontDumpOnly,
}

/// Page-backed storage for one `T`, zero-initialised (see the module documentation).
pub(crate) struct Pages<T> {
    ptr: NonNull<T>,
    /// Bytes of the storage (whole pages on Linux).
    len: usize,
    advice: Advice,
}

// SAFETY: `Pages<T>` owns its storage exclusively, as a `Box<T>` does (no other handle to
// the mapping exists, and dropping it unmaps it once), so it may move to another thread
// whenever `T` may.
unsafe impl<T: Send> Send for Pages<T> {}

impl<T> Pages<T> {
    /// Maps zeroed storage for a `T` with `advice`. `T` must be valid when all-zero and not
    /// zero-sized. `None` when the OS refuses the memory.
    pub(crate) fn new_zeroed(advice: Advice) -> Option<Self> {
        let (ptr, len, wiped) = os::map(Layout::new::<T>(), advice)?;
        if advice == Advice::WipeOnFork {
            if !wiped {
                WIPE_ON_FORK.store(NOT_HONOURED, Ordering::Relaxed);
            } else {
                // The first accepted advice; the check against smaps waits until asked.
                let _ = WIPE_ON_FORK.compare_exchange(
                    UNKNOWN,
                    ACCEPTED,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
        }
        Some(Pages {
            ptr: ptr.cast(),
            len,
            advice,
        })
    }

    /// The stored value's address (valid until `self` is dropped).
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// The advice the storage was mapped with.
    pub(crate) fn advice(&self) -> Advice {
        self.advice
    }

    /// The storage's address range (the whole mapping on Linux), for tests that inspect
    /// `/proc/self/smaps` or every byte of a released state, and for the memory figures of
    /// [`crate::test_hooks::memory`].
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn range(&self) -> (usize, usize) {
        let start = self.ptr.as_ptr() as usize;
        (start, start + self.len)
    }
}

impl<T> Drop for Pages<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` come from `os::map` for this layout, and the storage is
        // released exactly once; no reference into it outlives `self`.
        unsafe { os::unmap(self.ptr.cast(), self.len, Layout::new::<T>()) }
    }
}
