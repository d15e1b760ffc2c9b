# SPDX-License-Identifier: Apache-2.0
"""qlink plugin objects in datafusion-python 55.0.0 through its capsule
protocol (plugin.table / udf / udaf / udwf / planner), checked against the
same queries over native tables (register_record_batches) and against
qlink.Session."""

import datafusion
import pyarrow as pa
import pytest

import qlink
from conftest import SERIES_QUERIES as QUERIES, series_table



@pytest.fixture(scope="module")
def sample():
    return qlink.Plugin(qlink.plugin_path("qlink_sample"))


def plan_text(ctx, sql):
    t = ctx.sql(f"EXPLAIN {sql}").to_arrow_table()
    return "\n".join(t.column("plan").to_pylist())


def test_versions_match():
    assert datafusion.__version__ == qlink.DATAFUSION_PYTHON_VERSION == "55.0.0"
    assert qlink.FFI_VERSION == 55


@pytest.mark.parametrize("query", QUERIES)
def test_table_equals_native_table_and_session(sample, query):
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("series", start=-5, stop=120, partitions=3))
    ctx.register_record_batches("m", [series_table(-5, 120).to_batches()])
    got = ctx.sql(query.format(t="t")).to_arrow_table()
    want = ctx.sql(query.format(t="m")).to_arrow_table()
    assert got.num_rows > 0
    assert got.schema.names == want.schema.names
    assert got.to_pydict() == want.to_pydict()
    s = qlink.Session()
    s.register_table("t", sample, "series", start=-5, stop=120, partitions=3)
    assert s.sql(query.format(t="t")).to_pydict() == want.to_pydict()


def test_table_object(sample):
    t = sample.table("series", stop=5)
    assert isinstance(t, qlink.Table)
    assert t.schema.names == ["value", "square", "parity"]
    assert repr(t) == "qlink.Table(qlink_sample/series)"
    # One provider object may be registered in several sessions.
    for _ in range(2):
        ctx = datafusion.SessionContext()
        ctx.register_table("t", t)
        assert ctx.sql("SELECT value, parity FROM t ORDER BY value").to_pydict() == {
            "value": [0, 1, 2, 3, 4],
            "parity": ["even", "odd", "even", "odd", "even"],
        }


def test_filter_pushdown(sample):
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("series", stop=1000, partitions=1))
    sql = "SELECT value FROM t WHERE value >= 990 AND square > 5"
    plan = plan_text(ctx, sql)
    # The plugin answered Exact for the filter on value (datafusion-python
    # keeps no FilterExec for it) and Unsupported for the one on square.
    assert "full_filters=[t.value >= Int64(990)]" in plan
    assert "FilterExec: square@1 > 5" in plan
    assert "value@0 >= 990" not in plan
    assert "SeriesScanExec" in plan
    analyze = "\n".join(ctx.sql(f"EXPLAIN ANALYZE {sql}").to_arrow_table().column("plan").to_pylist())
    scan = next(line for line in analyze.splitlines() if "SeriesScanExec" in line)
    assert "output_rows=10" in scan
    got = ctx.sql(f"{sql} ORDER BY value").to_pydict()
    assert got == {"value": list(range(990, 1000))}


