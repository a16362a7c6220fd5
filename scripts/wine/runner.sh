#!/usr/bin/env bash
# Cargo runner for x86_64-pc-windows-gnu (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER): runs
# EXE under wine64 in a private prefix under target/, with the ProcessPrng stand-in
# (bcryptprimitives.c, built here once) copied beside EXE.
#
# Usage: scripts/wine/runner.sh EXE [ARG...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=$here/../../target/wine
mkdir -p "$state"
state=$(cd "$state" && pwd)
export WINEPREFIX=$state/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wine64=$(command -v wine64 || echo /usr/lib/wine/wine64)
[[ -x $wine64 ]] || { echo "runner.sh: wine64 is missing (apt-get install wine64)" >&2; exit 1; }
dll=$state/bcryptprimitives.dll
# First use: build the DLL and create the prefix, once, whatever runs at the same time
# (wineboot's first start takes tens of seconds).
(
  flock 9
  if [[ ! -f $dll || $here/bcryptprimitives.c -nt $dll ]]; then
    x86_64-w64-mingw32-gcc -O2 -shared -o "$dll.tmp" "$here/bcryptprimitives.c" -ladvapi32
    mv "$dll.tmp" "$dll"
  fi
  if [[ ! -f $WINEPREFIX/system.reg ]]; then
    "$wine64" wineboot --init >/dev/null 2>&1 || true
    wineserver -w 2>/dev/null || true
  fi
) 9>"$state/lock"
exe=$1
shift
cp -f "$dll" "$(dirname "$exe")/bcryptprimitives.dll"
# A server that outlives each test binary by 30 s: a binary started while the last one's
# server was shutting down lost its connection ("wine client error: recvmsg"). Where one is
# already running this one exits at once.
wineserver -p30 2>/dev/null || true
exec "$wine64" "$exe" "$@"
