#!/usr/bin/env bash
# The main job's ferret analyses in DuckDB, through the same qlink_zarr.so
# the DataFusion host uses: the duckdb CLI (-unsigned) with the qlink
# extension, over the Zarr v3 stores convert_ferret.py writes (cached). The
# queries are plugins/zarr/scripts/ferret/*.sql as written, except where
# DuckDB's dialect differs (to_char is strftime): hosts/duckdb/scripts/ferret/
# holds those spellings. Each answer is
# printed and written as CSV to OUT (for the comparison with the other
# engines in plugins/zarr/scripts/main_job.sh).
#
#   ferret.sh [BUILD_DIR] [STORES] [OUT]   (defaults build/release, data/ferret-zarr, BUILD_DIR/ferret-duckdb)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build/release}
stores=${2:-data/ferret-zarr}
out=${3:-$build/ferret-duckdb}
ext=$PWD/$build/hosts/duckdb/qlink.duckdb_extension
plugin=$PWD/$build/plugins/qlink_zarr.so
[[ -f $ext ]] || { echo "ferret.sh: $ext not built" >&2; exit 1; }
[[ -f $plugin ]] || { echo "ferret.sh: $plugin not built" >&2; exit 1; }
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores" >/dev/null
mkdir -p "$out"

setup() {
  cat <<SQL
LOAD '$ext';
CREATE VIEW coads AS SELECT * FROM qlink_scan('$plugin/table?path=$PWD/$stores/coads_climatology.v3.zarr');
CREATE VIEW levitus AS SELECT * FROM qlink_scan('$plugin/table?path=$PWD/$stores/levitus_climatology.v3.zarr');
CREATE VIEW winds AS SELECT * FROM qlink_scan('$plugin/table?path=$PWD/$stores/monthly_navy_winds.v3.zarr');
CREATE VIEW etopo AS SELECT * FROM qlink_scan('$plugin/table?path=$PWD/$stores/etopo5.v3.zarr');
SQL
}

analysis() { # analysis NAME TITLE
  local file=hosts/duckdb/scripts/ferret/$1.sql
  [[ -f $file ]] || file=plugins/zarr/scripts/ferret/$1.sql
  printf '\n== DuckDB: %s\n' "$2"
  { setup; cat "$file"; printf ';\n'; } | QLINK_PLUGIN_PATH=$PWD/$build/plugins .venv/bin/duckdb -unsigned -bail -box
  { setup; cat "$file"; printf ';\n'; } |
    QLINK_PLUGIN_PATH=$PWD/$build/plugins .venv/bin/duckdb -unsigned -bail -csv >"$out/$1.csv"
}

analysis coads_zonal_sst_by_month "COADS: zonal-mean sea-surface temperature (deg C) by climatological month and latitude band"
analysis navy_windiest_months_by_region "Navy winds 1982-1992: the windiest months of the decade by region"
analysis levitus_temperature_by_depth "Levitus: mean ocean temperature and salinity by depth (land cells are NULL)"
analysis etopo5_highest_and_deepest "ETOPO5: the highest and deepest points on Earth (5-minute grid)"
