//! The state pool: thread states carved from shared chunks, many to a chunk, so that a
//! thread costs a slot, not a kernel mapping.
//!
//! Invariants: a chunk ([`CHUNK_LEN`]; on Linux one `MADV_WIPEONFORK` + `MADV_DONTDUMP` mapping) is
//! published once into the first empty entry of a fixed directory and unmapped only once sealed
//! with none of its slots leased ([`StatePool::close`]); slots never
//! straddle a page. Claim words in static memory (`claims.rs`, model-checked in
//! `pool/loom_model.rs`) mark leased slots; a slot is zeroed before its claim is released and again
//! when claimed. No lock anywhere: a signal handler or forked child never waits. A forked child's
//! handler ([`StatePool::reset_after_fork`]) frees every claim but the forking thread's.

#[cfg(any(test, fkrng_test_hooks))]
mod hooks;
#[cfg(all(test, loom))]
mod loom_model;

use crate::claims::{self, WORD_BITS};
use crate::os::pages::{Advice, note_advice, os};
use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering::{AcqRel, Acquire};
use core::sync::atomic::{AtomicPtr, AtomicUsize};

/// Bytes of one chunk: 256 KiB on Linux and Android (64 pages of 4 KiB, one mapping), 64
/// KiB on the heap elsewhere (and under Miri). At least one page.
pub(crate) const CHUNK_LEN: usize = if MAPPED { 256 << 10 } else { 64 << 10 };
const MAPPED: bool = os::MAPPED;

/// Chunks a pool holds at most: 1024 (196,608 thread states with 4 KiB pages).
pub(crate) const MAX_CHUNKS: usize = 1024;

/// Slots per chunk at most, the bits of a chunk's claim words: 256.
const MAX_SLOTS: usize = 256;
const CLAIM_WORDS: usize = MAX_SLOTS / WORD_BITS;

/// A directory entry: the chunk's address (null while unpublished) and its claim bits.
struct Chunk {
    base: AtomicPtr<u8>,
    claimed: [AtomicUsize; CLAIM_WORDS],
}

/// Slots in a chunk: `per_unit` slots `stride` bytes apart per `unit` (which none straddles: the
/// page size on Linux and Android, else 4096 bytes), `slots` in all, in `len` bytes (whole units).
#[derive(Clone, Copy)]
struct Geometry {
    unit: usize,
    stride: usize,
    per_unit: usize,
    slots: usize,
    len: usize,
}

impl Geometry {
    fn of(stride: usize) -> Self {
        let unit = os::unit();
        let per_unit = unit / stride;
        let units = (CHUNK_LEN / unit).max(1);
        Geometry {
            unit,
            stride,
            per_unit,
            slots: (units * per_unit).min(MAX_SLOTS),
            len: units * unit,
        }
    }

    /// Offset of slot `i` from its chunk's start.
    fn offset(&self, i: usize) -> usize {
        (i / self.per_unit) * self.unit + (i % self.per_unit) * self.stride
    }

    /// The slot at `offset` from a chunk's start, if a slot starts there.
    fn index(&self, offset: usize) -> Option<usize> {
        let (unit, within) = (offset / self.unit, offset % self.unit);
        let i = unit * self.per_unit + within / self.stride;
        (within % self.stride == 0 && within / self.stride < self.per_unit && i < self.slots)
            .then_some(i)
    }
}

/// A pool of zero-initialised slots for `T` (see the module documentation). `T` must be
/// valid when all-zero, at most 4096 bytes, and aligned to at most 64 bytes.
pub(crate) struct StatePool<T> {
    advice: Advice,
    chunks: [Chunk; MAX_CHUNKS],
    _slots: PhantomData<fn() -> T>,
}

impl<T> StatePool<T> {
    /// An empty pool whose chunks get `advice`.
    pub(crate) const fn new(advice: Advice) -> Self {
        assert!(size_of::<T>() > 0 && size_of::<T>() <= 4096 && align_of::<T>() <= 64);
        StatePool {
            advice,
            chunks: [const {
                Chunk {
                    base: AtomicPtr::new(ptr::null_mut()),
                    claimed: [const { AtomicUsize::new(0) }; CLAIM_WORDS],
                }
            }; MAX_CHUNKS],
            _slots: PhantomData,
        }
    }

    fn geometry() -> Geometry {
        // A slot is a whole number of cache lines: no two states share one.
        Geometry::of(size_of::<T>().next_multiple_of(64))
    }

