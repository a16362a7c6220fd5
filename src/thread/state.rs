//! The per-thread state: the generator and its reseed schedule, the small-read fast path and
//! the cold slow path that (re)seeds, refills and fills directly.

use crate::error::Error;
use crate::generator::FkeState;
use crate::lifecycle::one_off::one_off_fill;
use crate::lifecycle::reseed::{Clock, Lifecycle, Monotonic};
use crate::lifecycle::seed::{Entropy, Os, mix_fresh_seed};
use crate::lifecycle::{fork, snapshot};
use core::sync::atomic::{Ordering, compiler_fence};
use zeroize::Zeroize;

/// One thread's generator, in a pool slot. Valid when all-zero (empty and unseeded).
#[repr(C)]
pub(crate) struct ThreadState {
    pub(crate) fke: FkeState,
    pub(crate) life: Lifecycle,
}

impl ThreadState {
    /// Whether the key belongs to this process and VM generation: a read's only check, once its
    /// bytes are copied out. The epoch is read volatile: a handler's raw `clone` mid-read moves no
    /// epoch but leaves the child a zeroed state, whose epoch 0 no process-wide epoch is.
    #[inline(always)]
    fn current(&self) -> bool {
        // Keeps the copy before the loads: a handler's fork between the two must be seen.
        compiler_fence(Ordering::SeqCst);
        // SAFETY: `self.life.epoch` is an initialised, aligned `u64` of this state, read
        // through a pointer made from a valid reference.
        let own = unsafe { core::ptr::read_volatile(&raw const self.life.epoch) };
        // The state's epoch before the process's (the order of the x86-64 fast path, which
        // see): a handler's fork between the two loads is then seen in both processes.
        compiler_fence(Ordering::SeqCst);
        own == fork::epoch() && self.life.generation == snapshot::generation()
    }

    /// The small-read fast path: copy and zero, then [`Self::current`]. Bytes copied from a state
    /// that was stale or went stale (a handler's fork or raw `clone`, a restore) are discarded
    /// and the request served again from a reseeded state ([`Self::discard_and_fill`]).
    #[inline(always)]
    pub(super) fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        if self.fke.serve(dest) {
            crate::probe::at(crate::probe::Point::AfterCopy);
            if self.current() {
                return Ok(());
            }
            return self.discard_and_fill(dest);
        }
        self.fill_slow(dest, &mut Os, &Monotonic)
    }

    /// The fixed-size fast path: `N` bytes taken, then [`Self::current`]; `None` when too few
    /// are left (nothing taken) or the state was or went stale (the bytes are zeroed: another
    /// process or VM may serve the same ones).
    #[inline(always)]
    pub(super) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut out = self.fke.take::<N>()?;
        crate::probe::at(crate::probe::Point::AfterCopy);
        if self.current() {
            return Some(out);
        }
        out.zeroize();
        None
    }

    /// Zeroes a read copied from a stale state and serves it anew by [`Self::fill_slow`] (reseeds).
    #[cold]
    #[inline(never)]
    fn discard_and_fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        dest.zeroize();
        crate::probe::count(crate::probe::Event::DiscardedRead);
        self.fill_slow(dest, &mut Os, &Monotonic)
    }

    /// (Re)seeds a state that is unseeded, from an older epoch or another VM generation, then
    /// fills, reseeding periodically before a refill or direct fill. On error `dest` is zeroed
    /// (it may hold bytes copied from a stale state before the read found it stale).
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
        // An interrupted read is served again, twice here at most, then by the one-off path,
        // so that `reseed_all` called without pause cannot keep a large read going round.
        for _ in 0..2 {
            match self.fill_once(dest, os, clock) {
                Ok(false) => return Ok(()),
                Ok(true) if self.current() => return Ok(()),
                Ok(true) => {}
                Err(e) => return Err(super::failed(dest, e)),
            }
            dest.zeroize();
            crate::probe::count(crate::probe::Event::DiscardedRead);
        }
        one_off_fill(dest, crate::probe::Event::OneOffInterrupted)
            .map_err(|e| super::failed(dest, e))
    }

    /// One try of [`Self::fill_slow`]: (re)seeds when needed, then fills. `Ok(true)` when
    /// the bytes came from this state (the caller checks it is still current), `Ok(false)`
    /// when a fork under way sent the read to the one-off path.
    fn fill_once(
        &mut self,
        dest: &mut [u8],
        os: &mut impl Entropy,
        clock: &impl Clock,
    ) -> Result<bool, Error> {
        let restored = self.life.seeded && self.life.generation != snapshot::generation();
        if !self.life.seeded || self.life.epoch != fork::epoch() || restored {
            if fork::fork_under_way() {
                // A fork handler's read (fkrng's prepare handler moved the epoch): the
                // child inherits this state, so it is neither reseeded nor read now.
                return one_off_fill(dest, crate::probe::Event::OneOffForkUnderWay).map(|()| false);
            }
            // Strict: no output from an unseeded, inherited or restored key.
            self.reseed(os, clock)?;
            if restored {
                crate::probe::count(crate::probe::Event::SnapshotReseed);
            }
        }
        let Self { fke, life, .. } = self;
        fke.fill_with(dest, |fke, bytes| {
            let now = clock.now_ns();
            if life.due(now) {
                // A failed periodic reseed keeps the key; the next refill tries again.
                if let Ok(draw) = mix_fresh_seed(fke, false, |s| os.seed(s)) {
                    life.restart(draw, now);
                }
            }
            life.produced = life.produced.saturating_add(bytes as u64);
            Ok::<(), Error>(())
        })?;
        Ok(true)
    }

    /// `K = K ⊕ S ⊕ D` (fresh OS bytes `S`; `D` separates VM clones whose kernels give one
    /// `S`), buffer wiped and emptied, counters reset; for an unseeded state (`K = 0`) the seed.
    pub(super) fn reseed(
        &mut self,
        os: &mut impl Entropy,
        clock: &impl Clock,
    ) -> Result<(), Error> {
        let epoch = fork::epoch();
        let generation = snapshot::settled_generation();
        let before = (self.life.seeded, self.life.epoch, self.life.generation);
        // Stamped before the key changes, and never after: a handler's raw `clone` that wipes
        // the child's state from here on leaves it unseeded at epoch 0, which no later store
        // of this call undoes, so the child's read is discarded and served again. (Stamped
        // after, a wipe between the key's mix and the stamps made a child that served
        // keystream under the all-zero key.) A reseed from a fork handler gives parent and
        // child one key: epoch 0, which no process-wide epoch ever is, makes both reseed again
        // at their next read.
        self.life.seeded = true;
        self.life.epoch = if fork::fork_under_way() { 0 } else { epoch };
        self.life.generation = generation;
        compiler_fence(Ordering::SeqCst);
        let mixed = mix_fresh_seed(&mut self.fke, before.0, |s| {
            if before.0 {
                os.seed(s)
            } else {
                os.seed_new_thread(s)
            }
        });
        compiler_fence(Ordering::SeqCst);
        crate::probe::at(crate::probe::Point::AfterSeed);
        match mixed {
            Ok(draw) => {
                self.life.restart(draw, clock.now_ns());
                Ok(())
            }
            Err(e) => {
                // The key is unchanged: so are its stamps. `seeded` is stored only as false:
                // a child wiped meanwhile keeps it false, which makes its next read seed
                // whatever epoch it holds.
                if !before.0 {
                    self.life.seeded = false;
                }
                (self.life.epoch, self.life.generation) = (before.1, before.2);
                Err(e)
            }
        }
    }
}
