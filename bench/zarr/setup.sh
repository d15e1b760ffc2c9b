#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Creates bench/zarr/.venv-xsql from bench/zarr/requirements.txt, pinned
# and idempotently: nothing is done when the venv exists and the
# requirements file is unchanged. A fresh venv each time the pins change,
# so no package from an older pin set lingers.
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
venv=.venv-xsql
stamp=$venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d" " -f1)
if [[ -x $venv/bin/python && -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
echo "bench/zarr/setup.sh: creating $venv from bench/zarr/requirements.txt"
rm -rf "$venv"
"$PY" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r requirements.txt
echo "$want" >"$stamp"
