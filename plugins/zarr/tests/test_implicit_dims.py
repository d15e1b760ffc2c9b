# SPDX-License-Identifier: Apache-2.0
"""Dimensions without a coordinate array (a CF observation store's `obs`):
their column holds the positions 0..n-1, generated on the fly and never
held per position. Contents equal xarray's Dataset.to_dataframe(); every
filter on a position column equals the unfiltered scan filtered
afterwards, with exact statistics and pruned blocks; opening a long one
costs no memory per position."""
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import assert_same_rows, expected_rows, run_scan, scan_binary
from test_filters import check_filtered_scan, holds, norm
from test_qlink_check import tools

N_OBS = 37


def write(ds, path, fmt, encoding):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=encoding)
    return path


def obs_store(tmp_path, fmt):
    """1-D: obs (37, no coordinate) with a float variable holding NaNs, an
    int variable and a non-dimension coordinate lat(obs), chunks of 5."""
    rng = np.random.default_rng(11)
    a = rng.normal(size=N_OBS).astype("f4")
    a[[3, 20]] = np.nan
    ds = xr.Dataset(
        {"a": (("obs",), a), "b": (("obs",), (np.arange(N_OBS) * 3 - 40).astype("i4"))},
        coords={"lat": (("obs",), np.linspace(-60, 60, N_OBS))},
    )
    enc = {"a": {"chunks": (5,)}, "b": {"chunks": (5,)}, "lat": {"chunks": (5,)}}
    return write(ds, tmp_path / f"obs{fmt}.zarr", fmt, enc)


def mixed_store(tmp_path, fmt):
    """N-D: v(time, station) with a time coordinate and no station
    coordinate; w(station, level) with neither; chunks that do not divide
    the dimensions."""
    rng = np.random.default_rng(5)
    nt, ns, nl = 6, 7, 5  # station repeats 5 times per row of station_level (runs)
    ds = xr.Dataset(
        {
            "v": (("time", "station"), rng.normal(size=(nt, ns))),
            "w": (("station", "level"), rng.integers(-50, 50, size=(ns, nl)).astype("i2")),
        },
        coords={"time": pd.date_range("2001-03-01", periods=nt, freq="6h")},
    )
    enc = {"v": {"chunks": (4, 3)}, "w": {"chunks": (2, 2)}}
    return write(ds, tmp_path / f"mixed{fmt}.zarr", fmt, enc)


@pytest.mark.parametrize("fmt", [2, 3])
def test_contents_equal_to_dataframe(tmp_path, fmt):
    path = obs_store(tmp_path, fmt)
    got = run_scan(path)
    assert got.columns == ["obs", "lat", "a", "b"]
    assert got.formats["obs"] == "l"
    assert got.column("obs") == list(range(N_OBS))  # C order, generated
    assert_same_rows(got.rows, expected_rows(path, got), 1)
    assert got.ordering == [[0, 0]]  # ascending positions
    st = got.table_stats
    assert st["exact"] and st["num_rows"] == N_OBS
    assert st["min"]["obs"] == 0 and st["max"]["obs"] == N_OBS - 1


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("table,dims", [("time_station", 2), ("station_level", 2)])
def test_mixed_dims_equal_to_dataframe(tmp_path, fmt, table, dims):
    path = mixed_store(tmp_path, fmt)
    got = run_scan(path, "--table", table)
    assert_same_rows(got.rows, expected_rows(path, got), dims)
    assert got.formats["station"] == "l"
    want = xr.open_zarr(path)[["v" if table == "time_station" else "w"]].to_dataframe()
    assert len(got.rows) == len(want)
    # one block grid over both dimensions; each block in C order
    st = got.table_stats
    assert st["min"]["station"] == 0 and st["max"]["station"] == 6


