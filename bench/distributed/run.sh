#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-distributed: write (or reuse) the ERA5-like store of make
# bench-zarr under data/bench/ (ERA5_DAYS days, default 31), then run
# bench_distributed.py with the built binaries (it builds nothing).
#   QLINK=path/to/qlink QLINK_WORKER=path/to/qlink-worker PLUGIN=path/to/qlink_zarr.so \
#     bench/distributed/run.sh [bench_distributed.py args...]
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}
QLINK=${QLINK:-$target/release/qlink}
QLINK_WORKER=${QLINK_WORKER:-$target/release/qlink-worker}
PLUGIN=${PLUGIN:-build/release/plugins/qlink_zarr.so}
for f in "$QLINK" "$QLINK_WORKER"; do
  [[ -x $f ]] || { echo "bench/distributed/run.sh: $f not found (make build-cli)" >&2; exit 2; }
done
[[ -f $PLUGIN ]] || { echo "bench/distributed/run.sh: $PLUGIN not found (make build-release)" >&2; exit 2; }
PY=.venv/bin/python
[[ -x $PY ]] || { echo "bench/distributed/run.sh: $PY not found (make setup)" >&2; exit 2; }
mkdir -p bench/results data/bench
DAYS=${ERA5_DAYS:-31}
ERA5=data/bench/era5-${DAYS}d.v3.zarr
$PY bench/zarr/make_era5.py "$ERA5" --days "$DAYS"
exec $PY bench/distributed/bench_distributed.py --era5 "$ERA5" --qlink "$QLINK" --worker "$QLINK_WORKER" \
  --plugin "$PLUGIN" --out bench/results/distributed.json "$@"
