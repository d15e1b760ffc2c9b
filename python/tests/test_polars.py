# SPDX-License-Identifier: Apache-2.0
"""qlink.polars (plugin tables as Polars LazyFrames) and qlink.xarray's
Polars functions: values exact, against rows built independently here;
what reaches the plugin read from the statement each collect logs."""

import datetime
import gc
import logging
import threading

import numpy as np
import pandas as pd
import pytest
import xarray as xr

pl = pytest.importorskip("polars")

import qlink  # noqa: E402
import qlink.polars as qpl  # noqa: E402
import qlink.xarray as xql  # noqa: E402

from conftest import series_table  # noqa: E402

SERIES = "qlink_sample/series?start=-5&stop=40&partitions=3"


def series_rows(start=-5, stop=40):
    return [(v, v * v, "even" if v % 2 == 0 else "odd") for v in range(start, stop)]


@pytest.fixture()
def statements(caplog):
    """The SQL each collect ran, in order."""
    caplog.set_level(logging.DEBUG, logger="qlink.polars")

    def read():
        return [r.getMessage() for r in caplog.records if r.name == "qlink.polars"]

    return read


@pytest.fixture(scope="module")
def series():
    return qpl.scan(SERIES)


# ---- the sample plugin: schema, projection, predicates, limits


def test_schema_and_all_rows(series):
    assert series.collect_schema() == pl.Schema({"value": pl.Int64, "square": pl.Int64, "parity": pl.String})
    assert sorted(series.collect().rows()) == series_rows()


def test_projection_reaches_the_plugin(series, statements):
    assert sorted(series.select("parity", "value").collect().rows()) == sorted((p, v) for v, _, p in series_rows())
    sql = statements()[-1]  # Polars names the columns in the table's order
    assert sql.startswith('SELECT "value", "parity" FROM "qlink_polars_') and "WHERE" not in sql


@pytest.mark.parametrize("expr, keep, where", [
    (pl.col("value") == 7, lambda v: v == 7, "\"value\" = arrow_cast(7, 'Int64')"),
    (pl.col("value") != 7, lambda v: v != 7, "\"value\" <> arrow_cast(7, 'Int64')"),
    (pl.col("value") < 0, lambda v: v < 0, "\"value\" < arrow_cast(0, 'Int64')"),
    (pl.col("value") <= 0, lambda v: v <= 0, "\"value\" <= arrow_cast(0, 'Int64')"),
    (pl.col("value") > 35, lambda v: v > 35, "\"value\" > arrow_cast(35, 'Int64')"),
    (pl.col("value") >= 35, lambda v: v >= 35, "\"value\" >= arrow_cast(35, 'Int64')"),
    (pl.lit(35) < pl.col("value"), lambda v: v > 35, "\"value\" > arrow_cast(35, 'Int64')"),
    (pl.col("value").is_between(3, 6), lambda v: 3 <= v <= 6,
     "\"value\" BETWEEN arrow_cast(3, 'Int64') AND arrow_cast(6, 'Int64')"),
    (pl.col("value").is_between(3, 6, closed="left"), lambda v: 3 <= v < 6,
     "(\"value\" >= arrow_cast(3, 'Int64') AND \"value\" < arrow_cast(6, 'Int64'))"),
    (pl.col("value").is_between(3, 6, closed="right"), lambda v: 3 < v <= 6,
     "(\"value\" > arrow_cast(3, 'Int64') AND \"value\" <= arrow_cast(6, 'Int64'))"),
    (pl.col("value").is_between(3, 6, closed="none"), lambda v: 3 < v < 6,
     "(\"value\" > arrow_cast(3, 'Int64') AND \"value\" < arrow_cast(6, 'Int64'))"),
    (pl.col("value").is_in([-5, 4, 99]), lambda v: v in (-5, 4, 99),
     "\"value\" IN (arrow_cast(-5, 'Int64'), arrow_cast(4, 'Int64'), arrow_cast(99, 'Int64'))"),
    (~pl.col("value").is_in([1, 2]), lambda v: v not in (1, 2),
     "(NOT \"value\" IN (arrow_cast(1, 'Int64'), arrow_cast(2, 'Int64')))"),
    ((pl.col("value") < -3) | (pl.col("value") > 37), lambda v: v < -3 or v > 37,
     "(\"value\" < arrow_cast(-3, 'Int64') OR \"value\" > arrow_cast(37, 'Int64'))"),
    ((pl.col("parity") == "odd") & (pl.col("value") > 30), lambda v: v % 2 and v > 30,
     "\"parity\" = 'odd' AND \"value\" > arrow_cast(30, 'Int64')"),
    (pl.col("parity").is_in(["even"]) & pl.col("value").is_between(0, 4), lambda v: v % 2 == 0 and 0 <= v <= 4,
     "\"parity\" IN ('even') AND \"value\" BETWEEN arrow_cast(0, 'Int64') AND arrow_cast(4, 'Int64')"),
])
def test_each_predicate_kind(series, statements, expr, keep, where):
    got = sorted(series.filter(expr).collect().rows())
    assert got == [r for r in series_rows() if keep(r[0])]
    assert statements()[-1].endswith(f" WHERE {where}")


