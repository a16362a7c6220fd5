use super::*;
use crate::generator::{FkeState, KEY_LEN};
use crate::lifecycle::reseed::{Clock, RESEED_INTERVAL_NS, RESEED_MIN_BYTES};
use crate::lifecycle::snapshot;
use crate::test_hooks::entropy::FakeEntropy;
use crate::test_hooks::lifecycle::{Release, releases, set_up_without_wipe_on_fork};
use crate::test_hooks::memory::state_memory;
use crate::test_hooks::process::steady_epoch;
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
use crate::test_hooks::process::{in_child, in_new_process};

struct FakeClock(Cell<u64>);

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

fn read(st: &mut ThreadState, n: usize, os: &mut FakeEntropy, clock: &FakeClock) -> Vec<u8> {
    let mut out = vec![0u8; n];
    st.fill_slow(&mut out, os, clock).unwrap();
    out
}

#[test]
fn first_read_seeds_once_and_budget_is_in_range() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(5));
    read(&mut st, 16, &mut os, &clock);
    assert_eq!(os.calls, 1);
    assert!(st.life.seeded);
    assert!((RESEED_MIN_BYTES..2 * RESEED_MIN_BYTES).contains(&st.life.budget));
    assert_eq!(st.life.produced, 1024);
    assert_eq!(st.life.seeded_at_ns, 5);
}

#[test]
fn byte_budget_triggers_reseed_at_a_refill() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 16, &mut os, &clock);
    let budget = st.life.budget;
    // Direct fills of 64 KiB: each produces 32 + 65536 bytes of keystream.
    let per = 65536 + 32;
    let fills_before_due = budget.div_ceil(per) as usize;
    for _ in 0..fills_before_due {
        read(&mut st, 65536, &mut os, &clock);
    }
    assert_eq!(os.calls, 1, "no reseed before the budget is spent");
    read(&mut st, 65536, &mut os, &clock);
    assert_eq!(
        os.calls, 2,
        "reseed at the first direct fill past the budget"
    );
    assert_eq!(st.life.produced, per);
}

#[test]
fn sixty_seconds_trigger_reseed_only_at_refill() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(1_000));
    read(&mut st, 16, &mut os, &clock);
    clock.0.set(1_000 + RESEED_INTERVAL_NS - 1);
    read(&mut st, 976, &mut os, &clock); // empties the buffer exactly
    assert_eq!(os.calls, 1);
    clock.0.set(1_000 + RESEED_INTERVAL_NS);
    assert_eq!(st.fke.available(), 0);
    read(&mut st, 16, &mut os, &clock);
    assert_eq!(os.calls, 2);
    assert_eq!(st.life.seeded_at_ns, 1_000 + RESEED_INTERVAL_NS);
}

#[test]
fn failed_periodic_reseed_keeps_key_and_retries() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 992, &mut os, &clock);
    clock.0.set(RESEED_INTERVAL_NS * 2);
    os.fail = true;
    let key_before = *st.fke.key();
    let out = read(&mut st, 16, &mut os, &clock);
    assert_ne!(out, vec![0u8; 16]);
    assert_ne!(*st.fke.key(), key_before, "the refill still erased the key");
    assert_eq!(os.calls, 1);
    read(&mut st, 976, &mut os, &clock);
    os.fail = false;
    read(&mut st, 16, &mut os, &clock);
    assert_eq!(os.calls, 2, "retried at the next refill");
}

#[test]
fn unseeded_state_with_failing_os_emits_nothing() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::failing();
    let clock = FakeClock(Cell::new(0));
    let mut out = [0xeeu8; 16];
    assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
    assert_eq!(out, [0u8; 16]);
    assert!(!st.life.seeded);
    assert_eq!(st.fke.available(), 0);
}

#[test]
fn all_zero_entropy_is_refused() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut out = [0xeeu8; 8];
    let err = st
        .fill_slow(
            &mut out,
            &mut FakeEntropy::zeros(),
            &FakeClock(Cell::new(0)),
        )
        .unwrap_err();
    assert_eq!(err, Error::ALL_ZERO);
    assert_eq!(out, [0u8; 8]);
}

#[test]
fn epoch_change_reseeds_before_output_and_failure_is_fatal() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 16, &mut os, &clock);
    st.life.epoch = st.life.epoch.wrapping_sub(1); // as if `reseed_all` or a fork ran
    os.fail = true;
    let mut out = [0xeeu8; 16];
    assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
    assert_eq!(out, [0u8; 16]);
    os.fail = false;
    let key_before = *st.fke.key();
    read(&mut st, 16, &mut os, &clock);
    assert_eq!(os.calls, 2);
    assert_eq!(st.life.epoch, fork::epoch());
    assert_ne!(*st.fke.key(), key_before);
}

#[test]
fn generation_change_reseeds_before_output_and_failure_is_fatal() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 16, &mut os, &clock);
    let (buffer_left, key_before) = (st.fke.available(), *st.fke.key());
    // As if a snapshot restore had changed the VM generation counter.
    st.life.generation = st.life.generation.wrapping_add(1);
    os.fail = true;
    let mut out = [0xeeu8; 16];
    assert!(st.fill_slow(&mut out, &mut os, &clock).is_err());
    assert_eq!(out, [0u8; 16], "nothing served from the restored state");
    assert_eq!(st.fke.available(), buffer_left);
    os.fail = false;
    let out = read(&mut st, 16, &mut os, &clock);
    assert_eq!(os.calls, 2);
    assert_ne!(*st.fke.key(), key_before);
    assert_eq!(st.life.generation, snapshot::generation());
    assert_ne!(out, [0u8; 16]);
}

