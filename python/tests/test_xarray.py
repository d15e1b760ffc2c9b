# SPDX-License-Identifier: Apache-2.0
"""qlink.xarray's DataFusion route (the installed wheel): Context.from_dataset
named as xarray-sql 0.6 names tables, sql() with to_pandas /
to_arrow_table / to_dataset, register() on a plain datafusion-python
SessionContext, dimension filters pruning blocks, lazy (netCDF) and dask
Datasets, a failing loader's error, the GIL left free while an
in-memory Dataset is scanned, and the zarr route (an unchanged Dataset
opened from a Zarr store served by qlink_zarr with the same rows)."""

from __future__ import annotations

import ctypes
import re
import threading
import time

import datafusion
import numpy as np
import pandas as pd
import pytest
import xarray as xr

import qlink
import qlink.xarray as xql


@pytest.fixture()
def air():
    rng = np.random.default_rng(3)
    data = rng.normal(280, 5, size=(8, 4, 5)).astype(np.float32)
    data[2, 1, 3] = np.nan
    return xr.Dataset(
        {"air": (("time", "lat", "lon"), data, {"units": "K"})},
        coords={"time": pd.date_range("2013-01-01", periods=8, freq="6h"),
                "lat": np.array([75.0, 72.5, 70.0, 67.5]), "lon": np.arange(200.0, 212.5, 2.5)},
        attrs={"title": "t"},
    )


def test_context_is_a_session_context_and_names_tables(air):
    ctx = xql.Context()
    assert isinstance(ctx, datafusion.SessionContext)
    assert ctx.from_dataset("air", air, chunks={"time": 2}) is ctx
    df = ctx.sql("SELECT * FROM air ORDER BY time, lat DESC, lon").to_pandas()
    want = air.to_dataframe().reset_index().sort_values(["time", "lat", "lon"], ascending=[True, False, True])
    assert list(df.columns) == ["time", "lat", "lon", "air"]
    np.testing.assert_array_equal(df["air"].to_numpy(), want["air"].to_numpy())
    assert (df["time"].to_numpy() == want["time"].to_numpy()).all()
    mixed = air.assign(elev=(("lat", "lon"), np.arange(20.0).reshape(4, 5)), k=((), 7))
    ctx.from_dataset("era5", mixed, table_names={("lat", "lon"): "static"})
    assert ctx.sql("SELECT count(*) AS n FROM era5.time_lat_lon").to_pandas()["n"][0] == 160
    assert ctx.sql("SELECT sum(elev) AS s FROM era5.static").to_pandas()["s"][0] == 190.0
    assert ctx.sql("SELECT k FROM era5.scalar").to_pandas()["k"][0] == 7


def test_sql_results_round_trip(air):
    ctx = xql.Context()
    ctx.from_dataset("air", air)
    out = ctx.sql("SELECT time, lat, lon, air FROM air").to_dataset(dims=["time", "lat", "lon"])
    xr.testing.assert_identical(out, air)  # the template's order, attributes and dtypes
    mean = ctx.sql("SELECT lat, avg(air) AS air FROM air GROUP BY lat").to_dataset(dims=["lat"])
    # NaN is NULL, so avg skips it as xarray's mean does
    np.testing.assert_allclose(mean.air.values, air.air.mean(["time", "lon"]).values, rtol=1e-6)
    kept = xql.Context()
    kept.from_dataset("air", air, nan_fill="nan")  # NaN a value: numpy's mean
    mean = kept.sql("SELECT lat, avg(air) AS air FROM air GROUP BY lat").to_dataset(dims=["lat"])
    np.testing.assert_allclose(mean.air.values, air.air.mean(["time", "lon"], skipna=False).values, rtol=1e-6)
    table = ctx.sql("SELECT count(*) AS n FROM air").to_arrow_table()
    assert table.column("n").to_pylist() == [160]
    again = xql.to_dataset(ctx.sql("SELECT * FROM air").to_arrow_table(), template=air)
    xr.testing.assert_identical(again, air)


