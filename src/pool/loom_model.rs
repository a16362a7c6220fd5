//! Model tests of the claim words (`claims.rs`) under `loom`, which runs each test body
//! once for every interleaving of its threads' atomic operations (and every value a
//! relaxed or acquire load may read). Run by scripts/loom.sh, in short
//! `RUSTFLAGS="--cfg loom" cargo test --lib loom_model`.
//!
//! Each slot of a modelled chunk has a mark: 0 while free, its owner's number while leased
//! (an owner writes it after its claim and zeroes it before its release, as a lease zeroes
//! its state). The marks are `loom` cells: two owners of a slot at once fail the test,
//! either by a mark that is not 0 when the slot is claimed or not the owner's own when it
//! is given back, or by loom's report of accesses that no happens-before orders (the
//! claim's acquire and the release's release are what order them).

use crate::claims::{self, WORD_BITS};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::atomic::AtomicUsize;
use loom::thread;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering::Relaxed;

/// A chunk of `slots` slots: claim words and slot marks.
struct Chunk {
    words: Vec<AtomicUsize>,
    marks: Vec<UnsafeCell<usize>>,
    slots: usize,
}

impl Chunk {
    /// A chunk whose slots in `held` are claimed and marked with `owner`.
    fn new(slots: usize, held: &[usize], owner: usize) -> Self {
        let mut bits = vec![0; slots.div_ceil(WORD_BITS)];
        for &i in held {
            bits[i / WORD_BITS] |= 1 << (i % WORD_BITS);
        }
        Self::with_bits(slots, bits, held, owner)
    }

    /// A chunk with claim words `bits`, its slots in `held` marked with `owner`.
    fn with_bits(slots: usize, bits: Vec<usize>, held: &[usize], owner: usize) -> Self {
        let marks = (0..slots)
            .map(|i| UnsafeCell::new(if held.contains(&i) { owner } else { 0 }))
            .collect();
        Chunk {
            words: bits.into_iter().map(AtomicUsize::new).collect(),
            marks,
            slots,
        }
    }

    /// Claims a slot for `me` and marks it.
    fn lease(&self, me: usize) -> Option<usize> {
        let i = claims::claim(&self.words, self.slots)?;
        assert!(
            i < self.slots,
            "slot {i} claimed past the chunk's {}",
            self.slots
        );
        self.marks[i].with_mut(|mark| {
            // SAFETY: loom checks that no other access to the mark is concurrent.
            let mark = unsafe { &mut *mark };
            assert_eq!(*mark, 0, "slot {i} leased to {me} while {} holds it", *mark);
            *mark = me;
        });
        Some(i)
    }

    /// Unmarks slot `i`, which `me` leased, and releases it.
    fn give_back(&self, me: usize, i: usize) {
        self.marks[i].with_mut(|mark| {
            // SAFETY: as in `lease`.
            let mark = unsafe { &mut *mark };
            assert_eq!(*mark, me, "slot {i} of {me} taken by {}", *mark);
            *mark = 0;
        });
        claims::release(&self.words, i);
    }

    /// The claimed slots, read when no other thread is at work on the chunk.
    fn claimed(&self) -> BTreeSet<usize> {
        let bits: Vec<usize> = self.words.iter().map(|w| w.load(Relaxed)).collect();
        (0..self.slots)
            .filter(|&i| bits[i / WORD_BITS] & 1 << (i % WORD_BITS) != 0)
            .collect()
    }
}

/// Spawns `f(chunk)` on a new thread.
fn spawn<R: 'static>(
    chunk: &Arc<Chunk>,
    f: impl FnOnce(&Chunk) -> R + 'static,
) -> thread::JoinHandle<R> {
    let chunk = chunk.clone();
    thread::spawn(move || f(&chunk))
}

