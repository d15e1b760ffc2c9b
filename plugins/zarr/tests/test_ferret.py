# SPDX-License-Identifier: Apache-2.0
"""The main job's data: Debian ferret-datasets files written as Zarr v2 and
v3 by scripts/convert_ferret.py; every table equals what xarray reads from
the same store (with decode_times=False where xarray's default cannot
decode the file's year-0 climatological axis), NULL exactly where the fill
value was, and no time column ever holds a wrong date."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import ROOT, run_scan, scan_binary

SOURCE = "/usr/share/ferret-vis/data"
NAMES = ["coads_climatology", "levitus_climatology", "monthly_navy_winds", "etopo5"]
CACHE = os.environ.get("QL_FERRET_ZARR", os.path.join(ROOT, "build", "ferret-zarr"))

FORMATS = {"f": "<f4", "g": "<f8", "l": "<i8", "tsn:": "<i8"}


@pytest.fixture(scope="module")
def stores():
    if not os.path.exists(os.path.join(SOURCE, "etopo5.cdf")):
        pytest.skip("Debian's ferret-datasets is not installed")
    script = os.path.join(ROOT, "plugins", "zarr", "scripts", "convert_ferret.py")
    subprocess.run([sys.executable, script, CACHE], check=True, capture_output=True)
    return CACHE


def open_like_a_user(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return xr.open_zarr(path, **kw).load(), True
        except ValueError:
            return xr.open_zarr(path, decode_times=False, **kw).load(), False


def dump(path, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    p = subprocess.run([scan_binary(), str(path), "--dump", str(out_dir)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    return lines[0], lines[1]["plan_stats"], lines[-1]["metrics"]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("name", NAMES)
def test_ferret_table_equals_xarray(stores, tmp_path, name, fmt):
    path = os.path.join(stores, f"{name}.v{fmt}.zarr")
    header, stats, metrics = dump(path, tmp_path)
    ds, decoded_times = open_like_a_user(path)
    raw, _ = open_like_a_user(path, mask_and_scale=False, decode_times=False)
    columns = header["columns"]
    formats = dict(zip(columns, header["formats"]))
    dims = [c for c in columns if c in ds.dims]
    shape = tuple(ds.sizes[d] for d in dims)
    n = int(np.prod(shape))
    assert stats["num_rows"] == n and metrics["rows"] == n

    def column(i):
        fmt_ = header["formats"][i]
        data = np.fromfile(tmp_path / f"{i}.bin", dtype=FORMATS[fmt_])
        valid = np.fromfile(tmp_path / f"{i}.valid", dtype=np.uint8).astype(bool)
        return data, valid

    # place every row by its coordinates: each tuple exactly once
    index = []
    for k, d in enumerate(dims):
        values, valid = column(k)
        assert valid.all()
        coord = ds[d].values
        if formats[d] == "tsn:":
            coord = coord.astype("datetime64[ns]").astype("int64")
        pos = pd.Index(coord).get_indexer(values)
        assert (pos >= 0).all(), f"{d}: values not in the coordinate"
        index.append(pos)
    flat = np.ravel_multi_index(index, shape)
    assert len(np.unique(flat)) == n

    for i, c in enumerate(columns):
        if c in dims:
            continue
        values, valid = column(i)
        got = np.empty(n, dtype=values.dtype)
        got[flat] = values
        ok = np.empty(n, dtype=bool)
        ok[flat] = valid
        want = ds[c].transpose(*dims).values.ravel()
        want_raw = raw[c].transpose(*dims).values.ravel().astype("f8")
        masked = np.isnan(want) & ~np.isnan(want_raw)
        np.testing.assert_array_equal(ok, ~masked, err_msg=f"{c}: NULLs differ from xarray's masked cells")
        np.testing.assert_array_equal(got[ok], want[ok].astype(values.dtype), err_msg=f"{c}: values differ")
        if name in ("coads_climatology", "levitus_climatology"):
            assert masked.any(), f"{c}: expected land (fill value) cells in {name}"


@pytest.mark.parametrize("fmt", [2, 3])
def test_ferret_time_axes(stores, fmt):
    # coads: "hour since 0000-01-01" -> xarray cannot decode; we keep hours
    coads = run_scan(os.path.join(stores, f"coads_climatology.v{fmt}.zarr"), "--columns", "TIME", "--limit", "1")
    assert coads.formats["TIME"] == "g"
    assert coads.metadata["TIME"]["units"] == "hour since 0000-01-01 00:00:00"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError):
            xr.open_zarr(os.path.join(stores, f"coads_climatology.v{fmt}.zarr"))
    # navy winds: "hour since 1980-01-14 14:00:00" -> timestamps, as xarray decodes them
    winds = run_scan(os.path.join(stores, f"monthly_navy_winds.v{fmt}.zarr"), "--columns", "TIME", "--where",
                     "FNOCY = 0", "--where", "FNOCX = 20")
    assert winds.formats["TIME"] == "tsn:"
    got = sorted(winds.column("TIME"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = xr.open_zarr(os.path.join(stores, f"monthly_navy_winds.v{fmt}.zarr")).TIME.values
    assert got == [int(x) for x in want.astype("datetime64[ns]").astype("int64")]
    assert str(want[0]).startswith("1982-01-16T20:00")


def test_ferret_filters_prune(stores):
    path = os.path.join(stores, "etopo5.v3.zarr")
    scan = run_scan(path, "--where", "ETOPO05_Y between 10 20", "--where", "ETOPO05_X < 5")
    assert scan.header["answers"] == [2, 2]
    ys = np.array(scan.column("ETOPO05_Y"))
    xs = np.array(scan.column("ETOPO05_X"))
    assert ys.min() >= 10 and ys.max() <= 20 and xs.max() < 5
    assert "pruned=" in scan.header["display"]
    assert scan.metrics["blocks_pruned"] > 0
    assert scan.metrics["chunks_read"] < 16
