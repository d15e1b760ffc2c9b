# SPDX-License-Identifier: Apache-2.0
"""Registering a Dataset on a connection: :func:`register` (the route,
the registrations, the engine's tables), :func:`unregister`."""

from __future__ import annotations

import importlib

from ._buffers import _check_dataset, register_dataset
from ._engines import (_drop_stale, _kind, _nan_options, _ndarray_source, _register_datafusion, _register_duckdb,
                       _register_session, _register_sqlite, _zarr_sources)
from ._polars import _Owner, _register_polars, _unregister_polars
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of
from ._scope import _Ids, _objects_of, _scope_of
from ._zarr_route import NotRoutable, _choose_route, zarr_route

_ndarray = importlib.import_module("qlink._ndarray")  # importlib: see _buffers.py


def _store_for(ds, route: str, chunks: Chunks, table_names: TableNames):
    """What :func:`zarr_route` answers when ``route`` lets qlink_zarr serve
    ``ds`` and it qualifies, else None (the ndarray route); ``route="zarr"``
    raises :class:`NotRoutable` saying why not."""
    if not _choose_route(ds, route, chunks):
        return None
    try:
        return zarr_route(ds, table_names)
    except NotRoutable:
        if route == "zarr":
            raise
        return None


def _split(ds, table_names: TableNames, case_insensitive: bool):
    """[(table name or None for the single table, sub-Dataset)]."""
    groups = group_vars_by_dims(ds)
    names = table_names_of(ds, table_names, case_insensitive=case_insensitive)
    if len(groups) <= 1:
        return [(None, ds)]
    return [(names[dims], ds[var_names]) for dims, var_names in groups.items()]


