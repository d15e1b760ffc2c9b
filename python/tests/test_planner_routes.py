# SPDX-License-Identifier: Apache-2.0
"""Every route a qlink query planner takes in datafusion-python 55, over
every kind of qlink table, with exact rows.

Routes: ``set_query_planner`` on a context carrying qlink's codecs
(``ctx.with_extensions(qlink.codecs())``), ``ctx.with_extensions(planner)``
(which adds the codecs), both on ``qlink.xarray.Context`` (which carries
them), and ``qlink.Session.install_planner``. Tables: qlink_sample's series
table, its table function ``sample_range``, a qlink_zarr store's table and
qlink_ndarray Datasets. The planner is qlink_fold: every query below is a
contraction it folds, and EXPLAIN shows its ``FoldExec`` inside the one
leaf (``QlinkPlannedExec``) the plan returns to datafusion-python as.
"""

import datafusion
import numpy as np
import pytest
import xarray as xr

import qlink
import qlink.xarray

FOLD = qlink.plugin_path("qlink_fold")


def fold():
    return qlink.Plugin(FOLD).planner("fold")


def via_set_query_planner(ctx):
    ctx = ctx.with_extensions(qlink.codecs())
    ctx.set_query_planner(fold())
    return ctx


def via_with_extensions(ctx):
    return ctx.with_extensions(fold())


ROUTES = {"set_query_planner": via_set_query_planner, "with_extensions": via_with_extensions}
CONTEXTS = {"SessionContext": datafusion.SessionContext, "xarray.Context": qlink.xarray.Context}


def run(ctx, sql):
    """Rows of ``sql`` and whether the fold planner folded it (EXPLAIN's
    physical plan, as qlink planned it, shows ``FoldExec``)."""
    assert "QlinkPlannedExec" in ctx.sql(sql).execution_plan().display_indent()
    explain = ctx.sql("EXPLAIN " + sql).to_pydict()
    rows = dict(zip(explain["plan_type"], explain["plan"]))
    assert sorted(rows) == ["logical_plan", "physical_plan"], rows
    return ctx.sql(sql).to_pydict(), "FoldExec" in rows["physical_plan"]


@pytest.fixture()
def sample():
    return qlink.Plugin(qlink.plugin_path("qlink_sample"))


@pytest.fixture()
def matrices():
    """Two integer-valued float matrices as Datasets (sums exact in float64)."""
    a = np.arange(12, dtype="f8").reshape(3, 4) - 5
    b = np.arange(8, dtype="f8").reshape(4, 2) * 2 + 1
    da = xr.Dataset({"v": (("i", "k"), a)}, coords={"i": np.arange(3), "k": np.arange(4)})
    db = xr.Dataset({"w": (("k", "j"), b)}, coords={"k": np.arange(4), "j": np.arange(2)})
    return da, db, a @ b


MATMUL = "SELECT a.i, b.j, SUM(a.v * b.w) AS s FROM a JOIN b ON a.k = b.k GROUP BY a.i, b.j ORDER BY a.i, b.j"


def matmul_rows(prod):
    i, j = np.meshgrid(np.arange(prod.shape[0]), np.arange(prod.shape[1]), indexing="ij")
    return {"i": i.ravel().tolist(), "j": j.ravel().tolist(), "s": prod.ravel().tolist()}


SERIES = "SELECT b.value AS k, SUM(a.square * b.value) AS s FROM t a JOIN t b ON a.value = b.value GROUP BY b.value ORDER BY k"
SERIES_ROWS = {"k": list(range(12)), "s": [k**3 for k in range(12)]}
RANGE = ("SELECT b.value AS k, SUM(a.value * b.value) AS s FROM sample_range(0, 9) a "
         "JOIN sample_range(0, 9, 2) b ON a.value = b.value GROUP BY b.value ORDER BY k")
RANGE_ROWS = {"k": [0, 2, 4, 6, 8], "s": [0, 4, 16, 36, 64]}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("context", CONTEXTS)
def test_sample_table(route, context, sample):
    ctx = CONTEXTS[context]()
    ctx.register_table("t", sample.table("series", stop=12))
    ctx = ROUTES[route](ctx)
    assert run(ctx, SERIES) == (SERIES_ROWS, True)
    # A plan the fold declines still runs through the planner.
    assert run(ctx, "SELECT count(*) AS n FROM t WHERE value > 3") == ({"n": [8]}, False)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("context", CONTEXTS)