def test_scans_do_not_enumerate_the_sessions_functions(sample):
    ctx = datafusion.SessionContext()
    for i in range(1000):
        ctx.register_udf(datafusion.udf(lambda a: a, [pa.int64()], pa.int64(), "immutable", name=f"extra_{i}"))
    ctx.register_table("t", sample.table("series", stop=1000, partitions=2))
    ctx.register_record_batches("m", [series_table(0, 1000).to_batches()])
    from qlink import _qlink

    before = _qlink._consumer_function_lookups()
    q = "SELECT value, square FROM {t} WHERE value > 100 AND abs(value - 500) < 50 ORDER BY value"
    for _ in range(5):
        assert ctx.sql(q.format(t="t")).to_pydict() == ctx.sql(q.format(t="m")).to_pydict()
    # Built-in functions in filters decode against qlink's own registry.
    assert _qlink._consumer_function_lookups() == before
    # A Python UDF in a filter travels inline (datafusion-python's codec
    # pickles it): decoded by that codec, no lookup either.
    q = "SELECT value FROM {t} WHERE extra_7(value) < 3 ORDER BY value"
    assert ctx.sql(q.format(t="t")).to_pydict() == ctx.sql(q.format(t="m")).to_pydict() == {"value": [0, 1, 2]}
    assert _qlink._consumer_function_lookups() == before
    # A function the session knows by name only is looked up there, on demand.
    ctx.register_udf(datafusion.udf(sample.udf("add_one")))
    q = "SELECT value FROM {t} WHERE add_one(value) < 3 ORDER BY value"
    assert ctx.sql(q.format(t="t")).to_pydict() == ctx.sql(q.format(t="m")).to_pydict() == {"value": [0, 1]}
    assert _qlink._consumer_function_lookups() > before


def test_scalar_aggregate_and_window_functions(sample):
    ctx = datafusion.SessionContext()
    ctx.register_udf(datafusion.udf(sample.udf("add_one")))
    ctx.register_udaf(datafusion.udaf(sample.udaf("sum_sq")))
    ctx.register_udwf(datafusion.udwf(sample.udwf("running_count")))
    ctx.register_table("t", sample.table("series", start=1, stop=7, partitions=2))
    ctx.register_record_batches("m", [series_table(1, 7).to_batches()])
    pairs = [
        ("SELECT value, add_one(value) AS a FROM t ORDER BY value", "SELECT value, value + 1 AS a FROM m ORDER BY value"),
        (
            "SELECT parity, sum_sq(value) AS s FROM t GROUP BY parity ORDER BY parity",
            "SELECT parity, sum(value * value) AS s FROM m GROUP BY parity ORDER BY parity",
        ),
        (
            "SELECT value, running_count() OVER (PARTITION BY parity ORDER BY value) AS rc FROM t ORDER BY value",
            "SELECT value, count(*) OVER (PARTITION BY parity ORDER BY value) AS rc FROM m ORDER BY value",
        ),
    ]
    for q, native in pairs:
        got = ctx.sql(q).to_pydict()
        assert len(got["value" if "value" in got else "parity"]) > 0
        assert got == ctx.sql(native).to_pydict(), q
    # A plugin function in a filter over a plugin table: the filter decodes on
    # qlink's side through an on-demand lookup of the consumer's function.
    got = ctx.sql("SELECT value FROM t WHERE add_one(value) > 5 ORDER BY value").to_pydict()
    assert got == {"value": [5, 6]}
    assert ctx.sql("SELECT add_one(CAST(NULL AS BIGINT)) AS x").to_pydict() == {"x": [None]}


def test_function_objects(sample):
    f = sample.udf("add_one")
    assert isinstance(f, qlink.Function) and f.name == "add_one"
    with pytest.raises(TypeError, match="add_one is a scalar"):
        f.__datafusion_aggregate_udf__()
    with pytest.raises(qlink.QlinkError, match="no_such"):
        sample.udf("no_such")


def test_planner_with_set_query_planner(sample, capfd, monkeypatch):
    sql = "SELECT column1 * 2 AS d, column2 FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) WHERE column1 > 1 ORDER BY d"
    want = datafusion.SessionContext().sql(sql).to_pydict()
    assert want == {"d": [4, 6], "column2": ["b", "c"]}
    ctx = datafusion.SessionContext().with_extensions(qlink.codecs())
    ctx.set_query_planner(sample.planner("decline_all"))
    assert ctx.sql(sql).to_pydict() == want
    ext = datafusion.SessionContext().with_extensions(sample.planner("drop_true_filters"))
    assert ext.sql(sql).to_pydict() == want
    # The qlink planner really plans in datafusion-python: the fold plugin
    # (interested in aggregates) traces each plan it is offered.
    agg = "SELECT column2 AS k, sum(column1) AS s FROM (VALUES (1, 'a'), (2, 'b'), (3, 'a')) GROUP BY column2 ORDER BY k"
    fold = qlink.Plugin(qlink.plugin_path("qlink_fold")).planner("fold")
    ctx = datafusion.SessionContext().with_extensions(qlink.codecs())
    ctx.set_query_planner(fold)
    monkeypatch.setenv("QLINK_FOLD_TRACE", "1")
    capfd.readouterr()
    assert ctx.sql(agg).to_pydict() == {"k": ["a", "b"], "s": [4, 2]}
    assert "qlink_fold: plan rooted at node" in capfd.readouterr().err


