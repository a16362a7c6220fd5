//! Whether the kernel delivered a signal to this thread (or preempted it) during a keystream
//! computation, without a system call: the thread's restartable-sequences area (`rseq(2)`,
//! Linux 4.18, registered for every thread by glibc 2.35 and later) holds a pointer,
//! `rseq_cs`, which the kernel sets to NULL when it preempts the thread or delivers it a
//! signal while the pointer names a critical section that does not contain the interrupted
//! instruction (the uapi's `struct rseq` documentation, `linux/rseq.h`). The two
//! descriptors here name an empty section, which contains no instruction: a pointer to one
//! of them that is still there later proves that no signal was delivered to this thread in
//! between.
//!
//! - [`begin`], before a computation: sets `rseq_cs` to [`BUSY`] and says whether it was
//!   [`IDLE`] (left by the last computation's [`end`] and not cleared since).
//! - [`end`], after it (once the registers are cleared): `true` if `rseq_cs` is still
//!   [`BUSY`] (no signal during the computation), and then sets it to [`IDLE`]; otherwise
//!   leaves it NULL. A computation made by a signal handler that interrupted another one
//!   ends with the pointer [`IDLE`] or NULL, never [`BUSY`], so the interrupted computation
//!   sees the signal too.
//!
//! Where glibc registered no area (musl, older glibc, `glibc.pthread.rseq=0`, qemu-user,
//! which does not implement the system call) or its `__rseq_offset` cannot be found
//! (static binaries), [`begin`] returns `None` and the caller asks `sigaltstack` at every
//! computation. Another user of `rseq_cs` (a per-CPU allocator) sets it at the start of
//! each of its own sections; a value left by it reads as "a signal came", which costs one
//! query.

use core::sync::atomic::{AtomicIsize, AtomicU32, AtomicU64, Ordering};

/// A critical-section descriptor (`struct rseq_cs`, 32-byte aligned): version 0, no flags,
/// the empty range at address 0, which no instruction lies in, and an abort address that
/// the kernel checks but never jumps to (it jumps there only from inside the range): the
/// kernel validates a descriptor whenever it finds one installed, and refuses, with
/// `SIGSEGV`, one whose abort address is not preceded by the signature the thread's area
/// was registered with ([`SIGNATURE`]). The fields are atomics only so that the abort
/// address, known at run time, can be stored once before any use.
#[repr(C, align(32))]
struct CriticalSection {
    version: AtomicU32,
    flags: AtomicU32,
    start_ip: AtomicU64,
    post_commit_offset: AtomicU64,
    abort_ip: AtomicU64,
}

impl CriticalSection {
    const fn empty() -> Self {
        CriticalSection {
            version: AtomicU32::new(0),
            flags: AtomicU32::new(0),
            start_ip: AtomicU64::new(0),
            post_commit_offset: AtomicU64::new(0),
            abort_ip: AtomicU64::new(0),
        }
    }
}

/// `rseq_cs` during a computation.
static BUSY: CriticalSection = CriticalSection::empty();

/// `rseq_cs` between computations, left by one that saw no signal.
static IDLE: CriticalSection = CriticalSection::empty();

/// glibc's `RSEQ_SIG` for x86 (`sysdeps/unix/sysv/linux/x86/bits/rseq.h`), the signature
/// glibc registers every thread's area with, then a word whose address is the descriptors'
/// abort address: the kernel reads the four bytes before it.
static SIGNATURE: [u32; 2] = [0x5305_3053, 0];

/// `__rseq_offset` (the area's offset from the thread pointer) when glibc registered an
/// area for every thread; [`NONE`] otherwise or before [`find_area`] ran.
static OFFSET: AtomicIsize = AtomicIsize::new(NONE);
const NONE: isize = isize::MIN;

/// Runs when the program (or the shared library holding fkrng) is loaded, before any
/// thread of it reads: looks up glibc's `__rseq_offset` and `__rseq_size`. `dlsym` is not
/// async-signal-safe, so it is never called from a read, which may run in a signal handler.
#[used]
#[unsafe(link_section = ".init_array")]
static FIND_AREA: extern "C" fn() = find_area;

extern "C" fn find_area() {
    // SAFETY: `dlsym` with RTLD_DEFAULT and NUL-terminated names; the results are checked
    // for NULL before use and point to glibc's `const ptrdiff_t __rseq_offset` and
    // `const unsigned int __rseq_size`, which live for the whole program.
    unsafe {
        let offset = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
        if offset.is_null() || size.is_null() {
            return;
        }
        // 0: no area was registered. At least the 16 bytes up to and including `rseq_cs`
        // (`cpu_id_start`, `cpu_id`, `rseq_cs`) are the original ABI's.
        if *size.cast::<u32>() >= 16 {
            let abort = &SIGNATURE[1] as *const u32 as u64;
            BUSY.abort_ip.store(abort, Ordering::Relaxed);
            IDLE.abort_ip.store(abort, Ordering::Relaxed);
            // Release: a thread that finds the offset finds the descriptors complete.
            OFFSET.store(*offset.cast::<isize>(), Ordering::Release);
        }
    }
}

fn busy() -> usize {
    &BUSY as *const CriticalSection as usize
}

fn idle() -> usize {
    &IDLE as *const CriticalSection as usize
}

