#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs, pinned and idempotently, everything `make run` and `make test`
# need on a fresh machine: Debian packages, the Python virtual environment
# (.venv, from scripts/requirements.txt) and the Rust toolchain's crates
# (fetched by cargo on first build, pinned by Cargo.lock).
# Safe to run again: each step is skipped when already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  "cmake=3.25.1-1"
  "pkg-config=1.8.1-1"
  "clang-14=1:14.0.6-12"
  "clang-format-14=1:14.0.6-12"
  "libclang-rt-14-dev=1:14.0.6-12"
  "valgrind=1:3.19.0-1"
  "libblosc-dev=1.21.3+ds-1"
  "libzstd-dev=1.5.4+dfsg2-5+deb12u1"
  "liblz4-dev=1.9.4-1"
  "zlib1g-dev=1:1.2.13.dfsg-1"
  "libbz2-dev=1.0.8-5+b1"
  "liblzma-dev=5.4.1-1+deb12u2"
  "libjansson-dev=2.14-2"
  "libnetcdf-dev=1:4.9.0-3+b1"
  "ferret-datasets=7.6.0-5"
  "libsqlite3-dev=3.40.1-2+deb12u2"
  "sqlite3=3.40.1-2+deb12u2"
)

missing=()
for spec in "${APT_PACKAGES[@]}"; do
  name=${spec%%=*}
  want=${spec#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
  if [[ "$have" != "install ok installed $want" ]]; then
    missing+=("$spec")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python: one virtual environment for tests, data conversion and benchmarks.
PY=${PYTHON:-python3}
stamp=.venv/.requirements.sha256
want_hash=$(sha256sum scripts/requirements.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f $stamp || "$(cat $stamp)" != "$want_hash" ]]; then
  echo "setup: creating .venv from scripts/requirements.txt"
  "$PY" -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
  echo "$want_hash" >"$stamp"
fi

# DuckDB's C extension headers for the DuckDB host (hosts/duckdb): the stable
# C API V1 (duckdb.h, duckdb_extension.h) and the unstable V2 of this exact
# engine version (duckdb_v2.h, duckdb_extension_v2.h), taken from the sdist of
# the pinned duckdb package into build/deps/duckdb/include (git-ignored).
# CMake skips the DuckDB targets when they are absent.
DUCKDB_VERSION=$(sed -n 's/^duckdb==//p' scripts/requirements.txt)
duckdb_inc=build/deps/duckdb/include
if [[ ! -f $duckdb_inc/.version || "$(cat $duckdb_inc/.version)" != "$DUCKDB_VERSION" ||
      ! -f $duckdb_inc/duckdb_extension_v2.h ]]; then
  echo "setup: fetching DuckDB $DUCKDB_VERSION C headers (sdist)"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  .venv/bin/pip download -q --disable-pip-version-check --no-deps --no-binary duckdb -d "$tmp" "duckdb==$DUCKDB_VERSION"
  tar -xzf "$tmp"/duckdb-"$DUCKDB_VERSION".tar.gz -C "$tmp" --wildcards \
    "duckdb-$DUCKDB_VERSION/external/duckdb/src/include/duckdb.h" \
    "duckdb-$DUCKDB_VERSION/external/duckdb/src/include/duckdb_extension.h" \
    "duckdb-$DUCKDB_VERSION/external/duckdb/src/include/duckdb_v2.h" \
    "duckdb-$DUCKDB_VERSION/external/duckdb/src/include/duckdb_extension_v2.h"
  mkdir -p "$duckdb_inc"
  cp "$tmp/duckdb-$DUCKDB_VERSION/external/duckdb/src/include/"duckdb{,_extension}{,_v2}.h "$duckdb_inc/"
  echo "$DUCKDB_VERSION" >"$duckdb_inc/.version"
  rm -rf "$tmp"
  trap - EXIT
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
echo "setup: ok"
