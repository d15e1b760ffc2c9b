#!/usr/bin/env bash
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
for var in PIP_INDEX_URL PIP_FIND_LINKS PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE; do
  [[ -n ${!var:-} ]] && clean_env+=("$var=${!var}")
done
(cd "$tmp" && "${clean_env[@]}" "$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check --only-binary :all: \
   -c "$repo/scripts/requirements.txt" "$wheel" duckdb datafusion pyarrow numpy pandas xarray zarr apsw pytest)
installed=$(date +%s)
cp tests/wheel/test_wheel.py "$tmp/"
(cd "$tmp" && "${clean_env[@]}" "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider test_wheel.py)
echo "tests/wheel/run.sh: $(basename "$wheel"): install $((installed - start)) s, tests $(($(date +%s) - installed)) s"
