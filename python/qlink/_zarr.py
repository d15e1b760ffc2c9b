# SPDX-License-Identifier: Apache-2.0
"""Zarr stores through the qlink_zarr plugin: :func:`zarr` and
:class:`ZarrStore` (a store's tables, for a Session or datafusion-python),
over :func:`~qlink.register_zarr` (qlink._core: every table of a store on a
:class:`~qlink.Session`).

Both are re-exported by :mod:`qlink`: ``qlink.zarr(path)`` (the function;
this module is ``qlink._zarr``, so no module hides behind that name) and
``qlink.ZarrStore``.
"""

from __future__ import annotations

from pathlib import Path

from ._core import PlanError, Plugin, Session, Table, TableExistsError, _store_name, plugin_path, register_zarr

__all__ = ["ZarrStore", "zarr"]


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


class ZarrStore:
    """The tables of one Zarr store, read by the qlink_zarr plugin.

    Made by :func:`zarr`. ``tables`` lists the store's tables (one per group
    of variables sharing dimensions). For datafusion-python,
    ``register(ctx)`` registers every table in a ``SessionContext`` and
    ``provider(name)`` returns one as a :class:`Table` for
    ``ctx.register_table``: the plugin scans the store in place, with
    projections and filters pushed down (no copy into memory). For
    ``qlink.Session``, the tables are registered on :attr:`session` as
    ``name.<table>``; ``table(name)`` reads one as a ``pyarrow.Table`` and
    ``reader(name)`` streams it.

    A store served by an object store registered on a :class:`Session`
    (``register_object_store``) is visible to that session only: register
    it in datafusion-python with ``register(ctx, copy=True)``, which copies
    each table into the context as record batches.
    """

    def __init__(self, path: str, session: Session | None = None, name: str | None = None):
        self.path = path
        self.session = session if session is not None else Session()
        self.schema = name or _store_name(path)
        self._plugin = None
        self._location = path if (isinstance(path, str) and "://" in path) else str(Path(path).resolve())
        qualified = register_zarr(self.session, path, self.schema)
        self.tables = sorted(q.split(".", 1)[1] for q in qualified)

    def _table_name(self, name: str | None) -> str:
        if name is None:
            if len(self.tables) != 1:
                raise PlanError(f"store {self.path} has {len(self.tables)} tables ({', '.join(self.tables)}); name one")
            return self.tables[0]
        if name not in self.tables:
            raise PlanError(f"store {self.path} has no table {name!r} (tables: {', '.join(self.tables)})")
        return name

    def _select(self, name: str | None) -> str:
        return f"SELECT * FROM {_quote(self.schema)}.{_quote(self._table_name(name))}"

    def table(self, name: str | None = None):
        """Table ``name`` (the only one if omitted) as a ``pyarrow.Table``."""
        return self.session.sql(self._select(name))

    def reader(self, name: str | None = None):
        """Table ``name`` as a ``pyarrow.RecordBatchReader``."""
        return self.session.sql_reader(self._select(name))

    def provider(self, name: str | None = None) -> Table:
        """Table ``name`` (the only one if omitted) for datafusion-python:
        ``ctx.register_table("t", store.provider("time_lat"))``."""
        if self._plugin is None:
            self._plugin = Plugin(plugin_path("qlink_zarr"))
        return self._plugin.table("table", path=self._location, table=self._table_name(name))

    def register(self, ctx, prefix: str = "", copy: bool = False) -> list[str]:
        """Register every table in datafusion-python's ``ctx`` as
        ``prefix + table``; returns the names registered.

        ``prefix`` keeps two stores apart: stores written alike have the
        same table names (``time_lat``...), so the second one needs
        ``register(ctx, prefix="b_")``. A name already in ``ctx`` raises
        :class:`TableExistsError` naming it and the store's table, before
        anything is registered. ``copy=True`` registers in-memory copies
        instead of plugin tables."""
        for t in self.tables:
            if ctx.table_exist(prefix + t):
                raise TableExistsError(
                    f"the context already has a table {prefix + t!r}: table {t!r} of Zarr store {self.path} "
                    f"cannot be registered under that name; pass a prefix (register(ctx, prefix=...))"
                )
        names = []
        for t in self.tables:
            if copy:
                ctx.register_record_batches(prefix + t, [self.table(t).to_batches()])
            else:
                ctx.register_table(prefix + t, self.provider(t))
            names.append(prefix + t)
        return names

    def __repr__(self) -> str:
        return f"qlink.ZarrStore({self.path!r}, tables={self.tables})"


def zarr(path: str, session: Session | None = None, name: str | None = None) -> ZarrStore:
    """Open the Zarr store at ``path`` (a local path, or a URL an object store
    registered on ``session`` serves) and return its :class:`ZarrStore`.

    Its tables are registered on ``session`` (a new :class:`Session` if
    omitted) as ``name.<table>``, ``name`` defaulting to the store's file name.
    """
    return ZarrStore(path, session=session, name=name)
