//! The fast paths interrupted after each of their instructions: with the trap flag set, the
//! CPU raises `SIGTRAP` after every instruction of a `u64()` read (the `asm!` block), of an
//! `array::<16>()` read or of a 16-byte `fill` (the Rust paths), and at one of them the
//! handler forks, makes a raw `clone` or reads.

use crate::test_hooks::process::in_new_process;
use std::sync::Mutex;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, AtomicU32, AtomicU64};

/// Traps taken during the stepped read.
static STEPS: AtomicU32 = AtomicU32::new(0);
/// The trap at which the handler acts (`u32::MAX`: none).
static ACT_AT: AtomicU32 = AtomicU32::new(u32::MAX);
/// What the handler does there: [`FORK`], [`RAW_CLONE`] or [`READ`].
static ACTION: AtomicU8 = AtomicU8::new(READ);
const FORK: u8 = 1;
const RAW_CLONE: u8 = 2;
const READ: u8 = 3;
/// What the acting handler's fork or clone returned (the child's id; 0 in the child).
static FORKED: AtomicI64 = AtomicI64::new(-1);
/// Whether the slot word held BUSY at the acting trap.
static SAW_BUSY: AtomicBool = AtomicBool::new(false);
/// What the acting handler's own read returned.
static HANDLER_READ: AtomicU64 = AtomicU64::new(0);
/// The traps at which the slot word held BUSY, recorded when the handler does not act.
static BUSY_TRAPS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

extern "C" fn on_trap(_: libc::c_int) {
    let step = STEPS.fetch_add(1, SeqCst);
    let busy = super::super::slot() == super::super::BUSY;
    let act_at = ACT_AT.load(SeqCst);
    if act_at == u32::MAX && busy {
        // The interrupted code never holds this mutex.
        BUSY_TRAPS.lock().unwrap().push(step);
    }
    if step != act_at {
        return;
    }
    SAW_BUSY.store(busy, SeqCst);
    match ACTION.load(SeqCst) {
        // SAFETY: `fork` is async-signal-safe; the child finishes the read, writes to a pipe
        // and `_exit`s.
        FORK => FORKED.store(i64::from(unsafe { libc::fork() }), SeqCst),
        // SAFETY: a raw `clone` with only `SIGCHLD` and no new stack: the child runs on a copy
        // of this stack, as after `fork`, with no atfork handler run.
        RAW_CLONE => FORKED.store(
            unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) },
            SeqCst,
        ),
        _ => HANDLER_READ.store(crate::u64(), SeqCst),
    }
}

/// How a stepped read reads: `u64()` (the `asm!` block), or the first 8 bytes of an
/// `array::<16>()` or of a 16-byte `fill` (the Rust paths).
#[derive(Clone, Copy, Debug)]
enum Reader {
    U64,
    Array16,
    Fill16,
}

fkrng_test_support::aligned_handler! {
    /// [`on_trap`] entered with the stack aligned to 16 bytes (qemu-user misaligns it), so
    /// that a `fork()` from the handler runs its atfork handlers on an aligned stack.
    fn on_trap_aligned => on_trap
}

/// One read by `reader` with the trap flag set around it. Never inlined: every call runs the
/// same instructions, so trap `n` is the same instruction in each.
#[inline(never)]
fn stepped_read(reader: Reader) -> u64 {
    STEPS.store(0, SeqCst);
    // SAFETY: sets the trap flag of RFLAGS through the stack; the SIGTRAP handler installed by
    // the test returns to each trapped instruction.
    unsafe { core::arch::asm!("pushfq", "or qword ptr [rsp], 0x100", "popfq") };
    let value = match reader {
        Reader::U64 => crate::u64(),
        Reader::Array16 => u64::from_le_bytes(crate::array::<16>()[..8].try_into().unwrap()),
        Reader::Fill16 => {
            let mut bytes = [0u8; 16];
            crate::fill(&mut bytes);
            u64::from_le_bytes(bytes[..8].try_into().unwrap())
        }
    };
    // SAFETY: clears the trap flag again.
    unsafe { core::arch::asm!("pushfq", "and qword ptr [rsp], -0x101", "popfq") };
    value
}

/// The first 8 bytes that the next read takes, with at least 16 left in the buffer.
fn next_held() -> u64 {
    loop {
        crate::fill(&mut [0u8; 16]);
        let (rest, _, _) = crate::test_hooks::lifecycle::unreseeded_continuation().unwrap();
        if rest.len() >= 16 {
            return u64::from_le_bytes(rest[..8].try_into().unwrap());
        }
    }
}

