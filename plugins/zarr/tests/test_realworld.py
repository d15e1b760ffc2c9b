# SPDX-License-Identifier: Apache-2.0
"""qlink_zarr on the Zarr stores scientists really have (issue #4): netCDF
conventions left by converted satellite and model products, CF time edge
cases, layouts and names. Each table's full contents must equal xarray's
Dataset.to_dataframe(), and each column's type must be the one xarray
decodes to (masked cells NULL)."""
import base64
import os
import struct
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

from conftest import assert_same_rows, expected_rows, open_xr, run_scan

FORMATS = [2, 3]


def arrow_format(dtype):
    """The Arrow format the driver prints for a column xarray decodes to
    `dtype`."""
    k = dtype.kind
    if k in "Mm":
        unit = {"ns": "n", "us": "u", "ms": "m", "s": "s"}[np.datetime_data(dtype)[0]]
        return f"ts{unit}:" if k == "M" else f"tD{unit}"
    if k == "f":
        return {4: "f", 8: "g"}[dtype.itemsize]
    if k in "iu":
        letters = "csil" if k == "i" else "CSIL"
        return letters[{1: 0, 2: 1, 4: 2, 8: 3}[dtype.itemsize]]
    if k == "b":
        return "b"
    if k in "OUT":
        return "u"
    if k == "S":
        return "z"
    raise AssertionError(f"no Arrow format for {dtype}")


def check_exact(path, table=None, formats=None):
    """Rows equal xarray's; every column's type is xarray's, except those
    given in `formats` (a documented mapping: column -> format)."""
    scan = run_scan(path, *(["--table", table] if table else []))
    ds = open_xr(path)
    for c in scan.columns:
        if c in ds.variables:
            want = (formats or {}).get(c) or arrow_format(ds[c].dtype)
            assert scan.formats[c] == want, f"{c}: {scan.formats[c]}, xarray {ds[c].dtype}"
    want = expected_rows(path, scan)
    objects = [c for c in (formats or {}) if ds[c].dtype.kind == "O" and scan.formats[c] == "b"]
    if objects:
        # masked bools: xarray's object column holds True / False / NaN
        variables = [c for c in scan.columns if c not in ds.dims]
        df = ds[variables].to_dataframe().reset_index()
        for c in objects:
            k = scan.columns.index(c)
            for i, row in enumerate(want):
                row[k] = None if pd.isna(df[c].iloc[i]) else bool(df[c].iloc[i])
    assert_same_rows(scan.rows, want, sum(1 for c in scan.columns if c in ds.dims))
    assert scan.plan_stats["num_rows"] == len(want)
    return scan


def b64(value):
    """A float _FillValue as xarray writes it in a v3 attribute."""
    return base64.standard_b64encode(struct.pack("<d", value)).decode()


