# SPDX-License-Identifier: Apache-2.0
"""qlink.Session: plugin tables, functions, planners, errors and limits,
checked against the same rows in native in-memory tables (datafusion-python's
MemTable and the session's own)."""

import threading
import time

import datafusion
import pyarrow as pa
import pytest

import qlink
from conftest import SERIES_QUERIES as QUERIES, series_table



@pytest.mark.parametrize("query", QUERIES)
def test_series_equals_datafusion_python_memtable(session, query):
    session.register_table("t", qlink.plugin_path("qlink_sample"), "series", start=-5, stop=120, step=1, partitions=3)
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("m", [series_table(-5, 120).to_batches()])
    got = session.sql(query.format(t="t"))
    want = ctx.sql(query.format(t="m")).to_arrow_table()
    assert got.num_rows > 0
    assert got.schema.names == want.schema.names
    assert got.to_pydict() == want.to_pydict()


@pytest.mark.parametrize("query", QUERIES)
def test_series_equals_session_memtable(session, query):
    session.register_table("t", "qlink_sample", "series", start=3, stop=200, step=2, partitions=4)
    session.register_arrow("m", series_table(3, 200, 2))
    assert session.sql(query.format(t="t")).to_pydict() == session.sql(query.format(t="m")).to_pydict()


def test_exact_values(session):
    session.register_table("t", "qlink_sample", "series", start=0, stop=5)
    got = session.sql("SELECT value, square, parity FROM t ORDER BY value")
    assert got.schema == pa.schema(
        [pa.field("value", pa.int64(), False), pa.field("square", pa.int64(), False), pa.field("parity", pa.utf8(), False)]
    )
    assert got.to_pydict() == {
        "value": [0, 1, 2, 3, 4],
        "square": [0, 1, 4, 9, 16],
        "parity": ["even", "odd", "even", "odd", "even"],
    }


def test_filter_pushdown(session):
    session.register_table("t", "qlink_sample", "series", stop=1000, partitions=1)
    plan = session.explain("SELECT value FROM t WHERE value >= 990 AND square > 5")
    # The filter on value is answered exactly by the plugin (the scan makes
    # only 10 rows); the one on square stays in DataFusion's FilterExec.
    assert "full_filters=[t.value >= Int64(990)]" in plan
    assert "SeriesScanExec" in plan and "filters=1" in plan and "rows=10" in plan
    assert "FilterExec: square@1 > 5" in plan
    got = session.sql("SELECT value FROM t WHERE value >= 990 AND square > 5 ORDER BY value")
    assert got.column("value").to_pylist() == list(range(990, 1000))


def test_scalar_and_aggregate_functions(session):
    session.register_table("t", "qlink_sample", "series", start=1, stop=7, partitions=2)
    got = session.sql("SELECT value, add_one(value) AS a FROM t ORDER BY value")
    assert got.to_pydict() == {"value": [1, 2, 3, 4, 5, 6], "a": [2, 3, 4, 5, 6, 7]}
    got = session.sql("SELECT parity, sum_sq(value) AS s FROM t GROUP BY parity ORDER BY parity")
    assert got.to_pydict() == {"parity": ["even", "odd"], "s": [4 + 16 + 36, 1 + 9 + 25]}
    assert session.sql("SELECT add_one(CAST(NULL AS BIGINT)) AS x").to_pydict() == {"x": [None]}


def test_window_function(session):
    session.register_table("t", "qlink_sample", "series", start=1, stop=7, partitions=2)
    got = session.sql("SELECT value, running_count() OVER (PARTITION BY parity ORDER BY value) AS rc FROM t ORDER BY value")
    assert got.to_pydict() == {"value": [1, 2, 3, 4, 5, 6], "rc": [1, 1, 2, 2, 3, 3]}


def test_load_plugin_without_functions():
    s = qlink.Session()
    s.load_plugin(qlink.plugin_path("qlink_sample"), functions=False)
    with pytest.raises(qlink.PlanError, match="add_one"):
        s.sql("SELECT add_one(1)")


def test_plugin_object():
    p = qlink.Plugin(qlink.plugin_path("qlink_sample"))
    assert p.name == "qlink_sample"
    kinds = {(k, n) for k, n, _ in p.items()}
    assert ("table_provider", "series") in kinds
    assert ("scalar_function", "add_one") in kinds
    assert ("aggregate_function", "sum_sq") in kinds
    assert ("window_function", "running_count") in kinds
    assert ("planner", "drop_true_filters") in kinds
    s = qlink.Session()
    s.register_table("t", p, "series", stop=3)
    assert s.sql("SELECT sum(value) AS s FROM t").to_pydict() == {"s": [3]}
    assert s.tables() == ["t"]


