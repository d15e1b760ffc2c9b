#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: Debian's ferret-datasets written as Zarr v2 and v3 by
# convert_ferret.py (cached), analysed with SQL through the qlink_zarr plugin
# in the DataFusion host. Each analysis (scripts/ferret/*.sql) runs on the v3
# stores and prints its result; the same query on the v2 stores must give the
# same answer. Each analysis also runs on the ferret netCDF files themselves
# through the qlink_netcdf plugin, printed beside the Zarr answer, and must
# give the same answer exactly. One EXPLAIN shows the filters pushed into the
# Zarr scan.
#
#   main_job.sh [BUILD_DIR]     (default build/release)
#
# Environment: QLINK (the DataFusion host binary; default
# $CARGO_TARGET_DIR/release/qlink, else .../debug/qlink), FERRET_ZARR (where
# the stores go; default BUILD_DIR/ferret-zarr), FERRET_NC (the netCDF files;
# default /usr/share/ferret-vis/data), ENGINE_ANSWERS (space-
# separated ENGINE=DIR pairs, e.g. "SQLite=build/release/ferret-sqlite
# DuckDB=build/release/ferret-duckdb": folders of other hosts' CSV answers,
# each checked against DataFusion's, and DIR/netcdf against DataFusion's
# netCDF answers; SQLITE_ANSWERS=DIR still counts as SQLite=DIR).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build/release}
plugin=$build/plugins/qlink_zarr.so
netcdf=$build/plugins/qlink_netcdf.so
nc=${FERRET_NC:-/usr/share/ferret-vis/data}
target=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}
qlink=${QLINK:-}
if [[ -z $qlink ]]; then
  for cand in "$target/release/qlink" "$target/debug/qlink"; do
    if [[ -x $cand ]]; then qlink=$cand; break; fi
  done
fi
[[ -x ${qlink:-} ]] || { echo "main_job: no DataFusion host binary (build hosts/datafusion)" >&2; exit 1; }
for f in "$plugin" "$netcdf"; do [[ -f $f ]] || { echo "main_job: $f not built" >&2; exit 1; }; done
stores=${FERRET_ZARR:-$build/ferret-zarr}
queries=plugins/zarr/scripts/ferret
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores"

tables() { # tables VERSION: the --table options for every dataset (VERSION 2, 3 or nc)
  local v=$1
  if [[ $v == nc ]]; then
    echo "--table coads=$netcdf/table?path=$nc/coads_climatology.cdf" \
         "--table levitus=$netcdf/table?path=$nc/levitus_climatology.cdf" \
         "--table winds=$netcdf/table?path=$nc/monthly_navy_winds.cdf" \
         "--table etopo=$netcdf/table?path=$nc/etopo5.cdf"
    return
  fi
  echo "--table coads=$plugin/table?path=$stores/coads_climatology.v$v.zarr" \
       "--table levitus=$plugin/table?path=$stores/levitus_climatology.v$v.zarr" \
       "--table winds=$plugin/table?path=$stores/monthly_navy_winds.v$v.zarr" \
       "--table etopo=$plugin/table?path=$stores/etopo5.v$v.zarr"
}

analysis() { # analysis FILE TITLE
  local sql
  sql=$(cat "$queries/$1.sql")
  printf '\n== %s\n' "$2"
  # shellcheck disable=SC2046
  "$qlink" sql $(tables 3) "$sql"
  local zarr_csv netcdf_csv
  # shellcheck disable=SC2046
  zarr_csv=$("$qlink" sql $(tables 3) --format csv "$sql")
  # shellcheck disable=SC2046
  if ! diff <(echo "$zarr_csv") <("$qlink" sql $(tables 2) --format csv "$sql") >/dev/null; then
    echo "main_job: $1 differs between the Zarr v2 and v3 stores" >&2
    exit 1
  fi
  echo "(same answer from the Zarr v2 store)"
  printf -- '-- the same from the netCDF files (%s/*.cdf, qlink_netcdf)\n' "$nc"
  # shellcheck disable=SC2046
  "$qlink" sql $(tables nc) "$sql"
  # shellcheck disable=SC2046
  netcdf_csv=$("$qlink" sql $(tables nc) --format csv "$sql")
  if [[ $netcdf_csv != "$zarr_csv" ]]; then
    echo "main_job: $1 differs between the netCDF files and the Zarr stores" >&2
    diff <(echo "$zarr_csv") <(echo "$netcdf_csv") >&2 || true
    exit 1
  fi
  echo "(same answer from the netCDF files as from the Zarr stores)"
  # ENGINE_ANSWERS: the other hosts' CSV answers (hosts/<engine>/scripts/ferret.sh)
  local pair engine dir
  for pair in ${ENGINE_ANSWERS:-} ${SQLITE_ANSWERS:+SQLite=$SQLITE_ANSWERS}; do
    engine=${pair%%=*} dir=${pair#*=}
    [[ -f $dir/$1.csv ]] || continue
    .venv/bin/python hosts/sqlite/scripts/same_answers.py "$1: $engine vs DataFusion" "$dir/$1.csv" \
      <(echo "$zarr_csv")
    if [[ -f $dir/netcdf/$1.csv ]]; then
      .venv/bin/python hosts/sqlite/scripts/same_answers.py "$1: $engine vs DataFusion, netCDF files" \
        "$dir/netcdf/$1.csv" <(echo "$netcdf_csv")
      echo "(same answer in $engine, from the Zarr stores and from the netCDF files)"
    else
      echo "(same answer in $engine)"
    fi
  done
}

analysis coads_zonal_sst_by_month \
  "COADS: zonal-mean sea-surface temperature (deg C) by climatological month and latitude band"
analysis navy_windiest_months_by_region \
  "Navy winds 1982-1992: the windiest months of the decade by region"
analysis levitus_temperature_by_depth \
  "Levitus: mean ocean temperature and salinity by depth (land cells are NULL, not -1e10)"
analysis etopo5_highest_and_deepest \
  "ETOPO5: the highest and deepest points on Earth (5-minute grid)"

printf '\n== The Zarr scan: filters on dimensions prune chunks and slice inside them\n'
# shellcheck disable=SC2046
"$qlink" explain $(tables 3) \
  'SELECT avg("UWND") FROM winds WHERE "TIME" < TIMESTAMP '"'"'1983-01-01'"'"' AND "FNOCY" = 0'
