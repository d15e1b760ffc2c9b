# SPDX-License-Identifier: Apache-2.0
"""The SQLite host from Python (apsw, qlink.sqlite.connect) and from the
sqlite3 command-line tool: every SQL entry point, its errors, interrupt,
two connections in two threads. Needs the C release build only
(QLINK_BUILD_DIR, default build/release)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))
import qlink.sqlite as qsql  # noqa: E402  (no native module needed)

apsw = pytest.importorskip("apsw")
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release")).resolve()
PLUGINS = BUILD / "plugins"
EXT = BUILD / "hosts" / "sqlite" / "qlink"


@pytest.fixture
def db():
    return qsql.connect(plugin_dirs=[str(PLUGINS)])


def rows(db, sql, *args):
    return db.execute(sql, args).fetchall()


def test_connect_loads_and_seals(db):
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop=10&step=1')")
    assert rows(db, "SELECT sum(value), count(*) FROM s") == [(45, 10)]
    with pytest.raises(apsw.SQLError, match="the allowed directories are fixed once a plugin was loaded"):
        rows(db, "SELECT qlink_allow('/tmp')")


def test_types_and_pushdown(db):
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=-5&stop=5&step=1')")
    assert rows(db, "SELECT typeof(value), typeof(parity) FROM s LIMIT 1") == [("integer", "text")]
    assert rows(db, "SELECT value FROM s WHERE value IN (-5, 4, '3') ORDER BY value") == [(-5,), (3,), (4,)]
    plan = rows(db, "EXPLAIN QUERY PLAN SELECT value FROM s WHERE value > ? LIMIT 2", 0)[0][3]
    # a bound parameter is unknown when planning: pushed, but SQLite re-checks, so no LIMIT
    assert plan == "SCAN s VIRTUAL TABLE INDEX 2:qlink columns=value filters=value > ?1 [exact, rechecked]"
    assert rows(db, "SELECT value FROM s WHERE value > ? LIMIT 2", 0) == [(1,), (2,)]
    assert rows(db, "SELECT value FROM s WHERE value >= 2 LIMIT 1 OFFSET 1") == [(3,)]


def test_or_of_pushed_filters(db):
    # SQLite's multi-index OR (one scan per term, rows deduplicated by rowid)
    # lost rows: a qlink rowid is an ordinal within one scan
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop=100&step=1')")
    assert rows(db, "SELECT count(*) FROM s WHERE value = 1 OR value = 2") == [(2,)]
    assert rows(db, "SELECT value FROM s WHERE value < 2 OR value > 97 OR value = 50 ORDER BY value") == [
        (0,), (1,), (50,), (98,), (99,)]
    assert rows(db, "SELECT count(*), sum(value) FROM s WHERE (value < 10 OR value >= 95) AND value != 3") == [(14, 527)]
    plans = [re.sub(r"INDEX \d+:", "INDEX n:", r[3])
             for r in rows(db, "EXPLAIN QUERY PLAN SELECT value FROM s WHERE value < 2 OR value > 97")]
    assert plans == ["SCAN s VIRTUAL TABLE INDEX n:qlink columns=value"]


def test_timestamps_and_float32_of_a_zarr_store(db, tmp_path):
    # xColumn memoises a timestamp column's last TEXT (a dimension repeats
    # each value over the inner rows) and reads float32 directly: the same
    # text and REAL as cells.c's general mapping, NULL for NaT and NaN,
    # across chunk blocks (one batch each with block_rows=1)
    np = pytest.importorskip("numpy")
    xr = pytest.importorskip("xarray")
    t = np.array(["2000-01-01T00:00", "2000-01-01T01:00", "2000-01-01T01:00:00.000000001"], dtype="datetime64[ns]")
    when = np.array([t[0], t[0], "NaT", t[0], t[1]] * 3, dtype="datetime64[ns]").reshape(3, 5)
    f = np.array([0.1, np.nan, -2.5, 3.0, 1e-45] * 3, dtype=np.float32).reshape(3, 5)
    ds = xr.Dataset({"when": (("time", "x"), when), "f": (("time", "x"), f)}, coords={"time": t})
    ns = {"units": "nanoseconds since 2000-01-01", "dtype": "int64"}
    ds.to_zarr(tmp_path / "t.zarr", zarr_format=3, encoding={
        "when": {"chunks": (1, 5), **ns}, "f": {"chunks": (1, 5)}, "time": {"chunks": (1,), **ns}})
    db.execute(f"CREATE VIRTUAL TABLE z USING qlink('qlink_zarr/table?path={tmp_path / 't.zarr'}&block_rows=1')")
    got = rows(db, "SELECT time, x, \"when\", f FROM z")
    times = ["2000-01-01 00:00:00", "2000-01-01 01:00:00", "2000-01-01 01:00:00.000000001"]
    whens = ["2000-01-01 00:00:00", "2000-01-01 00:00:00", None, "2000-01-01 00:00:00", "2000-01-01 01:00:00"]
    fs = [float(np.float32(0.1)), None, -2.5, 3.0, float(np.float32(1e-45))]
    assert got == [(times[i], x, whens[x], fs[x]) for i in range(3) for x in range(5)]
    assert rows(db, "SELECT count(*), min(time), max(time) FROM z WHERE time >= '2000-01-01 01:00:00'") == [
        (10, times[1], times[2])]


def test_grid_floats(db):
    db.execute("CREATE VIRTUAL TABLE g USING qlink('qlink_sample/grid?ny=3&nx=2')")
    got = rows(db, "SELECT typeof(y), typeof(x), typeof(v) FROM g LIMIT 1")
    assert got == [("real", "integer", "real")]
    assert rows(db, "SELECT count(*) FROM g") == [(6,)]


def test_functions(db):
    msg = rows(db, "SELECT qlink_load('qlink_sample')")[0][0]
    assert msg.startswith("qlink_sample: loaded scalar add_one, aggregate sum_sq; table function sample_range through "
                          "CREATE VIRTUAL TABLE t USING qlink_call('qlink_sample', 'NAME', argument, ...); skipped "
                          "running_count (")
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop=2000&step=1')")
    assert rows(db, "SELECT add_one(1), sum_sq(value) FROM s WHERE value < 10") == [(2, 285)]
    assert rows(db, "SELECT sum_sq(value) = sum(value*value) FROM s") == [(1,)]
    with pytest.raises(apsw.SQLError, match="running_count cannot be loaded into SQLite: a window function"):
        rows(db, "SELECT qlink_load('qlink_sample', 'running_count')")


def test_tables_and_attach(db):
    assert rows(db, "SELECT table_name, column_name, arrow_type, sqlite_type FROM qlink_tables('broken_third_batch/tables')") == [
        ("numbers", "x", "l", "INTEGER")
    ]
    assert rows(db, "SELECT qlink_attach('b', 'broken_third_batch/tables')") == [(1,)]
    assert rows(db, "SELECT count(*) FROM (SELECT x FROM b.numbers LIMIT 50)") == [(50,)]
    with pytest.raises(apsw.SQLError, match="qlink_tables takes a spec"):
        rows(db, "SELECT * FROM qlink_tables")


def echo(db, args):
    db.execute(f"CREATE VIRTUAL TABLE e USING qlink_call('qls_call_test', 'echo'{', ' if args else ''}{args})")
    return rows(db, "SELECT position, format, value, typeof(value) FROM e")


def test_call_literals(db):
    """Every literal kind of qlink_call reaches the table function with its
    Arrow format and exact value (the test plugin echoes them)."""
    got = echo(db, "-9223372036854775808, 0x7fffffffffffffff, 1.5e-3, -.5, 'a''b,(c)', null, True, FALSE, 'é'")
    assert got == [
        (1, "l", "-9223372036854775808", "text"),
        (2, "l", "9223372036854775807", "text"),
        (3, "g", "0.0015", "text"),
        (4, "g", "-0.5", "text"),
        (5, "u", "a'b,(c)", "text"),
        (6, "n", None, "null"),
        (7, "b", "true", "text"),
        (8, "b", "false", "text"),
        (9, "u", "é", "text"),
    ]


def test_call_reaches_scan(db):
    echo(db, "1, 2, 3, 4")
    plan = rows(db, "EXPLAIN QUERY PLAN SELECT value FROM e LIMIT 2")[0][3]
    # the plan number counts the plans xBestIndex kept; the rest is the pushdown
    assert re.fullmatch(r"SCAN e VIRTUAL TABLE INDEX \d+:qlink columns=value limit=\?1", plan), plan
    assert rows(db, "SELECT value FROM e LIMIT 2") == [("1",), ("2",)]
    assert rows(db, "SELECT count(*) FROM e WHERE position >= 3") == [(2,)]


@pytest.mark.parametrize(
    "args, message",
    [
        ("1, x", "qlink_call argument 4 `x`: not a SQL literal: expected an integer, a real, a 'string', NULL, TRUE or FALSE"),
        ("?", "qlink_call argument 3 `?`: not a SQL literal"),
        ("-1 - 1", "qlink_call argument 3 `-1 - 1`: text after the number (one literal per argument)"),
        ("TRUE FALSE", "qlink_call argument 3 `TRUE FALSE`: not a SQL literal"),
        ("- 'a'", "qlink_call argument 3 `- 'a'`: not a SQL literal"),
        ("'a' 'b'", "qlink_call argument 3 `'a' 'b'`: text after the string's closing quote"),
        ("1e400", "qlink_call argument 3 `1e400`: a real outside the float64 range"),
        ("x'01'", "qlink_call argument 3 `x'01'`: a blob, which is not among the literals accepted"),
        ("9223372036854775808", "an integer outside the int64 range"),
    ],
)
def test_call_bad_literals(db, args, message):
    with pytest.raises(apsw.SQLError) as e:
        echo(db, args)
    assert message in str(e.value)
    assert echo(db, "7") == [(1, "l", "7", "text")]  # the connection keeps working


def test_call_errors(db):
    cases = [
        ("'qls_call_test', 'fail', 1, 2", "qlink: qls_call_test (fail(1, 2)): fail: refused 2 arguments (deliberately)"),
        ("'qls_call_test', 'nope'", "qlink: qls_call_test (nope()): plugin qls_call_test has no table function 'nope'"),
        ("'qlink_sample', 'sum_sq'", "'sum_sq' is an aggregate function: SELECT qlink_load('PLUGIN', 'NAME') registers it"),
        ("'broken_third_batch', 'numbers_fn', 'x'", "qlink: broken (numbers_fn('x')): numbers_fn takes no arguments"),
        ("'/bin/ls', 'echo'", "outside the allowed plugin directories"),
        ("'qls_call_test'", "takes the plugin, the function and its arguments, got 1 arguments"),
    ]
    for args, message in cases:
        with pytest.raises(apsw.SQLError) as e:
            db.execute(f"CREATE VIRTUAL TABLE f USING qlink_call({args})")
        assert message in str(e.value), args
    db.execute("CREATE VIRTUAL TABLE nf USING qlink_call('broken_third_batch', 'numbers_fn')")
    with pytest.raises(apsw.SQLError, match=r"qlink: broken \(numbers_fn\(\)\): numbers: reading batch 3 failed"):
        rows(db, "SELECT sum(x) FROM nf")
    assert rows(db, "SELECT sum(x) FROM (SELECT x FROM nf LIMIT 5)") == [(10,)]


def test_call_sample_range(db):
    db.execute("CREATE VIRTUAL TABLE r USING qlink_call('qlink_sample', 'sample_range', 100, -100, -7)")
    assert rows(db, "SELECT count(*), sum(value), min(value), max(value) FROM r") == [(29, 58, -96, 100)]
    plan = rows(db, "EXPLAIN QUERY PLAN SELECT value FROM r WHERE value < ? AND value >= -20", 0)[0][3]
    assert re.fullmatch(r"SCAN r VIRTUAL TABLE INDEX \d+:qlink columns=value filters=value < \?1 \[exact, rechecked\]; "
                        r"value >= \?2 \[exact, omitted\]", plan), plan
    assert rows(db, "SELECT value FROM r WHERE value < ? AND value >= -20", 0) == [(-5,), (-12,), (-19,)]
    with pytest.raises(apsw.SQLError, match="sample_range: argument 1 \\(start\\) must be an integer literal, got a NULL literal"):
        db.execute("CREATE VIRTUAL TABLE r2 USING qlink_call('qlink_sample', 'sample_range', NULL, 3)")


def test_call_listed_by_qlink_load(db):
    assert rows(db, "SELECT qlink_load('qls_call_test', 'fail')") == [
        ("qls_call_test: loaded nothing; table function fail through CREATE VIRTUAL TABLE t USING "
         "qlink_call('qls_call_test', 'NAME', argument, ...)",)
    ]


@pytest.mark.parametrize(
    "sql, message",
    [
        ("CREATE VIRTUAL TABLE e USING qlink('nospec')", "table spec 'nospec' has no '/'"),
        ("CREATE VIRTUAL TABLE e USING qlink('qlink_sample/nope')", "plugin qlink_sample has no table or schema provider 'nope'"),
        ("CREATE VIRTUAL TABLE e USING qlink('qlink_sample/series?stop=3&pth=1')", "unknown option 'pth' for qlink_sample/series"),
        ("CREATE VIRTUAL TABLE e USING qlink('broken_abi_major/numbers')", "the plugin said: serves ABI 1.0 only"),
        ("CREATE VIRTUAL TABLE e USING qlink('nosuchplugin/t')", "plugin 'nosuchplugin' is in no allowed plugin directory"),
        ("CREATE VIRTUAL TABLE e USING qlink('/bin/ls/t')", "outside the allowed plugin directories"),
        ("SELECT qlink_load('qlink_sample', 'nope')", "plugin qlink_sample has no function 'nope'"),
    ],
)
def test_errors_then_connection_works(db, sql, message):
    with pytest.raises(apsw.Error, match=message.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        db.execute(sql).fetchall()
    assert rows(db, "SELECT 1") == [(1,)]


def test_third_batch_failure(db):
    db.execute("CREATE VIRTUAL TABLE b USING qlink('broken_third_batch/numbers?n=100')")
    with pytest.raises(apsw.SQLError, match=r"qlink: broken \(broken_third_batch/numbers\?n=100\): numbers: reading batch 3 failed"):
        rows(db, "SELECT sum(x) FROM b")
    assert rows(db, "SELECT sum(x) FROM (SELECT x FROM b LIMIT 50)") == [(1225,)]


def test_interrupt(db):
    db.execute("CREATE VIRTUAL TABLE e USING qlink('qlink_sample/series?start=0&stop=3000000000&step=1')")
    timer = threading.Timer(0.3, db.interrupt)
    timer.start()
    started = time.monotonic()
    with pytest.raises(apsw.InterruptError):
        rows(db, "SELECT sum(value) FROM e")
    timer.join()
    assert time.monotonic() - started < 30
    assert rows(db, "SELECT count(*) FROM (SELECT value FROM e LIMIT 5)") == [(5,)]


def test_two_connections_two_threads():
    answers = {}

    def work(stop):
        c = qsql.connect(plugin_dirs=[str(PLUGINS)])
        c.execute(f"CREATE VIRTUAL TABLE t USING qlink('qlink_sample/series?start=0&stop={stop}&step=1')")
        answers[stop] = c.execute("SELECT sum(value) FROM t WHERE value % 2 = 0").fetchall()[0][0]
        c.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in (200000, 400000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {200000: 9999900000, 400000: 39999800000}


def cli(sql, env_path=PLUGINS):
    env = dict(os.environ, QLINK_PLUGIN_PATH=str(env_path))
    script = f".load {EXT}\n{sql}\n"
    return subprocess.run(["sqlite3", ":memory:"], input=script, capture_output=True, text=True, env=env, timeout=120)


def test_cli_entry_points():
    out = cli(
        "CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop=10&step=1');\n"
        "SELECT sum(value) FROM s WHERE value >= 5;\n"
        "SELECT qlink_load('qlink_sample') LIKE 'qlink_sample: loaded scalar add_one%';\n"
        "SELECT add_one(value) FROM s WHERE value = 3;\n"
        "SELECT group_concat(column_name) FROM qlink_tables('qlink_sample/series?stop=1');\n"
        "SELECT qlink_attach('n', 'broken_third_batch/tables');\n"
        "SELECT count(*) FROM (SELECT x FROM n.numbers LIMIT 7);\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["35", "1", "4", "value,square,parity", "1", "7"]


def test_cli_errors_and_recovery():
    out = cli(
        "CREATE VIRTUAL TABLE b USING qlink('broken_third_batch/numbers?n=100');\n"
        "SELECT sum(x) FROM b;\n"
        "SELECT 'still here';\n"
        "CREATE VIRTUAL TABLE c USING qlink('qlink_sample/series?stop=3&nope=1');\n"
    )
    assert "numbers: reading batch 3 failed (deliberately)" in out.stderr
    assert "unknown option 'nope' for qlink_sample/series" in out.stderr
    assert out.stdout.split() == ["still", "here"]


def test_cli_call():
    """Debian's sqlite3 3.40 hands module arguments over as apsw's 3.54 does."""
    out = cli(
        "CREATE VIRTUAL TABLE e USING qlink_call('qls_call_test', 'echo', -3, 2.5, 'it''s', NULL, TRUE);\n"
        "SELECT group_concat(format || '=' || coalesce(value, 'NULL'), ' ') FROM e;\n"
        "CREATE VIRTUAL TABLE f USING qlink_call('qls_call_test', 'fail');\n"
        "SELECT count(*) FROM e;\n"
    )
    assert out.stdout.splitlines() == ["l=-3 g=2.5 u=it's n=NULL b=true", "5"]
    assert "qlink: qls_call_test (fail()): fail: refused 0 arguments (deliberately)" in out.stderr


def test_cli_path_rule(tmp_path):
    out = cli("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=3');", env_path=tmp_path)
    assert f"plugin 'qlink_sample' is in no allowed plugin directory ({tmp_path.resolve()})" in out.stderr