#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn thread_exit_wipes_state_before_release() {
    // A thread reads 123 bytes (seeding its state and leaving 992 - 123 unserved bytes)
    // and reports where its state lives; its exit must zero every byte of those pages.
    let addr = std::thread::spawn(|| {
        let mut b = [0u8; 123];
        crate::fill(&mut b);
        slot() as usize
    })
    .join()
    .unwrap();
    let log = releases();
    let ours: Vec<&Release> = log.iter().filter(|r| r.addr == addr).collect();
    assert!(
        ours.iter().any(|r| r.before == (true, true, 992 - 123)),
        "the thread's state was released holding a seeded key and 869 unserved bytes"
    );
    for r in log.iter() {
        assert!(
            r.pages_zero_after,
            "a state at {:#x} (seeded: {}, key non-zero: {}, unserved bytes: {}) was released with non-zero bytes",
            r.addr, r.before.0, r.before.1, r.before.2
        );
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
#[test]
fn state_pages_are_wipe_on_fork_and_dont_dump() {
    crate::fill(&mut [0u8; 1]);
    if !madvise_honoured("wf and dd flags of the state pages") {
        return;
    }
    let (start, _) = crate::test_hooks::memory::state_range().expect("state mapped");
    let flags = crate::os::pages::smaps_flags(start).expect("mapping listed in smaps");
    let flags: Vec<&str> = flags.split_whitespace().collect();
    assert!(flags.contains(&"wf"), "{flags:?}");
    assert!(flags.contains(&"dd"), "{flags:?}");
    assert_eq!(
        crate::fork_protection(),
        Some(crate::ForkProtection::WipeOnFork)
    );
}

#[test]
fn budget_spans_one_to_two_mib_and_reseed_comes_at_the_first_refill_past_it() {
    let _epoch = steady_epoch();
    for (draw, budget) in [
        (0, RESEED_MIN_BYTES),
        (u32::MAX, 2 * RESEED_MIN_BYTES - 1),
        (0x0012_3456, RESEED_MIN_BYTES + 0x2_3456),
    ] {
        let mut os = FakeEntropy::fixed([3; KEY_LEN], draw);
        let clock = FakeClock(Cell::new(0));
        let mut st = ThreadState::zeroed();
        let mut out = [0u8; 16];
        st.fill_slow(&mut out, &mut os, &clock).unwrap();
        assert_eq!(st.life.budget, budget);
        // Refills of 1024 bytes: the reseed runs before the refill that starts with
        // `produced >= budget`, i.e. before refill number ceil(budget / 1024) + 1.
        let refills_before = budget.div_ceil(1024);
        let mut refills = 1;
        while refills < refills_before {
            st.fill_slow(&mut [0u8; 992], &mut os, &clock).unwrap();
            refills += 1;
        }
        assert_eq!(st.life.produced, refills_before * 1024);
        assert_eq!(os.calls, 1, "draw {draw:#x}: no reseed inside the budget");
        let mut rest = vec![0u8; st.fke.available()];
        st.fill_slow(&mut rest, &mut os, &clock).unwrap();
        assert_eq!(os.calls, 1, "draw {draw:#x}: the buffer is served first");
        st.fill_slow(&mut [0u8; 1], &mut os, &clock).unwrap();
        assert_eq!(os.calls, 2, "draw {draw:#x}: reseed at the next refill");
        assert_eq!(st.life.produced, 1024);
    }
}

#[test]
fn time_is_checked_only_when_keystream_is_made() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 16, &mut os, &clock);
    clock.0.set(10 * RESEED_INTERVAL_NS);
    // Served from the buffer: no reseed however late it is.
    read(&mut st, 900, &mut os, &clock);
    assert_eq!(os.calls, 1);
    // A direct fill makes keystream, so it reseeds first.
    read(&mut st, 76 + 4096, &mut os, &clock);
    assert_eq!(os.calls, 2);
    assert_eq!(st.life.seeded_at_ns, 10 * RESEED_INTERVAL_NS);
    // A clock that reads earlier than at the last seed (the process restored on
    // another host) makes the next keystream reseed first, once.
    clock.0.set(5);
    read(&mut st, 4096, &mut os, &clock);
    assert_eq!(os.calls, 3, "a clock that went backwards counts as due");
    assert_eq!(st.life.seeded_at_ns, 5);
    read(&mut st, 4096, &mut os, &clock);
    assert_eq!(os.calls, 3, "and only once");
}

#[test]
fn reseed_mixes_the_key_and_discards_the_buffer() {
    let _epoch = steady_epoch();
    let seed = [0x5a; KEY_LEN];
    let clock = FakeClock(Cell::new(0));
    let mut a = ThreadState::zeroed();
    let mut b = ThreadState::zeroed();
    for st in [&mut a, &mut b] {
        let mut os = FakeEntropy::fixed(seed, 0);
        st.fill_slow(&mut [0u8; 8], &mut os, &clock).unwrap();
    }
    let key_before = *a.fke.key();
    let s = [0xc3; KEY_LEN];
    let mut os = FakeEntropy::fixed(s, 7);
    a.reseed(&mut os, &clock).unwrap();
    let d = crate::lifecycle::diversifier::LAST.get();
    let mixed: Vec<u8> = (0..KEY_LEN).map(|i| key_before[i] ^ s[i] ^ d[i]).collect();
    assert_eq!(a.fke.key()[..], mixed[..], "K = K XOR S XOR D");
    assert_eq!(a.fke.available(), 0);
    assert!(a.fke.buffer().iter().all(|&x| x == 0), "buffer wiped");
    assert_eq!(a.life.budget, RESEED_MIN_BYTES + 7);
    // The twin that did not reseed serves its old buffer; the reseeded one does not.
    let mut quiet = FakeEntropy::failing();
    let (mut x, mut y) = ([0u8; 64], [0u8; 64]);
    a.fill_slow(&mut x, &mut quiet, &clock).unwrap();
    b.fill_slow(&mut y, &mut quiet, &clock).unwrap();
    assert_ne!(x, y);
}

