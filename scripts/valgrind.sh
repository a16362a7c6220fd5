#!/usr/bin/env bash
# Runs the test suite, an example that exercises every entry point from many threads and a
# fork child (benches/harness/memcheck.rs), and the `fkrng` tool under valgrind memcheck. Any
# memcheck error (invalid read or write, use of uninitialised memory, invalid free, a
# definitely lost block) fails the run: `--error-exitcode=1`. Then a C program of 40 threads
# that read and exit (ffi/tests/c/threads_test.c) under helgrind and DRD with
# scripts/valgrind.supp: any report fails the run, and a deliberate race must be reported.
#
# Usage: scripts/valgrind.sh [--short | --full]
#   --short (default, CI): every test except the random-case property tests of
#           src/generator/differential.rs (they run natively in `cargo test`, and are
#           safe code over the same generator paths that the other tests reach).
#   --full: every test.
#
# Notes on valgrind (3.19 on Debian 12):
# - the binaries it runs are debug builds (test harnesses and the tool), which take the
#   one-block plain-Rust keystream code (`target/debug/fkrng --version` prints
#   `keystream: small-stack`); the keystream unit tests also call fkrng's AVX2 kernel and
#   the chacha20 crate directly. Valgrind reports its own CPUID, with AVX2 but without
#   AVX-512, so the AVX-512 kernel tests say "not available" and the crate takes its AVX2
#   backend. The optimised kernel paths run natively (the release residue run and
#   scripts/platforms.sh);
# - `madvise(MADV_WIPEONFORK)` and `MADV_DONTDUMP` pass through to the kernel, so the
#   wipe-on-fork tests and the fork in the example run as they do natively.
# - "possibly lost" and "still reachable" blocks are the test harness's and std's
#   per-thread data and are not counted; definitely lost blocks are, except glibc's record
#   of a thread-local destructor registered in a key destructor (scripts/valgrind.supp).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:---short}
case "$mode" in
--short) skip=(--skip fke_rng_matches_the_model) ;;
--full) skip=() ;;
esac
# The atfork-epoch unit test makes a child with a raw clone(2) as its control case, which
# valgrind does not support (see fork-* below); it runs natively in `cargo test`.
skip+=(--skip atfork_epoch_alone_reseeds_a_forked_child)
skip+=(--skip a_forked_childs_new_threads_take_the_slots_of_threads_it_lacks)
# The keystream depth unit test reads a joined thread's painted stack, which valgrind marks
# inaccessible once the thread is gone (and valgrind's stack frames are not the native
# ones); it runs natively in `cargo test`.
skip+=(--skip scrub_covers_the_deepest_keystream_frame)
# The assembly kernels' no-stack test paints the stack below the stack pointer and reads it
# back, which memcheck reports as invalid accesses; the errors then count in every child the
# process forks later. It runs natively in `cargo test`.
skip+=(--skip assembly_kernels_write_no_stack)
# The registration and mid-read fork unit tests fork while other threads of the parent hold
# heap blocks; those threads do not exist in the child, whose exit memcheck then reports as
# leaking them. They run natively in `cargo test`.
skip+=(--skip a_child_forked_during_registration_does_not_wait_for_it)
skip+=(--skip a_child_forked_mid_read_keeps_only_the_readers_claim)
# The VMClock torn-write test races a writer thread against readers; valgrind runs one
# thread at a time, which turns the race into minutes. It runs natively in `cargo test`.
skip+=(--skip torn_writes_are_never_read)
# The pool's close test counts the page faults of one call, and valgrind's own memory work
# adds to the thread's count. It runs natively in `cargo test`.
skip+=(--skip close_reads_no_entry_past_the_first_never_published)
case "$mode" in
--short | --full) ;;
*)
    echo "usage: $0 [--short | --full]" >&2
    exit 2
    ;;
esac

if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind.sh: valgrind is missing (Debian: apt-get install valgrind)" >&2
    exit 1
fi
valgrind --version

VG=(valgrind -q --error-exitcode=1 --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --track-origins=yes --suppressions=scripts/valgrind.supp)