def test_a_planner_runs_queries_over_datafusion_pythons_own_tables(sample, capfd, monkeypatch):
    """With a qlink planner installed, tables qlink did not make
    (datafusion-python's in-memory batches, a qlink table beside them) cross
    the plan serialization by reference: every query runs, exactly, and the
    planner is asked about it."""
    import pyarrow as pa

    batch = pa.record_batch({"k": ["a", "b", "a", "c"], "v": [1, 2, 3, 4]})
    agg = "SELECT n.k, sum(n.v) AS s, count(t.value) AS m FROM n LEFT JOIN t ON n.v = t.value GROUP BY n.k ORDER BY n.k"
    want = {"k": ["a", "b", "c"], "s": [4, 2, 4], "m": [1, 1, 0]}
    plain = datafusion.SessionContext()
    plain.register_record_batches("n", [[batch]])
    plain.register_table("t", sample.table("series", start=2, stop=4))
    assert plain.sql(agg).to_pydict() == want
    ctx = datafusion.SessionContext().with_extensions(qlink.Plugin(qlink.plugin_path("qlink_fold")).planner("fold"))
    ctx.register_record_batches("n", [[batch]])
    ctx.register_table("t", sample.table("series", start=2, stop=4))
    monkeypatch.setenv("QLINK_FOLD_TRACE", "1")
    capfd.readouterr()
    for _ in range(3):  # each query's tables are encoded afresh
        assert ctx.sql(agg).to_pydict() == want
    assert ctx.sql("SELECT sum(v) AS s FROM n WHERE k = 'a'").to_pydict() == {"s": [4]}
    assert "qlink_fold: plan rooted at node" in capfd.readouterr().err


def test_plugin_errors_are_python_exceptions(sample):
    with pytest.raises(qlink.PluginError, match="missing required option 'stop' for qlink_sample/series"):
        sample.table("series", start=1)
    with pytest.raises(qlink.QlinkError, match="qlink_sample has no table provider 'nope'"):
        sample.table("nope", stop=1)
    with pytest.raises(qlink.PluginError, match="qlink_sample has no planner 'nope'"):
        sample.planner("nope")
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("series", stop=4))
    with pytest.raises(Exception, match="INSERT"):
        ctx.sql("INSERT INTO t VALUES (1, 1, 'odd')").collect()
    # The context and the table still work afterwards.
    assert ctx.sql("SELECT count(*) AS n FROM t").to_pydict() == {"n": [4]}


def test_version_mismatch_is_an_exception(sample, monkeypatch):
    t = sample.table("series", stop=3)
    monkeypatch.setattr(datafusion, "__version__", "54.1.0")
    ctx = datafusion.SessionContext()
    with pytest.raises(Exception, match="datafusion-python 54.1.0 is installed.*need datafusion-python 55.x"):
        ctx.register_table("t", t)
    with pytest.raises(qlink.VersionMismatchError, match="54.1.0"):
        t.__datafusion_table_provider__(ctx.ctx)
    with pytest.raises(qlink.VersionMismatchError):
        sample.udf("add_one").__datafusion_scalar_udf__()




