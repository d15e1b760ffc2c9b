# SPDX-License-Identifier: Apache-2.0
"""The xarray Datasets of the conformance suite, and their registration.

A query names a Dataset as ``Query.datasets = {"d": ("air", "ndarray")}``:
placeholder -> (Dataset key, qlink.xarray route). Each Python engine
registers it with ``register(connection, name, key, route)``
(``qlink.xarray.register`` on its connection, ``Context.from_dataset`` on
a qlink.xarray Context; the route forced, so a
Dataset the zarr route cannot serve fails instead of silently taking the
other route). Keys:

- ``air``: a Dataset in memory (numpy): time(6) x lat(4, descending) x
  lon(5) with float64 NaNs, an int32 variable, a float32 variable over
  lat x lon with a NaN, a non-dimension coordinate, a datetime64 variable
  with NaT, strings, and a variable over a dimension without coordinate
  (``level``). Four dimension groups: tables ``NAME.time_lat_lon``,
  ``NAME.lat_lon``, ``NAME.time``, ``NAME.time_level``.
- ``air_zarr``: that Dataset written by xarray to a Zarr store (chunks
  cutting time, lat and level) and opened with ``xr.open_zarr``: the
  zarr route serves it from the store through qlink_zarr.

``netcdf_paths()``: that Dataset written by xarray as netCDF files, for
qlink_netcdf's ``store?path=`` spec (no Python in the route): one
netCDF-4 file (zlib, chunks cutting time, lat and level), the same split
in three netCDF-4 files along an unlimited time (a glob), and one
netCDF-3 64-bit offset file (int64 coerced to int32 by xarray).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import warnings
from pathlib import Path

from engine import plugin_path, qlink_package

_cache: dict = {}


def _xarray():
    qlink_package()
    import qlink.xarray

    return qlink.xarray


def unavailable() -> str | None:
    """Why Dataset queries cannot run in this Python, or None."""
    try:
        import xarray  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as exc:
        return f"xarray and zarr are not installed ({exc.name}; scripts/setup.sh)"
    if not Path(plugin_path("qlink_ndarray")).is_file():
        return f"qlink_ndarray is not built: {plugin_path('qlink_ndarray')}"
    return None


def _air():
    import numpy as np
    import pandas as pd
    import xarray as xr

    air = (np.arange(6 * 4 * 5, dtype=np.float64).reshape(6, 4, 5) * 0.25) + 250.0
    air[2, 1, 3] = air[2, 3, 0] = np.nan
    air[0, 0, 0] = -0.0
    elev = (np.arange(20, dtype=np.float32).reshape(4, 5) - 7.5) / 4
    elev[3, 4] = np.nan
    obs = pd.date_range("2020-01-01 06:00", periods=6, freq="D").values.copy()
    obs[4] = np.datetime64("NaT")
    return xr.Dataset(
        {
            "air": (("time", "lat", "lon"), air, {"units": "K"}),
            "count": (("time", "lat", "lon"), (np.arange(120, dtype=np.int32).reshape(6, 4, 5) * 7) % 23 - 11),
            "elev": (("lat", "lon"), elev),
            "label": (("time",), np.array(["f", "", "dd", "c", "b", "a"])),
            "obs": (("time",), obs),
            "profile": (("time", "level"), np.arange(18, dtype=np.float64).reshape(6, 3) / 8),
        },
        coords={
            "time": pd.date_range("2020-01-01", periods=6, freq="D"),
            "lat": np.array([30.0, 20.0, 10.0, 0.0]),
            "lon": np.arange(5) * 2.5,
            "station": (("lat", "lon"), np.arange(20, dtype=np.int64).reshape(4, 5) * 3),
        },
    )


def _air_zarr():
    import xarray as xr

    folder = Path(tempfile.mkdtemp(prefix="qlink-engines-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "air.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dataset("air").chunk({"time": 2, "lat": 3, "level": 2}).to_zarr(path, mode="w")
        return xr.open_zarr(path)


_FACTORIES = {"air": _air, "air_zarr": _air_zarr}
_netcdf: dict = {}


def netcdf_paths() -> dict:
    """{"nc4": file, "glob": pattern, "nc3": file}: the ``air`` Dataset
    as netCDF (written once per process), or {} without xarray."""
    if _netcdf or unavailable_netcdf():
        return _netcdf
    folder = Path(tempfile.mkdtemp(prefix="qlink-engines-nc-"))
    atexit.register(shutil.rmtree, folder, True)
    ds = _air()
    enc = {v: {"zlib": True, "chunksizes": tuple({"time": 2, "lat": 3, "lon": 5, "level": 2}[d] for d in ds[v].dims)}
           for v in ds.data_vars if ds[v].dtype.kind == "f" and ds[v].ndim}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_netcdf(folder / "air.nc", format="NETCDF4", encoding=enc)
        (folder / "parts").mkdir()
        for i, (a, b) in enumerate(((0, 2), (2, 3), (3, 6))):
            ds.isel(time=slice(a, b)).to_netcdf(folder / "parts" / f"air_{i}.nc", format="NETCDF4",
                                                unlimited_dims=["time"])
        ds.to_netcdf(folder / "air3.nc", format="NETCDF3_64BIT")
    _netcdf.update(nc4=str(folder / "air.nc"), glob=str(folder / "parts" / "air_*.nc"), nc3=str(folder / "air3.nc"))
    return _netcdf


def unavailable_netcdf() -> str | None:
    """Why the netCDF files cannot be written or served here, or None."""
    try:
        import netCDF4  # noqa: F401
        import xarray  # noqa: F401
    except ImportError as exc:
        return f"xarray and netCDF4 are not installed ({exc.name}; scripts/setup.sh)"
    if not Path(plugin_path("qlink_netcdf")).is_file():
        return f"qlink_netcdf is not built: {plugin_path('qlink_netcdf')}"
    return None


def dataset(key: str):
    """The Dataset ``key`` (built once per process)."""
    if key not in _cache:
        _cache[key] = _FACTORIES[key]()
    return _cache[key]


def register(connection, name: str, key: str, route: str) -> None:
    """Register Dataset ``key`` on ``connection`` as ``name`` through
    qlink.xarray, ``route`` forced, with the C build's qlink_ndarray (and
    the qlink_zarr beside it)."""
    xql = _xarray()
    plugin = plugin_path("qlink_ndarray")
    if hasattr(connection, "from_dataset"):  # qlink.xarray.Context: its own entry point
        connection.from_dataset(name, dataset(key), route=route, plugin=plugin)
    else:
        xql.register(connection, name, dataset(key), route=route, plugin=plugin)
    got = xql.route_of(connection, name)
    if got != route:
        raise AssertionError(f"Dataset {key!r} registered as {name!r} took the {got} route, not {route}")
