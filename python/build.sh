#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the qlink Python package and install it into the repository's venv.
#
#   python/build.sh            release build (the one to use the package with)
#   QLINK_PY_PROFILE=dev python/build.sh   unoptimised, faster to build
#   QLINK_VENV=DIR             the venv whose maturin builds and which gets the wheel (default .venv)
#   QLINK_PY_INSTALL=0         build the wheel only (scripts/wheel.sh repairs it into dist/)
#
# Steps, each idempotent:
#  1. the C parts the package ships, built in the C release build
#     (build/release as make configures it: nothing to compile after `make
#     build-release`) and copied into python/qlink/ (git-ignored) in the C
#     build's layout: the plugins (qlink_sample, qlink_zarr, qlink_fold,
#     qlink_ndarray) into plugins/, both DuckDB extension builds into
#     hosts/duckdb/, the SQLite extension into hosts/sqlite/
#     (python/qlink/_resources.py finds them there);
#  2. the abi3 wheel with maturin into build/python/wheels, Rust builds in the
#     shared $CARGO_TARGET_DIR so DataFusion is built once for every crate;
#  3. pip install of that wheel into the venv (replacing an older one).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="${QLINK_VENV:-$repo/.venv}"
profile="${QLINK_PY_PROFILE:-release}"
cdir="$repo/build/release"
bdir="$repo/build/python"
jobs="${JOBS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}"

if [ ! -x "$venv/bin/python" ]; then
  echo "python/build.sh: no virtual environment at $venv (run scripts/setup.sh)" >&2
  exit 1
fi
if [ ! -x "$venv/bin/maturin" ]; then
  echo "python/build.sh: maturin is missing from $venv (pinned in scripts/requirements.txt)" >&2
  exit 1
fi

# 1. plugins and host extensions (the DuckDB targets exist only when CMake
# found DuckDB's headers, which scripts/setup.sh fetches)
has_duckdb() { cmake --build "$cdir" --target help 2>/dev/null | grep qlink_duckdb_v2 >/dev/null; }  # reads it all: no SIGPIPE under pipefail
if [ ! -f "$cdir/CMakeCache.txt" ] || ! has_duckdb; then
  cmake -S "$repo" -B "$cdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
if ! has_duckdb; then
  echo "python/build.sh: DuckDB's C API headers are missing from build/deps/duckdb/include (run scripts/setup.sh)" >&2
  exit 1
fi
cmake --build "$cdir" -j "$jobs" --target qlink_sample_plugin qlink_zarr_plugin qlink_fold_plugin qlink_ndarray_plugin \
  qlink_duckdb qlink_duckdb_v2 qlink_sqlite >/dev/null
ship() { # ship SRC DST: copy when changed (maturin packs what is there)
  mkdir -p "$(dirname "$2")"
  if ! cmp -s "$1" "$2" 2>/dev/null; then cp "$1" "$2.tmp" && mv "$2.tmp" "$2"; fi
}
for p in qlink_sample qlink_zarr qlink_fold qlink_ndarray; do
  ship "$cdir/plugins/$p.so" "$here/qlink/plugins/$p.so"
done
for e in qlink.duckdb_extension qlink_v2.duckdb_extension; do
  ship "$cdir/hosts/duckdb/$e" "$here/qlink/hosts/duckdb/$e"
done
ship "$cdir/hosts/sqlite/qlink.so" "$here/qlink/hosts/sqlite/qlink.so"

# 2. wheel
rm -rf "$bdir/wheels"
prof_args=(--release)
[ "$profile" = "release" ] || prof_args=(--profile "$profile")
(cd "$here" && "$venv/bin/maturin" build "${prof_args[@]}" -j "$jobs" \
   --interpreter "$venv/bin/python" --out "$bdir/wheels" --quiet)

# 3. install
wheel="$(ls "$bdir"/wheels/qlink-*.whl)"
if [ "${QLINK_PY_INSTALL:-1}" = 0 ]; then
  echo "python/build.sh: built $wheel ($profile)"
  exit 0
fi
"$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
rm -f "$venv/.qlink-wheel.key"  # the venv no longer holds dist's wheel (scripts/install-python.sh)
echo "python/build.sh: installed $(basename "$wheel") ($profile)"
