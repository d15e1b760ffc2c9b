# SPDX-License-Identifier: Apache-2.0
"""qlink_load in DuckDB: a plugin's scalar, aggregate and table functions
as DuckDB functions with their own names and types, what DuckDB cannot
express refused by name, and plugin errors that leave the connection
working. Needs the C release build (QLINK_BUILD_DIR)."""

from __future__ import annotations

import pytest

import os

from conftest import EXTS, STATEMENT, builds
from test_duckdb import EXT, PLUGINS, connect, duckdb, run_threads

pytestmark = pytest.mark.skipif(not EXT.is_file(), reason=f"the DuckDB extension is not built: {EXT}")

WINDOW_REFUSAL = ("a window function is a partition evaluator (evaluate_all), and DuckDB's C API cannot express "
                  "window functions")
PLANNER_REFUSAL = "DuckDB's C API cannot express planners (it has no optimizer hook)"


def load(build: str, plugin: str, name: str | None = None) -> str:
    """qlink_load as each build takes it: V1 `CALL qlink_load(P, name := N)`,
    V2 `PRAGMA qlink_load(P, name = N)` (PRAGMA's named-argument syntax)."""
    named = "" if name is None else f", name {':=' if build == 'v1' else '='} '{name}'"
    return f"{STATEMENT[build]} qlink_load('{plugin}'{named})"


@pytest.fixture(params=builds())
def build(request):
    return request.param


@pytest.fixture
def con(build):
    c = connect(build=build)
    c.execute(load(build, "qlink_sample")).fetchall()
    yield c
    c.close()


def test_load_lists_every_function_and_refuses_by_name(build):
    c = connect(build=build)
    rows = c.execute(load(build, "qlink_sample")).fetchall()
    assert rows == [
        ("add_one", "scalar", "loaded"),
        ("sum_sq", "aggregate", "loaded"),
        ("running_count", "window", f"refused: {WINDOW_REFUSAL}"),
        ("sample_range", "table", "loaded"),
        ("decline_all", "planner", f"refused: {PLANNER_REFUSAL}"),
        ("drop_true_filters", "planner", f"refused: {PLANNER_REFUSAL}"),
    ]
    again = c.execute(load(build, "qlink_sample")).fetchall()
    assert [r[2] for r in again if r[1] in ("scalar", "aggregate", "table")] == ["already loaded"] * 3
    with pytest.raises(duckdb.BinderException,
                       match=r"qlink_load\('qlink_sample'\): qlink_sample.running_count cannot be loaded into "
                             r"DuckDB: a window function is a partition evaluator"):
        c.execute(load(build, "qlink_sample", "running_count"))
    with pytest.raises(duckdb.BinderException, match="cannot be loaded into DuckDB: DuckDB's C API cannot express planners"):
        c.execute(load(build, "qlink_sample", "decline_all"))
    with pytest.raises(duckdb.BinderException, match="plugin qlink_sample has no function 'nope'"):
        c.execute(load(build, "qlink_sample", "nope"))
    assert c.execute(load(build, "qlink_sample", "add_one")).fetchall() == [
        ("add_one", "scalar", "already loaded")]


def test_load_one_function_only(build):
    c = connect(build=build)
    assert c.execute(load(build, "qlink_sample", "sum_sq")).fetchall() == [
        ("sum_sq", "aggregate", "loaded")]
    # the same database: other connections see the function
    assert c.cursor().execute("SELECT sum_sq(x) FROM (VALUES (3), (4)) t(x)").fetchone() == (25,)


def test_load_follows_the_plugin_path_rule(build):
    c = connect(build=build)
    with pytest.raises(duckdb.BinderException, match=r"qlink_load\('/etc/passwd'\): "):
        c.execute(load(build, "/etc/passwd"))
    assert c.execute("SELECT 1").fetchone() == (1,)


def test_scalar_types_and_nulls(con):
    r = con.execute("SELECT add_one(41) AS a, add_one(NULL) AS b, add_one(CAST(7 AS TINYINT)) AS c, add_one(2.0) AS d")
    assert r.fetchall() == [(42, None, 8, 3)]
    assert [str(d[1]) for d in r.description] == ["BIGINT"] * 4
    rows = con.execute("SELECT add_one(x) FROM (VALUES (1), (NULL), (-9)) t(x) ORDER BY x NULLS LAST").fetchall()
    assert rows == [(-8,), (2,), (None,)]
    # more than one vector (2048 rows), from a plugin table
    assert con.execute("SELECT sum(add_one(value))::BIGINT, count(add_one(value)) "
                       "FROM qlink_scan('qlink_sample/series?stop=100000')").fetchone() == (5000050000, 100000)


