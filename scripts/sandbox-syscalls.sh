#!/usr/bin/env bash
# The system calls fkrng makes in each phase of a process's life, checked against the table
# in docs/SECURITY.md ("Sandboxes and seccomp filters"): benches/harness/syscall_phases.rs
# runs under `strace -f`, writing a marker before each phase on the thread that runs it;
# the calls each thread makes after its marker belong to that phase. Fails unless, for
# every phase, the calls seen are the table's "always" calls plus at most its "only if"
# calls, unless every PROT_, MAP_ and MADV_ flag of a phase's mmap, mprotect and madvise
# calls is named in its row, and unless no phase makes a `sigaltstack` or `rseq` call (fkrng
# makes neither; the C library and the Rust runtime make theirs at thread start and exit,
# outside the phases).
#
# Usage: scripts/sandbox-syscalls.sh   (Linux; needs strace)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "$(uname -s)" != Linux ]]; then
  echo "sandbox-syscalls: Linux only (strace); skipped"
  exit 0
fi
command -v strace >/dev/null || {
  echo "sandbox-syscalls: strace is missing (apt-get install strace)" >&2
  exit 1
}

cargo build --release --quiet --example syscall_phases
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
strace -f -qq -e signal=none -o "$trace" target/release/examples/syscall_phases 2>/dev/null

python3 - "$trace" docs/SECURITY.md <<'EOF'
import re, sys
trace, doc = sys.argv[1:]

# Calls per phase, attributed by thread: a marker `write(2, "phase NAME\n", ...)` starts
# NAME on the thread that writes it. Phases named after-* hold the harness's own calls
# (starting and ending threads) and are not checked.
phase, seen, flags = {}, {}, {}
# strace releases older than Linux 6.11's MAP_DROPPABLE print it as a number.
flag = re.compile(r"\b(?:PROT|MAP|MADV)_[A-Z]+(?:_[A-Z]+)*\b")
def flags_of(call):
    named = set(flag.findall(call))
    if re.search(r", 0x8(?: /\* MAP_\?\?\? \*/)?\|MAP_ANONYMOUS", call):
        named.add("MAP_DROPPABLE")
    return named
for line in open(trace):
    m = re.match(r"^(\d+) +(.*)$", line.rstrip("\n"))
    if not m:
        continue
    pid, rest = m.groups()
    mark = re.match(r'write\(2, "phase ([a-z-]+)\\n"', rest)
    if mark:
        phase[pid] = mark.group(1)
        continue
    resumed = re.match(r"<\.\.\. (\w+) resumed>", rest)
    name = resumed.group(1) if resumed else re.match(r"(\w+)\(", rest)
    if name is None or pid not in phase:
        continue
    name = name if isinstance(name, str) else name.group(1)
    if resumed:
        continue  # counted at its start
    seen.setdefault(phase[pid], set()).add(name)
    if name in ("mmap", "mprotect", "madvise"):
        flags.setdefault(phase[pid], set()).update(flags_of(rest))

# The table: | phase | always | only if |, between the marker comment and the next blank line.
text = open(doc).read()
start = text.index("<!-- sandbox syscalls: checked by scripts/sandbox-syscalls.sh -->")
rows = {}
for line in text[start:].splitlines()[3:]:
    if not line.startswith("|"):
        break
    # Cells split at the pipes that are not escaped (`PROT_READ\|PROT_WRITE` is one).
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    key = re.search(r"`([a-z-]+)`", cells[0]).group(1)
    calls = lambda cell: set(c for c in re.findall(r"`(\w+)`", cell) if not flag.match(c))
    rows[key] = (calls(cells[1]), calls(cells[2]), set(flag.findall(line)))

status = 0
never = {"sigaltstack", "rseq"}
for key, got in sorted(seen.items()):
    if key.startswith("after-") or key in ("start", "end"):
        continue
    if got & never:
        print(f"sandbox-syscalls: FAIL: {key}: {sorted(got & never)} made (fkrng makes neither)")
        status = 1
for key, (always, only_if, named) in rows.items():
    got = seen.get(key, set())
    shown = ' '.join(sorted(got)) or '(none)'
    print(f"sandbox-syscalls: {key}: {shown}; flags: {' '.join(sorted(flags.get(key, ()))) or '(none)'}")
    unnamed = flags.get(key, set()) - named
    if unnamed:
        print(f"sandbox-syscalls: FAIL: {key}: flags {sorted(unnamed)} are not named in the table")
        status = 1
    if not always <= got:
        print(f"sandbox-syscalls: FAIL: {key}: the table's {sorted(always - got)} were not made")
        status = 1
    if not got <= always | only_if:
        print(f"sandbox-syscalls: FAIL: {key}: {sorted(got - always - only_if)} are not in the table")
        status = 1
missing = set(k for k in seen if not k.startswith("after-") and k not in ("start", "end")) - set(rows)
if missing:
    print(f"sandbox-syscalls: FAIL: phases without a row: {sorted(missing)}")
    status = 1
if status == 0:
    print(f"sandbox-syscalls: ok: {len(rows)} phases match docs/SECURITY.md")
sys.exit(status)
EOF
