#!/usr/bin/env bash
# fkrng on an AVX2-only CPU beside an AVX-512 one, measured on one machine in one run: the
# fill and int groups of benches/compare.rs (fkrng and rand::rng() only) from two builds
# pinned to fkrng's AVX2 and AVX-512 kernels (--cfg fkrng_keystream="avx2"|"avx512"), and
# `openssl speed -evp chacha20` with and without OpenSSL's AVX-512 code (OPENSSL_ia32cap
# masks the AVX-512F and AVX-512VL bits): the cipher's ceiling at each width. `rand::rng()` (ChaCha12 in the
# chacha20 crate, which has no AVX-512 code for its RNG) runs its AVX2 code in both builds,
# so the AVX2 columns are what an AVX2-only CPU of this kind sees. Prints a Markdown table
# (docs/BENCHMARKS.md, "AVX2 beside AVX-512", holds the committed one).
#
# Usage: scripts/bench-paths.sh [--quick|--report]   (--quick: a smoke run of seconds, no
# openssl; --report: the table again from the last run's measurements)
# Needs a CPU with AVX-512F for the avx512 column; on one without, that column is left out.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=no report=no
[[ "${1:-}" == --quick ]] && quick=yes
[[ "${1:-}" == --report ]] && report=yes
args=(--warm-up-time 1 --measurement-time 3)
[[ $quick == yes ]] && args=(--warm-up-time 0.01 --measurement-time 0.01 --sample-size 10)

paths=(avx2)
grep -qw avx512f /proc/cpuinfo && paths+=(avx512)
filter='^default\.(fill/(fkrng|rand::rng\(\))/(16|32|64|256|1024|65536|1048576)$|int/(fkrng/u(32|64)|rand::rng\(\)/u(32|64))$)'
home=$PWD/target/criterion-paths
for path in "${paths[@]}"; do
  [[ $report == yes ]] && break
  echo "== pinned $path"
  CRITERION_HOME="$home/$path" CARGO_TARGET_DIR="target/bench-$path" \
    RUSTFLAGS="--cfg fkrng_keystream=\"$path\"" \
    cargo bench --bench compare -- "$filter" "${args[@]}"
done

openssl_line() {
  # The rate for 16384-byte blocks, in GiB/s (openssl prints thousands of bytes per second).
  env "$@" openssl speed -evp chacha20 -bytes 16384 -seconds 3 2>/dev/null |
    awk '/^ChaCha20/ { v = $NF; sub(/k$/, "", v); printf "%.2f", v * 1000 / 2^30 }'
}
openssl_avx2=- openssl_avx512=-
if [[ $quick == no && $report == no ]] && command -v openssl >/dev/null; then
  # The third word is CPUID leaf 7 EBX: bit 16 is AVX-512F, bit 31 AVX-512VL; with only the
  # first masked, OpenSSL still runs its AVX-512VL code.
  openssl_avx2=$(openssl_line OPENSSL_ia32cap=":~0x80010000")
  openssl_avx512=$(openssl_line)
fi

python3 - "$home" "$openssl_avx2" "$openssl_avx512" "${paths[@]}" <<'EOF'
import json, pathlib, sys
home, ossl2, ossl5, *paths = sys.argv[1:]
def load(path):
    out = {}
    for bench in pathlib.Path(home, path).glob("**/new/benchmark.json"):
        meta = json.loads(bench.read_text())
        est = json.loads(bench.with_name("estimates.json").read_text())
        fid, val = meta.get("function_id") or "", meta.get("value_str") or ""
        if "/" in fid and not val:
            fid, val = fid.split("/", 1)
        out[(meta["group_id"].split(".", 1)[1], fid, val)] = est["median"]["point_estimate"]
    return out
runs = {p: load(p) for p in paths}
rows = [("fill", str(n), f"{n} B fill") for n in (16, 32, 64, 256, 1024, 65536, 1048576)]
rows += [("int", "u32", "u32"), ("int", "u64", "u64")]
head = "| request |" + "".join(
    f" fkrng, {p} | rand::rng(), {p} | fkrng's time ÷ rand's, {p} |" for p in paths
)
print(head)
print("|---|" + "---|---|---|" * len(paths))
def fmt(ns, size):
    if size and size >= 65536:
        return f"{size / ns * 1e9 / 2**30:.2f} GiB/s"
    return f"{ns:.2f} ns"
for q, v, name in rows:
    cells = []
    for p in paths:
        r = runs[p]
        if q == "fill":
            f, g = r.get(("fill", "fkrng", v)), r.get(("fill", "rand::rng()", v))
            size = int(v)
        else:
            f, g = r.get(("int", "fkrng", v)), r.get(("int", "rand::rng()", v))
            size = 0
        if f is None or g is None:
            cells += ["-", "-", "-"]
            continue
        cells += [fmt(f, size), fmt(g, size), f"{f / g:.2f}"]
    print(f"| {name} | " + " | ".join(cells) + " |")
print()
print(
    f"openssl speed -evp chacha20, 16 KiB blocks: {ossl2} GiB/s with AVX-512 masked,"
    f" {ossl5} GiB/s with it"
)
EOF
