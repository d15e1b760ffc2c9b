#!/usr/bin/env bash
# Build the qlink Python package and install it into the repository's venv.
#
#   python/build.sh            release build (the one to use the package with)
#   QLINK_PY_PROFILE=dev python/build.sh   unoptimised, faster to build (what `make test-python` uses)
#
# Steps, each idempotent:
#  1. the plugins the package ships (qlink_sample, qlink_zarr, qlink_fold, qlink_ndarray) with CMake in
#     build/python, copied into python/qlink/plugins/ (git-ignored);
#  2. the abi3 wheel with maturin into build/python/wheels, Rust builds in the
#     shared $CARGO_TARGET_DIR so DataFusion is built once for every crate;
#  3. pip install of that wheel into .venv (replacing an older one).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
venv="${QLINK_VENV:-$repo/.venv}"
profile="${QLINK_PY_PROFILE:-release}"
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

# 1. plugins
if [ ! -f "$bdir/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$bdir" -j "$jobs" --target qlink_sample_plugin qlink_zarr_plugin qlink_fold_plugin qlink_ndarray_plugin >/dev/null
mkdir -p "$here/qlink/plugins"
for p in qlink_sample qlink_zarr qlink_fold qlink_ndarray; do
  src="$bdir/plugins/$p.so"
  dst="$here/qlink/plugins/$p.so"
  if ! cmp -s "$src" "$dst" 2>/dev/null; then cp "$src" "$dst.tmp" && mv "$dst.tmp" "$dst"; fi
done

# 2. wheel
rm -rf "$bdir/wheels"
prof_args=(--release)
[ "$profile" = "release" ] || prof_args=(--profile "$profile")
(cd "$here" && "$venv/bin/maturin" build "${prof_args[@]}" -j "$jobs" \
   --interpreter "$venv/bin/python" --out "$bdir/wheels" --quiet)

# 3. install
wheel="$(ls "$bdir"/wheels/qlink-*.whl)"
"$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
echo "python/build.sh: installed $(basename "$wheel") ($profile)"
