#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make test-wheel`: dist/qlink-*.whl as a user gets it. A fresh virtual
# environment (python -m venv) gets the wheel and the engines' packages from
# the registry (binary wheels only, versions from scripts/requirements.txt as
# constraints), with a PATH of that environment alone: no gcc, cc, clang or
# cargo. test_wheel.py then runs from a directory outside the source tree
# with QLINK_BUILD_DIR unset.
#
#   tests/wheel/run.sh [WHEEL]   (default: the one wheel in dist/)
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
wheel=${1:-$(ls dist/qlink-*.whl)}
[[ -f $wheel ]] || { echo "tests/wheel/run.sh: no wheel (make wheel)" >&2; exit 1; }
wheel=$(realpath "$wheel")
python=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')

tmp=$(mktemp -d /tmp/qlink-wheel-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
"$python" -m venv "$tmp/venv"
clean_env=(env -i HOME="$HOME" LANG=C.UTF-8 PATH="$tmp/venv/bin" TMPDIR=/tmp QLINK_SOURCE_TREE="$repo")
# what reaching the registry may need here: its address, proxies, certificates
for var in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_FIND_LINKS PIP_TRUSTED_HOST PIP_CERT PIP_DEFAULT_TIMEOUT \
           SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  if [[ -n ${!var:-} ]]; then clean_env+=("$var=${!var}"); fi
done
(cd "$tmp" && "${clean_env[@]}" "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary :all: \
   -c "$repo/scripts/requirements.txt" "$wheel" duckdb datafusion pyarrow numpy pandas xarray zarr apsw pytest)
installed=$(date +%s)
cp tests/wheel/test_wheel.py "$tmp/"
(cd "$tmp" && "${clean_env[@]}" "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider test_wheel.py)
echo "tests/wheel/run.sh: $(basename "$wheel"): install $((installed - start)) s, tests $(($(date +%s) - installed)) s"