def test_scalar_wrong_argument_types_name_the_function_and_argument(con):
    with pytest.raises(duckdb.BinderException,
                       match=r"qlink_sample.add_one: argument 1 is VARCHAR, the function takes BIGINT \(Arrow 'l'\)"):
        con.execute("SELECT add_one('x')")
    with pytest.raises(duckdb.BinderException, match="qlink_sample.add_one: argument 1 is DATE, the function takes BIGINT"):
        con.execute("SELECT add_one(DATE '2024-01-01')")
    with pytest.raises(duckdb.InvalidInputException,
                       match=r"qlink_sample.add_one: argument 1: 2.5 is not an integer \(the function takes l\)"):
        con.execute("SELECT add_one(2.5)")
    with pytest.raises(duckdb.BinderException, match="add_one"):
        con.execute("SELECT add_one(1, 2)")
    assert con.execute("SELECT add_one(1)").fetchone() == (2,)


def test_plugin_function_failing_then_the_connection_works(con):
    with pytest.raises(duckdb.InvalidInputException,
                       match=r"qlink_sample.add_one: add_one: 9223372036854775807 \+ 1 overflows int64 \(row 0\)"):
        con.execute("SELECT add_one(9223372036854775807)")
    assert con.execute("SELECT add_one(1)").fetchone() == (2,)
    with pytest.raises(duckdb.InvalidInputException,
                       match=r"qlink_sample.sum_sq: sum_sq: the sum of squares overflows int64 \(at x = 4000000000\)"):
        con.execute("SELECT sum_sq(x) FROM (VALUES (4000000000::BIGINT)) t(x)")
    assert con.execute("SELECT sum_sq(x) FROM (VALUES (2), (3)) t(x)").fetchone() == (13,)


def test_aggregate_groups_nulls_and_empty(con):
    s = "qlink_scan('qlink_sample/series?stop=3000')"
    rows = con.execute(f"SELECT parity, sum_sq(value) FROM {s} GROUP BY parity ORDER BY parity").fetchall()
    assert rows == [("even", sum(v * v for v in range(0, 3000, 2))), ("odd", sum(v * v for v in range(1, 3000, 2)))]
    # many groups over many vectors and threads: every group's state merged
    rows = con.execute("SELECT value % 97 AS g, sum_sq(value) FROM qlink_scan('qlink_sample/series?stop=200000') "
                       "GROUP BY g ORDER BY g").fetchall()
    assert rows == [(g, sum(v * v for v in range(g, 200000, 97))) for g in range(97)]
    r = con.execute("SELECT sum_sq(x) FROM (VALUES (NULL::BIGINT), (5), (NULL)) t(x)")
    assert r.fetchall() == [(25,)]
    assert str(r.description[0][1]) == "BIGINT"
    assert con.execute("SELECT sum_sq(x) FROM (VALUES (NULL::BIGINT)) t(x)").fetchone() == (None,)
    assert con.execute("SELECT sum_sq(value) FROM qlink_scan('qlink_sample/series?stop=0')").fetchone() == (None,)
    # DuckDB casts to the declared parameter type
    assert con.execute("SELECT sum_sq(x::INTEGER) FROM (VALUES (3), (4)) t(x)").fetchone() == (25,)


def test_aggregate_wrong_argument_types_are_binder_errors(con, build):
    if build == "v1":
        # The V1 aggregate C API has no bind: DuckDB's binder matches the
        # declared parameter types and names the function with the argument's type.
        with pytest.raises(duckdb.BinderException, match=r"'sum_sq\(DATE\)'(.|\n)*sum_sq\(BIGINT\) -> BIGINT"):
            con.execute("SELECT sum_sq(DATE '2024-01-01')")
        with pytest.raises(duckdb.BinderException, match=r"'sum_sq\(VARCHAR\)'"):
            con.execute("SELECT sum_sq(x) FROM (VALUES ('a')) t(x)")
        with pytest.raises(duckdb.ConversionException, match="Could not convert string 'x' to INT64"):
            con.execute("SELECT sum_sq('x')")
    else:
        # V2's generic aggregate takes ANY and its bind checks each argument
        # as a scalar's is checked (DuckDB casts nothing to ANY).
        with pytest.raises(duckdb.BinderException,
                           match=r"qlink_sample.sum_sq: argument 1 is DATE, the function takes BIGINT \(Arrow 'l'\)"):
            con.execute("SELECT sum_sq(DATE '2024-01-01')")
        with pytest.raises(duckdb.BinderException, match="qlink_sample.sum_sq: argument 1 is VARCHAR, the function takes"):
            con.execute("SELECT sum_sq(x) FROM (VALUES ('a')) t(x)")
        with pytest.raises(duckdb.BinderException, match="qlink_sample.sum_sq: argument 1 is VARCHAR, the function takes"):
            con.execute("SELECT sum_sq('x')")
    assert con.execute("SELECT sum_sq(x) FROM (VALUES (1), (2)) t(x)").fetchone() == (5,)