/// Two clones of one VM snapshot: the same state, and kernels that give both the same seed
/// bytes `S` at the reseed a restore triggers. Their keys still differ, since the reseed
/// mixes in what differs between them (the cycle counter and clocks, and the CPU's
/// generator where it has one). With `K ⊕ S` alone both clones would serve the same bytes.
#[test]
#[cfg_attr(
    miri,
    ignore = "Miri has no cycle counter, clock or CPU generator here"
)]
fn clones_given_the_same_seed_bytes_diverge() {
    let _epoch = steady_epoch();
    let clock = FakeClock(Cell::new(0));
    let mut parent = ThreadState::zeroed();
    parent
        .fill_slow(
            &mut [0u8; 8],
            &mut FakeEntropy::fixed([0x11; KEY_LEN], 0),
            &clock,
        )
        .unwrap();
    // The snapshot: two byte-for-byte copies of the state.
    let mut clones = [ThreadState::zeroed(), ThreadState::zeroed()];
    let mut outputs = Vec::new();
    for clone in clones.iter_mut() {
        clone.fke = FkeState::new(*parent.fke.key());
        clone.life.seeded = true;
        // The restore's reseed, with the same bytes from both kernels.
        clone
            .reseed(&mut FakeEntropy::fixed([0x22; KEY_LEN], 0), &clock)
            .unwrap();
        let mut out = [0u8; 64];
        clone
            .fill_slow(&mut out, &mut FakeEntropy::failing(), &clock)
            .unwrap();
        outputs.push((*clone.fke.key(), out));
    }
    assert_ne!(outputs[0].0, outputs[1].0, "the clones' keys");
    assert_ne!(outputs[0].1, outputs[1].1, "the clones' output");
}

#[test]
fn failed_reseed_keeps_key_and_buffer() {
    let _epoch = steady_epoch();
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::counter();
    let clock = FakeClock(Cell::new(0));
    read(&mut st, 16, &mut os, &clock);
    let key = *st.fke.key();
    let avail = st.fke.available();
    os.fail = true;
    assert!(st.reseed(&mut os, &clock).is_err());
    assert_eq!(*st.fke.key(), key);
    assert_eq!(st.fke.available(), avail);
    assert!(st.life.seeded);
}

#[cfg(all(target_os = "linux", not(miri)))]
fn next_32() -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    crate::try_fill(&mut out).ok()?;
    Some(out)
}

/// Whether this kernel honours `madvise` advice (`fork_protection()` is `WipeOnFork`),
/// so that the `wf` and `dd` page flags are promised. Where it is not (qemu-user accepts
/// and ignores the advice), prints which `claim` is skipped and why. A run that sets
/// `FKRNG_EXPECT_FORK_PROTECTION` (scripts/platforms.sh) fails when the protection
/// found is another.
#[cfg(all(target_os = "linux", not(miri)))]
pub(super) fn madvise_honoured(claim: &str) -> bool {
    // A state mapped through the test hook leaves the process-wide check undone: a read
    // on a fresh thread makes it.
    if crate::fork_protection().is_none() {
        std::thread::spawn(|| crate::fill(&mut [0u8; 1]))
            .join()
            .unwrap();
    }
    let found = crate::fork_protection().expect("known after a first read");
    if let Ok(expected) = std::env::var("FKRNG_EXPECT_FORK_PROTECTION") {
        assert_eq!(
            format!("{found:?}"),
            expected,
            "FKRNG_EXPECT_FORK_PROTECTION"
        );
    }
    let honoured = found == crate::ForkProtection::WipeOnFork;
    if !honoured {
        eprintln!(
            "skipped: {claim}: fork protection is {found:?}, so this kernel or emulator \
             did not honour MADV_WIPEONFORK and no page flag is promised"
        );
    }
    honoured
}

/// With wipe-on-fork switched off for this thread's state, only the atfork epoch keeps a
/// `fork()` child from replaying the parent; a raw `clone` (no atfork handler) shows
/// that the switch took effect.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn atfork_epoch_alone_reseeds_a_forked_child() {
    std::thread::spawn(|| {
        set_up_without_wipe_on_fork();
        crate::fill(&mut [0u8; 16]);
        let (start, _) = crate::test_hooks::memory::state_range().expect("state mapped");
        let flags = crate::os::pages::smaps_flags(start).expect("mapping listed in smaps");
        let flags: Vec<&str> = flags.split_whitespace().collect();
        assert!(
            !flags.contains(&"wf"),
            "hook left wipe-on-fork on: {flags:?}"
        );
        if madvise_honoured("dd flag of the hook's state pages") {
            assert!(flags.contains(&"dd"), "{flags:?}");
        }

        // Control: no wipe-on-fork and no atfork handler, so the child replays the
        // parent's next 32 bytes (the documented limit of the epoch alone).
        let replayed = in_child(true, next_32);
        assert_eq!(Some(replayed), next_32());

        // fork(): the prepare handler starts a new epoch in the parent before the fork
        // (and the child handler another in the child), so both sides reseed first.
        let epoch_before = fork::epoch();
        let child = in_child(false, next_32);
        assert!(
            fork::epoch() > epoch_before,
            "the prepare handler bumped the parent's epoch"
        );
        let mut parent = vec![0u8; 4096];
        for chunk in parent.chunks_mut(32) {
            crate::fill(chunk);
        }
        assert!(
            !parent.windows(32).any(|w| w == child),
            "the child replayed the parent's stream"
        );
        assert_ne!(child, [0u8; 32]);
    })
    .join()
    .unwrap();
}