def test_untranslated_conjuncts_run_in_polars(series, statements):
    """Arithmetic stays in Polars; the comparison beside it still reaches
    the plugin, and both hold in the answer."""
    got = sorted(series.filter((pl.col("value") > 10) & (pl.col("square") % 7 == 1)).collect().rows())
    assert got == [r for r in series_rows() if r[0] > 10 and r[1] % 7 == 1]
    assert statements()[-1].endswith(" WHERE \"value\" > arrow_cast(10, 'Int64')")
    got = series.filter((pl.col("value") + 1) * 2 == 10).select("value").collect().rows()
    assert got == [(4,)]
    assert "WHERE" not in statements()[-1]


@pytest.mark.parametrize("engine", ["in-memory", "streaming"])
def test_row_limit(series, statements, engine):
    got = series.head(4).collect(engine=engine)
    assert got.height == 4 and set(got.rows()) <= set(series_rows())
    assert statements()[-1].endswith(" LIMIT 4")
    # a limit after a filter Polars keeps for itself or pushes with it: 3 rows of the filter, either way
    got = series.filter(pl.col("value") > 30).head(3).collect(engine=engine)
    assert got.height == 3 and all(r[0] > 30 for r in got.rows())
    got = series.filter(pl.col("square") % 2 == 1).head(2).collect(engine=engine)
    assert got.height == 2 and all(r[0] % 2 == 1 for r in got.rows())


def test_empty_results(series):
    empty = series.filter(pl.col("value") > 1000).collect()
    assert empty.shape == (0, 3) and empty.schema == series.collect_schema()
    assert series.filter(pl.col("parity") == "neither").select("value").collect().rows() == []
    assert series.head(0).collect().rows() == []
    assert qpl.scan("qlink_sample/series?stop=0").collect().shape == (0, 3)


def test_batch_size_and_polars_sql():
    lf = qpl.scan("qlink_sample/series?stop=100&partitions=1", batch_size=16)
    assert [b.height for b in lf.collect_batches()] == [16] * 6 + [4]
    ctx = pl.SQLContext(t=lf)
    got = ctx.execute("SELECT parity, count(*) AS n, sum(value) AS s FROM t WHERE value BETWEEN 10 AND 19 "
                      "GROUP BY parity ORDER BY parity").collect().rows()
    assert got == [("even", 5, 70), ("odd", 5, 75)]


def test_batches_are_the_plugins_own_buffers():
    """qlink_sample's grid builds its columns once, at open: two collects
    (one projected) hand Polars the same memory, so nothing on the way
    (the session's stream, pl.from_arrow) copied the values."""
    lf = qpl.scan("qlink_sample/grid?partitions=1")

    def address(df, column):
        return df[column].to_arrow().buffers()[1].address

    whole, projected = lf.collect(), lf.select("v", "y").collect()
    assert whole.n_chunks() == projected.n_chunks() == 1
    assert address(whole, "v") == address(projected, "v")
    assert address(whole, "y") == address(projected, "y")


def test_same_rows_as_the_session(series):
    want = series_table(-5, 40)
    got = series.collect().sort("value").to_arrow()
    assert got.column("value").to_pylist() == want.column("value").to_pylist()
    assert got.column("square").to_pylist() == want.column("square").to_pylist()
    assert got.column("parity").to_pylist() == want.column("parity").to_pylist()