def register(connection, name: str, ds, *, table_names: TableNames = None, chunks: Chunks = None,
             plugin: str | None = None, route: str = "auto", nan_fill: str = "null", **kwargs):
    """Register ``ds`` as SQL tables on ``connection`` (returned, to chain).

    ``connection``: a ``qlink.Session`` (also ``Session.register_dataset``),
    a DuckDB connection (``qlink.duckdb.connect()``: TEMP views over
    ``qlink_scan``, so, like DuckDB's own ``con.register``, visible on that
    connection only: a ``con.cursor()`` handed to another thread needs its
    own ``register(cursor, name, ds)``; the ``name.<group>`` views of an
    in-memory database read those temporary views, so they too answer on
    that connection only), a SQLite connection (``qlink.sqlite.connect()``:
    virtual tables ``USING qlink``; a second group spelling needs an
    ATTACHed database, created as ``name``), a datafusion-python
    ``SessionContext`` (qlink capsule tables; needs the qlink wheel) or a
    ``polars.SQLContext`` (LazyFrames of :mod:`qlink.polars`, on one
    qlink.Session; needs the qlink wheel: ``name``, or ``name.<group>``
    and ``name_<group>`` per group; ``batch_size`` sets their batches), or
    a :class:`~qlink.xarray.FlightSQLServer` (its ``register``, with
    ``chunks`` and ``table_names`` only, as xarray-sql dispatches).
    Tables are named as xarray-sql 0.6 names them (module documentation);
    on DuckDB the groups are also ``name_<group>``, as in xarray-sql.
    ``chunks`` (``{"time": 24}``) sets the block extents along the named
    dimensions (partitions and the unit a filter prunes and a lazy variable
    loads); default: the Dataset's dask chunks, else its storage chunks,
    else about 65,536 rows per block. Registering ``name`` again replaces
    it. ``plugin`` is the qlink_ndarray.so to use (default
    ``_ndarray.plugin_path()``), which must lie in a directory the
    connection's qlink extension allows. xarray-sql's DuckDB tuning
    options (``batch_size``, ``prefetch``) are accepted and have nothing
    to tune here (the scan is C; a ``polars.SQLContext``'s frames take
    ``batch_size``); any other keyword is a TypeError.

    Ownership: the Dataset's arrays are read in place, under a handle
    (plugins/ndarray/README.md, "Handles") that only ``connection``'s
    catalogue names; the registration lasts until ``name`` is registered
    again, :func:`unregister` drops it, or the connection is closed (DuckDB,
    SQLite: closing drops the ``qlink_xarray_scope`` view or function it
    holds) or collected (every engine; a DataFusion context has no close).
    Thread-safety: registering on one connection from several threads
    needs the engine's own care (one DuckDB cursor per thread); the
    registry itself is thread-safe.
    ``nan_fill``: ``"null"`` (default) serves NaN cells of float variables
    as NULL, as xarray-sql does (a Dataset's missing values are NaN);
    ``"nan"`` keeps them NaN, a value (``avg`` is then NaN when one is).

    ``route`` chooses the plugin that serves the tables:

    * ``"auto"`` (default): a Dataset xarray opened from a local Zarr
      store (``xr.open_zarr``, ``open_dataset(engine="zarr")``) and not
      changed since is served by qlink_zarr straight from the store
      (rows identical to the ndarray route's, NaN included; no Python
      call per block, filters prune the store's chunks); every other
      Dataset, or any doubt (:func:`zarr_route` lists the checks), or
      ``chunks`` given, by qlink_ndarray;
    * ``"ndarray"``: always qlink_ndarray (the variables by reference);
    * ``"zarr"``: qlink_zarr, else :class:`NotRoutable` saying what
      differs from the store (``chunks`` is then a ValueError: the store's
      chunks make the blocks).

    The zarr route reads the store when a query runs, as the Dataset's
    lazy variables would; it holds no registration, so :func:`unregister`
    has nothing to drop for it. Its columns carry the store's attributes
    as qlink_zarr writes them (plugins/zarr/README.md) rather than the
    Dataset's JSON; the rows, names and types are the ndarray route's.
    """
    unknown = set(kwargs) - {"batch_size", "prefetch"}
    if unknown:
        raise TypeError(f"register() got unexpected keyword arguments {sorted(unknown)}")
    _nan_options(nan_fill, zarr=False)  # a bad value fails before anything is registered
    _check_dataset(ds)
    kind = _kind(connection)
    plugin_file = _ndarray.library(plugin).path
    store = _store_for(ds, route, chunks, table_names)
    route = "zarr" if store is not None else "ndarray"
    scope = _scope_of(connection, kind)
    if kind == "session":
        handles = _register_session(connection, name, ds, plugin_file, table_names, chunks, store, nan_fill)
        scope.put(name, _Ids(handles, route, plugin=plugin_file))
        return connection
    parts = _split(ds, table_names, case_insensitive=kind == "duckdb")
    handles: list[str] = []
    try:
        sources = _sources(ds, name, parts, store, chunks, plugin_file, nan_fill, handles)
        if kind == "polars":
            made = _register_polars(connection, name, parts, sources, _Owner(handles, plugin_file),
                                    kwargs.get("batch_size"))
        else:
            made = {"duckdb": _register_duckdb, "sqlite": _register_sqlite, "datafusion": _register_datafusion}[kind](
                connection, name, parts, sources) or []
        if kind in ("duckdb", "sqlite"):
            _drop_stale(connection, kind, _objects_of(connection, name), made)
    except BaseException:
        _Ids(handles, route, plugin=plugin_file).release()
        raise
    scope.put(name, _Ids(handles, route, made, plugin_file))
    templates = _templates_of(connection)
    if templates is not None:
        if parts[0][0] is None:
            templates[name] = ds
        else:
            for group, part in parts:
                templates[f"{name}.{group}"] = part
    return connection


def _sources(ds, name: str, parts, store, chunks: Chunks, plugin_file: str, nan_fill: str, handles: list[str]):
    """The provider of each part of :func:`_split` (in order): qlink_zarr's
    tables when ``store`` (what :func:`zarr_route` answered) is set, else a
    qlink_ndarray registration per part, whose handle is appended to
    ``handles`` as soon as it exists (the caller releases them on
    failure)."""
    if store is not None:
        return _zarr_sources(ds, parts, store, plugin_file, nan_fill)
    for group, part in parts:
        handles.append(register_dataset(part, name=name if group is None else f"{name}.{group}",
                                        chunks=chunks, plugin=plugin_file))
    return [_ndarray_source(plugin_file, handle, nan_fill) for handle in handles]


def unregister(connection, name: str) -> int:
    """Drop the registrations ``register(connection, name, ...)`` made;
    returns how many. Tables opened afterwards fail ("no registered Dataset
    with this handle"): DuckDB's views open a scan per query, so they fail
    at once; a SQLite virtual table already connected holds its provider
    and keeps serving the data until it is dropped or its connection
    closes; so does a Polars frame taken from a ``polars.SQLContext``
    before (its table was opened when registered), while the context's
    tables of ``name`` are dropped. Closing the connection unregisters
    every name it holds."""
    scope = _scope_of(connection)
    ids = scope.pop(name) if scope else None
    if ids is None:
        return 0
    if _kind(connection) == "polars":
        _unregister_polars(connection, ids.objects)
    ids.release()
    return len(ids)


def _templates_of(connection):
    return getattr(connection, "_registered_datasets", None)
