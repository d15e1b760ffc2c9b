# SPDX-License-Identifier: Apache-2.0
"""Filter, projection and limit pushdown: results equal the unfiltered scan
filtered afterwards; supported filters are answered EXACT (2), others
UNSUPPORTED (0); pruned partitions are not read."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import run_scan

T0 = pd.Timestamp("2010-01-01")
NS = 1_000_000_000


def make_store(tmp_path, fmt):
    rng = np.random.default_rng(3)
    nt, ny, nx = 10, 7, 6
    time = pd.date_range(T0, periods=nt, freq="D")
    ds = xr.Dataset(
        {
            "v": (("time", "y", "x"), rng.normal(size=(nt, ny, nx)).astype("f4")),
            "w": (("time", "y", "x"), rng.integers(0, 100, size=(nt, ny, nx)).astype("i4")),
            "s": (("y", "x"), rng.normal(size=(ny, nx))),
        },
        coords={"time": time, "y": np.arange(ny) * 10, "x": np.array([0.9, 0.1, 0.5, 0.3, 0.7, np.nan])},
    )
    # x has no fill value, so its NaN stays a NaN (with xarray's default NaN
    # fill it would be masked: NULL)
    enc = {"v": {"chunks": (3, 2, 4)}, "w": {"chunks": (2, 7, 3)}, "s": {"chunks": (3, 3)}, "x": {"_FillValue": None}}
    path = tmp_path / f"f{fmt}.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=enc)
    return path


def ts(days, unit="ns"):
    value = (T0 + pd.Timedelta(days=days)).value
    if unit == "ns":
        return f"ts:{value}"
    return f"tss:{value // NS}"


def lit_value(text):
    if text.startswith("ts:"):
        return int(text[3:])
    if text.startswith("tss:"):
        return int(text[4:]) * NS
    if text.startswith("date:"):
        return int(text[5:]) * 86400 * NS
    if any(c in text for c in ".eEnNiI"):
        return float(text)
    return int(text)


def cmp(a, b):
    # Arrow's total order for floats: NaN largest and equal to itself
    an = isinstance(a, float) and math.isnan(a)
    bn = isinstance(b, float) and math.isnan(b)
    if an or bn:
        return 0 if an and bn else (1 if an else -1)
    return (a > b) - (a < b)


def check_filtered_scan(path, table, filters):
    """Scan `table` with `filters` pushed down: every filter is answered
    EXACT (2), the rows equal the full scan filtered afterwards (by holds)
    and the plan's row count is exact. Returns (scan, expected rows)."""
    full = run_scan(path, "--table", table)
    args = ["--table", table]
    for f in filters:
        args += ["--where", f]
    got = run_scan(path, *args)
    assert got.header["answers"] == [2] * len(filters)
    want = [r for r in full.rows if all(holds(f, r, full.columns) for f in filters)]
    assert norm(got.rows) == norm(want)
    assert got.plan_stats["num_rows"] == len(want)
    return got, want


def holds(expr, row, columns):
    if " or " in expr:
        left, right = expr.split(" or ", 1)
        return holds(left, row, columns) or holds(right, row, columns)
    if expr.startswith("not "):
        return not holds(expr[4:], row, columns)
    col, op, rest = expr.split(" ", 2)
    v = row[columns.index(col)]
    if v == "NaN":
        v = float("nan")
    if op in ("between", "notbetween"):
        lo, hi = (lit_value(t) for t in rest.split())
        r = cmp(v, lo) >= 0 and cmp(v, hi) <= 0
        return r if op == "between" else not r
    if op in ("in", "notin"):
        r = any(cmp(v, lit_value(t)) == 0 for t in rest.split(","))
        return r if op == "in" else not r
    c = cmp(v, lit_value(rest))
    return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def norm(rows):
    def cell(x):
        if x is None:
            return (0, 0)
        if isinstance(x, float) and math.isnan(x):
            return (2, 0)
        return (1, x)

    return sorted(tuple(cell(x) for x in r) for r in rows)


