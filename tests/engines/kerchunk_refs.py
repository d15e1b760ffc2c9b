# SPDX-License-Identifier: Apache-2.0
"""The kerchunk reference file of the conformance suite (virtual Zarr,
plugins/zarr/README.md): a netCDF-4 file written by xarray and kerchunk
0.2.10's references to it (SingleHdf5ToZarr; chunks of 36 bytes or more as byte
ranges of the file, smaller ones inline), built once per process in a
temporary folder. Tables ``time_lat_lon`` (temp float32 with NaNs, flag
int16; temp in chunks of 2 x 4 x 3, zlib) and ``lat_lon`` (depth packed as
int16 with a fill value), both answered against
``xr.open_dataset(file).to_dataframe()``."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import warnings
from pathlib import Path

_built: dict = {}


def unavailable() -> str | None:
    """Why the reference file cannot be built here, or None."""
    try:
        import h5py  # noqa: F401
        import kerchunk.hdf  # noqa: F401
        import netCDF4  # noqa: F401
        import xarray  # noqa: F401
    except ImportError as exc:
        return f"kerchunk, h5py, netCDF4 and xarray are needed ({exc.name} is not installed; scripts/setup.sh)"
    return None


def _dataset():
    import numpy as np
    import pandas as pd
    import xarray as xr

    temp = np.arange(5 * 4 * 3, dtype="f4").reshape(5, 4, 3) / 8 - 2
    temp[1, 2, 0] = temp[4, 0, 2] = np.nan
    depth = np.arange(12, dtype="f8").reshape(4, 3) * 10.5
    depth[0, 1] = np.nan
    return xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp, {"units": "degC"}),
         "flag": (("time", "lat", "lon"), (np.arange(60) % 7 - 3).astype("i2").reshape(5, 4, 3)),
         "depth": (("lat", "lon"), depth)},
        coords={"time": pd.date_range("2024-03-01", periods=5, freq="6h"), "lat": [54.5, 53.0, 51.5, 50.0],
                "lon": [-3.0, 0.0, 3.0]},
    )


def paths() -> tuple[Path, Path]:
    """(the netCDF file, the reference file), built on first use."""
    if not _built:
        import kerchunk.hdf

        folder = Path(tempfile.mkdtemp(prefix="qlink-engines-kerchunk-"))
        atexit.register(shutil.rmtree, folder, True)
        nc = folder / "obs.nc"
        _dataset().to_netcdf(nc, engine="netcdf4",
                             encoding={"temp": {"chunksizes": (2, 4, 3), "zlib": True},
                                       "depth": {"dtype": "i2", "scale_factor": 0.5, "_FillValue": -999}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refs = kerchunk.hdf.SingleHdf5ToZarr(str(nc), inline_threshold=36).translate()
        (folder / "obs.json").write_text(json.dumps(refs))
        _built["paths"] = (nc, folder / "obs.json")
    return _built["paths"]


def frame(*names):
    """xarray's to_dataframe() of the netCDF file's variables `names`."""
    import xarray as xr

    with xr.open_dataset(paths()[0]) as ds:
        return ds[list(names)].load().to_dataframe().reset_index()
