//! The state pool's memory: zeroed chunks from one backend per OS, on Linux and Android
//! advised `MADV_WIPEONFORK` (a forked child reads zero pages: unseeded) and `MADV_DONTDUMP`.
//! Invariant: no read opens anything under `/proc`; only [`wipe_on_fork`] does.

use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

// Under Miri, which runs no `mmap` advice and reads no `/proc`, the heap backend serves.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) mod linux;
#[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
pub(crate) use linux as os;
#[cfg(any(not(any(target_os = "linux", target_os = "android")), test, miri))]
pub(crate) mod other;
#[cfg(all(any(target_os = "linux", target_os = "android"), test, not(miri)))]
pub(crate) use linux::{page_size, smaps_flags};
#[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
pub(crate) use other as os;

/// [`wipe_on_fork`]'s findings: no mapping yet, honoured, not (refused, ignored, other OS);
/// and, before its check, every mapping's advice accepted.
pub(crate) const UNKNOWN: u8 = 0;
pub(crate) const HONOURED: u8 = 1;
pub(crate) const NOT_HONOURED: u8 = 2;
const ACCEPTED: u8 = 3;
static WIPE_ON_FORK: AtomicU8 = AtomicU8::new(UNKNOWN);

/// [`UNKNOWN`] before the first state mapping, then [`HONOURED`] or [`NOT_HONOURED`]; the
/// first call after an accepted advice checks it ([`os::probe_honoured`]), later ones load.
pub(crate) fn wipe_on_fork() -> u8 {
    let found = WIPE_ON_FORK.load(Relaxed);
    if found != ACCEPTED {
        return found;
    }
    let honoured = os::probe_honoured();
    let verdict = if honoured { HONOURED } else { NOT_HONOURED };
    // A mapping whose advice was refused meanwhile has set NOT_HONOURED: keep that.
    let swapped = WIPE_ON_FORK.compare_exchange(ACCEPTED, verdict, Relaxed, Relaxed);
    swapped.map_or_else(|now| now, |_| verdict)
}

/// The advice a state's pages are mapped with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Wipe-on-fork and do-not-dump: every state of the library.
    WipeOnFork,
    /// Do-not-dump only (tests of the atfork epoch alone); leaves [`wipe_on_fork`] alone.
    #[cfg(test)]
    DontDumpOnly,
}

/// Records a chunk's advice: a refused `MADV_WIPEONFORK` means none for the process; an
/// accepted one is left for [`wipe_on_fork`] to check.
pub(crate) fn note_advice(advice: Advice, wiped: bool) {
    if advice == Advice::WipeOnFork && !wiped {
        WIPE_ON_FORK.store(NOT_HONOURED, Relaxed);
    } else if advice == Advice::WipeOnFork {
        let _ = WIPE_ON_FORK.compare_exchange(UNKNOWN, ACCEPTED, Relaxed, Relaxed);
    }
}
