#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ one after the other, each for a fixed time.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 3600 (one hour each); CI runs 20.
#   TARGET              default all: differential cli_size cli_args.
#
# Runs on the stable toolchain without sanitizers (`cargo fuzz run -s none`): the crate's
# only `unsafe` is in the thread-local and fork code, which these targets do not reach, and
# Rust's own bounds and overflow checks (debug assertions are on in fuzz builds) turn memory
# and arithmetic errors into panics, which libFuzzer reports as crashes.
#
# The committed seed corpus in fuzz/corpus/TARGET is read but never written; inputs the
# fuzzer finds go to fuzz/target/work/TARGET and are kept between runs. A crash stops the
# run with a non-zero exit and leaves the input in fuzz/artifacts/TARGET/ (reproduce it with
# `cargo fuzz run -s none TARGET fuzz/artifacts/TARGET/crash-...`).
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-3600}
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(differential cli_size cli_args)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked --quiet
fi

echo "== building fuzz targets"
cargo fuzz build -s none 2>&1 | grep -vE '^ +(Compiling|Downloaded|Downloading)' || true

for t in "${targets[@]}"; do
    case "$t" in
    differential) max_len=256 ;; # 32-byte seed + 64 operations of 3 bytes
    cli_size) max_len=64 ;;
    cli_args) max_len=256 ;;
    *)
        echo "unknown target $t" >&2
        exit 2
        ;;
    esac
    work=fuzz/target/work/$t
    mkdir -p "$work" "fuzz/corpus/$t"
    log=fuzz/target/work/$t.log
    echo "== fuzzing $t for ${secs}s"
    if ! cargo fuzz run -s none "$t" "$work" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -max_len="$max_len" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "== $t: CRASH (input saved under fuzz/artifacts/$t/)"
        exit 1
    fi
    runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 executions in \2 s/p' "$log")
    cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE.*\(cov: [0-9]*\).*\(corp: [^ ]*\).*/\1, \2/p' "$log")
    echo "== $t: ${runs:-?}, no crash (${cov:-?})"
done
