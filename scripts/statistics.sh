#!/usr/bin/env bash
# Statistical batteries over the raw output of the `fkrng` tool: `ent` and `dieharder`.
#
# Usage: scripts/statistics.sh [--short | --full]
#
#   --short (default, run by CI, about a minute):
#       ent on 64 MiB, and a dieharder selection (birthday spacings, OPERM5, 32x32 and 6x8
#       binary rank, count-the-1s stream, runs, craps, STS monobit and runs, byte
#       distribution), each reading the tool's raw output from stdin (`dieharder -g 200`).
#   --full (about an hour on two cores):
#       ent on 1 GiB and the whole battery `dieharder -a -g 200`; every WEAK or FAILED line
#       is rerun on fresh streams (see below) and the reruns are printed too.
#
# Every run of `fkrng --raw` seeds itself from the OS, so each test (and each rerun) sees a
# stream under a fresh, independent key.
#
# Verdicts. dieharder calls a p-value WEAK outside [0.005, 0.995] and FAILED below 1e-6
# (or above 1 - 1e-6). The same thresholds are applied to ent's chi-square p-value and to
# the z-scores of ent's byte mean and serial correlation (z beyond 2.81 is WEAK, beyond
# 4.89 FAILED, two-sided).
#
# Policy. A FAILED verdict fails the run at once: a correct generator produces one about
# once in a million tests. A WEAK verdict happens by chance in 1% of tests, so with dozens
# of tests per run one is expected now and then; a WEAK test is rerun once on a fresh
# stream and passes only if the rerun is PASSED (two WEAKs in a row by chance: 1 in 10^4
# per test). In --full mode each WEAK or FAILED line is rerun three times (two fresh
# streams at the default sample count, one with 5 times the p-samples); it counts as a
# failure only if a rerun fails too. The script exits non-zero on a failure in either mode.
#
# Output lines of the form `RESULT|source|test|ntup|p-value|verdict` summarise every
# verdict, for the report in docs/STATISTICS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:---short}
case "$mode" in
--short | --full) ;;
*)
    echo "usage: $0 [--short | --full]" >&2
    exit 2
    ;;
esac

# ent and dieharder (Debian packages of those names; .ci/run installs them).
for tool in ent dieharder; do
    command -v "$tool" >/dev/null 2>&1 ||
        { echo "statistics.sh: $tool is missing (Debian: apt-get install $tool)" >&2; exit 1; }
done

echo "== building the fkrng tool (release, package fkrng-cli)"
cargo build --release -p fkrng-cli --quiet
BIN=target/release/fkrng
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

failures=0

# verdict P: dieharder's thresholds on a p-value in [0, 1].
verdict() {
    awk -v p="$1" 'BEGIN {
        if (p < 0.000001 || p > 0.999999) print "FAILED";
        else if (p < 0.005 || p > 0.995) print "WEAK";
        else print "PASSED" }'
}

# zverdict Z: the same thresholds on a two-sided z-score.
zverdict() {
    awk -v z="$1" 'BEGIN { if (z < 0) z = -z;
        if (z > 4.89) print "FAILED"; else if (z > 2.81) print "WEAK"; else print "PASSED" }'
}

