#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make bench-ffi`: install what the benchmark needs (pinned), then run
# bench_ffi.py, which prints the markdown tables and writes
# bench/results/ffi.json and bench/results/ffi.png.
#
#   bench/ffi/run.sh [bench_ffi.py args...]     e.g. --reps 100
#
# Steps:
#  1. scripts/setup.sh: .venv with datafusion-python 55.0.0, pyarrow, xarray,
#     zarr, matplotlib, maturin (pins in scripts/requirements.txt);
#  2. bench/zarr/setup.sh: bench/zarr/.venv-xsql with xarray-sql 0.6.0 and
#     its datafusion-python 54.0.0 (pins in bench/zarr/requirements.txt);
#  3. python/build.sh: the qlink wheel (release unless QLINK_PY_PROFILE=dev)
#     with its plugins, installed into .venv;
#  4. bench/ffi/build_ref.sh: the reference crate bench/ffi/ref_provider
#     (same profile), installed into .venv.
# BENCH_FFI_SKIP_BUILD=1 skips steps 3-4 (use what .venv has).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}
profile=${QLINK_PY_PROFILE:-release}
PY=.venv/bin/python

scripts/setup.sh
bench/zarr/setup.sh
if [[ ${BENCH_FFI_SKIP_BUILD:-0} != 1 ]]; then
  QLINK_PY_PROFILE=$profile python/build.sh
  bench/ffi/build_ref.sh "$profile"
else
  profile="as installed (BENCH_FFI_SKIP_BUILD=1)"
fi
mkdir -p data/bench bench/results
QLINK_PROFILE="$profile" exec "$PY" bench/ffi/bench_ffi.py \
  --store data/bench/ffi-65x16.v3.zarr --xsql-python bench/zarr/.venv-xsql/bin/python \
  --out bench/results/ffi.json --png bench/results/ffi.png "$@"