def test_frames_collect_from_threads(series):
    out, errors = [None] * 4, []

    def work(i):
        try:
            out[i] = series.filter(pl.col("value") % 4 == i).select("value").collect().rows()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(4):
        assert sorted(out[i]) == [(v,) for v in range(-5, 40) if v % 4 == i]


# ---- bad input


@pytest.mark.parametrize("spec, error, text", [
    ("nope", ValueError, "has no '/': expected PLUGIN/PROVIDER"),
    ("qlink_sample/", ValueError, "the provider is empty"),
    ("/series", ValueError, "the plugin is empty"),
    ("qlink_sample/series?stop", ValueError, "option 'stop' has no '='"),
    ("qlink_sample/series?=3", ValueError, "option '=3' has an empty key"),
    ("qlink_sample/series?stop=1&stop=2", ValueError, "option 'stop' is given twice"),
    ("qlink_sample/series?stop=%4", ValueError, "malformed percent escape"),
    ("qlink_sample/series?stop=%00", ValueError, "contains a NUL byte"),
    (42, TypeError, "a table spec is a str"),
    ("qlink_nothere/series", qlink.PluginError, "plugin 'qlink_nothere' not found"),
    ("qlink_sample/nothere", qlink.PluginError, "qlink_sample has no table provider 'nothere'"),
    ("qlink_sample/series?stop=ten", qlink.PluginError, "option 'stop': 'ten' is not an integer"),
    ("qlink_sample/series?bogus=1", qlink.PluginError, "unknown option 'bogus' for qlink_sample/series"),
])
def test_bad_specs(spec, error, text):
    with pytest.raises(error) as e:
        qpl.scan(spec)
    assert text in str(e.value)


def test_a_plugin_error_while_collecting_names_the_fault(tmp_path):
    """A chunk the plugin cannot decode fails the collect with the
    plugin's message (through pyarrow's stream), naming store, array and
    chunk."""
    import pyarrow as pa

    path = tmp_path / "broken.zarr"
    xr.Dataset({"v": (("i",), np.arange(4.0))}, coords={"i": np.arange(4)}).to_zarr(path, zarr_format=3,
                                                                                 consolidated=True)
    lf = qpl.scan(f"qlink_zarr/table?path={path}")
    (path / "v" / "c" / "0").write_bytes(b"garbage")
    with pytest.raises(pa.ArrowInvalid) as e:
        lf.collect()
    assert f"zarr store {path}: array 'v' chunk 'v/c/0'" in str(e.value)


def test_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size must be a positive int, not 0"):
        qpl.scan(SERIES, batch_size=0)


def test_parse_spec_decodes_every_part():
    assert qpl.parse_spec("a%20b/p%3Fq?k%26=v%3D1&&x=%2B+") == ("a b", "p?q", {"k&": "v=1", "x": "++"})


def test_pushdown_leaves_what_it_cannot_express():
    schema = {"i": pl.Int64, "f": pl.Float32, "s": pl.String}
    assert qpl.pushdown(None, schema) == (None, None)
    # the predicate as Polars pushes it: constants already of the column's type
    where, rest = qpl.pushdown((pl.col("i") > pl.lit(1, pl.Int64)) & (pl.col("i").cast(pl.Float64) > 2.5), schema)
    assert where == "\"i\" > arrow_cast(1, 'Int64')"
    assert str(rest) == str(pl.col("i").cast(pl.Float64) > 2.5)
    # a list holding NULL: SQL's IN answers NULL where Polars answers false
    assert qpl.pushdown(~pl.col("i").is_in([1, None]), schema)[0] is None
    assert qpl.pushdown(pl.col("i").eq_missing(3), schema)[0] is None
    assert qpl.pushdown(pl.col("f") == float("nan"), schema)[0] is None
    # the conjuncts left to Polars are the caller's expressions (a NaN survives)
    where, rest = qpl.pushdown((pl.col("f") == float("nan")) & (pl.col("i") > pl.lit(1, pl.Int64)), schema)
    assert where == "\"i\" > arrow_cast(1, 'Int64')"
    assert str(rest) == str(pl.col("f") == float("nan"))
    assert qpl.pushdown(pl.col("s").str.starts_with("a"), schema)[0] is None
    # a constant of another type than the column's (an Int32, or a literal
    # Polars has not typed yet): left to Polars
    assert qpl.pushdown(pl.col("i") == pl.lit(3, pl.Int32), schema)[0] is None
    assert qpl.pushdown(pl.col("i") == 3, schema)[0] is None
    assert qpl.pushdown(pl.col("f") == pl.lit(0.5, pl.Float32), schema)[0] == "\"f\" = arrow_cast(0.5, 'Float32')"