# ent_once BYTES: runs ent on BYTES of fresh output; prints its report and RESULT lines;
# returns 1 on FAILED, 2 on WEAK (the worst verdict).
ent_once() {
    local count=$1 out="$TMP/ent.txt"
    "$BIN" --raw "$count" | ent >"$out"
    sed 's/^/    /' "$out"
    local n entropy chi pct mean serial
    entropy=$(sed -n 's/^Entropy = \([0-9.]*\) bits per byte.*/\1/p' "$out")
    chi=$(sed -n 's/^Chi square distribution for [0-9]* samples is \([0-9.]*\),.*/\1/p' "$out")
    pct=$(sed -n 's/^would exceed this value \(.*\) percent of the times.*/\1/p' "$out")
    mean=$(sed -n 's/^Arithmetic mean value of data bytes is \([0-9.]*\) .*/\1/p' "$out")
    serial=$(sed -n 's/^Serial correlation coefficient is \(-\?[0-9.]*\) .*/\1/p' "$out")
    n=$(sed -n 's/^Chi square distribution for \([0-9]*\) samples.*/\1/p' "$out")
    local p chi_v mean_z mean_v serial_z serial_v
    case "$pct" in
    "less than"*) p=0 ;;
    "more than"*) p=1 ;;
    *) p=$(awk -v x="$pct" 'BEGIN { printf "%.4f", x / 100 }') ;;
    esac
    chi_v=$(verdict "$p")
    # A uniform byte has mean 127.5 and standard deviation sqrt((256^2 - 1) / 12).
    mean_z=$(awk -v m="$mean" -v n="$n" 'BEGIN { printf "%.3f", (m - 127.5) * sqrt(n) / sqrt((65536 - 1) / 12) }')
    mean_v=$(zverdict "$mean_z")
    # The serial correlation of n independent bytes is about normal with sd 1/sqrt(n).
    serial_z=$(awk -v r="$serial" -v n="$n" 'BEGIN { printf "%.3f", r * sqrt(n) }')
    serial_v=$(zverdict "$serial_z")
    echo "    entropy $entropy bits/byte; chi-square $chi (p = $p, $chi_v);" \
        "mean z = $mean_z ($mean_v); serial correlation z = $serial_z ($serial_v)"
    echo "RESULT|ent $count|entropy bits/byte|0|$entropy|INFO"
    echo "RESULT|ent $count|chi-square $chi|0|$p|$chi_v"
    echo "RESULT|ent $count|mean $mean (z = $mean_z)|0|-|$mean_v"
    echo "RESULT|ent $count|serial correlation $serial (z = $serial_z)|0|-|$serial_v"
    if [[ "$chi_v$mean_v$serial_v" == *FAILED* ]]; then return 1; fi
    if [[ "$chi_v$mean_v$serial_v" == *WEAK* ]]; then return 2; fi
    return 0
}

# ent_check BYTES: ent with the rerun policy; counts a failure.
ent_check() {
    local rc=0
    echo "== ent on $1 of fkrng --raw"
    ent_once "$1" || rc=$?
    if [[ $rc == 2 ]]; then
        echo "== ent: WEAK, rerunning once on a fresh stream"
        rc=0
        ent_once "$1" || rc=$?
    fi
    if [[ $rc != 0 ]]; then
        echo "ent: FAILED"
        failures=$((failures + 1))
    fi
}

# dh ARGS...: runs dieharder on fresh output; prints its result lines and, for each,
# `DH|test|ntup|k|psamples|p|verdict` on stdout, where k counts the lines with the same test
# and ntup (some tests report two p-values per ntup).
dh() {
    local out="$TMP/dh.txt"
    "$BIN" --raw | dieharder -g 200 "$@" >"$out"
    grep -E '\|' "$out" | grep -vE '^ *(test_name|rng_name)' | sed 's/^/    /' >&2 || true
    awk -F'|' 'NF >= 6 && $1 !~ /test_name|rng_name/ {
        gsub(/ /, "", $1); gsub(/ /, "", $2); gsub(/ /, "", $4); gsub(/ /, "", $5);
        gsub(/ /, "", $6);
        if ($5 ~ /^[0-9.e+-]+$/) print "DH|" $1 "|" $2 "|" ++k[$1 "|" $2] "|" $4 "|" $5 "|" $6 }' "$out"
}

# dh_rerun ID NTUP K TEST [EXTRA...]: reruns dieharder test ID on a fresh stream and
# prints the K-th verdict line of TEST at NTUP.
dh_rerun() {
    local id=$1 ntup=$2 k=$3 test=$4
    shift 4
    local args=(-d "$id")
    [[ $ntup != 0 ]] && args+=(-n "$ntup")
    dh "${args[@]}" "$@" | awk -F'|' -v t="$test" -v n="$ntup" -v k="$k" '$2 == t && $3 == n && $4 == k' | head -n 1
}

