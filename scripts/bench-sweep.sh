#!/usr/bin/env bash
# The size sweep of docs/BENCHMARKS.md ("Size sweep") and its plot docs/img/size-sweep.png:
# fills of every size from 1 byte to 1 MiB on a doubling grid plus the sizes around the
# 992-byte buffer, fkrng against rand::rng() and a raw chacha20::ChaCha20Rng in one run
# (benches/harness/size_sweep.rs), once per keystream path this CPU can take, each from a
# build pinned to it (--cfg fkrng_keystream="avx512"|"avx2"|"portable"; otherwise the default
# build, without --cfg chacha20_avx512, as scripts/bench-paths.sh builds it, in the same
# target directories). Then `openssl speed -evp chacha20`, with and without OpenSSL's AVX-512
# code (the cipher's ceiling at each width), and scripts/bench-report.py --sweep, which
# writes the section's tables and targets and draws the plot (with matplotlib; without it,
# the tables only).
#
# Usage: scripts/bench-sweep.sh [--quick|--report]
#   --quick   a smoke run of a few rounds and no openssl; writes nothing to docs/
#   --report  the section and the plot again from the last run's measurements
# SWEEP_ROUNDS: rounds per path (default 301, about 10 s per path). SWEEP_CPU: a CPU to pin
# the runs to with taskset (on a machine where other work runs, the one it uses least).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=no report=no
[[ "${1:-}" == --quick ]] && quick=yes
[[ "${1:-}" == --report ]] && report=yes
out=target/sweep
[[ $quick == yes ]] && out=target/sweep-quick
rounds=${SWEEP_ROUNDS:-301}
[[ $quick == yes ]] && rounds=3
pin=()
[[ -n "${SWEEP_CPU:-}" ]] && pin=(taskset -c "$SWEEP_CPU")

paths=(avx2 portable)
grep -qw avx512f /proc/cpuinfo && paths=(avx512 avx2 portable)
load() { cut -d' ' -f1-3 /proc/loadavg; }

if [[ $report == no ]]; then
  for path in "${paths[@]}"; do
    echo "== build pinned to $path"
    # The portable build also keeps the chacha20 crate (and so rand::rng()) to its SSE2
    # code, as on an x86-64 CPU without AVX2, the only kind that takes this path.
    flags="--cfg fkrng_keystream=\"$path\""
    [[ $path == portable ]] && flags+=' --cfg chacha20_backend="sse2"'
    CARGO_TARGET_DIR="target/bench-$path" RUSTFLAGS="$flags" \
      cargo build --release --example size_sweep
  done
  rm -rf "$out"
  mkdir -p "$out"
  {
    echo "date=$(date -u '+%Y-%m-%d %H:%M')"
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "rounds=$rounds"
    echo "pinned_cpu=${SWEEP_CPU:-none}"
    echo "load_before=$(load)"
  } >"$out/run-info.txt"
  # The runs come after all builds, so that they are close together in time.
  for path in "${paths[@]}"; do
    echo "== sweep, $path"
    "${pin[@]}" "target/bench-$path/release/examples/size_sweep" "$rounds" >"$out/$path.tsv"
  done
  echo "load_after=$(load)" >>"$out/run-info.txt"
  if [[ $quick == no ]] && command -v openssl >/dev/null; then
    echo "== openssl speed -evp chacha20"
    # Three runs each; the third word is CPUID leaf 7 EBX, where bit 16 is AVX-512F and bit 31
    # AVX-512VL: masking both leaves OpenSSL on its AVX2 code (AVX-512F alone leaves it on
    # its AVX-512VL code).
    for _ in 1 2 3; do
      "${pin[@]}" openssl speed -evp chacha20 -seconds 2 2>/dev/null |
        sed -n 's/^ChaCha20 */full /p' >>"$out/openssl.txt"
      OPENSSL_ia32cap=":~0x80010000" "${pin[@]}" openssl speed -evp chacha20 -seconds 2 \
        2>/dev/null | sed -n 's/^ChaCha20 */no-avx512 /p' >>"$out/openssl.txt"
    done
    echo "openssl=$(openssl version)" >>"$out/run-info.txt"
  fi
fi

# The plot needs matplotlib (Debian: python3-matplotlib), as in scripts/bench.sh.
py=python3
if ! python3 -c 'import matplotlib' 2>/dev/null && [[ -x /usr/bin/python3 ]] &&
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  py=/usr/bin/python3
fi
if [[ $quick == yes ]]; then
  tmp=$(mktemp -d)
  "$py" scripts/bench-report.py --sweep "$out" --out "$tmp/BENCHMARKS.md" \
    --plot "$tmp/size-sweep.png"
  grep -c '^|' "$tmp/BENCHMARKS.md" >/dev/null
  rm -rf "$tmp"
else
  "$py" scripts/bench-report.py --sweep "$out"
fi
