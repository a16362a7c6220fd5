//! Backtracking resistance in memory: once fkrng has produced keystream, nothing in the
//! process's writable memory may let an attacker recompute output already handed out.
//!
//! - `refills_leave_no_old_key_behind` and `direct_fills_leave_no_old_key_behind`: a seeded
//!   `FkeRng` (running the keystream code the thread-local generator runs too) goes through
//!   refills or direct fills. Every key it used before its current one is searched for as 32
//!   contiguous bytes and as a *broadcast* of any of its eight words: eight equal
//!   little-endian words in a row at 4-byte alignment, which is what a vector register
//!   holding one key word in every lane leaves when it is spilled to a stack frame (eight
//!   such registers give the key back). Independently of byte order and layout, memory is
//!   also searched for *clusters*: four or more distinct native-endian 32-bit words, at
//!   4-byte alignment within 256 bytes, from one old key's eight words and the working
//!   states of its block function (see [`evidence::CLUSTER_WORDS`] for the false-positive rate).
//! - `signal_frames_leave_no_old_key_behind`: a signal storm during refills and direct
//!   fills; after each batch the dead stack below the reads, where the kernel puts signal
//!   frames, is searched for the batch's key and block-function words.
//! - `alternate_stack_frames_leave_no_old_key_behind`: a signal storm whose handler runs on
//!   an alternate signal stack (`SA_ONSTACK`), where the kernel writes its frames at the
//!   stack's top; after each refill the whole alternate stack is searched likewise.
//! - `reads_on_an_alternate_stack_keep_within_it`: a read in a handler on an alternate
//!   stack with little headroom writes nothing below the stack's base that its own frames
//!   do not need (painted bytes and a guard page below the stack).
//! - `a_first_read_in_a_handler_keeps_within_a_standard_alternate_stack`: a thread's first
//!   read made in such a handler (outside the contract: its set-up is not
//!   async-signal-safe) writes nothing below an alternate stack of `SIGSTKSZ` bytes at
//!   opt-level 2 and 3 (16 KiB at 1, `s` and `z`).
//! - `vdso_seed_leaves_no_copy_behind`: a seed from the vDSO's `getrandom`, as a new
//!   thread's first seed reads it; once the thread has wiped its copy and exited, no 8-byte
//!   piece of it remains in writable memory (the vDSO's frames and state included).
//! - `one_off_read_leaves_no_key_behind`: after a read served from fresh OS bytes (a
//!   thread-local destructor after the thread's state was released; the same path serves
//!   signal handlers that interrupt a read), no 32-byte window may be a ChaCha20 key whose
//!   keystream reproduces the bytes served. The exited thread's stack stays mapped (glibc
//!   caches thread stacks for reuse), so a seed copy left in a dead stack frame is found.
//!
//! Each test reads every writable mapping through `/proc/self/maps` and `/proc/self/mem`, one
//! test at a time (a scan's buffer holds copies of whatever it read, so concurrent scans would
//! see each other's search data).
//!
//! Every build profile: CI runs these tests in the default test profile, in release, with
//! fkrng and the `chacha20` crate at opt-level 0 (as a dependent's debug build compiles
//! them), and in release under emulated CPUs without AVX-512 or AVX2 (each keystream path).
//!
//! The test's parts: [`scanner`] reads the process's memory and keeps the test's own frames
//! out of it, [`evidence`] derives the keys searched for and collects what is found, and
//! [`scenarios`] drives the generator; the tests below name what each scenario asserts.

#![cfg(target_os = "linux")]

mod evidence;
mod scanner;
mod scenarios;

use evidence::BUFFER_LEN;
use scenarios::check_no_old_key_after;

/// Refills: a first read of 1 byte refills; each 992-byte read then takes the 991 bytes
/// left, refills and takes one more (never finding the buffer empty with 992 bytes or more
/// to go, which would be a direct fill); 200 reads of 1 to 61 bytes refill when they run the
/// buffer dry. 15 refills in all, all through the AVX-512 kernel on CPUs with AVX-512F, the
/// AVX2 kernel on CPUs with AVX2 only, and the `chacha20` crate elsewhere.
#[test]
fn refills_leave_no_old_key_behind() {
    check_no_old_key_after(&[
        vec![1],
        vec![BUFFER_LEN; 8],
        (0..200).map(|n| 1 + (n * 37) % 61).collect(),
    ]);
}