def test_table_function(route, context, sample):
    ctx = CONTEXTS[context]()
    ctx.register_udtf(datafusion.udtf(sample.udtf("sample_range"), "sample_range"))
    ctx = ROUTES[route](ctx)
    assert run(ctx, RANGE) == (RANGE_ROWS, True)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("context", CONTEXTS)
def test_zarr_table(route, context, store):
    ds, path = store
    ctx = CONTEXTS[context]()
    qlink.zarr(str(path)).register(ctx, prefix="w_")
    ctx = ROUTES[route](ctx)
    sql = ("SELECT a.time AS t, SUM(a.count * b.count) AS s FROM w_time_lat a JOIN w_time_lat b "
           "ON a.time = b.time GROUP BY a.time ORDER BY t")
    count = ds["count"].values.astype(np.int64)
    assert run(ctx, sql) == ({"t": list(range(5)), "s": (count.sum(axis=1) ** 2).tolist()}, True)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("context", CONTEXTS)
def test_ndarray_tables(route, context, matrices):
    da, db, prod = matrices
    ctx = CONTEXTS[context]()
    qlink.xarray.register(ctx, "a", da)
    qlink.xarray.register(ctx, "b", db)
    ctx = ROUTES[route](ctx)
    assert run(ctx, MATMUL) == (matmul_rows(prod), True)


def test_session_install_planner(sample, store, matrices):
    ds, path = store
    da, db, prod = matrices
    s = qlink.Session()
    s.load_plugin(qlink.plugin_path("qlink_sample"))
    s.register_table("t", qlink.plugin_path("qlink_sample"), "series", stop=12)
    s.register_zarr(str(path), name="w")
    s.register_dataset("a", da)
    s.register_dataset("b", db)
    s.install_planner(FOLD, "fold")
    queries = {
        SERIES: SERIES_ROWS,
        RANGE: RANGE_ROWS,
        MATMUL: matmul_rows(prod),
    }
    for sql, want in queries.items():
        assert "FoldExec" in s.explain(sql), sql
        assert s.sql(sql).to_pydict() == want, sql


def test_xarray_context_keeps_its_class(matrices):
    da, db, prod = matrices
    ctx = qlink.xarray.Context().with_extensions(fold())
    assert isinstance(ctx, qlink.xarray.Context)
    ctx.from_dataset("a", da).from_dataset("b", db)
    assert run(ctx, MATMUL) == (matmul_rows(prod), True)
    # Installing the codecs again is a no-op, not datafusion-python's
    # "id already installed" error.
    assert ctx.with_extensions(qlink.codecs()).logical_extension_codec_ids() == [qlink.CODEC_ID]


def test_session_without_codecs_is_refused_clearly():
    ctx = datafusion.SessionContext()
    with pytest.raises(ValueError, match=r"does not carry qlink's codecs .*with_extensions\(qlink.codecs\(\)\)"):
        ctx.set_query_planner(fold())


def test_plans_are_released(sample):
    ctx = via_set_query_planner(datafusion.SessionContext())
    ctx.register_table("t", sample.table("series", stop=12))
    for _ in range(3):
        assert run(ctx, SERIES) == (SERIES_ROWS, True)
    assert qlink._qlink._planned_plans_held() == 0