# ---- Zarr stores (qlink_zarr): NULLs, float32, timestamps


@pytest.fixture(scope="module")
def weather(tmp_path_factory):
    """time(4, 6-hourly) x lat(3): t2m float32 with NaN (NULL in qlink),
    n int32; written by xarray as Zarr v3. Rows (time, lat, n, t2m): the
    store's table orders its variables by name."""
    t2m = (np.arange(12, dtype=np.float32).reshape(4, 3) / 4 + np.float32(0.1))
    t2m[1, 2] = t2m[3, 0] = np.nan
    ds = xr.Dataset(
        {"t2m": (("time", "lat"), t2m), "n": (("time", "lat"), np.arange(12, dtype=np.int32).reshape(4, 3) - 5)},
        coords={"time": pd.date_range("2021-03-01", periods=4, freq="6h"), "lat": np.array([-10.0, 0.0, 10.0])},
    )
    path = tmp_path_factory.mktemp("polars") / "weather.zarr"
    ds.to_zarr(path, zarr_format=3, consolidated=True)
    rows = []
    for i, t in enumerate(ds.time.values):
        for j, lat in enumerate(ds.lat.values):
            v = t2m[i, j]
            rows.append((pd.Timestamp(t).to_pydatetime(), float(lat), int(ds.n.values[i, j]),
                         None if np.isnan(v) else float(v)))
    return path, rows


def test_zarr_rows_nulls_and_types(weather):
    path, rows = weather
    lf = qpl.scan(f"qlink_zarr/table?path={path}")
    schema = lf.collect_schema()
    assert list(schema) == ["time", "lat", "n", "t2m"]
    assert schema["t2m"] == pl.Float32 and schema["n"] == pl.Int32 and isinstance(schema["time"], pl.Datetime)
    assert sorted(lf.collect().rows()) == rows
    assert sorted(lf.filter(pl.col("t2m").is_null()).select("time", "lat").collect().rows()) == \
        sorted((r[0], r[1]) for r in rows if r[3] is None)
    # NULL passes no comparison, in Polars and in the plugin alike
    assert sorted(lf.filter(pl.col("t2m") >= 0).collect().rows()) == [r for r in rows if r[3] is not None]
    assert sorted(lf.filter(~(pl.col("t2m") < 1)).collect().rows()) == \
        [r for r in rows if r[3] is not None and not r[3] < 1]
    assert lf.filter(pl.col("t2m").is_not_null()).select(pl.len()).collect().item() == 10


def test_zarr_float32_and_timestamps(weather, statements):
    path, rows = weather
    lf = qpl.scan(f"qlink_zarr/table?path={path}")
    # 0.1 + 0.25 as float32: Polars compares in float32, and so does the pushed filter
    want = float(np.float32(0.1) + np.float32(0.25))
    got = lf.filter(pl.col("t2m") == np.float32(0.35)).collect().rows()
    assert got == [r for r in rows if r[3] == want] and len(got) == 1
    assert "arrow_cast(" in statements()[-1] and "'Float32')" in statements()[-1]
    noon = datetime.datetime(2021, 3, 1, 12)
    got = sorted(lf.filter(pl.col("time") >= noon).collect().rows())
    assert got == [r for r in rows if r[0] >= noon]
    assert "'Timestamp(" in statements()[-1]
    got = sorted(lf.filter(pl.col("time").is_between(datetime.datetime(2021, 3, 1, 6), noon)
                           & (pl.col("lat") == 0.0)).collect().rows())
    assert got == [r for r in rows if datetime.datetime(2021, 3, 1, 6) <= r[0] <= noon and r[1] == 0.0]
    got = sorted(lf.filter(pl.col("time").is_in([noon, datetime.datetime(2021, 3, 1)])).select("time", "n")
                 .collect().rows())
    assert got == sorted((r[0], r[2]) for r in rows if r[0] in (noon, datetime.datetime(2021, 3, 1)))
    got = pl.SQLContext(w=lf).execute("SELECT lat, count(t2m) AS c, sum(n) AS s FROM w "
                                      "WHERE time < '2021-03-01 18:00:00' GROUP BY lat ORDER BY lat").collect()
    want_rows = []
    for lat in (-10.0, 0.0, 10.0):
        sel = [r for r in rows if r[1] == lat and r[0] < datetime.datetime(2021, 3, 1, 18)]
        want_rows.append((lat, sum(r[3] is not None for r in sel), sum(r[2] for r in sel)))
    assert got.rows() == want_rows


