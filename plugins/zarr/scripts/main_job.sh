#!/usr/bin/env bash
# The main job: Debian's ferret-datasets written as Zarr v2 and v3 by
# convert_ferret.py (cached), analysed with SQL through the qlink_zarr plugin
# in the DataFusion host. Each analysis (scripts/ferret/*.sql) runs on the v3
# stores and prints its result; the same query on the v2 stores must give the
# same answer. One EXPLAIN shows the filters pushed into the Zarr scan.
#
#   main_job.sh [BUILD_DIR]     (default build/release)
#
# Environment: QLINK (the DataFusion host binary; default
# $CARGO_TARGET_DIR/release/qlink, else .../debug/qlink), FERRET_ZARR (where
# the stores go; default BUILD_DIR/ferret-zarr), ENGINE_ANSWERS (space-
# separated ENGINE=DIR pairs, e.g. "SQLite=build/release/ferret-sqlite
# DuckDB=build/release/ferret-duckdb": folders of other hosts' CSV answers,
# each checked against DataFusion's; SQLITE_ANSWERS=DIR still counts as
# SQLite=DIR).
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build/release}
plugin=$build/plugins/qlink_zarr.so
target=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}
qlink=${QLINK:-}
if [[ -z $qlink ]]; then
  for cand in "$target/release/qlink" "$target/debug/qlink"; do
    if [[ -x $cand ]]; then qlink=$cand; break; fi
  done
fi
[[ -x ${qlink:-} ]] || { echo "main_job: no DataFusion host binary (build hosts/datafusion)" >&2; exit 1; }
[[ -f $plugin ]] || { echo "main_job: $plugin not built" >&2; exit 1; }
stores=${FERRET_ZARR:-$build/ferret-zarr}
queries=plugins/zarr/scripts/ferret
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores"

tables() { # tables VERSION: the --table options for every dataset
  local v=$1
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
  # shellcheck disable=SC2046
  if ! diff <("$qlink" sql $(tables 3) --format csv "$sql") <("$qlink" sql $(tables 2) --format csv "$sql") >/dev/null; then
    echo "main_job: $1 differs between the Zarr v2 and v3 stores" >&2
    exit 1
  fi
  echo "(same answer from the Zarr v2 store)"
  # ENGINE_ANSWERS: the other hosts' CSV answers (hosts/<engine>/scripts/ferret.sh)
  local pair engine dir
  for pair in ${ENGINE_ANSWERS:-} ${SQLITE_ANSWERS:+SQLite=$SQLITE_ANSWERS}; do
    engine=${pair%%=*} dir=${pair#*=}
    [[ -f $dir/$1.csv ]] || continue
    # shellcheck disable=SC2046
    .venv/bin/python hosts/sqlite/scripts/same_answers.py "$1: $engine vs DataFusion" "$dir/$1.csv" \
      <("$qlink" sql $(tables 3) --format csv "$sql")
    echo "(same answer in $engine)"
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