# dh_judge RESULT_LINES REPEATS: applies the policy to `DH|...` lines; counts failures.
dh_judge() {
    local lines=$1 repeats=$2
    local tag test ntup k ps p v id
    while IFS='|' read -r tag test ntup k ps p v; do
        [[ $tag == DH ]] || continue
        echo "RESULT|dieharder|$test|$ntup|$p|$v"
        [[ $v == PASSED ]] && continue
        if [[ $v == FAILED && $repeats == 1 ]]; then
            echo "dieharder: $test (ntup $ntup) FAILED"
            failures=$((failures + 1))
            continue
        fi
        id=$(test_id "$test")
        local bad=0 r
        for ((r = 1; r <= repeats; r++)); do
            local extra=()
            if [[ $repeats -gt 1 && $r == "$repeats" ]]; then extra=(-p "$((5 * ps))"); fi
            local line
            echo "== rerun $r of $test (ntup $ntup, -d $id ${extra[*]:-})" >&2
            line=$(dh_rerun "$id" "$ntup" "$k" "$test" "${extra[@]}")
            IFS='|' read -r _ _ _ _ _ rp rv <<<"$line"
            echo "RESULT|dieharder rerun $r ${extra[*]:-}|$test|$ntup|${rp:-?}|${rv:-MISSING}"
            [[ ${rv:-} == PASSED ]] || bad=1
        done
        if [[ $bad == 1 ]]; then
            echo "dieharder: $test (ntup $ntup) not PASSED on rerun: counted as a failure"
            failures=$((failures + 1))
        fi
    done <<<"$lines"
}

# test_id NAME: dieharder's -d number for a test name.
test_id() {
    case "$1" in
    diehard_birthdays) echo 0 ;; diehard_operm5) echo 1 ;; diehard_rank_32x32) echo 2 ;;
    diehard_rank_6x8) echo 3 ;; diehard_bitstream) echo 4 ;; diehard_opso) echo 5 ;;
    diehard_oqso) echo 6 ;; diehard_dna) echo 7 ;; diehard_count_1s_str) echo 8 ;;
    diehard_count_1s_byt) echo 9 ;; diehard_parking_lot) echo 10 ;;
    diehard_2dsphere) echo 11 ;; diehard_3dsphere) echo 12 ;; diehard_squeeze) echo 13 ;;
    diehard_sums) echo 14 ;; diehard_runs) echo 15 ;; diehard_craps) echo 16 ;;
    marsaglia_tsang_gcd) echo 17 ;; sts_monobit) echo 100 ;; sts_runs) echo 101 ;;
    sts_serial) echo 102 ;; rgb_bitdist) echo 200 ;; rgb_minimum_distance) echo 201 ;;
    rgb_permutations) echo 202 ;; rgb_lagged_sum) echo 203 ;; rgb_kstest_test) echo 204 ;;
    dab_bytedistrib) echo 205 ;; dab_dct) echo 206 ;; dab_filltree) echo 207 ;;
    dab_filltree2) echo 208 ;; dab_monobit2) echo 209 ;;
    *) echo "unknown dieharder test $1" >&2; return 1 ;;
    esac
}

if [[ $mode == --short ]]; then
    ent_check 64MiB
    for id in 0 1 2 3 8 15 16 100 101 205; do
        echo "== dieharder -d $id"
        lines=$(dh -d "$id")
        dh_judge "$lines" 1
    done
else
    ent_check 1GiB
    echo "== dieharder -a (the whole battery)"
    lines=$(dh -a)
    dh_judge "$lines" 3
fi

echo "== statistics $mode: $failures failure(s)"
[[ $failures == 0 ]]
