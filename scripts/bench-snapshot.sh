#!/usr/bin/env bash
# The cost of following the VM generation counter: the `snapshot` group of
# benches/compare.rs, which exists only in a build with --cfg fkrng_test_hooks (its own target
# directory, so that the cfg rebuilds no other build's dependencies). A stand-in for the
# VMClock page on tmpfs takes the place of /dev/vmclock0.
#
# Usage: scripts/bench-snapshot.sh [--quick]   (--quick: a smoke run of seconds)
# BENCH_NICE=-19 (as root) runs it at that priority, as in scripts/bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

args=()
[[ "${1:-}" == --quick ]] &&
    args=(--warm-up-time 0.01 --measurement-time 0.01 --sample-size 10)
[[ -n "${BENCH_NICE:-}" ]] && renice -n "$BENCH_NICE" -p $$ >/dev/null

stand_in=$(mktemp "${TMPDIR:-/dev/shm}/fkrng-vmclock-bench.XXXXXX")
trap 'rm -f "$stand_in"' EXIT
scripts/vmclock-stand-in.sh "$stand_in"

FKRNG_TEST_VMCLOCK_PATH=$stand_in FKRNG_TEST_VMCLOCK_MUST_MAP=1 \
    CARGO_TARGET_DIR=target/bench-test-hooks \
    RUSTFLAGS="--cfg chacha20_avx512 --cfg fkrng_test_hooks" \
    cargo bench --bench compare -- "${args[@]}" 'snapshot'
