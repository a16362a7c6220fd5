//! The state's memory: the pool that thread states are carved from ([`StatePool`], many
//! states to a chunk, zero-initialised), its chunks on Linux and Android marked
//! wipe-on-fork and do-not-dump.
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
//! The pool (`pool.rs`) is the same everywhere; the OS-specific part is one small seam, one
//! file per backend, picked here: `linux.rs` (anonymous private mappings) and `other.rs`
//! (zeroed heap allocations, every other OS; also compiled on Linux for its unit test).
//! Each backend provides `map` (zeroed storage for a layout, with the advice applied,
//! reporting whether wipe-on-fork was accepted), `unit` (the page size that no state may
//! straddle), `probe_honoured` (whether the OS shows the advice in force on a probe page of
//! its own) and `unmap`.

use core::sync::atomic::{AtomicU8, Ordering};

// Under Miri, which cannot run `mmap` advice or read `/proc`, the heap backend of other
// systems serves Linux too.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) mod linux;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) use linux as os;
#[cfg(any(not(any(target_os = "linux", target_os = "android")), test, miri))]
pub(crate) mod other;
#[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
pub(crate) use other as os;

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
    /// atfork epoch alone reseeds a forked child. Such chunks form a pool of their own,
    /// and leave the process-wide finding of [`wipe_on_fork`] untouched.
    #[cfg(test)]
    DontDumpOnly,
}

/// Records what a new chunk's `advice` came to: a refused `MADV_WIPEONFORK` means no
/// wipe-on-fork for the process; the first accepted one waits for [`wipe_on_fork`]'s check.
pub(crate) fn note_advice(advice: Advice, wiped: bool) {
    if advice != Advice::WipeOnFork {
        return;
    }
    if !wiped {
        WIPE_ON_FORK.store(NOT_HONOURED, Ordering::Relaxed);
    } else {
        let _ =
            WIPE_ON_FORK.compare_exchange(UNKNOWN, ACCEPTED, Ordering::Relaxed, Ordering::Relaxed);
    }
}
