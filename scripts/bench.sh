#!/usr/bin/env bash
# The full benchmark run behind docs/BENCHMARKS.md, the plot docs/img/throughput.png and
# README's headline numbers (docs/BENCHMARKS.md says how long a run takes; plus two release
# builds). Run it on a quiet machine: every table compares peers measured in the same run.
#
#   1. The default build (no --cfg chacha20_avx512): all groups of benches/compare.rs. The
#      cfg in .cargo/config.toml is replaced by empty CARGO_ENCODED_RUSTFLAGS, in its own
#      target directory so that neither build invalidates the other.
#   2. The build with --cfg chacha20_avx512 (as .cargo/config.toml has it), but without the
#      repository's test hooks (--cfg fkrng_test_hooks), as a dependent that opts in builds
#      it: the fill group with every peer again, in its own target directory. (With the
#      hooks compiled in, 4- and 16-byte fills measured about 0.5 ns slower on the
#      development host, though the read path's instructions are the same.)
#   3. scripts/count-syscalls.sh (steady-state getrandom calls and allocations).
#   4. Memory per thread: benches/harness/thread_memory.rs with 10,000 threads (1,000 with
#      --quick) that read once through fkrng, through rand::rng(), or not at all.
#   5. scripts/bench-report.py: the tables in docs/BENCHMARKS.md's marked regions, the targets
#      (thresholds in docs/bench-targets.toml), the plot and README's headline block.
#
# Usage: scripts/bench.sh [--quick]   (--quick: a smoke run of about two minutes, most of it the
# threads group and the builds; writes nothing to docs/)
# Extra criterion options can go in BENCH_ARGS, e.g. BENCH_ARGS="--measurement-time 3".
# On a shared machine, BENCH_NICE=-19 (as root) runs the whole thing at that priority so that
# other work disturbs the timings less; the report records the value. With autogroup
# scheduling (Linux's default for sessions) a process's nice value only counts inside its
# session, so the session's autogroup priority is set too, and restored at exit.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=no
[[ "${1:-}" == --quick ]] && quick=yes

crit_home="$PWD/target/criterion"
args=()
if [[ $quick == yes ]]; then
    crit_home="$PWD/target/criterion-quick"
    args=(--warm-up-time 0.01 --measurement-time 0.01 --sample-size 10)
fi
# shellcheck disable=SC2206
args+=(${BENCH_ARGS:-})
if [[ -n "${BENCH_NICE:-}" ]]; then
    renice -n "$BENCH_NICE" -p $$ >/dev/null
    if [[ -w /proc/$$/autogroup ]]; then
        old_group_nice=$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\).*/\1/p' /proc/$$/autogroup)
        trap 'echo "${old_group_nice:-0}" >/proc/$$/autogroup 2>/dev/null || true' EXIT
        echo "$BENCH_NICE" >/proc/$$/autogroup 2>/dev/null || true
    fi
fi
export CRITERION_HOME="$crit_home"
mkdir -p "$crit_home"
info="$crit_home/run-info.txt"
load() { cut -d' ' -f1-3 /proc/loadavg; }

{
    echo "date=$(date -u '+%Y-%m-%d %H:%M')"
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "load_before=$(load)"
    echo "nice=$(ps -o ni= -p $$ | tr -d ' ')"
} >"$info"

echo "== default build (no --cfg chacha20_avx512), all groups"
CARGO_ENCODED_RUSTFLAGS= CARGO_TARGET_DIR=target/no-avx512-cfg \
    cargo bench --bench compare -- '^default\.' "${args[@]}"
echo "load_after_default=$(load)" >>"$info"

echo "== built with --cfg chacha20_avx512 (no test hooks), fill group"
CARGO_ENCODED_RUSTFLAGS=$'--cfg\x1fchacha20_avx512' CARGO_TARGET_DIR=target/avx512-cfg \
    cargo bench --bench compare -- '^avx512\.fill/' "${args[@]}"
echo "load_after_avx512=$(load)" >>"$info"

echo "== steady-state system calls and allocations"
if [[ "$(uname -s)" == Linux ]]; then
    # Its report goes to stderr (this script's stdout may be discarded) through the inherited
    # descriptor: opening the stderr device by path would truncate a log file behind it.
    syscalls_report=$(scripts/count-syscalls.sh)
    printf '%s\n' "$syscalls_report" >&2
    counts=$(grep 'getrandom calls' <<<"$syscalls_report" | sed 's/^count-syscalls: //')
    echo "syscalls=1,000,000 reads of 16 bytes: $counts; no heap allocation after the first read" >>"$info"
fi

echo "== memory per thread"
if [[ "$(uname -s)" == Linux ]]; then
    memory_threads=10000
    [[ $quick == yes ]] && memory_threads=1000
    # With the test hooks (.cargo/test-hooks.toml), which give the sizes of a thread's state.
    CARGO_TARGET_DIR=target cargo build --release --config .cargo/test-hooks.toml \
        --example thread_memory
    for reader in none fkrng rand; do
        # A failure (a thread limit below the count, say) leaves the figures out of the
        # report, which then says they were not measured.
        if line=$(timeout 300 target/release/examples/thread_memory "$reader" "$memory_threads"); then
            echo "$line"
            echo "memory_$reader=$line" >>"$info"
        else
            echo "bench: thread_memory $reader $memory_threads failed; no memory figures" >&2
        fi
    done
fi

echo "== report"
# The plot needs matplotlib (Debian: python3-matplotlib; .ci/run installs it); without it
# bench-report.py writes the tables and says that the plot was not drawn.
py=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && [[ -x /usr/bin/python3 ]] &&
    /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    py=/usr/bin/python3
fi
if [[ $quick == yes ]]; then
    out=$(mktemp -d)
    "$py" scripts/bench-report.py --criterion "$crit_home" --out "$out/BENCHMARKS.md" \
        --plot "$out/throughput.png" --no-readme
    grep -c '^|' "$out/BENCHMARKS.md" >/dev/null
    rm -rf "$out"
else
    "$py" scripts/bench-report.py --criterion "$crit_home"
fi
