# SPDX-License-Identifier: Apache-2.0
"""Serving Datasets over Arrow Flight SQL: :class:`FlightSQLServer` and
:func:`serve`, xarray-sql 0.6's names and signatures, over a ``qlink
serve`` process (tools/cli, docs/flight-sql.md).

The server is another process, so a Dataset crosses as a Zarr v3 store
that qlink_zarr serves: the store xarray opened the Dataset from, when the
zarr route takes it as it is (:func:`~qlink.xarray.zarr_route`, and no
``chunks``), else a copy written to a temporary directory when
:meth:`FlightSQLServer.register` is called. ``qlink serve`` is found by
:func:`cli_path`.
"""

from __future__ import annotations

import importlib
import os
import queue
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
import warnings
import weakref
from pathlib import Path

from ._buffers import _check_dataset
from ._engines import _nan_options, _quote, _Source
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of
from ._zarr_route import NotRoutable, zarr_route

_ndarray = importlib.import_module("qlink._ndarray")  # importlib: see _buffers.py

__all__ = ["FlightSQLServer", "serve", "cli_path"]

_WILDCARD_HOSTS = ("", "0.0.0.0", "::")
_LISTENING = re.compile(r"^qlink serve: Flight SQL on grpc://(?P<host>.+):(?P<port>\d+)\s*$")
# the dtypes a store xarray writes keeps as qlink_zarr reads them back:
# numbers, bools, datetime64, timedelta64, fixed-width strings
_WRITABLE_KINDS = "biufMmU"
START_TIMEOUT = 120.0  # seconds qlink serve may take to load the plugins and open the stores


def cli_path() -> str:
    """The ``qlink`` command-line tool that :class:`FlightSQLServer` runs
    (``qlink serve``), by this rule:

    1. ``QLINK_CLI``, when set: then it is the only place (a missing file
       is an error, never a fall-through to another build);
    2. ``$CARGO_TARGET_DIR/release/qlink`` when ``CARGO_TARGET_DIR`` is
       set, else ``~/.cache/qlink-target/release/qlink`` (``make
       build-cli``'s output);
    3. ``qlink`` on ``PATH``.

    FileNotFoundError names every place looked in."""
    env = os.environ.get("QLINK_CLI")
    if env:
        if not os.path.isfile(env):
            raise FileNotFoundError(f"QLINK_CLI names {env}, which is not a file (the qlink command-line tool, "
                                    "make build-cli)")
        return env
    target = os.environ.get("CARGO_TARGET_DIR")
    built = Path(target) / "release" / "qlink" if target else Path.home() / ".cache" / "qlink-target" / "release" / "qlink"
    if built.is_file():
        return str(built)
    on_path = shutil.which("qlink")
    if on_path:
        return on_path
    raise FileNotFoundError(f"the qlink command-line tool (qlink serve) is not found: QLINK_CLI is not set, there is "
                            f"no {built} and no qlink on PATH; build it (make build-cli) or set QLINK_CLI")


class _Process:
    """What the finalizer needs, without the server: the process, its
    temporary directory. ``stop()`` and ``remove()`` are idempotent."""

    def __init__(self, folder: str):
        self.folder = folder
        self.proc: subprocess.Popen | None = None
        self.stopped_by_us = False

    def stop(self, timeout: float | None) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        self.stopped_by_us = True
        proc.terminate()
        try:
            proc.wait(timeout=timeout if timeout is None or timeout > 0 else 0.001)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        self.stop(1.0)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _finalize(process: _Process) -> None:
    process.close()


class _Entry:
    """One registered name: ``--table`` or ``--schema`` and its spec, and
    the temporary store written for it (None for a Dataset's own store)."""

    def __init__(self, option: str, spec: str, written: str | None):
        self.option, self.spec, self.written = option, spec, written


def _check_name(what: str, name) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} must be a non-empty str, not {name!r}")
    if "=" in name:
        raise ValueError(f"{what} {name!r} has an '=': qlink serve's NAME=SPEC options cannot carry it")
    return name


def _store_copy(ds, chunks: Chunks):
    """``ds`` ready for ``to_zarr``: every encoding dropped (the copy is
    encoded as xarray encodes a fresh Dataset: NaN fills, no packing, its
    own time units), with ``chunks`` as the store's chunks."""
    copy = ds.copy(deep=False)
    copy.encoding = {}
    for var in copy.variables.values():
        var.encoding = {}
    if chunks:
        unknown = set(chunks) - set(ds.dims)
        if unknown:
            raise ValueError(f"chunks names dimensions the Dataset does not have: {sorted(map(str, unknown))}")
        if any(getattr(v, "chunks", None) for v in copy.variables.values()):
            return copy.chunk(dict(chunks))
        for var in copy.variables.values():
            if var.ndim:
                var.encoding["chunks"] = tuple(max(1, min(int(chunks.get(d, n)), n)) for d, n in zip(var.dims, var.shape))
    return copy


