# qlink: top-level build. `make run` runs the main job, `make test` every test.
# Both start with scripts/setup.sh, which installs what they need (pinned).

SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD := build
export CARGO_TARGET_DIR ?= $(HOME)/.cache/qlink-target
PY := $(CURDIR)/.venv/bin/python
# Every cargo build selects the same packages (the whole workspace but the
# Python extension module, which maturin builds and whose features are the
# same), so every build resolves one feature set and DataFusion is compiled
# once, in one profile (Cargo.toml).
CARGO_WS := --release --locked --workspace --exclude qlink-python

.PHONY: all setup build build-release build-asan build-fuzz build-cli build-rust-plugins run lint wheel install-python test test-c test-valgrind \
        test-fuzz test-rust test-rust-plugins test-python test-wheel test-sqlite require-duckdb test-duckdb test-xarray test-engines test-flight test-security bench-core bench-sqlite bench-duckdb bench-datafusion bench-zarr bench-netcdf bench-distributed bench-fold bench-ffi bench-rust compat-xarray-sql bench-xarray bench-plans clean

all: build

setup:
	@scripts/setup.sh

# ---- C: libqlink, plugins, tools (CMake)
$(BUILD)/release/CMakeCache.txt:
	cmake -S . -B $(BUILD)/release -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
$(BUILD)/asan/CMakeCache.txt:
	cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DQL_SANITIZE=ON >/dev/null
$(BUILD)/fuzz/CMakeCache.txt:
	CC=clang-14 cmake -S . -B $(BUILD)/fuzz -DCMAKE_BUILD_TYPE=Debug -DQL_FUZZ=ON >/dev/null

build-release: $(BUILD)/release/CMakeCache.txt
	cmake --build $(BUILD)/release -j $(JOBS)
build-asan: $(BUILD)/asan/CMakeCache.txt
	cmake --build $(BUILD)/asan -j $(JOBS)
build-fuzz: $(BUILD)/fuzz/CMakeCache.txt
	cmake --build $(BUILD)/fuzz -j $(JOBS)

build: setup build-release

# ---- the qlink command-line tool (tools/cli), DataFusion inside, and its
# distributed worker (qlink-worker, same crate)
QLINK_CLI := $(CARGO_TARGET_DIR)/release/qlink
QLINK_WORKER := $(CARGO_TARGET_DIR)/release/qlink-worker
build-cli:
	cargo build $(CARGO_WS) --bin qlink --bin qlink-worker

# ---- plugins written in Rust (plugins/rust: a Cargo workspace of its own,
# since the crates it exports turn on other DataFusion features): each one
# a cdylib, copied next to the C plugins so every host and test finds it
# the same way, without its line tables (660 MB a plugin with them, 130 MB
# without; the symbols stay). Costs one more DataFusion build (README).
RUST_PLUGINS := qlink_template qlink_memtable qlink_json qlink_geo qlink_orc qlink_listing
build-rust-plugins: build-release
	cd plugins/rust && cargo build --release --locked
	@for p in $(RUST_PLUGINS); do src=$(CARGO_TARGET_DIR)/release/lib$$p.so; dst=$(BUILD)/release/plugins/$$p.so; \
	  [ $$dst -nt $$src ] || strip --strip-debug -o $$dst $$src || exit 1; done

