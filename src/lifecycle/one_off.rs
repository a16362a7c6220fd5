//! The one-off fallback: reads that cannot use the thread's state get bytes from a
//! generator keyed with 32 fresh OS bytes for that read alone, wiped when done.

use crate::error::Error;
use crate::generator::{FkeState, KEY_LEN};
use crate::lifecycle::seed::{Entropy, Os, mix_fresh_seed};
use crate::lifecycle::{fork, snapshot};
use zeroize::Zeroize;

/// Bytes for a read that cannot use the thread's state, counted as `why`: it interrupted a read
/// on the same thread (a signal handler), the thread has no state (released at thread exit,
/// being set up, no memory), or a `fork` is under way (the child inherits the state).
#[cold]
#[inline(never)]
pub(crate) fn one_off_fill(dest: &mut [u8], why: crate::probe::Event) -> Result<(), Error> {
    if dest.is_empty() {
        return Ok(());
    }
    crate::probe::count(why);
    // The generator is on the stack: a handler's fork or a restore during it gives two
    // processes its bytes, so they are discarded and the read made again. The fork count is
    // compared, not the epoch, which `reseed_all` also moves. (A raw `clone` is not seen.)
    loop {
        let (forks, generation) = (fork::forks(), snapshot::generation());
        // The counts before the seed's read, which a fork or restore after them must follow.
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        one_off_once(dest)?;
        core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
        if forks == fork::forks() && generation == snapshot::generation() {
            return Ok(());
        }
        dest.zeroize();
        crate::probe::count(crate::probe::Event::DiscardedRead);
    }
}

/// One one-off generator, seeded, read into `dest` and wiped.
fn one_off_once(dest: &mut [u8]) -> Result<(), Error> {
    // Seeded in place (`K = 0 XOR S`) rather than through `FkeRng::from_seed`, whose
    // by-value seed and return would leave copies of the key in dead stack frames.
    let mut one_off = FkeState::new([0; KEY_LEN]);
    // On error the state is still all zero: nothing to wipe.
    mix_fresh_seed(&mut one_off, false, |s| Os.seed(s))?;
    let Ok(()) = one_off.fill_with(dest, |_, _| Ok::<(), core::convert::Infallible>(()));
    one_off.wipe();
    Ok(())
}