/// A library that registered its own fork child handler before fkrng's first read has
/// it run first in the child; where that handler reads fkrng, with wipe-on-fork off,
/// it must not get the parent's next bytes (the prepare handler moved the epoch before
/// the fork). Needs a process in which fkrng has not registered its handlers yet, so
/// the test runs itself again in a new process.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn a_child_handler_registered_before_fkrng_gets_fresh_bytes() {
    let Some(text) =
        in_new_process("thread::tests::a_child_handler_registered_before_fkrng_gets_fresh_bytes")
    else {
        return child_handler_order_in_this_process();
    };
    assert!(
        text.contains("the earlier child handler read fresh bytes"),
        "{text}"
    );
}

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn child_handler_order_in_this_process() {
    use core::sync::atomic::AtomicU8;
    static READ_IN_CHILD: [AtomicU8; 32] = [const { AtomicU8::new(0) }; 32];
    extern "C" fn earlier_child_handler() {
        let mut out = [0u8; 32];
        if crate::try_fill(&mut out).is_ok() {
            for (slot, b) in READ_IN_CHILD.iter().zip(out) {
                slot.store(b, Ordering::Relaxed);
            }
        }
    }
    assert_eq!(
        crate::fork_protection(),
        None,
        "fkrng was set up before the handler"
    );
    // SAFETY: registers a handler that lives for the whole program.
    assert_eq!(
        unsafe { libc::pthread_atfork(None, None, Some(earlier_child_handler)) },
        0
    );
    set_up_without_wipe_on_fork();
    crate::fill(&mut [0u8; 16]);
    let child = in_child(false, || {
        Some(core::array::from_fn(|i| {
            READ_IN_CHILD[i].load(Ordering::Relaxed)
        }))
    });
    let parent_next = next_32().unwrap();
    assert_ne!(child, [0u8; 32], "the handler's read failed in the child");
    assert_ne!(
        child, parent_next,
        "the earlier child handler read the parent's next bytes"
    );
    println!("the earlier child handler read fresh bytes");
}

/// A library that registered both a prepare and a child handler before fkrng's first read,
/// each of which reads fkrng, with wipe-on-fork off (the epoch alone): its prepare handler
/// runs after fkrng's (POSIX runs prepare handlers in reverse order) and its child handler
/// before fkrng's. Neither read may reseed or serve the state the child inherits, or the
/// child's read would be the parent's next bytes: both take the one-off path while the
/// fork is under way.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn prepare_and_child_handlers_registered_before_fkrng_get_fresh_bytes() {
    let Some(text) = in_new_process(
        "thread::tests::prepare_and_child_handlers_registered_before_fkrng_get_fresh_bytes",
    ) else {
        return prepare_and_child_handlers_in_this_process();
    };
    assert!(
        text.contains("both earlier handlers read fresh bytes"),
        "{text}"
    );
}

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn prepare_and_child_handlers_in_this_process() {
    use core::sync::atomic::AtomicU8;
    static READ_IN_PREPARE: [AtomicU8; 32] = [const { AtomicU8::new(0) }; 32];
    static READ_IN_CHILD: [AtomicU8; 32] = [const { AtomicU8::new(0) }; 32];
    fn read_into(slots: &[AtomicU8; 32]) {
        let mut out = [0u8; 32];
        if crate::try_fill(&mut out).is_ok() {
            for (slot, b) in slots.iter().zip(out) {
                slot.store(b, Ordering::Relaxed);
            }
        }
    }
    extern "C" fn earlier_prepare_handler() {
        read_into(&READ_IN_PREPARE);
    }
    extern "C" fn earlier_child_handler() {
        read_into(&READ_IN_CHILD);
    }
    fn load(slots: &[AtomicU8; 32]) -> [u8; 32] {
        core::array::from_fn(|i| slots[i].load(Ordering::Relaxed))
    }
    assert_eq!(
        crate::fork_protection(),
        None,
        "fkrng was set up before the handlers"
    );
    // SAFETY: registers handlers that live for the whole program.
    assert_eq!(
        unsafe {
            libc::pthread_atfork(
                Some(earlier_prepare_handler),
                None,
                Some(earlier_child_handler),
            )
        },
        0
    );
    set_up_without_wipe_on_fork();
    crate::fill(&mut [0u8; 16]);
    let one_offs = crate::test_hooks::counters::one_off_reads_fork_under_way();
    let child = in_child(false, || Some(load(&READ_IN_CHILD)));
    let in_prepare = load(&READ_IN_PREPARE);
    let parent_next = next_32().unwrap();
    assert_eq!(
        crate::test_hooks::counters::one_off_reads_fork_under_way() - one_offs,
        1,
        "the prepare handler's read took the one-off path"
    );
    assert_ne!(child, [0u8; 32], "the child handler's read failed");
    assert_ne!(in_prepare, [0u8; 32], "the prepare handler's read failed");
    assert_ne!(
        child, parent_next,
        "the earlier child handler read the parent's next bytes"
    );
    assert_ne!(child, in_prepare);
    assert_ne!(in_prepare, parent_next);
    println!("both earlier handlers read fresh bytes");
}

