//! Backtracking resistance in memory: once fkrng has produced keystream, nothing in the
//! process's writable memory may let an attacker recompute output already handed out.
//!
//! - `refills_leave_no_old_key_behind`, `direct_fills_leave_no_old_key_behind` and
//!   `thread_local_fills_leave_no_old_key_behind`: a seeded `FkeRng`, or the thread-local
//!   generator (`fkrng::fill`), goes through refills or direct fills. Every key it used
//!   before its current one is searched for as 32 contiguous bytes and as a *broadcast* of
//!   any of its eight words: eight equal
//!   little-endian words in a row at 4-byte alignment, which is what a vector register
//!   holding one key word in every lane leaves when it is spilled to a stack frame (eight
//!   such registers give the key back). Independently of byte order and layout, memory is
//!   also searched for *clusters*: four or more distinct native-endian 32-bit words, at
//!   4-byte alignment within 256 bytes, from one old key's eight words and the working
//!   states of its block function (see [`evidence::CLUSTER_WORDS`] for the false-positive rate).
//! - `signal_storm_batches_no_signal_reached_leave_no_old_key`: a signal storm during
//!   refills and direct fills; after each batch the dead stack below the reads, where the
//!   kernel puts signal frames, is searched for the batch's key and block-function words.
//!   Registers the kernel saves in a signal frame during a computation are beyond fkrng's
//!   reach (docs/SECURITY.md): the test prints how often interrupted batches leave
//!   something, and fails if a batch no signal reached does.
//! - `alternate_stack_storm_refills_no_signal_reached_leave_it_untouched`: a signal storm
//!   whose handler runs on an alternate signal stack (`SA_ONSTACK`), where the kernel writes
//!   its frames at the stack's top; after each refill the whole alternate stack is searched
//!   likewise. Prints the rate for interrupted refills; fails if a refill no signal reached
//!   wrote anything there.
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
//! Linux only, and only with the test hooks (`--cfg fkrng_test_hooks`: README's test
//! command); without them this test target has no tests.
//!
//! Each test reads every writable mapping through `/proc/self/maps` and `/proc/self/mem`, one
//! test at a time (a scan's buffer holds copies of whatever it read, so concurrent scans would
//! see each other's search data).
//!
//! Every build: CI runs these tests in the default test profile, in the configurations of
//! `scripts/residue-matrix.sh` (profiles, opt-levels from the profile and from RUSTFLAGS,
//! the native CPU target, fat LTO, nightly; the old-key tests also built as a dependent's
//! test, `.ci/residue_dependent`), and in release under emulated CPUs without AVX-512 or
//! AVX2 (each keystream path).
//!
//! The test's parts: [`scanner`] reads the process's memory and keeps the test's own frames
//! out of it, [`evidence`] derives the keys searched for and collects what is found, and
//! [`scenarios`] drives the generator; the tests below name what each scenario asserts.

#![cfg(all(target_os = "linux", fkrng_test_hooks))]

mod evidence;
mod scanner;
mod scenarios;

use evidence::BUFFER_LEN;
use scenarios::{Reader, check_no_old_key_after};

/// Refills: a first read of 1 byte refills; each 992-byte read then takes the 991 bytes
/// left, refills and takes one more (never finding the buffer empty with 992 bytes or more
/// to go, which would be a direct fill); 200 reads of 1 to 61 bytes refill when they run the
/// buffer dry. 15 refills in all, all through the AVX-512 kernel on CPUs with AVX-512F, the
/// AVX2 kernel on CPUs with AVX2 only, and the `chacha20` crate elsewhere.
#[test]
fn refills_leave_no_old_key_behind() {
    check_no_old_key_after(
        Reader::Seeded,
        &[
            vec![1],
            vec![BUFFER_LEN; 8],
            (0..200).map(|n| 1 + (n * 37) % 61).collect(),
        ],
    );
}