def test_to_dataset_orders_coordinates_as_the_scanned_table(air):
    # a template of another registered table gives metadata, never the scanned
    # table's coordinate order: its descending lat stays descending
    other = air.isel(lat=slice(0, 2))
    ctx = xql.Context()
    ctx.from_dataset("air", air)
    ctx.from_dataset("other", other)
    out = ctx.sql("SELECT * FROM air").to_dataset(dims=["time", "lat", "lon"], template=other)
    np.testing.assert_array_equal(out["lat"].values, air["lat"].values)
    np.testing.assert_array_equal(out["air"].transpose("time", "lat", "lon").values, air["air"].values)
    # two registered tables scanned: the template's order where it covers the result
    both = ctx.sql("SELECT a.time, a.lat, a.lon, a.air FROM air a JOIN other o "
                   "ON a.time = o.time AND a.lat = o.lat AND a.lon = o.lon")
    np.testing.assert_array_equal(both.to_dataset(dims=["time", "lat", "lon"], template=other)["lat"].values,
                                  other["lat"].values)


def test_register_on_a_plain_session_context(air):
    ctx = datafusion.SessionContext()
    xql.register(ctx, "air", air)
    assert ctx.sql("SELECT count(*) AS n FROM air").to_pandas()["n"][0] == 160
    xql.register(ctx, "air", air.isel(time=slice(0, 2)))  # the name again replaces it
    assert ctx.sql("SELECT count(*) AS n FROM air").to_pandas()["n"][0] == 40


def test_dimension_filters_prune_blocks(air):
    ctx = xql.Context()
    ctx.from_dataset("air", air, chunks={"time": 2})
    plan = ctx.sql("EXPLAIN SELECT avg(air) FROM air WHERE time >= '2013-01-02T12:00:00' AND lat < 71").to_pandas()
    text = "\n".join(plan["plan"])
    # both filters pushed down as exact (full_filters, no FilterExec left above the scan)
    assert "full_filters=[air.time >=" in text and "air.lat < " in text and "FilterExec" not in text, text
    assert "NdarrayScanExec" in text, text
    got = ctx.sql("SELECT count(*) AS n FROM air WHERE time >= '2013-01-02T12:00:00' AND lat < 71").to_pandas()
    assert got["n"][0] == 2 * 2 * 5


def test_lazy_and_dask_datasets(air, tmp_path):
    air.to_netcdf(tmp_path / "a.nc")
    with xr.open_dataset(tmp_path / "a.nc") as lazy:
        ctx = xql.Context()
        ctx.from_dataset("air", lazy, chunks={"time": 2})
        assert not lazy.air.variable._in_memory
        s = ctx.sql("SELECT sum(air) AS s, count(air) AS n FROM air WHERE lon > 204").to_pandas()
        sub = air.air.where(air.lon > 204, drop=True)
        assert s["n"][0] == int(sub.count()) == sub.size - 1  # the NaN is NULL: count skips it
        ctx.from_dataset("d", air.chunk({"time": 3}))
        d = ctx.sql("SELECT max(lat) AS m, count(*) AS n FROM d").to_pandas()
        assert d["m"][0] == 75.0 and d["n"][0] == 160


def test_loader_failure_is_the_query_error():
    class Failing(xr.backends.BackendArray):
        shape, dtype = (6,), np.dtype("f8")

        def __getitem__(self, key):
            raise OSError("disk gone")

    ds = xr.Dataset({"v": xr.Variable(("i",), xr.core.indexing.LazilyIndexedArray(Failing()))})
    ctx = xql.Context()
    ctx.from_dataset("bad", ds)
    with pytest.raises(Exception, match="variable 'v': loading a block failed: OSError: disk gone"):
        ctx.sql("SELECT sum(v) FROM bad").to_pandas()


def _scan_elapsed_ms(text: str) -> float:
    m = re.search(r"NdarrayScanExec.*?elapsed_compute=([0-9.]+)(ns|µs|us|ms|s)\b", text, re.S)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def test_gil_is_free_while_scanning_memory(tmp_path):
    """While this thread holds the GIL (a libc sleep through ctypes.PyDLL),
    an in-memory scan runs to its end (its elapsed_compute stays small),
    where a lazy variable's loader waits for the GIL (elapsed_compute
    spans the hold)."""
    n = 4_000_000
    mem = xr.Dataset({"v": ("i", np.arange(n, dtype=np.float64))})
    mem.to_netcdf(tmp_path / "v.nc")
    libc = ctypes.PyDLL(None)
    libc.usleep.argtypes = [ctypes.c_uint]

    def held(ctx):
        out = {}
        started = threading.Event()

        def run():
            started.set()
            out["plan"] = ctx.sql("EXPLAIN ANALYZE SELECT sum(v) FROM t").to_pandas()

        t = threading.Thread(target=run)
        t.start()
        started.wait()
        time.sleep(0.02)
        libc.usleep(1_500_000)
        t.join()
        return _scan_elapsed_ms("\n".join(out["plan"]["plan"]))

    ctx = xql.Context()
    ctx.from_dataset("t", mem)
    assert held(ctx) < 700
    with xr.open_dataset(tmp_path / "v.nc") as lazy:
        ctx2 = xql.Context()
        ctx2.from_dataset("t", lazy)
        assert held(ctx2) > 1000


