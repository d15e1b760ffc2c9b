#!/usr/bin/env bash
# The main job on its embedded default. Until the DataFusion host and the
# Zarr plugin land, this runs the C test host over the sample plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
exec build/release/tools/qlink-host-c build/release/plugins/qlink_sample.so
