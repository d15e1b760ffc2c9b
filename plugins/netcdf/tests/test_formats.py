# SPDX-License-Identifier: Apache-2.0
"""Files xarray writes in every netCDF format, read through qlink_netcdf and
compared exactly with xr.open_dataset(...).to_dataframe()."""
import warnings

import netCDF4
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import assert_table_matches, open_nc, run_scan

FORMATS = ["NETCDF3_CLASSIC", "NETCDF3_64BIT", "NETCDF4_CLASSIC", "NETCDF4"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


def write(ds, path, fmt, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_netcdf(path, format=fmt, **kw)
    return path


def typed_dataset(fmt):
    """Every dtype the format takes from xarray (netCDF-3: no 64-bit or
    unsigned integers but what xarray coerces)."""
    rng = np.random.default_rng(7)
    nt, nx = 6, 5
    data = {}
    for name in INTS:
        info = np.iinfo(name)
        values = rng.integers(max(info.min, -100), min(info.max, 100), size=(nt, nx)).astype(name)
        values[0, 0] = info.max if fmt == "NETCDF4" else values[0, 0]
        data["v_" + name] = (("time", "x"), values)
    data["v_f4"] = (("time", "x"), rng.normal(size=(nt, nx)).astype("f4"))
    data["v_f8"] = (("time", "x"), rng.normal(size=(nt, nx)))
    data["v_f8"][1][2, 3] = np.nan
    data["v_bool"] = (("time", "x"), rng.integers(0, 2, size=(nt, nx)).astype(bool))
    data["v_dt"] = (("x",), pd.date_range("1999-12-31T06:00", periods=nx, freq="7h").values)
    data["v_td"] = (("x",), (np.arange(nx) * 3600 * 10**9 + 5).astype("timedelta64[ns]"))
    data["v_str"] = (("x",), np.array(["a", "bé", "", "dddd", "e"]))
    return xr.Dataset(
        data,
        coords={"time": pd.date_range("2001-03-01", periods=nt, freq="6h"), "x": np.arange(nx) * 0.5 - 1},
    )


def writable(ds, path, fmt):
    """The dataset less the variables the format refuses from xarray."""
    keep = {}
    for name in ds.data_vars:
        try:
            write(ds[[name]], path, fmt)
            keep[name] = ds[name]
        except (ValueError, TypeError, RuntimeError, OverflowError):
            pass
    return xr.Dataset(keep, coords=ds.coords)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_dtype(nc_dir, fmt):
    path = nc_dir / f"typed_{fmt}.nc"
    ds = writable(typed_dataset(fmt), path, fmt)
    if fmt == "NETCDF4":
        assert {"v_uint64", "v_int64", "v_str", "v_td", "v_bool"} <= set(ds.data_vars)
    write(ds, path, fmt)
    for table in ("time_x", "x"):
        assert_table_matches(path, table)


def test_cdf5_every_integer(nc_dir):
    """CDF5 (64-bit data) holds every integer type: written with netCDF4."""
    path = nc_dir / "cdf5.nc"
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_DATA") as f:
        f.createDimension("n", 4)
        for name in INTS:
            v = f.createVariable(name, name, ("n",))
            info = np.iinfo(name)
            v[:] = np.array([info.min, 0, 1, info.max], dtype=name)
    scan = assert_table_matches(path)
    assert scan.column("uint64")[3] == 2**64 - 1
    assert scan.column("int64")[0] == -(2**63)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fill_values_and_packing(nc_dir, fmt):
    nt, nx = 8, 3
    raw = np.arange(nt * nx, dtype="f8").reshape(nt, nx) / 7.0
    raw[2, 1] = np.nan
    ds = xr.Dataset(
        {
            "packed": (("time", "x"), raw),
            "filled_int": (("time", "x"), np.arange(nt * nx, dtype="i2").reshape(nt, nx)),
            "nofill": (("time", "x"), raw * 2),
            "missing": (("time", "x"), np.where(np.isnan(raw), -1.0, raw)),
        },
        coords={"time": np.arange(nt), "x": [1, 2, 3]},
    )
    ds["missing"].attrs["missing_value"] = -1.0
    enc = {
        "packed": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 5.0, "_FillValue": -32767},
        "filled_int": {"_FillValue": 7},
        "nofill": {"_FillValue": None},
    }
    path = write(ds, nc_dir / f"fill_{fmt}.nc", fmt, encoding=enc)
    scan = assert_table_matches(path)
    assert scan.column("packed").count(None) == 1 and scan.column("filled_int").count(None) == 1
    assert sum(1 for v in scan.column("nofill") if v != v) == 1 and None not in scan.column("nofill")
    assert scan.column("missing").count(None) == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_unlimited_dimension(nc_dir, fmt):
    ds = xr.Dataset({"v": (("time", "y"), np.arange(40 * 3, dtype="f4").reshape(40, 3))},
                    coords={"time": pd.date_range("2020-01-01", periods=40, freq="h"), "y": [5, 6, 7]})
    path = write(ds, nc_dir / f"unlim_{fmt}.nc", fmt, unlimited_dims=["time"])
    assert_table_matches(path)


@pytest.mark.parametrize("calendar", ["noleap", "360_day", "julian"])
def test_cftime_calendars_stay_numeric(nc_dir, calendar):
    """The shared model's rule: times of non-standard calendars stay the
    stored numbers, with units and calendar in the column metadata."""
    times = xr.date_range("2000-02-27", periods=5, freq="D", calendar=calendar, use_cftime=True)
    ds = xr.Dataset({"v": (("time",), np.arange(5.0))}, coords={"time": times})
    path = write(ds, nc_dir / f"cal_{calendar}.nc", "NETCDF4", encoding={"time": {"units": "days since 2000-01-01"}})
    scan = run_scan(path)
    assert scan.formats["time"] == "l"
    assert scan.metadata["time"]["calendar"] == calendar
    assert scan.metadata["time"]["units"] == "days since 2000-01-01"
    stored = open_nc(path, decode_times=False)["time"].values.tolist()
    assert scan.column("time") == stored
    assert scan.column("v") == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_chunked_zlib_blocks_and_pruning(nc_dir):
    rng = np.random.default_rng(11)
    nt, ny, nx = 24, 10, 12
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), rng.normal(size=(nt, ny, nx)).astype("f4"))},
        coords={"time": pd.date_range("2020-01-01", periods=nt, freq="h"), "lat": np.linspace(80, -80, ny),
                "lon": np.arange(nx) * 30.0},
    )
    enc = {"t2m": {"zlib": True, "complevel": 4, "chunksizes": (6, 5, 12)}}
    path = write(ds, nc_dir / "chunked.nc", "NETCDF4", encoding=enc)
    scan = assert_table_matches(path)
    assert scan.partition_rows and len(scan.partition_rows) >= 2
    assert scan.metrics["blocks"] == 8  # 4 x 2 x 1 chunks
    t0 = pd.Timestamp("2020-01-01T18:00").value
    got = run_scan(path, "--where", f"time >= ts:{t0}", "--where", "lat > 0")
    assert got.metrics["blocks_pruned"] == 7  # one block (time 18-23 x lat > 0) of 8 read
    want = ds.t2m.where((ds.time >= np.datetime64("2020-01-01T18:00")) & (ds.lat > 0), drop=True)
    assert sorted(got.column("t2m")) == sorted(float(v) for v in want.values.ravel())


