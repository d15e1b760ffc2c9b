# SPDX-License-Identifier: Apache-2.0
"""qlink's DataFusion-based API (the native module, qlink._qlink): the
native objects, :class:`Session` (with its registration of a Zarr store's
tables, :func:`register_zarr`), :func:`plugin_path` (in :func:`plugin_dir`,
qlink._resources) and the errors.
Re-exported by qlink/__init__.py, which stays importable without it
(qlink.sqlite). Imports nothing else of the package but qlink._codecs
and qlink._resources (pure Python); qlink._zarr, qlink.polars and
qlink.xarray build on it, and qlink._session adds the one method that
reaches qlink.xarray (``Session.register_dataset``)."""


from __future__ import annotations

import re
from pathlib import Path

from ._qlink import Session as _NativeSession
from ._qlink import (
    CODEC_ID,
    DATAFUSION_PYTHON_VERSION,
    DATAFUSION_VERSION,
    FFI_VERSION,
    Function,
    Planner,
    Table,
    ExecutionError,
    NotSupportedError,
    PlanError,
    Plugin,
    PluginError,
    QlinkError,
    ResourcesExhaustedError,
    VersionMismatchError,
    __version__,
    shared_subqueries,
)
from ._codecs import codecs
from ._resources import plugin_dir

__all__ = [
    "CODEC_ID",
    "DATAFUSION_PYTHON_VERSION",
    "DATAFUSION_VERSION",
    "FFI_VERSION",
    "Function",
    "Planner",
    "Table",
    "ExecutionError",
    "NotSupportedError",
    "PlanError",
    "Plugin",
    "PluginError",
    "QlinkError",
    "ResourcesExhaustedError",
    "Session",
    "TableExistsError",
    "VersionMismatchError",
    "__version__",
    "codecs",
    "plugin_dir",
    "plugin_path",
    "register_zarr",
    "shared_subqueries",
]


def plugin_path(name: str) -> str:
    """The path of a plugin shipped with this package, e.g. ``"qlink_zarr"``:
    ``<name>.so`` in :func:`qlink.plugin_dir` (``QLINK_PLUGIN_DIR``, else
    ``QLINK_BUILD_DIR``'s ``plugins/`` when that is set, else the copies
    inside the package). Raises :class:`PluginError` if it is not there.
    """
    try:
        path = Path(plugin_dir()) / f"{name}.so"
    except FileNotFoundError as exc:
        raise PluginError(f"plugin {name!r} not found: {exc}") from None
    if not path.is_file():
        raise PluginError(f"plugin {name!r} not found (looked in {path.parent})")
    return str(path)


class TableExistsError(PlanError):
    """A Zarr store's table (or schema) would be registered under a name
    that is already taken. The message names both: the table already there
    and the store's table that would replace it. Nothing was registered.
    A :class:`PlanError`, so ``except qlink.PlanError`` catches it too."""


class Session(_NativeSession):
    """An embedded DataFusion host for qlink plugins.

    ``Session(memory_limit=None, target_partitions=None, batch_size=None,
    information_schema=True, config=None, workers=None, secret_file=None)``;
    ``memory_limit`` is a number of bytes or a string such as ``"512M"``;
    ``config`` maps DataFusion option keys
    (``"datafusion.execution.batch_size"``) to values; ``workers`` lists
    ``qlink-worker`` addresses (``"http://host:port"``): queries then run
    distributed on datafusion-distributed, plugin scans split among the
    workers (each must be reachable at construction, else ``ValueError``
    naming it). Every call to a worker carries the workers' shared secret:
    the first line of ``secret_file``, or the ``QLINK_SECRET`` environment
    variable (``ValueError`` when workers are given and neither is set).

    Methods (all release the GIL while DataFusion or a plugin works):

    - ``load_plugin(plugin, functions=True)``: load a plugin (a path or a
      :class:`Plugin`) and register its scalar/aggregate/window/table
      functions; returns the :class:`Plugin`.
    - ``register_table(name, plugin, provider, **options)``: a plugin table.
    - ``register_schema(name, plugin, provider, **options)``: every table of
      a schema provider as ``name.<table>``; returns the names.
    - ``register_zarr(path, name=None)``: every table of a Zarr store.
    - ``register_dataset(name, ds, table_names=None, chunks=None)``: an
      ``xarray.Dataset`` by reference (:mod:`qlink.xarray`).
    - ``install_planner(plugin, planner, **options)``: a planner plugin.
    - ``register_arrow(name, data)``: Arrow data (a pyarrow Table...) as an
      in-memory table.
    - ``register_object_store(url, root=None)``: ``memory://...``, an
      ``http(s)://host`` server, or a local directory serving ``url``;
      plugins read through it. ``http(s)://``, ``gs://`` and ``s3://`` URLs
      (public buckets, anonymously) need no registration: their HTTP store
      is made on first use.
    - ``sql(query)`` -> ``pyarrow.Table``; ``sql_reader(query)`` ->
      ``pyarrow.RecordBatchReader``; ``explain(query, analyze=False)`` -> str;
      ``tables()`` -> names of the default schema's tables.
    """

    def register_zarr(self, path: str, name: str | None = None) -> list[str]:
        """Register every table of the Zarr store at ``path`` as ``name.<table>``.

        See :func:`register_zarr`.
        """
        return register_zarr(self, path, name)


def _store_name(path: str) -> str:
    """A SQL-friendly schema name from a store path: its stem, [a-z0-9_]."""
    stem = Path(str(path).rstrip("/")).name
    if stem.endswith(".zarr"):
        stem = stem[: -len(".zarr")]
    name = re.sub(r"[^a-z0-9_]", "_", stem.lower()) or "zarr"
    return name if not name[0].isdigit() else f"z_{name}"


def register_zarr(session: Session, path: str, name: str | None = None) -> list[str]:
    """Register every table of the Zarr store at ``path`` on ``session``.

    Each table (a group of variables sharing dimensions: one row per
    coordinate tuple, dimensions as key columns) becomes ``NAME.<table>``;
    ``name`` defaults to the store's file name without ``.zarr``, lower-cased
    with every character outside ``[a-z0-9_]`` replaced by ``_``
    (``Mine.v3.zarr`` -> ``mine_v3``). ``path`` is a local path or a URL
    served by an object store registered on the session. Returns the
    qualified table names. Same as :meth:`Session.register_zarr`.

    Registering another store under a ``name`` this function already used on
    ``session`` raises :class:`TableExistsError` naming both stores (it
    would otherwise replace the first store's tables); pass another
    ``name``. Registering the same store again is allowed.
    """
    schema = name or _store_name(path)
    if not isinstance(path, str) or "://" not in path:
        path = str(Path(path).resolve())
    registered = _zarr_schemas(session)
    previous = registered.get(schema)
    if previous is not None and previous != path:
        raise TableExistsError(
            f"schema {schema!r} already holds the tables of Zarr store {previous}: registering store {path} "
            f"under it would replace them; pass another name (register_zarr(..., name=...))"
        )
    names = session.register_schema(schema, plugin_path("qlink_zarr"), "store", path=path)
    registered[schema] = path
    return names


def _zarr_schemas(session) -> dict:
    """The Zarr stores register_zarr put on `session`, by schema name."""
    found = getattr(session, "_qlink_zarr_schemas", None)
    if found is None:
        found = {}
        try:
            session._qlink_zarr_schemas = found
        except AttributeError:  # a native Session without attributes: no memory of earlier stores
            pass
    return found
