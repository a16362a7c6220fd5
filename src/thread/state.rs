//! The per-thread state: the generator and its reseed schedule, with the small-read fast
//! path (a copy from the buffer while the epoch and the VM generation are unchanged) and the
//! cold slow path that (re)seeds, refills and fills directly.

use crate::error::Error;
use crate::generator::{FkeState, KEY_LEN};
use crate::lifecycle::fork;
use crate::lifecycle::one_off::{OneOff, one_off_fill};
use crate::lifecycle::reseed::{Clock, Lifecycle, Monotonic};
use crate::lifecycle::seed::{Entropy, Os};
use crate::lifecycle::snapshot;
use crate::os::diversifier::diversifier;
use core::sync::atomic::{Ordering, compiler_fence};
use zeroize::Zeroize;

/// One thread's generator. Valid when all-zero (empty and unseeded).
#[repr(C)]
pub(crate) struct ThreadState {
    pub(crate) fke: FkeState,
    pub(crate) life: Lifecycle,
}

/// What a thread's slot in the state pool holds: its generator. (The re-entrancy flag is
/// thread-local, [`super::ThreadSlot`].) Valid when all-zero.
#[repr(C)]
pub(crate) struct Slot {
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

    /// Whether the key belongs to this process and VM generation, checked once the read's
    /// bytes are copied out (the read's only check; see [`Self::fill`]): one relaxed
    /// atomic load of the epoch and one volatile load of the state's own, two loads of the
    /// VM generation counter (its address, its value).
    ///
    /// The state's epoch is read from memory, not from what the compiler may keep of an
    /// earlier load: a signal handler that interrupted the read may have made this process
    /// a child by a raw `clone` (no fork handler, so the process-wide epoch did not move),
    /// in which the kernel zeroed the state's wipe-on-fork pages; a zeroed state reads
    /// epoch 0, which no process-wide epoch ever is.
    #[inline(always)]
    fn current(&self) -> bool {
        // Keeps the copy before the loads below: a handler's fork between the two must be
        // seen.
        compiler_fence(Ordering::SeqCst);
        // SAFETY: `self.life.epoch` is an initialised, aligned `u64` of this state, read
        // through a pointer made from a valid reference.
        let own = unsafe { core::ptr::read_volatile(&raw const self.life.epoch) };
        own == fork::epoch() && self.life.generation == snapshot::generation()
    }

    /// The small-read fast path: a length check, a copy and a zeroing, then
    /// [`Self::current`].
    ///
    /// The check comes after the copy, as the vDSO `getrandom` re-reads its generation
    /// after copying: the copy may have been interrupted by a signal handler that forked,
    /// by a VM snapshot restore or by a handler's raw `clone` (whose child copies from a
    /// zeroed state), and bytes copied across such an event are discarded (zeroed) and the
    /// request served again from a reseeded state ([`Self::discard_and_fill`]). A state
    /// that was stale before the read (after a fork, `reseed_all` or a restore) fails the
    /// same check: its bytes are copied, wiped from its buffer, and discarded too.
    #[inline(always)]
    pub(super) fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        if dest.len() <= self.fke.available() {
            self.fke.serve(dest);
            crate::probe::at(crate::probe::Point::AfterCopy);
            if self.current() {
                return Ok(());
            }
            return self.discard_and_fill(dest);
        }
        self.fill_slow(dest, &mut Os, &Monotonic)
    }

    /// The fast path of a fixed-size read (`u32`, `u64`, `array`): `N` bytes taken from the
    /// buffer, then [`Self::current`]; `None` when the read needs the slow path (too few
    /// bytes left, nothing taken) or the state was stale or went stale during the take
    /// (the bytes taken are dropped).
    #[inline(always)]
    pub(super) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let out = self.fke.take::<N>()?;
        crate::probe::at(crate::probe::Point::AfterCopy);
        if self.current() { Some(out) } else { None }
    }

    /// A read whose copy was made from a state that was, or went, stale: its bytes are
    /// zeroed, and it is served again through [`Self::fill_slow`], which reseeds first (or
    /// takes the one-off path while a fork is under way).
    #[cold]
    #[inline(never)]
    fn discard_and_fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        dest.zeroize();
        crate::probe::count(crate::probe::Event::DiscardedRead);
        self.fill_slow(dest, &mut Os, &Monotonic)
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
        // A read that a fork, a raw `clone` or a restore interrupted is served again, from
        // a reseeded state: at most twice here, then from the one-off path (which checks
        // for the same events), so that a thread that calls `reseed_all` without pause
        // cannot keep another thread's large read going round.
        for _ in 0..2 {
            if !self.fill_once(dest, os, clock)? || self.current() {
                return Ok(());
            }
            dest.zeroize();
            crate::probe::count(crate::probe::Event::DiscardedRead);
        }
        one_off_fill(dest, OneOff::Interrupted)
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
                return one_off_fill(dest, OneOff::ForkUnderWay).map(|()| false);
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
        })?;
        Ok(true)
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
        // A new thread's first seed may come from the vDSO (`entropy::fill_new_thread`).
        let draw = if self.life.seeded {
            os.seed(&mut s)
        } else {
            os.seed_new_thread(&mut s)
        }?;
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
