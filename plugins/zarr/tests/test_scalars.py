# SPDX-License-Identifier: Apache-2.0
"""0-d data variables (a station's elevation, a grid mapping, a run's
constants) and table names: the one-row `scalars` table against xarray's
decoding of each variable (Dataset.to_dataframe() refuses a 0-d Dataset,
"no valid index for a 0-dimensional object", so each column is compared with
the decoded 0-d variable's value), attributes as field metadata, and the rule
that keeps dimension groups with the same default name apart."""
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import _cell_expected, _nan_is_fill, open_xr, run_scan
from test_tables import FORMATS, check_table, write


def station_dataset():
    rng = np.random.default_rng(11)
    time = pd.date_range("2020-01-01", periods=5, freq="D")
    return xr.Dataset(
        {
            "t2m": (("time",), rng.random(5).astype("f4"), {"units": "K", "long_name": "2 metre temperature",
                                                           "standard_name": "air_temperature"}),
            # packed: int16 with scale/offset becomes float64, as xarray decodes it
            "elevation": ((), np.float64(431.5), {"units": "m", "long_name": "station elevation",
                                                   "standard_name": "height_above_mean_sea_level"}),
            "crs": ((), np.int32(0), {"grid_mapping_name": "latitude_longitude",
                                      "semi_major_axis": 6378137.0, "inverse_flattening": 298.257223563}),
            "run_start": ((), np.datetime64("2019-12-31T18:00", "ns"), {"long_name": "model run start"}),
            "missing": ((), np.float32(np.nan), {"long_name": "a NaN that is the fill value"}),
            "flag": ((), np.int16(-999), {"long_name": "a masked integer"}),
            "name": ((), "Blindern", {"long_name": "station name"}),
        },
        coords={"time": time, "height": ((), 2.0, {"units": "m"})},
    )


def station_encoding():
    return {
        "elevation": {"dtype": "i2", "scale_factor": 0.5, "add_offset": 100.0, "_FillValue": -32767},
        "flag": {"_FillValue": -999},
        "run_start": {"units": "hours since 2019-12-01", "dtype": "i8"},
    }


def scalar_expected(path, scan):
    """The one row: each column as xarray decodes its 0-d variable."""
    ds = open_xr(path)
    raw = open_xr(path, mask_and_scale=False, decode_times=False)
    row = []
    for c in scan.columns:
        assert ds[c].ndim == 0, c
        row.append(_cell_expected(ds[c].values[()], raw[c].values[()], scan.formats[c], _nan_is_fill(raw[c])))
    return row


@pytest.mark.parametrize("fmt", FORMATS)
def test_scalars_table_against_xarray(tmp_path, fmt):
    path = write(station_dataset(), tmp_path / "st.zarr", fmt, station_encoding())
    assert run_scan(path, "--list").tables == ["time", "scalars"]
    # the time table is unchanged: the dimension, the scalar coordinate, its variable
    assert check_table(path, "time").columns == ["time", "height", "t2m"]
    scan = run_scan(path, "--table", "scalars")
    # scalar coordinates first, then the 0-d data variables, each by name
    assert scan.columns == ["height", "crs", "elevation", "flag", "missing", "name", "run_start"]
    assert scan.formats == {"height": "g", "crs": "i", "elevation": "g", "flag": "f", "missing": "f",
                            "name": "u", "run_start": "tsn:"}
    assert scan.rows == [scalar_expected(path, scan)]
    # exact values, so the comparison cannot pass by both being wrong
    assert scan.rows == [[2.0, 0, 431.5, None, None, "Blindern", 1577815200000000000]]
    assert scan.plan_stats["num_rows"] == 1 and scan.plan_stats["exact"]
    assert scan.metrics["output_rows"] == 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_attributes_are_field_metadata(tmp_path, fmt):
    path = write(station_dataset(), tmp_path / "md.zarr", fmt, station_encoding())
    scalars = run_scan(path, "--table", "scalars").metadata
    assert scalars["elevation"] == {"units": "m", "long_name": "station elevation",
                                    "standard_name": "height_above_mean_sea_level"}
    assert scalars["crs"] == {"grid_mapping_name": "latitude_longitude", "semi_major_axis": "6378137.0",
                              "inverse_flattening": "298.257223563"}
    # a decoded time's units and calendar became its type
    assert scalars["run_start"] == {"long_name": "model run start"}
    assert scalars["height"] == {"units": "m"}
    table = run_scan(path, "--table", "time").metadata
    assert table["t2m"] == {"units": "K", "long_name": "2 metre temperature", "standard_name": "air_temperature"}
    assert table["height"] == {"units": "m"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_store_of_scalars_only(tmp_path, fmt):
    ds = xr.Dataset({"g": ((), 9.80665, {"units": "m s-2"}), "n": ((), np.int64(3))})
    path = write(ds, tmp_path / "only.zarr", fmt)
    assert run_scan(path, "--list").tables == ["scalars"]
    scan = run_scan(path)  # the only table is the default one
    assert scan.columns == ["g", "n"] and scan.rows == [[9.80665, 3]]
    assert scan.rows == [scalar_expected(path, scan)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_default_name_is_kept_apart(tmp_path, fmt):
    # a_b x c and a x b_c both join to a_b_c: each takes its dimensions
    # joined by "__"; a dimension named "scalars" yields to the scalars table
    ds = xr.Dataset({
        "u": (("a_b", "c"), np.arange(6.0).reshape(2, 3)),
        "v": (("a", "b_c"), np.arange(8, dtype="i4").reshape(4, 2)),
        "w": (("a_b_c",), np.arange(5, dtype="i2")),
        "s": (("scalars",), np.arange(2, dtype="i1")),
        "k": ((), np.int8(1)),
    })
    path = write(ds, tmp_path / "clash.zarr", fmt)
    names = run_scan(path, "--list").tables
    assert sorted(names) == ["a__b_c", "a_b__c", "a_b_c", "scalars", "scalars_2"]
    assert run_scan(path, "--table", "a_b__c").columns == ["a_b", "c", "u"]
    assert run_scan(path, "--table", "a__b_c").columns == ["a", "b_c", "v"]
    assert run_scan(path, "--table", "a_b_c").columns == ["a_b_c", "w"]
    assert run_scan(path, "--table", "scalars").columns == ["k"]
    assert run_scan(path, "--table", "scalars_2").columns == ["scalars", "s"]
    for t in ("a_b__c", "a__b_c", "a_b_c", "scalars_2"):
        check_table(path, t)
    # the disambiguated names are what `tables` renames
    renamed = run_scan(path, "--list", "--tables", "a_b__c=wind,a__b_c=vapour").tables
    assert sorted(renamed) == ["a_b_c", "scalars", "scalars_2", "vapour", "wind"]
    # names depend on the dimensions only: more variables in a group, or
    # another order of writing, keep them
    more = ds.assign(u2=ds["u"] * 2, v0=ds["v"] - 1)
    more = more[sorted(more.data_vars, reverse=True)]
    path2 = write(more, tmp_path / "clash2.zarr", fmt)
    assert sorted(run_scan(path2, "--list").tables) == sorted(names)
    assert run_scan(path2, "--table", "a_b__c").columns == ["a_b", "c", "u", "u2"]
