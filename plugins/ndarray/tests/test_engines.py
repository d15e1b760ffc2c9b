# SPDX-License-Identifier: Apache-2.0
"""qlink.xarray.register on DuckDB and SQLite connections (the C build
alone): table names as xarray-sql 0.6 gives them, values against
Dataset.to_dataframe(), every dtype, NaN and NaT, cftime calendars, lazy
(netCDF) and dask-backed Datasets, errors, and the GIL left free while an
in-memory Dataset is scanned."""

from __future__ import annotations

import ctypes
import math
import threading
import time

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import qlink.xarray as xql


def _ts(engine, value) -> object:
    """A timestamp as the engine returns it."""
    ts = pd.Timestamp(value)
    if engine.kind == "sqlite":
        text = ts.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{ts.microsecond:06d}".rstrip("0") if ts.microsecond else "")
    return ts.to_pydatetime()


def test_single_table_matches_to_dataframe(engine, air):
    xql.register(engine.con, "air", air)
    assert engine.columns("air") == ["time", "lat", "lon", "air"]
    rows = engine.rows("SELECT time, lat, lon, air FROM air ORDER BY time, lat DESC, lon")
    df = air.to_dataframe().reset_index().sort_values(["time", "lat", "lon"], ascending=[True, False, True])
    assert len(rows) == len(df) == 120
    for row, (_, want) in zip(rows, df.iterrows()):
        assert row[0] == _ts(engine, want["time"])
        assert row[1] == want["lat"] and row[2] == want["lon"]
        if math.isnan(want["air"]):
            assert row[3] is None  # a Dataset's NaN is a missing value: NULL in every engine
        else:
            assert row[3] == pytest.approx(float(want["air"]), rel=0, abs=0)
    # aggregates over the dimension columns, and a dimension filter
    got = engine.rows("SELECT count(*), count(air) FROM air WHERE lat < 71 AND lon BETWEEN 202 AND 206")
    sub = air.air.where((air.lat < 71) & (air.lon >= 202) & (air.lon <= 206), drop=True)
    assert got[0][0] == sub.size
    assert got[0][1] == (sub.size if engine.kind == "duckdb" else int(sub.count()))


def test_dimension_groups_are_named_as_xarray_sql(engine, air):
    ds = air.assign(
        elevation=(("lat", "lon"), np.arange(20, dtype=np.int32).reshape(4, 5)),
        station=((), np.float64(3.5)),
        wind=(("time", "lat", "lon"), np.ones((6, 4, 5))),
    )
    xql.register(engine.con, "era5", ds)
    assert engine.columns("era5.time_lat_lon") == ["time", "lat", "lon", "air", "wind"]
    assert engine.columns("era5.lat_lon") == ["lat", "lon", "elevation"]
    assert engine.rows("SELECT * FROM era5.scalar") == [(3.5,)]
    assert engine.rows("SELECT sum(elevation) FROM era5.lat_lon") == [(190,)]
    if engine.kind == "duckdb":  # the flat spellings xarray-sql's DuckDB adapter also gives
        assert engine.rows("SELECT count(*) FROM era5_time_lat_lon") == [(120,)]
    xql.register(engine.con, "e2", ds, table_names={("time", "lat", "lon"): "surface", (): "consts"})
    assert engine.rows("SELECT count(*) FROM e2.surface") == [(120,)]
    assert engine.rows("SELECT station FROM e2.consts") == [(3.5,)]
    with pytest.raises(ValueError, match="would both take the same table name 'x'"):
        xql.register(engine.con, "e3", ds, table_names={("time", "lat", "lon"): "x", ("lat", "lon"): "x"})


def test_non_dimension_coordinates_and_positions(engine):
    ds = xr.Dataset(
        {"v": (("y", "x"), np.arange(6.0).reshape(2, 3))},
        coords={"x": [10, 20, 30], "xname": ("x", ["a", "bb", "ccc"]), "height": 2.0},
    )
    xql.register(engine.con, "g", ds)
    # y has no coordinate: its values are positions; coordinates over a subset follow the dimensions
    assert engine.columns("g") == ["y", "x", "xname", "height", "v"]
    assert engine.rows("SELECT y, x, xname, height, v FROM g ORDER BY y, x") == [
        (0, 10, "a", 2.0, 0.0), (0, 20, "bb", 2.0, 1.0), (0, 30, "ccc", 2.0, 2.0),
        (1, 10, "a", 2.0, 3.0), (1, 20, "bb", 2.0, 4.0), (1, 30, "ccc", 2.0, 5.0)]