def test_cftime_function_in_a_context():
    times = xr.date_range("2000-02-28", periods=6, freq="D", calendar="360_day", use_cftime=True)
    ds = xr.Dataset({"v": ("time", np.arange(6.0))}, coords={"time": times})
    ctx = xql.Context()
    ctx.from_dataset("c", ds)
    got = ctx.sql("SELECT time FROM c WHERE time > cftime('2000-02-30') ORDER BY time").to_pandas()
    assert list(got["time"]) == ["2000-03-01T00:00:00", "2000-03-02T00:00:00", "2000-03-03T00:00:00"]
    back = ctx.sql("SELECT time, v FROM c").to_dataset()
    assert back.time.values[2] == ds.time.values[2] and back.time.values[2].day == 30


def test_session_register_dataset(air):
    s = qlink.Session()
    assert s.register_dataset("air", air) is s
    assert s.sql("SELECT count(*) AS n FROM air").column("n").to_pylist() == [160]
    mixed = air.assign(elev=(("lat", "lon"), np.arange(20.0).reshape(4, 5)))
    s.register_dataset("era5", mixed, table_names={("lat", "lon"): "static"})
    assert s.sql("SELECT sum(elev) AS e FROM era5.static").column("e").to_pylist() == [190.0]
    # air[2, 1, 3] is NaN, served as NULL as xarray-sql serves it
    assert s.sql("SELECT count(air) AS n FROM era5.time_lat_lon").column("n").to_pylist() == [159]


def test_the_plugin_ships_with_the_package():
    assert qlink.plugin_path("qlink_ndarray").endswith("qlink_ndarray.so")


