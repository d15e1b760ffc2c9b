# SPDX-License-Identifier: Apache-2.0
"""The engines' side of a registration: the provider spec each table is
served by (:class:`_Source`: qlink_ndarray's ``dataset``, qlink_zarr's
``table``), the kind of connection, and what each engine's catalogue makes
of the sources (DuckDB temporary views over ``qlink_scan``, SQLite virtual
tables ``USING qlink``, datafusion-python capsule tables, a
``qlink.Session``'s tables and schemas; Polars' frames are ``_polars``'s)."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

from ._buffers import register_dataset, unregister_dataset
from ._naming import group_vars_by_dims, table_names_of
from ._scope import _objects_of

_ndarray = importlib.import_module("qlink._ndarray")  # importlib: see _buffers.py


def _quote(ident: str) -> str:
    return '"' + str(ident).replace('"', '""') + '"'


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class _Source:
    """One table's provider: plugin file, provider name, options."""

    def __init__(self, plugin: str, provider: str, options: dict[str, str]):
        self.plugin, self.provider, self.options = plugin, provider, options

    def spec(self) -> str:
        """``PLUGIN/PROVIDER?k=v&...`` as the hosts parse it: every part
        percent-encoded (the hosts decode the plugin path, the provider,
        keys and values, src/loader/table_spec.c), so a ``?``, ``%``,
        ``&``, ``#``, space or quote in a folder's name reaches the host
        as written; only the path's ``/`` stay."""
        from urllib.parse import quote

        query = "&".join(f"{quote(str(k), safe='')}={quote(str(v), safe='/')}" for k, v in self.options.items())
        return f"{quote(self.plugin, safe='/')}/{quote(self.provider, safe='')}?{query}"

    def table(self):
        """The provider as a qlink capsule table (the qlink wheel)."""
        from .._qlink import Plugin

        return Plugin(self.plugin).table(self.provider, **self.options)


NAN_FILLS = ("null", "nan")


def _nan_options(nan_fill: str, zarr: bool) -> dict[str, str]:
    """The providers' ``nan_fill`` option for :func:`register`'s: "null"
    is qlink_ndarray's default and qlink_zarr's "all" (every NaN is NULL,
    fill value or not, as the Dataset in memory reads)."""
    if nan_fill not in NAN_FILLS:
        raise ValueError(f"nan_fill must be one of {', '.join(map(repr, NAN_FILLS))}, not {nan_fill!r}")
    if zarr:
        return {"nan_fill": "all" if nan_fill == "null" else "nan"}
    return {} if nan_fill == "null" else {"nan_fill": "nan"}


def _ndarray_source(plugin: str, handle: str, nan_fill: str = "null") -> _Source:
    return _Source(plugin, "dataset", {"id": handle, **_nan_options(nan_fill, zarr=False)})


def _kind(con) -> str:
    root = type(con).__module__.split(".")[0]
    if root in ("duckdb", "_duckdb"):
        return "duckdb"
    if root == "apsw" or (root == "sqlite3" and type(con).__name__ == "Connection"):
        return "sqlite"
    if root == "polars" and type(con).__name__ == "SQLContext":
        return "polars"
    if root == "qlink" and hasattr(con, "register_schema") and hasattr(con, "register_arrow"):
        return "session"
    if hasattr(con, "register_table") and hasattr(con, "sql") and hasattr(con, "catalog"):
        return "datafusion"
    raise TypeError(
        f"No xarray-sql engine adapter for connection of type {type(con).__module__}.{type(con).__qualname__}: "
        "qlink.xarray takes a DuckDB connection (qlink.duckdb.connect()), a SQLite connection "
        "(qlink.sqlite.connect()), a datafusion SessionContext, a qlink.Session or a polars.SQLContext"
    )