/// When the fork handlers cannot be registered, a thread sets up no state and its read
/// fails; the next read tries again.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn no_state_is_set_up_without_fork_handlers() {
    std::thread::spawn(|| {
        let failed = set_up(|| Err(Error::fork_handler(libc::ENOMEM)), &STATES);
        assert_eq!(failed, Err(Error::fork_handler(libc::ENOMEM)));
        assert!(slot().is_null(), "the slot is left for a later try");
        assert!(OWNER.with(|o| {
            let pages = o.0.take();
            let none = pages.is_none();
            o.0.set(pages);
            none
        }));
        let mut out = [0u8; 16];
        try_fill(&mut out).unwrap();
        assert!(is_slot(slot()));
    })
    .join()
    .unwrap();
}

/// `crate::reseed` on a live thread: the bytes that would have come next (the rest of
/// the buffer, then a refill under the old key) are not what comes next.
#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn public_reseed_changes_the_stream() {
    std::thread::spawn(|| {
        crate::fill(&mut [0u8; 16]);
        let p = slot();
        // SAFETY: this thread's live slot (it made a read above).
        let (rest_of_buffer, key) =
            unsafe { enter(p, |st| (st.fke.buffer()[16..].to_vec(), *st.fke.key())) };
        let mut after_buffer = [0u8; 32];
        <crate::FkeRng as rand_core::SeedableRng>::from_seed(key).fill(&mut after_buffer);
        crate::reseed().unwrap();
        // SAFETY: as above.
        let available = unsafe { enter(p, |st| st.fke.available()) };
        assert_eq!(available, 0, "buffer discarded");
        let mut out = [0u8; 32];
        crate::fill(&mut out);
        assert_ne!(out[..], rest_of_buffer[..32]);
        assert_ne!(out, after_buffer);
    })
    .join()
    .unwrap();
}

#[test]
fn thread_slot_is_one_pointer() {
    assert_eq!(
        size_of::<super::ThreadSlot>(),
        size_of::<usize>(),
        "the thread-local slot holds the pointer alone (busy is a value of it)"
    );
}

#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn a_thread_state_takes_a_third_of_a_page_and_two_thread_locals() {
    std::thread::spawn(|| {
        assert_eq!(state_memory(), None, "no storage before the first read");
        crate::fill(&mut [0u8; 16]);
        let m = state_memory().expect("storage after a read");
        assert_eq!(m.state, 1152, "{m:?}");
        #[cfg(all(any(target_os = "linux", target_os = "android"), not(miri)))]
        let unit = crate::os::pages::page_size();
        #[cfg(any(not(any(target_os = "linux", target_os = "android")), miri))]
        let unit = 4096;
        assert_eq!(
            m.storage,
            unit / (unit / 1152),
            "a page's share per state: {m:?}"
        );
        // The slot pointer, and the owner's lease (the slot's address, its pool, and its
        // chunk and index as two 32-bit numbers).
        assert_eq!(m.thread_locals, 3 * size_of::<usize>() + 8, "{m:?}");
    })
    .join()
    .unwrap();
}

#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn empty_read_needs_no_seed_and_sets_up_nothing() {
    let _epoch = steady_epoch();
    // An unseeded state and an OS source that fails: nothing to produce, so no error
    // and no OS read.
    let mut st = ThreadState::zeroed();
    let mut os = FakeEntropy::failing();
    assert_eq!(
        st.fill_slow(&mut [], &mut os, &FakeClock(Cell::new(0))),
        Ok(())
    );
    assert!(!st.life.seeded);
    // A thread whose only read is empty maps no state.
    let slot_null = std::thread::spawn(|| {
        try_fill(&mut []).unwrap();
        slot().is_null()
    })
    .join()
    .unwrap();
    assert!(slot_null, "an empty first read set up a state");
}

/// What the thread's generator holds: its key, its 992-byte buffer and the count of
/// unserved bytes.
fn generator_now() -> ([u8; KEY_LEN], Vec<u8>, usize) {
    let p = slot();
    assert!(is_slot(p), "no read under way");
    // SAFETY: this thread's live slot (the caller made a read first).
    unsafe {
        enter(p, |st| {
            (*st.fke.key(), st.fke.buffer().to_vec(), st.fke.available())
        })
    }
}

/// One fixed-size read through [`crate::try_array`], checked against the generator: from
/// the buffer it returns exactly the next `N` bytes and zeroes them, leaving the rest
/// alone; across a refill it returns the rest of the old buffer, then the head of the
/// keystream of the key held before the read (computed here by a seeded [`crate::FkeRng`]
/// as the model), and leaves both served parts zeroed and the rest of the new buffer
/// equal to the model's next bytes.
fn check_fixed_size_read<const N: usize>() {
    let (key, before, avail) = generator_now();
    let at = crate::generator::BUFFER_LEN - avail;
    let got: [u8; N] = crate::try_array().unwrap();
    let (_, after, avail_after) = generator_now();
    if avail >= N {
        assert_eq!(got[..], before[at..at + N], "N = {N}: the next bytes");
        assert!(after[..at + N].iter().all(|&b| b == 0), "N = {N}: zeroed");
        assert_eq!(after[at + N..], before[at + N..], "N = {N}: rest untouched");
        assert_eq!(avail_after, avail - N);
    } else {
        let from_new = N - avail;
        assert_eq!(got[..avail], before[at..], "N = {N}: old buffer first");
        assert_eq!(avail_after, crate::generator::BUFFER_LEN - from_new);
        assert!(after[..from_new].iter().all(|&b| b == 0), "N = {N}: zeroed");
        let mut model = [0u8; crate::generator::BUFFER_LEN];
        <crate::FkeRng as rand_core::SeedableRng>::from_seed(key).fill(&mut model);
        assert_eq!(got[avail..], model[..from_new], "N = {N}: new keystream");
        assert_eq!(after[from_new..], model[from_new..], "N = {N}: new buffer");
    }
}

