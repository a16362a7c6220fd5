//! The scrub where signal frames below a keystream computation are found and zeroed (x86-64
//! Linux; AArch64 Linux and Android): the parts both architectures share, the signal frame
//! size, the valgrind switch and the zeroing of the frames found. How each architecture
//! clears its registers and finds a frame is in its own module, since its kernel lays the
//! frame out differently (see the parent module).

use core::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "aarch64")]
use aarch64 as arch;
#[cfg(target_arch = "x86_64")]
pub(crate) mod rseq;
#[cfg(target_arch = "x86_64")]
mod x86_64;
#[cfg(target_arch = "x86_64")]
use x86_64 as arch;

/// See [`super::below`]. Under valgrind, the local-array scrub of [`super::scrub_stack`];
/// otherwise the architecture's scrub with signal frame detection.
#[inline(always)]
pub(in crate::keystream) fn below<R>(compute: impl FnOnce() -> R) -> R {
    if under_valgrind() {
        let r = compute();
        super::scrub_stack();
        return r;
    }
    arch::below(compute)
}

/// The canary: an arbitrary odd pattern, neither zero nor a register's usual content, nor
/// a word a signal frame's bookkeeping fields would hold.
const CANARY: u64 = 0x5c3a_91e7_0f6d_24b9;

/// `AT_MINSIGSTKSZ` from `<linux/auxvec.h>`: the kernel's signal frame size, as the largest
/// frame this machine's register state can need (Linux 4.18 and later on AArch64, 5.14 and
/// later on x86).
const AT_MINSIGSTKSZ: libc::c_ulong = 51;

/// The signal frame size, read from the auxiliary vector once (0: not read yet).
static SIGNAL_FRAME: AtomicUsize = AtomicUsize::new(0);

/// Whether the process runs under valgrind: 0 not known yet, 1 no, 2 yes.
static VALGRIND: AtomicU8 = AtomicU8::new(0);

/// Whether the process runs under valgrind, whose memcheck rejects every access below
/// the stack pointer (and which delivers signals itself): there the scrub is the local
/// array of [`super::scrub_stack`], in a frame of its own.
#[inline(always)]
fn under_valgrind() -> bool {
    match VALGRIND.load(Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let yes = arch::ask_valgrind();
            VALGRIND.store(if yes { 2 } else { 1 }, Relaxed);
            yes
        }
    }
}

/// The signal frame size this kernel uses, in bytes (`getauxval(AT_MINSIGSTKSZ)`, or the
/// architecture's [`arch::FALLBACK_SIGNAL_FRAME`] where it reports none, as qemu-user does).
fn signal_frame() -> usize {
    let mut size = SIGNAL_FRAME.load(Relaxed);
    if size == 0 {
        // SAFETY: reads the auxiliary vector; async-signal-safe (no locks, no memory).
        let reported = unsafe { libc::getauxval(AT_MINSIGSTKSZ) } as usize;
        size = if reported == 0 {
            arch::FALLBACK_SIGNAL_FRAME
        } else {
            reported
        };
        SIGNAL_FRAME.store(size, Relaxed);
    }
    size
}

/// Zeroes the `depth` bytes below `top`, the lowest address of the area the scrub zeroed
/// (`SCRUB_BYTES` below the stack pointer of the frame that ran the computation): where a
/// signal frame pushed during the computation lies, since the computation's deepest stack
/// pointer (plus the x86-64 red zone and alignment) stays within the scrubbed area. The
/// zeroing stops at `floor` ([`Stacks::floor`]: the base of the alternate signal stack the
/// computation runs on, else 0).
#[cold]
#[inline(never)]
fn wipe_signal_frames(top: usize, depth: usize, floor: usize) {
    #[cfg(any(test, feature = "test-hooks"))]
    crate::test_hooks::counters::count_signal_frame_wipe();
    // Whole words from the first one at or above the floor.
    let bottom = top.saturating_sub(depth).max(floor).next_multiple_of(8);
    if bottom < top {
        // SAFETY: `bottom..top` lies below this function's own frame (which lies within the
        // scrubbed area above `top`): the canaries, and the stack a signal frame that reached
        // them was pushed into (not part of any Rust object); on an alternate signal stack,
        // no lower than its base.
        unsafe { arch::zero_stack(bottom, top) };
    }
}

