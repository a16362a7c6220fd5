#!/usr/bin/env python3
"""Renders criterion's results of benches/compare.rs into the marked regions of
docs/BENCHMARKS.md, the throughput plot docs/img/throughput.png and the headline block of
README.md.

The document holds the prose; this script writes only between `<!-- begin: NAME -->` and
`<!-- end: NAME -->` lines (the region names are those of `regions()` below) and leaves
everything else as it is. A region the document names but this script does not know is an
error; a region without results in this run says so. The pass thresholds are read from
docs/bench-targets.toml, which the "targets" region renders.

Reads every `new/benchmark.json` + `new/estimates.json` under the criterion directory
(default: target/criterion, or $CRITERION_HOME). Times are criterion's median time per
iteration; throughput is bytes per iteration divided by that time. Machine facts are read
from this machine; `run-info.txt` in the criterion directory (written by scripts/bench.sh)
adds the date, load averages and the syscall count.

Usage: scripts/bench-report.py [--criterion DIR] [--doc FILE] [--out FILE] [--targets FILE]
                               [--plot FILE] [--readme FILE | --no-readme]
       scripts/bench-report.py --sweep DIR [--doc FILE] [--out FILE] [--plot FILE]
  --doc   the document whose regions are filled (default docs/BENCHMARKS.md)
  --out   where the filled document goes (default: --doc itself)
  --sweep the size sweep instead (scripts/bench-sweep.sh): the region `size-sweep` only,
          from the harness's output in DIR, and its plot (default docs/img/size-sweep.png);
          the other regions, and README, are left as they are. The criterion report leaves
          the sweep's region as it is.
The plot needs matplotlib; without it the tables are still written and a note is printed.
"""