/// Two threads lease, give back and lease again from two slots: each always finds a slot,
/// never one the other holds, and at the end no slot is claimed.
#[test]
fn two_threads_lease_and_give_back_twice() {
    loom::model(|| {
        let chunk = Arc::new(Chunk::new(2, &[], 0));
        let threads: Vec<_> = (1..=2)
            .map(|me| {
                spawn(&chunk, move |c| {
                    for _ in 0..2 {
                        let i = c.lease(me).expect("a free slot was missed");
                        c.give_back(me, i);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(chunk.claimed(), BTreeSet::new());
    });
}

/// Three threads contend for two slots, each leasing once and giving back: no slot has
/// two owners, and at the end none is claimed. Every interleaving with at most three
/// preemptions: seconds, where all of them take longer than a quarter of an hour.
#[test]
fn three_threads_contend_for_two_slots() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let chunk = Arc::new(Chunk::new(2, &[], 0));
        let threads: Vec<_> = (1..=3)
            .map(|me| {
                spawn(&chunk, move |c| {
                    if let Some(i) = c.lease(me) {
                        c.give_back(me, i);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(chunk.claimed(), BTreeSet::new());
    });
}

/// The last free slot of the first word and the only slot of the second, claimed by two
/// threads at once: each gets one, and then the chunk is full.
#[test]
fn claims_cross_a_word_boundary() {
    loom::model(|| {
        let held: Vec<usize> = (0..WORD_BITS - 1).collect();
        let chunk = Arc::new(Chunk::new(WORD_BITS + 1, &held, usize::MAX));
        let threads: Vec<_> = (1..=2)
            .map(|me| {
                spawn(&chunk, move |c| {
                    c.lease(me).expect("a free slot was missed")
                })
            })
            .collect();
        let got: BTreeSet<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(got, BTreeSet::from([WORD_BITS - 1, WORD_BITS]));
        assert_eq!(chunk.lease(3), None, "a slot past the chunk's end");
    });
}

/// A reset of claim words that keeps one slot's claim.
type Reset = fn(&[AtomicUsize], Option<usize>);

const FORKER: usize = 1;
const PARENT_THREAD: usize = 2;
const NEW_THREADS: [usize; 2] = [3, 4];

/// A fork. In the parent, the forking thread leases a slot of three while another thread
/// leases and gives back one; the forking thread then forks: the child's claim words are a
/// copy of the parent's as the forking thread sees them (with the other thread's claim or
/// without), its only thread is the forking thread, and it runs `reset` keeping its own
/// slot. Asserts that after the reset exactly that slot is claimed: two threads new in the
/// child, leasing at once until none is left, get every other slot once (the other
/// thread's claim, made or not, does not outlive the fork) and never the kept one (whose
/// mark is the forking thread's).
fn fork(reset: Reset) {
    loom::model(move || {
        let parent = Arc::new(Chunk::new(3, &[], 0));
        let other = spawn(&parent, |c| {
            if let Some(i) = c.lease(PARENT_THREAD) {
                c.give_back(PARENT_THREAD, i);
            }
        });
        let kept = parent.lease(FORKER).expect("a free slot was missed");
        let copy = parent.words.iter().map(|w| w.load(Relaxed)).collect();
        // (What the parent does after the fork is no concern of the child's.)
        other.join().unwrap();
        let child = Arc::new(Chunk::with_bits(3, copy, &[kept], FORKER));

        reset(&child.words, Some(kept));
        let new_threads = NEW_THREADS.map(|me| {
            spawn(&child, move |c| {
                std::iter::from_fn(|| c.lease(me)).collect::<Vec<_>>()
            })
        });
        let mut got: Vec<usize> = new_threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        got.sort_unstable();
        let others: Vec<usize> = (0..3).filter(|&i| i != kept).collect();
        assert_eq!(
            got, others,
            "the child's leases are not every slot but the kept one"
        );
    });
}

#[test]
fn fork_child_keeps_only_the_forking_threads_claim() {
    fork(claims::reset);
}

/// A reset that also clears the kept claim: the child hands out the forking thread's slot.
#[test]
#[should_panic(expected = "while 1 holds it")]
fn fork_model_catches_a_reset_that_drops_the_kept_claim() {
    fork(|words, _| claims::reset(words, None));
}

/// A reset that keeps every claim: the parent's other thread, absent from the child,
/// keeps its slot there when the fork came while it held one.
#[test]
#[should_panic(expected = "the child's leases are not every slot but the kept one")]
fn fork_model_catches_a_reset_that_keeps_a_vanished_threads_claim() {
    fork(|_, _| {});
}

/// The reset run while another thread leases and gives back (which a forked child never
/// has, hence no assertion about that thread's own slots): the kept slot stays claimed
/// throughout, so the other thread never gets it, and once that thread is done only the
/// kept slot is claimed. The kept slot is the first, the one the other thread leases
/// whenever it is free.
///
/// (loom 0.7 can also let a plain store fall between the read and the write of another
/// thread's read-modify-write, an order no execution has. Under a correct reset every
/// value of the word holds the kept bit, so that cannot make one seem to fail.)
fn reset_under_way(reset: Reset) {
    loom::model(move || {
        let chunk = Arc::new(Chunk::new(2, &[0], FORKER));
        let other = spawn(&chunk, |c| {
            for _ in 0..2 {
                if let Some(i) = c.lease(PARENT_THREAD) {
                    c.give_back(PARENT_THREAD, i);
                }
            }
        });
        reset(&chunk.words, Some(0));
        other.join().unwrap();
        assert_eq!(chunk.claimed(), BTreeSet::from([0]));
    });
}

#[test]
fn reset_never_lets_the_kept_claim_go() {
    reset_under_way(claims::reset);
}

/// A reset that clears every claim, then sets the kept one again: for a moment the kept
/// slot is free, and another thread leases it.
#[test]
#[should_panic(expected = "slot 0 leased to 2 while 1 holds it")]
fn reset_model_catches_a_reset_that_lets_the_kept_claim_go_for_a_moment() {
    reset_under_way(|words, keep| {
        claims::reset(words, None);
        claims::reset(words, keep);
    });
}