def _store(path, fmt):
    """A store as xarray writes it: NaN (float64, float32), -0.0, NaT, ints,
    strings, a non-dimension coordinate, a dimension without coordinate,
    chunks cutting every dimension."""
    import warnings

    rng = np.random.default_rng(5)
    air = rng.normal(280, 5, size=(6, 4, 5))
    air[1, 2, 3] = np.nan
    air[0, 0, 0] = -0.0
    elev = rng.normal(size=(4, 5)).astype(np.float32)
    elev[3, 4] = np.nan
    obs = pd.date_range("2020-01-01", periods=6, freq="D").values.copy()
    obs[2] = np.datetime64("NaT")
    ds = xr.Dataset(
        {"air": (("time", "lat", "lon"), air), "count": (("time", "lat", "lon"), rng.integers(0, 9, (6, 4, 5))),
         "elev": (("lat", "lon"), elev), "label": (("time",), np.array(["a", "", "c", "d", "e", "f"])),
         "obs": (("time",), obs), "profile": (("time", "level"), rng.normal(size=(6, 3)))},
        coords={"time": pd.date_range("2019-12-31", periods=6, freq="D"), "lat": [30.0, 20.0, 10.0, 0.0],
                "lon": np.arange(5) * 2.5, "station": (("lat", "lon"), np.arange(20).reshape(4, 5))},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.chunk({"time": 2, "lat": 3, "lon": 2, "level": 2}).to_zarr(path, zarr_format=fmt, mode="w")
        return xr.open_zarr(path)


def _bits(table):
    """Rows of an Arrow table, floats bit for bit (NaN equal to NaN)."""
    import struct

    def key(v):
        if isinstance(v, float):
            return "nan" if v != v else struct.pack(">d", v).hex()
        return repr(v)

    return [tuple(key(v) for v in row.values()) for row in table.to_pylist()]


ROUTE_QUERIES = [
    "SELECT * FROM {s}.time_lat_lon ORDER BY time, lat, lon",
    "SELECT time, lat, air FROM {s}.time_lat_lon WHERE lat BETWEEN 5 AND 25 AND time >= '2020-01-02' "
    "ORDER BY time, lat, lon",
    "SELECT lat, count(*) AS n, sum(count) AS c, min(air) AS lo, max(air) AS hi FROM {s}.time_lat_lon "
    "WHERE air IS NOT NULL GROUP BY lat ORDER BY lat",
    "SELECT time, lat, lon FROM {s}.time_lat_lon WHERE air IS NULL ORDER BY time",
    "SELECT * FROM {s}.lat_lon ORDER BY lat, lon",
    "SELECT * FROM {s}.time ORDER BY time",
    "SELECT count(obs) AS n, min(obs) AS first FROM {s}.time WHERE label <> ''",
    "SELECT * FROM {s}.time_level WHERE level = 1 ORDER BY time",
]


@pytest.mark.parametrize("fmt", [2, 3])
def test_zarr_route_in_datafusion(tmp_path, fmt):
    ds = _store(str(tmp_path / "s.zarr"), fmt)
    ctx = xql.Context()
    ctx.from_dataset("nd", ds, route="ndarray")
    ctx.from_dataset("z", ds)
    assert xql.route_of(ctx, "nd") == "ndarray" and xql.route_of(ctx, "z") == "zarr"
    for sql in ROUTE_QUERIES:
        a = ctx.sql(sql.format(s="nd")).to_arrow_table()
        b = ctx.sql(sql.format(s="z")).to_arrow_table()
        assert a.num_rows > 0, sql
        assert b.schema.names == a.schema.names and b.schema.types == a.schema.types, sql
        assert _bits(b) == _bits(a), sql
    plan = "\n".join(ctx.sql("EXPLAIN SELECT avg(air) FROM z.time_lat_lon WHERE lat < 15").to_pandas()["plan"])
    assert "ZarrScanExec" in plan and "NdarrayScanExec" not in plan, plan
    # the round trip restores the Dataset from either route
    back = ctx.sql("SELECT time, lat, lon, air FROM z.time_lat_lon").to_dataset(dims=["time", "lat", "lon"],
                                                                                  template=ds)
    np.testing.assert_array_equal(back["air"].transpose("time", "lat", "lon").values, ds["air"].values)
    np.testing.assert_array_equal(back["lat"].values, ds["lat"].values)
    # a selection is served as selected, by qlink_ndarray
    ctx.from_dataset("sel", ds.isel(lat=slice(None, None, -1)))
    assert xql.route_of(ctx, "sel") == "ndarray"
    with pytest.raises(xql.NotRoutable, match="not the store's array as opened"):
        ctx.from_dataset("sel", ds.isel(lat=slice(None, None, -1)), route="zarr")


def test_zarr_route_on_a_session_and_a_plain_context(tmp_path):
    ds = _store(str(tmp_path / "s.zarr"), 3)
    s = qlink.Session()
    s.register_dataset("nd", ds, route="ndarray")
    s.register_dataset("z", ds, table_names={("lat", "lon"): "static"})
    s.register_dataset("nd2", ds, table_names={("lat", "lon"): "static"}, route="ndarray")
    assert xql.route_of(s, "z") == "zarr"
    for table in ("time_lat_lon", "time"):
        sql = f"SELECT * FROM {{}}.{table} ORDER BY 1, 2"
        assert _bits(s.sql(sql.format("z"))) == _bits(s.sql(sql.format("nd")))
    assert _bits(s.sql("SELECT * FROM z.static ORDER BY 1, 2")) == _bits(s.sql("SELECT * FROM nd2.static ORDER BY 1, 2"))
    ctx = datafusion.SessionContext()
    one = ds[["air"]].drop_vars("station")
    # a subset is a change: ndarray; the whole store is served from it
    xql.register(ctx, "one", one)
    assert xql.route_of(ctx, "one") == "ndarray"
    xql.register(ctx, "full", ds)
    assert xql.route_of(ctx, "full") == "zarr"
    n = ctx.sql("SELECT count(*) AS n, count(air) AS a FROM full.time_lat_lon").to_pandas()
    assert n["n"][0] == 120 and n["a"][0] == 119  # NaN is NULL on both routes
