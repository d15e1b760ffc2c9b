# SPDX-License-Identifier: Apache-2.0
"""qlink_sample's in-memory `grid` table (the benchmark's counterpart of
register_record_batches): exact values, schema, partitions and batch sizes
against a native table built independently with numpy, through
datafusion-python's capsule and through qlink.Session, and proof that every
scan hands out the same buffers (by reference, built once at open)."""

import datafusion
import numpy as np
import pyarrow as pa
import pytest

import qlink

SCHEMA = pa.schema([pa.field("y", pa.float64(), nullable=False),
                    pa.field("x", pa.int64(), nullable=False),
                    pa.field("v", pa.float64(), nullable=False)])


def grid_partitions(ny, nx, batch_rows=8192, partitions=1):
    """The grid table as lists of batches per partition, computed with the
    same IEEE operations as plugins/sample/src/grid.c."""
    k = np.arange(ny * nx, dtype=np.int64)
    i = (k // nx).astype(np.float64)
    y = np.full(ny * nx, -80.0) if ny == 1 else -80.0 + 160.0 * i / float(ny - 1)
    x = k % nx
    v = ((k * 37) % 101 - 50).astype(np.float64) / 8.0
    n = ny * nx
    out = []
    for p in range(partitions):
        lo, hi = n * p // partitions, n * (p + 1) // partitions
        batches = []
        for s in range(lo, hi, batch_rows):
            e = min(s + batch_rows, hi)
            batches.append(pa.RecordBatch.from_arrays([pa.array(y[s:e]), pa.array(x[s:e]), pa.array(v[s:e])],
                                                      schema=SCHEMA))
        out.append(batches)
    return out


@pytest.fixture(scope="module")
def sample():
    return qlink.Plugin(qlink.plugin_path("qlink_sample"))


def test_default_grid_is_the_benchmarks_65_by_16_table_bit_for_bit(sample):
    want = grid_partitions(65, 16)
    assert [len(p) for p in want] == [1] and want[0][0].num_rows == 1040
    # y is numpy.linspace(-80, 80, 65) repeated 16 times.
    assert want[0][0].column(0).to_numpy()[::16].tolist() == np.linspace(-80, 80, 65).tolist()
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("grid"))
    got = ctx.sql("SELECT * FROM t").collect()
    assert [b.num_rows for b in got] == [1040]
    assert got[0].schema == SCHEMA
    assert got[0].equals(want[0][0])
    s = qlink.Session()
    s.register_table("t", sample, "grid")
    t = s.sql("SELECT * FROM t")
    assert t.schema == SCHEMA
    assert [b.num_rows for b in t.to_batches()] == [1040]
    assert t.equals(pa.Table.from_batches(want[0]))


QUERIES = [
    "SELECT * FROM {t} ORDER BY y, x",
    "SELECT v, x FROM {t} ORDER BY y, x",
    "SELECT x, sum(v) AS s, min(y) AS lo, max(y) AS hi, count(*) AS n FROM {t} GROUP BY x ORDER BY x",
    "SELECT y, v FROM {t} WHERE v > 2.5 AND x IN (1, 3) ORDER BY y, v",
    "SELECT count(*) AS n FROM (SELECT * FROM {t} LIMIT 9) u",
]


@pytest.mark.parametrize("query", QUERIES)
def test_grid_equals_native_table_in_both_engines(sample, query):
    opts = dict(ny=7, nx=5, batch_rows=4, partitions=3)
    native = grid_partitions(7, 5, 4, 3)
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("grid", **opts))
    ctx.register_record_batches("m", native)
    want = ctx.sql(query.format(t="m")).to_arrow_table()
    assert want.num_rows > 0
    got = ctx.sql(query.format(t="t")).to_arrow_table()
    assert got.schema == want.schema
    assert got.equals(want)
    s = qlink.Session()
    s.register_table("t", sample, "grid", **opts)
    assert s.sql(query.format(t="t")).to_pydict() == want.to_pydict()


def test_partitions_and_batches_are_the_native_layout(sample):
    s = qlink.Session(target_partitions=1)
    s.register_table("t", sample, "grid", ny=7, nx=5, batch_rows=4, partitions=3)
    # One partition per row range of 11/12/12 rows, in batches of at most 4.
    plan = s.explain("SELECT * FROM t")
    assert "GridScanExec: ny=7 nx=5 partitions=3 batch_rows=4 projection=[y,x,v] limit=-1" in plan
    reader = s.sql_reader("SELECT * FROM t")
    sizes = sorted(b.num_rows for b in reader)
    assert sizes == sorted([4, 4, 3, 4, 4, 4, 4, 4, 4])
    assert sum(sizes) == 35


def test_scans_hand_out_the_same_buffers(sample):
    """Built once at open: two scans (and any projection) point at the same
    memory, through the capsule and through qlink.Session."""
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("grid"))
    a = ctx.sql("SELECT * FROM t").collect()[0]
    b = ctx.sql("SELECT v, y FROM t").collect()[0]
    assert b.schema.names == ["v", "y"]
    assert a.column(2).buffers()[1].address == b.column(0).buffers()[1].address
    assert a.column(0).buffers()[1].address == b.column(1).buffers()[1].address
    s = qlink.Session()
    s.register_table("t", sample, "grid")
    c = s.sql("SELECT * FROM t").column("v").chunks[0]
    d = s.sql("SELECT v FROM t").column("v").chunks[0]
    assert c.buffers()[1].address == d.buffers()[1].address
    assert c.buffers()[0] is None  # no validity bitmap: no nulls


def test_arrays_outlive_the_table_and_session(sample):
    s = qlink.Session()
    s.register_table("t", sample, "grid", ny=3, nx=2)
    t = s.sql("SELECT v FROM t")
    del s
    assert t.column("v").to_pylist() == [-6.25, -1.625, 3.0, -5.0, -0.375, 4.25]


def test_grid_options_are_checked(sample):
    with pytest.raises(qlink.PluginError, match="qlink_sample/grid: option 'partitions' = 0 must be in 1..1024"):
        sample.table("grid", partitions=0)
    with pytest.raises(qlink.PluginError, match=r"ny \* nx = 100000 \* 100000 is more than 2\^28 rows"):
        sample.table("grid", ny=100000, nx=100000)
    with pytest.raises(qlink.PluginError, match="unknown option 'rows'"):
        sample.table("grid", rows=4)
