#!/usr/bin/env bash
# The state pool's claim words (src/claims.rs) under the loom model checker:
# the model tests of src/pool/loom_model.rs, built with `--cfg loom`, run the claim,
# release and fork-reset code on loom's atomics through every interleaving of their
# threads (one test: every interleaving with at most three preemptions). Three of them
# run a deliberately wrong reset and pass only when the checker catches it.
#
# The unit tests build in the test profile, as `cargo test` does (this crate at opt-level
# 2), with loom and its coroutine crate optimised: the run takes seconds, the build of the
# dev-dependencies most of the time. Own target directory: `--cfg loom` rebuilds
# everything.
#
# Usage: scripts/loom.sh   (exits non-zero when a model test fails or none ran)
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR=target/loom
export RUSTFLAGS="--cfg loom"
cmd=(cargo test --lib
  --config 'profile.dev.package.loom.opt-level=3'
  --config 'profile.dev.package.generator.opt-level=3'
  --config 'profile.dev.debug="line-tables-only"'
  loom_model)
echo "+ CARGO_TARGET_DIR=$CARGO_TARGET_DIR RUSTFLAGS=\"$RUSTFLAGS\" ${cmd[*]}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"${cmd[@]}" 2>&1 | tee "$log"
if ! grep -Eq '^test result: ok\. [1-9][0-9]* passed' "$log"; then
  echo "loom.sh: no model test ran (is the filter loom_model still the tests' module?)" >&2
  exit 1
fi
