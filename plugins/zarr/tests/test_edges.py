# SPDX-License-Identifier: Apache-2.0
"""Edges a scientist hits: variables of one table chunked differently
(aligned and misaligned block grids), very small chunks (many blocks:
planning must not cost per block), 1-D datasets, coordinates-only stores,
strings; partitions dealt out by the host's target count."""
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

from conftest import assert_same_rows, expected_rows, run_scan

FORMATS = [2, 3]
TARGETS = [1, 2, 3, 0]  # 0: the host gives no count -> one partition per block


def write(ds, path, fmt, encoding=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=encoding or {})
    return path


def check(path, *args, columns=None):
    scan = run_scan(path, *args)
    want = expected_rows(path, scan, columns)
    ndims = sum(1 for c in scan.columns if c in xr.open_zarr(path).dims)
    assert_same_rows(scan.rows, want, ndims)
    assert scan.plan_stats["num_rows"] == len(want)
    assert sum(scan.partition_rows) == len(want)
    return scan


def check_filtered(full, path, pred, *args):
    """A filtered scan equals the full scan filtered afterwards."""
    sub = run_scan(path, *args)
    want = [r for r in full.rows if pred(dict(zip(full.columns, r)))]
    assert sorted(map(repr, sub.rows)) == sorted(map(repr, want))
    assert sub.plan_stats["num_rows"] == len(want) == sum(sub.partition_rows)
    return sub


def two_chunkings(nt, ny, nx, chunks_a, chunks_b):
    rng = np.random.default_rng(7)
    ds = xr.Dataset(
        {
            "a": (("time", "y", "x"), rng.normal(size=(nt, ny, nx)).astype("f4")),
            "b": (("time", "y", "x"), rng.integers(-50, 50, size=(nt, ny, nx)).astype("i2")),
        },
        coords={"time": pd.date_range("2020-01-01", periods=nt, freq="h"), "y": np.arange(ny) * 1.5, "x": np.arange(nx)},
    )
    return ds, {"a": {"chunks": chunks_a}, "b": {"chunks": chunks_b}}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", TARGETS)
def test_differently_chunked_variables_share_an_aligned_grid(tmp_path, fmt, target):
    # extents 4 and 6 along time, 6 and 4 along y: blocks of 12 x 12, whole chunks of both
    ds, enc = two_chunkings(24, 12, 10, (4, 6, 10), (6, 4, 5))
    path = write(ds, tmp_path / "c.zarr", fmt, enc)
    scan = check(path, "--partitions", target)
    assert "blocks=2/2 " in scan.header["display"]
    assert scan.metrics["partitions"] == (2 if target in (0, 2, 3) else 1)
    # 6 chunks of a and 2 * 3 * 2 of b per block: each read exactly once
    assert scan.metrics["chunks_read"] == 24 // 4 * 12 // 6 + 24 // 6 * 12 // 4 * 10 // 5
    check_filtered(scan, path, lambda r: 3 <= r["y"] <= 7 and r["x"] >= 4,
                   "--partitions", target, "--where", "y between 3 7", "--where", "x >= 4")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", TARGETS)
def test_misaligned_chunks_use_the_largest_extent(tmp_path, fmt, target):
    # extents 10 and 9: a common multiple (90) would be 9 chunks per block;
    # blocks of 10 instead, the chunks of b straddling an edge read twice
    ds, enc = two_chunkings(200, 3, 2, (10, 3, 2), (9, 3, 2))
    path = write(ds, tmp_path / "m.zarr", fmt, enc)
    scan = check(path, "--partitions", target)
    assert "blocks=20/20 " in scan.header["display"]
    assert scan.metrics["chunks_read"] > 20 + 23
    lo, hi = pd.Timestamp("2020-01-02T05:00").value, pd.Timestamp("2020-01-04T01:00").value
    sub = check_filtered(scan, path, lambda r: lo <= r["time"] < hi,
                         "--partitions", target, "--where", f"time >= ts:{lo}", "--where", f"time < ts:{hi}")
    assert len(sub.rows) == 44 * 3 * 2
    assert sub.metrics["blocks_pruned"] > 0


def tiny_chunk_store(path):
    """1000 x 1000 float32 in 1 x 1 chunks (a million blocks), NaN fill,
    only x rows 10..12, y 0..4 written."""
    g = zarr.open_group(str(path), mode="w", zarr_format=3)
    x = g.create_array("x", shape=(1000,), chunks=(1000,), dtype="i4", dimension_names=["x"])
    x[:] = np.arange(1000, dtype="i4")
    y = g.create_array("y", shape=(1000,), chunks=(1000,), dtype="f8", dimension_names=["y"])
    y[:] = np.arange(1000) * 0.25
    v = g.create_array("v", shape=(1000, 1000), chunks=(1, 1), dtype="f4", fill_value=np.nan,
                       dimension_names=["x", "y"])
    v[10:13, 0:5] = np.arange(15, dtype="f4").reshape(3, 5)
    return path