# ---- qlink.xarray on Polars


def air():
    return xr.Dataset(
        {
            "air": (("time", "lat"), np.array([[1.5, np.nan, 3.0], [4.0, 5.5, -0.0]])),
            "label": (("time",), np.array(["a", "bb"])),
        },
        coords={"time": pd.date_range("2020-01-01", periods=2, freq="D"), "lat": np.array([10.0, 20.0, 30.0])},
    )


def test_xarray_to_polars_tables_and_names():
    ds = air()
    tables = xql.to_polars_tables(ds, "era5")
    assert list(tables) == ["era5_time_lat", "era5_time"]
    assert list(xql.to_polars_tables(ds, table_names={("time",): "labels"})) == ["time_lat", "labels"]
    got = sorted(tables["era5_time_lat"].filter(pl.col("air").is_not_null()).collect().rows())
    day = [datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2)]
    assert got == [(day[0], 10.0, 1.5), (day[0], 30.0, 3.0), (day[1], 10.0, 4.0), (day[1], 20.0, 5.5),
                   (day[1], 30.0, -0.0)]
    assert tables["era5_time"].filter(pl.col("label") == "bb").collect().rows() == [(day[1], "bb")]
    one = xql.to_polars(ds[["air"]])
    assert one.filter(pl.col("air").is_null()).select("time", "lat").collect().rows() == [(day[0], 20.0)]
    with pytest.raises(ValueError, match="All dimensions must be equal"):
        xql.to_polars(ds)


def test_xarray_register_on_sqlcontext_and_release():
    ds = air()
    before = xql.live_datasets()
    ctx = pl.SQLContext()
    xql.register(ctx, "w", ds)
    assert sorted(ctx.tables()) == ["w.time", "w.time_lat", "w_time", "w_time_lat"]
    assert xql.route_of(ctx, "w") == "ndarray"
    got = ctx.execute("SELECT lat, count(air) AS n, max(air) AS hi FROM w.time_lat GROUP BY lat ORDER BY lat")
    assert got.collect().rows() == [(10.0, 2, 4.0), (20.0, 1, 5.5), (30.0, 2, 3.0)]
    assert ctx.execute("SELECT label FROM w_time WHERE time > '2020-01-01'").collect().rows() == [("bb",)]
    del got  # a frame over the tables holds their providers (and so the Dataset)
    assert xql.live_datasets() == before + 2
    assert xql.unregister(ctx, "w") == 2
    assert ctx.tables() == []
    gc.collect()
    assert xql.live_datasets() == before
    frames = xql.to_polars_tables(ds, "x")
    assert xql.live_datasets() == before + 2
    del frames
    gc.collect()
    assert xql.live_datasets() == before


def test_xarray_zarr_route_and_round_trip(tmp_path):
    ds = air()
    ds[["air"]].to_zarr(tmp_path / "air.zarr", zarr_format=3, consolidated=True)
    opened = xr.open_zarr(tmp_path / "air.zarr")
    ctx = pl.SQLContext()
    xql.register(ctx, "z", opened, route="zarr")
    assert xql.route_of(ctx, "z") == "zarr" and ctx.tables() == ["z"]
    got = ctx.execute("SELECT time, lat, air FROM z WHERE lat >= 20 ORDER BY time, lat").collect().rows()
    day = [datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2)]
    assert got == [(day[0], 20.0, None), (day[0], 30.0, 3.0), (day[1], 20.0, 5.5), (day[1], 30.0, -0.0)]
    back = xql.to_dataset(xql.to_polars(ds[["air"]]).filter(pl.col("lat") <= 20), template=ds)
    np.testing.assert_array_equal(back.air.values, np.array([[1.5, np.nan], [4.0, 5.5]]))
    assert list(back.lat.values) == [10.0, 20.0]