def _check_writable(ds) -> None:
    groups = group_vars_by_dims(ds)
    if not groups:
        raise ValueError("the Dataset has no data variables: there is no table to serve")
    if () in groups:
        raise ValueError(f"the Dataset has 0-d data variables {groups[()]}: qlink serve (qlink_zarr) does not "
                         "serve them as xarray-sql's 'scalar' table; drop them or make them coordinates")
    joined = ["_".join(dims) for dims in groups]
    if len(set(joined)) != len(joined) or "scalars" in joined:
        raise ValueError(f"dimension groups {list(groups)} join to clashing names, which qlink_zarr renames "
                         "('a_b__c'); rename a dimension")
    for name, var in ds.variables.items():
        if var.dtype.kind not in _WRITABLE_KINDS:
            raise ValueError(f"variable {name!r} is {var.dtype}: a Dataset served over Flight SQL is written to a "
                             "Zarr store, which keeps numbers, bools, datetime64, timedelta64 and fixed-width "
                             "strings (cast it, e.g. .astype(str) for text)")


class FlightSQLServer:
    """A Flight SQL endpoint over registered Datasets (xarray-sql 0.6's
    ``FlightSQLServer``), served by a ``qlink serve`` subprocess.

    Register Datasets with :meth:`register`, then start the server with
    :meth:`serve`; a Flight SQL client (ADBC's driver, JDBC, ODBC) then
    queries them. Unlike xarray-sql's in-process server it needs the
    ``qlink`` binary (:func:`cli_path`) and the qlink_zarr plugin of the C
    build, and every call must carry the server's random secret
    (:attr:`secret`; :attr:`headers`, :attr:`db_kwargs` for ADBC)::

        with xql.FlightSQLServer() as server:
            server.register("air", ds).serve()
            con = adbc_driver_flightsql.dbapi.connect(server.uri, db_kwargs=server.db_kwargs)

    Ownership: the server owns a temporary directory (mode 0700) with the
    secret file (0600) and the stores written for registered Datasets;
    :meth:`shutdown` (also leaving a ``with`` block, :meth:`wait`
    returning, the object being collected, the interpreter exiting) stops
    the process and removes the directory, and the server cannot serve
    again. Thread-safety: the methods take a lock, so several threads may
    call them; the queries run in the other process.
    """

    def __init__(self, memory_limit: int | None = None) -> None:
        """A server with no tables. ``memory_limit``: bytes that queries'
        sorts, joins and aggregations may hold at once (``qlink serve
        --memory-limit``); None (default) sets no limit. Raises
        FileNotFoundError when the ``qlink`` binary is not found
        (:func:`cli_path`), ValueError for a limit below one byte."""
        if memory_limit is not None and (isinstance(memory_limit, bool) or not isinstance(memory_limit, int)
                                         or memory_limit < 1):
            raise ValueError(f"memory_limit must be a positive number of bytes or None, not {memory_limit!r}")
        self._cli = cli_path()
        self._memory_limit = memory_limit
        self._lock = threading.RLock()
        self._entries: dict[str, _Entry] = {}
        self._host: str | None = None
        self._port: int | None = None
        self._closed = False
        self._written = 0
        self._process = _Process(tempfile.mkdtemp(prefix="qlink-flight-"))
        self._finalizer = weakref.finalize(self, _finalize, self._process)
        self._secret = secrets.token_hex(32)
        self._secret_file = os.path.join(self._process.folder, "secret")
        fd = os.open(self._secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self._secret + "\n")

    # ---- what a client needs

    @property
    def secret(self) -> str:
        """The random secret (64 hex digits) every call must carry as the
        header ``authorization: Bearer SECRET``."""
        return self._secret

    @property
    def headers(self) -> dict[str, str]:
        """The call header a Flight client sends: ``{"authorization": "Bearer SECRET"}``."""
        return {"authorization": f"Bearer {self._secret}"}

    @property
    def db_kwargs(self) -> dict[str, str]:
        """``adbc_driver_flightsql.dbapi.connect(server.uri, db_kwargs=server.db_kwargs)``'s
        options: the authorization header."""
        return {"adbc.flight.sql.authorization_header": f"Bearer {self._secret}"}

    @property
    def port(self) -> int:
        """The TCP port the server is bound to (RuntimeError before :meth:`serve`)."""
        if self._port is None:
            raise RuntimeError("the server has not been started")
        return self._port

    @property
    def uri(self) -> str:
        """A ``grpc://`` URI a local client connects to (``localhost`` for a wildcard host)."""
        host = self._host if self._host not in _WILDCARD_HOSTS else "localhost"
        if host is not None and ":" in host:
            host = f"[{host}]"
        return f"grpc://{host}:{self.port}"

    @property
    def is_running(self) -> bool:
        """Whether the ``qlink serve`` process is alive."""
        proc = self._process.proc
        return proc is not None and proc.poll() is None

    # ---- tables

    def register(self, name: str, ds, *, chunks: Chunks = None, table_names: TableNames = None) -> FlightSQLServer:
        """Register ``ds`` as the table ``name``, or, when its data
        variables sit on several dimension groups, as the schema ``name``
        with one table per group (``name.time_lat``, renamed by
        ``table_names={("time", "lat"): "surface"}``), as xarray-sql and
        :func:`~qlink.xarray.register` name them. Names are registered
        exactly as given (a mixed-case name must be quoted in queries).
        Registering ``name`` again replaces it. Returns the server.

        The rows are those of the Dataset now: a Dataset the zarr route
        takes (opened from a local Zarr store, unchanged, no ``chunks``)
        is served from its store, read when a query runs; any other is
        written (loaded, when lazy) to a temporary Zarr v3 store here, with
        ``chunks`` (``{"time": 24}``) as its chunks, the blocks a filter
        prunes. Written stores list a table's data variables by name, as
        qlink_zarr does (xarray-sql lists them in the Dataset's order).

        While the server runs, registering restarts the ``qlink serve``
        process on the same host and port: the next query sees the new
        tables, queries running then fail, prepared statements must be
        prepared again.

        Errors: TypeError for a non-Dataset; ValueError for what qlink
        serve cannot express (a name with ``=``, a group name with ``,``
        or ``=``, 0-d data variables, groups whose joined dimension names
        clash, object, cftime or complex variables) and two groups taking
        one name; RuntimeError after :meth:`shutdown` or when the restart
        fails."""
        _check_name("name", name)
        _check_dataset(ds)
        groups = group_vars_by_dims(ds)
        names = table_names_of(ds, table_names)
        if len(groups) > 1:
            for dims, table in names.items():
                if "," in table or "=" in table:
                    raise ValueError(f"table name {table!r} of dimensions {dims} has a ',' or '=': qlink_zarr's "
                                     "tables= option cannot carry it")
        zarr_plugin = _ndarray.zarr_plugin_path()
        with self._lock:
            self._check_open()
            store = None
            if not chunks:
                try:
                    store = zarr_route(ds, table_names)
                except NotRoutable:
                    store = None
            written = None
            if store is None:
                _check_writable(ds)
                written = os.path.join(self._process.folder, f"store-{self._written}.zarr")
                self._written += 1
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        _store_copy(ds, chunks).to_zarr(written, mode="w-", zarr_format=3, consolidated=False)
                except BaseException:
                    shutil.rmtree(written, ignore_errors=True)
                    raise
                root = os.path.realpath(written)
                defaults = {dims: "_".join(dims) for dims in groups}
            else:
                root, defaults = store
            nan = _nan_options("null", zarr=True)
            if len(groups) <= 1:
                entry = _Entry("--table", _Source(zarr_plugin, "table", {"path": root, **nan}).spec(), written)
            else:
                renames = ",".join(f"{defaults[dims]}={names[dims]}" for dims in groups)
                entry = _Entry("--schema", _Source(zarr_plugin, "store", {"path": root, "tables": renames, **nan}).spec(),
                               written)
            old = self._entries.get(name)
            self._entries[name] = entry
            if self.is_running:
                try:
                    self._restart()
                except BaseException:
                    if old is None:
                        del self._entries[name]
                    else:
                        self._entries[name] = old
                    if written:
                        shutil.rmtree(written, ignore_errors=True)
                    raise
            if old is not None and old.written:
                shutil.rmtree(old.written, ignore_errors=True)
        return self

    # ---- the process

    def serve(self, host: str = "127.0.0.1", port: int = 0) -> FlightSQLServer:
        """Start ``qlink serve`` on ``host`` (an IP address; ``localhost``
        is 127.0.0.1, ``""`` 0.0.0.0) and ``port`` (0, the default: a free
        one, read back from :attr:`port`); returns once it listens, with
        the server. The process runs until :meth:`shutdown`. RuntimeError
        when it is already running, was shut down, or does not start (its
        error output in the message)."""
        with self._lock:
            self._check_open()
            if self.is_running:
                raise RuntimeError(f"the server is already serving on {self.uri}")
            host = {"localhost": "127.0.0.1", "": "0.0.0.0"}.get(host, host)
            self._start(host, int(port))
        return self

    def wait(self, poll_interval: float = 0.5) -> None:
        """Block until the process stops (Ctrl+C: until interrupted), then
        :meth:`shutdown`. RuntimeError when it stopped on an error."""
        try:
            while self.is_running:
                time.sleep(poll_interval)
        except KeyboardInterrupt:
            pass
        self.shutdown()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the process (SIGTERM, then SIGKILL after ``timeout``
        seconds; queries running are cut off) and remove the temporary
        directory (the secret, the written stores). Idempotent; the server
        cannot serve again. RuntimeError when the process had stopped on
        an error of its own (its exit code and error output)."""
        with self._lock:
            proc = self._process.proc
            failed = None
            if proc is not None and proc.poll() is not None and not self._process.stopped_by_us and proc.returncode:
                failed = f"qlink serve had stopped with exit code {proc.returncode}: {self._stderr()}"
            self._process.stop(timeout)
            self._closed = True
            self._finalizer()
        if failed:
            raise RuntimeError(failed)

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

    def _stderr(self) -> str:
        try:
            return Path(self._process.folder, "stderr").read_text(errors="replace").strip()
        except OSError:
            return ""

    def _argv(self, host: str, port: int) -> list[str]:
        argv = [self._cli, "serve", "--port", str(port), "--host", host, "--secret-file", self._secret_file]
        if self._memory_limit is not None:
            argv += ["--memory-limit", str(self._memory_limit)]
        for name, entry in self._entries.items():
            # quoted, the name is kept exactly (case, dots) as the table's or schema's name
            argv += [entry.option, f"{_quote(name) if entry.option == '--table' else name}={entry.spec}"]
        return argv

    def _restart(self) -> None:
        self._process.stop(5.0)
        self._start(self._host, self._port)

    def _start(self, host: str, port: int) -> None:
        env = {k: v for k, v in os.environ.items() if k != "QLINK_SECRET"}
        with open(os.path.join(self._process.folder, "stderr"), "wb") as err:
            proc = subprocess.Popen(self._argv(host, port), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=err, env=env)
        self._process.proc, self._process.stopped_by_us = proc, False
        lines: queue.Queue = queue.Queue()

        def read():  # the first line to the queue, then drain stdout until the process ends
            first = True
            for raw in proc.stdout:
                if first:
                    lines.put(raw.decode(errors="replace"))
                    first = False
            if first:
                lines.put("")

        threading.Thread(target=read, name="qlink-serve-stdout", daemon=True).start()
        try:
            line = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            line = None
        match = _LISTENING.match(line or "")
        if match is None:
            self._process.stop(1.0)
            why = "did not listen within %g s" % START_TIMEOUT if line is None else f"did not start ({proc.returncode})"
            raise RuntimeError(f"qlink serve ({self._cli}) {why}: {self._stderr() or (line or '').strip()}")
        self._host, self._port = host, int(match.group("port"))


def serve(datasets, host: str = "127.0.0.1", port: int = 0, *, chunks: Chunks = None,
          table_names: TableNames = None, memory_limit: int | None = None) -> FlightSQLServer:
    """Serve ``datasets`` (table name to Dataset) over Arrow Flight SQL:
    a :class:`FlightSQLServer` with each registered under its key
    (``chunks`` and ``table_names`` applied to every one), started on
    ``host`` and ``port``; returns the running server (its :attr:`uri
    <FlightSQLServer.uri>`, :attr:`db_kwargs <FlightSQLServer.db_kwargs>`;
    :meth:`wait <FlightSQLServer.wait>` blocks in a script). A failure
    after the server exists shuts it down before it propagates."""
    server = FlightSQLServer(memory_limit)
    try:
        for name, ds in datasets.items():
            server.register(name, ds, chunks=chunks, table_names=table_names)
        return server.serve(host, port)
    except BaseException:
        server.shutdown()
        raise