def test_plan_bytes_carry_tables_by_reference(sample):
    """A logical plan serialized through qlink's codec names its tables by
    reference: it decodes in this process while the table is registered,
    and anywhere else (another process, the table gone) is a clear error."""
    import gc

    ctx = datafusion.SessionContext().with_extensions(qlink.codecs())
    ctx.register_table("t", sample.table("series", stop=4))
    data = ctx.sql("SELECT value, square FROM t ORDER BY value").logical_plan().to_bytes(ctx)
    plan = datafusion.LogicalPlan.from_bytes(ctx, data)
    rows = ctx.create_dataframe_from_logical_plan(plan).to_pydict()
    assert rows == {"value": [0, 1, 2, 3], "square": [0, 1, 4, 9]}

    at = data.index(b"qlnk")
    token = at + 6  # magic, version, kind, then the process token
    foreign = data[:token] + bytes([data[token] ^ 0xFF]) + data[token + 1:]
    with pytest.raises(Exception, match=r"qlink table `t` was encoded by reference in another process"):
        datafusion.LogicalPlan.from_bytes(ctx, foreign)

    ctx.deregister_table("t")
    del plan
    gc.collect()
    with pytest.raises(Exception, match=r"qlink table `t` is no longer registered in this process"):
        datafusion.LogicalPlan.from_bytes(ctx, data)


TWO_PRODUCTS = (
    "WITH p AS (SELECT a.i, b.j, SUM(a.v * b.w) AS s FROM a JOIN b ON a.k = b.k GROUP BY a.i, b.j), "
    "q AS (SELECT b.j AS i, a.i AS j, SUM(a.v * b.w) AS s FROM a JOIN b ON a.k = b.k GROUP BY b.j, a.i) "
    "SELECT p.i, p.j, p.s + q.s AS s FROM p JOIN q ON p.i = q.j AND p.j = q.i ORDER BY p.i, p.j"
)


def folds(plan_text: str) -> int:
    """How many FoldExec nodes a plan's text shows (one per line)."""
    return sum("FoldExec: " in line for line in plan_text.splitlines())


def test_every_contraction_is_offered(matrices):
    """After a planner replaces one subtree, the host offers the plan again:
    both independent contractions fold, not only the first in pre-order."""
    da, db, prod = matrices
    want = matmul_rows(2 * prod)
    s = qlink.Session()
    s.register_dataset("a", da)
    s.register_dataset("b", db)
    s.install_planner(FOLD, "fold")
    assert folds(s.explain(TWO_PRODUCTS)) == 2
    assert s.sql(TWO_PRODUCTS).to_pydict() == want
    ctx = qlink.xarray.Context().from_dataset("a", da).from_dataset("b", db)
    ctx.set_query_planner(fold())
    explain = ctx.sql("EXPLAIN " + TWO_PRODUCTS).to_pydict()
    assert folds(dict(zip(explain["plan_type"], explain["plan"]))["physical_plan"]) == 2
    assert ctx.sql(TWO_PRODUCTS).to_pydict() == want


# A CTE used twice: datafusion-python inlines it at both references; a qlink
# planner (a plugin's, or qlink.shared_subqueries() alone) plans it once and
# runs it once (SharedSubplanExec, in EXPLAIN VERBOSE with its plan).
TWICE = ("WITH p AS (SELECT a.i, b.j, SUM(a.v * b.w) AS s FROM a JOIN b ON a.k = b.k GROUP BY a.i, b.j) "
         "SELECT x.i, x.j, x.s + y.s AS s FROM p x JOIN p y ON x.i = y.i AND x.j = y.j ORDER BY x.i, x.j")


@pytest.mark.parametrize("planner", ["shared_subqueries", "fold"])
@pytest.mark.parametrize("context", CONTEXTS)
def test_a_cte_used_twice_runs_once(planner, context, matrices):
    da, db, prod = matrices
    ctx = CONTEXTS[context]()
    qlink.xarray.register(ctx, "a", da)
    qlink.xarray.register(ctx, "b", db)
    want = matmul_rows(2 * prod)
    assert ctx.sql(TWICE).to_pydict() == want  # datafusion-python's own planning
    ctx = ctx.with_extensions(qlink.shared_subqueries() if planner == "shared_subqueries" else fold())
    assert ctx.sql(TWICE).to_pydict() == want
    explain = dict(zip(*ctx.sql("EXPLAIN VERBOSE " + TWICE).to_pydict().values()))
    physical = explain["physical_plan"]
    assert physical.count("SharedSubplanExec: name=p, references=2") == 2, physical
    assert ("FoldExec" in physical) == (planner == "fold")


def test_shared_subqueries_is_a_planner():
    assert repr(qlink.shared_subqueries()) == "qlink.Planner(qlink (shared subqueries))"