def test_every_dtype_nan_and_nat(engine):
    n = 4
    ds = xr.Dataset(
        {
            "b": ("i", np.array([True, False, True, False])),
            "i1": ("i", np.array([-128, 0, 1, 127], dtype=np.int8)),
            "u1": ("i", np.array([0, 1, 2, 255], dtype=np.uint8)),
            "i2": ("i", np.array([-32768, 0, 1, 32767], dtype=np.int16)),
            "u2": ("i", np.array([0, 1, 2, 65535], dtype=np.uint16)),
            "i4": ("i", np.array([-(2**31), 0, 1, 2**31 - 1], dtype=np.int32)),
            "u4": ("i", np.array([0, 1, 2, 2**32 - 1], dtype=np.uint32)),
            "i8": ("i", np.array([-(2**63), 0, 1, 2**63 - 1], dtype=np.int64)),
            "u8": ("i", np.array([0, 1, 2, 2**62], dtype=np.uint64)),
            "f2": ("i", np.array([0.5, -1.0, np.nan, 2.0], dtype=np.float16)),
            "f4": ("i", np.array([0.25, np.nan, 1.5, -2.0], dtype=np.float32)),
            "f8": ("i", np.array([np.nan, 1e300, -0.0, 3.0])),
            "big": ("i", np.array([1.0, 2.0, 3.0, 4.0], dtype=">f8")),
            "t_ns": ("i", np.array(["2000-01-01T00:00:00.000000001", "NaT", "1970-01-01", "2262-04-11"],
                                   dtype="datetime64[ns]")),
            "t_s": ("i", np.array(["1000-01-01", "2000-02-29T12:00:00", "NaT", "9999-12-31"], dtype="datetime64[s]")),
            "t_d": ("i", np.array(["2000-01-01", "2000-01-02", "NaT", "1900-03-01"], dtype="datetime64[D]")),
            "dt": ("i", np.array([1, -2, "NaT", 3600], dtype="timedelta64[s]")),
            "s": ("i", np.array(["", "a", "héllo", "x" * 40])),
            "obj": ("i", np.array(["p", "qq", None, "rrr"], dtype=object)),
            "bin": ("i", np.array([b"ab", b"c", b"", b"\x00z"])),
        },
        coords={"i": np.arange(n)},
    )
    xql.register(engine.con, "t", ds)
    cols = ["b", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "big", "t_ns", "t_s", "t_d", "dt",
            "s", "obj", "bin"]
    rows = engine.rows(f"SELECT {', '.join(cols)} FROM t ORDER BY i")
    got = {c: [r[k] for r in rows] for k, c in enumerate(cols)}
    sqlite = engine.kind == "sqlite"
    assert got["b"] == ([1, 0, 1, 0] if sqlite else [True, False, True, False])
    for c in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]:
        assert got[c] == [int(v) for v in ds[c].values], c
    nan = None if sqlite else "nan"

    def norm(v):
        return nan if v is None or (isinstance(v, float) and math.isnan(v)) else v

    assert [norm(v) for v in got["f2"]] == [0.5, -1.0, nan, 2.0]
    assert [norm(v) for v in got["f4"]] == [0.25, nan, 1.5, -2.0]
    assert [norm(v) for v in got["f8"]] == [nan, 1e300, 0.0, 3.0]
    assert got["big"] == [1.0, 2.0, 3.0, 4.0]
    if sqlite:
        assert got["t_ns"] == ["2000-01-01 00:00:00.000000001", None, "1970-01-01 00:00:00", "2262-04-11 00:00:00"]
        assert got["t_s"] == ["1000-01-01 00:00:00", "2000-02-29 12:00:00", None, "9999-12-31 00:00:00"]
        assert got["t_d"] == ["2000-01-01 00:00:00", "2000-01-02 00:00:00", None, "1900-03-01 00:00:00"]
        assert got["dt"] == [1_000_000_000, -2_000_000_000, None, 3_600_000_000_000]
        assert got["bin"] == [b"ab", b"c", b"", b"\x00z"]
    else:
        import datetime as dt

        assert got["t_ns"][1] is None and got["t_ns"][2] == dt.datetime(1970, 1, 1)
        assert got["t_s"] == [dt.datetime(1000, 1, 1), dt.datetime(2000, 2, 29, 12), None, dt.datetime(9999, 12, 31)]
        assert got["t_d"] == [dt.datetime(2000, 1, 1), dt.datetime(2000, 1, 2), None, dt.datetime(1900, 3, 1)]
        assert got["dt"] == [dt.timedelta(seconds=1), dt.timedelta(seconds=-2), None, dt.timedelta(hours=1)]
        assert got["bin"] == [b"ab", b"c", b"", b"\x00z"]
    assert got["s"] == ["", "a", "héllo", "x" * 40]
    assert got["obj"] == ["p", "qq", None, "rrr"]


