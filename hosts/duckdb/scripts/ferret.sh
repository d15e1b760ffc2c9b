#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job's ferret analyses in DuckDB, through the same qlink_zarr.so
# the DataFusion host uses: the duckdb CLI (-unsigned) with the qlink
# extension, over the Zarr v3 stores convert_ferret.py writes (cached). The
# queries are plugins/zarr/scripts/ferret/*.sql as written, except where
# DuckDB's dialect differs (to_char is strftime): hosts/duckdb/scripts/ferret/
# holds those spellings. Each analysis runs twice: over the Zarr stores, and
# over the ferret netCDF files themselves through qlink_netcdf (FERRET_NC,
# default /usr/share/ferret-vis/data); the two answers must be the same.
# Each answer is printed and written as CSV to OUT (Zarr) and OUT/netcdf
# (netCDF), for the comparison with the other engines in
# plugins/zarr/scripts/main_job.sh.
#
#   ferret.sh [BUILD_DIR] [STORES] [OUT]   (defaults build/release, data/ferret-zarr, BUILD_DIR/ferret-duckdb)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build/release}
stores=${2:-data/ferret-zarr}
out=${3:-$build/ferret-duckdb}
ext=$PWD/$build/hosts/duckdb/qlink.duckdb_extension
plugin=$PWD/$build/plugins/qlink_zarr.so
netcdf=$PWD/$build/plugins/qlink_netcdf.so
nc=${FERRET_NC:-/usr/share/ferret-vis/data}
[[ -f $ext ]] || { echo "ferret.sh: $ext not built" >&2; exit 1; }
for f in "$plugin" "$netcdf"; do [[ -f $f ]] || { echo "ferret.sh: $f not built" >&2; exit 1; }; done
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores" >/dev/null
mkdir -p "$out/netcdf"

setup() { # setup zarr|netcdf: the four tables over the Zarr v3 stores or the netCDF files
  local spec
  printf "LOAD '%s';\n" "$ext"
  for t in coads=coads_climatology levitus=levitus_climatology winds=monthly_navy_winds etopo=etopo5; do
    if [[ $1 == zarr ]]; then spec=$plugin/table?path=$PWD/$stores/${t#*=}.v3.zarr
    else spec=$netcdf/table?path=$nc/${t#*=}.cdf; fi
    printf "CREATE VIEW %s AS SELECT * FROM qlink_scan('%s');\n" "${t%%=*}" "$spec"
  done
}

analysis() { # analysis NAME TITLE
  local file=hosts/duckdb/scripts/ferret/$1.sql route dir label
  [[ -f $file ]] || file=plugins/zarr/scripts/ferret/$1.sql
  for route in zarr netcdf; do
    if [[ $route == zarr ]]; then dir=$out label="Zarr"; else dir=$out/netcdf label="netCDF files"; fi
    printf '\n== DuckDB (%s): %s\n' "$label" "$2"
    { setup $route; cat "$file"; printf ';\n'; } | QLINK_PLUGIN_PATH=$PWD/$build/plugins .venv/bin/duckdb -unsigned -bail -box
    { setup $route; cat "$file"; printf ';\n'; } |
      QLINK_PLUGIN_PATH=$PWD/$build/plugins .venv/bin/duckdb -unsigned -bail -csv >"$dir/$1.csv"
  done
  if ! cmp -s "$out/$1.csv" "$out/netcdf/$1.csv"; then
    echo "ferret.sh: $1 differs between the Zarr stores and the netCDF files in DuckDB" >&2
    exit 1
  fi
}

analysis coads_zonal_sst_by_month "COADS: zonal-mean sea-surface temperature (deg C) by climatological month and latitude band"
analysis navy_windiest_months_by_region "Navy winds 1982-1992: the windiest months of the decade by region"
analysis levitus_temperature_by_depth "Levitus: mean ocean temperature and salinity by depth (land cells are NULL)"
analysis etopo5_highest_and_deepest "ETOPO5: the highest and deepest points on Earth (5-minute grid)"
