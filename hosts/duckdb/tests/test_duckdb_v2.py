# SPDX-License-Identifier: Apache-2.0
"""The V2 build of the qlink DuckDB extension (qlink_v2.duckdb_extension,
DuckDB's unstable C API V2 of the pinned engine version): the same scans as
the V1 build, plus filter pushdown. Every filtered query is checked against
the V1 build (where DuckDB filters every row itself) and against values
computed here; EXPLAIN shows which filters DuckDB dropped, DuckDB's log
which the scan received, and a box query over a spatially chunked store
reads fewer bytes. Needs the C release build (QLINK_BUILD_DIR)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import open_db

duckdb = pytest.importorskip("duckdb")

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
EXT_V1 = BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension"
EXT_V2 = BUILD / "hosts" / "duckdb" / "qlink_v2.duckdb_extension"
PLUGINS = BUILD / "plugins"
PINNED = next(line.split("==")[1] for line in (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
              if line.startswith("duckdb=="))

pytestmark = [
    pytest.mark.skipif(not EXT_V2.is_file(), reason=f"the V2 DuckDB extension is not built: {EXT_V2}"),
    pytest.mark.skipif(duckdb.__version__ != PINNED, reason=f"the V2 build loads into duckdb {PINNED} only"),
]

SERIES = "qlink_scan('qlink_sample/series?start=-50&stop=50&partitions=3')"


def connect(ext: Path = EXT_V2, threads: int | None = None):
    return open_db(ext, str(PLUGINS), threads)


def plan_of(con, sql: str) -> str:
    return "\n".join(r[1] for r in con.execute("EXPLAIN " + sql).fetchall())


def rchar() -> int:
    """Bytes this process read so far (qlink_zarr reads chunks with pread)."""
    line = next(x for x in Path("/proc/self/io").read_text().splitlines() if x.startswith("rchar:"))
    return int(line.split()[1])


# (WHERE clause, the values of `value` in -50..49 that pass), computed by hand.
VALUES = range(-50, 50)
FILTERS = [
    ("value = 7", [7]),
    ("value < -47", [-50, -49, -48]),
    ("value >= 47", [47, 48, 49]),
    ("7 < value AND value <= 9", [8, 9]),
    ("value > 3 AND value < 6", [4, 5]),                # DuckDB folds this into an (exclusive) BETWEEN
    ("value BETWEEN 3 AND 6", [3, 4, 5, 6]),
    ("value NOT BETWEEN -49 AND 48", [-50, 49]),
    ("value IN (-3, 0, 5, 99)", [-3, 0, 5]),
    ("value NOT IN (-50, -49) AND value < -47", [-48]),
    ("value = 1 OR value = 40", [1, 40]),
    ("NOT (value >= -48)", [-50, -49]),
    ("value IS NULL", []),
    ("value IS NOT NULL AND value > 48", [49]),
    ("value <> 0 AND value > -2 AND value < 2", [-1, 1]),
    ("CAST(value AS DOUBLE) < -48.5", [-50, -49]),
    ("value::DOUBLE > 48.5", [49]),
    ("value IS NOT DISTINCT FROM 12", [12]),
    ("parity = 'odd' AND value > 45", [47, 49]),
    ("square = 2401", [-49, 49]),
    ("square < 4 AND parity = 'even'", [0]),
    ("abs(value) = 50", [-50]),                         # a function call: DuckDB's alone
]


@pytest.mark.parametrize("where,expected", FILTERS, ids=[f[0] for f in FILTERS])
def test_filtered_rows_are_exact_and_equal_v1(where, expected):
    sql = f"SELECT value, square, parity FROM {SERIES} WHERE {where} ORDER BY value"
    want = [(v, v * v, "even" if v % 2 == 0 else "odd") for v in expected]
    assert connect().execute(sql).fetchall() == want
    assert connect(EXT_V1).execute(sql).fetchall() == want


def test_accepted_filters_leave_no_duckdb_filter():
    con = connect()
    # The sample plugin evaluates comparisons of `value` with a constant exactly:
    # DuckDB drops its Filter. It does not evaluate <> (kept by DuckDB), and a
    # BETWEEN only prunes (its bounds' inclusiveness is not in the C API).
    assert "Filter" not in plan_of(con, f"SELECT count(*) FROM {SERIES} WHERE value = 5")
    assert "Filter" not in plan_of(con, f"SELECT count(*) FROM {SERIES} WHERE value < 7")
    kept = plan_of(con, f"SELECT count(*) FROM {SERIES} WHERE value <> 5")
    assert "Filter" in kept and "value != 5" in kept.replace("<>", "!="), kept
    assert "Filter" in plan_of(con, f"SELECT count(*) FROM {SERIES} WHERE value BETWEEN 3 AND 6")
    # V1: no pushdown, DuckDB filters every row.
    assert "Filter" in plan_of(connect(EXT_V1), f"SELECT count(*) FROM {SERIES} WHERE value = 5")


def test_profile_shows_the_scan_returning_only_matching_rows():
    sql = "SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=1000000') WHERE value >= 999990"
    for ext, scan_rows in ((EXT_V2, "10 rows"), (EXT_V1, "1,000,000 rows")):
        con = connect(ext)
        profile = con.execute("EXPLAIN ANALYZE " + sql).fetchall()[0][1]
        scan = profile[profile.index("QLINK_SCAN"):]
        assert scan_rows in scan, profile
        assert con.execute(sql).fetchone() == (10,)


def test_the_log_names_each_pushed_filter():
    con = connect()
    con.execute("CALL enable_logging(level = 'info')")
    con.execute(f"SELECT count(*) FROM {SERIES} WHERE value < 7 AND value <> 3").fetchall()
    con.execute(f"SELECT count(*) FROM {SERIES} WHERE value > 3 AND value < 6").fetchall()
    logs = [m for (m,) in con.execute("SELECT message FROM duckdb_logs WHERE type = 'qlink' ORDER BY timestamp")
            .fetchall()]
    label = "qlink_scan('qlink_sample/series?start=-50&stop=50&partitions=3')"
    assert logs == [f"{label}: filter value < 7 exact, accepted",
                    f"{label}: filter value BETWEEN 3 AND 6 to prune (BETWEEN), DuckDB filters too"], logs


def test_errors_keep_the_connection():
    con = connect()
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_scan('qlink_sample/nope') WHERE value = 1").fetchall()
    assert "qlink_scan('qlink_sample/nope'): " in str(e.value)
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_scan('/etc/passwd/series')").fetchall()
    assert "qlink_scan('/etc/passwd/series'): " in str(e.value)
    assert con.execute(f"SELECT count(*) FROM {SERIES} WHERE value > 0").fetchone() == (49,)
    # a plugin failing while the scan runs: its message, then the connection works
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT sum(x) FROM qlink_scan('broken_third_batch/numbers?n=100') WHERE x >= 0").fetchall()
    assert ("qlink_scan('broken_third_batch/numbers?n=100'): numbers: reading batch 3 failed (deliberately)"
            in str(e.value))
    assert con.execute(f"SELECT count(*) FROM {SERIES} WHERE value < 0").fetchone() == (50,)


def test_catalog_functions_and_allow():
    con = connect()
    con.execute(f"SELECT count(*) FROM {SERIES}").fetchall()
    assert con.execute("SELECT name, abi_version FROM qlink_plugins()").fetchall() == [("qlink_sample", "0.1")]
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_allow('/tmp')").fetchall()
    assert "qlink_allow('/tmp'): " in str(e.value) and "the allowed plugin directories are sealed" in str(e.value)
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM qlink_tables('qlink_sample/series?stop=1')").fetchall()
    assert "qlink_tables('qlink_sample/series?stop=1'): qlink_sample has no schema provider 'series'" in str(e.value)


def test_call_forms_say_what_to_use():
    # qlink.duckdb.connect() loads this build under the pinned duckdb, so
    # CALL qlink_attach / CALL qlink_load (the V1 build's forms) must not end
    # in DuckDB's "Table Function with name qlink_attach does not exist!"
    con = connect()
    why = ("DuckDB's C API V2 runs statements only on a connection, and a table function's bind gets none (its "
           "context reaches no connection or instance); the V2 build runs it as a PRAGMA, on the caller's "
           "connection: ")
    for sql, message in [
        ("CALL qlink_attach('s', 'qlink_sample/series')", "CALL qlink_attach: " + why + "PRAGMA qlink_attach('NAME', 'SPEC')"),
        ("CALL qlink_load('qlink_sample')", "CALL qlink_load: " + why + "PRAGMA qlink_load('PLUGIN'[, name = 'NAME'])"),
        ("CALL qlink_load('qlink_sample', name := 'add_one')",
         "CALL qlink_load: " + why + "PRAGMA qlink_load('PLUGIN'[, name = 'NAME'])"),
    ]:
        with pytest.raises(duckdb.InvalidInputException) as e:
            con.execute(sql).fetchall()
        assert str(e.value) == "Invalid Input Error: " + message
    assert con.execute(f"SELECT count(*) FROM {SERIES} WHERE value > 0").fetchone() == (49,)


def test_many_threads_with_filters():
    con = connect(threads=4)
    sql = "SELECT count(*), sum(value) FROM qlink_scan('qlink_sample/series?stop=1000000&partitions=8') " \
          "WHERE value >= 1000 AND value < 900000"
    assert con.execute(sql).fetchone() == (899000, sum(range(1000, 900000)))


@pytest.fixture(scope="module")
def chunked_store(tmp_path_factory):
    """t2m(time 4, lat 40, lon 60) in 5 x 10 (lat x lon) chunks, uncompressed."""
    xr = pytest.importorskip("xarray")
    np = pytest.importorskip("numpy")
    path = tmp_path_factory.mktemp("zarr") / "box.zarr"
    t2m = np.arange(4 * 40 * 60, dtype="float64").reshape(4, 40, 60)
    ds = xr.Dataset({"t2m": (("time", "lat", "lon"), t2m)},
                    coords={"time": np.arange(4, dtype="int64"), "lat": np.arange(40, dtype="float64") - 20.0,
                            "lon": np.arange(60, dtype="float64")})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", consolidated=True, zarr_format=3,
                   encoding={"t2m": {"chunks": (4, 5, 10), "compressors": None}})
    return path, t2m


def test_box_query_reads_fewer_bytes(chunked_store):
    path, t2m = chunked_store
    spec = f"qlink_zarr/store?path={path}"
    box = (f"SELECT count(*), sum(t2m) FROM qlink_scan('{spec}', \"table\" := 'time_lat_lon') "
           "WHERE lat >= 0 AND lat < 5 AND lon >= 10 AND lon <= 19")
    want = (4 * 5 * 10, float(t2m[:, 20:25, 10:20].sum()))
    read = {}
    for name, ext in (("v1", EXT_V1), ("v2", EXT_V2)):
        con = connect(ext)
        con.execute(f"SELECT * FROM qlink_tables('{spec}')").fetchall()  # open the store once before measuring
        before = rchar()
        assert con.execute(box).fetchone() == want
        read[name] = rchar() - before
    # one 4 x 5 x 10 float64 chunk (1,600 bytes) of 48 instead of all 76,800 bytes
    assert read["v2"] * 10 < read["v1"], read
    assert read["v1"] >= 4 * 40 * 60 * 8, read


def test_python_helper_chooses_the_build(run_helper):
    code = ("import qlink.duckdb as q; print(q.choose_api()); con = q.connect(); "
            "print(con.execute(\"SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=101') WHERE value < 10\")"
            ".fetchone()[0]); print(q.extension_path('v1').endswith('qlink.duckdb_extension')); "
            "c1 = q.connect(api='v1'); print(c1.execute(\"SELECT count(*) FROM qlink_plugins()\").fetchone()[0])")
    assert run_helper(code) == ["v2", "10", "True", "0"]


def test_an_installed_helper_finds_the_pin_through_the_build_dir(monkeypatch, tmp_path):
    # qlink.duckdb from a wheel lives outside the source tree: the pin is
    # read from the tree the build directory is in, so it still picks V2.
    sys.path.insert(0, str(ROOT / "python"))
    import qlink.duckdb as q

    monkeypatch.setattr(q, "_ROOT", tmp_path)
    monkeypatch.setenv("QLINK_BUILD_DIR", str(BUILD))
    assert q.pinned_duckdb_version() == (PINNED if BUILD.resolve().parent.parent == ROOT.resolve() else None)
    monkeypatch.setenv("QLINK_BUILD_DIR", str(tmp_path / "build" / "release"))
    assert q.pinned_duckdb_version() is None
    assert q.choose_api() == "v1"


def test_python_attach_and_load_work_with_either_build(chunked_store):
    sys.path.insert(0, str(ROOT / "python"))
    import qlink.duckdb as q

    path, t2m = chunked_store
    for ext in (EXT_V1, EXT_V2):
        con = connect(ext)
        assert q.attach(con, "box", f"qlink_zarr/store?path={path}") == ["time_lat_lon"]
        assert con.execute("SELECT count(*), max(t2m) FROM box.time_lat_lon WHERE time = 3 AND lon = 59").fetchone() \
            == (40, float(t2m[3, :, 59].max()))
        assert q.loaded_api(con) == ("v2" if ext == EXT_V2 else "v1")
        assert q.load(con, "qlink_sample", "add_one") == [("add_one", "scalar", "loaded")]
        assert q.load(con, "qlink_sample", "add_one") == [("add_one", "scalar", "already loaded")]
        assert con.execute("SELECT add_one(1)").fetchone() == (2,)


def test_cli_refuses_the_v2_build():
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.is_file():
        pytest.skip(f"no DuckDB CLI at {cli}")
    out = subprocess.run([str(cli), "-unsigned", "-c", f"LOAD '{EXT_V2}'"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert "qlink_v2" in out.stderr or "qlink_v2" in out.stdout