def test_nan_is_null_as_in_xarray_sql(engine):
    """A Dataset's NaN is a missing value: aggregates skip it and IS NULL
    finds it (xarray-sql's TestNanAsNull); nan_fill="nan" keeps it a value
    (DuckDB's NaN; SQLite stores NaN as NULL whatever it is given)."""
    data = np.array([[[1.0, 2.0], [np.nan, 4.0]], [[5.0, np.nan], [7.0, 8.0]]])
    ds = xr.Dataset({"temp": (["time", "x", "y"], data)},
                    coords={"time": pd.date_range("2020-01-01", periods=2), "x": [0, 1], "y": [0, 1]}).chunk({"time": 1})
    sql = ("SELECT max(temp), min(temp), avg(temp), count(temp), count(*) FILTER (WHERE temp IS NULL) FROM {t}"
           if engine.kind == "duckdb" else
           "SELECT max(temp), min(temp), avg(temp), count(temp), sum(temp IS NULL) FROM {t}")
    xql.register(engine.con, "d", ds)
    assert engine.rows(sql.format(t="d")) == [(8.0, 1.0, 4.5, 6, 2)]
    xql.register(engine.con, "k", ds, nan_fill="nan")
    if engine.kind == "duckdb":
        got = engine.rows(sql.format(t="k"))[0]
        assert math.isnan(got[0]) and got[1] == 1.0 and math.isnan(got[2]) and got[3:] == (8, 0)
    else:
        assert engine.rows(sql.format(t="k")) == [(8.0, 1.0, 4.5, 6, 2)]
    with pytest.raises(ValueError, match="nan_fill must be one of 'null', 'nan', not 'NaN'"):
        xql.register(engine.con, "e", ds, nan_fill="NaN")


def test_missing_strings_are_null(engine):
    """None, NaN and pandas' NA in object arrays (what from_dataframe,
    reindex and unstack leave) are NULL, never "": in data variables of
    str and bytes, in a 2-d variable, in a coordinate, and in cftime
    dates; "" stays a value."""
    import cftime

    nat = cftime.DatetimeNoLeap
    ds = xr.Dataset(
        {
            "s": ("i", np.array(["a", None, "", np.nan, pd.NA, "zz"], dtype=object)),
            "b": ("i", np.array([b"x", None, b"", b"yy", np.nan, b"\x00"], dtype=object)),
            "t": ("i", np.array([nat(2000, 2, 28), None, nat(2001, 1, 1), np.nan, nat(1, 1, 1), None], dtype=object)),
            "none": ("i", np.array([None] * 6, dtype=object)),
            "grid": (("i", "j"), np.array([[None, "p"], ["q", None]] * 3, dtype=object)),
        },
        coords={"i": np.arange(6), "j": np.array(["j0", None], dtype=object)},
    )
    xql.register(engine.con, "m", ds)
    rows = engine.rows("SELECT s, b, t, \"none\" FROM m.i ORDER BY i")
    assert [r[0] for r in rows] == ["a", None, "", None, None, "zz"]
    assert [r[1] for r in rows] == [b"x", None, b"", b"yy", None, b""]  # trailing NULs go, as numpy's |S drops them
    assert [r[2] for r in rows] == ["2000-02-28T00:00:00", None, "2001-01-01T00:00:00", None, "0001-01-01T00:00:00",
                                    None]
    assert [r[3] for r in rows] == [None] * 6
    assert engine.rows("SELECT count(s), count(*) FROM m.i WHERE s IS NOT NULL") == [(3, 3)]
    assert engine.rows("SELECT i FROM m.i WHERE s = '' ORDER BY i") == [(2,)]
    grid = engine.rows("SELECT i, j, grid FROM m.i_j WHERE i < 2 ORDER BY i, j NULLS LAST")
    assert grid == [(0, "j0", None), (0, None, "p"), (1, "j0", "q"), (1, None, None)]
    assert engine.rows("SELECT count(*) FROM m.i_j WHERE j IS NULL") == [(6,)]


