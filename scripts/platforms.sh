#!/usr/bin/env bash
# Every keystream path and every platform fkrng claims, tested or compiled:
#
#   pinned    the KAT, unit (differential) and residue tests once per keystream path, each
#             build pinned with --cfg fkrng_keystream="avx512"|"avx2"|"portable" (native;
#             avx512 only on a CPU with AVX-512F, else recorded as `not-run`)
#   cpu-model the KAT, unit, threads and fork tests of an unpinned build, and
#             `fkrng --version`, under qemu-x86_64 -cpu Haswell (AVX2, no AVX-512) and
#             -cpu Nehalem (no AVX2): run-time detection must pick avx2 and portable
#   emulated  the whole test suite (every test target, doctests) for aarch64 and s390x
#             (big-endian) Linux under qemu-user, release builds
#   musl      the whole test suite for x86_64-unknown-linux-musl, natively, release builds
#   windows   the library's unit and integration tests for x86_64-pc-windows-gnu under Wine
#             (scripts/wine/runner.sh); test targets that need Linux print what they skip
#   i686      the whole test suite for i686-unknown-linux-gnu (32-bit), natively, linked to
#             Debian's i386 cross C library; then the scrub-depth test in release builds,
#             with and without an opt-level in RUSTFLAGS
#   wasi      the library's unit tests for wasm32-wasip1 under Node's node:wasi
#             (scripts/wasi/runner.mjs)
#   wasm      a smoke module for wasm32-unknown-unknown: built with getrandom's wasm_js
#             feature, and run in Node with the OS source supplied by the host
#   compiled  `cargo check` of the library with -D warnings for macOS (x86-64, AArch64),
#             Windows (MSVC), FreeBSD, WASI, Android (AArch64) and a bare-metal Cortex-M
#             (no_std)
#
# Cross targets use rustup's prebuilt standard library (`rustup target add`), or where that
# is not installed, nightly's -Zbuild-std with the rust-src component. The script installs
# nothing: .ci/run installs the packages, targets and toolchain.
#
# Usage: scripts/platforms.sh [SECTION...]   (sections: pinned cpu-model emulated musl
# windows i686 wasi wasm compiled; all nine by default). Every run ends in one
# machine-readable line per platform:
#
#   platform: <target> <how> <path> binaries=<n> tests=<n> skipped=<what>
#
# which scripts/check-platform-table.py compares with the table in docs/ASSURANCE.md.
# A missing toolchain part or package fails the run (exit 1) with a line naming it; nothing
# is skipped silently. qemu-user accepts and ignores madvise advice, so emulated runs expect
# (FKRNG_EXPECT_FORK_PROTECTION) the AtforkEpoch protection and the tests that depend on it
# print what they skip; native runs expect WipeOnFork. Test builds have the test hooks:
# `--config .cargo/test-hooks.toml`, or `--cfg fkrng_test_hooks` in RUSTFLAGS where a run
# sets RUSTFLAGS (which replace the config files' flags). Emulated property tests run
# PROPTEST_CASES=32 (native runs keep their default); each emulated target and each pin has
# its own CARGO_TARGET_DIR under target/. Each section prints its wall time. Under
# FKRNG_CI_PRUNE=1 (set by .ci/run, on machines with little disk) each section's target
# directories are removed once the section is done; its logs stay.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TERM_COLOR=never
sections=("$@")
[[ ${#sections[@]} -gt 0 ]] || sections=(pinned cpu-model emulated musl windows i686 wasi wasm compiled)
logdir=target/platforms
mkdir -p "$logdir"
summary=()

want() {
  local s
  for s in "${sections[@]}"; do [[ $s == "$1" ]] && return 0; done
  return 1
}

# apt_check PACKAGE...: fails the run, naming them, when Debian packages are missing.
apt_check() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "platforms.sh: missing packages: ${missing[*]} (apt-get install ${missing[*]})" >&2
    exit 1
  fi
}

# std_for TARGET CRATES: sets `cargo_std` to a cargo command that has TARGET's standard
# library: rustup's prebuilt one if installed (`rustup target add TARGET`), or else
# nightly's -Zbuild-std=CRATES from its rust-src component. Fails the run, naming what is
# missing, when neither is there.
std_for() {
  local target=$1 crates=$2
  if rustup target list --installed | grep -qx "$target"; then
    cargo_std=(cargo)
  elif rustup component list --installed --toolchain nightly 2>/dev/null | grep -q '^rust-src'; then
    echo "no prebuilt standard library for $target installed: -Zbuild-std=$crates"
    cargo_std=(cargo +nightly "-Zbuild-std=$crates")
  else
    echo "platforms.sh: no standard library for $target (rustup target add $target, or" \
      "rustup toolchain install nightly --component rust-src)" >&2
    exit 1
  fi
}

# suite LABEL LOG -- COMMAND...: runs a cargo test command, keeps its output in LOG, and
# sets `binaries` (test binaries run) and `tests` (tests passed, counting a binary without
# the test harness as one).
suite() {
  local label=$1 log=$2
  shift 3
  echo "-- $label: $*"
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "FAILED: $label (full output: $log)" >&2
    exit 1
  fi
  grep -E '^test result:|^(ok|skipped): |^fork protection|^fork tests' "$log" || true
  binaries=$(grep -cE '^ +(Running|Doc-tests) ' "$log" || true)
  tests=$(awk '
    /^ +(Running|Doc-tests) / { if (open) { n += 1 } open = 1; next }
    /^test result:/ { n += $4; open = 0 }
    END { if (open) n += 1; print n + 0 }' "$log")
  echo "   $label: $binaries test binaries, $tests tests passed"
}

record() {
  local line="platform: $1 $2 $3 binaries=$4 tests=$5 skipped=$6"
  summary+=("$line")
  echo "$line"
}

# done_with DIR...: under FKRNG_CI_PRUNE=1, removes target directories no later section
# uses, and prints the disk left.
done_with() {
  [[ ${FKRNG_CI_PRUNE:-} == 1 ]] || return 0
  rm -rf "$@"
  echo "-- disk: removed $*; $(df -h --output=avail . | tail -n 1 | tr -d ' ') free"
}

host=x86_64-unknown-linux-gnu
hooks=(--config .cargo/test-hooks.toml)

# ---- one run per keystream path (native x86-64) -----------------------------------------
if want pinned; then
  started=$SECONDS
  echo "== keystream paths pinned at build time: KAT, unit (differential) and residue tests"
  for path in avx512 avx2 portable; do
    # No emulator here runs AVX-512 (qemu's TCG lacks it): on a CPU without AVX-512F the
    # pinned avx512 build could only panic at its first read, so the row is recorded as
    # not run, loudly, and the platform table has a row for that outcome too.
    if [[ $path == avx512 ]] && ! grep -qw avx512f /proc/cpuinfo; then
      echo "NOT RUN: pinned avx512: this CPU lacks AVX-512F; the AVX-512 kernel is untested in this run"
      record "$host" not-run avx512 0 0 "no-avx512f-cpu"
      continue
    fi
    suite "pinned $path" "$logdir/pinned-$path.log" -- \
      env CARGO_TARGET_DIR="target/pin-$path" FKRNG_EXPECT_KEYSTREAM="$path" \
      FKRNG_EXPECT_FORK_PROTECTION=WipeOnFork \
      RUSTFLAGS="--cfg chacha20_avx512 --cfg fkrng_test_hooks --cfg fkrng_keystream=\"$path\"" \
      cargo test --release --lib --test kat --test residue
    record "$host" pinned "$path" "$binaries" "$tests" none
    done_with "target/pin-$path"
  done
  echo "-- section pinned: $((SECONDS - started)) s"
fi

# ---- run-time CPU detection under emulated CPU models -----------------------------------
if want cpu-model; then
  started=$SECONDS
  echo "== run-time detection under qemu-x86_64 CPU models: KAT, unit, threads, fork tests"
  apt_check qemu-user
  # The unpinned release build of .ci/run's residue step (same flags, test hooks included,
  # same target dir): only its keystream path is asked for here.
  cargo build --release "${hooks[@]}" -p fkrng-cli --bin fkrng
  # A child that qemu-user 7.2 (Debian 12) forks while other test threads run can hang on a
  # lock one of them held in the emulator, so the tests run one at a time. (Its x86-64
  # signal frames are 8 bytes off the ABI's alignment: the tests' handlers that fork or read
  # realign the stack themselves, with fkrng_test_support::aligned_handler!.)
  for model in Haswell:avx2 Nehalem:portable; do
    cpu=${model%%:*}
    path=${model##*:}
    # (qemu warns on stderr about CPUID bits its TCG lacks, such as TSX; not ours to show.)
    got=$(qemu-x86_64 -cpu "$cpu" target/release/fkrng --version 2>/dev/null |
      sed -n 's/^keystream: //p')
    echo "-- fkrng --version under -cpu $cpu: keystream: $got"
    if [[ $got != "$path" ]]; then
      echo "FAILED: -cpu $cpu should get the $path keystream path, fkrng reports '$got'" >&2
      exit 1
    fi
    suite "qemu -cpu $cpu" "$logdir/cpu-$cpu.log" -- \
      env FKRNG_EXPECT_KEYSTREAM="$path" FKRNG_EXPECT_FORK_PROTECTION=AtforkEpoch \
      PROPTEST_CASES=32 \
      CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="qemu-x86_64 -cpu $cpu" \
      FKRNG_TEST_RUNNER="qemu-x86_64 -cpu $cpu" \
      cargo test --release "${hooks[@]}" --lib --test kat --test threads --test fork -- \
      --show-output --test-threads=1
    # qemu-user ignores MADV_WIPEONFORK: the tests run under AtforkEpoch and print, with
    # --show-output, the wipe-on-fork claims (raw clones, page flags) they leave out.
    record "$host" "qemu-cpu-$cpu" "$path" "$binaries" "$tests" "wipe-on-fork-claims"
  done
  echo "-- section cpu-model: $((SECONDS - started)) s"
fi

# ---- other architectures: the whole suite under qemu-user ------------------------------
if want emulated; then
  started=$SECONDS
  echo "== other architectures under qemu-user: every test target, release builds"
  # One test at a time, as in the CPU-model runs: a child forked while other test threads
  # run can hang in the emulator.
  apt_check qemu-user gcc-aarch64-linux-gnu gcc-s390x-linux-gnu libc6-dev-arm64-cross \
    libc6-dev-s390x-cross
  for target in aarch64-unknown-linux-gnu s390x-unknown-linux-gnu; do
    arch=${target%%-*}
    triple=$arch-linux-gnu
    var=$(echo "$target" | tr 'a-z-' 'A-Z_')
    std_for "$target" std
    suite "qemu $arch" "$logdir/emulated-$arch.log" -- \
      env CARGO_TARGET_DIR="target/emu-$arch" PROPTEST_CASES=32 \
      FKRNG_EXPECT_KEYSTREAM=portable FKRNG_EXPECT_FORK_PROTECTION=AtforkEpoch \
      "CARGO_TARGET_${var}_LINKER=$triple-gcc" \
      "CARGO_TARGET_${var}_RUNNER=qemu-$arch -L /usr/$triple" \
      "FKRNG_TEST_RUNNER=qemu-$arch -L /usr/$triple" \
      "${cargo_std[@]}" test --target "$target" --release --workspace --all-features "${hooks[@]}" \
      --no-fail-fast -- --show-output --test-threads=1
    record "$target" emulated portable "$binaries" "$tests" "wipe-on-fork-claims"
    done_with "target/emu-$arch"
  done
  echo "-- section emulated: $((SECONDS - started)) s"
fi

# ---- musl libc, natively: the whole test suite ------------------------------------------
if want musl; then
  started=$SECONDS
  echo "== x86_64-unknown-linux-musl, natively: every test target, release builds"
  apt_check musl-tools
  target=x86_64-unknown-linux-musl
  std_for "$target" std
  # C code of the test dependencies (ring, under rustls) is compiled with musl-gcc.
  suite "musl" "$logdir/musl.log" -- \
    env CARGO_TARGET_DIR="target/musl" FKRNG_EXPECT_FORK_PROTECTION=WipeOnFork \
    CC_x86_64_unknown_linux_musl=musl-gcc \
    "${cargo_std[@]}" test --target "$target" --release --workspace --all-features "${hooks[@]}" \
    --no-fail-fast
  record "$target" native detected "$binaries" "$tests" none
  done_with target/musl
  echo "-- section musl: $((SECONDS - started)) s"
fi

# ---- Windows under Wine: the library's unit and integration tests -----------------------
if want windows; then
  started=$SECONDS
  echo "== x86_64-pc-windows-gnu under Wine: the library's unit and integration tests"
  apt_check wine64 gcc-mingw-w64-x86-64
  target=x86_64-pc-windows-gnu
  std_for "$target" std
  # The test targets that need Linux print what they skip; the C ABI builds for Linux and
  # Android only. One test thread: Wine's start-up dominates, and CI's cores are shared.
  suite "wine" "$logdir/windows.log" -- \
    env CARGO_TARGET_DIR=target/windows PROPTEST_CASES=32 \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$PWD/scripts/wine/runner.sh" \
    "${cargo_std[@]}" test --target "$target" -p fkrng --tests "${hooks[@]}" \
    --features std,rand_core_0_6,rand_core_0_9,rustls --no-fail-fast -- --test-threads=1
  # A test build takes the CPU's assembly kernel (AVX-512F or AVX2, as CI's machines have).
  record "$target" wine avx512-or-avx2 "$binaries" "$tests" "linux-only-tests"
  done_with target/windows target/wine
  echo "-- section windows: $((SECONDS - started)) s"
fi

# ---- 32-bit Linux, natively: the whole test suite ---------------------------------------
if want i686; then
  started=$SECONDS
  echo "== i686-unknown-linux-gnu, natively: every test target"
  apt_check gcc-i686-linux-gnu libc6-dev-i386-cross
  target=i686-unknown-linux-gnu
  std_for "$target" std
  # Linked to Debian's cross C library (its loader and library path written into each
  # binary), so the 64-bit kernel runs them directly, and so do tests that re-run their
  # own binary. (RUSTFLAGS replaces the config files' flags: they are repeated here.) One
  # test thread: beside small_stack_matches_the_chacha20_crate, the scrub-depth test
  # measures a refill 4 KiB deep on this target (docs/ASSURANCE.md).
  lib=/usr/i686-linux-gnu/lib
  link="-C link-arg=-Wl,--dynamic-linker=$lib/ld-linux.so.2,-rpath=$lib"
  export CARGO_TARGET_I686_UNKNOWN_LINUX_GNU_LINKER=i686-linux-gnu-gcc
  suite "i686" "$logdir/i686.log" -- \
    env CARGO_TARGET_DIR=target/i686 FKRNG_EXPECT_FORK_PROTECTION=WipeOnFork \
    RUSTFLAGS="--cfg chacha20_avx512 --cfg fkrng_test_hooks $link" \
    "${cargo_std[@]}" test --target "$target" --workspace --all-features --no-fail-fast \
    -- --test-threads=1
  record "$target" native small-stack "$binaries" "$tests" "64-bit-only-tests"
  # The scrub's depth as a dependent's release build sets it: the profile alone (the
  # `chacha20` crate's path), and an opt-level through RUSTFLAGS, which Cargo's OPT_LEVEL
  # does not show (build.rs reads it from CARGO_ENCODED_RUSTFLAGS).
  for level in "" "-C opt-level=0 -C debug-assertions=off" "-C opt-level=s"; do
    suite "i686 release ${level:-(profile)}: scrub depth" "$logdir/i686-scrub.log" -- \
      env CARGO_TARGET_DIR=target/i686-release RUSTFLAGS="--cfg fkrng_test_hooks $link $level" \
      "${cargo_std[@]}" test --release --target "$target" --lib -- \
      --exact keystream::tests::scrub_covers_the_deepest_keystream_frame --nocapture
    grep -E 'bytes below the caller' "$logdir/i686-scrub.log"
    grep -q '^test result: ok. 1 passed' "$logdir/i686-scrub.log" || {
      echo "FAILED: the scrub-depth test did not run (i686 release ${level:-(profile)})" >&2
      exit 1
    }
  done
  done_with target/i686 target/i686-release
  echo "-- section i686: $((SECONDS - started)) s"
fi

# ---- WASI under Node: the library's unit tests ------------------------------------------
if want wasi; then
  started=$SECONDS
  echo "== wasm32-wasip1 under Node's node:wasi: the library's unit tests"
  command -v node >/dev/null || { echo "platforms.sh: node is missing (apt-get install nodejs)" >&2; exit 1; }
  apt_check clang
  target=wasm32-wasip1
  std_for "$target" std,panic_abort
  # clang builds ring's C code (a dependency of the rustls tests) for WebAssembly.
  suite "wasi" "$logdir/wasi.log" -- \
    env CARGO_TARGET_DIR=target/wasi CC_wasm32_wasip1=clang PROPTEST_CASES=32 \
    CARGO_TARGET_WASM32_WASIP1_RUNNER="node --no-warnings $PWD/scripts/wasi/runner.mjs" \
    "${cargo_std[@]}" test --target "$target" -p fkrng --lib "${hooks[@]}" \
    --features std,rand_core_0_6,rand_core_0_9,rustls
  record "$target" node small-stack "$binaries" "$tests" "integration-tests"
  done_with target/wasi
  echo "-- section wasi: $((SECONDS - started)) s"
fi

# ---- WebAssembly without an OS: built with getrandom's wasm_js, run in Node ---------------
if want wasm; then
  started=$SECONDS
  echo "== wasm32-unknown-unknown: the smoke module, built with wasm_js and run in Node"
  command -v node >/dev/null || { echo "platforms.sh: node is missing (apt-get install nodejs)" >&2; exit 1; }
  target=wasm32-unknown-unknown
  std_for "$target" std,panic_abort
  manifest=.ci/wasm_smoke/Cargo.toml
  # As a browser or Node user builds it: getrandom's wasm_js feature (compiled and linked;
  # running it needs wasm-bindgen's JavaScript glue).
  CARGO_TARGET_DIR=target/wasm RUSTFLAGS="-D warnings" \
    "${cargo_std[@]}" build --release --target "$target" --manifest-path "$manifest" --features wasm_js
  # Run in Node, with the OS source supplied by the host through getrandom's custom backend.
  CARGO_TARGET_DIR=target/wasm-custom RUSTFLAGS='-D warnings --cfg getrandom_backend="custom"' \
    "${cargo_std[@]}" build --release --target "$target" --manifest-path "$manifest"
  node .ci/wasm_smoke/wasm-smoke.mjs target/wasm-custom/$target/release/fkrng_wasm_smoke.wasm
  record "$target" node portable 1 6 "wasm-bindgen-glue"
  done_with target/wasm target/wasm-custom
  echo "-- section wasm: $((SECONDS - started)) s"
fi

# ---- other operating systems: type-checked --------------------------------------------
if want compiled; then
  started=$SECONDS
  echo "== other operating systems: cargo check of the library, warnings denied"
  for target in x86_64-apple-darwin aarch64-apple-darwin x86_64-pc-windows-msvc \
    x86_64-unknown-freebsd wasm32-wasip1 aarch64-linux-android; do
    std_for "$target" std
    # `getrandom_backend` exists for Linux and Android only (a compile error elsewhere).
    features=(--all-features)
    [[ $target == *-android ]] ||
      features=(--features std,rand_core_0_6,rand_core_0_9,rustls)
    echo "-- $target: library with the test hooks, features ${features[*]}"
    CARGO_TARGET_DIR=target/cross-check \
      RUSTFLAGS="--cfg chacha20_avx512 --cfg fkrng_test_hooks -D warnings" \
      "${cargo_std[@]}" check --target "$target" -p fkrng --lib "${features[@]}"
    slug="all-tests(not-runnable-here)"
    [[ $target != wasm32-wasip1 ]] || slug="warnings-check(unit-tests-run-in-node)"
    record "$target" compiled - 0 0 "$slug"
  done
  target=thumbv7em-none-eabihf
  std_for "$target" core
  echo "-- $target: no_std library (FkeRng only)"
  CARGO_TARGET_DIR=target/cross-check RUSTFLAGS="--cfg chacha20_avx512 -D warnings" \
    "${cargo_std[@]}" check --target "$target" -p fkrng --lib \
    --no-default-features --features rand_core_0_6,rand_core_0_9
  record "$target" compiled - 0 0 "all-tests(not-runnable-here)"
  done_with target/cross-check
  echo "-- section compiled: $((SECONDS - started)) s"
fi

echo "== platform summary"
printf '%s\n' "${summary[@]}" | tee "$logdir/summary.txt"
