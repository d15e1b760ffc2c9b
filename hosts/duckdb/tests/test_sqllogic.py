# SPDX-License-Identifier: Apache-2.0
"""The SQL logic tests of hosts/duckdb/test/sql/*.test, run against both
builds (sqllogic.py reads DuckDB's .test format). Each file gets a fresh
in-memory database with the build loaded and QLINK_PLUGIN_PATH set to the
build's plugins folder, and these variables:

- PLUGIN_DIR: that folder, resolved; SAMPLE: its qlink_sample.so;
- TEST_DIR: an empty directory of the file's own, resolved;
- BUILD: v1 or v2; DDL: how the build runs qlink_attach and qlink_load
  (CALL, PRAGMA); NAMED: its named-argument sign there (:=, =);
- ZARR_STORE: a small Zarr store (conftest.py's `store`), when xarray is
  installed (files needing it say `require-env ZARR_STORE`).

Needs the C release build (QLINK_BUILD_DIR)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import BUILD, EXTS, ROOT, STATEMENT, builds, open_db
import sqllogic

duckdb = pytest.importorskip("duckdb")

TESTS = sorted((ROOT / "hosts" / "duckdb" / "test" / "sql").glob("*.test"))
PLUGINS = BUILD / "plugins"

pytestmark = pytest.mark.skipif(not EXTS["v1"].is_file(), reason=f"the DuckDB extension is not built: {EXTS['v1']}")


def variables(build: str, test_dir: Path, store: Path | None) -> dict:
    v = {"PLUGIN_DIR": PLUGINS.resolve(), "SAMPLE": (PLUGINS / "qlink_sample.so").resolve(),
         "TEST_DIR": test_dir.resolve(), "BUILD": build, "DDL": STATEMENT[build],
         "NAMED": ":=" if build == "v1" else "="}
    if store is not None:
        v["ZARR_STORE"] = store
    return v


@pytest.fixture
def zarr_store(request):
    """conftest.py's store, or None where it cannot be made."""
    try:
        return request.getfixturevalue("store")
    except pytest.skip.Exception:
        return None


@pytest.mark.parametrize("build", builds())
@pytest.mark.parametrize("path", TESTS, ids=[p.name for p in TESTS])
def test_sql(path, build, tmp_path, zarr_store):
    try:
        n = sqllogic.run(path, lambda: open_db(EXTS[build], str(PLUGINS)), build,
                         variables(build, tmp_path, zarr_store))
    except sqllogic.Skip as e:
        pytest.skip(str(e))
    assert n > 0


def test_there_are_sql_tests():
    assert len(TESTS) >= 5, TESTS


@pytest.mark.parametrize("text, message", [
    ("query I\nSELECT 41 + 1\n----\n41\n", "wrong result"),
    ("query IT\nSELECT 1, 'a'\n----\n1\tb\n", "wrong result"),
    ("query I\nSELECT 1, 2\n----\n1\t2\n", "2 columns, the file expects 1"),
    ("query I rowsort\nSELECT * FROM range(3)\n----\n0\n1\n", "wrong result"),
    ("statement ok\nSELECT * FROM qlink_scan(NULL)\n", "the spec is NULL"),
    ("statement error\nSELECT 1\n----\nanything\n", "succeeded, the file expects an error"),
    ("statement error\nSELECT * FROM qlink_scan(NULL)\n----\nthe spec is not NULL\n", "does not contain"),
    ("query I\nSELECT ${NOPE}\n----\n1\n", "${NOPE} is not a variable"),
    ("statement maybe\nSELECT 1\n", "a statement is 'statement ok' or 'statement error'"),
])
def test_the_runner_fails_on_a_wrong_outcome(tmp_path, text, message):
    path = tmp_path / "wrong.test"
    path.write_text("require qlink\n\n" + text)
    with pytest.raises(sqllogic.LogicError) as e:
        sqllogic.run(path, lambda: open_db(EXTS["v1"], str(PLUGINS)), "v1", variables("v1", tmp_path, None))
    assert message in str(e.value)


def test_the_runner_passes_a_right_outcome(tmp_path):
    path = tmp_path / "right.test"
    path.write_text("require qlink\n\n# a comment\nquery ITR rowsort\nSELECT * FROM (VALUES (2, '', 1.5), "
                    "(1, NULL, 2.0)) t\n----\n1\tNULL\t2.0\n2\t(empty)\t1.5\n\nonlyif v2\nstatement ok\nSELECT nope\n\n"
                    "statement error\nSELECT nope\n----\n<REGEX>:column \"nope\" was not found\n")
    assert sqllogic.run(path, lambda: open_db(EXTS["v1"], str(PLUGINS)), "v1", variables("v1", tmp_path, None)) == 2
