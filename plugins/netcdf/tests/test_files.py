# SPDX-License-Identifier: Apache-2.0
"""Several files along a record dimension, groups, and clean errors for
missing, corrupt and unsupported input."""
import os
import warnings

import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import assert_same_rows, expected_rows, run_scan, scan_error


def era_like(nt=12, t0="2021-01-01"):
    rng = np.random.default_rng(5)
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), rng.normal(size=(nt, 4, 5)).astype("f4")),
         "orog": (("lat", "lon"), rng.normal(size=(4, 5)))},
        coords={"time": pd.date_range(t0, periods=nt, freq="6h"), "lat": [60.0, 50.0, 40.0, 30.0],
                "lon": [0.0, 10.0, 20.0, 30.0, 40.0]},
    )


def split(ds, folder, fmt, pieces=(0, 5, 8, 12), **kw):
    os.makedirs(folder, exist_ok=True)
    for i in range(len(pieces) - 1):
        part = ds.isel(time=slice(pieces[i], pieces[i + 1]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            part.to_netcdf(os.path.join(folder, f"part_{i}.nc"), format=fmt, unlimited_dims=["time"], **kw)


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF4"])
def test_glob_concatenates_along_the_record_dimension(tmp_path, fmt):
    ds = era_like()
    split(ds, tmp_path / "d", fmt)
    pattern = str(tmp_path / "d" / "*.nc")
    for table in ("time_lat_lon", "lat_lon"):
        scan = run_scan(pattern, "--table", table)
        assert_same_rows(scan.rows, expected_rows(pattern, scan, open_kw={"concat_dim": "time"}), 3 if table == "time_lat_lon" else 2)
    scan = run_scan(pattern)
    assert len(scan.rows) == 12 * 20
    # a folder serves its .nc files the same way
    folder = run_scan(tmp_path / "d")
    assert sorted(map(str, folder.rows)) == sorted(map(str, scan.rows))
    # a filter on time prunes the blocks of the other files
    t = pd.Timestamp("2021-01-03T00:00").value
    got = run_scan(pattern, "--where", f"time >= ts:{t}")
    assert len(got.rows) == 4 * 20 and got.metrics["blocks_pruned"] > 0


def test_files_that_disagree_are_refused(tmp_path):
    ds = era_like()
    split(ds, tmp_path / "d", "NETCDF4", pieces=(0, 6))
    other = era_like(6, "2021-01-03").isel(lat=slice(0, 3))
    other.to_netcdf(tmp_path / "d" / "part_9.nc", unlimited_dims=["time"])
    msg = scan_error(str(tmp_path / "d" / "*.nc"))
    assert "variable" in msg and "part_9.nc" in msg and "record dimension 'time'" in msg
    extra = era_like(6, "2021-01-03").assign(extra=lambda d: d.t2m * 2)
    os.remove(tmp_path / "d" / "part_9.nc")
    extra.to_netcdf(tmp_path / "d" / "part_9.nc", unlimited_dims=["time"])
    msg = scan_error(str(tmp_path / "d" / "*.nc"))
    assert "has variable 'extra'" in msg and "part_9.nc" in msg


def test_several_files_need_a_record_dimension(tmp_path):
    ds = era_like()
    os.makedirs(tmp_path / "d")
    ds.isel(time=slice(0, 6)).to_netcdf(tmp_path / "d" / "a.nc")
    ds.isel(time=slice(6, 12)).to_netcdf(tmp_path / "d" / "b.nc")
    # (the option concat_dim=time serves them: src/plugin_test.c)
    assert "no unlimited dimension" in scan_error(str(tmp_path / "d" / "*.nc"))


def test_groups_rule(tmp_path):
    path = tmp_path / "groups.nc"
    era_like().to_netcdf(path, group="forecast")
    era_like(4).to_netcdf(path, group="analysis", mode="a")
    # the root group serves its own variables only: here none; its error
    # names the groups (group=/forecast serves one: src/plugin_test.c)
    msg = scan_error(path)
    assert "has no variables" in msg and "forecast" in msg and "analysis" in msg and "group=" in msg


def test_missing_file(tmp_path):
    msg = scan_error(tmp_path / "nope.nc")
    assert "nope.nc" in msg
    assert "no file matches" in scan_error(str(tmp_path / "*.nc"))


@pytest.mark.parametrize("fmt", ["NETCDF3_CLASSIC", "NETCDF4"])
def test_truncated_and_corrupt_files(tmp_path, fmt):
    path = tmp_path / "full.nc"
    era_like().to_netcdf(path, format=fmt)
    data = path.read_bytes()
    for cut in (16, len(data) // 2, len(data) - 100):
        bad = tmp_path / f"cut_{cut}.nc"
        bad.write_bytes(data[:cut])
        p = run_scan(bad, check=False)
        # a clean error naming the file, or (a cut past every variable's
        # data in a classic file) the rows that are there
        assert p.returncode in (0, 1), p.stderr
        if p.returncode == 1:
            assert f"cut_{cut}.nc" in p.stderr
    junk = tmp_path / "junk.nc"
    junk.write_bytes(b"not a netcdf file at all" * 10)
    msg = scan_error(junk)
    assert "junk.nc" in msg and "cannot open" in msg


def test_compound_variable_is_refused_by_name(tmp_path):
    path = tmp_path / "compound.nc"
    with netCDF4.Dataset(path, "w") as f:
        f.createDimension("n", 2)
        t = f.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        f.createVariable("pairs", t, ("n",))
        f.createVariable("plain", "f8", ("n",))[:] = [1.0, 2.0]
    msg = scan_error(path)
    assert "variable 'pairs'" in msg and "compound.nc" in msg and "not served" in msg