def test_zarr_tables_in_datafusion_python(store):
    ds, path = store
    z = qlink.zarr(str(path))
    assert z.tables == ["lat", "time_lat"]
    ctx = datafusion.SessionContext()
    assert z.register(ctx, prefix="w_") == ["w_lat", "w_time_lat"]
    copies = datafusion.SessionContext()
    z.register(copies, prefix="w_", copy=True)
    q = 'SELECT time, lat, temp, "count" FROM w_time_lat WHERE lat > 0 ORDER BY time, lat'
    got = ctx.sql(q).to_pandas()
    want = ds[["temp", "count"]].where(ds["lat"] > 0, drop=True).to_dataframe().reset_index()
    want = want.sort_values(["time", "lat"]).reset_index(drop=True)
    assert got["time"].tolist() == want["time"].tolist()
    assert got["lat"].tolist() == want["lat"].tolist()
    assert got["temp"].tolist() == want["temp"].tolist()
    assert got["count"].tolist() == want["count"].astype("int32").tolist()
    assert ctx.sql(q).to_pydict() == copies.sql(q).to_pydict()
    agg = "SELECT time, sum(temp) AS s FROM w_time_lat WHERE time >= 3 GROUP BY time ORDER BY time"
    assert ctx.sql(agg).to_pydict() == {"time": [3, 4], "s": ds["temp"].sel(time=[3, 4]).sum("lat").values.tolist()}
    one = datafusion.SessionContext()
    one.register_table("lat", z.provider("lat"))
    assert one.sql("SELECT lat, elev FROM lat ORDER BY lat").to_pydict() == {
        "lat": [-1.5, 0.0, 1.5, 3.0],
        "elev": [10, 20, 30, 40],
    }
    # Session.register_zarr keeps working on the same store.
    assert z.table("lat").to_pydict() == {"lat": [-1.5, 0.0, 1.5, 3.0], "elev": [10, 20, 30, 40]}
    with pytest.raises(qlink.PlanError, match="no table 'nope'"):
        z.provider("nope")


def test_plugin_schema_in_datafusion_python(store):
    """Plugin.schema: a plugin's schema provider (qlink_zarr's `store`) in a
    datafusion-python catalog, its tables taking the capsule route."""
    _, path = store
    zarr = qlink.Plugin(qlink.plugin_path("qlink_zarr"))
    s = zarr.schema("store", path=str(path))
    assert s.table_names() == {"lat", "time_lat"}
    assert s.table_exist("lat") and not s.table_exist("nope")
    assert s.table("nope") is None
    assert s.table("lat") is s.table("lat")  # opened once, kept
    assert s.table("lat").schema.names == ["lat", "elev"]
    ctx = datafusion.SessionContext()
    ctx.catalog().register_schema("w", s)
    assert ctx.sql("SELECT lat, elev FROM w.lat ORDER BY lat").to_pydict() == {
        "lat": [-1.5, 0.0, 1.5, 3.0],
        "elev": [10, 20, 30, 40],
    }
    assert ctx.sql("SELECT count(*) AS n, sum(temp) AS t FROM w.time_lat WHERE time >= 3").to_pydict() == {
        "n": [8],
        "t": [sum(range(12, 20)) / 4],
    }
    with pytest.raises(qlink.NotSupportedError, match="qlink_zarr/store: a plugin's schema is read-only"):
        s.register_table("x", s.table("lat"))
    with pytest.raises(qlink.QlinkError, match="nowhere"):
        zarr.schema("store", path=str(path.parent / "nowhere.zarr"))
    with pytest.raises(qlink.QlinkError, match="schema"):
        qlink.Plugin(qlink.plugin_path("qlink_sample")).schema("nope")


def test_zarr_read_error_carries_the_plugins_message(store, tmp_path):
    import shutil

    _, path = store
    broken = tmp_path / "broken.zarr"
    shutil.copytree(path, broken)
    ctx = datafusion.SessionContext()
    qlink.zarr(str(broken)).register(ctx)
    for chunk in (broken / "temp" / "c").rglob("*"):
        if chunk.is_file():
            chunk.write_bytes(b"not a chunk")
    # The plugin fails while datafusion-python executes the scan: its own
    # message comes back as datafusion-python's exception, the process lives.
    with pytest.raises(Exception, match=r"zarr store .*broken\.zarr: array 'temp' chunk 'temp/c/0/0'"):
        ctx.sql("SELECT sum(temp) AS s FROM time_lat").collect()
    assert ctx.sql("SELECT count(*) AS n FROM lat").to_pydict() == {"n": [4]}
