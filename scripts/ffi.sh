#!/usr/bin/env bash
# The C ABI and the getrandom backend, checked from outside Rust:
#   C ABI (ffi/, libfkrng_ffi.a and libfkrng_ffi.so):
#     - a fully static C program (libfkrng_ffi.a and glibc's libc.a): fills of 1 to 2048
#       bytes, EINVAL, integers, arc4random_uniform, a forked child, a second thread;
#     - errno left as the caller set it by every call that succeeds: the process's first
#       call (the VMClock probe), reseeds, the reads after them, a new thread and a forked
#       child, once plainly and once with getrandom failing with ENOSYS (strace fault
#       injection: the /dev/urandom fallback);
#     - a thread with a deferred cancel pending calling arc4random (preloaded) and
#       fkrng_fill at the process's first read, plainly and on the /dev/urandom fallback:
#       the call returns, and the thread is cancelled at its next cancellation point;
#       with getrandom failing, arc4random aborts with its message, not cancelled inside;
#     - every getrandom system call failing (strace fault injection): -1 and EIO, the
#       buffer zeroed, and a one-line message and SIGABRT from the void functions;
#     - a process that exits while 16 threads read, 8 of them making their first reads;
#     - a C program that dlopens libfkrng_ffi.so (no static-TLS failure) and dlcloses it;
#     - a Rust library embedding fkrng (ffi/plugin-check/, no -z nodelete), dlclosed while a
#       thread that read through it lives, then that thread's exit: the host survives;
#       2,000 cycles of dlopen, a read on a new thread and dlclose: as many free pthread
#       keys and mappings after as before, VmRSS up by under 1 MiB; a dlclose while the
#       reader runs a host key destructor (a key made before the library's, one after):
#       the library is unloaded and the host survives the thread's exit;
#     - a read abandoned by a signal handler's siglongjmp: the thread that takes its state
#       next makes at most 20 getrandom system calls for 100,000 reads;
#     - Python ctypes; README's C example (linked statically and shared) and Python example;
#     - an unmodified C program making 1,000,000 arc4random_buf(16) calls under
#       LD_PRELOAD=libfkrng_ffi.so and strace: at most 20 getrandom system calls.
#   getrandom backend (ffi/getrandom-check/, a workspace of its own, built twice in its own
#   target directories: the getrandom crate's default backend, and fkrng's
#   `getrandom_backend` feature with --cfg getrandom_backend="custom" and fkrng's test hooks,
#   --cfg fkrng_test_hooks, to count its one-off reads):
#     - 1,000,000 16-byte getrandom::fill calls, through getrandom 0.4 and 0.3, under strace:
#       at most 20 getrandom system calls through fkrng;
#     - fkrng::getrandom_backend_serves(): true with the cfg, false in a build with fkrng's
#       feature whose RUSTFLAGS lack it;
#     - 1,000,000 uuid v4 values, all distinct; a forked child's bytes differ from the
#       parent's; fills from a signal handler and from a thread-local destructor take fkrng's
#       one-off path.
#   Benchmarks (not with --short): release builds timed without strace; the lines
#   docs/BENCHMARKS.md's "C ABI and getrandom backend" section records.
# Usage: scripts/ffi.sh [--short]   (Linux x86-64 with glibc; needs cc, python3, strace)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
[[ ${1:-} == --short ]] && mode=short
if [[ "$(uname -s)" != Linux ]]; then
  echo "ffi: Linux only; skipped"
  exit 0
fi

