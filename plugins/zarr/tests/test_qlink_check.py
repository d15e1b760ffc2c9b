# SPDX-License-Identifier: Apache-2.0
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


@pytest.mark.parametrize("fmt", [2, 3])
def test_qlink_check_verifies_the_declared_ordering(tmp_path, fmt):
    # chunked along time only, one block per chunk: each partition declares
    # (time ASC, lat DESC) over several blocks, which qlink-check verifies
    # against the rows (plan.ordering)
    check, plugin = tools()
    ds = xr.Dataset({"t": (("time", "lat"), np.arange(40, dtype="f4").reshape(8, 5))},
                    coords={"time": pd.date_range("2020-01-01", periods=8), "lat": np.arange(5)[::-1] * 10.0})
    path = tmp_path / "o.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding={"t": {"chunks": (2, 5)}})
    p = subprocess.run([check, plugin, "--spec", f"table?path={path}&block_rows=1",
                        "--spec", f"store?path={path}&block_rows=1"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "0 violation(s)" in p.stdout


@pytest.mark.parametrize("isolate", [True, False])
def test_a_corrupt_chunk_is_the_plugins_error_not_a_violation(tmp_path, isolate):
    # The stream fails with EBADMSG and get_last_error's message, as the ABI
    # asks: one PLUGIN ERROR line (the scan of the last column meets the same
    # chunk: not repeated), strerror's text rather than the number, and no
    # violation. It used to be two "VIOLATION stream.get_next ... failed
    # with 74" lines. Exit 1: the checks that needed those rows did not run.
    check, plugin = tools()
    ds = xr.Dataset({"a": (("x", "y"), np.arange(24, dtype="f8").reshape(4, 6))},
                    coords={"x": [1, 2, 3, 4], "y": np.arange(6) * 0.5})
    path = tmp_path / "bad.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, mode="w", encoding={"a": {"chunks": (2, 3)}})
    (path / "a" / "c" / "0" / "0").write_bytes(b"not a zstd frame")
    args = [check, plugin, "--spec", f"table?path={path}", "--spec", f"store?path={path}"]
    p = subprocess.run(args + ([] if isolate else ["--no-isolate"]), capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout == (
        f"PLUGIN ERROR scan of every column, partition 0: get_next failed (Bad message): zarr store {path}: "
        f"array 'a' chunk 'a/c/0/0': zstd: not a zstd frame\n"
        f"qlink-check: {plugin}: 0 violation(s), 1 plugin error(s) (the checks that needed the failed rows were "
        f"skipped)\n")
