# SPDX-License-Identifier: Apache-2.0
"""Helpers for the qlink_netcdf tests: run the scan driver (netcdf-scan:
qlink_zarr's zarr_scan.c linked with this plugin), build xarray's
expectations from xr.open_dataset, compare exactly. The row and cell
helpers are qlink_zarr's (plugins/zarr/tests/conftest.py), loaded by path:
the same table model, the same rules."""
import glob
import importlib.util
import json
import os
import subprocess
import warnings

import pytest
import xarray as xr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

_spec = importlib.util.spec_from_file_location("zarr_test_helpers", os.path.join(ROOT, "plugins", "zarr", "tests", "conftest.py"))
zh = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zh)
Scan = zh.Scan
assert_same_rows = zh.assert_same_rows


def scan_binary():
    env = os.environ.get("QL_NETCDF_SCAN")
    if env:
        return env
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "plugins", "netcdf-scan")), key=os.path.getmtime)
    if not found:
        pytest.skip("netcdf-scan not built (cmake --build build/<dir> --target netcdf-scan)")
    return found[-1]


def run_scan(path, *args, check=True, block_rows=True):
    """Run netcdf-scan; blocks are the chunk grid (--block-rows 1) unless
    the caller passes --block-rows."""
    args = [str(a) for a in args]
    if block_rows and "--block-rows" not in args:
        args += ["--block-rows", "1"]
    cmd = [scan_binary(), str(path), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if not check:
        return p
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    return Scan([json.loads(line) for line in p.stdout.splitlines() if line.strip()])


def scan_error(path, *args):
    """The driver's message for a refused spec (it must fail cleanly)."""
    p = run_scan(path, *args, check=False)
    assert p.returncode == 1, f"expected a clean failure, got {p.returncode}: {p.stderr}"
    return p.stderr


def open_nc(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if "*" in str(path):
            kw.setdefault("combine", "nested")
            return xr.open_mfdataset(str(path), data_vars="minimal", coords="minimal", compat="override",
                                     join="override", **kw).load()
        return xr.open_dataset(path, **kw).load()


def expected_rows(path, scan, columns=None, open_kw=None):
    """Rows of xarray's to_dataframe() for the scanned columns, as the
    driver prints them."""
    open_kw = open_kw or {}
    ds = open_nc(path, **open_kw)
    raw = open_nc(path, mask_and_scale=False, decode_times=False, **open_kw)
    cols = columns or scan.columns
    variables = [c for c in cols if c not in ds.dims]
    df = (ds[variables] if variables else ds).to_dataframe().reset_index()
    rawdf = raw[variables].to_dataframe().reset_index() if variables else None
    nan_fill = {c: zh._nan_is_fill(raw[c]) for c in variables if c in raw}
    out = []
    for i in range(len(df)):
        row = []
        for c in cols:
            if c in ds.dims and c not in ds.coords:
                row.append(int(df[c].iloc[i]))
                continue
            r = rawdf[c].iloc[i] if rawdf is not None and c in rawdf else None
            row.append(zh._cell_expected(df[c].iloc[i], r, scan.formats[c], nan_fill.get(c, False)))
        out.append(row)
    return out


def assert_table_matches(path, table=None, open_kw=None, *args):
    extra = ["--table", table] if table else []
    scan = run_scan(path, *extra, *args)
    dims = sum(1 for c in scan.columns if c in open_nc(path, **(open_kw or {})).dims)
    assert_same_rows(scan.rows, expected_rows(path, scan, open_kw=open_kw), dims)
    return scan


@pytest.fixture
def nc_dir(tmp_path):
    return tmp_path