/// The offset of this thread's `rseq_cs` from the `fs` segment base, if glibc registered
/// an area.
#[inline(always)]
fn rseq_cs() -> Option<isize> {
    // The reference keeps the constructor in the link (an unreferenced object of a library
    // may be left out with its `.init_array` entry).
    core::hint::black_box(&FIND_AREA);
    match OFFSET.load(Ordering::Acquire) {
        NONE => None,
        offset => Some(offset + 8),
    }
}

/// Whether computations on this thread run under the watch (glibc registered an area).
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn available() -> bool {
    rseq_cs().is_some()
}

/// Before a computation: `rseq_cs` becomes [`BUSY`]. `Some(true)` if it was [`IDLE`] (no
/// signal was delivered to this thread, and it was not preempted, since the last
/// computation that ended seeing none), `Some(false)` if not; `None` without an area.
#[inline(always)]
pub(super) fn begin() -> Option<bool> {
    let at = rseq_cs()?;
    let was: usize;
    // SAFETY: `fs:[at]` is this thread's `rseq_cs`, a u64 of the area glibc registered for
    // every thread at `__rseq_offset` from the thread pointer; only this thread and the
    // kernel write it.
    unsafe {
        core::arch::asm!(
            "mov {was}, qword ptr fs:[{at}]",
            "mov qword ptr fs:[{at}], {busy}",
            at = in(reg) at,
            busy = in(reg) busy(),
            was = out(reg) was,
            options(nostack, preserves_flags),
        );
    }
    Some(was == idle())
}

/// Outside every computation, on a thread known not to run on an alternate signal stack
/// (a thread's set-up, never made in a signal handler): `rseq_cs` becomes [`IDLE`], so that
/// the next computation's [`begin`] finds it quiet unless a signal is delivered (or the
/// thread is preempted) before then; `true` once stored. Nothing (`false`) without an
/// area, or on a kernel that may deliver a signal without clearing `rseq_cs`
/// ([`every_signal_clears`]).
#[inline]
pub(super) fn mark_quiet() -> bool {
    let Some(at) = rseq_cs() else {
        return false;
    };
    if !every_signal_clears() {
        return false;
    }
    // SAFETY: as in `begin`.
    unsafe {
        core::arch::asm!(
            "mov qword ptr fs:[{at}], {idle}",
            at = in(reg) at,
            idle = in(reg) idle(),
            options(nostack, preserves_flags),
        );
    }
    true
}

/// Whether the running kernel clears a `rseq_cs` that names no critical section holding the
/// interrupted instruction at every signal delivery: 0 not known yet, 1 yes, 2 no.
static EVERY_SIGNAL_CLEARS: AtomicU32 = AtomicU32::new(0);

/// The first kernel release (6.19) whose reworked rseq code may deliver a signal on the
/// way out of a system call without looking at `rseq_cs` (it does the fix-up only for
/// signals taken on return from an interrupt). A 2026 fix ("rseq: Revert to historical
/// performance killing behaviour", in stable releases) restores it for every registration
/// but the optimised "V2" one that C libraries do not make yet; the version alone cannot
/// tell a fixed kernel, so every release from this one on counts as skipping.
const FIRST_RELEASE_THAT_MAY_SKIP: u32 = 6 << 16 | 19 << 8;

/// Whether every signal delivered to a thread clears its `rseq_cs` (as [`begin`] assumes
/// when it finds [`IDLE`] after a set-up's [`mark_quiet`]): Linux 4.18 to 6.18, from the
/// vDSO's version note. An unknown or later kernel counts as no; there a thread's first
/// computation asks `sigaltstack`, as every computation after a signal does.
pub(crate) fn every_signal_clears() -> bool {
    match EVERY_SIGNAL_CLEARS.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let yes = crate::entropy::vdso::kernel_version()
                .is_some_and(|v| v < FIRST_RELEASE_THAT_MAY_SKIP);
            EVERY_SIGNAL_CLEARS.store(if yes { 1 } else { 2 }, Ordering::Relaxed);
            yes
        }
    }
}

/// After a computation whose [`begin`] returned `Some`, once the registers are cleared:
/// `true` if no signal was delivered to this thread since then (`rseq_cs` still
/// [`BUSY`]), and `rseq_cs` becomes [`IDLE`]; `false` otherwise, and it becomes NULL.
#[inline(always)]
pub(super) fn end() -> bool {
    let Some(at) = rseq_cs() else {
        return false;
    };
    let was: usize;
    // SAFETY: as in `begin`.
    unsafe {
        core::arch::asm!(
            "mov {was}, qword ptr fs:[{at}]",
            at = in(reg) at,
            was = out(reg) was,
            options(nostack, preserves_flags, readonly),
        );
    }
    let quiet = was == busy();
    let next = if quiet { idle() } else { 0 };
    // A signal between the load and this store is one taken after the registers were
    // cleared: its frame holds no key word, and hiding it only keeps the next computation's
    // cached answer, which no signal changes (see `Stacks::now`).
    // SAFETY: as in `begin`.
    unsafe {
        core::arch::asm!(
            "mov qword ptr fs:[{at}], {next}",
            at = in(reg) at,
            next = in(reg) next,
            options(nostack, preserves_flags),
        );
    }
    quiet
}