@pytest.mark.parametrize("calendar", ["noleap", "360_day", "julian", "all_leap", "standard"])
def test_cftime_calendars_are_iso_text(engine, calendar):
    cftime = pytest.importorskip("cftime")
    times = xr.date_range("1999-12-30", periods=70, freq="D", calendar=calendar, use_cftime=True)
    ds = xr.Dataset({"v": ("time", np.arange(70.0))}, coords={"time": times})
    xql.register(engine.con, "c", ds)
    rows = engine.rows("SELECT time, v FROM c ORDER BY time")
    want = [f"{t.year:04d}-{t.month:02d}-{t.day:02d}T00:00:00" for t in ds.time.values]
    assert [r[0] for r in rows] == want
    assert [r[1] for r in rows] == list(np.arange(70.0))
    # text compares as the calendar's dates do: February 30 exists in 360_day only
    n = engine.rows("SELECT count(*) FROM c WHERE time >= '2000-02-28' AND time < '2000-03-01'")[0][0]
    in_cal = ds.time.values[(ds.time.values >= cftime.datetime(2000, 2, 28, calendar=calendar))
                            & (ds.time.values < cftime.datetime(2000, 3, 1, calendar=calendar))]
    assert n == len(in_cal) == {"noleap": 1, "360_day": 3, "julian": 2, "all_leap": 2, "standard": 2}[calendar]
    # back to cftime objects of the calendar
    if engine.kind == "duckdb":
        back = xql.to_dataset(engine.con.sql("SELECT time, v FROM c"), template=ds)
        assert back.time.values[0] == ds.time.values[0] and back.time.values[0].calendar == ds.time.values[0].calendar
        xr.testing.assert_identical(back.v.reset_coords(drop=True), ds.v.reset_coords(drop=True))


def test_lazy_netcdf_dataset_loads_blocks(engine, air, tmp_path):
    path = tmp_path / "air.nc"
    air.to_netcdf(path)
    with xr.open_dataset(path) as lazy:
        assert not lazy.air.variable._in_memory
        xql.register(engine.con, "air", lazy, chunks={"time": 2})
        assert not lazy.air.variable._in_memory  # registering read the coordinates only
        got = engine.rows("SELECT count(*), sum(air), min(time), max(lat) FROM air")[0]
        assert got[0] == 120
        assert got[1] == pytest.approx(float(air.air.sum()), rel=1e-6) if engine.kind == "sqlite" else True
        assert got[2] == _ts(engine, air.time.values[0]) and got[3] == 75.0
        # a time slice reads the blocks it needs
        sub = engine.rows("SELECT lat, lon, air FROM air WHERE time = ? ORDER BY lat, lon",
                          [_ts(engine, air.time.values[3])] if engine.kind == "duckdb"
                          else [_ts(engine, air.time.values[3])])
        want = air.air.isel(time=3).to_dataframe().reset_index().sort_values(["lat", "lon"])
        assert [(r[0], r[1]) for r in sub] == list(zip(want.lat, want.lon))
        assert [r[2] for r in sub] == pytest.approx(list(want.air.astype(float)), rel=0)
        assert not lazy.air.variable._in_memory


def test_dask_backed_dataset(engine, air):
    pytest.importorskip("dask")
    ds = air.chunk({"time": 2, "lat": 2})
    assert ds.air.chunks is not None
    xql.register(engine.con, "air", ds)
    got = engine.rows("SELECT count(*), count(air), max(air) FROM air WHERE lon < 204")[0]
    sub = air.air.where(air.lon < 204, drop=True)
    assert got[0] == got[1] == sub.size
    assert got[2] == pytest.approx(float(sub.max()), rel=0)


