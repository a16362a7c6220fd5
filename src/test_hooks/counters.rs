//! Process-wide event counters of the thread-local generator.
//!
//! Each counter is one relaxed atomic add on a cold path that already makes a system call
//! (an OS read, a one-off generator); the small-read fast path touches none of them. They
//! let a test observe mechanisms that leave no trace in the output: that every thread
//! reseeded after [`crate::reseed_all`], that a signal handler really interrupted a read,
//! that a destructor really ran after the thread's state was released. The library calls
//! the `count_*` functions only in builds with the test hooks.

use crate::thread::OneOff;

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

static OS_READS: AtomicU64 = AtomicU64::new(0);
static ONE_OFF_INTERRUPTED: AtomicU64 = AtomicU64::new(0);
static ONE_OFF_UNAVAILABLE: AtomicU64 = AtomicU64::new(0);
static ONE_OFF_FORK_UNDER_WAY: AtomicU64 = AtomicU64::new(0);
static CHUNKS_PUBLISHED: AtomicU64 = AtomicU64::new(0);
static STATES_SET_UP: AtomicU64 = AtomicU64::new(0);
static VDSO_FILLS: AtomicU64 = AtomicU64::new(0);
static SNAPSHOT_RESEEDS: AtomicU64 = AtomicU64::new(0);
static SIGNAL_FRAMES_WIPED: AtomicU64 = AtomicU64::new(0);
static DISCARDED_READS: AtomicU64 = AtomicU64::new(0);
static ALT_STACK_FRAMES_WIPED: AtomicU64 = AtomicU64::new(0);
static ALT_STACK_QUERIES: AtomicU64 = AtomicU64::new(0);

#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    allow(dead_code)
)]
pub(crate) fn count_vdso_fill() {
    VDSO_FILLS.fetch_add(1, Relaxed);
}

pub(crate) fn count_os_read() {
    OS_READS.fetch_add(1, Relaxed);
}

pub(crate) fn count_one_off(why: OneOff) {
    match why {
        OneOff::Interrupted => ONE_OFF_INTERRUPTED.fetch_add(1, Relaxed),
        OneOff::Unavailable => ONE_OFF_UNAVAILABLE.fetch_add(1, Relaxed),
        OneOff::ForkUnderWay => ONE_OFF_FORK_UNDER_WAY.fetch_add(1, Relaxed),
    };
}

pub(crate) fn count_state_set_up() {
    STATES_SET_UP.fetch_add(1, Relaxed);
}

pub(crate) fn count_chunk_published() {
    CHUNKS_PUBLISHED.fetch_add(1, Relaxed);
}

#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_os = "linux"),
        all(
            target_arch = "aarch64",
            any(target_os = "linux", target_os = "android")
        )
    )),
    allow(dead_code)
)]
pub(crate) fn count_signal_frame_wipe() {
    SIGNAL_FRAMES_WIPED.fetch_add(1, Relaxed);
}

/// Keystream computations (refills, direct fills) after which the stack below the
/// computation was zeroed as far as a signal frame reaches, because a signal frame had been
/// pushed there during the computation (x86-64 Linux, AArch64 Linux and Android; always 0
/// elsewhere).
pub fn signal_frames_wiped() -> u64 {
    SIGNAL_FRAMES_WIPED.load(Relaxed)
}

#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_os = "linux"),
        all(
            target_arch = "aarch64",
            any(target_os = "linux", target_os = "android")
        )
    )),
    allow(dead_code)
)]
pub(crate) fn count_alt_stack_frame_wipe() {
    ALT_STACK_FRAMES_WIPED.fetch_add(1, Relaxed);
}

#[cfg_attr(
    not(any(
        all(target_arch = "x86_64", target_os = "linux"),
        all(
            target_arch = "aarch64",
            any(target_os = "linux", target_os = "android")
        )
    )),
    allow(dead_code)
)]
pub(crate) fn count_alt_stack_query() {
    ALT_STACK_QUERIES.fetch_add(1, Relaxed);
}

