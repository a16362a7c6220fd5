//! Wiped states of exited threads, kept for the next threads' first reads.
//!
//! Setting up a state in new pages costs three system calls (`mmap` and two `madvise`), a
//! page fault at first touch and an `munmap` at thread exit, several microseconds in all,
//! which is most of a new thread's first read. An exiting thread wipes its state (every
//! byte zero: the empty, unseeded state) and leaves its pages here, up to `SPARE_STATES`;
//! a new thread takes them and seeds from the OS at its first read exactly as in new pages.
//! The pages keep their wipe-on-fork and do-not-dump marks, and hold nothing but zeros
//! while spare.
//!
//! Both ends only ever *try* the lock, so a thread never waits here, and a child forked
//! while another thread held the lock (a lock it can never release in the child) simply
//! maps and unmaps pages as before.

use super::state::Slot;
use crate::memory::{Advice, Pages};
use std::sync::Mutex;

/// Spare states kept at most: 16 (64 KiB with 4 KiB pages).
pub(super) const SPARE_STATES: usize = 16;

static SPARE: Mutex<[Option<Pages<Slot>>; SPARE_STATES]> =
    Mutex::new([const { None }; SPARE_STATES]);

/// A wiped state, if one is spare and the lock is free, for a thread that asks for pages
/// with `advice` (spare states all have wipe-on-fork).
pub(super) fn take(advice: Advice) -> Option<Pages<Slot>> {
    if advice != Advice::WipeOnFork {
        return None;
    }
    SPARE.try_lock().ok()?.iter_mut().find_map(Option::take)
}

/// Keeps `pages` (holding a wiped state) for a later thread, or unmaps them when the
/// spares are full or the lock is taken.
pub(super) fn put(pages: Pages<Slot>) {
    if pages.advice() != Advice::WipeOnFork {
        // Pages made without wipe-on-fork must not reach other threads.
        return;
    }
    if let Ok(mut slots) = SPARE.try_lock()
        && let Some(slot) = slots.iter_mut().find(|slot| slot.is_none())
    {
        *slot = Some(pages);
    }
}