def test_chunk_statistics_are_exact(nc_dir):
    ds = xr.Dataset({"v": (("t",), np.arange(10.0))}, coords={"t": np.arange(10) * 2})
    path = write(ds, nc_dir / "stats.nc", "NETCDF3_CLASSIC")
    scan = run_scan(path)
    assert scan.table_stats["exact"] and scan.table_stats["num_rows"] == 10
    assert scan.table_stats["min"]["t"] == 0 and scan.table_stats["max"]["t"] == 18


@pytest.mark.parametrize("fmt", ["NETCDF3_64BIT", "NETCDF4"])
def test_scalars_and_attributes(nc_dir, fmt):
    ds = xr.Dataset({"v": (("x",), np.arange(3.0)), "elev": ((), 812.5), "crs": ((), np.int32(0))},
                    coords={"x": [1, 2, 3]})
    ds["v"].attrs.update(units="K", long_name="temperature", valid_range=np.array([0.5, 300.0]))
    path = write(ds, nc_dir / f"scalars_{fmt}.nc", fmt)
    scan = run_scan(path, "--table", "scalars")
    assert scan.columns == ["crs", "elev"] and scan.rows == [[0, 812.5]]
    main = run_scan(path)
    assert main.metadata["v"]["units"] == "K"
    assert main.metadata["v"]["valid_range"] == "[0.5,3e2]"  # the model's shortest round-trip JSON