def test_tiny_chunks_plan_without_a_cost_per_block(tmp_path):
    path = tiny_chunk_store(tmp_path / "tiny.zarr")
    scan = run_scan(path, "--where", "x between 10 12", "--where", "y < 2")
    assert scan.metrics["blocks"] == 1_000_000
    assert scan.metrics["blocks_pruned"] == 1_000_000 - 3 * 8
    assert scan.metrics["partitions"] == 2
    assert sum(scan.partition_rows) == 24 == len(scan.rows)
    got = {(r[0], r[1]): r[2] for r in scan.rows}
    for i in range(3):
        for j in range(8):
            # never written: zarr's fill value NaN; without a _FillValue attribute xarray keeps it NaN, not masked
            if j < 5:
                assert got[(10 + i, j * 0.25)] == float(i * 5 + j)
            else:
                assert np.isnan(got[(10 + i, j * 0.25)])
    # the whole table, limited: statistics and partitions still cost nothing per block
    limited = run_scan(path, "--limit", "3")
    assert limited.metrics["rows"] == 6 and limited.plan_stats["num_rows"] == 6
    assert limited.partition_rows == [3, 3]
    assert limited.table_stats["num_rows"] == 1_000_000


def test_tiny_chunks_grow_into_bigger_blocks(tmp_path):
    # the default block_rows: 1 x 1 chunks grow to blocks of 66 x 1000 (66000 rows >= 65536), so batches are
    # not one row each; a filter still reads only the chunks it selects
    path = tiny_chunk_store(tmp_path / "tiny.zarr")
    where = ["--where", "x between 10 12", "--where", "y < 2"]
    fine = run_scan(path, *where)
    grown = run_scan(path, "--block-rows", 65536, *where)
    assert grown.metrics["blocks"] == 16 and grown.metrics["blocks_pruned"] == 15
    assert grown.metrics["chunks_read"] == 24 and grown.metrics["batches"] == 1
    assert sorted(map(repr, grown.rows)) == sorted(map(repr, fine.rows))
    assert grown.partition_rows == [24]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", TARGETS)
def test_one_dimensional_dataset(tmp_path, fmt, target):
    ds = xr.Dataset({"v": ("t", np.linspace(0, 1, 11)), "n": ("t", np.arange(11, dtype="u2"))},
                    coords={"t": np.arange(11) * 2})
    path = write(ds, tmp_path / "one.zarr", fmt, {"v": {"chunks": (3,)}, "n": {"chunks": (3,)}})
    scan = check(path, "--partitions", target)
    assert scan.columns == ["t", "n", "v"]
    sub = check_filtered(scan, path, lambda r: r["t"] > 5 and r["t"] != 12,
                         "--partitions", target, "--where", "t > 5", "--where", "t != 12")
    assert [r[0] for r in sub.rows] == [6, 8, 10, 14, 16, 18, 20]


@pytest.mark.parametrize("fmt", FORMATS)
def test_coordinates_only_store(tmp_path, fmt):
    ds = xr.Dataset(coords={"x": [1, 2, 3], "y": [10.0, 20.0], "label": ("x", ["a", "bb", "c"])})
    path = write(ds, tmp_path / "coords.zarr", fmt)
    scan = run_scan(path)
    assert scan.columns == ["x", "y", "label"]
    want = ds.to_dataframe().reset_index()[["x", "y", "label"]].values.tolist()
    assert sorted(scan.rows) == sorted([[int(x), float(y), str(lab)] for x, y, lab in want])
    assert scan.plan_stats["num_rows"] == 6
    sub = run_scan(path, "--where", "y > 15")
    assert sorted(sub.rows) == [[1, 20.0, "a"], [2, 20.0, "bb"], [3, 20.0, "c"]]