# Debian packages this script runs (.ci/run installs them): it fails, naming them, when
# they are missing, as the other checking scripts do.
need=()
command -v strace >/dev/null || need+=(strace)
command -v cc >/dev/null || need+=(gcc)
command -v python3 >/dev/null || need+=(python3)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
if [[ ${#need[@]} -gt 0 ]]; then
  echo "ffi: missing packages: ${need[*]} (apt-get install ${need[*]})" >&2
  exit 1
fi

max_syscalls=20
calls=1000000
work=$PWD/target/ffi
mkdir -p "$work"
cflags=(-O2 -Wall -Wextra -Werror -Iffi/include)

# getrandom system calls in an `strace -c` summary file (0 if none).
syscalls() {
  awk '$NF == "getrandom" { print $4; found = 1 } END { if (!found) print 0 }' "$1"
}
# check_at_most WHAT COUNT
check_at_most() {
  if (($2 > max_syscalls)); then
    echo "ffi: FAILED: $1: $2 getrandom system calls, at most $max_syscalls expected" >&2
    exit 1
  fi
}

# ---- the C ABI ----------------------------------------------------------------------------
profile=debug
cargo_profile=()
if [[ $mode == full ]]; then
  profile=release
  cargo_profile=(--release)
fi
echo "== C ABI: cargo build -p fkrng-ffi ${cargo_profile[*]}"
cargo build --quiet -p fkrng-ffi "${cargo_profile[@]}"
lib=$PWD/target/$profile
so=$lib/libfkrng_ffi.so

echo "-- a fully static C program (libfkrng_ffi.a, glibc's libc.a)"
# ld warns that the Rust standard library's getpwuid_r and getaddrinfo need glibc's shared
# libraries at run time when linked statically; fkrng calls neither. The log is shown on
# failure.
cc "${cflags[@]}" -static ffi/tests/c/static_test.c "$lib/libfkrng_ffi.a" -lpthread -ldl -lm \
  -o "$work/static_test" 2>"$work/static_link.log" || { cat "$work/static_link.log"; exit 1; }
file -L "$work/static_test" | grep -q 'statically linked' ||
  { echo "ffi: FAILED: static_test is not statically linked" >&2; exit 1; }
# Exactly one arc4random_buf, ours: glibc's libc.a member was not pulled in beside it.
[[ $(nm "$work/static_test" | grep -c ' T arc4random_buf$') == 1 ]] ||
  { echo "ffi: FAILED: static_test holds more than one arc4random_buf" >&2; exit 1; }
"$work/static_test"

echo "-- the process exits while 16 threads read (fkrng's unload code runs at exit), 20 times"
cc "${cflags[@]}" ffi/tests/c/exit_test.c "$lib/libfkrng_ffi.a" -lpthread -ldl -lm -o "$work/exit_test"
for _ in {1..20}; do "$work/exit_test"; done

echo "-- errno unchanged by calls that succeed (plainly, and with getrandom failing with ENOSYS)"
cc "${cflags[@]}" ffi/tests/c/errno_test.c "$lib/libfkrng_ffi.a" -lpthread -ldl -lm \
  -o "$work/errno_test"
"$work/errno_test" >"$work/errno_test.log" || { cat "$work/errno_test.log"; exit 1; }
strace -f -qq -o /dev/null -e trace=getrandom -e inject=getrandom:error=ENOSYS \
  "$work/errno_test" >"$work/errno_test.enosys.log" || { cat "$work/errno_test.enosys.log"; exit 1; }
tail -n 1 "$work/errno_test.log"

echo "-- a pending pthread_cancel: arc4random (preloaded) and fkrng_fill return, then the thread is cancelled"
cc "${cflags[@]}" ffi/tests/c/cancel_test.c -o "$work/cancel_test" -L"$lib" -lfkrng_ffi \
  -Wl,-rpath,"$lib" -lpthread -ldl
for function in arc4random fkrng_fill; do
  # The process's first read (the VMClock probe), then the /dev/urandom fallback.
  LD_PRELOAD=$so "$work/cancel_test" "$function"
  LD_PRELOAD=$so strace -f -qq -o /dev/null -e trace=getrandom -e inject=getrandom:error=ENOSYS \
    "$work/cancel_test" "$function"
done
# With the OS source failing, arc4random cannot return: the pending cancel must not act
# inside it either (at a write of the message), so the process aborts with its one line.
status=0
LD_PRELOAD=$so strace -f -qq -o /dev/null -e trace=getrandom -e inject=getrandom:error=EIO \
  "$work/cancel_test" arc4random >/dev/null 2>"$work/cancel_eio.stderr" || status=$?
if [[ $status -ne 134 ]] || ! grep -qx "fkrng: arc4random: the OS random source failed: Input/output error (os error 5)" \
  "$work/cancel_eio.stderr"; then
  cat "$work/cancel_eio.stderr"
  echo "ffi: FAILED: arc4random with a cancel pending and getrandom failing: exit $status, not an abort with its message" >&2
  exit 1
fi
echo "ffi: arc4random with a cancel pending and getrandom failing: aborted with its message"

echo "-- every getrandom system call failing with EIO (strace -e inject)"
cc "${cflags[@]}" ffi/tests/c/fail_test.c "$lib/libfkrng_ffi.a" -lpthread -ldl -lm \
  -o "$work/fail_test"
strace -f -qq -o /dev/null -e trace=getrandom -e inject=getrandom:error=EIO \
  "$work/fail_test" 2>"$work/fail_test.stderr" || { cat "$work/fail_test.stderr"; exit 1; }
for line in "fkrng: fkrng_u32: the OS random source failed: Input/output error (os error 5)" \
  "fkrng: arc4random_buf: the OS random source failed: Input/output error (os error 5)"; do
  grep -qxF "$line" "$work/fail_test.stderr" ||
    { cat "$work/fail_test.stderr"; echo "ffi: FAILED: no abort message '$line'" >&2; exit 1; }
done
echo "ffi: abort messages: $(grep -c '^fkrng: ' "$work/fail_test.stderr") one-line messages, as expected"

echo "-- dlopen of libfkrng_ffi.so"
cc "${cflags[@]}" ffi/tests/c/dlopen_test.c -o "$work/dlopen_test" -ldl -lpthread
"$work/dlopen_test" "$so"
readelf -d "$so" | grep -q 'NODELETE' ||
  { echo "ffi: FAILED: libfkrng_ffi.so lacks -z nodelete" >&2; exit 1; }

echo "-- a Rust library embedding fkrng (no -z nodelete), dlclosed while a reader lives"
(cd ffi/plugin-check && cargo build --quiet --locked "${cargo_profile[@]}" --target-dir "$work/plugin")
plugin=$work/plugin/$profile/libfkrng_plugin_check.so
cc "${cflags[@]}" ffi/tests/c/plugin_dlclose_test.c -o "$work/plugin_dlclose_test" -ldl -lpthread
"$work/plugin_dlclose_test" "$plugin"
echo "-- that library loaded, read through on a new thread and unloaded 2,000 times"
cc "${cflags[@]}" ffi/tests/c/plugin_cycle_test.c -o "$work/plugin_cycle_test" -ldl -lpthread
"$work/plugin_cycle_test" "$plugin" 2000
echo "-- that library unloaded while a reader runs its pthread key destructors"
cc "${cflags[@]}" ffi/tests/c/plugin_key_dtor_test.c -o "$work/plugin_key_dtor_test" -ldl -lpthread
"$work/plugin_key_dtor_test" "$plugin"

echo "-- Python ctypes"
python3 - "$so" <<'EOF'
import ctypes, errno, os, sys

lib = ctypes.CDLL(sys.argv[1], use_errno=True)
lib.fkrng_fill.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
lib.fkrng_fill.restype = ctypes.c_int
lib.fkrng_u64.restype = ctypes.c_uint64
lib.arc4random_uniform.argtypes = [ctypes.c_uint32]
lib.arc4random_uniform.restype = ctypes.c_uint32

a, b = ctypes.create_string_buffer(32), ctypes.create_string_buffer(32)
assert lib.fkrng_fill(a, 32) == 0 and lib.fkrng_fill(b, 32) == 0
assert a.raw != b.raw and a.raw != bytes(32)
assert lib.fkrng_fill(None, 16) == -1 and ctypes.get_errno() == errno.EINVAL
assert len({lib.fkrng_u64() for _ in range(1000)}) == 1000
faces = [lib.arc4random_uniform(6) for _ in range(6000)]
assert set(faces) == set(range(6)), sorted(set(faces))
pid = os.fork()
if pid == 0:
    c = ctypes.create_string_buffer(32)
    os._exit(0 if lib.fkrng_fill(c, 32) == 0 and c.raw != a.raw else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
print("ctypes: fills, EINVAL, 1000 distinct u64, arc4random_uniform(6), fork: ok")
EOF

echo "-- README's C example (static and shared) and its Python example"
# The blocks as README shows them; the Python one loads this run's library.
awk '/^```c$/ { f = 1; next } /^```$/ { f = 0 } f' README.md >"$work/readme_example.c"
awk '/^```python$/ { f = 1; next } /^```$/ { f = 0 } f' README.md >"$work/readme_example.py"
[[ -s $work/readme_example.c && -s $work/readme_example.py ]] ||
  { echo "ffi: FAILED: README.md has no C or no Python block" >&2; exit 1; }
# Its static link line names the libraries the header asks for, as the one below does.
grep -qF 'libfkrng_ffi.a -lpthread -ldl -lm' "$work/readme_example.c" ||
  { echo "ffi: FAILED: README's static link line lacks -lpthread -ldl -lm" >&2; exit 1; }
grep -qF '"target/release/libfkrng_ffi.so"' "$work/readme_example.py" ||
  { echo "ffi: FAILED: README's Python example loads another path" >&2; exit 1; }
cc "${cflags[@]}" "$work/readme_example.c" "$lib/libfkrng_ffi.a" -lpthread -ldl -lm \
  -o "$work/readme_example_static"
cc "${cflags[@]}" "$work/readme_example.c" -L"$lib" -lfkrng_ffi -o "$work/readme_example_shared"
"$work/readme_example_static"
LD_LIBRARY_PATH=$lib "$work/readme_example_shared"
sed "s|\"target/release/libfkrng_ffi.so\"|\"$so\"|" "$work/readme_example.py" |
  python3 - || { echo "ffi: FAILED: README's Python example" >&2; exit 1; }

echo "-- a read abandoned by siglongjmp slows only its own thread"
# The second thread takes the slot of the first, whose read a signal handler jumped out
# of (busy flag left set): its reads must come from the state (one seed), not one system
# call each.
cc "${cflags[@]}" ffi/tests/c/abandon_test.c "$lib/libfkrng_ffi.a" -lpthread -ldl -lm \
  -o "$work/abandon_test"
abandon_reads=100000
rm -f "$work"/abandon.strace.*
tid=$(strace -ff -qq -e trace=getrandom -o "$work/abandon.strace" "$work/abandon_test" "$abandon_reads")
n=$(grep -c '^getrandom' "$work/abandon.strace.$tid" || true)
echo "ffi: abandoned read: the next thread made $n getrandom system calls for $abandon_reads reads"
check_at_most "reads of the thread after an abandoned read" "$n"

echo "-- LD_PRELOAD: $calls arc4random_buf(16) calls of a program built against glibc"
cc "${cflags[@]}" ffi/tests/c/preload_test.c -o "$work/preload_test" -ldl
LD_PRELOAD=$so strace -f -qq -c -e trace=getrandom -o "$work/preload.strace" \
  "$work/preload_test" "$calls" --expect-fkrng
n=$(syscalls "$work/preload.strace")
echo "ffi: LD_PRELOAD=libfkrng_ffi.so: $n getrandom system calls for $calls calls"
check_at_most "arc4random_buf under LD_PRELOAD" "$n"
# The same program on glibc's arc4random_buf, for comparison (glibc 2.36 to 2.40 make one
# system call per call; later versions may use the vDSO, which strace does not see).
strace -f -qq -c -e trace=getrandom -o "$work/glibc.strace" "$work/preload_test" 100000
echo "ffi: glibc's arc4random_buf: $(syscalls "$work/glibc.strace") getrandom system calls for 100000 calls"

# ---- the getrandom backend ----------------------------------------------------------------
echo "== getrandom backend: ffi/getrandom-check, default backend and fkrng's"
check_dir=ffi/getrandom-check
default_target=$PWD/target/getrandom-check/default
fkrng_target=$PWD/target/getrandom-check/fkrng
plain_target=$PWD/target/getrandom-check/fkrng-plain
custom=$(printf -- '--cfg\x1fgetrandom_backend="custom"')
# The flags in the environment replace the config files' (.cargo/test-hooks.toml is not
# read here): the build that counts fkrng's one-off reads names the hooks' cfg itself.
hooked=$(printf -- '%s\x1f--cfg\x1ffkrng_test_hooks' "$custom")
(cd "$check_dir" && cargo build --quiet --release --locked --target-dir "$default_target")
(cd "$check_dir" && CARGO_ENCODED_RUSTFLAGS=$hooked \
  cargo build --quiet --release --locked --features fkrng --target-dir "$fkrng_target")
default_bin=$default_target/release/fkrng-getrandom-check
fkrng_bin=$fkrng_target/release/fkrng-getrandom-check

for api in fill fill03; do
  strace -f -qq -c -e trace=getrandom -o "$work/$api.strace" "$fkrng_bin" "$api" "$calls"
  n=$(syscalls "$work/$api.strace")
  echo "ffi: getrandom $([[ $api == fill ]] && echo 0.4 || echo 0.3) through fkrng: $n getrandom system calls for $calls calls"
  check_at_most "getrandom::fill ($api) through fkrng" "$n"
done
strace -f -qq -c -e trace=getrandom -o "$work/default.strace" "$default_bin" fill 100000
echo "ffi: getrandom 0.4, default backend: $(syscalls "$work/default.strace") getrandom system calls for 100000 calls"
# fkrng's feature without the cfg (a RUSTFLAGS that replaces it): the query says so.
(cd "$check_dir" && CARGO_ENCODED_RUSTFLAGS= \
  cargo build --quiet --release --locked --features fkrng --target-dir "$fkrng_target/no-cfg")
"$fkrng_target/no-cfg/release/fkrng-getrandom-check" serves no
"$fkrng_bin" serves yes
for bin in "$default_bin" "$fkrng_bin"; do
  "$bin" uuid "$calls"
  "$bin" fork
  "$bin" signal
  "$bin" teardown
done
# A binary with the cfg but without fkrng has no backend: the link must fail, which is what
# `use fkrng as _;` in the binary prevents.
echo "-- the cfg without fkrng linked fails to build"
if (cd "$check_dir" && CARGO_ENCODED_RUSTFLAGS=$custom \
  cargo build --quiet --release --locked --target-dir "$fkrng_target/no-fkrng" \
  >"$work/no-fkrng.log" 2>&1); then
  echo "ffi: FAILED: a build with the cfg and without fkrng linked" >&2
  exit 1
fi
grep -qE '(undefined symbol|undefined reference to).*__getrandom_v03_custom' "$work/no-fkrng.log" ||
  { cat "$work/no-fkrng.log"; echo "ffi: FAILED: that build failed for another reason" >&2; exit 1; }
echo "ffi: a build with the cfg and without fkrng fails to link, as expected"

[[ $mode == short ]] && exit 0

# ---- benchmarks (timed without strace; not assertions) ------------------------------------
echo "== benchmarks: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) logical CPUs, $(uname -r), $(getconf GNU_LIBC_VERSION)"
(cd "$check_dir" && CARGO_ENCODED_RUSTFLAGS=$custom \
  cargo build --quiet --release --locked --features fkrng --target-dir "$plain_target")
plain_bin=$plain_target/release/fkrng-getrandom-check
for run in 1 2 3; do
  "$default_bin" fill "$calls"
  "$plain_bin" fill "$calls"
done
cc "${cflags[@]}" ffi/tests/c/bench.c -o "$work/bench" -ldl
"$work/bench" "$so" 200000
