# SPDX-License-Identifier: Apache-2.0
"""Connection scopes: the Datasets :func:`~qlink.xarray.register` put on
one connection, the route that serves each name, and their release when
the connection closes or is collected."""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ._buffers import unregister_dataset


class _Ids(list):
    """A name's registration handles, the plugin holding them, the route
    that serves it and the catalogue objects (views, tables, an attached
    database) its registration made."""

    def __init__(self, ids, route: str, objects=(), plugin: str | None = None):
        super().__init__(ids)
        self.route = route
        self.objects = tuple(objects)
        self.plugin = plugin

    def release(self) -> None:
        for handle in self:
            unregister_dataset(handle, self.plugin)


SCOPE_NAME = "qlink_xarray_scope"


class _Scope:
    """The Datasets :func:`register` registered on one connection (a DuckDB
    or SQLite connection, a ``qlink.Session``, a datafusion-python
    ``SessionContext``): name -> :class:`_Ids`.

    Ownership: the scope holds the registrations' handles, which only that
    connection's catalogue names (temporary views, temp virtual tables, an
    in-memory database ATTACHed to it, the context's tables), and releases
    them (:func:`unregister_dataset`) when :func:`register` replaces a name,
    :func:`unregister` drops one, the connection closes (DuckDB, SQLite:
    :func:`_watch_close`) or the connection object is collected
    (``weakref.finalize``). Thread-safety: a re-entrant lock guards the
    names (a finalizer may run on any thread between two bytecodes, even
    one holding it); handles are released outside it."""

    def __init__(self):
        self._lock = threading.RLock()
        self._names: dict[str, _Ids] = {}
        self.closed = False

    def get(self, name: str) -> "_Ids | None":
        with self._lock:
            return self._names.get(name)

    def put(self, name: str, ids: _Ids) -> None:
        """``name`` is now ``ids``; what it was is released."""
        with self._lock:
            old = self._names.get(name)
            self._names[name] = ids
        if old is not None:
            old.release()

    def pop(self, name: str) -> "_Ids | None":
        with self._lock:
            return self._names.pop(name, None)

    def handles(self) -> int:
        """Registrations the scope holds."""
        with self._lock:
            return sum(len(ids) for ids in self._names.values())

    def close(self) -> None:
        """Release every registration (the connection closed or went)."""
        with self._lock:
            self.closed = True
            held = list(self._names.values())
            self._names.clear()
        for ids in held:
            ids.release()


class _ScopeProbe:
    """SQLite's close sentinel: the function ``qlink_xarray_scope()`` (the
    number of registrations the connection holds), whose Python object
    only that connection references, so SQLite drops it when it closes."""

    def __init__(self, scope: _Scope):
        self.scope = scope

    def __call__(self) -> int:
        return self.scope.handles()


def _watch_close(con, kind: str, scope: _Scope) -> None:
    """Run ``scope.close`` when ``con`` is closed, not only once it is
    collected: give the connection a Python object only it references,
    which closing it drops (its finalizer then closes the scope). DuckDB:
    the temporary view ``qlink_xarray_scope`` over an empty frame
    (``con.register``: registered objects are the connection's own and go
    with ``close()``; a cursor has its own); SQLite: the function
    ``qlink_xarray_scope()`` (direct-only under apsw). Dropping that view
    (``con.unregister``) or function releases the connection's Datasets
    as closing would. A DataFusion context or ``qlink.Session`` has no
    close: collecting it releases them."""
    if kind == "duckdb":
        import pandas as pd

        sentinel = pd.DataFrame({"scope": pd.Series([], dtype="int64")})
        weakref.finalize(sentinel, scope.close)
        con.register(SCOPE_NAME, sentinel)
    elif kind == "sqlite":
        probe = _ScopeProbe(scope)
        weakref.finalize(probe, scope.close)
        if type(con).__module__.split(".")[0] == "apsw":
            import apsw

            con.create_scalar_function(SCOPE_NAME, probe, 0, flags=getattr(apsw, "SQLITE_DIRECTONLY", 0))
        else:
            con.create_function(SCOPE_NAME, 0, probe)


_scopes: "weakref.WeakKeyDictionary[Any, _Scope]" = weakref.WeakKeyDictionary()
_scopes_by_id: dict[int, _Scope] = {}  # connections that take no weak reference: kept until unregister() or exit
_scopes_lock = threading.RLock()


def _scope_of(con, kind: str | None = None) -> "_Scope | None":
    """``con``'s scope; with ``kind`` (``_kind(con)``) a new one made (and
    watched) when it has none, or only a closed one."""
    with _scopes_lock:
        try:
            scope = _scopes.get(con)
            weak = True
        except TypeError:
            scope = _scopes_by_id.get(id(con))
            weak = False
        if kind is None or (scope is not None and not scope.closed):
            return scope
        scope = _Scope()
        _watch_close(con, kind, scope)
        if weak:
            _scopes[con] = scope
            weakref.finalize(con, scope.close)
        else:
            _scopes_by_id[id(con)] = scope
        return scope


def _objects_of(con, name: str) -> tuple:
    scope = _scope_of(con)
    return getattr(scope.get(name) if scope else None, "objects", ())


def route_of(connection, name: str) -> str | None:
    """``"zarr"`` or ``"ndarray"``: the route :func:`register` took for
    ``name`` on ``connection``; None if it registered no such name."""
    scope = _scope_of(connection)
    ids = scope.get(name) if scope else None
    return getattr(ids, "route", None) if ids is not None else None
