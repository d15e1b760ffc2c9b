# SPDX-License-Identifier: Apache-2.0
"""Sharded Zarr v3 arrays written by xarray + zarr-python, read in part: a
query needing one inner chunk fetches the shard index and that chunk only
(bytes_read exact, from the shard's own index), adjacent inner chunks in
one range, a shard needed whole in one read; every result equals the unfiltered scan filtered afterwards,
which test_tables.py compares with to_dataframe()."""
import struct
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import run_scan
from test_filters import check_filtered_scan
from test_tables import check_table


def sharded_store(path, compressors="auto"):
    """t2m(time=16, lat=16, lon=32) float32 in shards of 8 x 16 x 32 and
    inner chunks of 2 x 4 x 8 (4 x 4 x 4 = 64 inner chunks per shard);
    index at the end with crc32c (zarr-python's default)."""
    rng = np.random.default_rng(5)
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), (250 + 30 * rng.random((16, 16, 32))).astype("f4"), {"units": "K"})},
        coords={"time": pd.date_range("2024-01-01", periods=16, freq="h"),
                "lat": np.linspace(80, -75, 16), "lon": np.arange(32) * 5.0},
    )
    enc = {"t2m": {"chunks": (2, 4, 8), "shards": (8, 16, 32)}}
    if compressors != "auto":
        enc["t2m"]["compressors"] = compressors
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, mode="w", encoding=enc)
    return path


def shard_index(path, shard_key, n_inner=64):
    """(offset, nbytes) per inner chunk, from the index at the shard's end."""
    data = (path / "t2m" / "c" / shard_key).read_bytes()
    raw = data[-(16 * n_inner + 4):-4]
    return [struct.unpack_from("<QQ", raw, 16 * k) for k in range(n_inner)], len(data)


INDEX = 64 * 16 + 4


@pytest.mark.parametrize("compressors", ["auto", None])
def test_one_inner_chunk_reads_index_and_chunk(tmp_path, compressors):
    path = sharded_store(tmp_path / "sh.zarr", compressors)
    index, shard_bytes = shard_index(path, "1/0/0")
    check_table(path)
    # time 10 (shard 1, inner row 1), lat index 5 (inner 1), lon 60 (index 12: inner 1) -> inner chunk (1, 1, 1)
    lat5 = float(np.linspace(80, -75, 16)[5])
    scan, want = check_filtered_scan(path, "time_lat_lon", [
        "time = ts:%d" % pd.Timestamp("2024-01-01T10:00").value, f"lat = {lat5!r}", "lon = 60.0"])
    assert len(want) == 1
    k = 1 * 16 + 1 * 4 + 1
    assert scan.metrics["bytes_read"] == INDEX + index[k][1]
    assert scan.metrics["chunks_read"] == 1
    # before partial reads the whole shard was read
    assert shard_bytes > 10 * scan.metrics["bytes_read"]


def test_several_inner_chunks_and_whole_shards(tmp_path):
    path = sharded_store(tmp_path / "sh.zarr")
    index, shard_bytes = shard_index(path, "0/0/0")
    # time 0..1 at lat index 0..3: the 4 lon inner chunks of inner row (0, 0) (zarr-python stores
    # inner chunks in no particular order: those that lie back to back are read as one range)
    scan, _ = check_filtered_scan(path, "time_lat_lon", [
        "time between ts:%d ts:%d" % (pd.Timestamp("2024-01-01").value, pd.Timestamp("2024-01-01T01:00").value),
        "lat >= %r" % float(np.linspace(80, -75, 16)[3])])
    assert scan.metrics["chunks_read"] == 4
    assert scan.metrics["bytes_read"] == INDEX + sum(index[k][1] for k in range(4))
    # the unfiltered scan reads each shard whole, its index included
    full = run_scan(path, "--columns", "t2m")
    sizes = [shard_index(path, f"{i}/0/0")[1] for i in (0, 1)]
    assert full.metrics["bytes_read"] == sum(sizes)
    assert full.metrics["chunks_read"] == 128
