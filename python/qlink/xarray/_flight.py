# SPDX-License-Identifier: Apache-2.0
"""Serving Datasets over Arrow Flight SQL: :class:`FlightSQLServer` and
:func:`serve`, xarray-sql 0.6's names and signatures, in this process.

A server is a :class:`qlink.Session` with the Datasets registered on it as
:func:`~qlink.xarray.register` registers them (by reference through
qlink_ndarray, or through qlink_zarr when a Dataset is an unchanged Zarr
store), served by ``Session.serve_flight_sql``: the Flight SQL server of
``qlink serve`` (docs/flight-sql.md) on the package's own runtime. No
binary and no copy of the data is needed; queries run with the GIL
released.
"""

from __future__ import annotations

import importlib
import secrets
import threading
import time
import warnings

from ._buffers import _check_dataset
from ._engines import _quote
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of
from ._register import register as _register
from ._register import unregister as _unregister

__all__ = ["FlightSQLServer", "serve"]

_WILDCARD_HOSTS = ("0.0.0.0", "::")


class FlightSQLServer:
    """A Flight SQL endpoint over registered Datasets (xarray-sql 0.6's
    ``FlightSQLServer``).

    Register Datasets with :meth:`register`, then start the server with
    :meth:`serve`; a Flight SQL client (ADBC's driver, JDBC, ODBC) then
    queries them. The SQL is read-only (queries and prepared statements;
    no DDL, DML or SET). As xarray-sql's, it serves without
    authentication on a loopback address; with ``secret`` every call must
    carry it (:attr:`headers`, :attr:`db_kwargs` for ADBC), and any other
    address needs one (xarray-sql would serve it to the network
    unauthenticated)::

        with xql.FlightSQLServer() as server:
            server.register("air", ds).serve()
            con = adbc_driver_flightsql.dbapi.connect(server.uri, db_kwargs=server.db_kwargs)

        server = xql.FlightSQLServer(secret=True).register("air", ds).serve("0.0.0.0", 8815)

    Ownership: the server holds its session, and so the registered
    Datasets' arrays, until :meth:`shutdown` (also leaving a ``with``
    block or :meth:`wait` returning); it cannot serve again afterwards.
    A server collected without :meth:`shutdown` stops serving too. Thread-safety: the methods take a lock,
    so several threads may call them; queries run on the package's runtime.
    """

    def __init__(self, memory_limit: int | None = None, *, secret: str | bool | None = None) -> None:
        """A server with no tables. ``memory_limit``: bytes that queries'
        sorts, joins and aggregations may hold at once; None (default) sets
        no limit. ``secret``: None (default) serves without authentication,
        on a loopback address only; True makes a random one (64 hex
        digits); a str (at least 32 printable bytes) is used as given.
        ValueError for a limit below one byte or a secret of another type
        (a short secret is refused by :meth:`serve`)."""
        if memory_limit is not None and (isinstance(memory_limit, bool) or not isinstance(memory_limit, int)
                                         or memory_limit < 1):
            raise ValueError(f"memory_limit must be a positive number of bytes or None, not {memory_limit!r}")
        if secret is not None and not isinstance(secret, (str, bool)):
            raise ValueError(f"secret must be None, True or a str, not {type(secret).__name__}")
        core = importlib.import_module("qlink._core")  # the native module: a ModuleNotFoundError names it
        self._session = core.Session(memory_limit=memory_limit)
        self._lock = threading.RLock()
        self._server = None
        self._closed = False
        self._secret = secrets.token_hex(32) if secret is True else (secret or None)
        # name -> (ds, chunks, table_names, a schema?): what register made, to replace or restore it
        self._entries: dict[str, tuple] = {}

    # ---- what a client needs

    @property
    def secret(self) -> str | None:
        """The secret every call must carry as the header
        ``authorization: Bearer SECRET``; None when there is none."""
        return self._secret

    @property
    def headers(self) -> dict[str, str]:
        """The call header a Flight client sends: ``{"authorization": "Bearer SECRET"}``
        (``{}`` without a secret)."""
        return {"authorization": f"Bearer {self._secret}"} if self._secret else {}

    @property
    def db_kwargs(self) -> dict[str, str]:
        """``adbc_driver_flightsql.dbapi.connect(server.uri, db_kwargs=server.db_kwargs)``'s
        options: the authorization header (``{}`` without a secret)."""
        return {"adbc.flight.sql.authorization_header": f"Bearer {self._secret}"} if self._secret else {}

    @property
    def port(self) -> int:
        """The TCP port the server is bound to (RuntimeError before :meth:`serve`)."""
        if self._server is None:
            raise RuntimeError("the server has not been started")
        return self._server.port

    @property
    def uri(self) -> str:
        """A ``grpc://`` URI a local client connects to (``localhost`` for a wildcard host)."""
        if self._server is None:
            raise RuntimeError("the server has not been started")
        host = self._server.host
        if host in _WILDCARD_HOSTS:
            return f"grpc://localhost:{self._server.port}"
        return self._server.url

    @property
    def is_running(self) -> bool:
        """Whether the server is serving."""
        server = self._server
        return server is not None and server.is_running

    # ---- tables

    def register(self, name: str, ds, *, chunks: Chunks = None, table_names: TableNames = None,
                 _stacklevel: int = 2) -> FlightSQLServer:
        """Register ``ds`` as the table ``name``, or, when its data
        variables sit on several dimension groups, as the schema ``name``
        with one table per group (``name.time_lat``, renamed by
        ``table_names={("time", "lat"): "surface"}``), as xarray-sql and
        :func:`~qlink.xarray.register` name them (the same call on the
        server's session). Names are registered exactly as given, as
        xarray-sql registers them: SQL folds unquoted names to lower case,
        so a mixed-case name warns (RuntimeWarning) and must be quoted in
        queries. Registering ``name`` again replaces it. ``chunks``
        (``{"time": 24}``) sets the blocks a filter prunes. Returns the
        server.

        The variables are read by reference: a query sees the Dataset's
        arrays as they are when it runs. A running server serves a new
        registration from its next query.

        Errors: TypeError for a non-Dataset; ValueError for an empty name
        and what :func:`~qlink.xarray.register` refuses; RuntimeError after
        :meth:`shutdown`."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty str, not {name!r}")
        _check_dataset(ds)
        schema = len(group_vars_by_dims(ds)) > 1
        folded = [n for n in ([name, *table_names_of(ds, table_names).values()] if schema else [name]) if n != n.lower()]
        if folded:
            warnings.warn(f"SQL folds unquoted names to lower case, so quote these in queries: "
                          f"{', '.join(_quote(n) for n in folded)}", RuntimeWarning, stacklevel=_stacklevel)
        with self._lock:
            self._check_open()
            old = self._entries.pop(name, None)
            if old is not None:
                self._drop(name, old[3])
            try:
                self._register(name, ds, chunks, table_names, schema)
            except BaseException:
                if old is not None:  # a failed replacement leaves the old registration
                    self._register(name, old[0], old[1], old[2], old[3])
                    self._entries[name] = old
                raise
            self._entries[name] = (ds, chunks, table_names, schema)
        return self

    @staticmethod
    def _session_name(name: str, schema: bool) -> str:
        """``name`` as the session is given it: a table's quoted, so the
        session keeps it exactly (a schema's is kept as given)."""
        return name if schema else _quote(name)

    def _register(self, name: str, ds, chunks: Chunks, table_names: TableNames, schema: bool) -> None:
        _register(self._session, self._session_name(name, schema), ds, chunks=chunks, table_names=table_names)

    def _drop(self, name: str, schema: bool) -> None:
        """Removes what ``register(name, ...)`` made from the session: its
        table or schema, and its Datasets' registrations."""
        self._session.sql(f"DROP {'SCHEMA' if schema else 'TABLE'} IF EXISTS {_quote(name)}"
                          + (" CASCADE" if schema else ""))
        _unregister(self._session, self._session_name(name, schema))

    # ---- serving

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> FlightSQLServer:
        """Start serving on ``host`` (an IP address; ``localhost`` is
        127.0.0.1, ``""`` 0.0.0.0) and ``port`` (0, the default: a free
        one, read back from :attr:`port`); returns once it listens, with
        the server. It serves until :meth:`shutdown`. ValueError for a host
        that is no IP address; RuntimeError when it is already serving, was
        shut down, or cannot bind the port."""
        with self._lock:
            self._check_open()
            if self.is_running:
                raise RuntimeError(f"the server is already serving on {self.uri}")
            self._server = self._session.serve_flight_sql(host, int(port), self._secret)
        return self

    def wait(self, poll_interval: float = 0.5) -> None:
        """Block until the server stops (Ctrl+C: until interrupted), then
        :meth:`shutdown`."""
        try:
            while self.is_running:
                time.sleep(poll_interval)
        except KeyboardInterrupt:
            pass
        self.shutdown()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop serving and release the session and its Datasets: no new
        call is accepted, and calls in flight get ``timeout`` seconds to
        finish before they are cut off (a client that never reads its
        result cannot hold the server). Idempotent; the server cannot serve
        again. RuntimeError when the server had stopped on an error of its
        own."""
        with self._lock:
            server, self._server = self._server, None
            self._closed = True
            self._session = None
            self._entries.clear()
        if server is not None:
            server.shutdown(timeout)

    def __enter__(self) -> FlightSQLServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        state = f"serving on {self.uri}" if self.is_running else "stopped"
        return f"FlightSQLServer({state})"

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the server was shut down; make a new FlightSQLServer")


def serve(datasets, host: str = "127.0.0.1", port: int = 0, *, chunks: Chunks = None,
          table_names: TableNames = None, memory_limit: int | None = None,
          secret: str | bool | None = None) -> FlightSQLServer:
    """Serve ``datasets`` (table name to Dataset) over Arrow Flight SQL:
    a :class:`FlightSQLServer` with each registered under its key
    (``chunks`` and ``table_names`` applied to every one), started on
    ``host`` and ``port``; returns the running server (its :attr:`uri
    <FlightSQLServer.uri>`, :attr:`db_kwargs <FlightSQLServer.db_kwargs>`;
    :meth:`wait <FlightSQLServer.wait>` blocks in a script). A failure
    after the server exists shuts it down before it propagates. ``secret``
    as :class:`FlightSQLServer`'s (a host other than loopback needs one)."""
    server = FlightSQLServer(memory_limit, secret=secret)
    try:
        for name, ds in datasets.items():
            server.register(name, ds, chunks=chunks, table_names=table_names, _stacklevel=3)
        return server.serve(host, port)
    except BaseException:
        server.shutdown()
        raise