# ---- the main job: SQL over Zarr stores of real observational data
# The C hosts answer first (C build only: hosts/<engine>/scripts/ferret.sh),
# then DataFusion's, each analysis checked against every C host's answer.
# A host joins by adding itself to RUN_ENGINES (its folder name = Engine).
RUN_ENGINES := SQLite=sqlite DuckDB=duckdb
run: build
	@for e in $(RUN_ENGINES); do d=$${e#*=}; \
	  hosts/$$d/scripts/ferret.sh $(BUILD)/release data/ferret-zarr $(BUILD)/release/ferret-$$d || exit 1; done
	$(MAKE) build-cli
	@QLINK=$(QLINK_CLI) ENGINE_ANSWERS="$(foreach e,$(RUN_ENGINES),$(firstword $(subst =, ,$(e)))=$(BUILD)/release/ferret-$(lastword $(subst =, ,$(e))))" scripts/run.sh
	@scripts/install-python.sh

# ---- the Python package: one self-contained wheel (scripts/wheel.sh), dist/qlink-*.whl:
# the plugins, both DuckDB extension builds, the SQLite extension and the
# PyO3 module, repaired by auditwheel (the plugins' libraries in qlink.libs).
# Reused while its sources are unchanged; the Rust build shares CARGO_TARGET_DIR.
wheel: setup
	scripts/wheel.sh

# That wheel (built or reused by the script) installed into QLINK_VENV
# (default .venv); `make run` runs the script last, after every answer, so
# `import qlink` works there.
install-python: setup
	scripts/install-python.sh

# ---- lint: C format (clang-format-14, on what a change adds or touches),
# cargo fmt --check, ruff check, and an SPDX line in every source file
# (scripts/lint.sh says which; LINT_BASE=REV sets where a change starts)
lint:
	scripts/lint.sh

# ---- tests
test: setup
	$(MAKE) lint test-c test-valgrind test-fuzz test-sqlite test-rust test-rust-plugins test-python test-wheel test-duckdb test-xarray test-engines test-flight test-security
	@echo "make test: all suites passed"

# Every C test under ASan + UBSan.
test-c: build-asan
	cd $(BUILD)/asan && ctest --output-on-failure -j $(JOBS)

# The C test host and libqlink tests under valgrind's leak checker.
test-valgrind: build-release
	scripts/valgrind.sh $(BUILD)/release

# A short libFuzzer run of every parser of outside input, over its corpus.
test-fuzz: build-fuzz
	scripts/fuzz-smoke.sh $(BUILD)/fuzz

# Every Rust crate's tests: qlink-sys (the ABI mirrors), the DataFusion host
# (gaps G1-G8), the qlink tool, the capsules, and the cross-component tests
# through real DataFusion (tests/datafusion: the fold planner vs stock).
test-rust:
	cargo test $(CARGO_WS)

# The Python package: the release wheel (the workspace's one profile, so it
# reuses the DataFusion build of `make run` and test-rust), installed into
# .venv, then its pytest suite.
# The Rust plugin SDK through the ABI (plugins/rust/sdk/tests), in the
# plugins' own workspace (all its packages, so features match the build).
test-rust-plugins: build-rust-plugins
	cd plugins/rust && cargo test --release --locked

test-python: build-cli install-python
	QLINK_CLI=$(QLINK_CLI) $(PY) -m pytest -q python/tests tools/cli/tests tests/plans

# The wheel as a user gets it (tests/wheel/run.sh): installed with the
# engines' packages into a fresh venv, no compiler on PATH, run outside the
# source tree without QLINK_BUILD_DIR: DuckDB (both builds), SQLite,
# datafusion-python, qlink.Session and qlink.xarray answer exactly, and the
# plugins' libraries are the wheel's own.
test-wheel: wheel
	tests/wheel/run.sh

# The SQLite host through apsw and the sqlite3 CLI (its C tests run in
# test-c): needs the C release build only.
test-sqlite: build-release
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) -m pytest -q hosts/sqlite/tests

# The DuckDB host through DuckDB's Python module and CLI (its C tests run
# in test-c).
# The suites skip a host that is not built; under `make` a missing DuckDB
# extension is an error instead (its headers come from scripts/setup.sh;
# a build dir configured before them needs `cmake -S . -B $(BUILD)/release`).
DUCKDB_EXT = $(BUILD)/release/hosts/duckdb/qlink.duckdb_extension
DUCKDB_EXT_V2 = $(BUILD)/release/hosts/duckdb/qlink_v2.duckdb_extension
require-duckdb: build-release
	@for ext in $(DUCKDB_EXT) $(DUCKDB_EXT_V2); do \
	  test -f $$ext || { echo "make: $$ext is not built (run scripts/setup.sh, then cmake -S . -B $(BUILD)/release)" >&2; exit 1; }; \
	done

test-duckdb: require-duckdb
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) -m pytest -q hosts/duckdb/tests

# qlink.xarray over the C build alone: xarray Datasets registered with
# qlink_ndarray and queried through DuckDB and SQLite (its C tests run in
# test-c; the DataFusion route, which needs the wheel, in test-python).
test-xarray: build-release
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) -m pytest -q plugins/ndarray/tests

# Cross-engine conformance (tests/engines): the same queries over the same
# plugins in every host that is built (DataFusion through the qlink CLI, in
# one process and over two loopback qlink-workers, the C hosts through their
# extensions), rows and types compared exactly; and the distributed tests
# (test_distributed.py: each worker's chunks, the fold planner).
test-engines: require-duckdb build-cli build-rust-plugins
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release QLINK_CLI=$(QLINK_CLI) QLINK_WORKER=$(QLINK_WORKER) $(PY) -m pytest -q tests/engines

# The Flight SQL server (`qlink serve`) through ADBC's Flight SQL driver:
# queries over qlink_sample and qlink_zarr, prepared statements, listings,
# error statuses, the secret, a client going away mid-stream.
test-flight: build-release build-cli install-python
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release QLINK_CLI=$(QLINK_CLI) $(PY) -m pytest -q tests/flight

# ---- benchmarks (print a table, write bench/results/*.json)
bench-core: build-release
	$(BUILD)/release/bench/core/ql_bench_core bench/results/core.json

# The DuckDB host: qlink_scan vs a native DuckDB table, qlink_zarr in DuckDB
# vs in DataFusion on the ERA5-like store, and that store as Parquet.
bench-duckdb: build build-cli
	QLINK=$(QLINK_CLI) bench/duckdb/run.sh

