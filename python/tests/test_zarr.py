# SPDX-License-Identifier: Apache-2.0
"""qlink_zarr through Session.register_zarr / qlink.register_zarr, on stores
written by xarray, compared with xarray's own to_dataframe."""

import pytest

import qlink




def test_register_zarr_tables_equal_xarray(store):
    ds, path = store
    s = qlink.Session()
    names = s.register_zarr(str(path))
    assert sorted(names) == ["weather.lat", "weather.time_lat"]
    got = s.sql('SELECT time, lat, temp, "count" FROM weather.time_lat ORDER BY time, lat').to_pandas()
    want = ds[["temp", "count"]].to_dataframe().reset_index().sort_values(["time", "lat"]).reset_index(drop=True)
    assert list(got.columns) == ["time", "lat", "temp", "count"]
    assert got["time"].tolist() == want["time"].tolist()
    assert got["lat"].tolist() == want["lat"].tolist()
    assert got["temp"].tolist() == want["temp"].tolist()
    assert got["count"].tolist() == want["count"].tolist()
    lat = s.sql("SELECT lat, elev FROM weather.lat ORDER BY lat").to_pydict()
    assert lat == {"lat": [-1.5, 0.0, 1.5, 3.0], "elev": [10, 20, 30, 40]}


def test_zarr_filter_and_aggregate(store):
    ds, path = store
    s = qlink.Session()
    qlink.register_zarr(s, str(path), name="w")
    got = s.sql("SELECT time, sum(temp) AS s FROM w.time_lat WHERE time >= 3 GROUP BY time ORDER BY time").to_pydict()
    want = ds["temp"].sel(time=[3, 4]).sum("lat").values.tolist()
    assert got == {"time": [3, 4], "s": want}


def test_zarr_through_a_registered_object_store(store):
    _, path = store
    s = qlink.Session()
    s.register_object_store("stores://local", root=str(path.parent))
    names = s.register_zarr("stores://local/weather.zarr", name="remote")
    assert sorted(names) == ["remote.lat", "remote.time_lat"]
    assert s.sql("SELECT count(*) AS n FROM remote.time_lat").to_pydict() == {"n": [20]}


def test_zarr_helper_for_datafusion_python(store):
    import datafusion

    ds, path = store
    z = qlink.zarr(str(path))
    assert z.tables == ["lat", "time_lat"]
    ctx = datafusion.SessionContext()
    assert z.register(ctx, prefix="w_") == ["w_lat", "w_time_lat"]
    got = ctx.sql('SELECT time, lat, temp FROM w_time_lat WHERE lat > 0 ORDER BY time, lat').to_pandas()
    want = ds["temp"].where(ds["lat"] > 0, drop=True).to_dataframe().reset_index().sort_values(["time", "lat"])
    assert got["time"].tolist() == want["time"].tolist()
    assert got["lat"].tolist() == want["lat"].tolist()
    assert got["temp"].tolist() == want["temp"].tolist()
    assert z.table("lat").to_pydict() == {"lat": [-1.5, 0.0, 1.5, 3.0], "elev": [10, 20, 30, 40]}
    assert z.reader("time_lat").read_all().num_rows == 20
    with pytest.raises(qlink.PlanError, match="has 2 tables"):
        z.table()
    with pytest.raises(qlink.PlanError, match="no table 'nope'"):
        z.table("nope")


def test_zarr_errors(tmp_path):
    s = qlink.Session()
    with pytest.raises(qlink.QlinkError):
        s.register_zarr(str(tmp_path / "missing.zarr"))


@pytest.mark.parametrize("dirname", ["pü", "a%b", "with space", "x#y"])
def test_store_path_with_unusual_characters(store, tmp_path, dirname):
    # Object paths cross as plain strings: a non-ASCII or '%' directory name
    # must reach the file system as written (not percent-encoded twice).
    ds, path = store
    import shutil

    target = tmp_path / dirname / "weather.zarr"
    shutil.copytree(path, target)
    s = qlink.Session()
    s.register_zarr(str(target), name="w")
    got = s.sql("SELECT count(*) AS n, sum(count) AS c FROM w.time_lat").to_pydict()
    assert got == {"n": [20], "c": [int(ds["count"].sum())]}


