# SPDX-License-Identifier: Apache-2.0
"""Plugins written in Rust behind DuckDB's sandbox (docs/security/duckdb.md):
qlink_listing reads Parquet files with DataFusion's listing table, which
would open paths itself; the SDK hands it the host's object stores instead
(qlink_plugin::services::object_store), and parses paths without probing the
disk (qlink_plugin::listing). Proof that a refused file is never opened: the
FIFO watcher of test_netcdf.py, which sees any process open it for reading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_duckdb import BUILDS, PLUGINS, STMT, allow, open_ext, plugins_with, refused  # noqa: F401 (open_ext: a fixture)
from test_netcdf import WORDS, Watcher

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.skipif(not (PLUGINS / "qlink_listing.so").is_file(),
                                reason="the Rust plugins are not built (make build-rust-plugins)")


def parquet(path: Path, values) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"v": pa.array(values, pa.float64())}), path)
    return path


@pytest.mark.parametrize("build", BUILDS)
def test_refused_parquet_paths_are_never_opened(open_ext, build, tmp_path):
    inside = parquet(tmp_path / "inside" / "a.parquet", [1.0, 2.0, 3.0])
    parquet(tmp_path / "inside" / "b.parquet", [4.0])
    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "secret.parquet"
    os.mkfifo(fifo)
    secret = parquet(outside / "secret2.parquet", [100.0])
    (tmp_path / "inside" / "link").mkdir()
    (tmp_path / "inside" / "link" / "c.parquet").symlink_to(fifo)
    (tmp_path / "inside" / "link2").mkdir()
    (tmp_path / "inside" / "link2" / "d.parquet").symlink_to(secret)
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_listing"))
    q = "SELECT sum(v) FROM qlink_scan('qlink_listing/parquet?path={}')"
    assert con.execute(q.format(inside)).fetchall() == [(6.0,)]
    con.execute(f"SET allowed_directories = ['{tmp_path / 'inside'}']")
    con.execute("SET enable_external_access = false")
    assert con.execute(q.format(inside)).fetchall() == [(6.0,)]
    assert con.execute(q.format(f"{tmp_path}/inside/*.parquet")).fetchall() == [(10.0,)]
    with Watcher(fifo) as w:
        refused(con, q.format(fifo), WORDS)
        refused(con, q.format(f"{tmp_path}/inside/../outside/secret.parquet"), WORDS)
        refused(con, q.format(f"{tmp_path}/outside/"), WORDS)
        refused(con, q.format(f"{tmp_path}/outside/*.parquet"), WORDS)
        refused(con, q.format(f"file://{fifo}"), WORDS)
        refused(con, q.format(tmp_path / "inside" / "link" / "c.parquet"), WORDS)
    assert not w.seen
    # a symlink out of the allowed folder, found by a folder listing: the
    # session's file store refuses to read it
    refused(con, q.format(f"{tmp_path}/inside/link2/"), WORDS)


@pytest.mark.parametrize("build", BUILDS)
def test_refused_folders_are_never_attached_as_schemas(open_ext, build, tmp_path):
    """qlink_listing's `folder` schema (DataFusion's ListingSchemaProvider)
    lists and reads through the same gate: a folder outside the allowed
    ones is refused before it is listed, a FIFO in it is never opened, and
    an allowed folder holding a link out of it is refused as a whole."""
    parquet(tmp_path / "inside" / "lake" / "trips.parquet", [1.0, 2.0])
    parquet(tmp_path / "inside" / "lake" / "parts" / "a.parquet", [3.0])
    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "secret.parquet"
    os.mkfifo(fifo)
    secret = parquet(tmp_path / "elsewhere" / "s.parquet", [100.0])
    (tmp_path / "inside" / "linked").mkdir()
    (tmp_path / "inside" / "linked" / "s.parquet").symlink_to(secret)
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_listing"))
    attach = f"{STMT[build]} qlink_attach('{{}}', 'qlink_listing/folder?path={{}}')"
    con.execute(attach.format("first", tmp_path / "inside" / "lake")).fetchall()  # loads the plugin
    con.execute(f"SET allowed_directories = ['{tmp_path / 'inside'}']")
    con.execute("SET enable_external_access = false")
    con.execute(attach.format("lake", tmp_path / "inside" / "lake")).fetchall()
    assert con.execute("SELECT sum(v) FROM lake.trips").fetchall() == [(3.0,)]
    assert con.execute("SELECT sum(v) FROM lake.parts").fetchall() == [(3.0,)]
    with Watcher(fifo) as w:
        refused(con, attach.format("o1", outside), WORDS)
        refused(con, attach.format("o2", f"{tmp_path}/inside/../outside"), WORDS)
        refused(con, attach.format("o3", f"file://{outside}/"), WORDS)
    assert not w.seen
    refused(con, attach.format("o4", tmp_path / "inside" / "linked"), WORDS)


@pytest.mark.parametrize("build", BUILDS)
def test_untyped_functions_are_refused_by_name(open_ext, build, tmp_path):
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_json"))
    load = f"{STMT[build]} qlink_load('qlink_json')"
    rows = con.execute(load).fetchall()
    why = ("refused: it declares no argument types, and DuckDB's C API fixes a function's parameter and return "
           "types when it is registered")
    by_name = {r[0]: r[2] for r in rows}
    assert by_name["json_get_str"] == why and by_name["json_contains"] == why