/// Direct fills: reads of 992 bytes or more that find the buffer empty, each one batch
/// written straight into the caller's memory. Beyond its first 1024 bytes (16 blocks), a
/// 992-byte read needs no keystream, a 5000-byte read 62 blocks and 40 bytes, a 3000-byte
/// read 31 blocks and 24 bytes, an 1100-byte read one block and 44 bytes, and a 1504-byte
/// read exactly 8 blocks (one eight-block pass and no tail, so no later scrub covers for
/// that pass's): whole passes written in place and tails of different lengths written
/// through a scratch area, by whichever kernel (or the `chacha20` crate) the CPU and the
/// length select.
#[test]
fn direct_fills_leave_no_old_key_behind() {
    check_no_old_key_after(&[
        vec![5000],
        vec![BUFFER_LEN],
        vec![3000],
        vec![1100],
        vec![1504],
    ]);
}

#[test]
fn one_off_read_leaves_no_key_behind() {
    scenarios::one_off_read();
}

/// A new thread's seed from the vDSO's `getrandom` (x86-64 Linux 6.11 and later):
/// once the thread has wiped its copy and exited, no 8-byte piece of the seed is left in
/// writable memory: not in the vDSO's frames on the exited thread's stack (which glibc
/// keeps for reuse), not in the vDSO's state page. Where the vDSO has no `getrandom` the
/// seed is the system call's, and the scan still runs.
#[test]
fn vdso_seed_leaves_no_copy_behind() {
    let (found, from_vdso) = scenarios::vdso_seed();
    println!("residue: vDSO seed: served by the vDSO: {from_vdso}; pieces found: {found:x?}");
    assert_eq!(
        from_vdso,
        fkrng_test_support::runner::vdso_getrandom_expected(),
        "the vDSO served the seed"
    );
    assert_eq!(found, Vec::<usize>::new(), "pieces of the seed in memory");
}

/// Signal frames: a POSIX timer sends `SIGUSR2` to the reading thread every 50 µs while
/// it alternates refills and direct fills; the handler (on the reading thread's own
/// stack, as most handlers run) only counts. The kernel saves the interrupted registers,
/// vector registers included, in a frame below the interrupted code's stack pointer. After
/// every batch the test reads the 16 KiB of dead stack below the reading code and searches
/// it for the key that batch ran under (now old): two or more of its eight words, or a
/// cluster of the words of its block function ([`evidence::CLUSTER_WORDS`] within
/// [`evidence::CLUSTER_SPAN`] bytes). Two given words of a key in 4096 random words occur
/// with probability under C(4096, 2) (8 / 2^32)^2 = 3e-11. Runs until at least
/// [`scenarios::STORM_MIN_INTERRUPTED`] batches were interrupted by a signal. Fails on
/// x86-64 and AArch64, where fkrng wipes signal frames below a keystream computation;
/// elsewhere (s390x) it reports what the frames leave.
#[test]
fn signal_frames_leave_no_old_key_behind() {
    scenarios::signal_storm();
}

/// Signal frames on an alternate signal stack: a POSIX timer sends `SIGPROF` to the reading
/// thread every 20 µs; its handler runs on an alternate stack the test installs
/// (`SA_ONSTACK`, as profilers' handlers do), where the kernel then saves the interrupted
/// registers, at the stack's top rather than below the interrupted code. After each of at
/// least [`scenarios::ALT_STORM_MIN_BATCHES`] refills (and until
/// [`scenarios::ALT_STORM_MIN_INTERRUPTED`] were interrupted; or until
/// [`scenarios::ALT_STORM_ENOUGH_INTERRUPTED`] were, sooner) the whole alternate stack is
/// searched for the refill's key and block-function words, as in
/// `signal_frames_leave_no_old_key_behind`. Fails on x86-64 and AArch64 if any are found
/// or if no frame on the alternate stack was wiped.
#[test]
fn alternate_stack_frames_leave_no_old_key_behind() {
    scenarios::alt_stack_storm();
}

/// A read in a handler on an alternate signal stack with little headroom never writes
/// below the stack's base beyond what its own frames need (see
/// [`scenarios::alt_stack_headroom`]).
#[test]
fn reads_on_an_alternate_stack_keep_within_it() {
    scenarios::alt_stack_headroom();
}

/// A thread's first read made in a handler on an alternate stack of the size a handler's
/// read is documented to fit (against the crate's contract) still keeps within it in
/// optimised builds (see [`scenarios::first_read_on_an_alternate_stack`]).
#[test]
fn a_first_read_in_a_handler_keeps_within_a_standard_alternate_stack() {
    scenarios::first_read_on_an_alternate_stack();
}
