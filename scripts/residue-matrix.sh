#!/usr/bin/env bash
# Backtracking resistance in every build a dependent can make: after refills and direct
# fills, no word of an old key is left in memory (the dead stack included), whatever
# optimisation level, CPU target, LTO setting or compiler fkrng is built with.
#
# Each configuration builds and runs tests/residue/ in up to two ways:
#
#   dependent  in every configuration: tests/residue/ built as the test of
#              .ci/residue_dependent, a crate that depends on fkrng by path as a user's does
#              (the profile and flags are the dependent's; fkrng's own `[profile.*.package]`
#              settings do not apply), run for its old-key tests: refills and direct fills
#              of a seeded `FkeRng` and of the thread-local generator (`fkrng::fill`);
#   fkrng      `-p fkrng --test residue --test stack_use` in this workspace, the whole of
#              both tests, in release, debug and profile-{1,s,z}: these share the
#              workspace's target directory and rebuild only fkrng, chacha20, the crates on
#              chacha20 and the test binaries. With --full, the other configurations run
#              the workspace's old-key tests as well.
#
# The configurations (release builds unless named otherwise):
#
#   release                      the release profile
#   debug                        the dev/test profile (opt-level 0, debug assertions); in
#                                the workspace, fkrng and chacha20 at opt-level 0 as a
#                                dependent's debug build compiles them
#   profile-{0,1,s,z}            opt-level from the profile (the build script sees it); in
#                                the workspace, fkrng's and chacha20's package settings
#   rustflags-{0,1,s,z}          RUSTFLAGS="-C opt-level=N" over the release profile: the
#                                build script sees opt-level 3 (at 0 rustc turns debug
#                                assertions on)
#   rustflags-0-no-debug-assertions  RUSTFLAGS="-C opt-level=0 -C debug-assertions=off"
#   native                       RUSTFLAGS="-C target-cpu=native"
#   lto                          fat LTO, one codegen unit
#   nightly                      the nightly toolchain
#
# A configuration set through RUSTFLAGS, LTO or the toolchain rebuilds every crate of a
# build: the dependent's tree is fkrng's own dependencies, the workspace's all of fkrng's
# dev-dependencies (about 3 CPU minutes each), so the default mode (--short, what .ci/run
# runs) builds the dependent alone there; profile-0 without debug assertions compiles the
# workspace's test code at opt-level 0 too, where the scans beyond the old-key tests take
# minutes. The depth of the keystream scrub
# (`keystream::tests::scrub_covers_the_deepest_keystream_frame`) runs in the workspace's
# profile rows of `scrub_depth_levels` below.
#
# Usage: scripts/residue-matrix.sh [--short|--full] [CONFIG...]   (all configurations by
# default). Ends in one line per configuration:
#
#   residue-matrix: <config> path=<keystream path> <PASS|FAIL> <what ran, what was found>
#
# and exits 1 if any configuration found an old key or failed otherwise, or if a toolchain
# it needs (nightly) is missing. The workspace rows build in ${CARGO_TARGET_DIR:-target};
# the script's own target directories there (residue-matrix/) are removed at the end, its
# logs (residue-matrix/logs/) kept.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=--short
if [[ ${1:-} == --short || ${1:-} == --full ]]; then
  mode=$1
  shift
fi
all=(release debug profile-0 profile-1 profile-s profile-z rustflags-0
  rustflags-0-no-debug-assertions rustflags-1 rustflags-s rustflags-z native lto nightly)
configs=("${@:-${all[@]}}")
for c in "${configs[@]}"; do
  [[ " ${all[*]} " == *" $c "* ]] || { echo "residue-matrix: no configuration '$c' (${all[*]})" >&2; exit 2; }
done

# The scrub-depth unit test runs while x86-64 has keystream paths that are scrubbed rather
# than assembly: an empty list drops it.
scrub_depth_levels=(1 s z)

export CARGO_INCREMENTAL=0 CARGO_TERM_COLOR=never
export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}
workspace_target=${CARGO_TARGET_DIR:-target}
own=$workspace_target/residue-matrix
dependent_target=$own/dependent
repo_target=$own/workspace
logs=$own/logs
unset CARGO_TARGET_DIR RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
mkdir -p "$logs"
hooks=(--config .cargo/test-hooks.toml)
# RUSTFLAGS replaces the flags of .cargo/config.toml and .cargo/test-hooks.toml: the
# workspace's builds name them again.
workspace_flags="--cfg chacha20_avx512 --cfg fkrng_test_hooks"

if [[ " ${configs[*]} " == *" nightly "* ]] && ! cargo +nightly --version >/dev/null 2>&1; then
  echo "residue-matrix: the nightly toolchain is missing (rustup toolchain install nightly)" >&2
  exit 1
fi