/// Bytes between two canary words at the top of an alternate signal stack: at most the
/// 256 contiguous bytes of general registers that every signal frame holds (x86-64: the
/// 32 words of `struct sigcontext`; AArch64: the 280 bytes of `fault_address`, `x0`-`x30`,
/// `sp`, `pc` and `pstate`), so one canary falls in them wherever the frame lies.
pub(super) const ALT_SPACING: usize = 256;

/// The calling thread's alternate signal stack (`sigaltstack(2)`), `base..top`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct AltStack {
    base: usize,
    top: usize,
}

/// Where a keystream computation runs, from one `sigaltstack` query made just before it:
/// the lowest address that the writes below its stack pointer may reach, and the thread's
/// alternate signal stack if the kernel would put a signal frame at its top right now.
pub(super) struct Stacks {
    /// The base of the alternate signal stack the computation runs on (8-byte aligned
    /// upwards), or 0 on any other stack: the canaries, the scrub and the signal-frame
    /// wipe below the stack pointer stop there.
    pub(super) floor: usize,
    /// The alternate signal stack, configured and not in use: a signal taken with
    /// `SA_ONSTACK` during the computation makes the kernel write its frame, the
    /// interrupted registers, just below its top. Always `None` under the rseq watch,
    /// which needs no canaries there.
    free: Option<AltStack>,
    /// Whether the computation runs under the rseq watch ([`rseq`], x86-64): then
    /// [`Stacks::finish`] learns whether a signal came during it.
    watched: bool,
}

std::thread_local! {
    /// The thread's alternate signal stack at its last `sigaltstack` query under the rseq
    /// watch (`None`: none configured), good for as long as no signal has been delivered
    /// to the thread since: only a signal puts the thread on an alternate stack, so where
    /// no signal came, the computation runs where this answer says it runs. (The program
    /// may configure another alternate stack meanwhile; this answer is then used only to
    /// tell whether the stack pointer lies on the old one, which it cannot without a
    /// signal, and every write at an alternate stack's top follows a fresh query.)
    static LAST_ALT_STACK: core::cell::Cell<Option<AltStack>> =
        const { core::cell::Cell::new(None) };
}

