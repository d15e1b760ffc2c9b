# SPDX-License-Identifier: Apache-2.0
"""The zarr route of qlink.xarray: a Dataset xarray opened from a local Zarr
store, unchanged, is served by qlink_zarr (``nan_fill=all``, or ``nan`` when asked) with the very
rows, column names and types the ndarray route serves for it; anything
changed since it was opened goes to qlink_ndarray."""

from __future__ import annotations

import math
import struct
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import qlink.xarray as xql

NAN = float("nan")


def _store(path, fmt: int):
    """A store as xarray writes it: dims time x lat x lon (lat descending, a
    dimension `level` without a coordinate), a non-dimension coordinate,
    a scalar coordinate, NaNs (float64 and float32, -0.0 and inf), NaT in
    a time variable, ints, bools, strings, chunks that cut every dimension."""
    rng = np.random.default_rng(17)
    air = rng.normal(280, 5, size=(8, 5, 6))
    air[1, 2, 3] = air[7, 0, 0] = NAN
    air[0, 0, 0], air[0, 0, 1] = -0.0, math.inf
    elev = rng.normal(size=(5, 6)).astype(np.float32)
    elev[4, 5] = NAN
    obs = pd.date_range("2020-01-01", periods=8, freq="6h").values.copy()
    obs[3] = np.datetime64("NaT")
    ds = xr.Dataset(
        {
            "air": (("time", "lat", "lon"), air, {"units": "K"}),
            "count": (("time", "lat", "lon"), rng.integers(-50, 50, (8, 5, 6)).astype(np.int32)),
            "elev": (("lat", "lon"), elev),
            "flag": (("time",), np.array([True, False, True, True, False, False, True, False])),
            "label": (("time",), np.array(["a", "", "ccc", "d", "ee", "f", "g", "hh"])),
            "obs": (("time",), obs),
            "profile": (("time", "level"), rng.normal(size=(8, 3))),
        },
        coords={
            "time": pd.date_range("2019-12-31", periods=8, freq="D"),
            "lat": np.array([40.0, 30.0, 20.0, 10.0, 0.0]),
            "lon": np.arange(6) * 2.5,
            "station": (("lat", "lon"), np.arange(30).reshape(5, 6)),
            "height": 2.0,
        },
        attrs={"title": "route"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.chunk({"time": 3, "lat": 2, "lon": 4, "level": 2}).to_zarr(path, zarr_format=fmt, mode="w")
    return path


@pytest.fixture(params=[2, 3], ids=["v2", "v3"])
def store(request, tmp_path_factory):
    return str(_store(tmp_path_factory.mktemp("route") / "route.zarr", request.param))


def _open(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_zarr(path, **kwargs)


def _key(v):
    """Floats bit for bit (NaN equal to NaN, -0.0 unlike 0.0)."""
    if isinstance(v, float):
        return ("nan",) if v != v else ("f", struct.pack(">d", v).hex())
    return ("v", repr(v))


def _same_rows(a, b):
    assert [tuple(map(_key, r)) for r in a] == [tuple(map(_key, r)) for r in b]


def _types(engine, sql):
    if engine.kind == "duckdb":
        return [(d[0], str(d[1])) for d in engine.con.execute(sql).description]
    cur = engine.con.cursor()
    cur.execute(sql)
    return [d[0] for d in cur.getdescription()]


# (table, SQL over {t}); every query ordered, so rows compare in order
QUERIES = [
    ("time_lat_lon", "SELECT * FROM {t} ORDER BY time, lat, lon"),
    ("time_lat_lon", "SELECT lat, lon, station, height, air FROM {t} WHERE time = '2020-01-02' ORDER BY lat, lon"),
    ("time_lat_lon", "SELECT time, air FROM {t} WHERE lat BETWEEN 10 AND 30 AND lon IN (0, 5, 12.5) "
                     "ORDER BY time, lat, lon"),
    ("time_lat_lon", "SELECT lat, count(*) AS n, count(air) AS a, sum(count) AS c, min(air) AS lo FROM {t} "
                     "WHERE NOT isnan(air) GROUP BY lat ORDER BY lat"),
    ("time_lat_lon", "SELECT time, lat, lon FROM {t} WHERE isnan(air) OR air > 1e300 ORDER BY time, lat, lon"),
    ("time_lat_lon", "SELECT count(*) AS n FROM {t} WHERE time > '2020-01-03' AND lat < 25"),
    ("lat_lon", "SELECT * FROM {t} ORDER BY lat DESC, lon"),
    ("lat_lon", "SELECT lat, lon FROM {t} WHERE isnan(elev) ORDER BY lat, lon"),
    ("time", "SELECT * FROM {t} ORDER BY time"),
    ("time", "SELECT time, label FROM {t} WHERE obs IS NULL ORDER BY time"),
    ("time", "SELECT count(obs) AS n, min(obs) AS first, max(label) AS last FROM {t} WHERE flag"),
    ("time_level", "SELECT * FROM {t} WHERE level >= 1 ORDER BY time, level"),
]


def _sql(engine, sql, table, nan_fill="null"):
    if engine.kind == "sqlite" or nan_fill == "null":  # NaN cells are NULL
        sql = sql.replace("isnan(air)", "(air IS NULL)").replace("isnan(elev)", "(elev IS NULL)")
        sql = sql.replace("WHERE NOT (air IS NULL)", "WHERE air IS NOT NULL")
    if engine.kind == "sqlite":
        sql = sql.replace("'2020-01-02'", "'2020-01-02 00:00:00'").replace("'2020-01-03'", "'2020-01-03 00:00:00'")  # times as text
    return sql.format(t=table)


@pytest.mark.parametrize("nan_fill", ["null", "nan"])
@pytest.mark.parametrize("opener", ["open_zarr", "open_dataset"])
def test_unchanged_store_rows_identical_across_routes(engine, store, opener, nan_fill):
    ds = _open(store) if opener == "open_zarr" else xr.open_dataset(store, engine="zarr")
    xql.register(engine.con, "nd", ds, route="ndarray", nan_fill=nan_fill)
    xql.register(engine.con, "z", ds, nan_fill=nan_fill)
    assert xql.route_of(engine.con, "nd") == "ndarray"
    assert xql.route_of(engine.con, "z") == "zarr"
    for table, sql in QUERIES:
        a, b = _sql(engine, sql, f"nd.{table}", nan_fill), _sql(engine, sql, f"z.{table}", nan_fill)
        rows = engine.rows(a)
        assert rows, a
        _same_rows(engine.rows(b), rows)
        assert _types(engine, b) == _types(engine, a), sql
    # the zarr route never loaded the Dataset's lazy variables
    if opener == "open_dataset":
        assert not ds["air"].variable._in_memory


def test_zarr_route_values_are_the_datasets(engine, store):
    """Both routes against xarray's own values: NaN and NaT are NULL."""
    ds = _open(store)
    xql.register(engine.con, "z", ds, route="zarr")
    rows = engine.rows("SELECT air FROM z.time_lat_lon ORDER BY time, lat, lon")
    want = ds["air"].sortby(["time", "lat", "lon"]).values.reshape(-1)
    assert len(rows) == want.size == 240
    for (got,), w in zip(rows, want):
        if np.isnan(w):
            assert got is None
        else:
            assert _key(float(got)) == _key(float(w))
    nat = engine.rows("SELECT count(*) FROM z.time WHERE obs IS NULL")
    assert nat == [(1,)]


def test_table_names_and_single_table(engine, store):
    ds = _open(store)
    names = {("lat", "lon"): "static", ("time",): "series"}
    xql.register(engine.con, "nd", ds, table_names=names, route="ndarray")
    xql.register(engine.con, "z", ds, table_names=names)
    assert xql.route_of(engine.con, "z") == "zarr"
    for t in ("static", "series", "time_lat_lon"):
        _same_rows(engine.rows(f"SELECT * FROM z.{t} ORDER BY 1, 2"), engine.rows(f"SELECT * FROM nd.{t} ORDER BY 1, 2"))
    # one dimension group: one table `name`
    path = store.replace("route.zarr", "single.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds[["air", "count"]].drop_vars("station").drop_encoding().chunk({"time": 4}).to_zarr(path, mode="w")
    single = _open(path)
    xql.register(engine.con, "one_nd", single, route="ndarray")
    xql.register(engine.con, "one_z", single)
    assert xql.route_of(engine.con, "one_z") == "zarr"
    sql = "SELECT * FROM {} ORDER BY time, lat, lon"
    _same_rows(engine.rows(sql.format("one_z")), engine.rows(sql.format("one_nd")))
    assert engine.columns("one_z") == engine.columns("one_nd") == ["time", "lat", "lon", "height", "air", "count"]


def _changed(ds, path):
    yield "reversed", ds.isel(lat=slice(None, None, -1))
    yield "sliced", ds.isel(time=slice(1, 5))
    yield "positions reversed", ds.isel(level=slice(None, None, -1))
    yield "subset", ds[["air", "elev"]]
    yield "dropped", ds.drop_vars("label")
    yield "renamed", ds.rename({"air": "t2m"})
    yield "arithmetic", ds.assign(air=ds["air"] + 1)
    yield "loaded", ds.load()
    yield "rechunked", ds.chunk({"time": 4})
    yield "coordinate", ds.assign_coords(lat=ds["lat"] + 0.5)
    yield "attrs", ds.assign(air=ds["air"].assign_attrs(units="degC"))
    yield "not decoded", _open(path, decode_times=False)
    yield "not masked", _open(path, mask_and_scale=False)
    yield "in memory", xr.Dataset({"air": ds["air"].load()})
    yield "0-d variable", ds.assign(offset=xr.DataArray(1.5))


def test_changed_datasets_take_the_ndarray_route(engine, store):
    base = _open(store)
    for why, ds in _changed(base, store):
        xql.register(engine.con, "c", ds)
        assert xql.route_of(engine.con, "c") == "ndarray", why
        with pytest.raises(xql.NotRoutable):
            xql.zarr_route(ds)
    # chunks= asks for blocks of the ndarray route
    xql.register(engine.con, "c", base, chunks={"time": 2})
    assert xql.route_of(engine.con, "c") == "ndarray"


def test_changed_dataset_rows_stay_right(engine, store):
    """A reversed selection routed to ndarray serves the selection, not the store."""
    ds = _open(store).isel(lat=slice(None, None, -1))
    xql.register(engine.con, "r", ds)
    lats = [r[0] for r in engine.rows("SELECT DISTINCT lat FROM r.lat_lon")]
    assert sorted(lats) == [0.0, 10.0, 20.0, 30.0, 40.0]
    first = engine.rows("SELECT elev FROM r.lat_lon WHERE lat = 0 AND lon = 0")
    assert first == [(pytest.approx(float(ds["elev"].sel(lat=0.0, lon=0.0)), abs=1e-6),)]


def test_route_keyword_errors(engine, store):
    ds = _open(store)
    with pytest.raises(xql.NotRoutable, match=r"variable 'air' is not the store's array as opened"):
        xql.register(engine.con, "x", ds.isel(lat=slice(None, None, -1)), route="zarr")
    with pytest.raises(xql.NotRoutable, match=r"names no source"):
        xql.register(engine.con, "x", ds.load().copy(deep=True).drop_encoding(), route="zarr")
    with pytest.raises(ValueError, match=r"route='zarr' reads the store's own chunks"):
        xql.register(engine.con, "x", ds, route="zarr", chunks={"time": 2})
    with pytest.raises(ValueError, match=r"route must be one of 'auto', 'ndarray', 'zarr', not 'fast'"):
        xql.register(engine.con, "x", ds, route="fast")
    assert xql.route_of(engine.con, "x") is None


def test_store_changed_on_disk_takes_the_ndarray_route(engine, store):
    """The store rewritten after opening (new coordinates, new time encoding)
    no longer matches the Dataset."""
    ds = _open(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rewritten = _open(store).load().drop_encoding().assign_coords(lon=np.arange(6) * 3.0)
        rewritten.to_zarr(store, mode="w")
    with pytest.raises(xql.NotRoutable, match=r"differs from the store's"):
        xql.zarr_route(ds)
    xql.register(engine.con, "w", ds)
    assert xql.route_of(engine.con, "w") == "ndarray"