    /// A zeroed slot, claimed until the [`Lease`] drops: the first free slot of a published chunk,
    /// else of one mapped now; `None` when the directory is full or the OS refuses a chunk.
    pub(crate) fn lease(&'static self) -> Option<Lease<T>> {
        let g = Self::geometry();
        // A chunk this thread mapped and another thread's publication made unneeded.
        let mut unpublished: Option<NonNull<u8>> = None;
        let mut found = None;
        for (c, chunk) in self.chunks.iter().enumerate() {
            let mut base = chunk.base.load(Acquire);
            if base.is_null() {
                let Some(new) = unpublished.take().or_else(|| self.map_chunk(&g)) else {
                    break;
                };
                let (null, p) = (ptr::null_mut(), new.as_ptr());
                base = match chunk.base.compare_exchange(null, p, AcqRel, Acquire) {
                    Ok(_) => {
                        crate::probe::count(crate::probe::Event::ChunkPublished);
                        p
                    }
                    Err(theirs) => {
                        unpublished = Some(new);
                        theirs
                    }
                };
            }
            if let Some(i) = claims::claim(&chunk.claimed, g.slots) {
                found = Some((c, base, i));
                break;
            }
        }
        if let Some(p) = unpublished {
            // SAFETY: mapped by `map_chunk` with this geometry and never published: unshared.
            unsafe { os::unmap(p, g.len, chunk_layout(&g)) };
        }
        let (c, base, i) = found?;
        // SAFETY: `base` is a published chunk of `g.len` bytes, which stays mapped while a slot
        // of it is claimed (`close`), and slot `i` lies inside it.
        let slot = unsafe { base.add(g.offset(i)) }.cast::<T>();
        // Zeroed again: a slot freed in a forked child without wipe-on-fork holds its old state.
        // SAFETY: the slot is claimed by this thread alone, aligned and `stride` bytes long,
        // and all-zero bytes are a valid `T`.
        unsafe { zeroize::zeroize_flat_type(slot) };
        Some(Lease {
            ptr: NonNull::new(slot)?,
            pool: self,
            // Both below 2^32: at most MAX_CHUNKS chunks of MAX_SLOTS slots.
            chunk: c as u32,
            index: i as u32,
        })
    }

    /// Maps a zeroed chunk with the pool's advice, noting whether wipe-on-fork was accepted.
    fn map_chunk(&self, g: &Geometry) -> Option<NonNull<u8>> {
        let (p, len, wiped) = os::map(chunk_layout(g), self.advice)?;
        debug_assert_eq!(len, g.len);
        // Only the claim words order the slots' owners: helgrind and DRD would see races.
        crate::os::untrack(p.as_ptr(), len);
        note_advice(self.advice, wiped);
        Some(p)
    }

    /// Unmaps every chunk with no slot leased, sealed first so that no lease takes it again; a
    /// chunk with a leased slot stays. At unload or exit, while other threads may still lease.
    pub(crate) fn close(&self) {
        use core::sync::atomic::Ordering::Release;
        let g = Self::geometry();
        for chunk in &self.chunks {
            let base = chunk.base.load(Acquire);
            // Leases publish in directory order: past the first entry never published (null,
            // not claimed nor sealed) none is, and the untouched pages stay so (no page faults).
            if base.is_null() && chunk.claimed.iter().all(|w| w.load(Acquire) == 0) {
                break;
            }
            if let Some(base) = NonNull::new(base)
                && claims::seal(&chunk.claimed, g.slots)
            {
                // Unpublished first: a forked child's reset stops here and leaves the seal.
                chunk.base.store(ptr::null_mut(), Release);
                // SAFETY: mapped by `map_chunk` with this geometry; sealed, nothing refers into it.
                unsafe { os::unmap(base, g.len, chunk_layout(&g)) };
            }
        }
    }

    /// In a forked child (the child handler): every slot's claim cleared but `keep`'s (the
    /// forking thread's slot, when it has one). Async-signal-safe: atomic loads and stores.
    pub(crate) fn reset_after_fork(&self, keep: Option<*const T>) {
        let g = Self::geometry();
        for chunk in &self.chunks {
            let base = chunk.base.load(Acquire);
            if base.is_null() {
                break;
            }
            let kept = keep
                .and_then(|p| (p as usize).checked_sub(base as usize))
                .filter(|&offset| offset < g.len)
                .and_then(|offset| g.index(offset));
            claims::reset(&chunk.claimed, kept);
        }
    }
}

fn chunk_layout(g: &Geometry) -> Layout {
    Layout::from_size_align(g.len, g.unit).expect("a chunk's layout")
}

/// One claimed slot of a [`StatePool`]: zeroed when leased, zeroed whole and released on drop.
pub(crate) struct Lease<T: 'static> {
    ptr: NonNull<T>,
    pool: &'static StatePool<T>,
    chunk: u32,
    index: u32,
}

