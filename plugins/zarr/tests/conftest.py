# SPDX-License-Identifier: Apache-2.0
"""Helpers for the qlink_zarr tests: run the scan driver, build xarray's
expectations, compare exactly."""
import glob
import json
import os
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def scan_binary():
    env = os.environ.get("QL_ZARR_SCAN")
    if env:
        return env
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "plugins", "zarr-scan")), key=os.path.getmtime)
    if not found:
        pytest.skip("zarr-scan not built (cmake --build build/<dir> --target zarr-scan)")
    return found[-1]


class Scan:
    def __init__(self, lines):
        self.header = lines[0]
        if "tables" in self.header:
            self.tables = self.header["tables"]
            return
        self.columns = self.header["columns"]
        self.formats = dict(zip(self.columns, self.header["formats"]))
        self.metadata = self.header["metadata"]
        self.ordering = self.header.get("ordering")
        self.rows = []
        self.plan_stats = self.table_stats = self.metrics = self.partition_rows = None
        for item in lines[1:]:
            if isinstance(item, list):
                self.rows.append(item)
            elif "plan_stats" in item:
                self.plan_stats = item["plan_stats"]
            elif "table_stats" in item:
                self.table_stats = item["table_stats"]
            elif "partition_rows" in item:
                self.partition_rows = item["partition_rows"]
            elif "metrics" in item:
                self.metrics = item["metrics"]

    def column(self, name):
        i = self.columns.index(name)
        return [r[i] for r in self.rows]


def run_scan(path, *args, check=True):
    """Run zarr-scan. Blocks are the chunk grid itself (--block-rows 1)
    unless the caller passes --block-rows: the small stores of the tests
    then span several blocks and partitions."""
    args = [str(a) for a in args]
    if "--block-rows" not in args:
        args += ["--block-rows", "1"]
    cmd = [scan_binary(), str(path), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    if not check:
        return p
    return Scan([json.loads(line) for line in p.stdout.splitlines() if line.strip()])


def open_xr(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path, **kw).load()


def _nan_is_fill(var):
    """1 when a float variable's _FillValue or missing_value is NaN: the
    plugin then masks its NaN cells (NULL) where xarray leaves NaN."""
    if var is None or var.dtype.kind != "f":
        return False
    for key in ("_FillValue", "missing_value"):
        for src in (var.attrs, var.encoding):
            values = np.atleast_1d(np.asarray(src.get(key, []), dtype=object))
            for f in values:
                try:
                    if np.isnan(float(f)):
                        return True
                except (TypeError, ValueError):
                    pass
    return False


def _cell_expected(value, raw, fmt, nan_is_fill=False):
    """xarray's decoded value as the driver prints it (None = NULL)."""
    if fmt.startswith("ts") or fmt.startswith("tD"):
        if pd.isna(value):
            return None
        per = {"n": 1, "u": 1000, "m": 1000000, "s": 1000000000}[fmt[2]]
        obj = pd.Timestamp(value) if fmt.startswith("ts") else pd.Timedelta(value)
        ns = obj.as_unit("ns").value
        assert ns % per == 0
        return ns // per
    if fmt in ("f", "g"):
        v = float(value)
        if np.isnan(v):
            # a stored NaN stays NaN unless the fill value is NaN; a NaN
            # xarray made from a fill value is NULL
            if raw is None or np.isnan(float(raw)):
                return None if nan_is_fill else "NaN"
            return None
        return v
    if fmt == "b":
        return bool(value)
    if fmt == "z":
        return bytes(value).rstrip(b"\0").hex()
    if fmt == "u":
        return str(value)
    return int(value)


def expected_rows(path, scan, columns=None):
    """Rows of xarray's Dataset.to_dataframe() for the scanned columns, as
    the driver prints them, in C order of the dimensions."""
    return expected_rows_of(open_xr(path), open_xr(path, mask_and_scale=False, decode_times=False), scan, columns)


def expected_rows_of(ds, raw, scan, columns=None):
    """expected_rows for Dataset `ds` (decoded) and `raw` (the same opened
    with mask_and_scale=False, decode_times=False), wherever they came from."""
    cols = columns or scan.columns
    variables = [c for c in cols if c not in ds.dims]
    sub = ds[variables] if variables else ds
    df = sub.to_dataframe().reset_index()
    rawdf = raw[variables].to_dataframe().reset_index() if variables else None
    nan_fill = {c: _nan_is_fill(raw[c]) for c in variables if c in raw}
    out = []
    for i in range(len(df)):
        row = []
        for c in cols:
            fmt = scan.formats[c]
            if c in ds.dims and c not in ds.coords:
                row.append(int(df[c].iloc[i]))
                continue
            value = df[c].iloc[i]
            r = rawdf[c].iloc[i] if rawdf is not None and c in rawdf else None
            row.append(_cell_expected(value, r, fmt, nan_fill.get(c, False)))
        out.append(row)
    return out


def _norm(v):
    if isinstance(v, float) and np.isnan(v):
        return "NaN"
    return v


def assert_same_rows(got, want, dims_count):
    """Rows equal as multisets keyed by the dimension columns (partitions
    come in chunk-block order, rows in C order inside each)."""
    def key(r):
        return tuple((0, "") if v is None else (1, str(v)) if isinstance(v, str) else (1, v) for v in r[:dims_count])

    g = sorted(([_norm(v) for v in r] for r in got), key=key)
    w = sorted(([_norm(v) for v in r] for r in want), key=key)
    assert len(g) == len(w), f"{len(g)} rows, expected {len(w)}"
    for a, b in zip(g, w):
        assert a == b, f"row {a} != expected {b}"