def test_sql_reader_streams_batches():
    s = qlink.Session(batch_size=100, target_partitions=1)
    s.register_table("t", qlink.plugin_path("qlink_sample"), "series", stop=1050, partitions=1)
    reader = s.sql_reader("SELECT value, square FROM t")
    assert isinstance(reader, pa.RecordBatchReader)
    batches = list(reader)
    assert len(batches) == 11
    assert [b.num_rows for b in batches] == [100] * 10 + [50]
    table = pa.Table.from_batches(batches)
    assert table.column("value").to_pylist() == list(range(1050))
    assert table.column("square").to_pylist() == [v * v for v in range(1050)]


def test_planner_fold_equals_plain_join():
    a = pa.table({"i": pa.array([0, 0, 1, 1, 2], pa.int64()), "j": pa.array([0, 1, 0, 1, 1], pa.int64()),
                  "v": pa.array([1.0, 2.0, 3.0, 4.0, 5.0])})
    b = pa.table({"j": pa.array([0, 0, 1, 1], pa.int64()), "k": pa.array([0, 1, 0, 1], pa.int64()),
                  "v": pa.array([0.5, 1.5, 2.5, 3.5])})
    q = "SELECT a.i, b.k, SUM(a.v * b.v) AS s FROM a JOIN b ON a.j = b.j GROUP BY a.i, b.k ORDER BY a.i, b.k"
    plain = qlink.Session()
    folded = qlink.Session()
    folded.install_planner(qlink.plugin_path("qlink_fold"), "fold")
    for s in (plain, folded):
        s.register_arrow("a", a)
        s.register_arrow("b", b)
    assert "planners=1" in repr(folded)
    want = {"i": [0, 0, 1, 1, 2, 2], "k": [0, 1, 0, 1, 0, 1],
            "s": [1 * .5 + 2 * 2.5, 1 * 1.5 + 2 * 3.5, 3 * .5 + 4 * 2.5, 3 * 1.5 + 4 * 3.5, 5 * 2.5, 5 * 3.5]}
    assert plain.sql(q).to_pydict() == want
    assert folded.sql(q).to_pydict() == want


def test_planner_fold_runs_in_the_session(monkeypatch, capfd):
    a = pa.table({"i": pa.array([0, 1], pa.int64()), "j": pa.array([0, 1], pa.int64()), "v": pa.array([1.0, 2.0])})
    s = qlink.Session()
    s.install_planner(qlink.plugin_path("qlink_fold"), "fold")
    s.register_arrow("a", a)
    s.register_arrow("b", a)
    q = "SELECT a.i, b.i AS k, SUM(a.v * b.v) AS s FROM a JOIN b ON a.j = b.j GROUP BY a.i, b.i ORDER BY a.i"
    monkeypatch.setenv("QLINK_FOLD_TRACE", "1")  # the plugin says on stderr what it folded
    assert s.sql(q).to_pydict() == {"i": [0, 1], "k": [0, 1], "s": [1.0, 4.0]}
    assert "qlink_fold: plan rooted at node" in capfd.readouterr().err
    s.sql("SELECT a.i, b.i AS k, SUM(a.v * b.v) AS s FROM a JOIN b ON a.j = b.j GROUP BY a.i, b.i")
    assert ": folding aggregate node" in capfd.readouterr().err


def test_explain_shows_the_planners_node():
    a = pa.table({"i": pa.array([0, 1], pa.int64()), "j": pa.array([0, 1], pa.int64()), "v": pa.array([1.0, 2.0])})
    s = qlink.Session()
    s.install_planner(qlink.plugin_path("qlink_fold"), "fold")
    s.register_arrow("a", a)
    s.register_arrow("b", a)
    q = "SELECT a.i, b.i AS k, SUM(a.v * b.v) AS s FROM a JOIN b ON a.j = b.j GROUP BY a.i, b.i"
    assert "FoldExec" in s.explain(q)


def test_planner_that_declines_keeps_results(session):
    session.install_planner("qlink_sample", "decline_all")
    session.install_planner("qlink_sample", "drop_true_filters")
    session.register_table("t", "qlink_sample", "series", stop=10)
    assert "planners=2" in repr(session)
    got = session.sql("SELECT sum(value) AS s FROM t WHERE value > 2")
    assert got.to_pydict() == {"s": [sum(range(3, 10))]}


def test_errors_carry_the_plugin_message(session):
    with pytest.raises(qlink.PluginError, match="missing required option 'stop' for qlink_sample/series"):
        session.register_table("t", "qlink_sample", "series", start=1)
    with pytest.raises(qlink.QlinkError, match="qlink_sample has no table provider 'nope'"):
        session.register_table("t", "qlink_sample", "nope", stop=1)
    with pytest.raises(qlink.PluginError, match="cannot load plugin '/nonexistent/x.so'"):
        qlink.Plugin("/nonexistent/x.so")
    with pytest.raises(qlink.PlanError, match="table 'datafusion.public.missing' not found"):
        session.sql("SELECT * FROM missing")
    with pytest.raises(qlink.PlanError):
        session.sql("SELEC 1")
    with pytest.raises(qlink.PluginError, match="qlink_sample has no planner 'nope'"):
        session.install_planner("qlink_sample", "nope")
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        session.register_arrow("x", [1, 2, 3])
    # the session still works after every error
    session.register_table("t", "qlink_sample", "series", stop=4)
    assert session.sql("SELECT count(*) AS n FROM t").to_pydict() == {"n": [4]}


