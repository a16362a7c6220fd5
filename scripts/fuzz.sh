#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ one after the other, each for a fixed time.
#
# Usage: scripts/fuzz.sh [--short | SECONDS_PER_TARGET] [TARGET...]
#   --short             what CI runs: 20 s per target, built with AddressSanitizer on the
#                       nightly toolchain when it is installed (`-s none` on stable otherwise)
#   SECONDS_PER_TARGET  default 3600 (one hour each), stable toolchain, `-s none`
#   TARGET              default all: differential cli_size cli_args.
#
# Fuzz builds have debug assertions, so the generator computes its keystream with the
# one-block plain-Rust code (`keystream: small-stack`), not with the SIMD kernels (those are
# checked against the chacha20 crate by the unit tests, the known-answer tests and the
# pinned runs of scripts/platforms.sh). The `unsafe` code the targets do reach is the stack
# scrub after every keystream computation (src/keystream/scrub.rs: writes below the stack
# pointer, `asm!` that clears registers) and the generator's whole-state wipe. The long runs use `-s none` on stable, for several times more executions
# per hour: Rust's bounds and overflow checks turn memory and arithmetic errors of safe code
# into panics, which libFuzzer reports as crashes. The short mode adds AddressSanitizer,
# which also checks the accesses of that unsafe code.
#
# The committed seed corpus in fuzz/corpus/TARGET is read but never written; inputs the
# fuzzer finds go to fuzz/target/work/TARGET and are kept between runs. A crash stops the
# run with a non-zero exit and leaves the input in fuzz/artifacts/TARGET/ (reproduce it with
# the same toolchain and sanitizer: `cargo fuzz run -s none TARGET fuzz/artifacts/TARGET/crash-...`,
# or `cargo +nightly fuzz run -s address --target-dir fuzz/target/asan TARGET ...`).
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz=(cargo fuzz)
san=(-s none)
if [[ ${1:-} == --short ]]; then
    secs=20
    shift
    if cargo +nightly --version >/dev/null 2>&1; then
        fuzz=(cargo +nightly fuzz)
        san=(-s address --target-dir fuzz/target/asan)
    else
        echo "== no nightly toolchain: short run without AddressSanitizer (-s none)"
    fi
else
    secs=${1:-3600}
    shift || true
fi
[[ $secs =~ ^[0-9]+$ ]] || { echo "usage: $0 [--short | SECONDS_PER_TARGET] [TARGET...]" >&2; exit 2; }
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(differential cli_size cli_args)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is missing (install it with: cargo install cargo-fuzz --locked)" >&2
    exit 1
fi

echo "== building fuzz targets (${san[*]})"
"${fuzz[@]}" build "${san[@]}" 2>&1 | grep -vE '^ +(Compiling|Downloaded|Downloading)' || true

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
    if ! "${fuzz[@]}" run "${san[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -max_len="$max_len" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log"
        echo "== $t: CRASH (input saved under fuzz/artifacts/$t/)"
        exit 1
    fi
    runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 executions in \2 s/p' "$log")
    cov=$(sed -n 's/^#[0-9]*[[:space:]]*DONE.*\(cov: [0-9]*\).*\(corp: [^ ]*\).*/\1, \2/p' "$log")
    echo "== $t: ${runs:-?}, no crash (${cov:-?})"
done