class _Failing(xr.backends.BackendArray):
    def __init__(self, shape):
        self.shape = shape
        self.dtype = np.dtype("float64")

    def __getitem__(self, key):
        return xr.core.indexing.explicit_indexing_adapter(key, self.shape, xr.core.indexing.IndexingSupport.BASIC,
                                                          self._raw)

    def _raw(self, key):
        raise OSError("NetCDF: HDF error (the file is truncated)")


def test_loader_failure_is_the_query_error(engine):
    lazy = xr.Variable(("t",), xr.core.indexing.LazilyIndexedArray(_Failing((10,))))
    ds = xr.Dataset({"v": lazy}, coords={"t": np.arange(10)})
    xql.register(engine.con, "bad", ds)
    with pytest.raises(Exception, match=r"variable 'v': loading a block failed: OSError: NetCDF: HDF error"):
        engine.rows("SELECT sum(v) FROM bad")
    assert engine.rows("SELECT count(*) FROM (SELECT t FROM bad)") == [(10,)]  # dimensions need no load


def test_registration_errors(engine):
    bad = xr.Dataset({"z": ("i", np.array([1 + 2j, 3j]))})
    with pytest.raises(TypeError, match="variable 'z': complex numbers"):
        xql.register(engine.con, "z", bad)
    mixed = xr.Dataset({"o": ("i", np.array([1, "a"], dtype=object))})
    with pytest.raises(TypeError, match="variable 'o' holds Python objects of types"):
        xql.register(engine.con, "o", mixed)
    flags = xr.Dataset({"f": ("i", np.array([True, np.nan], dtype=object))})  # from_dataframe's bools
    with pytest.raises(TypeError, match=r"types \['bool'\]; .* as numpy dtypes, .* needs a numpy dtype first"):
        xql.register(engine.con, "f", flags)
    with pytest.raises(TypeError, match="got a DataArray: pass da.to_dataset()"):
        xql.register(engine.con, "da", xr.DataArray([1.0, 2.0], dims="i", name="v"))
    with pytest.raises(TypeError, match="No xarray-sql engine adapter for connection of type builtins.object"):
        xql.register(object(), "x", xr.Dataset())
    with pytest.raises(ValueError, match=r"chunks\['i'\] must be a positive integer"):
        xql.register(engine.con, "c", xr.Dataset({"v": ("i", np.arange(3.0))}), chunks={"i": 0})


def test_to_dataset_round_trip_restores_the_template(engine, air):
    ds = air.assign(flag=(("lat", "lon"), (np.arange(20) % 3 == 0).reshape(4, 5)),
                    count=(("lat", "lon"), np.arange(20, dtype=np.int16).reshape(4, 5)))
    xql.register(engine.con, "air", ds)
    if engine.kind == "duckdb":
        import pyarrow as pa

        full = engine.con.sql("SELECT * FROM air.time_lat_lon")
        static = pa.table(engine.con.sql("SELECT lat, lon, flag, count FROM air.lat_lon").arrow())
    else:
        import pyarrow as pa

        cur = engine.con.cursor()
        rows = cur.execute("SELECT lat, lon, flag, count FROM air.lat_lon").fetchall()
        static = pa.table({"lat": [r[0] for r in rows], "lon": [r[1] for r in rows],
                           "flag": [r[2] for r in rows], "count": [r[3] for r in rows]})  # bool as 0/1
        full = None
    back = xql.to_dataset(static, template=ds[["flag", "count"]])
    assert back.flag.dtype == bool and back["count"].dtype == np.int16  # SQLite's integers narrowed back
    xr.testing.assert_identical(back[["flag", "count"]], ds[["flag", "count"]])
    if full is not None:
        out = xql.to_dataset(full, template=ds[["air"]])
        xr.testing.assert_identical(out, ds[["air"]])
    with pytest.raises(ValueError, match="dims cannot be inferred"):
        xql.to_dataset(static)
    with pytest.raises(ValueError, match=r"dimensions \['z'\] are not columns of the result"):
        xql.to_dataset(static, dims=["z"])
    summed = pa.table({"lat": ds.lat.values, "flag": [1, 2, 0, 1]})
    assert xql.to_dataset(summed, template=ds[["flag"]]).flag.dtype == np.int64  # an aggregate keeps its type