def test_memory_limit_applies_to_plugin_reservations(sample_path):
    small = qlink.Session(memory_limit=1 << 16)
    assert small.memory_limit == 65536
    small.register_table("t", sample_path, "series", stop=100000, partitions=1)
    # The plugin's scan reserves 64 KB per batch in the session's pool: the
    # pool refuses and the plugin's own message comes back.
    with pytest.raises(qlink.ResourcesExhaustedError, match="^SeriesScanExec partition 0: Additional allocation failed"):
        small.sql("SELECT value FROM t")
    roomy = qlink.Session(memory_limit="1M")
    assert roomy.memory_limit == 1 << 20
    roomy.register_table("t", sample_path, "series", stop=100000, partitions=1)
    assert roomy.sql("SELECT count(value) AS n FROM t").to_pydict() == {"n": [100000]}
    with pytest.raises(ValueError, match="memory_limit"):
        qlink.Session(memory_limit="lots")
    with pytest.raises(ValueError, match="memory_limit must be positive"):
        qlink.Session(memory_limit=0)


def test_sql_reader_error_mid_stream(sample_path):
    s = qlink.Session(memory_limit=1 << 16)
    s.register_table("t", sample_path, "series", stop=100000, partitions=1)
    reader = s.sql_reader("SELECT value FROM t")  # planning succeeds
    # the plugin's reservation is refused while reading: pyarrow raises its
    # MemoryError subclass with the plugin's message
    with pytest.raises(MemoryError, match="SeriesScanExec partition 0: Additional allocation failed"):
        reader.read_all()


def test_results_outlive_the_session_and_plugin():
    import gc

    s = qlink.Session()
    s.register_table("t", qlink.plugin_path("qlink_sample"), "series", stop=5, partitions=1)
    table = s.sql("SELECT value, parity FROM t")
    reader = s.sql_reader("SELECT square FROM t")
    del s
    gc.collect()
    # The batches' release callbacks live in the plugin's library; it must
    # still be loaded when they run.
    assert table.to_pydict() == {"value": [0, 1, 2, 3, 4], "parity": ["even", "odd", "even", "odd", "even"]}
    assert reader.read_all().column("square").to_pylist() == [0, 1, 4, 9, 16]
    del table, reader
    gc.collect()


def test_register_object_store_arguments(tmp_path):
    # that plugins read through a registered store: test_zarr.py
    s = qlink.Session()
    with pytest.raises(ValueError, match="give root=DIR"):
        s.register_object_store("s3://bucket")
    s.register_object_store("memory://x")
    s.register_object_store("data://here", root=str(tmp_path))


def test_gil_is_released_while_a_query_runs(sample_path):
    s = qlink.Session(target_partitions=1)
    s.register_table("t", sample_path, "series", stop=60_000_000, partitions=1)
    result = {}

    def run():
        result["t"] = s.sql("SELECT sum(square % 7) AS s FROM t WHERE parity = 'odd'")

    th = threading.Thread(target=run)
    ticks = 0
    th.start()
    start = time.monotonic()
    while th.is_alive():
        ticks += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    th.join()
    # With the GIL held for the whole query this loop could not run at all.
    assert elapsed > 0.05, "the query was too fast to tell"
    assert ticks >= 20
    assert result["t"].num_rows == 1


def test_ctrl_c_cancels_a_running_query(sample_path):
    import os
    import signal

    s = qlink.Session(target_partitions=1)
    s.register_table("t", sample_path, "series", stop=3_000_000_000, partitions=1)
    # A process started in the background by a non-interactive shell (as CI
    # runs) inherits SIGINT ignored, and Python then installs no handler:
    # install the interactive one for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            s.sql("SELECT sum(square % 7) AS s FROM t")
        elapsed = time.monotonic() - start
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert elapsed < 5, f"the query ran {elapsed:.1f} s after Ctrl-C"
    # the session is still usable
    s.register_table("u", sample_path, "series", stop=3)
    assert s.sql("SELECT count(*) AS n FROM u").to_pydict() == {"n": [3]}


def test_config_option():
    s = qlink.Session(config={"datafusion.execution.batch_size": 7, "datafusion.optimizer.prefer_hash_join": False})
    s.register_table("t", qlink.plugin_path("qlink_sample"), "series", stop=20, partitions=1)
    assert [b.num_rows for b in s.sql_reader("SELECT value FROM t")] == [7, 7, 6]
    with pytest.raises(qlink.PlanError):
        qlink.Session(config={"datafusion.no_such_option": 1})
