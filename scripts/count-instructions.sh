#!/usr/bin/env bash
# Counts the instructions per call of the thread-local generator's integer paths through
# a held `fkrng::rng()` handle (benches/harness/int_calls.rs: `next_u32`, `next_u64`,
# `random_range(0..6)`, `random_range(0..1_000_000_007)`) and of `rand::rng()`'s, under
# `valgrind --tool=callgrind`, and fails when fkrng's fast path takes more than its limit.
#
# Per call: the difference between runs of 2N and N calls, divided by N, so start-up and the
# first read cancel out. "fast path" counts the instructions of the caller's loop and of
# rand's sampler where it is not inlined (`int_calls::run`, `rand::rng::RngExt::...`), and
# so leaves out refills and reseeds; "with refills" counts everything (valgrind has no
# AVX-512: fkrng's keystream runs the AVX2 kernel there).
# Usage: scripts/count-instructions.sh [N]   (1,000,000 by default; Linux, needs valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-1000000}
if ! command -v valgrind >/dev/null; then
    echo "count-instructions: valgrind is missing (Debian: apt-get install valgrind)" >&2
    exit 1
fi
cargo build --release --quiet --example int_calls
bin=target/release/examples/int_calls
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Limits on fkrng's fast path, instructions per call (the harness's loop included).
declare -A limit=([next_u32]=26 [next_u64]=25 [range_6]=33 [range_1e9]=38)

# Prints "TOTAL FAST": all instructions, and those of the functions on the fast path.
measure() {
    local out=$dir/cg.out
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" count "$1" "$2" "$3" >/dev/null 2>&1
    local total fast
    total=$(callgrind_annotate "$out" | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
    fast=$(callgrind_annotate --threshold=100 "$out" |
        grep -E ' [^ ]*:(int_calls::run|rand::rng::RngExt::)' |
        awk '{gsub(",", "", $1); s += $1} END {print s + 0}')
    echo "$total $fast"
}

status=0
for call in next_u32 next_u64 range_6 range_1e9; do
    line="count-instructions: $call:"
    for reader in fkrng rand; do
        read -r t1 s1 < <(measure "$call" "$reader" "$n")
        read -r t2 s2 < <(measure "$call" "$reader" $((2 * n)))
        all=$(awk -v a="$t1" -v b="$t2" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / n}')
        fast=$(awk -v a="$s1" -v b="$s2" -v n="$n" 'BEGIN {printf "%.2f", (b - a) / n}')
        line+=" $reader fast path $fast, with refills $all;"
        [[ $reader == fkrng ]] && fkrng_fast=$fast
    done
    echo "${line%;}"
    if awk -v f="$fkrng_fast" -v l="${limit[$call]}" 'BEGIN {exit !(f > l)}'; then
        echo "count-instructions: FAIL: fkrng $call takes $fkrng_fast instructions, at most ${limit[$call]}" >&2
        status=1
    fi
done
exit $status
