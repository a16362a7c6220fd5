#!/usr/bin/env bash
# The cost of following the VM generation counter: the `snapshot` group of
# benches/compare.rs, which needs the test hooks (`--cfg fkrng_test_hooks`, which it sets
# through `--config .cargo/test-hooks.toml`). A stand-in for the VMClock page on tmpfs
# takes the place of /dev/vmclock0.
#
# Usage: scripts/bench-snapshot.sh [--quick]   (--quick: a smoke run of seconds)
# BENCH_NICE=-19 (as root) runs it at that priority, as in scripts/bench.sh. The figures in
# docs/BENCHMARKS.md ("Following the VM generation counter") come from this group and from
# the fill group of the same commit and of its parent.
set -euo pipefail
cd "$(dirname "$0")/.."

args=()
[[ "${1:-}" == --quick ]] &&
    args=(--warm-up-time 0.01 --measurement-time 0.01 --sample-size 10)
if [[ -n "${BENCH_NICE:-}" ]]; then
    renice -n "$BENCH_NICE" -p $$ >/dev/null
    # With autogroup scheduling a nice value only counts inside the session (as in
    # scripts/bench.sh): set the session's priority too, and restore it at exit.
    if [[ -w /proc/$$/autogroup ]]; then
        old_group_nice=$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\).*/\1/p' /proc/$$/autogroup)
        echo "$BENCH_NICE" >/proc/$$/autogroup 2>/dev/null || true
    fi
fi

stand_in=$(mktemp "${TMPDIR:-/dev/shm}/fkrng-vmclock-bench.XXXXXX")
trap 'rm -f "$stand_in"; [[ -n "${old_group_nice:-}" ]] && echo "$old_group_nice" >/proc/$$/autogroup 2>/dev/null; true' EXIT
scripts/vmclock-stand-in.sh "$stand_in"

FKRNG_TEST_VMCLOCK_PATH=$stand_in FKRNG_TEST_VMCLOCK_MUST_MAP=1 \
    cargo bench --config .cargo/test-hooks.toml --bench compare -- "${args[@]}" 'snapshot'