# Every filter form on the position column: comparisons either way,
# negative, float and out-of-range literals, empty results, [NOT] BETWEEN,
# [NOT] IN, NOT, OR.
OBS_FILTERS = [
    "obs = 0",
    "obs = 36",
    "obs = 37",
    "obs = -1",
    "obs != 12",
    "obs < 2.5",
    "obs <= 2.5",
    "obs > 2.5",
    "obs >= 35.0",
    "obs < -3",
    "obs >= -3",
    "obs > 1e18",
    "obs <= 1e18",
    "obs < 0",
    "obs > 36",
    "obs = 4.0",
    "obs = 4.5",
    "obs between 4 11",
    "obs between 4.5 11.5",
    "obs between -10 2",
    "obs between 30 99",
    "obs between 11 4",
    "obs notbetween 4 31",
    "obs notbetween -5 100",
    "obs in 0,36,17,17,-4,99",
    "obs in 2.0,2.5,40",
    "obs in -1,37",
    "obs notin 0,5,36",
    "obs notin -1,100",
    "not obs < 10",
    "not obs between 3 33",
    "not obs in 1,2,3",
    "obs < 3 or obs > 33",
    "obs = 9 or obs between 20 22",
    "obs < nan",
    "obs = nan",
    "obs != nan",
]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("filt", OBS_FILTERS)
def test_filter_equals_filtered_scan(tmp_path, fmt, filt):
    path = obs_store(tmp_path, fmt)
    full = run_scan(path)
    got = run_scan(path, "--where", filt)
    assert got.header["answers"] == [2]
    want = [r for r in full.rows if holds(filt, r, full.columns)]
    assert norm(got.rows) == norm(want)
    assert [r[0] for r in got.rows] == sorted(r[0] for r in want)  # ascending
    st = got.plan_stats
    assert st["exact"] and st["num_rows"] == len(want)
    if want:
        assert st["min"]["obs"] == want[0][0] and st["max"]["obs"] == want[-1][0]
    else:
        assert st["min"]["obs"] is None and st["max"]["obs"] is None
    # blocks of 5 positions: exactly those holding a selected one are read
    blocks = {r[0] // 5 for r in want}
    assert got.metrics["blocks_read"] == len(blocks)
    assert got.metrics["blocks_pruned"] == 8 - len(blocks)


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize(
    "table,filters",
    [
        ("time_station", ["station = 3"]),
        ("time_station", ["station in 0,6,9", "time > ts:983426400000000000"]),
        ("time_station", ["station notbetween 2 4"]),
        ("time_station", ["station < 1.5", "station > -2"]),
        ("station_level", ["level = 1", "station >= 5"]),
        ("station_level", ["level != 1", "station notin 1,2"]),
        ("station_level", ["level > 7"]),
        ("station_level", ["not station < 4 or station = 0", "level between 0.5 2"]),
    ],
)
def test_mixed_filters_equal_filtered_scan(tmp_path, fmt, table, filters):
    path = mixed_store(tmp_path, fmt)
    got, want = check_filtered_scan(path, table, filters)
    for c in ("station", "level"):
        if c in got.columns and want:
            i = got.columns.index(c)
            assert got.plan_stats["min"][c] == min(r[i] for r in want)
            assert got.plan_stats["max"][c] == max(r[i] for r in want)


@pytest.mark.parametrize("fmt", [2, 3])
def test_qlink_check_passes(tmp_path, fmt):
    # the conformance kit's pushdown, statistics and ordering checks over
    # generated position columns, one block per chunk
    check, plugin = tools()
    specs = []
    for path in (obs_store(tmp_path, fmt), mixed_store(tmp_path, fmt)):
        specs += ["--spec", f"table?path={path}&block_rows=1", "--spec", f"store?path={path}&block_rows=1"]
    p = subprocess.run([check, plugin, *specs], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 violation(s)" in p.stdout


def long_store(path, n):
    """Metadata only (v2): v(obs) int8 in chunks of 2^20, never written
    (every chunk reads as the fill value), obs without coordinate."""
    os.makedirs(path / "v")
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / ".zattrs").write_text("{}")
    (path / "v" / ".zarray").write_text(
        '{"zarr_format": 2, "shape": [%d], "chunks": [1048576], "dtype": "|i1", "fill_value": 0, "order": "C",'
        ' "compressor": null, "filters": null}' % n
    )
    (path / "v" / ".zattrs").write_text('{"_ARRAY_DIMENSIONS": ["obs"]}')
    return path


def child_max_rss_kb(args):
    """Peak RSS (KiB) of one zarr-scan run, measured in a fresh process so
    earlier children do not count."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr)\n"
        "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "print(p.stdout)\n"
    )
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600)
    first, rest = p.stdout.split("\n", 1)
    rc, rss = (int(x) for x in first.split())
    assert rc == 0, p.stderr
    return rss, rest


def test_long_dimension_opens_without_memory_per_position(tmp_path):
    # 2e7 positions held 40 bytes each before (~800 MB); now nothing
    n = 20_000_000
    path = long_store(tmp_path / "long.zarr", n)
    rss, out = child_max_rss_kb([scan_binary(), str(path), "--where", "obs >= 19999998", "--block-rows", "1"])
    assert rss < 200 * 1024, f"zarr-scan peaked at {rss} KiB"
    rows = [line for line in out.splitlines() if line.startswith("[")]
    assert rows == ["[19999998, null]", "[19999999, null]"]
    assert '"blocks": 20, "blocks_pruned": 19' in out
