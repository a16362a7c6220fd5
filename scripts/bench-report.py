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
  --doc   the document whose regions are filled (default docs/BENCHMARKS.md)
  --out   where the filled document goes (default: --doc itself)
The plot needs matplotlib; without it the tables are still written and a note is printed.
"""

import argparse
import json
import os
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


def fill_regions(doc, rendered):
    """`doc` with every marked region replaced by its rendering; exits on an unknown one."""
    seen = set()

    def one(m):
        name = m.group(1)
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--criterion", type=Path,
                    default=Path(os.environ.get("CRITERION_HOME", ROOT / "target" / "criterion")))
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--targets", type=Path, default=ROOT / "docs" / "bench-targets.toml")
    ap.add_argument("--plot", type=Path, default=ROOT / "docs" / "img" / "throughput.png")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--no-readme", action="store_true")
    args = ap.parse_args()
    out = args.out or args.doc

    results = load(args.criterion)
    if not results:
        sys.exit(f"bench-report: no results of benches/compare.rs under {args.criterion}")
    rep = Report(results)
    rep.check_targets(tomllib.loads(args.targets.read_text())["target"])
    info = run_info(args.criterion)

    plotted = plot(results, args.plot)
    if not plotted:
        print("bench-report: note: matplotlib not found, plot not drawn "
              "(apt-get install python3-matplotlib, or pip install matplotlib)", file=sys.stderr)

    rendered = regions(rep, info)
    text, seen = fill_regions(args.doc.read_text(), rendered)
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