@pytest.mark.parametrize("fmt", FORMATS)
def test_strings_with_several_blocks(tmp_path, fmt):
    n = 9
    ds = xr.Dataset(
        {"name": ("station", np.array([f"st{i}" * (i % 3 + 1) for i in range(n)], dtype="U")),
         "code": ("station", np.array([f"c{i}".encode() for i in range(n)], dtype="S3")),
         "t": ("station", np.arange(n, dtype="f8"))},
        coords={"station": [f"S{i:02d}" for i in range(n)]},
    )
    enc = {k: {"chunks": (2,)} for k in ("name", "code", "t")}
    path = write(ds, tmp_path / "s.zarr", fmt, enc)
    scan = check(path, "--partitions", 3)
    assert scan.metrics["partitions"] == 3 and scan.metrics["blocks"] == 5
    # filters on string coordinates are not pushed down (the host applies them)
    sub = run_scan(path, "--where", "station = 3")
    assert sub.header["answers"] == [0]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("names", [None, [None, "y"]])
def test_array_without_dimension_names_names_the_store_and_array(tmp_path, fmt, names):
    # xarray refuses such a store; the array is not dropped silently
    g = zarr.open_group(str(tmp_path / "nodims.zarr"), mode="w", zarr_format=fmt)
    ok = g.create_array("ok", shape=(3,), chunks=(3,), dtype="f4", **(
        {"dimension_names": ["x"]} if fmt == 3 else {"attributes": {"_ARRAY_DIMENSIONS": ["x"]}}))
    ok[:] = 1
    kw = {}
    if names is not None:
        kw = {"dimension_names": names} if fmt == 3 else {"attributes": {"_ARRAY_DIMENSIONS": names}}
    g.create_array("t2m", shape=(3, 2), chunks=(3, 2), dtype="f4", **kw)
    p = run_scan(tmp_path / "nodims.zarr", check=False)
    assert p.returncode == 1
    assert "nodims.zarr" in p.stderr and "array 't2m' has no dimension names" in p.stderr
    assert "AddressSanitizer" not in p.stderr


def test_store_of_one_unwritten_scalar(tmp_path):
    # its only table is the scalars table; the chunk never written reads
    # as the v3 fill_value (no _FillValue attribute: xarray masks nothing)
    from test_scalars import scalar_expected

    g = zarr.open_group(str(tmp_path / "scalars.zarr"), mode="w", zarr_format=3)
    g.create_array("s", shape=(), dtype="f4", dimension_names=[], fill_value=1.5)
    zarr.consolidate_metadata(str(tmp_path / "scalars.zarr"))
    scan = run_scan(tmp_path / "scalars.zarr")
    assert scan.columns == ["s"]
    assert scan.rows == [scalar_expected(tmp_path / "scalars.zarr", scan)]
    assert scan.rows == [[1.5]]


def test_store_without_arrays_names_the_store(tmp_path):
    zarr.open_group(str(tmp_path / "empty.zarr"), mode="w", zarr_format=3)
    p = run_scan(tmp_path / "empty.zarr", check=False)
    assert p.returncode == 1
    assert "empty.zarr" in p.stderr and "no arrays with dimensions" in p.stderr


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", [1, 3])
def test_dimension_with_a_masked_coordinate_across_blocks(tmp_path, fmt, target):
    # x repeats every row (a pattern), but holds a fill value (NULL): built batch by batch
    ds = xr.Dataset({"v": (("t", "x"), np.arange(40, dtype="f8").reshape(10, 4))},
                    coords={"t": np.arange(10), "x": np.array([0, -1, 2, 3], dtype="i4")})
    path = write(ds, tmp_path / "nx.zarr", fmt, {"v": {"chunks": (3, 4)}, "x": {"_FillValue": -1}})
    scan = check(path, "--partitions", target, "--batch", 5)
    assert [r[1] for r in scan.rows[:8]] == [0.0, None, 2.0, 3.0] * 2


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("consolidated", [True, False])
def test_datatree_root_names_its_groups_and_each_group_opens(tmp_path, fmt, consolidated):
    # xarray's DataTree writes one group per node; the root holds no arrays
    ds = xr.Dataset({"v": (("t",), np.arange(6.0))}, coords={"t": np.arange(6)})
    tree = xr.DataTree.from_dict({"/": xr.Dataset(attrs={"title": "tree"}), "/era": ds,
                                  "/obs/station": ds.rename(v="w")})
    path = tmp_path / "tree.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree.to_zarr(path, zarr_format=fmt, mode="w", consolidated=consolidated)
    p = run_scan(path, check=False)
    assert p.returncode == 1
    assert p.stderr.strip().endswith(f"zarr store {path} has no arrays of its own; it holds the groups era, obs "
                                     f"(a DataTree?): point path at one of them, e.g. {path}/era")
    check(path / "era")
    assert check(path / "obs" / "station").columns == ["t", "w"]