def test_second_store_with_the_same_table_names(store, tmp_path):
    # A second store written alike: datafusion-python raised a plain
    # Exception ("The table lat already exists") after registering nothing
    # or part of it; qlink.Session silently replaced the first store's schema.
    import shutil

    import datafusion

    _, path = store
    other = tmp_path / "again" / "weather.zarr"
    shutil.copytree(path, other)
    ctx = datafusion.SessionContext()
    first = qlink.zarr(str(path))
    assert first.register(ctx) == ["lat", "time_lat"]
    second = qlink.zarr(str(other))
    with pytest.raises(qlink.TableExistsError) as e:
        second.register(ctx)
    assert str(e.value) == (f"the context already has a table 'lat': table 'lat' of Zarr store {other} cannot be "
                            "registered under that name; pass a prefix (register(ctx, prefix=...))")
    assert isinstance(e.value, qlink.PlanError)
    assert second.register(ctx, prefix="b_") == ["b_lat", "b_time_lat"]
    assert ctx.sql("SELECT count(*) AS n FROM b_time_lat").to_pydict() == {"n": [20]}

    s = qlink.Session()
    assert sorted(qlink.register_zarr(s, str(path))) == ["weather.lat", "weather.time_lat"]
    assert sorted(qlink.register_zarr(s, str(path))) == ["weather.lat", "weather.time_lat"]  # the same store again
    with pytest.raises(qlink.TableExistsError) as e:
        s.register_zarr(str(other))
    assert str(e.value) == (f"schema 'weather' already holds the tables of Zarr store {path.resolve()}: registering "
                            f"store {other.resolve()} under it would replace them; pass another name "
                            "(register_zarr(..., name=...))")
    assert sorted(s.register_zarr(str(other), name="weather_b")) == ["weather_b.lat", "weather_b.time_lat"]


def test_store_name_from_the_file_name(store, tmp_path):
    import shutil

    _, path = store
    odd = tmp_path / "Mine.v3.zarr"
    shutil.copytree(path, odd)
    s = qlink.Session()
    assert sorted(s.register_zarr(str(odd))) == ["mine_v3.lat", "mine_v3.time_lat"]


def test_zarr_ordering_lets_sorts_and_windows_skip_the_sort(tmp_path):
    # chunked along time only: each partition's rows are sorted by (time ASC,
    # lat DESC); the scan says so, so DataFusion merges instead of sorting,
    # and the answers equal pandas' sorted frame
    import numpy as np
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(7)
    ds = xr.Dataset({"temp": (("time", "lat"), rng.normal(size=(12, 4)).round(3))},
                    coords={"time": pd.date_range("2021-01-01", periods=12, freq="h"),
                            "lat": np.array([50.0, 40.0, 30.0, 20.0])})
    path = tmp_path / "order.zarr"
    ds.to_zarr(path, zarr_format=3, encoding={"temp": {"chunks": (1, 4)}})
    df = ds.to_dataframe().reset_index()
    s = qlink.Session()
    # one block per chunk (block_rows=1), so the two partitions hold several blocks each
    s.register_schema("o", qlink.plugin_path("qlink_zarr"), "store", path=str(path), block_rows="1")

    ordered = "SELECT time, lat, temp FROM o.time_lat ORDER BY time, lat DESC"
    plan = "\n".join(s.sql("EXPLAIN " + ordered).to_pydict()["plan"])
    assert "SortExec" not in plan and "SortPreservingMergeExec" in plan
    want = df.sort_values(["time", "lat"], ascending=[True, False]).reset_index(drop=True)
    assert s.sql(ordered).to_pydict()["temp"] == want["temp"].tolist()

    top = s.sql("SELECT temp FROM o.time_lat ORDER BY time DESC, lat LIMIT 7").to_pydict()["temp"]
    assert top == df.sort_values(["time", "lat"], ascending=[False, True])["temp"].head(7).tolist()

    lagged = s.sql("SELECT temp - LAG(temp) OVER (ORDER BY time, lat DESC) AS d FROM o.time_lat "
                   "ORDER BY time, lat DESC").to_pydict()["d"]
    diffs = (want["temp"] - want["temp"].shift(1)).tolist()
    assert lagged[0] is None and [round(x, 9) for x in lagged[1:]] == [round(x, 9) for x in diffs[1:]]
