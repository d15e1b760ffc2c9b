#!/usr/bin/env bash
# The main job on its embedded default. Until the DataFusion host and the
# Zarr plugin land, this runs the C test host over the sample plugin: its
# catalogue, a scan with pushed-down filters and projection, a scan with a
# filter the host applies itself, planner calls, its three functions, and the
# conformance kit on it and on a plugin that breaks a rule.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${QL_BUILD:-build/release}
host=$build/tools/qlink-host-c
plugin=$build/plugins/qlink_sample.so

step() {
  printf '\n== %s\n$' "$1"
  for arg in "${@:2}"; do
    if [[ $arg =~ ^[A-Za-z0-9_./,=-]+$ ]]; then printf ' %s' "$arg"; else printf " '%s'" "$arg"; fi
  done
  printf '\n'
  "${@:2}" 2>&1
}

step "catalogue" "$host" list "$plugin"
step "scan: value >= 10 AND value < 40 pushed down (EXACT), projection [value, square]" \
  "$host" scan "$plugin" 'series?stop=100&step=3' --columns value,square --where 'value >= 10' --where 'value < 40'
step "scan: square > 200 is UNSUPPORTED by the plugin, so the host filters; limit 5" \
  "$host" scan "$plugin" 'series?start=-20&stop=20&partitions=3' --where 'square > 200' --limit 5 --format jsonl
step "planner hook: drop_true_filters rewrites Filter(TRUE) away" "$host" plan "$plugin" drop_true_filters
step "planner hook: decline_all" "$host" plan "$plugin" decline_all
step "scalar UDF add_one over 1, NULL, 41" "$host" call "$plugin" add_one 1 NULL 41
step "aggregate UDAF sum_sq over 1, 2, NULL, 3" "$host" call "$plugin" sum_sq 1 2 NULL 3
step "window UDWF running_count over a partition of 4 rows" "$host" call "$plugin" running_count a b c d
step "conformance kit" "$build/tools/qlink-check" "$plugin" --spec 'series?stop=1000&step=7&partitions=5'
printf '\n== conformance kit on a plugin that breaks a rule on purpose (exact row counts off by one)\n'
printf '$ %s\n' "$build/tools/qlink-check $build/plugins/broken_stats.so"
if "$build/tools/qlink-check" "$build/plugins/broken_stats.so" 2>&1; then
  echo "qlink-check missed the broken statistics" >&2
  exit 1
fi
echo "(qlink-check exited non-zero, as it should)"