# Per configuration: the dependent's cargo arguments (`args`) and extra RUSTFLAGS
# (`flags`), shared by the workspace's build in --full mode; where the configuration is a
# profile setting, the workspace's profile arguments (`package`, for its shared target
# directory), and whether the workspace runs the whole residue and stack-use tests in every
# mode (`whole`, see the top of this file).
toml_level() { [[ $1 == [sz] ]] && echo "\"$1\"" || echo "$1"; }
levels() { # LEVEL PROFILE: fkrng's and chacha20's package settings in PROFILE
  local v
  v=$(toml_level "$1")
  package+=(--config "profile.$2.package.fkrng.opt-level=$v"
    --config "profile.$2.package.chacha20.opt-level=$v")
}
describe() {
  toolchain=() args=(--release) flags="" package=() whole=1
  case $1 in
    release) package=(--release) ;;
    debug)
      args=()
      package=(--config profile.dev.package.chacha20.opt-level=0)
      levels 0 test ;;
    profile-*)
      args+=(--config "profile.release.opt-level=$(toml_level "${1#profile-}")")
      package=(--release)
      levels "${1#profile-}" release
      [[ $1 != profile-0 ]] || whole=0 ;;
    rustflags-0-no-debug-assertions) flags="-C opt-level=0 -C debug-assertions=off" ;;
    rustflags-*) flags="-C opt-level=${1#rustflags-}" ;;
    native) flags="-C target-cpu=native" ;;
    lto) args+=(--config 'profile.release.lto="fat"' --config profile.release.codegen-units=1) ;;
    nightly) toolchain=(+nightly) ;;
  esac
  [[ ${#package[@]} -gt 0 ]] || whole=0
}

# run LOG CMD...: runs a build and its tests, output to LOG; returns its status.
run() {
  local log=$1
  shift
  echo "   $*" >"$log"
  nice "$@" >>"$log" 2>&1
}

# What a log says: the keystream paths, the old-key copies found, the tests passed.
paths_of() { sed -n 's/^keystream path \([a-z0-9-]*\):.*/\1/p' "$@" | sort -u | paste -sd/ -; }
copies_of() {
  sed -n 's/.* \([0-9]*\) copies of old keys found$/\1/p' "$@" | awk '{ n += $1 } END { print n + 0 }'
}
tests_of() { # LOG: "P of N tests passed" from the harness's summary lines
  sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$1" |
    awk '{ p += $1; n += $1 + $2 } END { printf "%d of %d tests passed", p, n }'
}
# The failed tests and what each found, for the run's output.
show_failure() {
  echo "   -- failed (whole log: $1):"
  grep -E 'copies of old keys in memory|^test .* FAILED$|^error[:[]' "$1" | head -n 12 |
    cut -c1-220 | sed 's/^/      /' || true
}

declare -A result detail path took
for c in "${configs[@]}"; do result[$c]=PASS detail[$c]="" path[$c]="" took[$c]=0; done
fail() { result[$1]=FAIL; detail[$1]+="$2; "; }

# ---- the workspace's builds: profile rows in the shared target directory -------------------
for c in "${configs[@]}"; do
  describe "$c"
  [[ $whole == 1 || $mode == --full ]] || continue
  started=$SECONDS
  log=$logs/$c-fkrng.log
  echo "-- $c: the workspace's build (-p fkrng), log $log"
  if [[ $whole == 1 ]]; then
    cmd=(env CARGO_TARGET_DIR="$workspace_target" cargo test -p fkrng "${package[@]}"
      "${hooks[@]}" --test residue --test stack_use -- --nocapture)
  elif [[ ${#package[@]} -gt 0 ]]; then
    cmd=(env CARGO_TARGET_DIR="$workspace_target" cargo test -p fkrng "${package[@]}"
      "${hooks[@]}" --test residue -- --nocapture leave_no_old_key_behind)
  else
    cmd=(env CARGO_TARGET_DIR="$repo_target" RUSTFLAGS="$workspace_flags $flags"
      cargo "${toolchain[@]}" test -p fkrng "${args[@]}" --test residue --
      --nocapture leave_no_old_key_behind)
  fi
  if run "$log" "${cmd[@]}"; then
    detail[$c]+="fkrng: $(tests_of "$log"); "
  else
    fail "$c" "fkrng: $(copies_of "$log") old-key copies found, $(tests_of "$log")"
    show_failure "$log"
  fi
  path[$c]=$(paths_of "$log")
  if [[ $c == profile-* && " ${scrub_depth_levels[*]} " == *" ${c#profile-} "* ]]; then
    log=$logs/$c-scrub-depth.log
    if run "$log" env CARGO_TARGET_DIR="$workspace_target" cargo test -p fkrng "${package[@]}" \
      "${hooks[@]}" --lib -- --exact keystream::tests::scrub_covers_the_deepest_keystream_frame; then
      detail[$c]+="scrub depth ok; "
    else
      fail "$c" "scrub depth"
      show_failure "$log"
    fi
  fi
  took[$c]=$((SECONDS - started))
done
rm -rf "$repo_target"

# ---- the dependent's builds: every row, one target directory ------------------------------
for c in "${configs[@]}"; do
  describe "$c"
  started=$SECONDS
  log=$logs/$c-dependent.log
  echo "-- $c: the dependent's build (.ci/residue_dependent), log $log"
  if run "$log" env CARGO_TARGET_DIR="$dependent_target" RUSTFLAGS="--cfg fkrng_test_hooks $flags" \
    cargo "${toolchain[@]}" test --manifest-path .ci/residue_dependent/Cargo.toml "${args[@]}" \
    --test residue -- --nocapture leave_no_old_key_behind; then
    detail[$c]+="dependent: $(tests_of "$log")"
  else
    fail "$c" "dependent: $(copies_of "$log") old-key copies found, $(tests_of "$log")"
    show_failure "$log"
  fi
  p=$(paths_of "$log")
  [[ -z ${path[$c]} || ${path[$c]} == "$p" ]] && path[$c]=$p || path[$c]+=",dependent:$p"
  took[$c]=$((took[$c] + SECONDS - started))
done
rm -rf "$dependent_target"

failed=0
for c in "${configs[@]}"; do
  printf 'residue-matrix: %-31s path=%-11s %s %s (%s s)\n' "$c" "${path[$c]:-none}" \
    "${result[$c]}" "${detail[$c]%; }" "${took[$c]}"
  [[ ${result[$c]} == PASS ]] || failed=1
done
exit "$failed"
