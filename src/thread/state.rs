//! The per-thread state: the generator and its reseed schedule, with the small-read fast
//! path (a copy from the buffer while the epoch and the VM generation are unchanged) and the
//! cold slow path that (re)seeds, refills and fills directly.

use super::schedule::{Clock, Lifecycle, Monotonic};
use crate::Error;
use crate::entropy::diversifier::diversifier;
use crate::entropy::{Entropy, Os};
use crate::fork;
use crate::generator::{FkeState, KEY_LEN};
use crate::snapshot;
use core::sync::atomic::AtomicBool;
use zeroize::Zeroize;

/// One thread's generator. Valid when all-zero (empty and unseeded).
#[repr(C)]
pub(crate) struct ThreadState {
    pub(crate) fke: FkeState,
    pub(crate) life: Lifecycle,
}

/// What a thread's state pages hold: the generator and its re-entrancy flag, which is kept
/// outside the generator so that checking it never reads memory that a `&mut ThreadState`
/// covers. Valid when all-zero.
#[repr(C)]
pub(crate) struct Slot {
    /// Set while a read runs on this thread (see [`super::enter`]).
    pub(crate) busy: AtomicBool,
    pub(crate) state: ThreadState,
}

impl ThreadState {
    #[cfg(test)]
    pub(crate) fn zeroed() -> Box<Self> {
        Box::new(ThreadState {
            fke: FkeState::new([0; KEY_LEN]),
            life: Lifecycle::default(),
        })
    }

    /// Whether the key belongs to this process and VM generation: one relaxed atomic load
    /// of the epoch, two loads of the VM generation counter (its address, its value).
    #[inline(always)]
    fn current(&self) -> bool {
        self.life.epoch == fork::epoch() && self.life.generation == snapshot::generation()
    }

    /// The small-read fast path: a length check, [`Self::current`], a copy and a zeroing.
    #[inline(always)]
    pub(super) fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        if dest.len() <= self.fke.available() && self.current() {
            self.fke.serve(dest);
            Ok(())
        } else {
            self.fill_slow(dest, &mut Os, &Monotonic)
        }
    }

    /// The fast path of a fixed-size read (`u32`, `u64`, `array`): [`Self::current`], then
    /// `N` bytes taken from the buffer; `None` (nothing taken) when the read needs the slow
    /// path.
    #[inline(always)]
    pub(super) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        if self.current() {
            self.fke.take::<N>()
        } else {
            None
        }
    }

    /// Seeds or reseeds if the state is unseeded, from an older epoch (fork, `reseed_all`) or
    /// from another VM generation (snapshot restore), then fills, reseeding periodically
    /// before a refill or direct fill.
    #[cold]
    #[inline(never)]
    pub(super) fn fill_slow(
        &mut self,
        dest: &mut [u8],
        os: &mut impl Entropy,
        clock: &impl Clock,
    ) -> Result<(), Error> {
        if dest.is_empty() {
            // Nothing to produce: no (re)seed, so no OS read and no OS error.
            return Ok(());
        }
        let restored = self.life.seeded && self.life.generation != snapshot::generation();
        if !self.life.seeded || self.life.epoch != fork::epoch() || restored {
            if fork::fork_under_way() {
                // A fork handler's read (fkrng's prepare handler moved the epoch): the
                // child inherits this state, so it is neither reseeded nor read now.
                return super::one_off_fill(dest, super::OneOff::ForkUnderWay);
            }
            // Strict: no output from an unseeded, inherited or restored key.
            self.reseed(os, clock)?;
            #[cfg(any(test, feature = "test-hooks"))]
            if restored {
                crate::test_hooks::counters::count_snapshot_reseed();
            }
        }
        let Self { fke, life, .. } = self;
        fke.fill_with(dest, |fke, bytes| {
            let now = clock.now_ns();
            if life.due(now) {
                // A failed periodic reseed keeps the (still secret) key; the next refill
                // tries again.
                let mut s = [0u8; KEY_LEN];
                if let Ok(draw) = os.seed(&mut s) {
                    fke.mix_key(&s);
                    diversifier(&mut s, false);
                    fke.mix_key(&s);
                    life.restart(draw, now);
                }
                s.zeroize();
            }
            life.produced = life.produced.saturating_add(bytes as u64);
            Ok::<(), Error>(())
        })
    }

    /// `K = K XOR S` with 32 fresh OS bytes `S`, buffer wiped and emptied, counters reset.
    /// An unseeded state has `K = 0`, so this is also the first seeding.
    pub(super) fn reseed(
        &mut self,
        os: &mut impl Entropy,
        clock: &impl Clock,
    ) -> Result<(), Error> {
        let epoch = fork::epoch();
        let generation = snapshot::settled_generation();
        let mut s = [0u8; KEY_LEN];
        let draw = os.seed(&mut s)?;
        self.fke.mix_key(&s);
        // `K ⊕ S ⊕ D`: clones of one VM snapshot whose kernels give the same `S` still get
        // different keys (`entropy::diversifier`); the CPU's generator is read at the
        // reseeds of a seeded state (a restore, a fork, `reseed_all`, `fkrng::reseed`).
        diversifier(&mut s, self.life.seeded);
        self.fke.mix_key(&s);
        s.zeroize();
        self.life.seeded = true;
        // A reseed during a fork (`fkrng::reseed` from a fork handler) gives the parent and
        // the child the same key: epoch 0, which no process-wide epoch ever is, makes both
        // reseed again at their next read.
        self.life.epoch = if fork::fork_under_way() { 0 } else { epoch };
        self.life.generation = generation;
        self.life.restart(draw, clock.now_ns());
        Ok(())
    }
}
