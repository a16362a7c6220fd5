#!/usr/bin/env bash
# Counts the getrandom system calls of 1,000,000 steady-state reads of 16 bytes
# (benches/harness/small_reads.rs, about 15.3 MiB) under strace, and the heap allocations the reads
# make, and fails unless:
#   - the 36-byte seed reads (32-byte key plus a 4-byte budget draw) number 8 to 16: the
#     thread's first seeding plus one reseed per 1 to 2 MiB of keystream (16,129 refills of
#     1024 bytes = 15.75 MiB, so 7 to 15 reseeds);
#   - all other getrandom calls (the Rust runtime's, the getrandom crate's probe) number at
#     most 2;
#   - the reads after the first make no heap allocation;
#   - no read opens a file under /proc: the files the program opens there with its reads are
#     those it opens without any (the C library's and the Rust runtime's own).
# Usage: scripts/count-syscalls.sh [READS]   (Linux only; needs strace)
set -euo pipefail
cd "$(dirname "$0")/.."

reads=${1:-1000000}
if [[ "$(uname -s)" != Linux ]]; then
    echo "count-syscalls: Linux only (strace); skipped"
    exit 0
fi
if ! command -v strace >/dev/null; then
    echo "count-syscalls: strace is missing (Debian: apt-get install strace)" >&2
    exit 1
fi

cargo build --release --quiet --example small_reads
bin=target/release/examples/small_reads
log=$(mktemp)
trap 'rm -f "$log"' EXIT

out=$(strace -f -qq -e trace=getrandom -e signal=none -o "$log" "$bin" "$reads" 16)
echo "count-syscalls: $out"
allocations=$(sed -n 's/.*allocations=\([0-9]*\).*/\1/p' <<<"$out")
total=$(grep -c 'getrandom(' "$log" || true)
seeds=$(grep -c 'getrandom(.*, 36, [A-Z0-9_|]*) *= 36' "$log" || true)
others=$((total - seeds))
echo "count-syscalls: getrandom calls: $total ($seeds seed reads of 36 bytes, $others others)"

# The bounds hold for $reads = 1,000,000; scale them for other counts.
keystream=$(( (reads * 16 + 991) / 992 * 1024 ))
mib=$((1 << 20))
max_seeds=$(( 1 + keystream / mib ))
min_seeds=$(( 1 + keystream / (2 * mib) ))
status=0

# glibc 2.41 and later route getrandom() through the vDSO where the kernel offers it, and
# those calls never reach strace; the lower bound only holds where each call is a syscall.
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
vdso_libc=no
if [[ -n "$glibc" ]] && printf '2.41\n%s\n' "$glibc" | sort -V -C; then
    vdso_libc=yes
fi

if (( seeds > max_seeds )); then
    echo "count-syscalls: FAIL: $seeds seed reads, at most $max_seeds expected" >&2
    status=1
fi
if (( seeds < min_seeds )); then
    if [[ $vdso_libc == yes ]]; then
        echo "count-syscalls: note: glibc $glibc may serve getrandom from the vDSO; lower bound ($min_seeds) not checked"
    else
        echo "count-syscalls: FAIL: $seeds seed reads, at least $min_seeds expected (first seeding and periodic reseeds)" >&2
        status=1
    fi
fi
if (( others > 2 )); then
    echo "count-syscalls: FAIL: $others getrandom calls besides seeding, at most 2 expected" >&2
    grep -v 'getrandom(.*, 36, ' "$log" >&2 || true
    status=1
fi
if [[ "$allocations" != 0 ]]; then
    echo "count-syscalls: FAIL: $allocations heap allocations in steady-state reads" >&2
    status=1
fi
# Files opened under /proc, without fkrng (0 reads) and with a first read and 999 more.
proc_opens() {
    strace -f -qq -e trace=open,openat -e signal=none -o "$log" "$bin" "$1" 16 >/dev/null
    grep -o '"/proc/[^"]*"' "$log" | sort -u | tr '\n' ' ' || true
}
without=$(proc_opens 0)
with=$(proc_opens 1000)
echo "count-syscalls: files opened under /proc: without fkrng [${without% }], with its reads [${with% }]"
if [[ "$with" != "$without" ]]; then
    echo "count-syscalls: FAIL: fkrng's reads opened files under /proc" >&2
    status=1
fi

if (( status == 0 )); then
    echo "count-syscalls: ok ($min_seeds..$max_seeds seed reads allowed, at most 2 others, no allocations)"
fi
exit $status
