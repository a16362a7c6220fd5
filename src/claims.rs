//! A chunk's claim words: bit `i % WORD_BITS` of word `i / WORD_BITS` is set while slot `i` is
//! leased. Generic over the atomic word: the model tests (`loom_model.rs`) run it on `loom`'s.
//!
//! Invariants: a bit is set only by a compare-and-swap of [`claim`] or [`seal`] (no slot is
//! claimed twice) and cleared only by its owner ([`release`], a failed [`seal`]) or by [`reset`]
//! in a forked child; bits past a
//! chunk's slots are never set. Where other threads run, every change of a word is a
//! read-modify-write, so a claim's acquire reads from the release sequence of the last release.

use Ordering::{Acquire, Relaxed, Release};
use core::sync::atomic::{AtomicUsize, Ordering};

pub(crate) const WORD_BITS: usize = usize::BITS as usize;

/// An atomic claim word: [`AtomicUsize`] here, `loom`'s in the model tests.
pub(crate) trait Word {
    fn load(&self, order: Ordering) -> usize;
    /// `compare_exchange_weak(current, new, Acquire, Relaxed)`: the last owner's writes come first.
    fn claim_weak(&self, current: usize, new: usize) -> Result<usize, usize>;
    fn fetch_and(&self, bits: usize, order: Ordering) -> usize;
    fn store(&self, bits: usize, order: Ordering);
}

macro_rules! word {
    ($atomic:ty) => {
        impl Word for $atomic {
            #[inline(always)]
            fn load(&self, order: Ordering) -> usize {
                <$atomic>::load(self, order)
            }
            #[inline(always)]
            fn claim_weak(&self, current: usize, new: usize) -> Result<usize, usize> {
                <$atomic>::compare_exchange_weak(self, current, new, Acquire, Relaxed)
            }
            #[inline(always)]
            fn fetch_and(&self, bits: usize, order: Ordering) -> usize {
                <$atomic>::fetch_and(self, bits, order)
            }
            #[inline(always)]
            fn store(&self, bits: usize, order: Ordering) {
                <$atomic>::store(self, bits, order)
            }
        }
    };
}

word!(AtomicUsize);
#[cfg(all(test, loom))]
word!(loom::sync::atomic::AtomicUsize);

/// The bits of word `w` that stand for slots of a chunk of `slots` slots.
pub(crate) fn mask(slots: usize, w: usize) -> usize {
    match slots.saturating_sub(w * WORD_BITS) {
        0 => 0,
        n if n >= WORD_BITS => usize::MAX,
        n => (1 << n) - 1,
    }
}

/// Claims the first free slot of a chunk of `slots` slots: its index, or `None` when every
/// slot is claimed. Lock-free and allocation-free: a compare-and-swap loop per word.
pub(crate) fn claim<W: Word>(words: &[W], slots: usize) -> Option<usize> {
    for (w, word) in words.iter().enumerate() {
        let mask = mask(slots, w);
        let mut now = word.load(Relaxed);
        while now & mask != mask {
            let bit = (!now & mask).trailing_zeros() as usize;
            match word.claim_weak(now, now | 1 << bit) {
                Ok(_) => return Some(w * WORD_BITS + bit),
                Err(current) => now = current,
            }
        }
    }
    None
}

/// Releases slot `i`, which the caller claimed. Release: the caller's writes to the slot
/// (its zeroing) happen before the next claim of it.
pub(crate) fn release<W: Word>(words: &[W], i: usize) {
    words[i / WORD_BITS].fetch_and(!(1 << (i % WORD_BITS)), Release);
}

/// Claims every slot of a chunk of `slots` slots at once if none is claimed: `true`, and no slot
/// of it is leased again (until a forked child's [`reset`]); `false`, the claims unchanged.
pub(crate) fn seal<W: Word>(words: &[W], slots: usize) -> bool {
    let seal = |w: usize| loop {
        match words[w].claim_weak(0, mask(slots, w)) {
            Ok(_) => return true,
            Err(0) => {} // a spurious failure
            Err(_) => return false,
        }
    };
    let sealed = (0..words.len()).take_while(|&w| seal(w)).count();
    if sealed < words.len() {
        // Only the words sealed here are this call's to give back.
        for (w, word) in words[..sealed].iter().enumerate() {
            word.fetch_and(!mask(slots, w), Release);
        }
    }
    sealed == words.len()
}

/// Clears every claim but `keep`'s (the caller's slot, set throughout): one store per word,
/// async-signal-safe. Sound only where no claim has another owner (a forked child's handler).
pub(crate) fn reset<W: Word>(words: &[W], keep: Option<usize>) {
    for (w, word) in words.iter().enumerate() {
        let bits = match keep {
            Some(i) if i / WORD_BITS == w => 1 << (i % WORD_BITS),
            _ => 0,
        };
        word.store(bits, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(bits: [usize; 2]) -> [AtomicUsize; 2] {
        bits.map(AtomicUsize::new)
    }

    fn bits(words: &[AtomicUsize; 2]) -> [usize; 2] {
        [0, 1].map(|w| words[w].load(Ordering::Relaxed))
    }

    /// Claims take the lowest free slot, across words, and none past the chunk's slots;
    /// a released slot is the next one claimed.
    #[test]
    fn claims_take_the_first_free_slot_within_the_chunk() {
        let slots = WORD_BITS + 2;
        let w = words([usize::MAX ^ 0b101, 0]);
        assert_eq!(claim(&w, slots), Some(0));
        assert_eq!(claim(&w, slots), Some(2));
        assert_eq!(claim(&w, slots), Some(WORD_BITS));
        assert_eq!(claim(&w, slots), Some(WORD_BITS + 1));
        assert_eq!(claim(&w, slots), None);
        assert_eq!(bits(&w), [usize::MAX, 0b11]);
        release(&w, WORD_BITS);
        release(&w, 2);
        assert_eq!(bits(&w), [usize::MAX ^ 0b100, 0b10]);
        assert_eq!(claim(&w, slots), Some(2));
        assert_eq!(claim(&w, slots), Some(WORD_BITS));
    }

    /// The reset leaves exactly the kept slot's bit, in whichever word it lies.
    #[test]
    fn reset_leaves_only_the_kept_claim() {
        let w = words([0b1011, 0b110]);
        reset(&w, Some(WORD_BITS + 2));
        assert_eq!(bits(&w), [0, 0b100]);
        let w = words([0b1011, 0b110]);
        reset(&w, Some(3));
        assert_eq!(bits(&w), [0b1000, 0]);
        reset(&w, None);
        assert_eq!(bits(&w), [0, 0]);
    }

    /// A seal takes every slot of a chunk with none leased, and leaves a chunk with one leased
    /// exactly as it was.
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    #[test]
    fn a_seal_takes_a_free_chunk_whole_and_leaves_a_leased_one() {
        let slots = WORD_BITS + 2;
        let w = words([0, 0b10]);
        assert!(!seal(&w, slots));
        assert_eq!(bits(&w), [0, 0b10]);
        release(&w, WORD_BITS + 1);
        assert!(seal(&w, slots));
        assert_eq!(bits(&w), [usize::MAX, 0b11]);
        assert_eq!(claim(&w, slots), None);
    }
}
