#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make bench-zarr`: set up the benchmark's venv, write (or reuse) the
# ERA5-like store and the ETOPO5 store under data/bench/, then run
# bench_zarr.py, which prints the markdown table and writes
# bench/results/zarr.json and bench/results/zarr.png.
#
#   QLINK=path/to/qlink PLUGIN=path/to/qlink_zarr.so bench/zarr/run.sh [bench_zarr.py args...]
#
# Defaults: QLINK=$CARGO_TARGET_DIR/release/qlink (CARGO_TARGET_DIR defaults
# to ~/.cache/qlink-target), PLUGIN=build/release/plugins/qlink_zarr.so,
# ERA5_DAYS=31 (744 hours x 181 x 360: 48.5 M rows, 388 MB uncompressed),
# written twice: zarr v3 with zarr-python 3's default zstd, and zarr v2 with
# zarr-python 2's default Blosc lz4 + shuffle.
set -euo pipefail
cd "$(dirname "$0")/../.."
bench/zarr/setup.sh
PY=bench/zarr/.venv-xsql/bin/python
QLINK=${QLINK:-${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}/release/qlink}
PLUGIN=${PLUGIN:-build/release/plugins/qlink_zarr.so}
DAYS=${ERA5_DAYS:-31}
ERA5=data/bench/era5-${DAYS}d.v3.zarr
# the same data as zarr-python 2 wrote it by default (v2, Blosc lz4 + shuffle)
ERA5_BLOSC=data/bench/era5-${DAYS}d.v2-blosc.zarr
$PY bench/zarr/make_era5.py "$ERA5" --days "$DAYS"
$PY bench/zarr/make_era5.py "$ERA5_BLOSC" --days "$DAYS" --codecs zarr2-defaults
$PY plugins/zarr/scripts/convert_ferret.py data/bench/ferret --only etopo5
for f in "$QLINK" "$PLUGIN"; do
  if [[ ! -e $f ]]; then
    echo "bench/zarr/run.sh: $f not found (build the qlink CLI and the qlink_zarr plugin first)" >&2
    exit 2
  fi
done
exec $PY bench/zarr/bench_zarr.py --era5 "$ERA5" --era5-blosc "$ERA5_BLOSC" --etopo5 data/bench/ferret/etopo5.v3.zarr \
  --qlink "$QLINK" --plugin "$PLUGIN" --out bench/results/zarr.json --png bench/results/zarr.png "$@"