// SAFETY: a `Lease<T>` is the only handle to its slot (claimed for it alone), as a
// `Box<T>` is to its allocation, so it may move to another thread whenever `T` may.
unsafe impl<T: Send> Send for Lease<T> {}

impl<T> Lease<T> {
    /// The slot's address (valid until `self` is dropped).
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Zeroes every byte of the slot, padding included (which may hold stack residue).
    pub(crate) fn wipe(&self) {
        // SAFETY: the slot is claimed for `self`, aligned for `T`, and all-zero bytes are a
        // valid `T`; the caller holds no reference into it (it is given out as a pointer).
        unsafe { zeroize::zeroize_flat_type(self.ptr.as_ptr()) };
    }
}

impl<T> Drop for Lease<T> {
    fn drop(&mut self) {
        self.wipe();
        // The zeroing happens before the next owner's claim (a release, then an acquire).
        let chunk = &self.pool.chunks[self.chunk as usize];
        claims::release(&chunk.claimed, self.index as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a thread state: 1216 bytes (19 cache lines), 64-byte aligned, valid when
    /// all-zero.
    #[repr(C, align(64))]
    struct State([u8; 1216]);

    fn bytes(lease: &Lease<State>) -> &[u8] {
        // SAFETY: the slot is claimed for `lease`, which outlives the borrow.
        unsafe { &(*lease.as_ptr()).0 }
    }

    fn fill(lease: &Lease<State>, byte: u8) {
        // SAFETY: as above; no other reference to the slot exists.
        unsafe { (*lease.as_ptr()).0.fill(byte) }
    }

    /// Leases come from one chunk until it is full (192 states with 4 KiB pages), are
    /// distinct, cache-line aligned and zeroed; a released slot is zeroed, flag bytes and
    /// all, and is the next one leased.
    #[test]
    fn leases_share_chunks_and_released_slots_come_back_zeroed() {
        static POOL: StatePool<State> = StatePool::new(Advice::WipeOnFork);
        let g = StatePool::<State>::geometry();
        let leases: Vec<_> = (0..g.slots + 1)
            .map(|_| POOL.lease().expect("a slot"))
            .collect();
        assert_eq!(POOL.census(), (2, g.slots + 1));
        let mut starts: Vec<usize> = leases.iter().map(|l| l.as_ptr() as usize).collect();
        assert!(starts.iter().all(|s| s % 64 == 0));
        assert!(leases.iter().all(|l| bytes(l).iter().all(|&b| b == 0)));
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), g.slots + 1, "a slot leased twice");
        let mut leases = leases;
        let abandoned = leases.remove(7);
        let at = abandoned.as_ptr() as usize;
        // A state whose owner left a read mid-way: every byte set, its busy flag among them.
        fill(&abandoned, 0xff);
        drop(abandoned);
        assert_eq!(POOL.census(), (2, g.slots));
        let again = POOL.lease().expect("a slot");
        assert_eq!(
            again.as_ptr() as usize,
            at,
            "the freed slot is leased first"
        );
        assert!(
            bytes(&again).iter().all(|&b| b == 0),
            "a released slot kept bytes"
        );
    }

    /// A forked child's reset keeps only the forking thread's claim; every other slot, a
    /// state left with its bytes set included, is leased again zeroed.
    #[test]
    fn reset_after_fork_frees_every_slot_but_the_kept_one() {
        static POOL: StatePool<State> = StatePool::new(Advice::WipeOnFork);
        let leases: Vec<_> = (0..10).map(|_| POOL.lease().expect("a slot")).collect();
        for l in &leases {
            fill(l, 0x5a);
        }
        let kept = leases[3].as_ptr();
        let slots: Vec<usize> = leases.iter().map(|l| l.as_ptr() as usize).collect();
        // The leases belong to threads that do not exist in the child: forgotten, not
        // dropped (a drop would release them).
        leases.into_iter().for_each(core::mem::forget);
        POOL.reset_after_fork(Some(kept));
        assert_eq!(POOL.census(), (1, 1));
        let fresh: Vec<_> = (0..9).map(|_| POOL.lease().expect("a slot")).collect();
        let mut got: Vec<usize> = fresh.iter().map(|l| l.as_ptr() as usize).collect();
        got.sort_unstable();
        let mut expected: Vec<usize> = slots
            .iter()
            .copied()
            .filter(|&s| s != kept as usize)
            .collect();
        expected.sort_unstable();
        assert_eq!(
            got, expected,
            "the child's new leases are the other threads' slots"
        );
        assert!(fresh.iter().all(|l| bytes(l).iter().all(|&b| b == 0)));
        // Without a slot to keep (the forking thread had none), nothing stays claimed.
        fresh.into_iter().for_each(core::mem::forget);
        POOL.reset_after_fork(None);
        assert_eq!(POOL.census(), (1, 0));
    }

