"""qlink-check (the conformance kit) passes on qlink_zarr, over a Zarr v2 and
a v3 store with two tables."""
import os
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import scan_binary


def tools():
    build = os.path.dirname(os.path.dirname(scan_binary()))
    plugin = os.path.join(build, "plugins", "qlink_zarr.so")
    check = os.path.join(build, "tools", "qlink-check")
    if not os.path.exists(check):
        check = os.path.join(os.path.dirname(build), "release", "tools", "qlink-check")
    if not (os.path.exists(plugin) and os.path.exists(check)):
        pytest.skip("qlink-check or qlink_zarr.so not built next to zarr-scan")
    return check, plugin


@pytest.mark.parametrize("fmt", [2, 3])
def test_qlink_check_passes(tmp_path, fmt):
    check, plugin = tools()
    ds = xr.Dataset(
        {"t": (("time", "y"), np.arange(40, dtype="f4").reshape(8, 5)), "h": (("y",), np.arange(5.0))},
        coords={"time": pd.date_range("2020-01-01", periods=8), "y": np.arange(5)},
    )
    path = tmp_path / "c.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding={"t": {"chunks": (3, 2)}})
    p = subprocess.run([check, plugin, "--spec", f"table?path={path}", "--spec", f"store?path={path}"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 violation(s)" in p.stdout
