#!/usr/bin/env python3
"""Checks the platform table of docs/ASSURANCE.md against what scripts/platforms.sh ran.

Usage: scripts/check-platform-table.py SUMMARY [ASSURANCE.md]

SUMMARY holds the `platform: <target> <how> <path> binaries=<n> tests=<n> skipped=<slug>`
lines of a scripts/platforms.sh run (it writes them to target/platforms/summary.txt). The
table has one row per such line:

    | `<target>` | <how> | <path> | <binaries> | `<slug>`: why ... |

Fails (exit 1), naming each difference, when a run is missing from the table or the table
lists one that did not run, when the number of test binaries or the skipped slug differs,
or when a run that executes tests passed none. Test counts are printed, not compared: they
grow with every test added.

A row whose <how> is `not-run` is the outcome on a machine that cannot run that path (the
AVX-512 kernel on a CPU without AVX-512F): it and the `pinned` row of the same target and
path are alternatives, and exactly one of them must have run.
"""

import re
import sys

TABLE_START = "<!-- platform table: checked by scripts/check-platform-table.py -->"


def parse_summary(path):
    runs = {}
    pattern = re.compile(
        r"^platform: (\S+) (\S+) (\S+) binaries=(\d+) tests=(\d+) skipped=(\S+)$"
    )
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line.startswith("platform: "):
                continue
            m = pattern.match(line)
            if not m:
                sys.exit(f"unreadable summary line: {line}")
            target, how, kpath, binaries, tests, skipped = m.groups()
            runs[(target, how, kpath)] = (int(binaries), int(tests), skipped)
    return runs


def parse_table(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if TABLE_START not in text:
        sys.exit(f"{path}: no line '{TABLE_START}'")
    rows = {}
    lines = text.split(TABLE_START, 1)[1].lstrip("\n").splitlines()
    for line in lines[2:]:  # header and separator
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5:
            sys.exit(f"{path}: platform row without 5 cells: {line}")
        target, how, kpath, binaries, skipped = cells
        m = re.match(r"^`([^`]+)`", skipped)
        if not m:
            sys.exit(f"{path}: skipped cell must start with a `slug`: {line}")
        rows[(target.strip("`"), how, kpath)] = (int(binaries), m.group(1))
    if not rows:
        sys.exit(f"{path}: the platform table is empty")
    return rows


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    runs = parse_summary(sys.argv[1])
    table = parse_table(sys.argv[2] if len(sys.argv) == 3 else "docs/ASSURANCE.md")
    errors = []
    for key, (binaries, tests, skipped) in sorted(runs.items()):
        name = " ".join(key)
        print(f"{name}: {binaries} test binaries, {tests} tests passed, skipped: {skipped}")
        if key not in table:
            errors.append(f"{name}: ran, but has no row in the platform table")
            continue
        want_binaries, want_skipped = table[key]
        if binaries != want_binaries:
            errors.append(f"{name}: {binaries} test binaries ran, the table says {want_binaries}")
        if skipped != want_skipped:
            errors.append(f"{name}: skipped '{skipped}', the table says '{want_skipped}'")
        if binaries > 0 and tests == 0:
            errors.append(f"{name}: test binaries ran but no test passed")
    for key in sorted(table.keys() - runs.keys()):
        target, how, kpath = key
        alternatives = [
            k
            for k in runs
            if k[0] == target and k[2] == kpath and {how, k[1]} == {"pinned", "not-run"}
        ]
        if not alternatives:
            errors.append(f"{' '.join(key)}: in the platform table, but did not run")
    for target, how, kpath in sorted(runs):
        if how == "not-run" and (target, "pinned", kpath) in runs:
            errors.append(f"{target} {kpath}: recorded both as run and as not run")
    for e in errors:
        print(f"platform table mismatch: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    print(f"platform table: all {len(runs)} rows match the run")


if __name__ == "__main__":
    main()