/// `u32`, `u64` and `array` take their bytes straight from the buffer: each value is the
/// next bytes of the stream, and a word served does not stay in the buffer (over 500
/// reads, so every size meets the end of a buffer more than once).
#[test]
#[cfg_attr(target_os = "wasi", ignore = "wasm32-wasip1 has no threads")]
fn fixed_size_reads_serve_the_next_bytes_and_zero_them() {
    let _epoch = steady_epoch();
    std::thread::spawn(|| {
        crate::fill(&mut [0u8; 1]);
        for _ in 0..100 {
            check_fixed_size_read::<4>();
            check_fixed_size_read::<8>();
            check_fixed_size_read::<12>();
            check_fixed_size_read::<32>();
            check_fixed_size_read::<1>();
        }
    })
    .join()
    .unwrap();
}

/// Threads of the pool test that hold states across its forks (and that its forked child
/// starts).
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
const HOLDERS: usize = 6;

/// The state pool across `fork()` and a raw `clone`: in a forked child only the forking
/// thread's slot stays claimed (the child handler frees the slots of the parent's other
/// threads, six of which are alive and holding states here), and the child's new threads
/// lease those slots, never the forking thread's, without a new chunk; a raw `clone` runs
/// no handler, so there every claim stays (those slots are left unused, never shared).
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn a_forked_childs_new_threads_take_the_slots_of_threads_it_lacks() {
    // qemu-user, which ignores wipe-on-fork, itself crashes when a child forked from a
    // multi-threaded process starts a thread: there the forked child starts none.
    let spawn_in_child = madvise_honoured("threads started in a forked child");
    let (forked, cloned) = with_holders(|| {
        crate::fill(&mut [0u8; 16]);
        let forked = in_child(
            false,
            if spawn_in_child {
                census_and_spawn
            } else {
                census
            },
        );
        let cloned = in_child(true, || {
            let (_, claimed) = STATES.census();
            let mut out = [0u8; 32];
            out[0] = claimed.min(255) as u8;
            crate::try_fill(&mut out[1..]).ok()?;
            Some(out)
        });
        (forked, cloned)
    });
    assert_eq!(forked[0], 1, "claims in the forked child");
    if spawn_in_child {
        assert_eq!(
            forked[1], 1,
            "a child thread leased the forking thread's slot"
        );
        assert_eq!(forked[2], 0, "the forked child mapped a chunk");
    }
    assert!(
        usize::from(cloned[0]) > HOLDERS,
        "claims in the cloned child: {}",
        cloned[0]
    );
}

/// A child forked while the forking thread's read is under way (by a signal handler: the
/// thread-local holds `BUSY`, not the slot) keeps that thread's claim alone, found through
/// its lease; the claims of the parent's six other holders are cleared.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn a_child_forked_mid_read_keeps_only_the_readers_claim() {
    let forked = with_holders(|| {
        crate::fill(&mut [0u8; 16]);
        let p = slot();
        assert!(is_slot(p));
        hooks::abandon_read_in_progress();
        let forked = std::panic::catch_unwind(|| in_child(false, census));
        set_slot(p);
        forked.unwrap_or_else(|e| std::panic::resume_unwind(e))
    });
    assert_eq!(forked[0], 1, "claims in the child forked mid-read");
}

/// Runs `f` while [`HOLDERS`] other threads hold states (each has read), then lets them
/// exit; they are released before `f`'s panic goes on, so that a failure ends the test.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn with_holders<R>(f: impl FnOnce() -> R) -> R {
    use std::sync::Barrier;
    let (read, release) = (Barrier::new(HOLDERS + 1), Barrier::new(HOLDERS + 1));
    std::thread::scope(|s| {
        for _ in 0..HOLDERS {
            s.spawn(|| {
                crate::fill(&mut [0u8; 16]);
                read.wait();
                release.wait();
            });
        }
        read.wait();
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        release.wait();
        out.unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// In a forked child: the pool's claims, in `out[0]`.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn census() -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    out[0] = STATES.census().1.min(255) as u8;
    Some(out)
}

/// In a forked child: the pool's claims (`out[0]`), then six new threads' reads; `out[1]`
/// is 1 when none of them leased the forking thread's slot, `out[2]` the chunks published.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn census_and_spawn() -> Option<[u8; 32]> {
    let forking = slot() as usize;
    let (_, claimed) = STATES.census();
    let chunks = crate::test_hooks::counters::chunks_published();
    let slots: Vec<usize> = (0..HOLDERS)
        .map(|_| {
            std::thread::spawn(|| {
                crate::fill(&mut [0u8; 16]);
                slot() as usize
            })
            .join()
            .unwrap()
        })
        .collect();
    let mut out = [0u8; 32];
    out[0] = claimed.min(255) as u8;
    out[1] = slots.iter().all(|&p| p != forking && p != 0) as u8;
    out[2] = (crate::test_hooks::counters::chunks_published() - chunks) as u8;
    Some(out)
}

