#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make bench-duckdb: write (or reuse) the ERA5-like store of make bench-zarr
# under data/bench/ (ERA5_DAYS days, default 31), then run bench_duckdb.py.
#   QLINK=path/to/qlink bench/duckdb/run.sh [bench_duckdb.py args...]
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p bench/results data/bench
PY=.venv/bin/python
DAYS=${ERA5_DAYS:-31}
ERA5=data/bench/era5-${DAYS}d.v3.zarr
[[ -e $ERA5 ]] || $PY bench/zarr/make_era5.py "$ERA5" --days "$DAYS"
exec $PY bench/duckdb/bench_duckdb.py --era5 "$ERA5" --qlink "${QLINK:-}" --out bench/results/duckdb.json "$@"