impl Stacks {
    /// Asks the kernel for the thread's alternate signal stack (one system call). `sp` is
    /// the stack pointer of the frame that runs the computation.
    ///
    /// The alternate stack counts as in use (no canaries there, but the floor at its base)
    /// when the kernel says so (`SS_ONSTACK`) or `sp` lies within it (a stack armed with
    /// `SS_AUTODISARM` while the code ran on it is never reported as in use). A stack the
    /// kernel reports as disabled, as it does for one armed with `SS_AUTODISARM` while a
    /// handler runs on it, gets nothing.
    ///
    /// Under the rseq watch (x86-64 with glibc's rseq area), the query is made only if a
    /// signal was delivered to the thread (or it was preempted) since the last computation
    /// that saw none; otherwise the last answer holds ([`LAST_ALT_STACK`]), and no system
    /// call is made.
    #[inline]
    pub(super) fn now(sp: usize) -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(quiet) = rseq::begin() {
            let cached = if quiet {
                LAST_ALT_STACK.try_with(core::cell::Cell::get).ok()
            } else {
                None
            };
            let stack = cached.unwrap_or_else(|| {
                let stack = alt_stack(sp).map(|(stack, _)| stack);
                let _ = LAST_ALT_STACK.try_with(|last| last.set(stack));
                stack
            });
            let floor = match stack {
                Some(s) if (s.base..s.top).contains(&sp) => s.base.next_multiple_of(8),
                _ => 0,
            };
            return Stacks {
                floor,
                free: None,
                watched: true,
            };
        }
        match alt_stack(sp) {
            Some((stack, false)) => Stacks {
                floor: 0,
                free: Some(stack),
                watched: false,
            },
            Some((stack, true)) => Stacks {
                floor: stack.base.next_multiple_of(8),
                free: None,
                watched: false,
            },
            None => Stacks {
                floor: 0,
                free: None,
                watched: false,
            },
        }
    }

    /// After the computation, once the registers are cleared: under the rseq watch, if a
    /// signal was delivered to the thread since [`Stacks::now`], one query, and one signal
    /// frame's size at the top of a configured alternate stack that no handler runs on is
    /// zeroed (preemption reads the same way and costs the same; the bytes zeroed are those
    /// the kernel overwrites with the next such signal's frame). Nothing without the watch:
    /// the canaries of [`Stacks::arm`] do that part.
    #[inline(always)]
    pub(super) fn finish(&self, sp: usize) {
        #[cfg(target_arch = "x86_64")]
        if self.watched && !rseq::end() {
            wipe_free_alt_top(sp);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (self.watched, sp);
    }

    /// Writes canary words every [`ALT_SPACING`] bytes from 8 bytes below the 16-byte
    /// aligned top of the free alternate stack down to one signal frame's size below it
    /// (never below its base), and returns them for [`AltCanaries::changed`].
    ///
    /// These bytes are those the kernel itself overwrites with a signal frame whenever this
    /// thread takes a signal with `SA_ONSTACK` now: the alternate stack is configured and
    /// no handler runs on it (`SS_ONSTACK` clear, and a handler that nests runs on the
    /// stack it interrupted), so no live data of the program lies there. A program that
    /// keeps a handler's frames there while running elsewhere (a handler that switched to
    /// another stack, or an alternate stack shared between threads) loses them to the
    /// kernel at its next such signal as well, unless it blocks those signals meanwhile; a
    /// handler that switches stacks is to use `SS_AUTODISARM`, under which the stack is
    /// reported disabled while it runs (docs/SECURITY.md).
    #[inline]
    pub(super) fn arm(&self) -> Option<AltCanaries> {
        let stack = self.free?;
        let start = (stack.top & !15).checked_sub(8)?;
        let room = start.checked_sub(stack.base.next_multiple_of(8))?;
        let words = (signal_frame().div_ceil(ALT_SPACING)).min(room / ALT_SPACING + 1);
        for i in 0..words {
            // SAFETY: `start - i * ALT_SPACING` is an 8-byte aligned word within the
            // alternate stack (`words` keeps the lowest at or above its base): memory the
            // program handed to the kernel for signal frames, which no handler uses now
            // (see above), and which is no Rust object of this thread.
            unsafe { core::ptr::write_volatile((start - i * ALT_SPACING) as *mut u64, CANARY) };
        }
        Some(AltCanaries {
            stack,
            start,
            words,
        })
    }
}

/// Records that the calling thread runs on its own stack, not on an alternate signal stack:
/// called by a thread's set-up (its first read or reseed), which the crate's contract keeps
/// out of signal handlers (it is not async-signal-safe), and only the kernel's delivery of a
/// signal puts a thread on its alternate stack. Under the rseq watch the next computation
/// then makes no `sigaltstack` query unless a signal came (or the thread was preempted)
/// in between: a new thread's first refill makes no system call. Nothing without the watch.
#[inline]
pub(crate) fn off_alternate_stack() {
    // Once the quiet value is stored, an answer cached by earlier computations on this
    // thread is replaced by the one that holds now: the stack pointer lies on no alternate
    // stack. (A handler that runs between the two steps and computes finds the value
    // cleared by its signal, asks, and leaves an answer that the second step replaces once
    // it has returned.) Where nothing is stored, the cache stays as it was.
    #[cfg(target_arch = "x86_64")]
    if rseq::mark_quiet() {
        let _ = LAST_ALT_STACK.try_with(|last| last.set(None));
    }
}