def raw_store(path, fmt, arrays):
    """A group of arrays written with zarr-python and attributes as a
    netCDF conversion leaves them (xarray's encoder would rewrite them).
    Each array: name, dims, data, and optionally attrs, fill (the v2
    fill_value; in v3 also the _FillValue attribute), chunks."""
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    for a in arrays:
        data = np.asarray(a["data"])
        attrs = dict(a.get("attrs", {}))
        fill = a.get("fill")
        kw = {}
        if fmt == 3:
            kw["dimension_names"] = a["dims"]
            if fill is not None:
                attrs.setdefault("_FillValue", b64(fill) if data.dtype.kind == "f" else fill)
        else:
            attrs["_ARRAY_DIMENSIONS"] = a["dims"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = g.create_array(a["name"], shape=data.shape, chunks=a.get("chunks", data.shape), dtype=data.dtype,
                                 fill_value=fill if fmt == 2 else (fill if fill is not None else 0), attributes=attrs,
                                 **kw)
        if data.size:
            arr[...] = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(str(path))
    return path


def write(ds, path, fmt, encoding=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=encoding or {}, **kw)
    return path


# ------------------------------------------------------ netCDF conventions

I16 = np.array([-32767, -1, 0, 1, 1000, 32767, -32768], "i2")


def x_axis(n=7):
    return {"name": "x", "dims": ["x"], "data": np.arange(n, dtype="i4")}


@pytest.mark.parametrize("fmt", FORMATS)
def test_unsigned_missing_value_and_valid_range(tmp_path, fmt):
    # _Unsigned reinterprets the stored signedness before masking and
    # scaling; missing_value masks alone or beside _FillValue, scalar or
    # list; valid_range / valid_min / valid_max mask nothing (xarray's
    # default); a packed _FillValue that looks valid (0) still masks
    i1 = np.array([-1, -128, 0, 127, 5, 1, 2], "i1")
    path = raw_store(tmp_path / "nc.zarr", fmt, [
        x_axis(),
        {"name": "u_fill", "dims": ["x"], "data": i1, "attrs": {"_Unsigned": "true"}, "fill": -1},
        {"name": "u_plain", "dims": ["x"], "data": i1, "attrs": {"_Unsigned": "true"}},
        {"name": "u_packed", "dims": ["x"], "data": I16, "attrs": {"_Unsigned": "true", "scale_factor": 0.5}, "fill": -1},
        {"name": "s_from_u", "dims": ["x"], "data": i1.view("u1"), "attrs": {"_Unsigned": "false"}},
        {"name": "mv", "dims": ["x"], "data": I16, "attrs": {"missing_value": -1}},
        {"name": "mv_list", "dims": ["x"], "data": I16, "attrs": {"missing_value": [-1, 1000]}},
        {"name": "mv_and_fill", "dims": ["x"], "data": I16, "attrs": {"missing_value": [1000, -1]}, "fill": -32767},
        {"name": "valid", "dims": ["x"], "data": I16, "attrs": {"valid_range": [0, 1000], "valid_min": 0, "valid_max": 1000}},
        {"name": "packed_zero_fill", "dims": ["x"], "data": I16, "attrs": {"scale_factor": 0.01, "add_offset": 0.0}, "fill": 0},
        {"name": "i4_packed", "dims": ["x"], "data": I16.astype("i4") * 65537, "attrs": {"scale_factor": 1e-3, "add_offset": 1.0}},
        {"name": "f4_scaled", "dims": ["x"], "data": np.array([1.5, -2, 0, np.nan, 3e5, 1e-7, 7], "f4"),
         "attrs": {"scale_factor": 0.1, "add_offset": 1.0}, "fill": 7.0},
        {"name": "mv_float", "dims": ["x"], "data": np.array([1.5, -2, 0, np.nan, -999.0, 1e-7, 7], "f8"),
         "attrs": {"missing_value": [-999.0, 7.0]}},
    ])
    scan = check_exact(path)
    assert scan.column("u_fill") == [None, 128, 0, 127, 5, 1, 2]
    assert scan.column("valid")[0] == -32767


@pytest.mark.parametrize("fmt", FORMATS)
def test_integer_scale_factor_keeps_integers(tmp_path, fmt):
    # an integer scale_factor alone (no add_offset, no fill value) is an
    # int64 to xarray, so the decoded values stay int64 (data * scale);
    # with an add_offset, or a float scale, they are float64. A one-element
    # list (as netCDF conversions leave attributes) makes xarray's column
    # objects (np.dtype(list)): here the element's type decides, as above
    path = raw_store(tmp_path / "sf.zarr", fmt, [
        x_axis(),
        {"name": "sf_int", "dims": ["x"], "data": I16, "attrs": {"scale_factor": 10}},
        {"name": "sf_int_list", "dims": ["x"], "data": I16.astype("u2"), "attrs": {"scale_factor": [3]}},
        {"name": "sf_int_offset", "dims": ["x"], "data": I16, "attrs": {"scale_factor": 2, "add_offset": 3}},
        {"name": "offset_int", "dims": ["x"], "data": I16, "attrs": {"add_offset": 100}},
    ])
    scan = check_exact(path, formats={"sf_int_list": "l"})
    assert scan.formats["sf_int"] == "l" and scan.column("sf_int")[0] == -327670
    assert scan.formats["sf_int_list"] == "l"
    assert scan.formats["sf_int_offset"] == "g"


@pytest.mark.parametrize("fmt", FORMATS)
def test_uint64_fill_value_above_int64(tmp_path, fmt):
    # netCDF's default uint64 fill value (NC_FILL_UINT64) is 2**64 - 2
    fill = 2**64 - 2
    path = raw_store(tmp_path / "u8.zarr", fmt, [
        x_axis(4),
        {"name": "count", "dims": ["x"], "data": np.array([0, fill, 2**63, 5], "u8"), "fill": fill},
    ])
    scan = check_exact(path)
    assert scan.column("count") == [0.0, None, float(2**63), 5.0]



@pytest.mark.parametrize("fmt", FORMATS)
def test_uint64_fill_value_as_digits(tmp_path, fmt):
    # the form zr_json_parse is to give a literal above INT64_MAX: the fill
    # masks (compared as float64, as xarray does) and fills unwritten chunks
    import json

    fill = 2**64 - 2
    path = raw_store(tmp_path / "u8.zarr", fmt, [
        x_axis(6),
        {"name": "c", "dims": ["x"], "data": np.array([0, fill, 2**63, 5, fill, fill], "u8"), "chunks": (2,), "fill": 0},
    ])
    meta = path / "c" / (".zarray" if fmt == 2 else "zarr.json")
    doc = json.loads(meta.read_text())
    doc["fill_value"] = str(fill)
    if fmt == 3:
        doc["attributes"]["_FillValue"] = str(fill)
    meta.write_text(json.dumps(doc))
    os.remove(path / "c" / ("2" if fmt == 2 else "c/2"))  # a chunk of fill values, never written
    # the store is listed (its consolidated metadata holds the old fill)
    if fmt == 2:
        (path / ".zmetadata").unlink()
    else:
        root = json.loads((path / "zarr.json").read_text())
        root.pop("consolidated_metadata", None)
        (path / "zarr.json").write_text(json.dumps(root))
    scan = run_scan(path)
    assert scan.formats["c"] == "g"
    assert scan.column("c") == [0.0, None, float(2**63), 5.0, None, None]


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_value_string_masks_nothing(tmp_path, fmt):
    # attributes of some HDF / GDAL conversions are strings
    path = raw_store(tmp_path / "s.zarr", fmt, [
        x_axis(4),
        {"name": "a", "dims": ["x"], "data": np.array([1, -9999, 3, 4], "i2"), "attrs": {"missing_value": "-9999"}},
        {"name": "b", "dims": ["x"], "data": np.array([1, -9999, 3, 4], "f4"), "attrs": {"missing_value": "n/a"}},
        # int64 to float64 keeps the width: the cells are converted, not copied;
        # xarray reads no base64 in missing_value (only a v3 _FillValue)
        {"name": "c", "dims": ["x"], "data": np.array([1, -9999, 2**53, 4], "i8"),
         "attrs": {"missing_value": "AAAAAAAA+H8="}},
    ])
    scan = check_exact(path)
    assert scan.column("a") == [1.0, -9999.0, 3.0, 4.0]
    assert scan.formats["c"] == "g" and scan.column("c") == [1.0, -9999.0, float(2**53), 4.0]

@pytest.mark.parametrize("fmt", FORMATS)
def test_bool_fill_value_masks(tmp_path, fmt):
    # a bool variable with a _FillValue: xarray masks the cells equal to it
    # (an object column of True / False / NaN); here a bool column whose
    # masked cells are NULL (the documented mapping of that object column)
    b = np.array([[True, False, True], [False, False, True]])
    ds = xr.Dataset({"flag": (("t", "x"), b), "plain": (("t", "x"), b)}, coords={"t": [1, 2]})
    path = write(ds, tmp_path / "b.zarr", fmt, {"flag": {"_FillValue": True}})
    scan = check_exact(path, formats={"flag": "b"})
    assert scan.column("flag") == [None, False, None, False, False, None]
    assert scan.column("plain") == [True, False, True, False, False, True]



def test_v2_bool_fill_value_false_masks_false(tmp_path):
    # zarr-python's v2 bool arrays carry fill_value false; xarray takes it
    # as _FillValue and masks every False cell
    path = raw_store(tmp_path / "b.zarr", 2, [
        x_axis(4), {"name": "b", "dims": ["x"], "data": np.array([True, False, True, False]), "fill": False}])
    scan = check_exact(path, formats={"b": "b"})
    assert scan.column("b") == [True, None, True, None]


@pytest.mark.parametrize("dtype,fill,cells", [("U2", "NA", ["a", "", "NA", "b"]), ("U3", "", ["a", "", "NA", "b"]),
                                               ("S2", "TkE=", [b"a", b"", b"NA", b"b"])])
def test_v2_fixed_width_string_fill_value_masks(tmp_path, dtype, fill, cells):
    # xarray masks the strings equal to a v2 fill_value (NaN in its object
    # column): NULL here
    ds = xr.Dataset({"s": (("x",), np.array(cells, dtype=dtype))}, coords={"x": np.arange(4)})
    path = write(ds, tmp_path / "s.zarr", 2)
    meta = tmp_path / "s.zarr" / "s" / ".zarray"
    import json
    doc = json.loads(meta.read_text())
    doc["fill_value"] = fill
    meta.write_text(json.dumps(doc))
    zarr.consolidate_metadata(str(tmp_path / "s.zarr"), zarr_format=2)
    scan = run_scan(path)
    xs = open_xr(path).s.values
    want = [None if not isinstance(v, (str, bytes)) else (v.hex() if isinstance(v, bytes) else v) for v in xs]
    assert scan.column("s") == want
    assert want.count(None) == 1


def test_v2_vlen_string_fill_value_masks(tmp_path):
    # zarr-python's v2 string arrays carry fill_value "": xarray masks every
    # empty string (NaN in its object column)
    path = raw_store(tmp_path / "s.zarr", 2, [x_axis(4)])
    g = zarr.open_group(str(path), mode="a", zarr_format=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = g.create_array("s", shape=(4,), chunks=(2,), dtype=str, attributes={"_ARRAY_DIMENSIONS": ["x"]})
        a[:2] = np.array(["a", ""])  # the second chunk is never written: it reads as ""
        zarr.consolidate_metadata(str(path))
    assert open_xr(path).s.values[0] == "a"
    assert run_scan(path).column("s") == ["a", None, None, None]


def test_v2_vlen_string_fill_value_other_than_empty_is_refused(tmp_path):
    # documented limit (fill.c): unwritten chunks could not read as it
    ds = xr.Dataset({"s": (("x",), np.array(["a", "", "NA", "b"], dtype=object))}, coords={"x": np.arange(4)})
    path = write(ds, tmp_path / "s.zarr", 2, {"s": {"_FillValue": "NA"}})
    p = run_scan(path, check=False)
    assert p.returncode != 0 and str(path) in p.stderr and "array 's'" in p.stderr and "fill_value" in p.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_netcdf_character_arrays_become_strings(tmp_path, fmt):
    # Argo's PLATFORM_NUMBER char(N_PROF, STRING8), as a raw conversion
    # (decode_cf=False, kerchunk) leaves it; DATA_MODE char(N_PROF) stays
    # single characters (N_PROF is used by a float variable too)
    names = np.array([list(b"6901234\0"), list(b"6901235\0"), list(b"69012\0\0\0")], dtype="u1").view("S1")
    path = raw_store(tmp_path / "argo.zarr", fmt, [
        {"name": "PLATFORM_NUMBER", "dims": ["N_PROF", "STRING8"], "data": names, "attrs": {"_Encoding": "utf-8"}},
        {"name": "DATA_MODE", "dims": ["N_PROF"], "data": np.array([b"R", b"D", b"A"], "S1")},
        {"name": "PRES", "dims": ["N_PROF"], "data": np.array([1.0, 2.0, 3.0], "f4")},
    ])
    scan = check_exact(path)
    assert scan.columns == ["N_PROF", "DATA_MODE", "PLATFORM_NUMBER", "PRES"]
    assert scan.column("PLATFORM_NUMBER") == ["6901234", "6901235", "69012"]

# ------------------------------------------------------------- CF times

def time_store(path, fmt, units, values, **attrs):
    return raw_store(path, fmt, [
        {"name": "time", "dims": ["time"], "data": values, "attrs": dict(units=units, **attrs)},
        {"name": "v", "dims": ["time"], "data": np.arange(len(values), dtype="f8")},
    ])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("units", ["days since 1677-09-22", "days since 1677-12-31 23:00", "days since 2262-01-01",
                                   "hours since 2262-04-11 12:00"])
def test_reference_dates_near_the_ns_bounds(tmp_path, fmt, units):
    # pandas reads these reference dates as timestamp[ns]: datetimes
    path = time_store(tmp_path / "b.zarr", fmt, units, np.array([0.0, 1.5, 2.0, 3.25]))
    assert check_exact(path).formats["time"] == "tsn:"


RNG = np.random.default_rng(11)
OUTSIDE = [
    # NCEP reanalysis: hours since year 1 of the mixed Julian / Gregorian calendar
    ("hours since 1-1-1 00:00:0.0", np.array([17593032.0, 17593038.0, 17600000.5, 17593044.25]), {}),
    ("days since 1601-01-01", RNG.uniform(1e5, 1.6e5, 40), {}),
    ("seconds since 1601-01-01 00:00:00", RNG.uniform(1e10, 1.3e10, 40), {}),
    ("days since 1582-10-15", RNG.integers(40000, 200000, 40).astype("i4"), {}),
    ("days since 1000-01-01", RNG.uniform(3e5, 4e5, 40), {}),
    ("days since 1000-01-01", RNG.uniform(3e5, 4e5, 40), {"calendar": "proleptic_gregorian"}),
    ("days since 1000-01-01", RNG.uniform(3e5, 4e5, 40).astype("f4"), {}),
    ("days since 1500-02-29", RNG.uniform(1e5, 2e5, 40), {}),  # a Julian leap day
    ("days since -4713-01-01 12:00", RNG.uniform(2.4e6, 2.46e6, 40), {}),  # Julian day numbers
    ("days since 1-1-1 00:00:00 +05:30", RNG.uniform(6.2e5, 7.3e5, 40), {}),
    ("days since 2262-04-12", RNG.uniform(-3e4, -1, 40), {}),
    ("microseconds since 1000-01-01", np.array([3.06e16, 3.07e16], "i8"), {}),
    # units pandas does not spell: xarray decodes them with cftime too
    ("hrs since 2000-01-01", RNG.uniform(-1e5, 1e5, 40), {}),
    ("hrs since 2000-01-01", np.array([0.5 / 3600, 1.000000278, 1.5 / 3600e6, 0.9999997222]), {}),
    ("msec since 2000-01-01", RNG.uniform(-1e9, 1e9, 40), {}),
    ("secs since 2000-01-01", np.array([1.0000005, 0.9999995, 1.000001, 2.4999995, -1.0000005]), {}),
    ("min since 1900-01-01 12:30:15.57", RNG.uniform(-1e7, 1e7, 40), {}),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", range(len(OUTSIDE)))
def test_reference_dates_outside_the_ns_range_decode_as_cftime_does(tmp_path, fmt, case):
    # xarray's pandas decoder refuses these; its cftime fallback decodes
    # them (the standard calendar is Julian before 1582-10-15, values are
    # rounded to the microsecond) and, the dates being within
    # timestamp[ns], gives datetime64[ns]
    units, values, attrs = OUTSIDE[case]
    path = time_store(tmp_path / "c.zarr", fmt, units, values, **attrs)
    assert check_exact(path).formats["time"] == "tsn:"


@pytest.mark.parametrize("fmt", FORMATS)
def test_cftime_dates_before_the_ns_range_stay_numeric(tmp_path, fmt):
    # one date before 1677-09-21: xarray keeps cftime objects for the
    # whole coordinate; the column stays the stored numbers with units
    path = time_store(tmp_path / "n.zarr", fmt, "days since 1000-01-01", np.array([1e5, 3e5]))
    scan = run_scan(path)
    assert open_xr(path).time.dtype == object
    assert scan.formats["time"] == "g" and scan.column("time") == [1e5, 3e5]
    assert scan.metadata["time"] == {"units": "days since 1000-01-01"}


@pytest.mark.parametrize("fmt", FORMATS)
def test_time_bounds_of_a_year_one_reference_are_timestamps(tmp_path, fmt):
    # NCEP reanalysis: time and its bounds (a data variable taking the
    # time's units) in hours since year 1 of the standard calendar
    t = np.array([17593032.0, 17593038.0, 17593044.0])
    path = raw_store(tmp_path / "ncep.zarr", fmt, [
        {"name": "time", "dims": ["time"], "data": t,
         "attrs": {"units": "hours since 1-1-1 00:00:0.0", "calendar": "standard", "bounds": "time_bnds"}},
        {"name": "time_bnds", "dims": ["time", "nbnds"], "data": np.stack([t - 3, t + 3], 1)},
        {"name": "air", "dims": ["time"], "data": np.array([250, 251, 32766], "i2"),
         "attrs": {"scale_factor": 0.01, "add_offset": 250.0, "missing_value": 32766}},
    ])
    assert check_exact(path, "time_nbnds").formats["time_bnds"] == "tsn:"
    assert check_exact(path, "time").column("air") == [252.5, 252.51, None]


@pytest.mark.parametrize("fmt", FORMATS)
def test_time_data_variable_before_the_ns_range_stays_numeric(tmp_path, fmt):
    path = raw_store(tmp_path / "d.zarr", fmt, [
        {"name": "t", "dims": ["t"], "data": np.arange(3)},
        {"name": "obs_time", "dims": ["t"], "data": np.array([1.0, 1e5, 7e5]), "attrs": {"units": "days since 0001-01-01"}},
    ])
    scan = run_scan(path)
    assert scan.formats["obs_time"] == "g" and scan.column("obs_time") == [1.0, 1e5, 7e5]

@pytest.mark.parametrize("fmt", FORMATS)
def test_infinite_times_are_null(tmp_path, fmt):
    # documented choice: xarray's cftime fallback masks ±inf and then gives
    # the reference date for them; NULL here, every other value as xarray
    values = np.array([1.0, np.inf, 3.5, -np.inf, np.nan])
    path = time_store(tmp_path / "i.zarr", fmt, "days since 2000-01-01", values)
    want = open_xr(path).time.values
    scan = run_scan(path)
    assert scan.formats["time"] == "tsn:"
    got = scan.column("time")
    assert got[1] is None and got[3] is None and got[4] is None
    assert [got[0], got[2]] == [int(want[0].astype("int64")), int(want[2].astype("int64"))]

@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("units", ["days since 19700101", "hours since 19700102T1200", "hours since 1970/01/02 12:00",
                                   "hours since 2000-01-01 00:00:00 UTC+1", "hours since 2000-01-01 00:00 GMT-03:30",
                                   "hours since 2000-01-01T00:00:00 UTC +1"])
def test_reference_dates_pandas_reads(tmp_path, fmt, units):
    # ISO 8601's basic format and slashes; a zone written "UTC+1" is POSIX's
    # (west of UTC) to pandas, and "UTC +1" is UTC
    path = time_store(tmp_path / "r.zarr", fmt, units, np.array([0, 1, 2, 30], "i8"))
    assert check_exact(path).formats["time"] == "tsn:"


@pytest.mark.parametrize("fmt", FORMATS)
def test_timedelta_units_as_xarray_spells_them(tmp_path, fmt):
    # xarray decodes a timedelta (a dtype: timedelta64[..] attribute) only
    # when its units are one of days ... nanoseconds exactly
    data = np.array([0, 1, 2, 3], "i8")
    arrays = [{"name": "t", "dims": ["t"], "data": data}]
    for name, units in [("hours", "hours"), ("hrs", "hrs"), ("cap", "Hours"), ("single", "hour"), ("none", None)]:
        attrs = {"dtype": "timedelta64[ns]"}
        if units:
            attrs["units"] = units
        arrays.append({"name": name, "dims": ["t"], "data": data, "attrs": attrs})
    scan = check_exact(raw_store(tmp_path / "d.zarr", fmt, arrays))
    assert scan.formats["hours"] == "tDn" and scan.formats["hrs"] == "l" and scan.formats["single"] == "l"


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ["f4", "f8"])
def test_float_timedeltas_round_as_xarray_does(tmp_path, fmt, dtype):
    # decode_cf_timedelta: units coarser than seconds are multiplied into
    # float64 seconds, then the values go to ns by steps of 1000 in their own
    # precision and are truncated
    rng = np.random.default_rng(13)
    arrays = [{"name": "t", "dims": ["t"], "data": np.arange(60)}]
    for units in ["days", "hours", "minutes", "seconds", "milliseconds", "microseconds"]:
        data = (rng.uniform(-1e4, 1e4, 60) * rng.choice([1, 1e-1, 1e-3, 1e-6], 60)).astype(dtype)
        arrays.append({"name": units, "dims": ["t"], "data": data, "attrs": {"units": units, "dtype": "timedelta64[ns]"}})
    scan = check_exact(raw_store(tmp_path / "f.zarr", fmt, arrays))
    assert all(scan.formats[u] == "tDn" for u in ["days", "seconds", "microseconds"])


# --------------------------------------------------------- layouts, names

def layout_store(tmp_path, fmt, case):
    """Small stores of the layouts scientists have; returns (path, table)."""
    rng = np.random.default_rng(17)
    path = tmp_path / f"{case}.zarr"
    if case == "zero_length":
        ds = xr.Dataset({"v": (("t", "x"), np.zeros((0, 3), "f4")), "w": (("x",), np.arange(3.0))}, coords={"x": [1, 2, 3]})
        return write(ds, path, fmt), "t_x"
    if case == "chunk_beyond_shape":
        ds = xr.Dataset({"v": (("t", "x"), rng.random((3, 5)))}, coords={"t": [1, 2, 3]})
        return write(ds, path, fmt, {"v": {"chunks": (10, 100)}}), None
    if case == "edge_chunks_everywhere":
        ds = xr.Dataset({"v": (("a", "b", "c"), rng.random((7, 5, 9)).astype("f4")),
                         "i": (("a", "b", "c"), rng.integers(0, 100, (7, 5, 9)).astype(">i2"))},
                        coords={"a": np.arange(7) * 2.0, "b": np.arange(5, dtype=">u4"), "c": np.arange(9)})
        return write(ds, path, fmt, {"v": {"chunks": (3, 2, 4)}, "i": {"chunks": (2, 3, 5)}}), None
    if case == "seven_dims":
        ds = xr.Dataset({"v": (tuple("abcdefg"), rng.random((2, 2, 2, 2, 2, 2, 3)).astype("f4"))}, coords={"a": [0, 1]})
        return write(ds, path, fmt, {"v": {"chunks": (1, 2, 1, 2, 1, 2, 2)}}), None
    if case == "many_arrays":
        ds = xr.Dataset({f"var{i:03d}": (("t",), rng.random(4)) for i in range(120)}, coords={"t": np.arange(4)})
        return write(ds, path, fmt), None
    if case == "empty_chunks_skipped":
        a = np.full((8, 6), np.nan)
        a[:2, :3] = 1.0
        m = np.where(np.isnan(a), -9, a).astype("i2")
        ds = xr.Dataset({"a": (("t", "x"), a), "m": (("t", "x"), m)})
        enc = {"a": {"chunks": (2, 3)}, "m": {"chunks": (2, 3), "_FillValue": -9}}
        return write(ds, path, fmt, enc, write_empty_chunks=False), None
    if case == "curvilinear":
        ds = xr.Dataset({"temp": (("time", "south_north", "west_east"), rng.random((2, 4, 5)).astype("f4"))},
                        coords={"XLAT": (("south_north", "west_east"), rng.random((4, 5)) * 10 + 40),
                                "XLONG": (("south_north", "west_east"), rng.random((4, 5)).astype("f4")),
                                "time": pd.date_range("2020-01-01", periods=2, freq="h")})
        return write(ds, path, fmt, {"temp": {"chunks": (1, 3, 2)}, "XLAT": {"chunks": (3, 3)}}), None
    if case == "names":
        dims = ("Time Axis", "lat.deg")
        ds = xr.Dataset({"Temp K": (dims, rng.random((2, 3))), "select": (dims, rng.random((2, 3))),
                         "température": (dims, rng.random((2, 3))), "ORDER": (dims, np.ones((2, 3), "i4"))},
                        coords={"Time Axis": [1, 2], "lat.deg": [0.5, 1.5, 2.5], "φ": (("lat.deg",), [1.0, 2, 3])})
        return write(ds, path, fmt), None
    raise AssertionError(case)


LAYOUTS = ["zero_length", "chunk_beyond_shape", "edge_chunks_everywhere", "seven_dims", "many_arrays",
           "empty_chunks_skipped", "curvilinear", "names"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", LAYOUTS)
def test_layouts(tmp_path, fmt, case):
    path, table = layout_store(tmp_path, fmt, case)
    check_exact(path, table)


def test_v2_slash_separated_chunk_keys(tmp_path):
    rng = np.random.default_rng(19)
    path = raw_store(tmp_path / "s.zarr", 2, [x_axis(6)])
    g = zarr.open_group(str(path), mode="a", zarr_format=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = g.create_array("v", shape=(6, 4), chunks=(4, 3), dtype="f8", fill_value=None,
                           attributes={"_ARRAY_DIMENSIONS": ["x", "y"]},
                           chunk_key_encoding={"name": "v2", "separator": "/"})
        a[:] = rng.random((6, 4))
        zarr.consolidate_metadata(str(path))
    assert os.path.isdir(path / "v" / "1")
    check_exact(path)


def test_v3_partial_shards_and_missing_inner_chunks(tmp_path):
    rng = np.random.default_rng(23)
    path = tmp_path / "sh.zarr"
    g = zarr.open_group(str(path), mode="w", zarr_format=3)
    data = rng.random((10, 7))
    data[4:, :] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = g.create_array("v", shape=(10, 7), chunks=(2, 2), shards=(4, 4), dtype="f8", fill_value=np.nan,
                           attributes={"_FillValue": b64(np.nan)}, dimension_names=["t", "x"],
                           config={"write_empty_chunks": False})
        v[:] = data
        w = g.create_array("w", shape=(10, 7), chunks=(3, 3), shards=(6, 6), dtype="i2", fill_value=0,
                           dimension_names=["t", "x"])
        wd = rng.integers(-5, 5, (10, 7)).astype("i2")
        wd[:6, :6] = 0
        w[:] = wd
        t = g.create_array("t", shape=(10,), chunks=(3,), shards=(6,), dtype="i4", fill_value=0, dimension_names=["t"])
        t[:] = np.arange(10)
        zarr.consolidate_metadata(str(path))
    check_exact(path)
