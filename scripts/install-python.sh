#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The qlink package in a virtual environment (`make install-python`, the last
# step of `make run`): dist's wheel (scripts/wheel.sh, reused while its
# sources are unchanged) installed into QLINK_VENV (default .venv), its
# dependencies left to scripts/requirements.txt. Nothing to do when that
# venv already has this wheel ($QLINK_VENV/.qlink-wheel.key).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${QLINK_VENV:-$PWD/.venv}
scripts/wheel.sh
read -r key name <dist/.qlink-wheel.key
if [[ -f $venv/.qlink-wheel.key && "$(cat "$venv/.qlink-wheel.key")" == "$key $name" ]] &&
   "$venv/bin/python" -c 'import qlink._qlink' 2>/dev/null; then
  echo "scripts/install-python.sh: $venv has $name"
  exit 0
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "dist/$name"
echo "$key $name" >"$venv/.qlink-wheel.key"
echo "scripts/install-python.sh: installed $name into $venv (import qlink)"
