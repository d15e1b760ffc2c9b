# SPDX-License-Identifier: Apache-2.0
"""Cross-engine conformance: the same queries over the same plugin binaries
in every qlink host, rows and types compared exactly.

Adapter interface (``engine.py``). A host joins the suite by adding one file
``tests/engines/engine_<host>.py`` that defines ``ENGINES``, a list of
``engine.Engine`` instances, each with:

- ``name``: the engine's name in test ids and in ``Query.unsupported``
  (``datafusion``, ``duckdb-python``, ``duckdb-cli``, ``sqlite`` ...); the
  part before the first ``-`` selects its row in ``engine.TYPE_NAMES``.
- ``unavailable() -> str | None``: None if it can run here, else why not
  (the missing build artifact); its tests then skip with that reason.
- ``table_name(name) -> str``: how SQL names a registered table (default
  the name itself).
- ``run(query, sql) -> Result``: in a fresh session register
  ``query.tables`` (name -> table-provider spec), ``query.schemas`` (name ->
  schema-provider spec, tables as ``name.table``) and ``query.functions``
  (plugins whose functions the SQL calls), run ``sql`` and return
  ``Result(columns, types, rows)`` with types through
  ``engine.normalise_type`` and values through ``engine.normalise_value``.
  Specs use plugin names (``qlink_sample/series?stop=10``);
  ``engine.plugin_path(name)`` is the plugin's path in the C build.

- ``prepare(request)``: called before ``run`` with the test's pytest
  ``request``, for a route that needs a fixture (default: nothing);
  ``same_as``: an engine whose answer the route must equal exactly, checked
  besides the oracle.

DataFusion has a distributed route (``datafusion-distributed``: the qlink
CLI with ``--workers`` over two ``qlink-worker``s that conftest.py's
session fixture ``qlink_workers`` starts on free loopback ports; ``same_as``
the single-process CLI), so the whole query list also runs across
processes; ``test_distributed.py`` checks what each worker read.

Every engine difference the suite tolerates is normalised in ``engine.py``
(type names, NaN/infinity spelled as strings by JSON routes, SQLite's NaN
stored as NULL: ``engine.seen_by``) and nowhere else; so are the plugin
object kinds a host refuses (``engine.REFUSALS``, none today), where the
suite checks the refusal's message instead of rows, and what an engine's
route cannot register at all (``engine.GAPS``: a CLI cannot reach an
xarray Dataset held by this Python process), reported as skips naming why,
and a route's known bugs (``engine.KNOWN_BUGS``): such a pair must fail with
the bug's error and reports as an expected failure naming it, and fails
the suite once it passes, until the entry is removed.

Polars (``engine_polars.py``) runs each query in Polars' own SQL
(``pl.SQLContext``) over ``qlink.polars.scan`` LazyFrames, so its
projection, predicate and limit pushdown reach the plugins through
Polars' optimizer.

xarray Datasets (``Query.datasets``, ``datasets.py``) are registered
through qlink.xarray on each Python route: DuckDB's and SQLite's modules
(``qlink.xarray.register``), ``qlink.Session.register_dataset``
(datafusion-session), ``qlink.xarray.Context.from_dataset``
(datafusion-context) and ``qlink.xarray.register`` on a
``pl.SQLContext`` (polars), the last three through the qlink wheel. Each query
runs over the Dataset in memory (qlink_ndarray) and over it opened from
the Zarr store it was written to (the zarr route, qlink_zarr), against
oracles computed by pandas from the Dataset.
An engine that reaches a plugin object another way than the SQL names it
adapts the SQL in its adapter (SQLite: table functions through qlink_call,
``engine_sqlite.call_tables``). A query a dialect cannot express is marked in ``Query.unsupported``
with the reason; that pair reports as a skip naming it, never dropped.

Each query is checked against its ``oracle`` (rows computed in Python from
the plugin's documented definition) when it has one, else against the first
available engine's answer. Floats compare bit for bit.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import datasets  # noqa: E402
import files  # noqa: E402
import kerchunk_refs  # noqa: E402
from engine import Engine, Query, ROOT, gap, known_bug, refusal, rows_key, seen_by  # noqa: E402

ENGINES: list[Engine] = []
for adapter in sorted(HERE.glob("engine_*.py")):
    ENGINES += importlib.import_module(adapter.stem).ENGINES


# ---- oracles: the sample plugin's tables as its sources define them.


def series(start, stop, step):
    return list(range(start, stop, step))


def series_rows(start, stop, step):
    return [(v, v * v, "even" if v % 2 == 0 else "odd") for v in series(start, stop, step)]


def grid_rows(ny, nx):
    rows = []
    for i in range(ny):
        y = -80.0 + 160.0 * i / (ny - 1) if ny > 1 else -80.0
        for j in range(nx):
            k = i * nx + j
            rows.append((y, j, ((k * 37) % 101 - 50) / 8.0))
    return rows


S = "qlink_sample/series?start=-7&stop=5000&step=3&partitions=4"
G = "qlink_sample/grid?ny=13&nx=9&partitions=3&batch_rows=10"

QUERIES = [
    Query("series_all", "SELECT value, square, parity FROM {s} ORDER BY value", ("int64", "int64", "utf8"),
          tables={"s": S}, oracle=lambda: series_rows(-7, 5000, 3)),
    Query("series_sum", "SELECT CAST(sum(value) AS BIGINT) AS total, count(*) AS n FROM {s}", ("int64", "int64"),
          tables={"s": S}, oracle=lambda: [(sum(series(-7, 5000, 3)), len(series(-7, 5000, 3)))]),
    Query("series_filter", "SELECT value FROM {s} WHERE value % 7 = 3 AND value > 100 ORDER BY value", ("int64",),
          tables={"s": S}, oracle=lambda: [(v,) for v in series(-7, 5000, 3) if v % 7 == 3 and v > 100]),
    Query("series_group",
          "SELECT parity, count(*) AS n, CAST(sum(square) AS BIGINT) AS sq FROM {s} GROUP BY parity ORDER BY parity",
          ("utf8", "int64", "int64"), tables={"s": S},
          oracle=lambda: [(p, len([v for v in series(-7, 5000, 3) if (v % 2 == 0) == (p == "even")]),
                           sum(v * v for v in series(-7, 5000, 3) if (v % 2 == 0) == (p == "even")))
                          for p in ("even", "odd")]),
    Query("series_projection", "SELECT parity FROM {s} WHERE value < 20", ("utf8",), tables={"s": S},
          ordered=False, oracle=lambda: [(r[2],) for r in series_rows(-7, 5000, 3) if r[0] < 20]),
    Query("grid_all", "SELECT y, x, v FROM {g} ORDER BY y, x", ("float64", "int64", "float64"), tables={"g": G},
          oracle=lambda: grid_rows(13, 9)),
    Query("grid_extremes", "SELECT min(v) AS lo, max(v) AS hi, min(y) AS ylo, max(y) AS yhi FROM {g}",
          ("float64",) * 4, tables={"g": G},
          oracle=lambda: [(min(r[2] for r in grid_rows(13, 9)), max(r[2] for r in grid_rows(13, 9)), -80.0, 80.0)]),
    Query("grid_join",
          "SELECT g.x, s.square FROM {g} AS g JOIN {s} AS s ON g.x = s.value WHERE g.y = -80.0 ORDER BY g.x",
          ("int64", "int64"), tables={"g": G, "s": "qlink_sample/series?stop=5"},
          oracle=lambda: [(x, x * x) for x in range(5)]),
]

# The sample plugin's scalar add_one and aggregate sum_sq (NULLs included:
# add_one passes NULL through, sum_sq skips it).
NULLED = "CASE WHEN value % 3 = 0 THEN NULL ELSE value END"
QUERIES += [
    Query("fn_add_one", f"SELECT value, add_one({NULLED}) AS a FROM {{s}} ORDER BY value", ("int64", "int64"),
          tables={"s": S}, functions=("qlink_sample",),
          oracle=lambda: [(v, None if v % 3 == 0 else v + 1) for v in series(-7, 5000, 3)]),
    Query("fn_sum_sq", f"SELECT parity, sum_sq({NULLED}) AS ss FROM {{s}} GROUP BY parity ORDER BY parity",
          ("utf8", "int64"), tables={"s": S}, functions=("qlink_sample",),
          oracle=lambda: [(p, sum(v * v for v in series(-7, 5000, 3) if v % 3 != 0 and (v % 2 == 0) == (p == "even")))
                          for p in ("even", "odd")]),
    Query("fn_nested", "SELECT sum_sq(add_one(value)) AS ss, count(*) AS n FROM {s} WHERE value < 100",
          ("int64", "int64"), tables={"s": S}, functions=("qlink_sample",),
          oracle=lambda: [(sum((v + 1) ** 2 for v in series(-7, 100, 3)), len(series(-7, 100, 3)))]),
]

# The sample plugin's table function sample_range(start, stop[, step]).
QUERIES += [
    Query("range_rows", "SELECT value FROM sample_range(-5, 20, 3) ORDER BY value", ("int64",),
          functions=("qlink_sample",), table_functions=("qlink_sample.sample_range",),
          oracle=lambda: [(v,) for v in range(-5, 20, 3)]),
    Query("range_default_step", "SELECT CAST(sum(value) AS BIGINT) AS total, count(*) AS n FROM sample_range(10, 1000)",
          ("int64", "int64"), functions=("qlink_sample",), table_functions=("qlink_sample.sample_range",),
          oracle=lambda: [(sum(range(10, 1000)), len(range(10, 1000)))]),
    Query("range_join",
          "SELECT r.value, s.square FROM sample_range(40, -10, -7) AS r JOIN {s} AS s ON r.value = s.value "
          "ORDER BY r.value DESC",
          ("int64", "int64"), tables={"s": "qlink_sample/series?start=-20&stop=50"}, functions=("qlink_sample",),
          table_functions=("qlink_sample.sample_range",), oracle=lambda: [(v, v * v) for v in range(40, -10, -7)]),
]

# qlink_zarr over the ferret stores `make run` converts, when present:
# engines compared with each other (no oracle).
FERRET = ROOT / "data" / "ferret-zarr"
for store in sorted(FERRET.glob("*.v3.zarr")) if FERRET.is_dir() else []:
    QUERIES.append(Query(f"ferret_{store.name.split('.')[0]}_count",
                         "SELECT count(*) AS n FROM {t}", ("int64",),
                         tables={"t": f"qlink_zarr/table?path={store}"}))


# qlink.xarray: one xarray Dataset (datasets.py) registered through each
# engine's Python route, in memory (qlink_ndarray) and opened from the Zarr
# store it was written to (the zarr route: qlink_zarr with nan_fill=all);
# oracles from the Dataset itself (pandas; its NaN, a missing value, is
# NULL in every engine). Times compare as text in SQLite.


def _frame(*names):
    ds = datasets.dataset("air")
    return ds[list(names)].to_dataframe().reset_index()


def _day(text):
    import pandas as pd

    return pd.Timestamp(text)


def _py(v):
    """A pandas/numpy value as the engines return it."""
    import pandas as pd

    if v is pd.NaT or (isinstance(v, pd.Timestamp) and pd.isna(v)):
        return None
    if isinstance(v, pd.Timestamp):
        return v.to_pydatetime()
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and v != v else v  # a Dataset's NaN: NULL


def _rows(df, cols):
    return [tuple(_py(v) for v in row) for row in df[cols].itertuples(index=False)]


def xr_slice():
    df = _frame("air")
    df = df[df.time == _day("2020-01-03")].sort_values(["lat", "lon"])
    return _rows(df, ["lat", "lon", "station", "air"])


def xr_dims():
    df = _frame("air", "count")
    df = df[(df.time < _day("2020-01-02")) & df.lat.between(5, 30) & df.lon.isin([0.0, 5.0])].sort_values(["lat", "lon"])
    return [(r[0], r[1], r[2], int(r[3])) for r in _rows(df, ["lat", "lon", "air", "count"])]


def xr_aggregate():
    df = _frame("air", "count")
    df = df[df.time < _day("2020-01-03")]
    out = []
    for lat, g in sorted(df.groupby("lat"), key=lambda kv: kv[0]):
        out.append((float(lat), len(g), int(g["count"].sum()), int(g["count"].min()), int(g["count"].max()),
                    float(g["air"].min())))
    return out


def xr_coords():
    df = _frame("elev").sort_values(["lat", "lon"], ascending=[False, True])
    return [(r[0], r[1], r[2], None if r[3] is None else float(r[3])) for r in _rows(df, ["lat", "lon", "station", "elev"])]


def xr_positions():
    df = _frame("profile")
    df = df[df.level >= 1]
    return [(int(level), len(g), float(g["profile"].max())) for level, g in sorted(df.groupby("level"))]


def xr_nat():
    df = _frame("label", "obs").sort_values("label")
    return [(r[0], 1 if r[1] is None else 0) for r in _rows(df, ["label", "obs"])]


def xr_nat_count():
    df = _frame("obs")
    return [(int(df.obs.notna().sum()), len(df))]


def xr_times():
    df = _frame("obs")
    df = df[df.time >= _day("2020-01-03")].sort_values("time")
    return _rows(df, ["time", "obs"])


_SQLITE_TIMES = "timestamps are ISO TEXT in SQLite (hosts/sqlite/README.md), not a timestamp type"
XARRAY_QUERIES = [
    ("slice", "SELECT lat, lon, station, air FROM {ds}.time_lat_lon "
              "WHERE time >= '2020-01-03' AND time < '2020-01-04' ORDER BY lat, lon",
     ("float64", "float64", "int64", "float64"), xr_slice, {}),
    ("dim_filters", "SELECT lat, lon, air, CAST(count AS BIGINT) AS count FROM {ds}.time_lat_lon "
                    "WHERE time < '2020-01-02' AND lat BETWEEN 5 AND 30 AND lon IN (0, 5) ORDER BY lat, lon",
     ("float64", "float64", "float64", "int64"), xr_dims, {}),
    ("aggregate", "SELECT lat, count(*) AS n, CAST(sum(count) AS BIGINT) AS total, CAST(min(count) AS BIGINT) AS lo, "
                  "CAST(max(count) AS BIGINT) AS hi, min(air) AS air_lo FROM {ds}.time_lat_lon "
                  "WHERE time < '2020-01-03' GROUP BY lat ORDER BY lat",
     ("float64", "int64", "int64", "int64", "int64", "float64"), xr_aggregate, {}),
    ("coords", "SELECT lat, lon, station, CAST(elev AS DOUBLE) AS elev FROM {ds}.lat_lon ORDER BY lat DESC, lon",
     ("float64", "float64", "int64", "float64"), xr_coords, {}),
    ("positions", "SELECT level, count(*) AS n, max(profile) AS hi FROM {ds}.time_level WHERE level >= 1 "
                  "GROUP BY level ORDER BY level",
     ("int64", "int64", "float64"), xr_positions, {}),
    ("nat", "SELECT label, CAST(CASE WHEN obs IS NULL THEN 1 ELSE 0 END AS BIGINT) AS missing FROM {ds}.time "
            "ORDER BY label",
     ("utf8", "int64"), xr_nat, {}),
    ("nat_count", "SELECT count(obs) AS n, count(*) AS total FROM {ds}.time", ("int64", "int64"), xr_nat_count, {}),
    ("times", "SELECT time, obs FROM {ds}.time WHERE time >= '2020-01-03' ORDER BY time", ("timestamp", "timestamp"),
     xr_times, {"sqlite-python": _SQLITE_TIMES, "sqlite-cli": _SQLITE_TIMES}),
]
for _key, _route in (("air", "ndarray"), ("air_zarr", "zarr")):
    for _id, _sql, _types, _oracle, _unsupported in XARRAY_QUERIES:
        QUERIES.append(Query(f"xarray_{_route}_{_id}", _sql, _types, datasets={"ds": (_key, _route)},
                             unsupported=_unsupported, oracle=_oracle))


# qlink_zarr over a kerchunk reference file (virtual Zarr, kerchunk_refs.py):
# chunks read as byte ranges of a netCDF-4 file, or inline; oracles from
# xarray's own reading of that file. Where kerchunk is not installed every
# engine reports the queries as skipped, naming why.


def kc_slice():
    df = kerchunk_refs.frame("flag", "temp")
    df = df[df.time >= _day("2024-03-02")].sort_values(["lat", "lon"])
    return [(r[0], r[1], int(r[2]), r[3]) for r in _rows(df, ["lat", "lon", "flag", "temp"])]


def kc_aggregate():
    df = kerchunk_refs.frame("flag", "temp")
    df = df[df.time < _day("2024-03-02")]
    return [(float(lat), len(g), int(g.temp.notna().sum()), int(g.flag.sum()), float(g.temp.min()),
             float(g.temp.max())) for lat, g in sorted(df.groupby("lat"), key=lambda kv: kv[0])]


def kc_packed():
    df = kerchunk_refs.frame("depth").sort_values(["lat", "lon"], ascending=[False, True])
    return _rows(df, ["lat", "lon", "depth"])


_KC_SKIP = kerchunk_refs.unavailable()
_KC = str(kerchunk_refs.paths()[1]) if not _KC_SKIP else "/kerchunk-unavailable.json"
_KC_UNSUPPORTED = {e.name: _KC_SKIP for e in ENGINES} if _KC_SKIP else {}
QUERIES += [
    Query("kerchunk_slice", "SELECT lat, lon, CAST(flag AS BIGINT) AS flag, CAST(temp AS DOUBLE) AS temp FROM {k} "
                            "WHERE time >= '2024-03-02' ORDER BY lat, lon",
          ("float64", "float64", "int64", "float64"), tables={"k": f"qlink_zarr/table?path={_KC}&table=time_lat_lon"},
          unsupported=_KC_UNSUPPORTED, oracle=kc_slice),
    Query("kerchunk_aggregate", "SELECT lat, count(*) AS n, count(temp) AS valid, CAST(sum(flag) AS BIGINT) AS flags, "
                                "CAST(min(temp) AS DOUBLE) AS lo, CAST(max(temp) AS DOUBLE) AS hi FROM {k} "
                                "WHERE time < '2024-03-02' GROUP BY lat ORDER BY lat",
          ("float64", "int64", "int64", "int64", "float64", "float64"),
          tables={"k": f"qlink_zarr/table?path={_KC}&table=time_lat_lon"}, unsupported=_KC_UNSUPPORTED,
          oracle=kc_aggregate),
    Query("kerchunk_packed", "SELECT lat, lon, depth FROM {k}.lat_lon ORDER BY lat DESC, lon",
          ("float64", "float64", "float64"), schemas={"k": f"qlink_zarr/store?path={_KC}"},
          unsupported=_KC_UNSUPPORTED, oracle=kc_packed),
]

# qlink_netcdf: the same Dataset written as netCDF files (datasets.py),
# served through the plugin's `store` schema; the same queries and oracles.
# xarray's netCDF-3 has no int64: its station column is int32 there.
for _kind, _path in datasets.netcdf_paths().items():
    for _id, _sql, _types, _oracle, _unsupported in XARRAY_QUERIES:
        if _kind == "nc3":
            _sql = _sql.replace("station,", "CAST(station AS BIGINT) AS station,")
        QUERIES.append(Query(f"netcdf_{_kind}_{_id}", _sql.replace("{ds}", "{nc}"), _types,
                             schemas={"nc": f"qlink_netcdf/store?path={_path}"}, unsupported=_unsupported,
                             oracle=_oracle))


# Plugins written in Rust (plugins/rust) over crates nobody here wrote, each
# built unmodified: DataFusion's listing table (Parquet, CSV), datafusion-orc
# and datafusion-functions-json, plus the SDK's template. Files: files.py.
_F_SKIP = files.unavailable()
_F = files.paths() if not _F_SKIP else {k: f"/files-unavailable.{k}" for k in ("parquet", "folder", "glob", "csv", "txt", "orc", "lake", "csv_lake")}
_F_UNSUPPORTED = {e.name: _F_SKIP for e in ENGINES} if _F_SKIP else {}


def trips_filter():
    return [(i, c, f) for i, c, f, _ in files.rows() if f >= 200 and c == "Oslo"]


def trips_group():
    out = {}
    for _, c, f, _ in files.rows():
        n, t = out.get(c, (0, 0.0))
        out[c] = (n + 1, t + f)
    return [(c, n, t) for c, (n, t) in sorted(out.items())]


def trips_json():
    import json
    return [(i, json.loads(d)["city"], i, len(json.loads(d)["tags"])) for i, _, _, d in files.rows() if i < 6]


_TRIPS_FILTER = "SELECT id, city, fare FROM {t} WHERE fare >= 200 AND city = 'Oslo' ORDER BY id"
_TRIPS_GROUP = "SELECT city, count(*) AS n, sum(fare) AS total FROM {t} GROUP BY city ORDER BY city"
_TRIPS_SPAN = "SELECT count(*) AS n, min(id) AS lo, max(id) AS hi, sum(fare) AS total FROM {t}"
_SPAN = [(files.N, 0, files.N - 1, sum(i * 0.25 for i in range(files.N)))]
for _id, _spec in (("parquet", f"qlink_listing/parquet?path={_F['parquet']}"),
                   ("parquet_folder", f"qlink_listing/parquet?path={_F['folder']}"),
                   ("parquet_glob", f"qlink_listing/parquet?path={_F['glob']}"),
                   ("csv", f"qlink_listing/csv?path={_F['csv']}"),
                   ("csv_named_txt", f"qlink_listing/csv?path={_F['txt']}"),
                   ("orc", f"qlink_orc/orc?path={_F['orc']}")):
    QUERIES += [
        Query(f"rust_{_id}_filter", _TRIPS_FILTER, ("int64", "utf8", "float64"), tables={"t": _spec},
              unsupported=_F_UNSUPPORTED, oracle=trips_filter),
        Query(f"rust_{_id}_group", _TRIPS_GROUP, ("utf8", "int64", "float64"), tables={"t": _spec},
              unsupported=_F_UNSUPPORTED, oracle=trips_group),
        Query(f"rust_{_id}_span", _TRIPS_SPAN, ("int64", "int64", "int64", "float64"), tables={"t": _spec},
              unsupported=_F_UNSUPPORTED, oracle=lambda: _SPAN),
    ]
# qlink_listing's `folder` schema (DataFusion's ListingSchemaProvider): a
# folder's files and subfolders as tables, the same rows as each one alone.
_LAKE = f"qlink_listing/folder?path={_F['lake']}"
QUERIES += [
    Query("rust_schema_file", _TRIPS_SPAN.replace("{t}", "{lake}.trips"), ("int64", "int64", "int64", "float64"),
          schemas={"lake": _LAKE}, unsupported=_F_UNSUPPORTED, oracle=lambda: _SPAN),
    Query("rust_schema_subfolder", _TRIPS_GROUP.replace("{t}", "{lake}.parts"), ("utf8", "int64", "float64"),
          schemas={"lake": _LAKE}, unsupported=_F_UNSUPPORTED, oracle=trips_group),
    Query("rust_schema_csv", _TRIPS_FILTER.replace("{t}", "{c}.trips"), ("int64", "utf8", "float64"),
          schemas={"c": f"qlink_listing/folder?path={_F['csv_lake']}&format=csv"},
          unsupported=_F_UNSUPPORTED, oracle=trips_filter),
]
# datafusion-functions-json's functions take any number of arguments of any
# type (Signature::variadic_any); DuckDB's C API fixes a function's
# parameter and return types when it registers it, so the DuckDB host's
# qlink_load lists them as not registrable (its documented refusal).
_JSON_DUCKDB = ("datafusion-functions-json's functions are variadic over any type, and DuckDB's C API fixes a "
                "function's parameter and return types at registration: qlink_load reports them as not registered")
_JSON_UNSUPPORTED = {**_F_UNSUPPORTED, **{e: _JSON_DUCKDB for e in ("duckdb-python", "duckdb-cli")}}
# geodatafusion's functions declare user-defined signatures (no argument
# types DuckDB could register) and return GeoArrow geometries: unions and
# structs tagged with Arrow extension types, which SQLite has no value for.
_GEO_UNSUPPORTED = {
    **{e: "geodatafusion's functions declare no argument types (user-defined signatures), and DuckDB's C API "
          "fixes a function's parameter and return types at registration: qlink_load reports them as not "
          "registered" for e in ("duckdb-python", "duckdb-cli")},
    **{e: "geodatafusion returns GeoArrow geometries (unions and structs with an Arrow extension type), "
          "which have no SQLite value: the SQLite host refuses the type by name" for e in ("sqlite-python", "sqlite-cli")},
}
def _view_value(i: int) -> str | None:
    """Row i of qlink_memtable's views table: NULL, long (beyond a view's 12 inline bytes) or short."""
    return None if i % 3 == 2 else (f"row {i}: longer than twelve bytes" if i % 2 else f"r{i}")


QUERIES += [
    Query("rust_json_get",
          "SELECT id, json_get_str(doc, 'city') AS city, json_get_int(doc, 'n') AS n, "
          "CAST(json_length(doc, 'tags') AS BIGINT) AS tags FROM {t} WHERE id < 6 ORDER BY id",
          ("int64", "utf8", "int64", "int64"), tables={"t": f"qlink_listing/parquet?path={_F['parquet']}"},
          functions=("qlink_json",), unsupported=_JSON_UNSUPPORTED, oracle=trips_json),
    Query("rust_json_filter",
          "SELECT count(*) AS n FROM {t} WHERE json_contains(doc, 'tags') AND json_get_int(doc, 'n') % 7 = 0",
          ("int64",), tables={"t": f"qlink_orc/orc?path={_F['orc']}"}, functions=("qlink_json",),
          unsupported=_JSON_UNSUPPORTED, oracle=lambda: [(len([i for i in range(files.N) if i % 7 == 0]),)]),
    # geodatafusion over GeoArrow types: each function's result crosses the
    # host with its Arrow extension type (field metadata) into the next one.
    Query("rust_geo_measures",
          "SELECT ST_X(ST_GeomFromText('POINT(3 4)')) AS x, "
          "ST_Distance(ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(3 4)')) AS d, "
          "ST_Area(ST_GeomFromText('POLYGON((0 0, 4 0, 4 3, 0 3, 0 0))')) AS a",
          ("float64", "float64", "float64"), functions=("qlink_geo",), unsupported=_GEO_UNSUPPORTED,
          oracle=lambda: [(3.0, 5.0, 12.0)]),
    Query("rust_geo_points", "SELECT id, ST_AsText(ST_Point(fare, CAST(id AS DOUBLE))) AS w FROM {t} WHERE id < 3 ORDER BY id",
          ("int64", "utf8"), tables={"t": f"qlink_listing/parquet?path={_F['parquet']}"}, functions=("qlink_geo",),
          unsupported={**_F_UNSUPPORTED, **_GEO_UNSUPPORTED},
          oracle=lambda: [(0, "POINT(0 0)"), (1, "POINT(0.25 1)"), (2, "POINT(0.5 2)")]),
    Query("rust_template", "SELECT n, squared(n) AS s FROM {t} ORDER BY n", ("int64", "int64"),
          tables={"t": "qlink_template/numbers?count=5"}, functions=("qlink_template",),
          oracle=lambda: [(n, n * n) for n in range(1, 6)]),
    # strings a plugin sends in Arrow's view layout (Utf8View): inline and long values, NULLs, two batches
    Query("rust_string_views", "SELECT id, s, CAST(length(s) AS BIGINT) AS n FROM {t} ORDER BY id",
          ("int64", "utf8", "int64"),
          tables={"t": "qlink_memtable/views"},
          oracle=lambda: [(i, s, None if s is None else len(s)) for i, s in enumerate(map(_view_value, range(6)))]),
    Query("rust_string_views_filter", "SELECT id FROM {t} WHERE s LIKE '%twelve%' ORDER BY id", ("int64",),
          tables={"t": "qlink_memtable/views"}, oracle=lambda: [(1,), (3,)]),
    # bytes in the view layout (BinaryView), read whole by each host's scan
    Query("rust_binary_views", "SELECT count(b) AS nb, count(*) AS n FROM {t}", ("int64", "int64"),
          tables={"t": "qlink_memtable/views"}, oracle=lambda: [(4, 6)]),
    # an aggregate UDF written in Rust (the template's int_product), grouped and over no rows
    Query("rust_template_aggregate",
          "SELECT n % 3 AS k, int_product(n) AS p, count(*) AS c FROM {t} GROUP BY n % 3 ORDER BY k",
          ("int64", "int64", "int64"), tables={"t": "qlink_template/numbers?count=10"}, functions=("qlink_template",),
          oracle=lambda: [(0, 3 * 6 * 9, 3), (1, 1 * 4 * 7 * 10, 4), (2, 2 * 5 * 8, 3)]),
    Query("rust_template_aggregate_empty",
          "SELECT coalesce(int_product(n), -1) AS p, "
          "CAST(CASE WHEN int_product(n) IS NULL THEN 1 ELSE 0 END AS BIGINT) AS none FROM {t} WHERE n > 100",
          ("int64", "int64"), tables={"t": "qlink_template/numbers?count=10"}, functions=("qlink_template",),
          oracle=lambda: [(-1, 1)]),
    # geodatafusion's aggregate over GeoArrow points: the extent's corners. Over one
    # partition (VALUES), so DataFusion aggregates in one phase: geodatafusion 0.6's
    # ST_Extent declares one state field but returns four state values, so a
    # two-phase aggregation fails natively too ("4 state values for 1 state fields" here).
    Query("rust_geo_extent",
          "SELECT ST_XMin(e) AS x0, ST_XMax(e) AS x1, ST_YMin(e) AS y0, ST_YMax(e) AS y1 FROM "
          "(SELECT ST_Extent(ST_Point(x, y)) AS e FROM (VALUES (0.0, 0.0), (0.25, 1.0), (0.5, 2.0)) AS v(x, y)) AS s",
          ("float64", "float64", "float64", "float64"), functions=("qlink_geo",), unsupported=_GEO_UNSUPPORTED,
          oracle=lambda: [(0.0, 0.5, 0.0, 2.0)]),
]

def available(engine: Engine):
    reason = engine.unavailable()
    if reason:
        pytest.skip(f"{engine.name}: {reason}")


def run(engine: Engine, q: Query):
    sql = q.sql.format(**{n: engine.table_name(n) for n in list(q.tables) + list(q.schemas) + list(q.datasets)})
    return engine.run(q, sql)


def runnable(engine: Engine, q: Query) -> bool:
    return (not engine.unavailable() and engine.name not in q.unsupported and not refusal(engine.name, q)
            and not gap(engine.name, q) and not (q.datasets and datasets.unavailable()))


def engine_named(name: str) -> Engine:
    return next(e for e in ENGINES if e.name == name)


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
@pytest.mark.parametrize("q", QUERIES, ids=lambda q: q.id)
def test_query(engine: Engine, q: Query, request):
    if engine.name in q.unsupported:
        pytest.skip(f"{engine.name} cannot express {q.id}: {q.unsupported[engine.name]}")
    if gap(engine.name, q):
        pytest.skip(f"{engine.name} cannot register what {q.id} needs: {gap(engine.name, q)}")
    available(engine)
    if q.datasets and datasets.unavailable():
        pytest.skip(f"{q.id}: {datasets.unavailable()}")
    engine.prepare(request)
    bug = known_bug(engine.name, q)
    if bug:
        error, why = bug
        try:
            run(engine, q)
        except Exception as e:  # noqa: BLE001 - the route's error is what is checked
            assert error in str(e), f"{engine.name}: {q.id} fails otherwise than its known bug: {e}"
            pytest.xfail(f"{engine.name}: {why}")
        pytest.fail(f"{engine.name}: {q.id} passes: remove its engine.KNOWN_BUGS entry ({why})")
    refused = refusal(engine.name, q)
    if refused:
        with pytest.raises(Exception) as e:
            run(engine, q)
        assert refused in str(e.value), f"{engine.name}: {q.id} must fail with its documented refusal"
        return
    got = run(engine, q)
    assert tuple(got.types) == q.types, f"{engine.name}: column types of {q.id}"
    rows = got.rows
    if q.oracle is not None:
        want = q.oracle()
    else:
        ref = next((e for e in ENGINES if e is not engine and runnable(e, q)), None)
        if ref is None:
            pytest.skip(f"{q.id} has no oracle and no second engine is available to compare {engine.name} with")
        ref.prepare(request)
        want = seen_by(ref.name, run(ref, q).rows)
        rows = seen_by(ref.name, rows)
    want = seen_by(engine.name, want)
    assert rows_key(rows, q.ordered) == rows_key(want, q.ordered), f"{engine.name}: rows of {q.id}"
    if engine.same_as:
        same = engine_named(engine.same_as)
        available(same)
        ref = run(same, q)
        versus = f"{engine.name} vs {same.name}"
        assert (got.columns, got.types) == (ref.columns, ref.types), f"{versus}: columns of {q.id}"
        assert rows_key(got.rows, q.ordered) == rows_key(ref.rows, q.ordered), f"{versus}: rows of {q.id}"


# ---- the main job's analyses (plugins/zarr/scripts/main_job.sh and
# hosts/<engine>/scripts/ferret.sh) from the ferret netCDF files through
# qlink_netcdf equal the same analyses from the Zarr stores convert_ferret.py
# wrote (data/ferret-zarr) through qlink_zarr, in every engine, exactly:
# the files hold no packed variables (no scale_factor / add_offset: every
# data variable is float32 with a fill value), so both plugins decode the
# same float32 cells to the same values, and each analysis rounds its
# averages, so the order the partitions (record slabs of the netCDF-3
# files, Zarr chunks) are summed in cannot show.

FERRET_NC = Path(os.environ.get("FERRET_NC", "/usr/share/ferret-vis/data"))
FERRET_FILES = {"coads": "coads_climatology", "levitus": "levitus_climatology", "winds": "monthly_navy_winds",
                "etopo": "etopo5"}
FERRET_ANALYSES = ("coads_zonal_sst_by_month", "navy_windiest_months_by_region",
                   "levitus_temperature_by_depth", "etopo5_highest_and_deepest")
# the engine family's spellings of the analyses (the main job's SQL files)
_FERRET_DIALECT = {"duckdb": ROOT / "hosts" / "duckdb" / "scripts" / "ferret",
                   "sqlite": ROOT / "hosts" / "sqlite" / "scripts" / "ferret"}
_FERRET_NO_DIALECT = {
    "polars": "the main job's analyses are written for DataFusion, DuckDB and SQLite (make run); Polars' SQL "
              "has no to_char, which the Navy winds analysis calls",
}

# The distributed route loses the final ORDER BY of a grouped analysis at
# times (either plugin): its plan keeps the scan's order through a
# NetworkShuffleExec and drops the final sort. Its rows are the same set;
# when their order is wrong the pair reports as an expected failure.
_FERRET_ORDER_LOST = {
    "datafusion-distributed": "ORDER BY after a GROUP BY over a NetworkShuffleExec comes back unsorted at "
                              "times (the plan claims the scan's order survives the shuffle)",
}
_FERRET_ORDER = {
    "coads_zonal_sst_by_month": lambda r: r[0],
    "navy_windiest_months_by_region": lambda r: (r[0], r[1]),
    "levitus_temperature_by_depth": lambda r: r[0],
    "etopo5_highest_and_deepest": lambda r: -r[3],
}


def ferret_sql(engine: Engine, analysis: str) -> str:
    family = engine.name.split("-")[0]
    own = _FERRET_DIALECT.get(family, Path("/nonexistent")) / f"{analysis}.sql"
    return (own if own.is_file() else ROOT / "plugins" / "zarr" / "scripts" / "ferret" / f"{analysis}.sql").read_text()


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.name)
@pytest.mark.parametrize("analysis", FERRET_ANALYSES)
def test_ferret_netcdf_equals_zarr(engine: Engine, analysis: str, request):
    if engine.name.split("-")[0] in _FERRET_NO_DIALECT:
        pytest.skip(f"{engine.name}: {_FERRET_NO_DIALECT[engine.name.split('-')[0]]}")
    if not (FERRET_NC / "etopo5.cdf").is_file():
        pytest.skip(f"Debian's ferret-datasets is not installed ({FERRET_NC})")
    missing = [f for f in FERRET_FILES.values() if not (FERRET / f"{f}.v3.zarr").is_dir()]
    if missing:
        pytest.skip(f"the main job's Zarr stores are not converted yet (make run): {', '.join(missing)}")
    available(engine)
    engine.prepare(request)
    sql = ferret_sql(engine, analysis).strip().rstrip(";")
    netcdf = Query(f"ferret_{analysis}_netcdf", sql, (), tables={
        name: f"qlink_netcdf/table?path={FERRET_NC / (f + '.cdf')}" for name, f in FERRET_FILES.items()})
    zarr = Query(f"ferret_{analysis}_zarr", sql, (), tables={
        name: f"qlink_zarr/table?path={FERRET / (f + '.v3.zarr')}" for name, f in FERRET_FILES.items()})
    got, want = engine.run(netcdf, sql), engine.run(zarr, sql)
    assert (got.columns, got.types) == (want.columns, want.types), f"{engine.name}: columns of {analysis}"
    assert rows_key(got.rows, False) == rows_key(want.rows, False), \
        f"{engine.name}: {analysis} from the netCDF files differs from the Zarr stores"
    if engine.name in _FERRET_ORDER_LOST and (got.rows != sorted(got.rows, key=_FERRET_ORDER[analysis])
                                              or want.rows != sorted(want.rows, key=_FERRET_ORDER[analysis])):
        pytest.xfail(f"{engine.name}: {_FERRET_ORDER_LOST[engine.name]}")
    assert got.rows == want.rows, f"{engine.name}: {analysis}: rows in another order"
    assert len(got.rows) == {"coads_zonal_sst_by_month": 12, "navy_windiest_months_by_region": 9,
                             "levitus_temperature_by_depth": 20, "etopo5_highest_and_deepest": 2}[analysis]
