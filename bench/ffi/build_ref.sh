#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the datafusion-ffi reference crate (bench/ffi/ref_provider, module
# qlink_ffi_ref) with maturin in the shared $CARGO_TARGET_DIR and install it
# into .venv. Used by `make bench-ffi` and `make bench-rust`.
#
#   bench/ffi/build_ref.sh [release|dev]        (default: release)
#
# A first build compiles DataFusion for it (pyo3's build flags differ from the
# host's): about 21 minutes on 2 cores; later builds reuse it.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/qlink-target}
profile=${1:-release}
PY=.venv/bin/python
prof_args=(--release)
[[ $profile == release ]] || prof_args=(--profile "$profile")
out=build/bench-ffi/wheels
rm -rf "$out"
.venv/bin/maturin build "${prof_args[@]}" --locked -j "${JOBS:-2}" --quiet \
  -m bench/ffi/ref_provider/Cargo.toml --interpreter "$PY" --out "$out"
"$PY" -m pip install --quiet --no-deps --force-reinstall "$out"/qlink_ffi_ref-*.whl
echo "bench/ffi/build_ref.sh: installed the reference provider ($profile)"