def test_release_after_unregister(engine, air):
    before = xql.live_datasets()
    xql.register(engine.con, "air", air)
    assert xql.live_datasets() == before + 1
    xql.register(engine.con, "air", air)  # the same name again replaces it
    assert xql.live_datasets() == before + 1
    assert engine.rows("SELECT count(*) FROM air") == [(120,)]
    assert xql.unregister(engine.con, "air") == 1
    if engine.kind == "sqlite":  # the virtual table still holds its provider: released with it
        engine.rows('DROP TABLE temp."air"')
    else:
        engine.rows('DROP VIEW "air"')
    assert xql.live_datasets() == before


def test_attributes_with_nan_text_and_infinities(engine):
    """Attribute text that says NaN or Infinity stays text, and non-finite
    numbers (a NaN _FillValue, valid_min = -inf) become JSON strings: both
    once broke the attributes' JSON and with it the registration."""
    attrs = {"note": "a _FillValue of NaN; Infinity too", "valid_min": -np.inf, "valid_max": np.inf,
             "fill": np.float32("nan"), "range": np.array([-np.inf, 0.0, np.nan])}
    xql.register(engine.con, "a", xr.Dataset({"v": ("i", [1.0, np.nan], attrs)}))
    assert engine.rows("SELECT count(*), count(v) FROM a") == [(2, 1)]
    import json

    from qlink.xarray._buffers import _attrs_json

    assert json.loads(_attrs_json("v", attrs, {})) == {
        "note": "a _FillValue of NaN; Infinity too", "valid_min": "-Infinity", "valid_max": "Infinity",
        "fill": "NaN", "range": ["-Infinity", 0.0, "NaN"]}


def test_registering_again_drops_the_tables_it_no_longer_makes(engine):
    """A name registered again with other dimension groups (one table
    replaced by groups, groups by one table, a group the new Dataset lacks)
    leaves none of the old tables: a stale one would serve the replaced
    Dataset (SQLite's virtual table holds its provider) or fail on its
    unregistered id (DuckDB's view)."""
    before = xql.live_datasets()
    xql.register(engine.con, "t", xr.Dataset({"w": ("y", np.arange(3))}))
    xql.register(engine.con, "t", xr.Dataset({"a": ("x", [1.0]), "b": ("y", [2.0, 3.0])}))
    assert engine.rows("SELECT a FROM t.x") == [(1.0,)]
    gone = "does not exist|no such table"
    with pytest.raises(Exception, match=gone):
        engine.rows("SELECT * FROM t")
    xql.register(engine.con, "t", xr.Dataset({"a": ("x", [4.0]), "c": ("z", [5.0])}))
    assert engine.rows("SELECT a FROM t.x") == [(4.0,)]
    with pytest.raises(Exception, match=gone):
        engine.rows("SELECT * FROM t.y")
    xql.register(engine.con, "t", xr.Dataset({"z": ("x", [9.0])}))
    assert engine.rows("SELECT * FROM t") == [(0, 9.0)]
    with pytest.raises(Exception, match=gone):
        engine.rows("SELECT * FROM t.x")
    if engine.kind == "duckdb":
        with pytest.raises(Exception, match=gone):
            engine.rows("SELECT * FROM t_x")
    assert xql.live_datasets() == before + 1  # the replaced registrations are all released


def test_gil_is_free_while_scanning_memory(engine, tmp_path):
    """An in-memory scan runs with no Python in it: it finishes while this
    thread holds the GIL (a libc sleep through ctypes.PyDLL keeps it),
    where a lazy variable's loader must wait for it. The scan's end is
    SQLite's own clock (julianday('now'), taken once the aggregate is
    done). Through DuckDB's Python module the same check cannot pass:
    that module takes the GIL while a query runs, for a native DuckDB
    table as much as for a qlink one (measured: a 0.2 s native query then
    takes 1.7 s)."""
    if engine.kind != "sqlite":
        pytest.skip("DuckDB's Python module itself holds the GIL during execution (see the docstring)")
    n = 3_000_000
    mem = xr.Dataset({"v": ("i", np.arange(n, dtype=np.float64))})
    mem.to_netcdf(tmp_path / "v.nc")
    xql.register(engine.con, "m", mem)
    libc = ctypes.PyDLL(None)
    libc.usleep.argtypes = [ctypes.c_uint]

    def scan_end_minus_hold_end(table):
        out = {}
        started = threading.Event()

        def run():
            started.set()
            out["rows"] = engine.rows(f"SELECT sum(v), (julianday('now') - 2440587.5) * 86400.0 FROM {table}")

        t = threading.Thread(target=run)
        t.start()
        started.wait()
        time.sleep(0.02)  # the query thread enters sqlite3_step (apsw releases the GIL there)
        libc.usleep(1_500_000)  # then this thread holds the GIL for 1.5 s
        hold_end = time.time()
        t.join()
        assert out["rows"][0][0] == n * (n - 1) / 2
        return out["rows"][0][1] - hold_end

    assert scan_end_minus_hold_end("m") < -0.5  # done well before the GIL came back
    with xr.open_dataset(tmp_path / "v.nc") as lazy:
        xql.register(engine.con, "l", lazy)
        assert scan_end_minus_hold_end("l") > -0.05  # the loader waited for the GIL