/// Direct fills: reads of 992 bytes or more that find the buffer empty, each one batch
/// written straight into the caller's memory. Beyond its first 1024 bytes (16 blocks), a
/// 992-byte read needs no keystream, a 5000-byte read 62 blocks and 40 bytes, a 3000-byte
/// read 31 blocks and 24 bytes, an 1100-byte read one block and 44 bytes, a 1504-byte read
/// exactly 8 blocks, and 1024- and 2048-byte reads 32 bytes past whole passes (the block that
/// rides along the refill in general-purpose registers on the AVX-512 and AVX2 paths):
/// whole passes written in place and the rest written through a scratch area, by whichever
/// kernel (or the `chacha20` crate) the CPU and the length select.
#[test]
fn direct_fills_leave_no_old_key_behind() {
    check_no_old_key_after(
        Reader::Seeded,
        &[
            vec![5000],
            vec![BUFFER_LEN],
            vec![3000],
            vec![1100],
            vec![1504],
            vec![1024],
            vec![2048],
        ],
    );
}

/// The thread-local generator's refills and direct fills (`fkrng::fill`, whose frames
/// above the keystream code are the thread state's rather than `FkeRng`'s), on a thread of
/// its own after its first 992 bytes: a 64-byte read that refills, three 992-byte reads
/// that refill once each, then the rest of the buffer and a 5000-byte direct fill, an
/// 1100-byte and a 2048-byte direct fill; 7 batches in all.
#[test]
fn thread_local_fills_leave_no_old_key_behind() {
    check_no_old_key_after(
        Reader::ThreadLocal,
        &[
            vec![64],
            vec![BUFFER_LEN; 3],
            vec![BUFFER_LEN - 64, 5000],
            vec![1100],
            vec![2048],
        ],
    );
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

/// Signal frames on the reading stack: a POSIX timer sends `SIGUSR2` to the reading thread
/// every 50 µs while it alternates refills and direct fills; the handler (on the reading
/// thread's own stack, as most handlers run) only counts. The kernel saves the interrupted
/// registers, vector registers included, in a frame below the interrupted code's stack
/// pointer, which fkrng's scrub does not reach (the documented limit). After every batch
/// the test reads the 16 KiB of dead stack below the reading code and searches it for the
/// key that batch ran under (now old): two or more of its eight words, a cluster of the
/// words of its block function ([`evidence::CLUSTER_WORDS`] within
/// [`evidence::CLUSTER_SPAN`] bytes), or [`evidence::MANY_STATE_WORDS`] of its working
/// states. Two given words of a key in 4096 random words occur with probability under
/// C(4096, 2) (8 / 2^32)^2 = 3e-11. Runs until at least
/// [`scenarios::STORM_MIN_INTERRUPTED`] batches were interrupted by a signal (the signal is
/// blocked during two batches of every four, so that batches no signal reached come in
/// every build), and prints how many batches of each kind left something. Fails if too few
/// batches were interrupted, or if a batch that no signal reached (nor the one before,
/// which computed its key) left anything.
#[test]
fn signal_storm_batches_no_signal_reached_leave_no_old_key() {
    let storm = scenarios::signal_storm();
    let all = [&storm.interrupted, &storm.after_interrupted, &storm.quiet];
    let sum = |f: fn(&evidence::StormFindings) -> usize| all.iter().map(|s| f(s)).sum::<usize>();
    println!(
        "residue: signal storm: {} of {} batches ({} interrupted by one of {} signals) left >= 2 \
         old key words below the reads ({} all 8), {} a cluster of its block function's words, \
         {} >= {} of its working-state words; batches with any of these: interrupted {} of {}, \
         after an interrupted one {} of {}, no signal {} of {}; deepest {} bytes below the reads",
        sum(|f| f.key_words),
        storm.batches(),
        storm.interrupted.batches,
        storm.signals,
        sum(|f| f.whole_keys),
        sum(|f| f.clusters),
        sum(|f| f.state_words),
        evidence::MANY_STATE_WORDS,
        storm.interrupted.residue,
        storm.interrupted.batches,
        storm.after_interrupted.residue,
        storm.after_interrupted.batches,
        storm.quiet.residue,
        storm.quiet.batches,
        all.iter().map(|f| f.deepest).max().unwrap_or(0),
    );
    assert!(
        storm.interrupted.batches >= scenarios::STORM_MIN_INTERRUPTED,
        "only {} of {} batches were interrupted by a signal",
        storm.interrupted.batches,
        storm.batches()
    );
    assert_eq!(
        storm.quiet.residue, 0,
        "old key material in the dead stack after batches no signal reached"
    );
}

/// Signal frames on an alternate signal stack: a POSIX timer sends `SIGPROF` to the reading
/// thread every 20 µs; its handler runs on an alternate stack the test installs
/// (`SA_ONSTACK`, as profilers' handlers do), where the kernel then saves the interrupted
/// registers, at the stack's top rather than below the interrupted code; fkrng does not
/// touch them there (the documented limit). After each of at least
/// [`scenarios::ALT_STORM_MIN_BATCHES`] refills (and until
/// [`scenarios::ALT_STORM_MIN_INTERRUPTED`] were interrupted; or until
/// [`scenarios::ALT_STORM_ENOUGH_INTERRUPTED`] were, sooner) the whole alternate stack is
/// searched for the refill's key and block-function words, as in
/// `signal_storm_batches_no_signal_reached_leave_no_old_key`, and prints how many refills
/// left something. Every fourth refill runs with the signal blocked. Fails if too few
/// refills were interrupted, or if a refill no signal reached wrote anything on the
/// alternate stack (fkrng never writes there).
#[test]
fn alternate_stack_storm_refills_no_signal_reached_leave_it_untouched() {
    let storm = scenarios::alt_stack_storm();
    let (hit, quiet) = (&storm.interrupted, &storm.quiet);
    let refills = hit.batches + quiet.batches;
    println!(
        "residue: alternate stack storm: {} of {refills} refills ({} interrupted by one of {} \
         signals taken on the alternate stack) left >= {} working-state words on the \
         alternate stack, {} >= 2 key words ({} all 8), {} a cluster of block-function \
         words; refills with any of these: interrupted {} of {}, no signal {} of {} ({} of \
         them left the alternate stack untouched); at most {} distinct words after one refill",
        hit.state_words + quiet.state_words,
        hit.batches,
        storm.signals,
        evidence::MANY_STATE_WORDS,
        hit.key_words + quiet.key_words,
        hit.whole_keys + quiet.whole_keys,
        hit.clusters + quiet.clusters,
        hit.residue,
        hit.batches,
        quiet.residue,
        quiet.batches,
        storm.quiet_untouched,
        hit.most_words.max(quiet.most_words),
    );
    assert!(
        hit.batches >= scenarios::ALT_STORM_MIN_INTERRUPTED,
        "only {} of {refills} refills were interrupted by a signal",
        hit.batches
    );
    assert_eq!(
        storm.quiet_untouched, quiet.batches,
        "refills no signal reached wrote on the alternate stack"
    );
    assert_eq!(
        quiet.residue, 0,
        "old key material after refills no signal reached"
    );
}

/// A read in a handler on an alternate signal stack with little headroom never writes
/// below the stack's base beyond what its own frames need (see
/// [`scenarios::alt_stack_headroom`]).
#[test]
fn reads_on_an_alternate_stack_keep_within_it() {
    let (reach, fits) = scenarios::alt_stack_headroom();
    println!(
        "residue: a refill in a handler on an alternate stack writes down to {reach} bytes \
         below its read with room to spare, and keeps within the stack down to {fits} bytes of \
         headroom"
    );
}

/// A thread's first read made in a handler on an alternate stack of the size a handler's
/// read is documented to fit (against the crate's contract) still keeps within it in
/// optimised builds (see [`scenarios::first_read_on_an_alternate_stack`]).
#[test]
fn a_first_read_in_a_handler_keeps_within_a_standard_alternate_stack() {
    scenarios::first_read_on_an_alternate_stack();
}