def _drop_stale(con, kind: str, old, new) -> None:
    """Drop what an earlier registration of a name made that this one did
    not make again (a single table replaced by dimension groups, or the
    reverse, or a group the new Dataset lacks): left in place, DuckDB's
    views would fail on the unregistered id and SQLite's virtual tables
    would go on serving the replaced Dataset."""
    kept = set(new)
    stale = [o for o in old if o not in kept]
    run = (lambda sql: con.execute(sql)) if kind == "duckdb" else (lambda sql: _sqlite_exec(con, sql))
    for what, ident in [o for o in stale if o[0] != "attach"] + [o for o in stale if o[0] == "attach"]:
        run({"view": "DROP VIEW IF EXISTS ", "table": "DROP TABLE IF EXISTS ", "attach": "DETACH "}[what] + ident)


def _duckdb_prepare(con, plugins) -> None:
    try:
        con.execute("SELECT count(*) FROM qlink_plugins()").fetchall()
    except Exception:  # noqa: BLE001 - not loaded yet: load it (needs allow_unsigned_extensions)
        qduckdb = importlib.import_module("qlink.duckdb")

        try:
            con.load_extension(qduckdb.extension_path("auto"))
        except Exception as exc:
            raise RuntimeError(
                "the qlink DuckDB extension is not loaded on this connection and cannot be "
                f"({exc}); open it with qlink.duckdb.connect()"
            ) from exc
    for folder in sorted({str(Path(p).parent) for p in plugins}):
        try:
            con.execute("SELECT * FROM qlink_allow(?)", [folder]).fetchall()
        except Exception:  # noqa: BLE001 - sealed: the directory must already be allowed (the error says so)
            pass


def _register_duckdb(con, name, parts, sources):
    _duckdb_prepare(con, [src.plugin for src in sources])
    if parts[0][0] is None:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {_quote(name)} AS SELECT * FROM qlink_scan({_sql_text(sources[0].spec())})")
        return [("view", f"temp.main.{_quote(name)}")]
    made = [("view", f"temp.main.{_quote(name + '_' + group)}") for group, _ in parts]
    in_memory = all(row[2] in (None, "") for row in con.execute("PRAGMA database_list").fetchall())
    for (group, _), src in zip(parts, sources):
        scan = f"SELECT * FROM qlink_scan({_sql_text(src.spec())})"
        con.execute(f"CREATE OR REPLACE TEMP VIEW {_quote(name + '_' + group)} AS {scan}")
    if not in_memory:
        warnings.warn(f"registered the dimension groups of {name!r} as the temporary views {name}_<group> only: "
                      f"this is a file-backed connection, where views {name}.<group> would persist after the "
                      "registration they read is gone", RuntimeWarning, stacklevel=3)
        return made
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(name)}")
    real = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = ? "
                                          "AND NOT internal", [name]).fetchall()}
    clash = real & {group for group, _ in parts}
    if clash:
        warnings.warn(f"the {name!r} schema already has real tables named {sorted(clash)}: not replaced by views; "
                      f"query {name}_<group> instead", RuntimeWarning, stacklevel=3)
        return made
    # the schema is the database's (DuckDB has no temporary schemas), so its
    # views name the connection's temporary ones, not the handles: another
    # connection (a cursor) finds no such table and learns no handle
    for group, _ in parts:
        con.execute(f"CREATE OR REPLACE VIEW {_quote(name)}.{_quote(group)} AS "
                    f"SELECT * FROM temp.main.{_quote(name + '_' + group)}")
        made.append(("view", f"{_quote(name)}.{_quote(group)}"))
    return made


def _sqlite_exec(con, sql: str, args=()):
    cur = con.cursor()
    cur.execute(sql, args)
    return cur.fetchall()


def _sqlite_prepare(con, plugins) -> None:
    for folder in sorted({str(Path(p).parent) for p in plugins}):
        try:
            _sqlite_exec(con, "SELECT qlink_allow(?)", (folder,))
        except Exception as exc:  # noqa: BLE001
            text = str(exc)
            if "no such function" in text:
                raise RuntimeError("the qlink SQLite extension is not loaded on this connection; "
                                   "open it with qlink.sqlite.connect()") from exc
            # sealed: the directory must already be allowed (the host's error names the rule otherwise)