# The DataFusion host against native DataFusion: per-scan cost, 1,000
# registered UDFs, SELECT 1 and TPC-H SF1 planning with a planner installed.
bench-datafusion: setup
	mkdir -p bench/results
	cargo build $(CARGO_WS) --bin bench_datafusion
	$(CARGO_TARGET_DIR)/release/bench_datafusion --out bench/results/datafusion.json --tpch $(BUILD)/tpch-sf1

# qlink_zarr in the DataFusion host vs xarray-sql 0.6.0 vs xarray + pandas.
bench-zarr: build build-cli
	QLINK=$(QLINK_CLI) PLUGIN=$(BUILD)/release/plugins/qlink_zarr.so bench/zarr/run.sh

# qlink_netcdf (DuckDB and qlink.Session) vs xarray-sql 0.6.0 (in
# bench/zarr/.venv-xsql) vs xarray + pandas vs qlink_zarr, on an ERA5-like
# dataset as a chunked zlib netCDF-4 file, a netCDF-3 file and a Zarr store.
# bench/results/netcdf.json.
bench-netcdf: build-release
	bench/zarr/setup.sh
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) bench/netcdf/bench_netcdf.py --out bench/results/netcdf.json

# The distributed path (qlink sql --workers over two loopback qlink-workers)
# vs the single process on bench-zarr's ERA5-like store: overhead, bytes and
# chunks per worker, a model for N workers. bench/results/distributed.json.
bench-distributed: build build-cli
	QLINK=$(QLINK_CLI) QLINK_WORKER=$(QLINK_WORKER) PLUGIN=$(BUILD)/release/plugins/qlink_zarr.so bench/distributed/run.sh

# Stock DataFusion vs the qlink_fold planner installed in the DataFusion host.
bench-fold: setup
	mkdir -p bench/results
	cargo build $(CARGO_WS) --bin bench_fold
	$(CARGO_TARGET_DIR)/release/bench_fold --out bench/results/fold.json
	$(PY) bench/fold/plot.py bench/results/fold.json bench/results/fold.png

# The SQLite host vs a native SQLite table (sum over 1 M rows) and a
# qlink_zarr query with and without xBestIndex pushdown.
bench-sqlite: build
	mkdir -p bench/results
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) bench/sqlite/bench_sqlite.py bench/results/sqlite.json

# datafusion-python 55 native vs the datafusion-ffi reference provider and
# planner vs xarray-sql 0.6.0 vs qlink's capsules vs qlink.Session.
bench-ffi:
	bench/ffi/run.sh

# A Rust-exported plugin vs the same objects native, in every engine (bench/rust).
bench-rust: build-rust-plugins build-cli install-python
	bench/ffi/build_ref.sh release
	cargo build $(CARGO_WS) --bin bench_rust
	$(CARGO_TARGET_DIR)/release/bench_rust $(BUILD)/release/plugins $(BUILD)/bench-rust-datafusion.json
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) bench/rust/bench_rust.py $(CURDIR)/$(BUILD)/release/plugins \
	  $(BUILD)/bench-rust-datafusion.json bench/results/rust.json

# qlink.xarray vs datafusion-python's native table and xarray-sql 0.6.0 (in
# bench/zarr/.venv-xsql): SELECT * over 1,040 rows with 0 and 1,000 UDFs, and
# an ERA5-like Dataset in memory and from netCDF. bench/results/xarray.json.
bench-xarray: build-release
	bench/zarr/setup.sh
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) bench/xarray/bench_xarray.py --out bench/results/xarray.json

# Deep plans: join chains of depth 40/80/160, a one-layer GPT
# forward pass as one SQL statement over 11 xarray tables (2,822 scans in
# DataFusion; small model, and a large one with the qlink_fold planner), and
# SELECT * over 1,040 rows; every qlink route (qlink.xarray.Context,
# qlink.Session, DuckDB, SQLite) beside its engine's native tables, and
# xarray-sql 0.6.0. Context and Session use the qlink wheel in .venv (missing
# routes are reported). bench/results/plans.json.
bench-plans: build-release
	bench/zarr/setup.sh
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release $(PY) bench/plans/bench_plans.py --out bench/results/plans.json

# xarray-sql 0.6.0's own test suite (its sdist) against qlink.xarray standing
# in for xarray_sql: tests/compat_xarray_sql/REPORT.md (passed / failed / not
# applicable, with reasons). The DataFusion-route tests need the qlink wheel
# installed in .venv; without it they are reported "not run".
compat-xarray-sql: install-python
	$(PY) tests/compat_xarray_sql/run.py

clean:
	rm -rf $(BUILD)

# The security suite (tests/security): every gate between text and native
# code or a file, attacked, with a marker library proving no outside code ran.
test-security: require-duckdb build-cli build-rust-plugins
	QLINK_BUILD_DIR=$(CURDIR)/$(BUILD)/release QLINK_CLI=$(QLINK_CLI) QLINK_WORKER=$(QLINK_WORKER) $(PY) -m pytest -q tests/security