echo "== building test binaries, the example and the tool"
# README's test build (with the test hooks), and the example and the tool from the same build.
# Test harnesses are the executables under target/debug/deps (the tool itself is not).
hooks=(--config .cargo/test-hooks.toml)
mapfile -t tests < <(cargo test --workspace --all-features "${hooks[@]}" --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\/deps\/[^"]*\)".*/\1/p')
cargo build --workspace --all-features "${hooks[@]}" --quiet --example memcheck --bin fkrng --lib
[[ ${#tests[@]} -gt 0 ]] || { echo "no test binaries found" >&2; exit 1; }

for t in "${tests[@]}"; do
    case "$(basename "$t")" in
    signal-*)
        # The timer-signal storm test: under valgrind 3.19 the process is killed by
        # SIGALRM (exit 142) instead of running the test's handler, so this test runs
        # natively only (in `cargo test`).
        echo "== valgrind $(basename "$t"): skipped (timer signals under valgrind)"
        continue
        ;;
    fork-*)
        # Makes children with raw clone(2) system calls, whose flags valgrind does not
        # support (the child exits with status 1 before the test's code runs); runs
        # natively in `cargo test`. benches/harness/memcheck.rs covers a fork under valgrind.
        echo "== valgrind $(basename "$t"): skipped (raw clone under valgrind)"
        continue
        ;;
    residue-*)
        # Reads the whole process's memory through /proc/self/mem (valgrind's own shadow
        # memory included: hundreds of MiB, hours under memcheck) and measures what signal
        # frames leave, which valgrind lays out itself; runs natively in `cargo test` and in
        # CI's release and unoptimised residue runs.
        echo "== valgrind $(basename "$t"): skipped (memory scans, signal storm)"
        continue
        ;;
    stack_use-*)
        # Measures stack use on painted stacks; under valgrind the client's stacks and
        # signal frames are valgrind's own, so the figures would say nothing about fkrng.
        echo "== valgrind $(basename "$t"): skipped (stack measurement)"
        continue
        ;;
    seed_source-*)
        # Installs seccomp filters and closes every descriptor above stderr, valgrind's
        # own among them, and its remount call passes NULL strings memcheck flags; the
        # seed-source code it reaches (system call, checked device) runs under valgrind in
        # every other test. Runs natively in `cargo test`.
        echo "== valgrind $(basename "$t"): skipped (seccomp filters, closes valgrind's descriptors)"
        continue
        ;;
    track_caller-*)
        # Installs a seccomp filter, which valgrind does not support (an unhandled system
        # call); the panic locations it checks do not depend on memory. Runs natively in
        # `cargo test`.
        echo "== valgrind $(basename "$t"): skipped (seccomp filters)"
        continue
        ;;
    sandbox-*)
        # Installs a seccomp filter after the first read, which valgrind's own system calls
        # then break (SIGSYS). Runs natively in `cargo test`.
        echo "== valgrind $(basename "$t"): skipped (seccomp filters)"
        continue
        ;;
    rustls-*)
        # ring's AES-GCM assembly trips memcheck's uninitialised-value check inside ring
        # (ring::bb::verify_slices_are_equal), not in fkrng; runs natively in `cargo test`.
        echo "== valgrind $(basename "$t"): skipped (ring's assembly under memcheck)"
        continue
        ;;
    esac
    echo "== valgrind $(basename "$t") ${skip[*]:-}"
    # One test at a time: a test that forks then has no other test's thread (with its heap
    # blocks) in the parent, which memcheck would report as leaked at the child's exit.
    "${VG[@]}" "$t" -q --test-threads=1 "${skip[@]}" 2>&1 | grep -vE '^$|^running [0-9]+ tests?$|^\.+$'
done

echo "== valgrind the memcheck harness (benches/harness/memcheck.rs)"
"${VG[@]}" target/debug/examples/memcheck

echo "== helgrind and DRD: two waves of 20 threads, 2,000 reads each (ffi/tests/c/threads_test.c)"
# With the suppressions fkrng ships, nothing is reported; a race of the program's own, and one
# on a buffer that two threads have fkrng fill at once, still are (exit 1, the racing frames).
command -v cc >/dev/null || { echo "valgrind.sh: cc is missing (Debian: apt-get install gcc)" >&2; exit 1; }
# Both the debug build and an optimised one (which inlines the atomic operations into fkrng's
# own functions, so the suppressions' frames differ).
cargo build --release -p fkrng-ffi --lib --quiet
for profile in debug release; do
threads_test=target/$profile/threads_test
cc -O2 -g -Wall -Wextra -Werror -Iffi/include ffi/tests/c/threads_test.c target/$profile/libfkrng_ffi.a \
    -lpthread -ldl -lm -o "$threads_test"
for tool in helgrind drd; do
    checker=(valgrind --tool=$tool -q --error-exitcode=1 --num-callers=40 --suppressions=scripts/valgrind.supp)
    "${checker[@]}" "$threads_test" 20 2000
    for race in race buffer-race; do
        rc=0
        "${checker[@]}" "$threads_test" 2 10 $race >/dev/null 2>"$threads_test.$tool.$race.log" || rc=$?
        [[ $rc == 1 ]] && grep -q 'racer (threads_test.c' "$threads_test.$tool.$race.log" ||
            { cat "$threads_test.$tool.$race.log"; echo "valgrind.sh: $tool missed the $race (exit $rc, $profile)" >&2; exit 1; }
    done
    echo "$tool ($profile): nothing reported from fkrng; the program's own race and a race on a filled buffer reported"
done
done

echo "== valgrind fkrng (hex, base64, raw, closed pipe, bad arguments)"
"${VG[@]}" target/debug/fkrng --hex 32
"${VG[@]}" target/debug/fkrng --base64 1KiB >/dev/null
"${VG[@]}" target/debug/fkrng --raw 1MiB >/dev/null
"${VG[@]}" target/debug/fkrng --raw | head -c 100000 >/dev/null
rc=0
"${VG[@]}" target/debug/fkrng --hex 1.5 2>/dev/null || rc=$?
[[ $rc == 2 ]] || { echo "bad count: exit $rc, expected 2" >&2; exit 1; }

echo "== valgrind $mode: no memcheck errors, no helgrind or DRD reports"