def _register_sqlite(con, name, parts, sources):
    _sqlite_prepare(con, [src.plugin for src in sources])
    if parts[0][0] is None:
        _sqlite_exec(con, f"DROP TABLE IF EXISTS temp.{_quote(name)}")
        _sqlite_exec(con, f"CREATE VIRTUAL TABLE temp.{_quote(name)} USING qlink({_sql_text(sources[0].spec())})")
        return [("table", f"temp.{_quote(name)}")]
    made = []
    attached = {row[1] for row in _sqlite_exec(con, "PRAGMA database_list")}
    if name not in attached:
        _sqlite_exec(con, f"ATTACH ':memory:' AS {_quote(name)}")
        made.append(("attach", _quote(name)))
    elif ("attach", _quote(name)) in _objects_of(con, name):
        made.append(("attach", _quote(name)))  # ours, from the registration this one replaces
    for (group, _), src in zip(parts, sources):
        _sqlite_exec(con, f"DROP TABLE IF EXISTS {_quote(name)}.{_quote(group)}")
        _sqlite_exec(con, f"CREATE VIRTUAL TABLE {_quote(name)}.{_quote(group)} USING qlink({_sql_text(src.spec())})")
        made.append(("table", f"{_quote(name)}.{_quote(group)}"))
    return made


def _register_datafusion(ctx, name, parts, sources):
    if parts[0][0] is None:
        if ctx.table_exist(name):
            ctx.deregister_table(name)
        ctx.register_table(name, sources[0].table())
        return
    from datafusion.catalog import Schema

    schema = Schema.memory_schema(ctx)
    ctx.catalog().register_schema(name, schema)
    for (group, _), src in zip(parts, sources):
        schema.register_table(group, src.table())


def _zarr_sources(ds, parts, store: tuple[str, dict], plugin: str, nan_fill: str) -> list[_Source]:
    """One qlink_zarr table per part of ``_split`` (its groups, in order);
    ``store`` is what :func:`zarr_route` answered."""
    root, defaults = store
    zarr_plugin = _ndarray.zarr_plugin_path(plugin)
    nan = _nan_options(nan_fill, zarr=True)
    if parts[0][0] is None:
        return [_Source(zarr_plugin, "table", {"path": root, **nan})]
    return [_Source(zarr_plugin, "table", {"path": root, "table": defaults[dims], **nan})
            for dims in group_vars_by_dims(ds)]


def _register_session(session, name, ds, plugin, table_names, chunks, store: tuple[str, dict] | None,
                      nan_fill: str):
    """qlink.Session: the whole Dataset as one registration (or its store,
    through qlink_zarr); one table (``register_table``) or the schema
    provider's tables renamed to xarray-sql's names (``register_schema``
    with ``tables=``). ``store``: what :func:`zarr_route` answered, for
    the zarr route. Returns the registration ids."""
    groups = group_vars_by_dims(ds)
    if store is not None:
        root, defaults = store
        zarr_plugin = _ndarray.zarr_plugin_path(plugin)
        if len(groups) <= 1:
            session.register_table(name, zarr_plugin, "table", path=root, **_nan_options(nan_fill, zarr=True))
        else:
            names = table_names_of(ds, table_names)
            renames = ",".join(f"{defaults[dims]}={names[dims]}" for dims in groups)
            session.register_schema(name, zarr_plugin, "store", path=root, tables=renames,
                                    **_nan_options(nan_fill, zarr=True))
        return []
    handle = register_dataset(ds, name=name, chunks=chunks, plugin=plugin)
    nan = _nan_options(nan_fill, zarr=False)
    try:
        if len(groups) <= 1:
            session.register_table(name, plugin, "dataset", id=handle, **nan)
        else:
            names = table_names_of(ds, table_names)
            renames = ",".join(f"{'_'.join(dims) or 'scalars'}={names[dims]}" for dims in groups)
            session.register_schema(name, plugin, "dataset", id=handle, tables=renames, **nan)
    except BaseException:
        unregister_dataset(handle, plugin)
        raise
    return [handle]
