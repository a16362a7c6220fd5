//! The 4- and 8-byte fast path on x86-64 (`u32`, `u64`): [`super::take`]'s steps in one `asm!`
//! block. Contract: its order (BUSY stored, bytes copied and zeroed, epoch and generation
//! checked, slot stored back) is its instruction order, the order a signal handler on this
//! thread sees in every build; and to the inliner it is one call-sized statement, so a caller
//! that draws twice (`rand`'s range samplers) stays small enough to inline.

#[cfg(all(test, target_os = "linux", fkrng_test_hooks))]
mod tests;

use super::{BUSY_ADDR, STATE, ThreadState};
use crate::generator::FkeState;
use crate::lifecycle::checks::{CHECKS, Checks};
use core::mem::offset_of;

/// The next `N` bytes of the thread's buffer, as [`super::take`] gives them; `N` is 4 or 8
/// (a build error otherwise).
#[inline(always)]
pub(super) fn take<const N: usize>() -> Option<[u8; N]> {
    const { assert!(N == 4 || N == 8, "the asm! fast path reads 4 or 8 bytes") };
    let tls = STATE.with(|t| t.slot.as_ptr());
    let checks = &raw const CHECKS;
    let (value, left): (u64, isize);
    macro_rules! fast_path {
        ($load:literal, $zero:literal) => {
            // SAFETY: `tls` is this thread's slot word. The block reads the state only when the
            // word holds a slot (above BUSY: this thread's live state, as in `super::try_fill`),
            // with BUSY in the word meanwhile, and touches only the `N` bytes at
            // `BLOCK_END + neg_avail`, and only when `neg_avail + N <= 0` (signed): with
            // `neg_avail` 0 or in `-992..0` (`FkeState`'s invariant) those are unserved buffer
            // bytes. `checks` is `CHECKS`, whose `counter` points to a readable `u64`. Only the
            // named registers and the flags change.
            unsafe {
                core::arch::asm!(
                    // `left > 0` means no bytes: the slot word held no slot, too few bytes
                    // were left, or the state is stale.
                    "mov {left:e}, 1",
                    "mov {p}, qword ptr [{tls}]",
                    "cmp {p}, {busy}",
                    "jbe 3f",
                    "mov qword ptr [{tls}], {busy}",
                    "mov {left}, qword ptr [{p} + {neg_avail}]",
                    "add {left}, {n}",
                    "jg 2f",
                    $load,
                    $zero,
                    "mov qword ptr [{p} + {neg_avail}], {left}",
                    // The state's epoch first, then the process's: a handler's `fork()` before
                    // the `cmp` moves both processes' epochs, a raw `clone` before the load
                    // wipes the child's state, and either one after its point comes after the
                    // read.
                    "mov {t}, qword ptr [{p} + {epoch}]",
                    "cmp {t}, qword ptr [{checks}]",
                    "jne 4f",
                    "mov {t}, qword ptr [{checks} + {counter}]",
                    "mov {t}, qword ptr [{t}]",
                    "cmp {t}, qword ptr [{p} + {generation}]",
                    "je 2f",
                    "4:",
                    "mov {left:e}, 1",
                    "2:",
                    "mov qword ptr [{tls}], {p}",
                    "3:",
                    tls = in(reg) tls,
                    checks = in(reg) checks,
                    left = out(reg) left,
                    value = out(reg) value,
                    p = out(reg) _,
                    t = out(reg) _,
                    busy = const BUSY_ADDR,
                    neg_avail = const offset_of!(ThreadState, fke) + FkeState::NEG_AVAIL_AT,
                    n = const N,
                    taken = const offset_of!(ThreadState, fke) + FkeState::BLOCK_END - N,
                    epoch = const offset_of!(ThreadState, life.epoch),
                    counter = const offset_of!(Checks, counter),
                    generation = const offset_of!(ThreadState, life.generation),
                    options(nostack),
                );
            }
        };
    }
    if N == 8 {
        fast_path!(
            "mov {value}, qword ptr [{p} + {left} + {taken}]",
            "mov qword ptr [{p} + {left} + {taken}], 0"
        );
    } else {
        fast_path!(
            "mov {value:e}, dword ptr [{p} + {left} + {taken}]",
            "mov dword ptr [{p} + {left} + {taken}], 0"
        );
    }
    if left > 0 {
        return None;
    }
    let mut out = [0; N];
    out.copy_from_slice(&value.to_le_bytes()[..N]);
    Some(out)
}
