# SPDX-License-Identifier: Apache-2.0
"""Any ``xarray.Dataset`` as SQL tables, in DuckDB, SQLite and DataFusion:
a drop-in for xarray-sql 0.6 over the qlink_ndarray plugin.

::

    import qlink.xarray as xql
    ctx = xql.Context()                       # a datafusion-python SessionContext
    ctx.from_dataset("air", ds, chunks={"time": 240})
    ctx.sql("SELECT lat, avg(air) FROM air GROUP BY lat").to_pandas()

    con = qlink.duckdb.connect()              # or qlink.sqlite.connect()
    xql.register(con, "air", ds)
    con.execute("SELECT count(*) FROM air").fetchall()

    ctx = polars.SQLContext()                 # Polars: qlink.polars LazyFrames
    xql.register(ctx, "air", ds)              # or xql.to_polars(ds), xql.to_polars_tables(ds, "air")
    ctx.execute("SELECT lat, avg(air) FROM air GROUP BY lat").collect()

The variables are registered by reference (plugins/ndarray/README.md): a
variable in memory (numpy) is read in place by C code, with no Python in
the scan path, so the GIL stays free while a query scans it; a lazy one
(a backend array opened from netCDF, a dask array) is loaded one block per
partition through one Python call, which holds the GIL only for that call.
Tables follow the XQL model (plugins/zarr/README.md "The model"): one per
dimension group, dimension columns (coordinate values, or positions where
a dimension has none), the non-dimension coordinates over a subset of the
group's dimensions, then the data variables, one row per coordinate tuple
in C order. Names follow xarray-sql 0.6: one table ``name`` when every data
variable has the same dimensions, else one table per group,
``name.<dim1>_<dim2>`` (``name.scalar`` for 0-d variables), renamed by
``table_names={("time", "lat"): "surface"}``.

Values are served as the Dataset holds them (it is already CF-decoded):
datetime64 as timestamps in their unit (NaT is NULL), NaN as NULL in every
engine (a Dataset's missing values are NaN, and xarray-sql and pandas take
them as missing: ``avg`` and ``count`` skip them, ``IS NULL`` finds them;
``nan_fill="nan"`` keeps NaN a value), ``<U`` and ``|S`` as text and binary, object arrays of
``str`` (or ``bytes``) as text (binary), their missing values (None, NaN,
pandas' NA) as NULL. cftime objects (any calendar: noleap, 360_day, julian,
all_leap, ...) become ISO-8601 text, ``YYYY-MM-DDTHH:MM:SS[.ffffff]`` with
a four-digit year (years 0 to 9999), which sorts and compares as the dates do within the
calendar (``WHERE time >= '2000-07-01'``; write the whole
``'2000-07-01T00:00:00'``, or ``cftime('2000-07-01')`` in a
:class:`Context`, for ``>`` and ``=``) and never turns a 360_day February
30 into another date; :func:`to_dataset` turns them back into
cftime objects of the template's calendar. Object arrays (and cftime
variables) are converted when registered, so they are read then.

A Dataset xarray opened from a local Zarr store and left unchanged is
served by qlink_zarr straight from the store instead (``route="auto"``,
the default of :func:`register` and :meth:`Context.from_dataset`;
``route="ndarray"`` or ``"zarr"`` force one), with the same table names,
columns and rows; :func:`zarr_route` says why a Dataset does not qualify.

The DuckDB and SQLite routes need the C build alone (not ``qlink._qlink``);
:class:`FlightSQLServer` and :func:`serve` (xarray-sql 0.6's Flight SQL
server, over a ``qlink.Session`` in this process), :class:`Context`, a
datafusion-python ``SessionContext`` and Polars (:func:`to_polars`,
:func:`to_polars_tables`, a ``polars.SQLContext``) need the qlink wheel.
"""

from __future__ import annotations

# The parts, each importing only parts above it here (none this module):
# _naming (table names) and _cftime (cftime dates as text); _buffers (the
# variables described to qlink_ndarray, the registry calls); _scope (a
# connection's registrations); _engines (the provider specs and each
# engine's tables over them); _polars (Polars' frames and SQLContext
# tables); _zarr_route (when qlink_zarr serves the store instead);
# _register (register on a connection, unregister); _flight
# (FlightSQLServer, serve: a Flight SQL server over a qlink.Session in
# this process); _dispatch (register, which also takes a FlightSQLServer);
# _frames (to_polars,
# to_polars_tables); _roundtrip (to_dataset); _datafusion
# (read_xarray_table, Context).
#
# The package's names are those the single module qlink.xarray had (besides
# __all__: the registry calls, the option values, the option types; and
# _ndarray_source, which tests/security uses to write specs).
from ._buffers import live_datasets, register_dataset, unregister_dataset  # noqa: F401
from ._cftime import cftime_text
from ._datafusion import _context_class, read_xarray_table
from ._engines import NAN_FILLS, _ndarray_source  # noqa: F401
from ._dispatch import register
from ._flight import FlightSQLServer, serve
from ._frames import to_polars, to_polars_tables
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of  # noqa: F401
from ._register import unregister
from ._roundtrip import to_dataset
from ._scope import SCOPE_NAME, route_of  # noqa: F401
from ._zarr_route import ROUTES, NotRoutable, zarr_route  # noqa: F401

__all__ = ["Context", "register", "unregister", "to_dataset", "read_xarray_table", "table_names_of",
           "group_vars_by_dims", "cftime_text", "zarr_route", "NotRoutable", "route_of", "to_polars",
           "to_polars_tables", "FlightSQLServer", "serve"]


def __getattr__(name: str):
    if name in ("Context", "XarrayContext"):
        cls = _context_class()
        globals()["Context"] = globals()["XarrayContext"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