def test_cftime_text_normalises_dates(engine):
    assert xql.cftime_text("2000-7-1") == "2000-07-01T00:00:00"
    assert xql.cftime_text(" 2000-02-30 06:30 ") == "2000-02-30T06:30:00"
    assert xql.cftime_text("1-01-01T00:00:00.25") == "0001-01-01T00:00:00.250000"
    assert xql.cftime_text(None) is None
    with pytest.raises(ValueError, match="'July' is not a date"):
        xql.cftime_text("July")
    # the normalised text compares exactly where the bare date, a prefix, would not
    times = xr.date_range("2000-06-30", periods=3, freq="D", calendar="360_day", use_cftime=True)
    xql.register(engine.con, "c", xr.Dataset({"v": ("time", [1.0, 2.0, 3.0])}, coords={"time": times}))
    assert engine.rows("SELECT count(*) FROM c WHERE time > ?", [xql.cftime_text("2000-07-01")])[0][0] == 1
    assert engine.rows("SELECT count(*) FROM c WHERE time > '2000-07-01'")[0][0] == 2


@pytest.mark.parametrize("kind", ["duckdb", "sqlite"])
def test_release_while_the_interpreter_exits(kind):
    """A SQLite table open on a Dataset unregistered earlier releases the
    registration when its connection is freed, which at exit can be after
    qlink.xarray's globals are cleared: the release thunk must outlive
    them (it was freed with them: a segfault, exit status -11)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = f"""
import numpy as np, xarray as xr
import qlink.{kind}, qlink.xarray as xql
con = qlink.{kind}.connect()
xql.register(con, "a", xr.Dataset({{"v": (("x",), np.arange(3.0))}}))
assert con.execute("SELECT sum(v) FROM a").fetchall() == [(3.0,)]
xql.unregister(con, "a")
try:
    print(con.execute("SELECT sum(v) FROM a").fetchall())
except Exception as e:
    print(type(e).__name__)
"""
    python = str(Path(__file__).resolve().parents[3] / "python")
    env = {**os.environ, "PYTHONPATH": python + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    # SQLite's table already holds its provider; DuckDB's view opens the scan again
    assert done.stdout == ("[(3.0,)]\n" if kind == "sqlite" else "InvalidInputException\n")


def test_numpy_string_dtype(engine, tmp_path):
    """xarray opens a Zarr store's variable-length strings as numpy's
    StringDType (kind "T"), which register refused ("malformed dtype
    'StringDType()'"): they are read whole as text, missing ones as NULL."""
    words = np.array(["a", "", "héllo", None], dtype=np.dtypes.StringDType(na_object=None))
    ds = xr.Dataset({"s": ("i", words), "v": ("i", [1.0, 2.0, 3.0, 4.0])}, coords={"i": np.arange(4)})
    xql.register(engine.con, "t", ds)
    assert engine.rows("SELECT i, s, v FROM t ORDER BY i") == [(0, "a", 1.0), (1, "", 2.0), (2, "héllo", 3.0), (3, None, 4.0)]
    xr.Dataset({"s": ("i", np.array(["x", "yy", "zzz"], dtype=object))}).to_zarr(tmp_path / "s.zarr", zarr_format=3)
    opened = xr.open_zarr(tmp_path / "s.zarr")
    assert opened.s.dtype.kind == "T"
    xql.register(engine.con, "z", opened)
    assert engine.rows("SELECT i, s FROM z WHERE s > 'x' ORDER BY i") == [(1, "yy"), (2, "zzz")]
