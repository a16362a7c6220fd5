#!/usr/bin/env python3
"""Turns criterion's results of benches/compare.rs into docs/BENCHMARKS.md, the throughput
plot docs/img/throughput.png and the headline block of README.md.

Reads every `new/benchmark.json` + `new/estimates.json` under the criterion directory
(default: target/criterion, or $CRITERION_HOME). Times are criterion's median time per
iteration; throughput is bytes per iteration divided by that time. Machine facts are read
from this machine; `run-info.txt` in the criterion directory (written by scripts/bench.sh)
adds the date, load averages and the syscall count.

Usage: scripts/bench-report.py [--criterion DIR] [--out FILE] [--plot FILE]
                               [--readme FILE | --no-readme]
The plot needs matplotlib; without it the tables are still written and a note is printed.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PEERS = [
    "fkrng",
    "fkrng::rng()",
    "rand::rng()",
    "ChaCha20Rng",
    "vDSO getrandom",
    "getrandom syscall",
    "/dev/urandom",
]
BUILDS = {
    "default": "default build",
    "avx512": "built with `--cfg chacha20_avx512`",
}
KEPT_START = "<!-- kept by bench-report.py: start -->"
KEPT_END = "<!-- kept by bench-report.py: end -->"
README_START = "<!-- bench-report:start -->"
README_END = "<!-- bench-report:end -->"


def load(criterion_dir):
    """{(build, question, function, parameter): {"ns": median, "lo": .., "hi": .., "bytes": n}}"""
    results = {}
    for bench in criterion_dir.glob("**/new/benchmark.json"):
        est_path = bench.with_name("estimates.json")
        if not est_path.exists():
            continue
        meta = json.loads(bench.read_text())
        est = json.loads(est_path.read_text())
        group = meta["group_id"]
        if "." not in group:
            continue
        build, question = group.split(".", 1)
        function = meta.get("function_id") or ""
        param = meta.get("value_str") or ""
        if "/" in function and not param:
            function, param = function.split("/", 1)
        thr = meta.get("throughput") or {}
        nbytes = thr.get("Bytes") or thr.get("BytesDecimal")
        med = est["median"]
        results[(build, question, function, param)] = {
            "ns": med["point_estimate"],
            "lo": med["confidence_interval"]["lower_bound"],
            "hi": med["confidence_interval"]["upper_bound"],
            "bytes": nbytes,
        }
    return results


def fmt_time(ns):
    if ns is None:
        return "–"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{fmt_num(ns / scale)} {unit}"
    return f"{fmt_num(ns)} ns"


def fmt_num(x):
    """Three significant digits, without exponent notation."""
    return f"{x:.0f}" if x >= 100 else f"{x:.3g}"


def fmt_rate(bytes_per_s):
    if bytes_per_s is None:
        return "–"
    for unit, scale in (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10)):
        if bytes_per_s >= scale:
            return f"{fmt_num(bytes_per_s / scale)} {unit}"
    return f"{fmt_num(bytes_per_s)} B/s"


def fmt_size(n):
    n = int(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10} KiB"
    return f"{n} B"


def rate(r):
    if r is None or not r.get("bytes"):
        return None
    return r["bytes"] / (r["ns"] * 1e-9)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine():
    cpu = "unknown"
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1]
    except OSError:
        pass
    simd = [f for f in ("avx2", "avx512f", "avx512vl") if f in flags.split()]
    return {
        "CPU": cpu,
        "Logical CPUs": str(os.cpu_count()),
        "SIMD (cpuinfo)": ", ".join(simd) or "none of avx2/avx512f/avx512vl",
        "Kernel": platform.release(),
        "C library": sh(["getconf", "GNU_LIBC_VERSION"]),
        "rustc": sh(["rustc", "--version"]),
    }


def run_info(criterion_dir):
    info = {}
    path = criterion_dir / "run-info.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                info[k.strip()] = v.strip()
    return info


class Report:
    def __init__(self, results):
        self.r = results
        self.checks = []

    def get(self, build, question, function, param):
        return self.r.get((build, question, function, str(param)))

    def params(self, build, question):
        ps = {k[3] for k in self.r if k[0] == build and k[1] == question}
        return sorted(ps, key=lambda p: (not p.isdigit(), int(p) if p.isdigit() else p))

    def functions(self, build, question, order=PEERS):
        fs = {k[2] for k in self.r if k[0] == build and k[1] == question}
        return [f for f in order if f in fs] + sorted(fs - set(order))

    def ratio(self, build, question, a, b, param):
        ra, rb = self.get(build, question, a, param), self.get(build, question, b, param)
        if ra is None or rb is None:
            return None
        return ra["ns"] / rb["ns"]

    def check(self, what, value, bound, kind):
        """kind: '<=' (time ratio at most) or '>=' (throughput ratio at least)."""
        if value is None:
            self.checks.append((what, "not measured", f"{kind} {bound:g}", "–"))
            return
        ok = value <= bound if kind == "<=" else value >= bound
        self.checks.append((what, f"{value:.3g}", f"{kind} {bound:g}", "yes" if ok else "**no**"))

    def fill_section(self, build):
        q = "fill"
        sizes = self.params(build, q)
        if not sizes:
            return ""
        peers = self.functions(build, q)
        out = [f"### Fill, {BUILDS.get(build, build)}\n"]
        out.append("Median time per call:\n")
        rows = [[fmt_size(n)] + [fmt_time((self.get(build, q, p, n) or {}).get("ns")) for p in peers]
                for n in sizes]
        out.append(table(["request"] + peers, rows))
        out.append("\nThroughput:\n")
        rows = [[fmt_size(n)] + [fmt_rate(rate(self.get(build, q, p, n))) for p in peers] for n in sizes]
        out.append(table(["request"] + peers, rows))
        others = [p for p in peers if p != "fkrng"]
        out.append("\nfkrng's time as a multiple of each peer's (below 1: fkrng is faster):\n")
        rows = []
        for n in sizes:
            row = [fmt_size(n)]
            for p in others:
                x = self.ratio(build, q, "fkrng", p, n)
                row.append("–" if x is None else f"{x:.3g}×")
            rows.append(row)
        out.append(table(["request"] + others, rows))
        return "\n".join(out) + "\n"

    def small_section(self, build, question, title):
        keys = [k for k in self.r if k[0] == build and k[1] == question]
        if not keys:
            return ""
        ops = sorted({k[3] for k in keys}, key=lambda s: (len(s), s))
        peers = self.functions(build, question)
        out = [f"### {title}, {BUILDS.get(build, build)}\n"]
        rows = []
        for op in ops:
            row = [f"`{op}`"] + [fmt_time((self.get(build, question, p, op) or {}).get("ns")) for p in peers]
            x = self.ratio(build, question, "fkrng", "rand::rng()", op)
            if x is None:
                x = self.ratio(build, question, "fkrng::rng()", "rand::rng()", op)
            row.append("–" if x is None else f"{x:.3g}×")
            rows.append(row)
        out.append(table(["call"] + peers + ["fkrng ÷ rand::rng()"], rows))
        return "\n".join(out) + "\n"

    def threads_section(self, build):
        q = "threads"
        ks = self.params(build, q)
        if not ks:
            return ""
        gens = self.functions(build, q)
        out = [f"### Threads, {BUILDS.get(build, build)}\n",
               "Aggregate throughput of 16-byte fills, every thread reading at once (this machine "
               "has the number of logical CPUs given above; more threads than CPUs share them):\n"]
        rows = []
        for g in gens:
            one = rate(self.get(build, q, g, "1"))
            for k in ks:
                r = rate(self.get(build, q, g, k))
                scale = "–" if r is None or not one else f"{r / one:.2f}×"
                per_read = self.get(build, q, g, k)
                rows.append([g, k, fmt_rate(r), scale,
                             fmt_time(per_read["ns"] / (per_read["bytes"] / 16))
                             if per_read and per_read.get("bytes") else "–"])
        out.append(table(["generator", "threads", "aggregate", "vs 1 thread", "wall time per 16-byte read (all threads)"], rows))
        return "\n".join(out) + "\n"

    def first_read_section(self, build):
        q = "first_read"
        keys = [k for k in self.r if k[0] == build and k[1] == q]
        if not keys:
            return ""
        out = [f"### First read in a new thread, {BUILDS.get(build, build)}\n",
               "The first 16-byte read in a newly spawned thread, timed inside the thread "
               "around the read alone (creating and joining the thread are not counted), "
               "against a 16-byte read once the thread's generator is set up (the `fill` "
               "group):\n"]
        rows = []
        for g in ["fkrng", "fkrng (new mapping)", "rand::rng()"]:
            r = self.get(build, q, g, "")
            if r is None:
                continue
            warm = self.get(build, "fill", g.split(" ")[0], "16")
            rows.append([g, fmt_time(r["ns"]), fmt_time(warm["ns"]) if warm else "–"])
        out.append(table(["generator", "first read in a new thread", "later 16-byte read"],
                         rows))
        return "\n".join(out) + "\n"

    def cost_model(self, build):
        """Small-read cost: a fixed part (the 1-byte time) plus the keystream share."""
        one = self.get(build, "fill", "fkrng", "1")
        bulk = self.get(build, "fill", "fkrng", "65536")
        if one is None or bulk is None:
            return ""
        ns_per_byte = bulk["ns"] / 65536
        out = [f"### Where the time of a small read goes, {BUILDS.get(build, build)}\n",
               "A read served from the buffer costs a fixed part (thread-local lookup, busy "
               "flag, epoch check, copy and zeroing: about the 1-byte time, "
               f"{fmt_time(one['ns'])}) plus its share of the 1024-byte refill that produced "
               f"it: n × 1024/992 × {ns_per_byte:.3f} ns (the keystream cost per byte, from "
               "the 64 KiB row). The keystream share is the floor under fkrng's ratios from "
               "about 32 bytes on: ChaCha20 at this rate costs "
               f"{fmt_time(64 * 1024 / 992 * ns_per_byte)} for 64 bytes however little the "
               "rest of the read costs, and only a faster keystream lowers it.\n"]
        rows = []
        for n in ["4", "8", "16", "32", "64", "256"]:
            r = self.get(build, "fill", "fkrng", n)
            if r is None:
                continue
            model = one["ns"] + int(n) * 1024 / 992 * ns_per_byte
            rows.append([fmt_size(n), fmt_time(r["ns"]), fmt_time(model)])
        out.append(table(["request", "measured", "model"], rows))
        return "\n".join(out) + "\n"

    def pair(self, build, question, a, b):
        """Time of function/param `a` over `b` (each "function/param") in one group."""
        ra = self.get(build, question, *a.split("/", 1))
        rb = self.get(build, question, *b.split("/", 1))
        return None if ra is None or rb is None else ra["ns"] / rb["ns"]

    def targets(self):
        d = "default"
        for a, b in (("fkrng/u32", "rand::rng()/u32"), ("fkrng::rng()/next_u32", "rand::rng()/u32"),
                     ("fkrng/u64", "rand::rng()/u64"), ("fkrng::rng()/next_u64", "rand::rng()/u64")):
            x = self.pair(d, "int", a, b)
            self.check(f"default, int: {a} time ÷ {b}", x, 1.2, "<=")
            self.check(f"stretch: default, int: {a} time ÷ {b}", x, 1.0, "<=")
        for op in ("random_range", "shuffle 1000"):
            self.check(f"default, sample: fkrng::rng() {op} time ÷ rand::rng()'s",
                       self.pair(d, "sample", f"fkrng::rng()/{op}", f"rand::rng()/{op}"), 1.2, "<=")
        self.check("default, fill 1 B: time ÷ rand::rng()",
                   self.ratio(d, "fill", "fkrng", "rand::rng()", "1"), 1.0, "<=")
        for g in ("fkrng", "fkrng (new mapping)"):
            r, rr = self.get(d, "first_read", g, ""), self.get(d, "first_read", "rand::rng()", "")
            self.check(f"default, first 16-byte read in a new thread, {g}: time ÷ rand::rng()",
                       None if r is None or rr is None else r["ns"] / rr["ns"], 1.0, "<=")
        two = rate(self.get(d, "threads", "fkrng", "2"))
        for k in ("64", "512"):
            r = rate(self.get(d, "threads", "fkrng", k))
            self.check(f"default, threads: {k}-thread aggregate ÷ 2-thread",
                       None if r is None or two is None else r / two, 0.9, ">=")
        for k in self.params(d, "threads"):
            a, b = rate(self.get(d, "threads", "fkrng", k)), rate(self.get(d, "threads", "rand::rng()", k))
            self.check(f"default, threads: {k}-thread aggregate ÷ rand::rng()'s",
                       None if a is None or b is None else a / b, 1.0, ">=")
        small = ["4", "8", "16", "32", "64"]
        for n in small:
            self.check(f"default, fill {n} B: time ÷ rand::rng()",
                       self.ratio(d, "fill", "fkrng", "rand::rng()", n), 1.5, "<=")
        for n in small:
            self.check(f"default, fill {n} B: time ÷ getrandom syscall",
                       self.ratio(d, "fill", "fkrng", "getrandom syscall", n), 0.05, "<=")
        for n in small:
            self.check(f"default, fill {n} B: time ÷ vDSO getrandom",
                       self.ratio(d, "fill", "fkrng", "vDSO getrandom", n), 0.5 if n == "4" else 0.25, "<=")
        for n in self.params(d, "fill"):
            self.check(f"stretch: default, fill {fmt_size(n)}: time ÷ rand::rng()",
                       self.ratio(d, "fill", "fkrng", "rand::rng()", n), 1.0, "<=")
        for n in ["65536", str(1 << 20)]:
            for peer, bound in (("ChaCha20Rng", 0.9), ("vDSO getrandom", 2.5)):
                x = self.ratio(d, "fill", peer, "fkrng", n)
                self.check(f"default, fill {fmt_size(n)}: throughput ÷ {peer}", x, bound, ">=")
        for n in ["65536", str(1 << 20)]:
            for peer, bound in (("rand::rng()", 1.0), ("vDSO getrandom", 4.0)):
                x = self.ratio("avx512", "fill", peer, "fkrng", n)
                self.check(f"avx512 cfg, fill {fmt_size(n)}: throughput ÷ {peer}", x, bound, ">=")
        for b in BUILDS:
            one, two = rate(self.get(b, "threads", "fkrng", "1")), rate(self.get(b, "threads", "fkrng", "2"))
            if one is not None or b == "default":
                self.check(f"{b}, threads: 2-thread aggregate ÷ 1-thread",
                           None if one is None or two is None else two / one, 1.8, ">=")


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(9, 5.5), dpi=110)
    styles = {"default": "-", "avx512": "--"}
    for build in ("default", "avx512"):
        for peer in PEERS:
            pts = sorted((int(k[3]), rate(v)) for k, v in results.items()
                         if k[0] == build and k[1] == "fill" and k[2] == peer and rate(v))
            if not pts:
                continue
            if build == "avx512" and peer != "fkrng":
                continue  # the peers do not use the cipher API, so the cfg leaves them alone
            label = peer if build == "default" else f"{peer} (--cfg chacha20_avx512)"
            ax.plot([p[0] for p in pts], [p[1] / (1 << 20) for p in pts], styles[build],
                    marker="o", markersize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({int(k[3]) for k in results if k[1] == "fill" and k[3].isdigit()})
    ax.set_xticks(sizes)
    ax.set_xticklabels([fmt_size(n).replace(" ", "\u00a0") for n in sizes], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("request size (bytes)")
    ax.set_ylabel("throughput (MiB/s, one thread)")
    ax.set_title("Secure random bytes in Rust: throughput by request size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return True


def headline(rep):
    lines = []
    for build in ("default", "avx512"):
        r16 = rep.get(build, "fill", "fkrng", "16")
        if r16:
            parts = []
            for peer in ("rand::rng()", "vDSO getrandom", "getrandom syscall"):
                x = rep.ratio(build, "fill", "fkrng", peer, "16")
                if x is not None:
                    parts.append(f"{x:.2g}× the time of {peer}")
            lines.append(f"- 16-byte `fkrng::fill` ({BUILDS[build]}): {fmt_time(r16['ns'])}, "
                         + ", ".join(parts) + ".")
    for build in ("default", "avx512"):
        big = rep.get(build, "fill", "fkrng", str(1 << 20))
        if big:
            parts = []
            for peer in ("rand::rng()", "ChaCha20Rng", "vDSO getrandom"):
                x = rep.ratio(build, "fill", peer, "fkrng", str(1 << 20))
                if x is not None:
                    parts.append(f"{x:.2g}× the throughput of {peer}")
            lines.append(f"- 1 MiB fills ({BUILDS[build]}): {fmt_rate(rate(big))}, "
                         + ", ".join(parts) + ".")
    facts = machine()
    lines.append(f"- Machine: {facts['CPU']}, {facts['Logical CPUs']} logical CPUs, "
                 f"Linux {facts['Kernel']}; one thread unless stated.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--criterion", type=Path,
                    default=Path(os.environ.get("CRITERION_HOME", ROOT / "target" / "criterion")))
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "throughput.png")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()

    results = load(args.criterion)
    if not results:
        sys.exit(f"bench-report: no results of benches/compare.rs under {args.criterion}")
    rep = Report(results)
    rep.targets()
    info = run_info(args.criterion)

    plotted = plot(results, args.plot)
    if not plotted:
        print("bench-report: note: matplotlib not found, plot not drawn "
              "(apt-get install python3-matplotlib, or pip install matplotlib)", file=sys.stderr)

    md = ["# Benchmarks", "",
          "Generated by `scripts/bench-report.py` from the criterion results of "
          "`benches/compare.rs`; regenerate everything with `scripts/bench.sh` (about 6 minutes). "
          "Times are criterion's median per call; throughput is bytes per call over that time. "
          "Every table compares peers measured in the same run of the same build.", ""]
    md += ["## Machine and run", ""]
    facts = machine()
    for key in ("date", "load_before", "load_after_default", "load_after_avx512", "nice", "commit"):
        if key in info:
            facts[{"date": "Date (UTC)", "load_before": "Load average before",
                    "load_after_default": "Load average after the default build's run",
                    "load_after_avx512": "Load average after the avx512 run",
                    "nice": "Scheduling priority (nice) of the run",
                    "commit": "Commit"}[key]] = info[key]
    md.append(table(["", ""], [[k, v] for k, v in facts.items()]))
    md += ["", "Commands (what `scripts/bench.sh` runs):", "", "```sh",
           "# default build: the cfg of .cargo/config.toml replaced by empty flags",
           "CARGO_ENCODED_RUSTFLAGS= CARGO_TARGET_DIR=target/no-avx512-cfg \\",
           "  CRITERION_HOME=target/criterion cargo bench --bench compare",
           "# the project's build (--cfg chacha20_avx512 from .cargo/config.toml): fills only",
           "CRITERION_HOME=target/criterion cargo bench --bench compare -- '^avx512\\.fill/'",
           "scripts/bench-report.py", "```", ""]
    md += ["### The two builds", "",
           "*Default build* means no extra flags. On x86-64 fkrng's refills and direct "
           "fills run its own ChaCha20 kernels (`src/keystream/`), chosen at run time from "
           "CPUID: a sixteen-block AVX-512 kernel on CPUs with AVX-512F (one pass is one "
           "refill) with an eight-block AVX-512 kernel for the tails of direct fills, an "
           "eight-block AVX2 kernel on CPUs with AVX2 only, and the `chacha20` crate's cipher "
           "elsewhere. *Built with `--cfg chacha20_avx512`* the `chacha20` crate also "
           "compiles its own AVX-512 backend (chosen at run time on CPUs with AVX-512F and "
           "AVX-512VL). fkrng's kernels run ahead of the crate, so on a CPU with AVX-512 the "
           "cfg changes only what is left to the crate (blocks past 2^32 in one request, "
           "256 GiB in): fkrng's figures in the two builds differ by measurement noise. "
           "Either way the binary still runs on CPUs without AVX-512: the cfg adds no target "
           "features (`rustc --print cfg --cfg chacha20_avx512` differs from `rustc --print "
           "cfg` only by the `chacha20_avx512` line). The peers are the same code in both "
           "builds: `rand::rng()` and `ChaCha20Rng` use the `chacha20` crate's RNG "
           "interface, which has no AVX-512 backend.", "",
           "An application enables the AVX-512 backend for its own build with "
           "`[build] rustflags = [\"--cfg\", \"chacha20_avx512\"]` (or "
           "`[target.x86_64-unknown-linux-gnu] rustflags = [...]`) in its "
           "`.cargo/config.toml`, or `RUSTFLAGS=\"--cfg chacha20_avx512\"` for one build. "
           "This project sets it in its own `.cargo/config.toml`, so `cargo bench`, the tests "
           "and the `fkrng` tool are built with it. `RUSTFLAGS` or `CARGO_ENCODED_RUSTFLAGS` "
           "in the environment replace that setting, even when empty, which is how "
           "`scripts/bench.sh` gets the default build (in its own target directory, so the two "
           "builds do not rebuild each other).", ""]
    md += ["Peers: `rand::rng()` is rand 0.10's thread-local ChaCha12 generator, its handle "
           "taken once outside the timed loop; `ChaCha20Rng` is the chacha20 crate's raw RNG "
           "(same cipher as fkrng, no key erasure, no zeroing, no reseeding, no fork "
           "safety); `getrandom syscall` is `getrandom::fill` (one `getrandom(2)` system call "
           "per read with this C library); `vDSO getrandom` is the kernel's vDSO "
           "`vgetrandom` called directly through the `vdso-rng` crate with a per-thread "
           "state; `/dev/urandom` reads a file opened once.", ""]
    if plotted:
        rel = os.path.relpath(args.plot, args.out.parent)
        md += [f"![Throughput by request size]({rel})", ""]

    md += ["## Targets", "",
           "Ratios are of fkrng against a peer in the same run: time ratios (at most) for "
           "small fills, throughput ratios (at least) for bulk fills and threads.", ""]
    md.append(table(["target", "measured", "required", "met"], rep.checks))
    if "syscalls" in info:
        md += ["", f"Steady state (`scripts/count-syscalls.sh`): {info['syscalls']}"]
    md += ["", "### Reading the ratios", "",
           "- *Small reads against the system call and the vDSO.* Past a few bytes a read's "
           "cost is mostly its share of the ChaCha20 keystream (see \"Where the time of a "
           "small read goes\" below): the construction fixes ChaCha20 with 20 rounds, 1024 "
           "bytes of keystream per 992 bytes served. The kernel's `getrandom` for a small "
           "request costs a few hundred nanoseconds here, so at 32 to 64 bytes the ratio is "
           "set by the keystream rate, and the system call's own cost varies by a quarter "
           "from run to run on this virtual machine.",
           "- *Against `rand::rng()`.* rand's thread generator runs ChaCha12 (12 rounds, "
           "0.6 of ChaCha20's work per byte), erases no key, zeroes nothing and is not fork-"
           "safe; `next_u32`/`next_u64` read a word of its buffer in place, which is why "
           "they stay cheaper than fkrng's copy-and-zero path of 4 or 8 bytes.",
           "- *1 KiB fills* with an empty buffer take the direct path of the construction: "
           "1056 bytes of keystream (17 blocks) for 1024 served, as one in-place refill of 16 "
           "blocks whose 992 buffer bytes are moved out, then an eight-block tail pass for "
           "the last 32 bytes, which is the least favourable size; from 4 KiB on, whole "
           "passes dominate.",
           "- *Threads.* Each thread's state is in its own page mapping and a read writes "
           "nothing shared (the process epoch is only read), so aggregate throughput is "
           "bound by the CPU time the threads get. On a machine busy with other work, as "
           "in a shared build box, two threads do not get two whole CPUs; the 2-thread "
           "ratio is only meaningful from a quiet machine.",
           "- *First read in a thread* takes the wiped state of an exited thread if one is "
           "spare (as in this benchmark, whose threads come and go one after another), or "
           "else maps a new state page (`mmap`, `madvise` wipe-on-fork and do-not-dump), "
           "then seeds from `getrandom` and refills; at thread exit the state is wiped and "
           "kept for the next thread. rand's thread generator allocates from the heap and "
           "seeds from `getrandom`, without the fork protection.", ""]

    md += ["## Results", ""]
    for build in BUILDS:
        for sec in (rep.fill_section(build),
                    rep.small_section(build, "int", "Integers"),
                    rep.small_section(build, "sample", "rand's extension methods through each handle"),
                    rep.small_section(build, "array", "Arrays (nonce and key sizes)"),
                    rep.cost_model(build),
                    rep.threads_section(build),
                    rep.first_read_section(build)):
            if sec:
                md += [sec]
    # Sections measured by other scripts (scripts/bench-snapshot.sh) are carried over as they
    # stand between their markers.
    if args.out.exists():
        old = args.out.read_text()
        if KEPT_START in old and KEPT_END in old:
            kept = old.split(KEPT_START, 1)[1].split(KEPT_END, 1)[0]
            md += [KEPT_START + kept + KEPT_END, ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(md).rstrip() + "\n")
    print(f"bench-report: wrote {args.out}" + (f" and {args.plot}" if plotted else ""))

    if not args.no_readme and args.readme.exists():
        text = args.readme.read_text()
        if README_START in text and README_END in text:
            head, rest = text.split(README_START, 1)
            _, tail = rest.split(README_END, 1)
            text = head + README_START + "\n" + headline(rep) + "\n" + README_END + tail
            args.readme.write_text(text)
            print(f"bench-report: updated the headline numbers in {args.readme}")
    for what, measured, bound, ok in rep.checks:
        if ok != "yes":
            print(f"bench-report: target not met or not measured: {what}: {measured} (required {bound})")


if __name__ == "__main__":
    main()
