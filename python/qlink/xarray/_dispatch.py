# SPDX-License-Identifier: Apache-2.0
"""``qlink.xarray.register``: xarray-sql 0.6's one entry point, which takes
a :class:`~qlink.xarray.FlightSQLServer` as well as a connection. A server
registers through its own ``register`` (with ``chunks`` and
``table_names`` only, as xarray-sql dispatches); every other connection
through _register. Above both _flight and _register, so neither imports
the other's caller."""

from __future__ import annotations

from ._flight import FlightSQLServer
from ._naming import Chunks, TableNames
from ._register import register as _register_on


def register(connection, name: str, ds, *, table_names: TableNames = None, chunks: Chunks = None,
             plugin: str | None = None, route: str = "auto", nan_fill: str = "null", **kwargs):
    if isinstance(connection, FlightSQLServer):
        if plugin is not None or route != "auto" or nan_fill != "null" or kwargs:
            raise TypeError("a FlightSQLServer takes chunks= and table_names= only (FlightSQLServer.register)")
        return connection.register(name, ds, chunks=chunks, table_names=table_names, _stacklevel=3)
    return _register_on(connection, name, ds, table_names=table_names, chunks=chunks, plugin=plugin, route=route,
                        nan_fill=nan_fill, **kwargs)


register.__doc__ = _register_on.__doc__
