#!/usr/bin/env bash
# The main job's ferret analyses in SQLite, through the same qlink_zarr.so
# the DataFusion host uses: the sqlite3 CLI with the qlink extension, over
# the Zarr v3 stores convert_ferret.py writes (cached). Queries SQLite's
# dialect runs as written come from plugins/zarr/scripts/ferret/; the two
# it cannot (to_char, parenthesised UNION members) have SQLite spellings in
# hosts/sqlite/scripts/ferret/. Each answer is printed and written as CSV
# to OUT (for the comparison with the other engines).
#
#   ferret.sh [BUILD_DIR] [STORES] [OUT]   (defaults build/release, data/ferret-zarr, BUILD_DIR/ferret-sqlite)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build/release}
stores=${2:-data/ferret-zarr}
out=${3:-$build/ferret-sqlite}
ext=$build/hosts/sqlite/qlink
plugin=$PWD/$build/plugins/qlink_zarr.so
[[ -f $ext.so ]] || { echo "ferret.sh: $ext.so not built" >&2; exit 1; }
[[ -f $plugin ]] || { echo "ferret.sh: $plugin not built" >&2; exit 1; }
.venv/bin/python plugins/zarr/scripts/convert_ferret.py "$stores" >/dev/null
mkdir -p "$out"

setup() {
  cat <<SQL
.load $ext
CREATE VIRTUAL TABLE coads USING qlink('$plugin/table?path=$PWD/$stores/coads_climatology.v3.zarr');
CREATE VIRTUAL TABLE levitus USING qlink('$plugin/table?path=$PWD/$stores/levitus_climatology.v3.zarr');
CREATE VIRTUAL TABLE winds USING qlink('$plugin/table?path=$PWD/$stores/monthly_navy_winds.v3.zarr');
CREATE VIRTUAL TABLE etopo USING qlink('$plugin/table?path=$PWD/$stores/etopo5.v3.zarr');
SQL
}

analysis() { # analysis NAME TITLE
  local file=hosts/sqlite/scripts/ferret/$1.sql
  [[ -f $file ]] || file=plugins/zarr/scripts/ferret/$1.sql
  printf '\n== SQLite: %s\n' "$2"
  { setup; printf '.mode box\n'; cat "$file"; printf ';\n'; } | QLINK_PLUGIN_PATH=$PWD/$build/plugins sqlite3 -bail :memory:
  { setup; printf '.headers on\n.mode csv\n'; cat "$file"; printf ';\n'; } |
    QLINK_PLUGIN_PATH=$PWD/$build/plugins sqlite3 -bail :memory: >"$out/$1.csv"
}

analysis coads_zonal_sst_by_month "COADS: zonal-mean sea-surface temperature (deg C) by climatological month and latitude band"
analysis navy_windiest_months_by_region "Navy winds 1982-1992: the windiest months of the decade by region"
analysis levitus_temperature_by_depth "Levitus: mean ocean temperature and salinity by depth (land cells are NULL)"
analysis etopo5_highest_and_deepest "ETOPO5: the highest and deepest points on Earth (5-minute grid)"