FILTERS = [
    ["y = 20"],
    ["y != 20"],
    ["y < 30"],
    ["y <= 30"],
    ["y > 30"],
    ["y >= 30"],
    ["y between 20 40"],
    ["y notbetween 20 40"],
    ["y in 10,50,55"],
    ["y notin 10,50"],
    ["not y < 30"],
    ["y = 10 or y = 60"],
    ["y > 1000"],
    ["x < 0.5"],
    ["x between 0.25 0.75"],
    ["x = nan"],
    ["x > 0.5"],
    ["x in 0.1,0.9"],
    [f"time >= {ts(3)}"],
    [f"time < {ts(5, 's')}"],
    [f"time between {ts(2)} {ts(6)}"],
    [f"time in {ts(1)},{ts(8)}"],
    [f"time = {ts(4, 's')}"],
    ["time > date:14613"],
    [f"time >= {ts(2)}", "y between 10 30", "x < 0.8"],
    [f"time < {ts(1)}", "y = 60"],
    ["y < 30", "y > 10"],
]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: " & ".join(f))
def test_filter_equals_filtered_scan(tmp_path, fmt, filters):
    path = make_store(tmp_path, fmt)
    got, want = check_filtered_scan(path, "time_y_x", filters)
    assert got.metrics["rows"] == len(want)


@pytest.mark.parametrize("fmt", [2, 3])
def test_pruning_reads_fewer_chunks(tmp_path, fmt):
    path = make_store(tmp_path, fmt)
    full = run_scan(path, "--table", "time_y_x")
    one = run_scan(path, "--table", "time_y_x", "--where", f"time = {ts(0)}")
    assert one.metrics["chunks_read"] < full.metrics["chunks_read"]
    assert one.metrics["blocks_pruned"] > 0
    empty = run_scan(path, "--table", "time_y_x", "--where", "y > 1000")
    assert empty.metrics["rows"] == 0 and empty.metrics["chunks_read"] == 0


@pytest.mark.parametrize("fmt", [2, 3])
def test_filters_on_variables_are_unsupported(tmp_path, fmt):
    path = make_store(tmp_path, fmt)
    got = run_scan(path, "--table", "time_y_x", "--where", "v > 0", "--where", "y = 10")
    assert got.header["answers"] == [0, 2]
    full = run_scan(path, "--table", "time_y_x")
    want = [r for r in full.rows if holds("y = 10", r, full.columns)]
    assert norm(got.rows) == norm(want)


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("columns", [["v"], ["time", "w"], ["w", "time", "v"], ["x"], ["s", "y"]])
def test_projection_equals_projected_scan(tmp_path, fmt, columns):
    path = make_store(tmp_path, fmt)
    table = "y_x" if "s" in columns else "time_y_x"
    full = run_scan(path, "--table", table)
    got = run_scan(path, "--table", table, "--columns", ",".join(columns))
    assert got.columns == columns
    idx = [full.columns.index(c) for c in columns]
    assert norm(got.rows) == norm([[r[i] for i in idx] for r in full.rows])
    arrays = [c for c in columns if c not in ("time", "y", "x")]
    assert got.header["display"].split("arrays=[")[1].split("]")[0] == ", ".join(arrays)
    if not arrays:
        assert got.metrics["chunks_read"] == 0


@pytest.mark.parametrize("fmt", [2, 3])
def test_statistics_are_exact(tmp_path, fmt):
    path = make_store(tmp_path, fmt)
    got = run_scan(path, "--table", "time_y_x", "--where", "y between 15 45", "--where", f"time > {ts(6)}")
    st = got.plan_stats
    assert st["exact"] and st["num_rows"] == len(got.rows)
    assert st["min"]["y"] == 20 and st["max"]["y"] == 40
    assert st["min"]["time"] == (T0 + pd.Timedelta(days=7)).value
    assert st["max"]["time"] == (T0 + pd.Timedelta(days=9)).value
    table = got.table_stats
    assert table["num_rows"] == 10 * 7 * 6
    assert table["min"]["y"] == 0 and table["max"]["y"] == 60
    assert table["min"]["x"] is None  # a NaN coordinate: no exact float bounds


@pytest.mark.parametrize("filt,count", [("x = 0", 2), ("x in 0,5", 2), ("x between 0 0", 2), ("x < 0", 0), ("x >= 0", 6),
                                        ("x <= 0", 2), ("x > 0", 4), ("x != 0", 4), ("x = -0.0", 2)])
def test_negative_zero_equals_zero(tmp_path, filt, count):
    # DataFusion compares -0.0 and 0.0 as equal (its NaN is largest and equal
    # to itself); pruning must agree, block by block
    ds = xr.Dataset({"v": (("x",), np.arange(6.0))}, coords={"x": np.array([-0.0, 0.0, 1, 2, 3, 4])})
    path = tmp_path / "z.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, mode="w", encoding={"v": {"chunks": (1,)}, "x": {"_FillValue": None}})
    got = run_scan(path, "--where", filt)
    assert got.header["answers"] == [2]
    assert len(got.rows) == got.plan_stats["num_rows"] == count
