#!/usr/bin/env bash
# The library builds, with every feature, against its direct dependencies at the lowest
# versions Cargo.toml allows: a copy of the package without its dev-dependencies and
# workspace, resolved by `cargo +nightly update -Z direct-minimal-versions` and built in a
# target directory of its own (the repository's Cargo.lock and target/ are left alone);
# fails unless every direct dependency resolves to the lowest version its bound names.
#
# Usage: scripts/minimal-versions.sh   (needs a nightly toolchain: rustup toolchain install nightly)
set -euo pipefail
cd "$(dirname "$0")/.."

cargo +nightly --version >/dev/null 2>&1 || {
  echo "minimal-versions: no nightly toolchain (rustup toolchain install nightly --profile minimal)" >&2
  exit 1
}
copy=target/minimal-versions
rm -rf "$copy/package"
mkdir -p "$copy/package"
cp -r src build.rs README.md "$copy/package/"
mkdir -p "$copy/package/docs" && cp docs/*.md "$copy/package/docs/"
# The manifest without the tables a dependent never resolves (an empty workspace of its own).
python3 - Cargo.toml "$copy/package/Cargo.toml" <<'EOF'
import re, sys
src, dst = sys.argv[1:]
out, skip = [], False
for line in open(src):
    header = re.match(r"^\[\[?([^\]]+)\]\]?\s*$", line)
    if header:
        name = header.group(1)
        skip = (name == "workspace" or name.endswith("dev-dependencies")
                or name in ("test", "bench", "example") or name.startswith("profile"))
        if name == "workspace":
            out.append("[workspace]\n")
    if not skip:
        out.append(line)
open(dst, "w").write("".join(out))
EOF
cd "$copy/package"
cargo +nightly update --quiet -Z direct-minimal-versions
echo "minimal-versions: $(grep -A1 -E '^name = "(chacha20|cfg-if|getrandom|zeroize|rand_core|libc|rustls)"$' Cargo.lock |
  grep -v '^--' | paste - - | sed -E 's/name = "([^"]+)"\tversion = "([^"]+)"/\1 \2/' | sort -u | paste -sd, -)"
# Each direct dependency must resolve to the lowest version its requirement names: a version
# the resolution skips (yanked) would leave that bound untested.
python3 - Cargo.toml Cargo.lock <<'EOF'
import re, sys, tomllib
manifest = tomllib.load(open(sys.argv[1], "rb"))
locked = {(p["name"], p["version"]) for p in tomllib.load(open(sys.argv[2], "rb"))["package"]}
tables = [manifest.get("dependencies", {})]
tables += [t.get("dependencies", {}) for t in manifest.get("target", {}).values()]
wrong = []
for table in tables:
    for name, spec in table.items():
        spec = {"version": spec} if isinstance(spec, str) else spec
        parts = re.sub(r"^[\^=~ ]+", "", spec["version"]).split(".")
        lowest = ".".join((parts + ["0", "0"])[:3])
        if (spec.get("package", name), lowest) not in locked:
            wrong.append(f"{name} {spec['version']} (lowest {lowest} not chosen)")
if wrong:
    sys.exit("minimal-versions: FAILED: a declared lower bound is not what resolves: " + ", ".join(wrong))
EOF
cargo build --quiet --locked --all-features --target-dir ../target
echo "minimal-versions: ok: the library builds with its direct dependencies at their lowest versions"