def test_table_function_binds_like_qlink_scan(con):
    r = con.execute("SELECT * FROM sample_range(-5, 20, 3)")
    assert r.fetchall() == [(v,) for v in range(-5, 20, 3)]
    assert [(d[0], str(d[1])) for d in r.description] == [("value", "BIGINT")]
    assert con.execute("SELECT value FROM sample_range(10, 0, -4)").fetchall() == [(10,), (6,), (2,)]
    assert con.execute("SELECT count(*), sum(value)::BIGINT FROM sample_range(0, 100000)").fetchone() == (100000,
                                                                                                         4999950000)
    # the provider's statistics give DuckDB the exact cardinality
    plan = "\n".join(r[1] for r in con.execute("EXPLAIN SELECT * FROM sample_range(0, 1234)").fetchall())
    assert "~1,234" in plan or "~1234" in plan, plan
    # joins with a plugin table and a plugin scalar
    rows = con.execute("SELECT r.value, add_one(s.square) FROM sample_range(0, 10, 4) r "
                       "JOIN qlink_scan('qlink_sample/series?stop=10') s ON r.value = s.value ORDER BY 1").fetchall()
    assert rows == [(0, 1), (4, 17), (8, 65)]


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM sample_range(1)",
     "qlink_sample.sample_range: sample_range takes 2 or 3 arguments (start, stop[, step]), got 1"),
    ("SELECT * FROM sample_range(1, 2, 3, 4)",
     "qlink_sample.sample_range: sample_range takes 2 or 3 arguments (start, stop[, step]), got 4"),
    ("SELECT * FROM sample_range(1, 3, 0)", "qlink_sample.sample_range: sample_range: argument 'step' must not be 0"),
    ("SELECT * FROM sample_range(1, 2.5)",
     "qlink_sample.sample_range: sample_range: argument 2 (stop) must be an integer literal, got a literal of type 'g'"),
    ("SELECT * FROM sample_range(NULL, 2)",
     "qlink_sample.sample_range: sample_range: argument 1 (start) must be an integer literal, got a NULL literal"),
    ("SELECT * FROM sample_range('a', 2)",
     "qlink_sample.sample_range: sample_range: argument 1 (start) must be an integer literal, got a literal of type 'u'"),
    ("SELECT * FROM sample_range(DATE '2024-01-01', 2)",
     "qlink_sample.sample_range: argument 1: DuckDB type DATE cannot be passed to a plugin table function"),
])
def test_table_function_errors_keep_the_connection(con, sql, message):
    with pytest.raises(duckdb.BinderException) as e:
        con.execute(sql)
    assert message in str(e.value)
    assert con.execute("SELECT count(*) FROM sample_range(0, 3)").fetchone() == (3,)


def test_functions_from_many_threads(con):
    def work(k):
        cur = con.cursor()
        n = 1000 + k
        for _ in range(5):
            got = cur.execute(f"SELECT sum(add_one(value))::BIGINT, sum_sq(value) FROM sample_range(0, {n})").fetchone()
            assert got == (n * (n + 1) // 2, sum(v * v for v in range(n))), got

    assert run_threads(8, work) == []


@pytest.mark.parametrize("build", builds()[1:])
def test_v2_functions_are_macros_over_generic_functions(build):
    c = connect(build=build)
    c.execute(load(build, "qlink_sample")).fetchall()
    rows = c.execute("SELECT function_name, function_type, macro_definition FROM duckdb_functions() "
                     "WHERE function_name IN ('add_one', 'sum_sq') ORDER BY 1").fetchall()
    assert rows == [("add_one", "macro", "qlink_scalar_function('qlink_sample', 'add_one', a1)"),
                    ("sum_sq", "macro", "qlink_aggregate_function('qlink_sample', 'sum_sq', a1)")]
    # the generic functions directly, and their errors
    assert c.execute("SELECT qlink_scalar_function('qlink_sample', 'add_one', 1)").fetchone() == (2,)
    with pytest.raises(duckdb.BinderException, match="qlink_sample.add_one: 2 arguments, the function takes 1"):
        c.execute("SELECT qlink_scalar_function('qlink_sample', 'add_one', 1, 2)")
    with pytest.raises(duckdb.BinderException, match="qlink_sample.nope: plugin qlink_sample has no scalar function 'nope'"):
        c.execute("SELECT qlink_scalar_function('qlink_sample', 'nope', 1)")
    # pushed filters reach a plugin table function as they reach qlink_scan
    assert c.execute("SELECT value FROM sample_range(0, 100) WHERE value > 95").fetchall() == [(96,), (97,), (98,),
                                                                                           (99,)]


@pytest.mark.parametrize("build", builds()[1:])
def test_v2_load_failing_in_duckdb_marks_nothing_loaded(build, tmp_path):
    """The macros are made by the PRAGMA's statements, after qlink_load
    returns: when DuckDB refuses them (a read-only database), nothing is
    marked loaded, and the next call tries again."""
    path = tmp_path / "ro.duckdb"
    duckdb.connect(str(path)).close()
    os.environ["QLINK_PLUGIN_PATH"] = str(PLUGINS)
    c = duckdb.connect(str(path), read_only=True, config={"allow_unsigned_extensions": True})
    c.execute(f"LOAD '{EXTS[build]}'")
    for _ in range(2):
        with pytest.raises(duckdb.Error, match="read-only"):
            c.execute(load(build, "qlink_sample", "add_one")).fetchall()
    c.close()
