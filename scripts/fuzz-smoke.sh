#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every libFuzzer target of a QL_FUZZ build over its checked-in corpus,
# then for QL_FUZZ_SECONDS more (default 10) of new inputs. A crash, leak or
# sanitizer report fails the run.
set -euo pipefail
build=${1:?usage: fuzz-smoke.sh BUILD_DIR}
list=$build/fuzz_targets.txt
if [[ ! -s $list ]]; then echo "fuzz-smoke: no fuzz targets"; exit 0; fi
seconds=${QL_FUZZ_SECONDS:-10}
n=0
while read -r bin corpus; do
  work=$(mktemp -d)
  echo "fuzz-smoke: $(basename "$bin") over $corpus (+${seconds}s)"
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
    "$work" "$corpus" >"$work/log" 2>&1 || { cat "$work/log" | tail -40; rm -rf "$work"; exit 1; }
  rm -rf "$work"
  n=$((n + 1))
done <"$list"
echo "fuzz-smoke: $n targets, no crash"