/// How the signal handler of [`read_interrupted_by_fork`] makes its child: 1 by `fork()`,
/// 2 by a raw `clone` (no atfork handler runs).
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
static FORK_HOW: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
/// What the handler's fork returned: the child's id in the parent, 0 in the child.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
static FORKED: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(-1);
/// Whether the handler, in the child, reads 16 bytes itself before returning to the
/// interrupted read.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
static READ_IN_CHILD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// What that read in the child returned.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
static CHILD_HANDLER_READ: std::sync::Mutex<[u8; 16]> = std::sync::Mutex::new([0; 16]);

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
extern "C" fn fork_in_handler(_: libc::c_int) {
    use std::sync::atomic::Ordering::SeqCst;
    let pid = if FORK_HOW.load(SeqCst) == 1 {
        // SAFETY: `fork` is async-signal-safe; the child only finishes the interrupted
        // read, writes to a pipe and `_exit`s.
        i64::from(unsafe { libc::fork() })
    } else {
        // SAFETY: a raw `clone` with only `SIGCHLD` and no new stack: the child runs on a
        // copy of this stack, as after `fork`, and does what a `fork` child does above.
        i64::from(
            unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) } as libc::pid_t,
        )
    };
    FORKED.store(pid, SeqCst);
    if pid == 0 && READ_IN_CHILD.load(SeqCst) {
        // The child's only thread: no other holds the mutex.
        crate::fill(&mut *CHILD_HANDLER_READ.lock().unwrap());
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", fkrng_test_hooks))]
fkrng_test_support::aligned_handler! {
    /// [`fork_in_handler`] entered with the stack aligned (qemu-user misaligns it), so that
    /// the atfork handlers its `fork()` runs keep to the ABI's alignment.
    fn fork_in_handler_aligned => fork_in_handler
}
#[cfg(all(target_os = "linux", not(target_arch = "x86_64"), fkrng_test_hooks))]
use fork_in_handler as fork_in_handler_aligned;

#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn raise_fork_signal() {
    // SAFETY: raises a signal whose handler (installed by the test) is `fork_in_handler`.
    unsafe { libc::raise(libc::SIGUSR1) };
}

/// One 16-byte read (`fill`, or `array` when `fixed`) on this thread, interrupted at
/// `point` by a signal whose handler forks (`raw_clone`: by a raw `clone`) and, when
/// `read_in_child`, reads 16 bytes in the child before returning; the parent's and the
/// child's result of that one read, and the 16 bytes the state held for it, or `None` if
/// the child did not exit with status 0 after sending its result. A child whose result
/// equals its handler's own read sends zeros instead, which the test rejects.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
fn read_interrupted_by_fork(
    point: crate::probe::Point,
    raw_clone: bool,
    fixed: bool,
    read_in_child: bool,
) -> Option<([u8; 16], [u8; 16], [u8; 16])> {
    use std::sync::atomic::Ordering::SeqCst;
    crate::fill(&mut [0u8; 16]);
    let (rest, _, _) = crate::test_hooks::lifecycle::unreseeded_continuation().unwrap();
    assert!(rest.len() >= 16, "the next read is served from the buffer");
    let held: [u8; 16] = rest[..16].try_into().unwrap();
    if point == crate::probe::Point::AfterSeed {
        // The read must reseed to reach the point.
        crate::reseed_all();
    }
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    FORK_HOW.store(if raw_clone { 2 } else { 1 }, SeqCst);
    FORKED.store(-1, SeqCst);
    READ_IN_CHILD.store(read_in_child, SeqCst);
    crate::probe::hooks::arm(point, raise_fork_signal);
    let mut out = [0u8; 16];
    if fixed {
        out = crate::array::<16>();
    } else {
        crate::fill(&mut out);
    }
    let pid = FORKED.load(SeqCst);
    if pid == 0 {
        // The child: its result to the parent, then out. A result equal to the handler's
        // own read is sent as zeros (which the test rejects): one generator state gave
        // the same bytes twice.
        if read_in_child && out == *CHILD_HANDLER_READ.lock().unwrap() {
            out = [0; 16];
        }
        // SAFETY: writes 16 initialised bytes to the pipe, then ends the child at once.
        unsafe {
            libc::write(fds[1], out.as_ptr().cast(), 16);
            libc::_exit(0);
        }
    }
    assert!(pid > 0, "the handler did not run or its fork failed");
    // SAFETY: `fds[1]` is the write end, not used by the parent.
    unsafe { libc::close(fds[1]) };
    let mut child = [0u8; 16];
    // SAFETY: reads up to 16 bytes into `child`.
    let n = unsafe { libc::read(fds[0], child.as_mut_ptr().cast(), 16) };
    let mut status = 0;
    // SAFETY: waits for the child made above; `status` is writable; closes the read end.
    unsafe {
        libc::waitpid(pid as libc::pid_t, &mut status, 0);
        libc::close(fds[0]);
    }
    (n == 16 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0)
        .then_some((out, child, held))
}