/// `sigaltstack` queries made around keystream computations, by every thread (x86-64
/// Linux, AArch64 Linux and Android; always 0 elsewhere): one per computation without the
/// rseq watch, one per computation after a signal or a preemption with it.
pub fn alt_stack_queries() -> u64 {
    ALT_STACK_QUERIES.load(Relaxed)
}

/// Whether keystream computations learn of signals delivered during them from the
/// thread's rseq area (x86-64 Linux with glibc 2.35 or later), so that they make no
/// `sigaltstack` query unless a signal came or the thread was preempted.
pub fn alt_stack_queries_only_after_signals() -> bool {
    crate::keystream::scrub_signals_watched()
}

/// Whether a new thread's first keystream computation makes no `sigaltstack` query unless
/// a signal comes first: under the rseq watch, on a kernel (Linux 4.18 to 6.18, from the
/// vDSO's version note) that clears `rseq_cs` at every signal delivery.
pub fn set_up_spares_the_alt_stack_query() -> bool {
    crate::keystream::scrub_set_up_spares_the_query()
}

/// Keystream computations (refills, direct fills) after which the top of the thread's
/// alternate signal stack was zeroed, one signal frame's size, because the kernel had
/// written a signal frame there during the computation (x86-64 Linux, AArch64 Linux and
/// Android; always 0 elsewhere).
pub fn alt_stack_frames_wiped() -> u64 {
    ALT_STACK_FRAMES_WIPED.load(Relaxed)
}

/// Chunks published in the state pools' directories: one per 192 thread states with 4 KiB
/// pages, added when no published chunk had a free slot. Threads that find the same
/// directory entry empty may each map a chunk; only the one that publishes it is counted,
/// and the others unmap theirs at once.
pub fn chunks_published() -> u64 {
    CHUNKS_PUBLISHED.load(Relaxed)
}

/// Requests the vDSO's `getrandom` filled (new threads' first seeds on x86-64 with Linux
/// 6.11 or later; always 0 elsewhere).
pub fn vdso_fills() -> u64 {
    VDSO_FILLS.load(Relaxed)
}

/// Thread states set up in a slot of the state pool (a thread's first read).
pub fn states_set_up() -> u64 {
    STATES_SET_UP.load(Relaxed)
}

/// Requests made to the OS random source by this process's thread-local generators so far:
/// first seedings, periodic and epoch reseeds, [`crate::reseed`], and the seeds of one-off
/// generators (one request of 36 bytes each, successful or not).
pub fn os_reads() -> u64 {
    OS_READS.load(Relaxed)
}

/// Reads served by a one-off OS-keyed generator because they interrupted a read on the
/// same thread (a signal handler).
pub fn one_off_reads_interrupted() -> u64 {
    ONE_OFF_INTERRUPTED.load(Relaxed)
}

/// Reads served by a one-off OS-keyed generator because the calling thread had no state:
/// already released at thread exit (a later thread-local destructor), being set up, or
/// refused memory.
pub fn one_off_reads_unavailable() -> u64 {
    ONE_OFF_UNAVAILABLE.load(Relaxed)
}

/// Reads served by a one-off OS-keyed generator because a `fork` was under way (reads from
/// other libraries' fork handlers, between fkrng's prepare handler and its parent or child
/// handler).
pub fn one_off_reads_fork_under_way() -> u64 {
    ONE_OFF_FORK_UNDER_WAY.load(Relaxed)
}

pub(crate) fn count_snapshot_reseed() {
    SNAPSHOT_RESEEDS.fetch_add(1, Relaxed);
}

/// Reseeds made because the VM generation counter changed since the thread's last reseed
/// (a snapshot restore), counted after the reseed succeeded.
pub fn snapshot_reseeds() -> u64 {
    SNAPSHOT_RESEEDS.load(Relaxed)
}

pub(crate) fn count_discarded_read() {
    DISCARDED_READS.fetch_add(1, Relaxed);
}

/// Reads whose bytes were copied from a thread's state (or a one-off generator) that was
/// stale, or went stale while they were copied (the epoch or the VM generation moved, or
/// the state's pages were wiped under a raw `clone`), and were therefore zeroed and served
/// again.
pub fn discarded_reads() -> u64 {
    DISCARDED_READS.load(Relaxed)
}
