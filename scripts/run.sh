#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: Debian's ferret-datasets (COADS, Levitus, Navy winds, ETOPO5)
# converted once to Zarr v2 and v3 with xarray (cached under data/ferret-zarr),
# then analysed with SQL through the qlink_zarr plugin in the DataFusion host,
# and the same analyses from the netCDF files themselves through qlink_netcdf
# (the two routes' answers must be equal).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s%N)
FERRET_ZARR=${FERRET_ZARR:-data/ferret-zarr} plugins/zarr/scripts/main_job.sh build/release
end=$(date +%s%N)
ms=$(((end - start) / 1000000))
printf '\nmain job: %d.%03d s (the Zarr conversion is cached after the first run)\n' $((ms / 1000)) $((ms % 1000))
# how to do the same on one's own store (every table as mine.<dimensions>)
qlink=${QLINK:-${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}/release/qlink}
printf '\nSQL over your own Zarr store:\n  %s sql --schema mine=%s/store?path=/path/to/store.zarr "SHOW TABLES"\n' \
  "$qlink" "$PWD/build/release/plugins/qlink_zarr.so"
printf '\nSQL over your own netCDF file (or a folder or glob of them):\n  %s sql --schema mine=%s/store?path=/path/to/file.nc "SHOW TABLES"\n' \
  "$qlink" "$PWD/build/release/plugins/qlink_netcdf.so"
