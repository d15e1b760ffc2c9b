# SPDX-License-Identifier: Apache-2.0
"""The qlink DuckDB extension through DuckDB's Python module: qlink_scan,
its errors (the connection keeps working after each), the plugin path rule,
concurrency. Needs the C release build (QLINK_BUILD_DIR, default
build/release)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import EXTS, STATEMENT, builds, open_db

duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
EXT = BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension"
PLUGINS = BUILD / "plugins"
SAMPLE = PLUGINS / "qlink_sample.so"

pytestmark = pytest.mark.skipif(not EXT.is_file(), reason=f"the DuckDB extension is not built: {EXT}")


def connect(plugin_path: str | None = str(PLUGINS), threads: int | None = None, build: str = "v1"):
    """A connection with the extension (`build` "v1" or "v2") loaded in a
    child-free way: the extension reads QLINK_PLUGIN_PATH when it loads into
    a database."""
    return open_db(EXTS[build], plugin_path, threads)


def run_threads(n: int, work) -> list:
    """Run work(i) for i in 0..n-1, each in its own thread; the exceptions raised."""
    errors = []

    def guarded(i):
        try:
            work(i)
        except Exception as e:  # noqa: BLE001 - returned to the test
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_scan_by_name_and_path():
    con = connect()
    rows = con.execute("SELECT value, square, parity FROM qlink_scan('qlink_sample/series?start=-7&stop=5&step=3') "
                       "ORDER BY value").fetchall()
    assert rows == [(-7, 49, "odd"), (-4, 16, "even"), (-1, 1, "odd"), (2, 4, "even")]
    by_path = con.execute(f"SELECT sum(value)::BIGINT FROM qlink_scan('{SAMPLE}/series?stop=1001')").fetchone()
    assert by_path == (500500,)
    desc = con.execute("SELECT * FROM qlink_scan('qlink_sample/grid?ny=2&nx=2')").description
    assert [(d[0], str(d[1])) for d in desc] == [("y", "DOUBLE"), ("x", "BIGINT"), ("v", "DOUBLE")]


def test_projection_and_cardinality():
    con = connect()
    # Only the projected column reaches DuckDB; the statistics give the exact row count.
    plan = con.execute("EXPLAIN SELECT parity FROM qlink_scan('qlink_sample/series?stop=1234')").fetchall()
    text = "\n".join(r[1] for r in plan)
    assert "~1,234" in text or "~1234" in text, text
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=1234')").fetchone() == (1234,)
    assert con.execute("SELECT count(parity) FILTER (WHERE parity = 'odd') "
                       "FROM qlink_scan('qlink_sample/series?stop=1234')").fetchone() == (617,)


def test_partitions_run_in_parallel_threads():
    con = connect(threads=4)
    n = 3_000_000
    got = con.execute(f"SELECT sum(value)::HUGEINT, count(*), min(value), max(value) "
                      f"FROM qlink_scan('qlink_sample/series?stop={n}&partitions=16')").fetchone()
    assert got == (n * (n - 1) // 2, n, 0, n - 1)


def test_many_concurrent_queries():
    con = connect(threads=2)
    results = {}

    def worker(i):
        c = con.cursor()
        stop = 10_000 + i
        results[i] = c.execute(f"SELECT sum(square)::HUGEINT FROM qlink_scan('qlink_sample/series?stop={stop}"
                               f"&partitions={1 + i % 5}')").fetchone()[0]

    assert run_threads(16, worker) == []
    assert results == {i: sum(v * v for v in range(10_000 + i)) for i in range(16)}


@pytest.mark.parametrize("spec, message", [
    ("no-slash", "qlink_scan('no-slash'): table spec 'no-slash'"),
    ("qlink_sample/nope", "qlink_scan('qlink_sample/nope'): qlink_sample has no table provider 'nope'"),
    ("qlink_sample/series?stop=10&sttep=2", "sttep"),
    ("qlink_sample/series", "stop"),
    ("missing_plugin/series?stop=1", "plugin 'missing_plugin' is in no allowed plugin directory"),
])
def test_errors_name_the_spec_and_keep_the_connection(spec, message):
    con = connect()
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM qlink_scan('{spec}')").fetchall()
    assert message in str(e.value)
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=3')").fetchone() == (3,)


def test_path_rule(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "qlink_sample.so").symlink_to(SAMPLE)  # a symlink inside to a file outside: refused
    (allowed / "notes.txt").write_text("not a plugin\n")
    outside = tmp_path / "outside.so"
    outside.write_bytes(SAMPLE.read_bytes())
    inside_copy = allowed / "copy.so"
    inside_copy.write_bytes(SAMPLE.read_bytes())
    con = connect(str(allowed))
    assert con.execute(f"SELECT count(*) FROM qlink_scan('{inside_copy}/series?stop=7')").fetchone() == (7,)
    assert con.execute("SELECT count(*) FROM qlink_scan('copy/series?stop=8')").fetchone() == (8,)
    cases = [
        (f"{outside}/series?stop=1", "outside the allowed plugin directories"),
        (f"{allowed}/qlink_sample.so/series?stop=1", "outside the allowed plugin directories"),
        (f"{allowed}/../outside.so/series?stop=1", "outside the allowed plugin directories"),
        (f"{allowed}/notes.txt/series?stop=1", "is not a qlink plugin"),
    ]
    for spec, message in cases:
        with pytest.raises(duckdb.Error) as e:
            con.execute(f"SELECT * FROM qlink_scan('{spec}')").fetchall()
        assert message in str(e.value), spec
    assert con.execute("SELECT count(*) FROM qlink_scan('copy/series?stop=9')").fetchone() == (9,)


def test_no_directory_allowed():
    con = connect(None)
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM qlink_scan('{SAMPLE}/series?stop=1')").fetchall()
    assert "no plugin directory is allowed; set QLINK_PLUGIN_PATH" in str(e.value)


def test_cli_route():
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.is_file():
        pytest.skip("duckdb-cli is not installed")
    out = subprocess.run([str(cli), "-unsigned", "-csv", "-c",
                          f"LOAD '{EXT}'; SELECT parity, count(*) AS n FROM "
                          "qlink_scan('qlink_sample/series?stop=11') GROUP BY parity ORDER BY parity"],
                         capture_output=True, text=True, env={**os.environ, "QLINK_PLUGIN_PATH": str(PLUGINS)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["parity,n", "even,6", "odd,5"]


@pytest.mark.parametrize("build", builds())
def test_tables_attach_and_plugins(store, build):
    con = connect(build=build)
    spec = f"qlink_zarr/store?path={store}"
    assert con.execute(f"SELECT * FROM qlink_tables('{spec}') ORDER BY 1").fetchall() == [("lat",), ("time_lat",)]
    assert con.execute(f"{STATEMENT[build]} qlink_attach('era5', '{spec}')").fetchall() == [("lat",), ("time_lat",)]
    assert con.execute("SELECT lat, sp FROM era5.lat ORDER BY lat").fetchall() == [(10.0, 1.5), (20.0, 2.5)]
    r = con.execute("SELECT * FROM era5.time_lat WHERE lat = 20.0 ORDER BY time")
    assert [(d[0], str(d[1])) for d in r.description] == [("time", "TIMESTAMP_NS"), ("lat", "DOUBLE"),
                                                         ("t2m", "DOUBLE")]
    assert [row[2] for row in r.fetchall()] == [1.0, 3.0, 5.0]
    names = con.execute("SELECT name, abi_version FROM qlink_plugins() ORDER BY name").fetchall()
    assert names == [("qlink_zarr", "0.1")]
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_tables('qlink_sample/series?stop=1')").fetchall()
    assert "qlink_tables('qlink_sample/series?stop=1'): qlink_sample has no schema provider 'series'" in str(e.value)


@pytest.mark.parametrize("build", builds())
def test_attach_errors_keep_the_connection(store, build):
    con = connect(build=build)
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"{STATEMENT[build]} qlink_attach('x', 'qlink_sample/series')").fetchall()
    assert "qlink_attach('x', ...): qlink_sample has no schema provider 'series'" in str(e.value)
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"{STATEMENT[build]} qlink_attach('x', '/etc/passwd/store')").fetchall()
    assert "qlink_attach('x', ...): " in str(e.value)
    # a name needing quotes, twice (the views are replaced)
    spec = f"qlink_zarr/store?path={store}"
    for _ in range(2):
        assert con.execute(f"{STATEMENT[build]} qlink_attach('my \"db''s', '{spec}')").fetchall() == [("lat",),
                                                                                                   ("time_lat",)]
    assert con.execute('SELECT count(*) FROM "my ""db\'s".time_lat').fetchone() == (6,)


@pytest.mark.parametrize("build", builds())
def test_closed_database_reopens_read_only(store, build, tmp_path):
    """After the user's connection closes, the file opens read-only in the
    same process with the V2 build, which holds no connection (qlink_attach
    and qlink_load ran on the user's); the V1 build holds one for them, so
    the database stays open."""
    path = tmp_path / "db.duckdb"
    os.environ["QLINK_PLUGIN_PATH"] = str(PLUGINS)
    con = duckdb.connect(str(path), config={"allow_unsigned_extensions": True})
    con.execute(f"LOAD '{EXTS[build]}'")
    spec = f"qlink_zarr/store?path={store}"
    assert con.execute(f"{STATEMENT[build]} qlink_attach('era5', '{spec}')").fetchall() == [("lat",), ("time_lat",)]
    assert con.execute("SELECT count(*) FROM era5.time_lat").fetchone() == (6,)
    named = ":=" if build == "v1" else "="
    assert con.execute(f"{STATEMENT[build]} qlink_load('qlink_sample', name {named} 'add_one')").fetchall() == [
        ("add_one", "scalar", "loaded")]
    assert con.execute("SELECT add_one(1)").fetchone() == (2,)
    con.close()
    if build == "v1":
        with pytest.raises(duckdb.ConnectionException, match="different configuration"):
            duckdb.connect(str(path), read_only=True)
        return
    ro = duckdb.connect(str(path), read_only=True)
    assert ro.execute("SELECT table_schema, table_name FROM information_schema.tables "
                      "ORDER BY 2").fetchall() == [("era5", "lat"), ("era5", "time_lat")]
    ro.close()


def test_allow_is_the_owners_and_cannot_widen_later(tmp_path):
    con = connect(None)
    assert con.execute(f"SELECT * FROM qlink_allow('{PLUGINS}')").fetchall() == [(str(PLUGINS.resolve()),)]
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=4')").fetchone() == (4,)
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM qlink_allow('{tmp_path}')").fetchall()
    assert "refused: the allowed plugin directories are sealed (SQL named a plugin, or qlink_seal() ran)" in str(e.value)
    # Locked configuration: the owner's way to hand a connection to untrusted SQL.
    con2 = connect(None)
    con2.execute("SET lock_configuration = true")
    with pytest.raises(duckdb.Error) as e:
        con2.execute(f"SELECT * FROM qlink_allow('{PLUGINS}')").fetchall()
    assert "refused: DuckDB's lock_configuration is true" in str(e.value)


def test_python_helper_without_the_native_module(run_helper):
    code = ("import sys, qlink.duckdb as q; con = q.connect(); "
            "print(con.execute(\"SELECT sum(value)::BIGINT FROM qlink_scan('qlink_sample/series?stop=101')\").fetchone()[0]); "
            "print('qlink._core' in sys.modules)")
    assert run_helper(code) == ["5050", "False"]


def test_plugin_failing_in_its_third_batch_then_the_connection_works():
    con = connect(threads=1)
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT sum(x) FROM qlink_scan('broken_third_batch/numbers?n=100')").fetchall()
    assert ("qlink_scan('broken_third_batch/numbers?n=100'): numbers: reading batch 3 failed (deliberately)"
            in str(e.value))
    assert con.execute("SELECT sum(value)::BIGINT FROM qlink_scan('qlink_sample/series?stop=10')").fetchone() == (45,)


def test_plugin_of_another_abi_major_is_refused():
    con = connect()
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_scan('broken_abi_major/numbers')").fetchall()
    assert "qlink_scan('broken_abi_major/numbers'): " in str(e.value)
    assert "version" in str(e.value).lower()
    assert con.execute("SELECT 1").fetchone() == (1,)


def test_interrupt_cancels_the_scan():
    con = connect(threads=2)
    timer = threading.Timer(0.5, con.interrupt)
    timer.start()
    try:
        with pytest.raises(duckdb.InterruptException):
            con.execute("SELECT sum(square)::HUGEINT FROM qlink_scan('qlink_sample/series?stop=3000000000')").fetchall()
    finally:
        timer.cancel()
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=5')").fetchone() == (5,)


def test_memory_limit_follows_duckdb(tmp_path):
    xr = pytest.importorskip("xarray")
    np = pytest.importorskip("numpy")
    path = tmp_path / "big.zarr"
    ds = xr.Dataset({"v": (("y", "x"), np.ones((1000, 600)))}, coords={"y": np.arange(1000.0), "x": np.arange(600.0)})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", consolidated=True, encoding={"v": {"chunks": (1000, 600)}})
    con = connect(threads=1)
    sql = f"SELECT sum(v) FROM qlink_scan('qlink_zarr/store?path={path}', \"table\" := 'y_x')"
    con.execute("SET memory_limit = '3MB'")
    with pytest.raises(duckdb.Error) as e:
        con.execute(sql).fetchall()
    assert "beyond the memory limit" in str(e.value) and "Resources exhausted" in str(e.value)
    con.execute("SET memory_limit = '1GB'")
    assert con.execute(sql).fetchone() == (600000.0,)