def partitions_of(scan):
    """The scan's rows split by partition (zarr-scan runs them in turn)."""
    out, at = [], 0
    for n in scan.partition_rows:
        out.append(scan.rows[at:at + n])
        at += n
    return out


def assert_partitions_sorted(scan):
    """Every partition's rows are in the declared order (ties allowed)."""
    def key(row):
        return tuple(-row[c] if flags & 32 else row[c] for c, flags in scan.ordering)
    for part in partitions_of(scan):
        keys = [key(r) for r in part]
        assert keys == sorted(keys)


def ordering_store(path, fmt, chunks, lat=None, lon=None):
    lat = np.array([60.0, 45.0, 30.0, 15.0, 0.0]) if lat is None else lat  # decreasing, as ERA5's
    lon = np.arange(6) * 10.0 if lon is None else lon
    t = pd.date_range("2020-01-01", periods=8, freq="6h")
    ds = xr.Dataset({"v": (("time", "lat", "lon"), np.arange(8 * 5 * 6, dtype="f8").reshape(8, 5, 6))},
                    coords={"time": t, "lat": lat, "lon": lon})
    return write(ds, path, fmt, {"v": {"chunks": chunks}})


DESC_NULLS_FIRST = 32 | 64


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("target", [1, 3])
def test_ordering_when_only_the_outer_dimension_is_blocked(tmp_path, fmt, target):
    # chunked along time only: each partition's rows are in C order, i.e.
    # sorted by time ASC, lat DESC, lon ASC
    path = ordering_store(tmp_path / "o.zarr", fmt, (2, 5, 6))
    scan = check(path, "--partitions", target)
    assert scan.ordering == [[0, 0], [1, DESC_NULLS_FIRST], [2, 0]]
    assert_partitions_sorted(scan)
    # filters (a subset of each block) and a limit keep it
    sub = run_scan(path, "--partitions", target, "--where", "lat <= 45", "--where", "time in ts:1577836800000000000,ts:1577880000000000000", "--limit", "4")
    assert sub.ordering == [[0, 0], [1, DESC_NULLS_FIRST], [2, 0]]
    assert_partitions_sorted(sub)
    # projected without lat: only time remains a key (lon alone is not sorted)
    proj = run_scan(path, "--partitions", target, "--columns", "time,lon,v")
    assert proj.ordering == [[0, 0]]
    assert_partitions_sorted(proj)
    assert run_scan(path, "--columns", "lon,v").ordering == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_ordering_when_an_inner_dimension_is_blocked(tmp_path, fmt):
    # blocks along lat too: a partition revisits each time in every lat block
    path = ordering_store(tmp_path / "o.zarr", fmt, (2, 2, 6))
    scan = check(path, "--partitions", 1)
    assert scan.ordering == []
    # unless a filter keeps a single lat block
    assert run_scan(path, "--partitions", 1, "--where", "lat >= 50").ordering == [[0, 0], [1, DESC_NULLS_FIRST], [2, 0]]


@pytest.mark.parametrize("lon", [np.array([0.0, 10, 5, 20, 30, 40]), np.array([0.0, 10, 10, 20, 30, 40]),
                                 np.array([0.0, 10, np.nan, 20, 30, 40])])
def test_ordering_stops_at_a_coordinate_that_is_not_strictly_monotonic(tmp_path, lon):
    path = ordering_store(tmp_path / "o.zarr", 3, (2, 5, 6), lon=lon)
    scan = run_scan(path, "--partitions", 2)
    assert scan.ordering == [[0, 0], [1, DESC_NULLS_FIRST]]
    assert_partitions_sorted(scan)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("limit,chunks", [(1, 2), (3, 4), (7, 8), (40, 40), (1000, 400)])
def test_limit_reads_only_the_chunks_its_rows_need(tmp_path, fmt, limit, chunks):
    # one-element chunks grown into blocks of many chunks: a limit that ends
    # inside a block reads the chunks of its first rows only, and gives the
    # partition's first rows
    ds = xr.Dataset({"v": (("t", "x"), np.arange(400, dtype="f8").reshape(200, 2))},
                    coords={"t": np.arange(200), "x": [10, 20]})
    path = write(ds, tmp_path / "l.zarr", fmt, {"v": {"chunks": (1, 1)}})
    full = run_scan(path, "--partitions", 1, "--block-rows", 100)
    got = run_scan(path, "--partitions", 1, "--block-rows", 100, "--limit", limit)
    assert got.rows == full.rows[:limit]
    # blocks of 50 x 2 one-element chunks: the chunks of the first
    # ceil(limit / 2) positions of t, both x (before: the whole block, 100)
    assert got.metrics["chunks_read"] == chunks