import argparse
import json
import os
import statistics
import platform
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PEERS = [
    "fkrng",
    "fkrng::rng()",
    "FkeRng",
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
REGION = re.compile(r"^<!-- begin: ([a-z0-9-]+) -->\n(.*?)^<!-- end: \1 -->$", re.M | re.S)
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

    def has(self, build, question):
        return any(k[0] == build and k[1] == question for k in self.r)

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

    # ---- targets (docs/bench-targets.toml) ------------------------------------------
    def check_targets(self, targets):
        """Fills `self.checks` with (target, measured, required, met) rows."""
        for t in targets:
            build, group = t["build"], t["group"]
            params = t.get("params")
            if params == "all":
                params = self.params(build, group)
            for p in params if params is not None else [None]:
                subj = [x.replace("{p}", p) if p is not None else x for x in t["subject"]]
                peer = [x.replace("{p}", p) if p is not None else x for x in t["peer"]]
                a, b = self.get(build, group, *subj), self.get(build, group, *peer)
                if a is None and t.get("optional"):
                    continue
                if t["measure"] == "time":
                    value = None if a is None or b is None else a["ns"] / b["ns"]
                    kind, bound, what = "<=", t["at_most"], "time"
                else:
                    ra, rb = rate(a), rate(b)
                    value = None if ra is None or rb is None else ra / rb
                    kind, bound, what = ">=", t["at_least"], "throughput"
                name = f"{build}, {group}: {label(subj, group)} {what} ÷ {label(peer, group)}"
                if t.get("stretch"):
                    name = "stretch: " + name
                self.check(name, value, bound, kind)

    def check(self, what, value, bound, kind):
        """kind: '<=' (ratio at most) or '>=' (ratio at least)."""
        if value is None:
            self.checks.append((what, "not measured", f"{kind} {bound:g}", "–"))
            return
        ok = value <= bound if kind == "<=" else value >= bound
        self.checks.append((what, f"{value:.3g}", f"{kind} {bound:g}", "yes" if ok else "**no**"))

    # ---- regions: tables only; the prose around them is in the document ---------------
    def fill(self, build):
        q = "fill"
        sizes = self.params(build, q)
        if not sizes:
            return None
        peers = self.functions(build, q)
        out = ["Median time per call:", ""]
        rows = [[fmt_size(n)] + [fmt_time((self.get(build, q, p, n) or {}).get("ns")) for p in peers]
                for n in sizes]
        out.append(table(["request"] + peers, rows))
        out += ["", "Throughput:", ""]
        rows = [[fmt_size(n)] + [fmt_rate(rate(self.get(build, q, p, n))) for p in peers] for n in sizes]
        out.append(table(["request"] + peers, rows))
        others = [p for p in peers if p != "fkrng"]
        out += ["", "fkrng's time as a multiple of each peer's (below 1: fkrng is faster):", ""]
        rows = []
        for n in sizes:
            row = [fmt_size(n)]
            for p in others:
                x = self.ratio(build, q, "fkrng", p, n)
                row.append("–" if x is None else f"{x:.3g}×")
            rows.append(row)
        out.append(table(["request"] + others, rows))
        return "\n".join(out)

    def small(self, build, question):
        keys = [k for k in self.r if k[0] == build and k[1] == question]
        if not keys:
            return None
        ops = sorted({k[3] for k in keys}, key=lambda s: (len(s), s))
        peers = self.functions(build, question)
        rows = []
        for op in ops:
            row = [f"`{op}`"] + [fmt_time((self.get(build, question, p, op) or {}).get("ns")) for p in peers]
            x = self.ratio(build, question, "fkrng", "rand::rng()", op)
            if x is None:
                x = self.ratio(build, question, "fkrng::rng()", "rand::rng()", op)
            row.append("–" if x is None else f"{x:.3g}×")
            rows.append(row)
        return table(["call"] + peers + ["fkrng ÷ rand::rng()"], rows)

    def threads(self, build):
        q = "threads"
        ks = self.params(build, q)
        if not ks:
            return None
        rows = []
        for g in self.functions(build, q):
            one = rate(self.get(build, q, g, "1"))
            for k in ks:
                r = rate(self.get(build, q, g, k))
                scale = "–" if r is None or not one else f"{r / one:.2f}×"
                per_read = self.get(build, q, g, k)
                rows.append([g, k, fmt_rate(r), scale,
                             fmt_time(per_read["ns"] / (per_read["bytes"] / 16))
                             if per_read and per_read.get("bytes") else "–"])
        return table(["generator", "threads", "aggregate", "vs 1 thread",
                      "wall time per 16-byte read (all threads)"], rows)

    def first_read(self, build):
        q = "first_read"
        if not self.has(build, q):
            return None
        rows = []
        for g in ["fkrng", "fkrng (new slot)", "rand::rng()"]:
            r = self.get(build, q, g, "")
            if r is None:
                continue
            warm = self.get(build, "fill", g.split(" ")[0], "16")
            rows.append([g, fmt_time(r["ns"]), fmt_time(warm["ns"]) if warm else "–"])
        return table(["generator", "first read in a new thread", "later 16-byte read"], rows)

    def cost(self, build):
        """Small-read cost: a fixed part (the 1-byte time) plus the keystream share."""
        one = self.get(build, "fill", "fkrng", "1")
        bulk = self.get(build, "fill", "fkrng", "65536")
        if one is None or bulk is None:
            return None
        ns_per_byte = bulk["ns"] / 65536
        out = [f"Fixed part (the 1-byte time): {fmt_time(one['ns'])}; keystream cost per byte "
               f"(the 64 KiB row): {ns_per_byte:.3f} ns; keystream share of a 64-byte read: "
               f"{fmt_time(64 * 1024 / 992 * ns_per_byte)}.", ""]
        rows = []
        for n in ["4", "8", "16", "32", "64", "256"]:
            r = self.get(build, "fill", "fkrng", n)
            if r is None:
                continue
            model = one["ns"] + int(n) * 1024 / 992 * ns_per_byte
            rows.append([fmt_size(n), fmt_time(r["ns"]), fmt_time(model)])
        out.append(table(["request", "measured", "model"], rows))
        return "\n".join(out)

    def targets_table(self):
        return table(["target", "measured", "required", "met"], self.checks)


def label(measurement, group):
    """How the target table names a measurement: `function`, `function (SIZE)`,
    `function (N threads)` or `function/parameter`."""
    function, param = measurement
    if not param:
        return function
    if group == "fill" and param.isdigit():
        return f"{function} ({fmt_size(param)})"
    if group == "threads":
        return f"{function} ({param} thread{'' if param == '1' else 's'})"
    return f"{function}/{param}"


def regions(rep, info):
    """{region name: function returning its markdown, or None when not measured}."""
    facts = machine()
    names = {"date": "Date (UTC)", "load_before": "Load average before",
             "load_after_default": "Load average after the default build's run",
             "load_after_avx512": "Load average after the avx512 run",
             "nice": "Scheduling priority (nice) of the run", "commit": "Commit"}
    for key, name in names.items():
        if key in info:
            facts[name] = info[key]
    out = {
        "machine": lambda: table(["", ""], [[k, v] for k, v in facts.items()]),
        "targets": rep.targets_table,
        "steady-state": lambda: (f"Steady state (`scripts/count-syscalls.sh`): {info['syscalls']}"
                                 if "syscalls" in info else None),
    }
    out["thread-memory"] = lambda: thread_memory(info)
    for build in BUILDS:
        out[f"fill-{build}"] = lambda b=build: rep.fill(b)
        out[f"int-{build}"] = lambda b=build: rep.small(b, "int")
        out[f"sample-{build}"] = lambda b=build: rep.small(b, "sample")
        out[f"array-{build}"] = lambda b=build: rep.small(b, "array")
        out[f"cost-{build}"] = lambda b=build: rep.cost(b)
        out[f"threads-{build}"] = lambda b=build: rep.threads(b)
        out[f"first-read-{build}"] = lambda b=build: rep.first_read(b)
    return out


def thread_memory(info):
    """The memory-per-thread table from thread_memory's lines in run-info.txt."""
    runs = {}
    for reader in ("none", "fkrng", "rand"):
        line = info.get(f"memory_{reader}")
        if line is None:
            return None
        runs[reader] = dict(kv.split("=", 1) for kv in line.split())
    base = int(runs["none"]["per_thread_bytes"])
    threads = int(runs["none"]["threads"])
    # Kernel mappings (lines of /proc/self/maps) beyond reading nothing, per thread; absent
    # from the lines of older runs.
    maps_base = runs["none"].get("maps_growth")
    names = {"none": "nothing", "fkrng": "fkrng", "rand": "rand::rng()"}
    rows = []
    for reader, r in runs.items():
        per = int(r["per_thread_bytes"])
        row = [names[reader], f"{int(r['rss_growth_kib']) / 1024:.1f} MiB", f"{per} B",
               "" if reader == "none" else f"{per - base} B"]
        if maps_base is not None:
            extra = (int(r["maps_growth"]) - int(maps_base)) / threads
            row.append("" if reader == "none" else f"{extra:.4f}")
        rows.append(row)
    header = [f"{threads:,} threads reading once from", "RSS growth", "per thread",
              "per thread, beyond reading nothing"]
    if maps_base is not None:
        header.append("kernel mappings per thread, beyond reading nothing")
    out = table(header, rows)
    f = runs["fkrng"]
    if "state_bytes" in f:  # absent from a build without the test hooks
        out += (f"\n\nfkrng's state per thread: {f['state_bytes']} bytes, taking {f['storage_bytes']}"
                f" bytes of the state pool's pages; thread-locals: {f['thread_local_bytes']} bytes.")
    return out


def fill_regions(doc, rendered, keep=()):
    """`doc` with every marked region replaced by its rendering (those named in `keep` left
    as they are); exits on an unknown one."""
    seen = set()

    def one(m):
        name = m.group(1)
        if name in keep:
            return m.group(0)
        if name not in rendered:
            sys.exit(f"bench-report: the document has a region this script does not know: {name}")
        seen.add(name)
        body = rendered[name]()
        if body is None:
            body = "_Not measured in this run._"
        return f"<!-- begin: {name} -->\n{body.rstrip()}\n<!-- end: {name} -->"

    return REGION.sub(one, doc), seen


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


# ---- the size sweep (scripts/bench-sweep.sh, benches/harness/size_sweep.rs) -------------

SWEEP_REGION = "size-sweep"
SWEEP_PEERS = ["rand::rng()", "ChaCha20Rng"]
# Targets: fkrng's time ÷ rand::rng()'s on the AVX-512 path; the throughput from one size
# of the sweep to the next larger one (from 64 B on), on every path; 1 MiB fills against
# the best figure of `openssl speed -evp chacha20`.
SWEEP_RAND_AT_MOST = 1.15
SWEEP_STEP_AT_LEAST = 0.90
SWEEP_STEP_FROM = 64
SWEEP_OPENSSL_AT_LEAST = 0.95
PATH_ORDER = ["avx512", "avx2", "portable"]


def load_sweep(directory):
    """{path: {(generator, size): {round: ns per call}}} from the harness's output files."""
    runs = {}
    for f in sorted(directory.glob("*.tsv")):
        samples = {}
        path = f.stem
        for line in f.read_text().splitlines():
            parts = line.split("\t")
            if parts[0] == "path":
                path = parts[1]
                continue
            generator, size, rnd, ns = parts
            samples.setdefault((generator, int(size)), {})[int(rnd)] = float(ns)
        if samples:
            runs[path] = samples
    order = {p: i for i, p in enumerate(PATH_ORDER)}
    return dict(sorted(runs.items(), key=lambda kv: order.get(kv[0], len(order))))


def load_openssl(directory):
    """{"full": best bytes/s, "no-avx512": best bytes/s} over the runs and block sizes."""
    best = {}
    path = directory / "openssl.txt"
    if not path.exists():
        return best
    for line in path.read_text().splitlines():
        kind, *values = line.split()
        for v in values:
            rate = float(v.rstrip("k")) * (1000 if v.endswith("k") else 1)
            best[kind] = max(best.get(kind, 0.0), rate)
    return best


# Sweep figures are this percentile of a measurement over the rounds: other work on the
# machine only ever slows a batch, so a low percentile is the time of an undisturbed one.
SWEEP_PERCENTILE = 10


class Sweep:
    def __init__(self, runs):
        self.runs = runs

    def sizes(self, path):
        return sorted({n for (_, n) in self.runs[path]})

    def time(self, path, generator, size):
        """The SWEEP_PERCENTILE-th percentile of the ns per call over the rounds."""
        values = self.runs[path].get((generator, size))
        if not values:
            return None
        ordered = sorted(values.values())
        return ordered[(len(ordered) - 1) * SWEEP_PERCENTILE // 100]

    def ratio(self, path, peer, size):
        """fkrng's time ÷ the peer's."""
        a, b = self.time(path, "fkrng", size), self.time(path, peer, size)
        return None if a is None or b is None else a / b

    def step(self, path, smaller, larger):
        """fkrng's throughput at `larger` ÷ at `smaller`."""
        a, b = self.time(path, "fkrng", smaller), self.time(path, "fkrng", larger)
        return None if a is None or b is None else (larger / b) / (smaller / a)


def sweep_tables(sw, openssl, info):
    paths = list(sw.runs)
    first = paths[0]
    facts = machine()
    lines = [f"Run of {info.get('date', 'unknown date')} UTC (commit {info.get('commit', '?')}): "
             f"{facts['CPU']}, {facts['Logical CPUs']} logical CPUs ({facts['SIMD (cpuinfo)']}), "
             f"Linux {facts['Kernel']}, {facts['rustc']}; {info.get('rounds', '?')} rounds per "
             f"path, pinned to CPU {info.get('pinned_cpu', 'none')}; load average "
             f"{info.get('load_before', '?')} before, {info.get('load_after', '?')} after.",
             "",
             f"Time per call (the {SWEEP_PERCENTILE}th percentile over the rounds); fkrng's time "
             "as a multiple of `rand::rng()`'s in the same run in brackets. The `rand::rng()` "
             f"and `ChaCha20Rng` columns are from the {first} run (each path's run measures "
             "them too, and its ratios use its own).",
             ""]
    header = ["request"] + [f"fkrng, {p}" for p in paths] + [f"{g} ({first})" for g in SWEEP_PEERS]
    rows = []
    for n in sw.sizes(first):
        row = [fmt_size(n)]
        for p in paths:
            t = sw.time(p, "fkrng", n)
            x = sw.ratio(p, "rand::rng()", n)
            row.append("–" if t is None else f"{fmt_time(t)} ({x:.2f}×)")
        for g in SWEEP_PEERS:
            row.append(fmt_time(sw.time(first, g, n)))
        rows.append(row)
    lines.append(table(header, rows))
    lines += ["", "Throughput, and in brackets fkrng's throughput ÷ that of the next smaller size:", ""]
    header = ["request"] + [f"fkrng, {p}" for p in paths] + [f"{g} ({first})" for g in SWEEP_PEERS]
    rows = []
    sizes = sw.sizes(first)
    for i, n in enumerate(sizes):
        row = [fmt_size(n)]
        for p in paths:
            t = sw.time(p, "fkrng", n)
            step = sw.step(p, sizes[i - 1], n) if i > 0 else None
            cell = fmt_rate(n / (t * 1e-9)) if t else "–"
            row.append(cell if step is None else f"{cell} ({step:.2f})")
        for g in SWEEP_PEERS:
            t = sw.time(first, g, n)
            row.append(fmt_rate(n / (t * 1e-9)) if t else "–")
        rows.append(row)
    lines.append(table(header, rows))
    if openssl:
        parts = [f"{fmt_rate(openssl['full'])} as it comes" if "full" in openssl else None,
                 f"{fmt_rate(openssl['no-avx512'])} with its AVX-512 code masked off "
                 "(`OPENSSL_ia32cap=\":~0x80010000\"`, AVX-512F and AVX-512VL)" if "no-avx512" in openssl else None]
        version = info.get("openssl", "OpenSSL").split(" (")[0]
        lines += ["", f"`openssl speed -evp chacha20` ({version}), best "
                  "figure of three runs over its block sizes: "
                  + ", ".join(x for x in parts if x) + "."]
    lines += ["", "Targets of this run:", "", table(["target", "measured", "required", "met"],
                                                   sweep_checks(sw, openssl))]
    return "\n".join(lines)


def sweep_checks(sw, openssl):
    rows = []

    def check(what, value, bound, kind, where=""):
        if value is None:
            rows.append([what, "not measured", f"{kind} {bound:g}", "–"])
            return
        ok = value <= bound if kind == "<=" else value >= bound
        rows.append([what, f"{value:.3g}{where}", f"{kind} {bound:g}", "yes" if ok else "**no**"])

    if "avx512" in sw.runs:
        worst = max(((sw.ratio("avx512", "rand::rng()", n), n) for n in sw.sizes("avx512")),
                    key=lambda x: x[0] or 0)
        check("avx512: fkrng's time ÷ rand::rng()'s, largest over the sizes", worst[0],
              SWEEP_RAND_AT_MOST, "<=", f" ({fmt_size(worst[1])})")
    for p in sw.runs:
        sizes = [n for n in sw.sizes(p) if n >= SWEEP_STEP_FROM]
        steps = [(sw.step(p, a, b), a, b) for a, b in zip(sizes, sizes[1:])]
        steps = [s for s in steps if s[0] is not None]
        if steps:
            low = min(steps)
            check(f"{p}: throughput ÷ the next smaller size's, smallest from "
                  f"{fmt_size(SWEEP_STEP_FROM)}", low[0], SWEEP_STEP_AT_LEAST, ">=",
                  f" ({fmt_size(low[1])} to {fmt_size(low[2])})")
    # Against the cipher's ceiling on this CPU: the widest path this CPU ran.
    widest = next((p for p in ("avx512", "avx2", "portable") if p in sw.runs), None)
    if "full" in openssl and widest:
        t = sw.time(widest, "fkrng", 1 << 20)
        value = None if t is None else ((1 << 20) / (t * 1e-9)) / openssl["full"]
        check(f"{widest}: 1 MiB fills ÷ openssl's best", value, SWEEP_OPENSSL_AT_LEAST, ">=")
    return rows


def sweep_plot(sw, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    paths = list(sw.runs)
    first = paths[0]
    sizes = sw.sizes(first)
    # Left: the whole sweep (log scale); right: the sizes from 512 B to 4 KiB, evenly
    # spaced, so that 991, 992, 993, 1,024 and 1,025 bytes each have a place of their own.
    near = [n for n in sizes if 512 <= n <= 4096]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), dpi=100, sharex="col",
                             gridspec_kw={"height_ratios": [3, 2], "width_ratios": [3, 2]})

    def gib(n, t):
        return None if t is None else n / (t * 1e-9) / (1 << 30)

    for col, ns in enumerate((sizes, near)):
        top, bottom = axes[0][col], axes[1][col]
        xs = ns if col == 0 else list(range(len(ns)))
        for p in paths:
            top.plot(xs, [gib(n, sw.time(p, "fkrng", n)) for n in ns], "-", marker="o",
                     markersize=3, label=f"fkrng, {p}")
            bottom.plot(xs, [sw.ratio(p, "rand::rng()", n) for n in ns], "-", marker="o",
                        markersize=3, label=f"fkrng, {p}")
        for g in SWEEP_PEERS:
            top.plot(xs, [gib(n, sw.time(first, g, n)) for n in ns], "--", marker=".",
                     markersize=3, label=f"{g} ({first} run)")
        bottom.axhline(1.0, color="grey", linewidth=0.8)
        bottom.axhline(SWEEP_RAND_AT_MOST, color="grey", linewidth=0.8, linestyle=":",
                       label=f"{SWEEP_RAND_AT_MOST}× (target on avx512)")
        for ax in (top, bottom):
            ax.axvline(992 if col == 0 else ns.index(992) if 992 in ns else 0, color="grey",
                       linewidth=0.8, linestyle=":")
            ax.grid(True, alpha=0.3)
        if col == 0:
            for ax in (top, bottom):
                ax.set_xscale("log", base=2)
                ax.minorticks_off()
            ticks = [n for n in sizes if n & (n - 1) == 0][::2]
            top.set_ylabel("throughput (GiB/s, one thread)")
            bottom.set_ylabel("fkrng's time ÷ rand::rng()'s")
            top.set_title("every size, 1 B to 1 MiB")
            top.legend(fontsize=8)
            bottom.legend(fontsize=8)
            bottom.set_xticks(ticks)
            bottom.set_xticklabels([fmt_size(n).replace(" ", "\u00a0") for n in ticks],
                                   fontsize=7, rotation=45)
        else:
            top.set_title("512 B to 4 KiB, each size of the sweep")
            bottom.set_xticks(xs)
            bottom.set_xticklabels([fmt_size(n).replace(" ", "\u00a0") for n in ns],
                                   fontsize=7, rotation=45)
        bottom.set_xlabel("request size (dotted line: 992 B, the buffer)")
    fig.suptitle("fkrng::fill by request size on each keystream path")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return True


def sweep_main(args, out):
    sw = Sweep(load_sweep(args.sweep))
    if not sw.runs:
        sys.exit(f"bench-report: no size sweep results under {args.sweep}")
    info = run_info(args.sweep)
    openssl = load_openssl(args.sweep)
    plot_path = args.plot or ROOT / "docs" / "img" / "size-sweep.png"
    plotted = sweep_plot(sw, plot_path)
    if not plotted:
        print("bench-report: note: matplotlib not found, plot not drawn "
              "(apt-get install python3-matplotlib, or pip install matplotlib)", file=sys.stderr)
    rendered = {SWEEP_REGION: lambda: sweep_tables(sw, openssl, info)}
    doc = args.doc.read_text()
    others = {m.group(1) for m in REGION.finditer(doc)} - {SWEEP_REGION}
    text, seen = fill_regions(doc, rendered, keep=others)
    if SWEEP_REGION not in seen:
        sys.exit(f"bench-report: {args.doc} has no region {SWEEP_REGION}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"bench-report: wrote the size sweep to {out}" + (f" and {plot_path}" if plotted else ""))
    for what, measured, bound, ok in sweep_checks(sw, openssl):
        if ok != "yes":
            print(f"bench-report: target not met or not measured: {what}: {measured} (required {bound})")



def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--criterion", type=Path,
                    default=Path(os.environ.get("CRITERION_HOME", ROOT / "target" / "criterion")))
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--targets", type=Path, default=ROOT / "docs" / "bench-targets.toml")
    ap.add_argument("--plot", type=Path)
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--no-readme", action="store_true")
    ap.add_argument("--sweep", type=Path)
    args = ap.parse_args()
    out = args.out or args.doc
    if args.sweep is not None:
        sweep_main(args, out)
        return

    results = load(args.criterion)
    if not results:
        sys.exit(f"bench-report: no results of benches/compare.rs under {args.criterion}")
    rep = Report(results)
    rep.check_targets(tomllib.loads(args.targets.read_text())["target"])
    info = run_info(args.criterion)

    args.plot = args.plot or ROOT / "docs" / "img" / "throughput.png"
    plotted = plot(results, args.plot)
    if not plotted:
        print("bench-report: note: matplotlib not found, plot not drawn "
              "(apt-get install python3-matplotlib, or pip install matplotlib)", file=sys.stderr)

    rendered = regions(rep, info)
    text, seen = fill_regions(args.doc.read_text(), rendered, keep={SWEEP_REGION})
    if not seen:
        sys.exit(f"bench-report: {args.doc} has no marked regions")
    for name in sorted(set(rendered) - seen):
        if rendered[name]() is not None:
            print(f"bench-report: note: measured but not shown (no region {name} in {args.doc})",
                  file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"bench-report: wrote {len(seen)} regions of {out}" + (f" and {args.plot}" if plotted else ""))

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