/// A read interrupted by a signal handler that forks, by `fork()` or by a raw `clone`,
/// before or after its bytes are copied, or in its reseed once the seed is in the key:
/// parent and child both return fresh bytes of their own, never the bytes the state held
/// when the read began (which both processes copied), never the zeros a child's copy from
/// its wiped state makes, and never the all-zero key's keystream.
#[cfg(all(target_os = "linux", fkrng_test_hooks))]
#[test]
fn a_read_interrupted_by_a_fork_in_a_signal_handler_is_served_again() {
    use crate::probe::Point::{AfterCopy, AfterSeed, BeforeCopy};
    if in_new_process(
        "thread::tests::a_read_interrupted_by_a_fork_in_a_signal_handler_is_served_again",
    )
    .is_some()
    {
        return;
    }
    // SAFETY: `fork_in_handler` forks and reads, as a handler may; only this test raises SIGUSR1.
    unsafe { fkrng_test_support::signals::on_signal(libc::SIGUSR1, fork_in_handler_aligned, 0) };
    crate::fill(&mut [0u8; 16]);
    // A raw `clone` child is caught by its wiped pages: promised only where the kernel
    // honours wipe-on-fork.
    let raw_clone_too = madvise_honoured("reads interrupted by a raw clone");
    // (point, raw clone, array, the handler reads in the child)
    let mut cases = Vec::new();
    for read_in_child in [false, true] {
        cases.extend([
            (AfterCopy, false, false, read_in_child),
            (AfterCopy, false, true, read_in_child),
            (BeforeCopy, false, false, read_in_child),
        ]);
        if raw_clone_too {
            cases.extend([
                (AfterCopy, true, false, read_in_child),
                (AfterCopy, true, true, read_in_child),
                (BeforeCopy, true, false, read_in_child),
            ]);
        }
    }
    // A reseed (after `reseed_all`) interrupted once its seed is in the key.
    cases.push((AfterSeed, false, false, false));
    if raw_clone_too {
        cases.push((AfterSeed, true, false, false));
        cases.push((AfterSeed, true, true, false));
    }
    // The all-zero key's first bytes, which a child must never return.
    let zero_key: [u8; 16] = <crate::FkeRng as rand_core::SeedableRng>::from_seed([0; 32]).array();
    // Every case is run and checked; the failures are reported together.
    let mut failed = Vec::new();
    for (point, raw_clone, fixed, read_in_child) in cases {
        let case = format!(
            "{point:?}, raw clone {raw_clone}, array {fixed}, handler reads in child {read_in_child}"
        );
        let discarded = crate::test_hooks::counters::discarded_reads();
        let Some((parent, child, held)) =
            read_interrupted_by_fork(point, raw_clone, fixed, read_in_child)
        else {
            failed.push(format!("{case}: the child failed"));
            continue;
        };
        let mut check = |ok: bool, what: &str| {
            if !ok {
                failed.push(format!(
                    "{case}: {what} (parent {parent:?}, child {child:?})"
                ));
            }
        };
        check(child != [0u8; 16], "the child's read is zero");
        check(parent != [0u8; 16], "the parent's read is zero");
        check(parent != child, "parent and child read the same bytes");
        check(child != held, "the child returned the state's bytes");
        check(child != zero_key, "the child served the all-zero key");
        if !raw_clone {
            // `fork()` moved the parent's epoch too (its prepare handler).
            check(parent != held, "the parent returned the state's bytes");
            // After `reseed_all` the copy from the stale state is discarded first.
            let discards = if point == AfterSeed { 2 } else { 1 };
            check(
                crate::test_hooks::counters::discarded_reads() == discarded + discards,
                "the parent did not discard its read once (after a fork)",
            );
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}

impl ThreadState {
    pub(crate) fn zeroed() -> Box<Self> {
        Box::new(ThreadState {
            fke: FkeState::new([0; KEY_LEN]),
            life: crate::lifecycle::reseed::Lifecycle::default(),
        })
    }
}

/// Records a slot's release for the tests ([`crate::probe::hooks::released`]): what the
/// state held, then the slot wiped.
pub(super) fn record_release(lease: &Lease<ThreadState>) {
    // SAFETY: the slot holds an initialised `ThreadState`; the thread slot no longer
    // points to it, so no other reference exists.
    let st = unsafe { &*lease.as_ptr() };
    let before = (st.life.seeded, st.fke.key() != &[0; 32], st.fke.available());
    lease.wipe();
    let (start, end) = lease.range();
    crate::probe::hooks::released(start as *const u8, end - start, before);
}

/// `array::<N>()` and `try_array::<N>()` of every size, 4 and 8 (the x86-64 `asm!` block)
/// and past the buffer included, give the bytes the state held next.
#[cfg(all(
    target_os = "linux",
    any(
        all(target_endian = "little", target_pointer_width = "64"),
        fkrng_test_hooks
    )
))]
#[test]
fn arrays_of_every_size_serve_the_next_bytes() {
    use crate::test_hooks::lifecycle::unreseeded_continuation;
    fn check<const N: usize>(try_it: bool) {
        crate::fill(&mut [0u8; 1]);
        let (rest, _, _) = unreseeded_continuation().unwrap();
        let got: [u8; N] = if try_it {
            crate::try_array().unwrap()
        } else {
            crate::array()
        };
        let n = N.min(rest.len());
        assert_eq!(got[..n], rest[..n], "N = {N}");
        if N > rest.len() {
            assert!(
                got[n..].iter().any(|&b| b != 0),
                "N = {N}: keystream past the buffer"
            );
        }
    }
    for try_it in [false, true] {
        check::<0>(try_it);
        check::<1>(try_it);
        check::<4>(try_it);
        check::<8>(try_it);
        check::<12>(try_it);
        check::<992>(try_it);
        check::<1025>(try_it);
        check::<4096>(try_it);
    }
}