/// Asks `sigaltstack(2)` for the thread's alternate signal stack: `None` if it has none or
/// it is disabled; else the stack and whether the code at `sp` runs on it.
#[inline]
fn alt_stack(sp: usize) -> Option<(AltStack, bool)> {
    #[cfg(any(test, feature = "test-hooks"))]
    crate::test_hooks::counters::count_alt_stack_query();
    // SAFETY: `current` is a valid out-pointer; a null `ss` only queries.
    let current = unsafe {
        let mut current: libc::stack_t = core::mem::zeroed();
        if libc::sigaltstack(core::ptr::null(), &mut current) != 0 {
            return None;
        }
        current
    };
    if current.ss_flags & libc::SS_DISABLE != 0 || current.ss_size == 0 {
        return None;
    }
    let base = current.ss_sp as usize;
    let top = base.checked_add(current.ss_size)?;
    let on = current.ss_flags & libc::SS_ONSTACK != 0 || (base..top).contains(&sp);
    Some((AltStack { base, top }, on))
}

/// The canary words [`Stacks::arm`] wrote at the top of a free alternate signal stack.
pub(super) struct AltCanaries {
    stack: AltStack,
    /// The highest canary; the others lie every [`ALT_SPACING`] bytes below it.
    start: usize,
    words: usize,
}

impl AltCanaries {
    /// Whether a canary changed: the kernel wrote a signal frame at the top of the
    /// alternate stack since [`Stacks::arm`]. Called after the registers were cleared, so
    /// that a frame written after the check holds no key word; the check itself leaves no
    /// word it read in a register.
    #[inline]
    pub(super) fn changed(&self) -> bool {
        // SAFETY: the words `arm` wrote, every ALT_SPACING bytes down from `start`, in the
        // alternate stack, which the program keeps mapped while it is configured (it still
        // is: a handler that ran during the computation returned, with the configuration it
        // found).
        unsafe { arch::canaries_changed(self.start, self.words) }
    }

    /// Zeroes one signal frame's size below the top of the alternate stack (no lower than
    /// its base), after asking the kernel again that it is still the thread's alternate
    /// stack and not in use; otherwise leaves it alone.
    #[cold]
    #[inline(never)]
    pub(super) fn wipe(self, sp: usize) {
        if alt_stack(sp) != Some((self.stack, false)) {
            return;
        }
        zero_top(self.stack, signal_frame().max(self.words * ALT_SPACING + 8));
    }
}

/// Under the rseq watch, after a signal: zeroes one signal frame's size below the top of
/// the thread's alternate stack if the kernel reports one configured and not in use.
#[cfg(target_arch = "x86_64")]
#[cold]
#[inline(never)]
fn wipe_free_alt_top(sp: usize) {
    if let Some((stack, false)) = alt_stack(sp) {
        zero_top(stack, signal_frame() + 8);
    }
}

/// Zeroes the `reach` bytes below the top of `stack` (no lower than its base), a stack
/// the kernel has just reported as the thread's alternate stack, configured and not in use:
/// no handler's data lies there (see [`Stacks::arm`]).
fn zero_top(stack: AltStack, reach: usize) {
    #[cfg(any(test, feature = "test-hooks"))]
    crate::test_hooks::counters::count_alt_stack_frame_wipe();
    let AltStack { base, top } = stack;
    let words_top = top & !7;
    let bottom = words_top
        .saturating_sub(reach)
        .max(base.next_multiple_of(8));
    if bottom < words_top {
        // SAFETY: `bottom..words_top` lies within the alternate stack, configured and not
        // in use (the caller's query): memory the kernel overwrites with the next frame.
        unsafe { arch::zero_stack(bottom, words_top) };
    }
    for at in words_top.max(base)..top {
        // SAFETY: a byte of the alternate stack, as above.
        unsafe { core::ptr::write_volatile(at as *mut u8, 0) };
    }
}