    /// Closing unmaps a chunk with no slot leased and never leases from it again, and leaves a
    /// chunk with a leased slot as it was, its state readable and its free slots leased next.
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    #[test]
    fn close_unmaps_only_chunks_without_a_leased_slot() {
        static POOL: StatePool<State> = StatePool::new(Advice::WipeOnFork);
        let g = StatePool::<State>::geometry();
        let mut leases: Vec<_> = (0..g.slots + 1).map(|_| POOL.lease().unwrap()).collect();
        drop(leases.pop());
        let kept = leases.pop().unwrap();
        fill(&kept, 0x5a);
        drop(leases);
        POOL.close();
        let base = |c: usize| POOL.chunks[c].base.load(Acquire) as usize;
        assert_ne!(base(0), 0, "a chunk with a leased slot was closed");
        assert_eq!(base(1), 0, "a chunk with no leased slot stayed published");
        assert!(bytes(&kept).iter().all(|&b| b == 0x5a));
        let again: Vec<_> = (0..g.slots).map(|_| POOL.lease().unwrap()).collect();
        let in_first = |p: usize| (base(0)..base(0) + g.len).contains(&p);
        let (first, rest): (Vec<_>, Vec<_>) = again
            .iter()
            .map(|l| l.as_ptr() as usize)
            .partition(|&p| in_first(p));
        assert_eq!(
            first.len(),
            g.slots - 1,
            "the open chunk's free slots come first"
        );
        assert_eq!(rest.len(), 1);
        // The sealed entry takes a new chunk it never leases from; the lease is in the next.
        assert!((base(2)..base(2) + g.len).contains(&rest[0]));
    }

    /// Closing reads the directory only up to the first entry never published: the pages past
    /// it, which the process never touched, take no page fault (the 1024 entries span ten
    /// pages, nine on 32-bit targets; reading them all faults on all but the one or two
    /// touched). A first close of another pool runs the same code before the count, so an
    /// emulator's translation of it (qemu-user faults in pages of its code cache) is not
    /// counted; the bound, half the directory's pages, is above the one or two faults a
    /// close itself takes.
    #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
    #[test]
    fn close_reads_no_entry_past_the_first_never_published() {
        static WARM: StatePool<State> = StatePool::new(Advice::WipeOnFork);
        static POOL: StatePool<State> = StatePool::new(Advice::WipeOnFork);
        let faults = || {
            // SAFETY: `rusage` is plain integers, for which all-zero bytes are valid.
            let mut usage: libc::rusage = unsafe { core::mem::zeroed() };
            // SAFETY: `getrusage` writes the `rusage` it is given, valid for writes.
            assert_eq!(
                unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) },
                0
            );
            usage.ru_minflt
        };
        let pages = size_of_val(&POOL.chunks).div_ceil(4096) as libc::c_long;
        assert!(pages >= 9, "{pages} pages");
        let warm = WARM.lease().unwrap();
        WARM.close();
        drop(warm);
        let lease = POOL.lease().unwrap();
        let before = faults();
        POOL.close();
        let taken = faults() - before;
        assert!(taken <= pages / 2, "closing took {taken} page faults");
        drop(lease);
    }

    /// Slots tile every unit from its start, never straddle one, and map back to their
    /// index; the claim masks cover exactly the chunk's slots.
    #[test]
    fn slots_tile_pages_without_straddling() {
        for (unit, stride) in [
            (4096, 1216),
            (16384, 1216),
            (65536, 1216),
            (4096, 64),
            (4096, 4096),
        ] {
            let per_unit = unit / stride;
            let units = (CHUNK_LEN / unit).max(1);
            let g = Geometry {
                unit,
                stride,
                per_unit,
                slots: (units * per_unit).min(MAX_SLOTS),
                len: units * unit,
            };
            for i in 0..g.slots {
                let off = g.offset(i);
                assert_eq!(
                    off / unit,
                    (off + stride - 1) / unit,
                    "slot {i} straddles a unit"
                );
                assert!(off + stride <= g.len);
                assert_eq!(g.index(off), Some(i));
                if stride > 64 {
                    assert_eq!(g.index(off + 64), None);
                }
            }
            let bits: u32 = (0..CLAIM_WORDS)
                .map(|w| claims::mask(g.slots, w).count_ones())
                .sum();
            assert_eq!(bits as usize, g.slots);
        }
        let g = Geometry::of(1216);
        if g.unit == 4096 {
            assert_eq!(g.per_unit, 3);
            assert_eq!(g.slots, if CHUNK_LEN == 256 << 10 { 192 } else { 48 });
        }
    }
}