/// A stepped read during which the handler does `action` at trap `step`: the read's result,
/// the child's (for a fork or clone) or the handler's (for a read), and the bytes the state held
/// for the read; `None` when the read ended before that trap.
fn interrupted_at(step: u32, action: u8, reader: Reader) -> Option<(u64, u64, u64)> {
    let held = next_held();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    FORKED.store(-1, SeqCst);
    HANDLER_READ.store(0, SeqCst);
    ACTION.store(action, SeqCst);
    ACT_AT.store(step, SeqCst);
    let out = stepped_read(reader);
    let acted = STEPS.load(SeqCst) > step;
    ACT_AT.store(u32::MAX, SeqCst);
    let pid = FORKED.load(SeqCst);
    if pid == 0 {
        // SAFETY: writes 8 initialised bytes to the pipe, then ends the child at once.
        unsafe {
            libc::write(fds[1], (&raw const out).cast(), 8);
            libc::_exit(0);
        }
    }
    let mut theirs = HANDLER_READ.load(SeqCst);
    // SAFETY: closes the write end, reads the child's 8 bytes, waits for it, closes the read end.
    unsafe {
        libc::close(fds[1]);
        if pid > 0 {
            let n = libc::read(fds[0], (&raw mut theirs).cast(), 8);
            assert_eq!(
                n, 8,
                "{reader:?}, action {action}, trap {step}: the child ended without a result"
            );
            libc::waitpid(pid as libc::pid_t, core::ptr::null_mut(), 0);
        }
        libc::close(fds[0]);
    }
    assert!(!acted || action == READ || pid > 0, "trap {step}: no child");
    acted.then_some((out, theirs, held))
}

/// A fork (or raw `clone`) by a handler at any instruction boundary of the fast path either
/// comes before the read's epoch check, and then neither process returns the bytes the state
/// held (with a raw `clone`, the parent may: no epoch moved) and the two differ, or after it,
/// and then both return them, as after any read; the check lies after the copy, with BUSY
/// still in the slot word. A handler's read at any boundary gets bytes of its own.
#[test]
fn a_read_trapped_at_any_instruction_is_never_served_twice() {
    let name = "thread::word::tests::a_read_trapped_at_any_instruction_is_never_served_twice";
    if in_new_process(name).is_some() {
        return;
    }
    // SAFETY: `on_trap` (through `on_trap_aligned`) runs only inside the stepped read (only
    // the trap flag raises SIGTRAP) and does what a handler may there: atomics, fkrng's
    // reads, `fork`, a raw `clone`, and a mutex the stepped code never holds.
    unsafe { fkrng_test_support::signals::on_signal(libc::SIGTRAP, on_trap_aligned, 0) };
    // A child whose resumed read panics ends at once (its trap flag still set, unwinding would
    // take minutes), and the parent finds no result in the pipe.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if FORKED.load(SeqCst) == 0 {
            // SAFETY: ends the forked child at once; it shares nothing the parent waits on
            // but the pipe, which then reads as closed.
            unsafe { libc::_exit(101) };
        }
        default_hook(info)
    }));
    let mut actions = vec![FORK, READ];
    if super::super::tests::madvise_honoured("a raw clone at each trap") {
        actions.push(RAW_CLONE);
    }
    let mut failed = Vec::new();
    for reader in [Reader::U64, Reader::Array16, Reader::Fill16] {
        // The second of two reads: the first may take traps of its own (lazy binding).
        for _ in 0..2 {
            next_held();
            BUSY_TRAPS.lock().unwrap().clear();
            stepped_read(reader);
        }
        let busy = BUSY_TRAPS.lock().unwrap().clone();
        let traps = STEPS.load(SeqCst);
        assert!(busy.len() >= 10, "{traps} traps, BUSY at {busy:?}");
        for &action in &actions {
            // The first trap whose fork or clone came after the check.
            let mut after_check = None;
            let mut step = 0;
            while let Some((out, theirs, held)) = interrupted_at(step, action, reader) {
                let case = format!(
                    "{reader:?}, {traps} traps, BUSY at {busy:?}, action {action}, trap {step}: \
                     {out:#x}, {theirs:#x}, held {held:#x}"
                );
                if out == 0 || theirs == 0 || out == theirs && action == READ {
                    failed.push(format!("{case}: a zero or repeated result"));
                } else if action != READ && out == held && theirs == held {
                    after_check.get_or_insert((step, SAW_BUSY.load(SeqCst)));
                } else if action != READ
                    && (after_check.is_some()
                        || theirs == held
                        || out == theirs
                        || action == FORK && out == held)
                {
                    failed.push(format!("{case}: the child replays, or the read is undone"));
                }
                step += 1;
            }
            match after_check {
                None if action != READ => {
                    failed.push(format!("{reader:?}, action {action}: no check"))
                }
                Some((at, busy_there)) if !busy_there || at < busy[0] + 4 => failed.push(format!(
                    "{reader:?}, action {action}: the check at trap {at} is not between the copy \
                     and the slot's return"
                )),
                _ => {}
            }
            if step <= *busy.last().unwrap() {
                failed.push(format!(
                    "{reader:?}, action {action}: the read ended at trap {step}"
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{failed:#?}");
}
