#!/usr/bin/env bash
# The main job's queries: Debian's ferret-datasets as Zarr v2 and v3 (written
# by convert_ferret.py, cached), queried with SQL through the DataFusion host
# and the qlink_zarr plugin. Each query prints its result; one EXPLAIN shows
# the pushed-down scan.
#
#   main_job.sh [BUILD_DIR]     (default build/release)
#
# Environment: QLINK (the DataFusion host binary; default
# $CARGO_TARGET_DIR/release/qlink, else .../debug/qlink), FERRET_ZARR (where
# the stores go; default BUILD_DIR/ferret-zarr).
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
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores"

run() {
  printf '\n== %s\n' "$1"
  shift
  "$qlink" "$@"
}

for v in 2 3; do
  coads="coads=$plugin/table?path=$stores/coads_climatology.v$v.zarr"
  levitus="levitus=$plugin/table?path=$stores/levitus_climatology.v$v.zarr"
  winds="winds=$plugin/table?path=$stores/monthly_navy_winds.v$v.zarr"
  etopo="etopo=$plugin/table?path=$stores/etopo5.v$v.zarr"
  run "v$v coads: tropical SST per climatological month (TIME stays hours since year 0: no wrong dates)" \
    sql --table "$coads" 'SELECT "TIME" AS hours_since_year0, count("SST") AS ocean_cells, round(avg("SST"), 3) AS mean_sst
      FROM coads WHERE "COADSY" BETWEEN -10 AND 10 GROUP BY "TIME" ORDER BY "TIME"'
  run "v$v levitus: global mean temperature by depth (land is NULL, not -1e10)" \
    sql --table "$levitus" 'SELECT "ZAXLEVITR" AS depth_m, count("TEMP") AS cells, round(avg("TEMP"), 3) AS mean_temp
      FROM levitus GROUP BY "ZAXLEVITR" ORDER BY "ZAXLEVITR"'
  run "v$v navy winds: equatorial Pacific zonal wind, 1982-1983 (El Nino)" \
    sql --table "$winds" 'SELECT date_trunc('"'"'month'"'"', "TIME") AS month, round(avg("UWND"), 3) AS u
      FROM winds WHERE "FNOCY" BETWEEN -5 AND 5 AND "FNOCX" BETWEEN 160 AND 270
        AND "TIME" >= TIMESTAMP '"'"'1982-01-01'"'"' AND "TIME" < TIMESTAMP '"'"'1984-01-01'"'"'
      GROUP BY 1 ORDER BY 1'
  run "v$v etopo5: land fraction and highest point by latitude band" \
    sql --table "$etopo" 'SELECT floor("ETOPO05_Y" / 30) * 30 AS band, round(avg(CASE WHEN "ROSE" > 0 THEN 1.0 ELSE 0.0 END), 4) AS land,
        max("ROSE") AS highest FROM etopo GROUP BY 1 ORDER BY 1'
done
run "the scan node: filters on dimensions prune partitions and chunks" \
  explain --table "winds=$plugin/table?path=$stores/monthly_navy_winds.v3.zarr" \
  'SELECT avg("UWND") FROM winds WHERE "TIME" < TIMESTAMP '"'"'1983-01-01'"'"' AND "FNOCY" = 0'
