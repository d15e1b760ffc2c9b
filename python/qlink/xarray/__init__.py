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
:class:`Context` and a datafusion-python ``SessionContext`` need the qlink
wheel.
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import json
import math
import os
import threading
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

# importlib, not "from . import": without the native module the package's
# __getattr__ answers every missing name with an ImportError
_ndarray = importlib.import_module("qlink._ndarray")

__all__ = ["Context", "register", "unregister", "to_dataset", "read_xarray_table", "table_names_of",
           "group_vars_by_dims", "cftime_text", "zarr_route", "NotRoutable", "route_of"]

Chunks = Mapping[str, int] | None
TableNames = Mapping[tuple[str, ...], str] | None

# ------------------------------------------------------------------ naming


def group_vars_by_dims(ds) -> dict[tuple[str, ...], list[str]]:
    """Data variables by their exact dimension tuple, in the Dataset's order
    (xarray-sql 0.6's grouping)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, var in ds.data_vars.items():
        groups.setdefault(tuple(str(d) for d in var.dims), []).append(str(name))
    return groups


def table_names_of(ds, table_names: TableNames = None, *, case_insensitive: bool = False) -> dict:
    """Each dimension group's table name: ``table_names`` where it names the
    group, else the dimensions joined by ``_`` (``scalar`` for 0-d). Two
    groups with one name raise ``ValueError``."""
    overrides = dict(table_names or {})
    names = {dims: overrides.get(dims, "_".join(dims) or "scalar") for dims in group_vars_by_dims(ds)}
    taken: dict[str, tuple] = {}
    for dims, name in names.items():
        key = name.casefold() if case_insensitive else name
        if key in taken:
            how = "" if taken[key][1] == name else " (DuckDB compares names case-insensitively)"
            raise ValueError(
                f"dimension groups {taken[key][0]} and {dims} would both take the same table name {name!r}{how}; "
                "name one of them with table_names={dims: 'name'}"
            )
        taken[key] = (dims, name)
    return names


# --------------------------------------------------------- variable buffers

_CFTIME_ATTR = "qlink:cftime_calendar"


def _is_cftime_array(values: np.ndarray) -> bool:
    try:
        import cftime
    except ImportError:  # pragma: no cover - cftime is pinned
        return False
    flat = values.reshape(-1)
    first = next((v for v in flat if v is not None), None)
    return isinstance(first, cftime.datetime)


def _iso(value) -> str | None:
    if value is None:
        return None
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text


_ISO = None


def cftime_text(text: str | None) -> str | None:
    """A date as the text a cftime column holds: ``2000-7-1``,
    ``2000-07-01 12:30`` or ``2000-02-30T00:00:00.5`` become
    ``YYYY-MM-DDTHH:MM:SS[.ffffff]``, so comparisons with a column are exact
    (``time > cftime('2000-07-01')`` leaves out midnight, which the bare
    ``'2000-07-01'``, a prefix of it, would not). ``ValueError`` for other
    text. The ``cftime()`` SQL function of :class:`Context`."""
    global _ISO
    if text is None:
        return None
    if _ISO is None:
        import re

        _ISO = re.compile(r"\s*(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*$")
    m = _ISO.match(str(text))
    if not m:
        raise ValueError(f"cftime(): {text!r} is not a date (YYYY-MM-DD[THH:MM[:SS[.ffffff]]])")
    y, mo, d, h, mi, sec, frac = m.groups()
    out = f"{int(y):04d}-{int(mo):02d}-{int(d):02d}T{int(h or 0):02d}:{int(mi or 0):02d}:{int(sec or 0):02d}"
    return out + (f".{frac.ljust(6, '0')}" if frac and int(frac) else "")


# A missing cell of a UTF-32 buffer: a first code unit above U+10FFFF,
# which no str holds (the plugin's null_cell; qlink_ndarray.h).
_NO_CODE_POINT = 0xFFFFFFFF


def _text_buffer(flat: list, missing: np.ndarray, shape) -> tuple[np.ndarray, bytes | None]:
    """str values as a UTF-32 buffer and the null cell marking the missing
    ones (None when none is)."""
    text = np.array(["" if m else v for v, m in zip(flat, missing)], dtype=str)
    if not missing.any():
        return text.reshape(shape), None
    width = text.dtype.itemsize // 4
    units = text.view(np.uint32).reshape(len(flat), width)
    units[missing, 0] = _NO_CODE_POINT
    null_cell = np.zeros(width, dtype=np.uint32)
    null_cell[0] = _NO_CODE_POINT
    return text.reshape(shape), null_cell.tobytes()


def _bytes_buffer(flat: list, missing: np.ndarray, shape) -> tuple[np.ndarray, bytes | None]:
    """bytes values as a fixed-width buffer and the null cell marking the
    missing ones: one byte wider than the longest value, that byte 1 in a
    missing cell and 0 in every value (None when none is missing)."""
    raw = np.array([b"" if m else v for v, m in zip(flat, missing)], dtype=bytes)
    if not missing.any():
        return raw.reshape(shape), None
    width = raw.dtype.itemsize + 1
    wide = np.zeros(len(flat), dtype=f"S{width}")
    wide[:] = raw
    wide.view(np.uint8).reshape(len(flat), width)[missing, width - 1] = 1
    return wide.reshape(shape), bytes(width - 1) + b"\x01"


def _object_to_buffer(name: str, values: np.ndarray) -> tuple[np.ndarray, dict, bytes | None]:
    """An object array as a fixed-width buffer: cftime objects as ISO-8601
    text (their calendar in the column's metadata), str as UTF-32, bytes
    as bytes; with the null cell that marks its missing values (None, NaN,
    pandas' NA: SQL NULL), or None when it has none."""
    import pandas as pd

    extra: dict = {}
    missing = np.asarray(pd.isna(values.reshape(-1)), dtype=bool)  # None, NaN, pandas' NA and NaT
    flat = values.reshape(-1).tolist()
    if _is_cftime_array(values):
        import cftime

        calendars = {v.calendar for v in flat if isinstance(v, cftime.datetime)}
        if len(calendars) > 1:
            raise ValueError(f"variable {name!r} mixes cftime calendars {sorted(calendars)}")
        others = {type(v).__name__ for v, m in zip(flat, missing) if not m and not isinstance(v, cftime.datetime)}
        if others:
            raise TypeError(f"variable {name!r} mixes cftime dates with {sorted(others)}")
        extra[_CFTIME_ATTR] = calendars.pop() if calendars else ""
        text, null_cell = _text_buffer([None if m else _iso(v) for v, m in zip(flat, missing)], missing,
                                       values.shape)
        return text, extra, null_cell
    kinds = {type(v) for v, m in zip(flat, missing) if not m}
    if kinds <= {str, np.str_}:
        text, null_cell = _text_buffer(flat, missing, values.shape)
        return text, extra, null_cell
    if kinds <= {bytes, np.bytes_}:
        raw, null_cell = _bytes_buffer(flat, missing, values.shape)
        return raw, extra, null_cell
    raise TypeError(
        f"variable {name!r} holds Python objects of types {sorted(k.__name__ for k in kinds)}; "
        "qlink.xarray serves numbers, bools, datetime64 and timedelta64 as numpy dtypes, and object "
        "arrays of strings, bytes or cftime dates only (an object array of numbers or bools, as "
        "from_dataframe leaves a column with missing values, needs a numpy dtype first, e.g. "
        "ds[name].astype(float))"
    )


def _attrs_json(name: str, attrs: Mapping, extra: Mapping) -> bytes | None:
    out = {}
    for k, v in {**attrs, **extra}.items():
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, np.generic):
            v = v.item()
        try:
            json.dumps(v, allow_nan=True)
        except (TypeError, ValueError):
            v = str(v)
        out[str(k)] = v
    if not out:
        return None
    return json.dumps(_finite_json(out)).encode()


def _finite_json(v):
    """``v`` with its non-finite floats as the strings "NaN", "Infinity" and
    "-Infinity" (JSON has no such numbers), text left as it is."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {k: _finite_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite_json(x) for x in v]
    return v


def _native_dtype(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype


def _is_lazy(var) -> bool:
    return not getattr(var, "_in_memory", True)


def _block_chunks(name: str, var, chunks: Chunks) -> tuple[int, ...] | None:
    """The chunk extents qlink blocks follow: ``chunks`` (per dimension;
    unnamed dimensions whole), else the variable's dask chunks (their
    first block along each axis), else the storage chunks its backend
    recorded (``encoding["preferred_chunks"]`` / ``chunksizes``), else
    None (the plugin chooses about 65,536 elements per block)."""
    if var.ndim == 0:
        return None
    if chunks:
        if not isinstance(chunks, Mapping):
            raise TypeError(f"chunks must map dimension names to block extents, not {type(chunks).__name__}")
        out = []
        for dim, size in zip(var.dims, var.shape):
            if size == 0:  # an empty dimension has no blocks to cut
                out.append(1)
                continue
            want = chunks.get(dim, size)
            if want in (None, -1):
                want = size
            if not isinstance(want, (int, np.integer)) or int(want) < 1:
                raise ValueError(f"chunks[{dim!r}] must be a positive integer, not {want!r}")
            out.append(max(1, min(int(want), size or 1)))
        return tuple(out)
    if getattr(var, "chunks", None):
        return tuple(max(1, int(c[0])) if len(c) else 1 for c in var.chunks)
    preferred = var.encoding.get("preferred_chunks")
    if preferred:
        return tuple(max(1, int(preferred.get(d, s) or 1)) for d, s in zip(var.dims, var.shape))
    sizes = var.encoding.get("chunksizes")
    if sizes and len(sizes) == var.ndim:
        return tuple(max(1, int(c)) for c in sizes)
    return None


class _Registration:
    """What a registered Dataset keeps alive until the plugin releases it:
    the numpy buffers, the ctypes arrays describing them, the loaders."""

    def __init__(self):
        self.keep: list = []
        self.vars: list[_ndarray.NdVariable] = []

    def add(self, name: str, var, *, is_coord: bool, chunks: Chunks):
        dims = [str(d).encode() for d in var.dims]
        shape = [int(s) for s in var.shape]
        # numpy's variable-width StringDType (kind "T": what xarray gives
        # for a Zarr store's vlen-utf8 strings) is read whole, as objects are
        lazy = _is_lazy(var) and var.dtype != object and var.dtype.kind != "T"
        extra: dict = {}
        values = None
        null_cell = None
        if not lazy:
            values = np.asarray(var.values)
            if values.dtype.kind == "T":
                values = values.astype(object)
            if values.dtype == object:
                values, extra, null_cell = _object_to_buffer(name, values)
            elif values.dtype.kind == "c":
                raise TypeError(f"variable {name!r}: complex numbers ({values.dtype}) are not supported")
        dtype = values.dtype if values is not None else _native_dtype(np.dtype(var.dtype))
        if dtype.kind == "c":
            raise TypeError(f"variable {name!r}: complex numbers ({dtype}) are not supported")
        v = _ndarray.NdVariable()
        v.name = name.encode()
        v.ndim = len(dims)
        v.is_coord = 1 if is_coord else 0
        c_dims = (ctypes.c_char_p * max(1, len(dims)))(*dims)
        c_shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        v.dims = ctypes.cast(c_dims, ctypes.POINTER(ctypes.c_char_p))
        v.shape = ctypes.cast(c_shape, ctypes.POINTER(ctypes.c_int64))
        v.dtype = dtype.str.encode()
        block = _block_chunks(name, var, chunks)
        if block:
            c_chunks = (ctypes.c_int64 * len(block))(*block)
            v.chunks = ctypes.cast(c_chunks, ctypes.POINTER(ctypes.c_int64))
            self.keep.append(c_chunks)
        attrs = _attrs_json(name, var.attrs, extra)
        v.attrs_json = attrs
        if null_cell is not None:
            v.null_cell = ctypes.cast(ctypes.c_char_p(null_cell), ctypes.c_void_p)
            self.keep.append(null_cell)
        if values is not None:
            if values.size > 0:
                v.data = values.ctypes.data
                c_strides = (ctypes.c_int64 * max(1, values.ndim))(*values.strides)
                v.strides = ctypes.cast(c_strides, ctypes.POINTER(ctypes.c_int64))
                self.keep.append(c_strides)
            else:
                # nothing is ever read from an empty array, but data must be set
                values = np.zeros(1, dtype=dtype)
                v.data = values.ctypes.data
                v.strides = ctypes.cast((ctypes.c_int64 * max(1, len(shape)))(*([0] * len(shape))),
                                        ctypes.POINTER(ctypes.c_int64))
                self.keep.append(v.strides)
            self.keep.append(values)
        else:
            loader = _loader(name, var, dtype)
            v.load = loader
            self.keep.append(loader)
        self.keep.extend([c_dims, c_shape, attrs, v.name, v.dtype])
        self.vars.append(v)


def _loader(name: str, var, dtype: np.dtype):
    """The load callback of a lazy variable: one block, read through xarray
    (a backend array's lazy indexing, or dask's compute), copied into the
    scan's buffer. An exception becomes the query's error."""

    def load(ctx, ndim, start, count, out, message, cap):
        try:
            key = tuple(slice(start[i], start[i] + count[i]) for i in range(ndim))
            block = np.ascontiguousarray(np.asarray(var[key].values), dtype=dtype)
            expected = int(np.prod([count[i] for i in range(ndim)])) * dtype.itemsize
            if block.nbytes != expected:
                raise ValueError(f"loaded {block.nbytes} bytes for a block of {expected}")
            ctypes.memmove(out, block.ctypes.data, block.nbytes)
            return 0
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the engine as text
            text = f"{type(exc).__name__}: {exc}".encode(errors="replace")[: max(0, cap - 1)]
            ctypes.memmove(message, text + b"\0", len(text) + 1)
            return 1

    return _ndarray.LOAD_FN(load)


# Registrations the plugin still holds: released by the plugin (from any
# thread) once unregistered and no longer in use.
_owners: dict[int, _Registration] = {}
# re-entrant: a finalizer (_Scope.close) may run, on any thread, between two
# bytecodes of a thread holding it, and its release calls back into here
_owners_lock = threading.RLock()
_tokens = itertools.count(1)


def _release_fn(owners: dict, lock):
    def release(owner):
        try:
            with lock:
                owners.pop(int(owner or 0), None)
        except BaseException:  # noqa: BLE001 - nothing may unwind into C
            pass

    return _ndarray.RELEASE_FN(release)


# The plugin calls _release from C whenever the last reference to a
# registration goes, which can be while the interpreter shuts down: an
# engine connection freed then (a SQLite table still open on a dataset
# unregistered earlier) releases its table. By then this module's globals
# may be cleared, which would free the ctypes thunk C still points to
# (a segfault at exit), so the thunk holds what it needs in a closure and
# is never freed (one reference leaked on purpose).
_release = _release_fn(_owners, _owners_lock)
ctypes.pythonapi.Py_IncRef(ctypes.py_object(_release))


def _check_dataset(ds) -> None:
    import xarray as xr

    if isinstance(ds, xr.DataArray):
        raise TypeError("expected an xarray.Dataset, got a DataArray: pass da.to_dataset() "
                        "(da.to_dataset(name=...) when it has no name)")
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected an xarray.Dataset, got {type(ds).__name__}")


def register_dataset(ds, *, name: str = "dataset", chunks: Chunks = None, plugin: str | None = None) -> str:
    """Register every variable of ``ds`` with qlink_ndarray; returns its
    handle, the 32 hex digits (128 random bits) that
    ``qlink_ndarray/dataset?id=HANDLE`` names (plugins/ndarray/README.md,
    "Handles"). Whoever holds the handle can read the Dataset from any
    engine in this process: put it only where the caller's connection
    alone sees it, and unregister it when that closes (:func:`register`
    does both).

    Ownership: the arrays (and their ctypes descriptions) stay referenced
    until :func:`unregister_dataset` and the last query using them ends,
    whichever thread that ends on. Thread-safe."""
    _check_dataset(ds)
    lib = _ndarray.library(plugin)
    reg = _Registration()
    for vname, var in ds.variables.items():
        vname = str(vname)
        is_index = vname in ds.dims and var.ndim == 1 and var.dims[0] == vname
        if is_index:
            var = var.to_base_variable() if hasattr(var, "to_base_variable") else var
            var = var.copy(data=np.asarray(var.values), deep=False)
        reg.add(vname, var, is_coord=vname in ds.coords, chunks=chunks)
    token = next(_tokens)
    with _owners_lock:
        _owners[token] = reg
    message = ctypes.create_string_buffer(1024)
    handle = ctypes.create_string_buffer(_ndarray.ND_HANDLE_HEX + 1)
    arr = (_ndarray.NdVariable * max(1, len(reg.vars)))(*reg.vars)
    reg.keep.append(arr)
    rc = lib.api.register_dataset(arr, len(reg.vars), name.encode(), ctypes.c_void_p(token), _release, handle,
                                  message, len(message))
    if rc != 0:
        with _owners_lock:
            _owners.pop(token, None)
        raise ValueError(f"cannot register Dataset {name!r}: {message.value.decode(errors='replace')}")
    return handle.value.decode()


def unregister_dataset(handle: str, plugin: str | None = None) -> bool:
    """Remove the registration of ``handle`` (specs naming it fail from now
    on; queries already planned keep their data). False if no Dataset is
    registered under it. Thread-safe."""
    return _ndarray.library(plugin).api.unregister_dataset(str(handle).encode()) == 0


def live_datasets(plugin: str | None = None) -> int:
    """Registrations not yet released (unregistered ones still in use count)."""
    return int(_ndarray.library(plugin).api.live_count())


# ------------------------------------------------------------ registering


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
        from .._core import Plugin

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


def _split(ds, table_names: TableNames, case_insensitive: bool):
    """[(table name or None for the single table, sub-Dataset)]."""
    groups = group_vars_by_dims(ds)
    names = table_names_of(ds, table_names, case_insensitive=case_insensitive)
    if len(groups) <= 1:
        return [(None, ds)]
    return [(names[dims], ds[var_names]) for dims, var_names in groups.items()]


def _kind(con) -> str:
    root = type(con).__module__.split(".")[0]
    if root in ("duckdb", "_duckdb"):
        return "duckdb"
    if root == "apsw" or (root == "sqlite3" and type(con).__name__ == "Connection"):
        return "sqlite"
    if root == "qlink" and hasattr(con, "register_schema") and hasattr(con, "register_arrow"):
        return "session"
    if hasattr(con, "register_table") and hasattr(con, "sql") and hasattr(con, "catalog"):
        return "datafusion"
    raise TypeError(
        f"No xarray-sql engine adapter for connection of type {type(con).__module__}.{type(con).__qualname__}: "
        "qlink.xarray takes a DuckDB connection (qlink.duckdb.connect()), a SQLite connection "
        "(qlink.sqlite.connect()) or a datafusion SessionContext"
    )


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


def route_of(connection, name: str) -> str | None:
    """``"zarr"`` or ``"ndarray"``: the route :func:`register` took for
    ``name`` on ``connection``; None if it registered no such name."""
    scope = _scope_of(connection)
    ids = scope.get(name) if scope else None
    return getattr(ids, "route", None) if ids is not None else None


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


# ------------------------------------------------------------ the zarr route

ROUTES = ("auto", "ndarray", "zarr")


class NotRoutable(ValueError):
    """Why a Dataset cannot be served by qlink_zarr from its store
    (:func:`zarr_route`); ``register(..., route="zarr")`` raises it."""


def _wrapped(data):
    """The array a lazy xarray wrapper wraps (the next layer down), or None."""
    return getattr(data, "array", None)


def _full_key(key, shape) -> bool:
    tup = getattr(key, "tuple", None)
    if tup is None or len(tup) != len(shape):
        return False
    for k, n in zip(tup, shape):
        if not isinstance(k, slice) or k.start not in (None, 0) or k.step not in (None, 1):
            return False
        if k.stop is not None and k.stop < n:
            return False
    return True


# the lazy layers xarray puts between a Zarr array and a Dataset variable it
# opened (indexing adapters and the CF decoding of open_dataset); any other
# layer (a selection, arithmetic, a loaded copy) is a change
_LAYERS = {"ImplicitToExplicitIndexingAdapter", "MemoryCachedArray", "CopyOnWriteArray", "_ElementwiseFunctionArray",
           "LazilyIndexedArray", "NativeEndiannessArray", "BoolTypeArray"}


def _backend_chain(var):
    """The outermost lazy layer of an unchanged variable xarray opened:
    its backend chain, or the one a dask array of ``open_dataset`` holds
    as its only source (a graph of exactly that array and its blocks)."""
    data = var._data  # not var.data, which loads a lazy backend array
    if type(data).__module__.startswith("dask"):
        name = getattr(data, "name", "")
        layers = dict(getattr(getattr(data, "dask", None), "layers", {}) or {})
        if not name.startswith("open_dataset-") or set(layers) != {name, f"original-{name}"}:
            return None
        original = layers[f"original-{name}"]
        values = list(original.values()) if hasattr(original, "values") else []
        return values[0] if len(values) == 1 else None
    if not _is_lazy(var):
        return None
    return var._data


def _zarr_array_of(var, shape):
    """The zarr array an unchanged lazily opened variable reads whole, else None."""
    layer = _backend_chain(var)
    while layer is not None and type(layer).__name__ in _LAYERS:
        if type(layer).__name__ == "LazilyIndexedArray" and not _full_key(layer.key, shape):
            return None
        layer = _wrapped(layer)
    if layer is None or type(layer).__name__ != "ZarrArrayWrapper":
        return None
    return getattr(layer, "_array", None)


def _same(a, b) -> bool:
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f"))
        if isinstance(a, (float, np.floating)) and isinstance(b, (float, np.floating)) and a != a and b != b:
            return True
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
        return bool(a == b)
    except (TypeError, ValueError):
        return False


# encoding keys that decide how xarray decoded the stored values
_DECODING = ("units", "calendar", "_FillValue", "missing_value", "scale_factor", "add_offset", "dtype", "_Unsigned")


def _is_nan(v) -> bool:
    try:
        return bool(np.all(np.isnan(np.asarray(v, dtype=float))))
    except (TypeError, ValueError):
        return False


def _check_variable(name: str, var, fresh, root: str) -> None:
    kind = var.dtype.kind
    if kind not in "biufMU":
        raise NotRoutable(f"variable {name!r} is {var.dtype} (the zarr route serves numbers, bools, datetime64 "
                          "and fixed-width strings)")
    if var.dims != fresh.dims or var.shape != fresh.shape or var.dtype != fresh.dtype:
        raise NotRoutable(f"variable {name!r} is {var.dims} {var.shape} {var.dtype}; the store's reads as "
                          f"{fresh.dims} {fresh.shape} {fresh.dtype}")
    if not _same(dict(var.attrs), dict(fresh.attrs)):
        raise NotRoutable(f"variable {name!r}: its attributes differ from the store's")
    for key in _DECODING:
        if not _same(var.encoding.get(key), fresh.encoding.get(key)):
            raise NotRoutable(f"variable {name!r}: its encoding[{key!r}] differs from the store's")
    for key in ("scale_factor", "add_offset", "_Unsigned"):
        if key in var.encoding:
            raise NotRoutable(f"variable {name!r} is packed ({key})")
    for key in ("_FillValue", "missing_value"):
        if key in var.encoding and kind != "M" and not (kind == "f" and _is_nan(var.encoding[key])):
            # xarray holds such cells as NaN, qlink_zarr as NULL
            raise NotRoutable(f"variable {name!r} has {key} {var.encoding[key]!r} (only NaN fills are served alike)")
    if name in var.dims and var.ndim == 1 and _is_lazy(var) is False and not getattr(var, "chunks", None):
        # an index xarray read when it opened the store: its values are the Dataset's to compare
        if not var.equals(fresh):
            raise NotRoutable(f"coordinate {name!r} differs from the store's")
        return
    array = _zarr_array_of(var, var.shape)
    if array is None:
        raise NotRoutable(f"variable {name!r} is not the store's array as opened (selected, computed or loaded)")
    store_root = getattr(getattr(array, "store", None), "root", None)
    if str(getattr(array, "path", "")) != name or store_root is None or \
            os.path.realpath(str(store_root)) != root:
        raise NotRoutable(f"variable {name!r} reads another array than {root}/{name}")


def _utf8_sorted(names: list[str]) -> bool:
    keys = [n.encode() for n in names]
    return keys == sorted(keys)


def zarr_route(ds, table_names: TableNames = None) -> tuple[str, dict]:
    """The local Zarr store ``ds`` was opened from (``xr.open_zarr`` /
    ``open_dataset(engine="zarr")``) and, for each dimension group, the
    table qlink_zarr names it by default, when qlink_zarr would serve
    exactly the rows qlink_ndarray serves for ``ds``; else
    :class:`NotRoutable` saying why. Conservative: ``ds`` must be the
    whole store as xarray's default decoding opened it (the same
    variables in the same order, dimensions, shapes, dtypes, attributes
    and decoding; its indexes equal to the store's coordinates now; every
    other variable still the store's whole array, lazily read: no
    selection, arithmetic, renaming or loaded copy), of numbers, bools,
    datetime64 and fixed-width strings, with no fill value but NaN on
    floats (the route reads NaN cells as the ndarray route does) and
    no packing, no 0-d data variable, and variables in the order
    qlink_zarr lists them (by name)."""
    import xarray as xr

    source = ds.encoding.get("source")
    if not isinstance(source, (str, os.PathLike)):
        raise NotRoutable("the Dataset names no source (encoding['source']): not opened from a store")
    source = str(source)
    if "://" in source:
        raise NotRoutable(f"the store {source} is not a local path")
    root = os.path.realpath(source)
    if not (os.path.isfile(os.path.join(root, "zarr.json")) or os.path.isfile(os.path.join(root, ".zgroup"))):
        raise NotRoutable(f"{source} is not a Zarr store (no zarr.json or .zgroup)")
    groups = group_vars_by_dims(ds)
    if not groups:
        raise NotRoutable("the Dataset has no data variables")
    if () in groups:
        raise NotRoutable("the Dataset has 0-d data variables")
    defaults = {dims: "_".join(dims) for dims in groups}
    if len(set(defaults.values())) != len(defaults) or "scalars" in defaults.values():
        raise NotRoutable("dimension groups whose joined names clash")
    table_names_of(ds, table_names)  # the ndarray route's naming errors first
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fresh = xr.open_zarr(root, chunks=None)
    except Exception as exc:  # noqa: BLE001 - any failure: the store is not what the Dataset came from
        raise NotRoutable(f"the store {source} does not open as a Dataset ({type(exc).__name__}: {exc})") from None
    with fresh:
        if list(ds.variables) != list(fresh.variables) or set(ds.coords) != set(fresh.coords):
            raise NotRoutable(f"the Dataset's variables {list(ds.variables)} are not the store's "
                              f"{list(fresh.variables)}")
        if dict(ds.sizes) != dict(fresh.sizes):
            raise NotRoutable(f"the Dataset's dimensions {dict(ds.sizes)} are not the store's {dict(fresh.sizes)}")
        for name, var in ds.variables.items():
            _check_variable(str(name), var, fresh.variables[name], root)
    if not _utf8_sorted([str(v) for v in ds.data_vars]) or \
            not _utf8_sorted([str(c) for c in ds.coords if c not in ds.dims]):
        raise NotRoutable("the variables are not in the order qlink_zarr lists them (by name)")
    return root, defaults


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


def _choose_route(ds, route: str, chunks: Chunks) -> bool:
    """True to try the zarr route for ``ds`` (ValueError for a bad ``route``)."""
    if route not in ROUTES:
        raise ValueError(f"route must be one of {', '.join(map(repr, ROUTES))}, not {route!r}")
    if route == "ndarray":
        return False
    if route == "zarr":
        if chunks:
            raise ValueError("route='zarr' reads the store's own chunks; chunks= sets blocks of the ndarray route")
        return True
    return not chunks


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
    ATTACHed database, created as ``name``) or a datafusion-python
    ``SessionContext`` (qlink capsule tables; needs the qlink wheel).
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
    to tune here (the scan is C); any other keyword is a TypeError.

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
    store = None
    if _choose_route(ds, route, chunks):
        try:
            store = zarr_route(ds, table_names)
        except NotRoutable:
            if route == "zarr":
                raise
    zarr = store is not None
    route = "zarr" if zarr else "ndarray"
    scope = _scope_of(connection, kind)
    if kind == "session":
        handles = _register_session(connection, name, ds, plugin_file, table_names, chunks, store, nan_fill)
        scope.put(name, _Ids(handles, route, plugin=plugin_file))
        return connection
    parts = _split(ds, table_names, case_insensitive=kind == "duckdb")
    handles: list[str] = []
    try:
        if zarr:
            sources = _zarr_sources(ds, parts, store, plugin_file, nan_fill)
        else:
            for group, part in parts:
                handles.append(register_dataset(part, name=name if group is None else f"{name}.{group}",
                                                chunks=chunks, plugin=plugin_file))
            sources = [_ndarray_source(plugin_file, handle, nan_fill) for handle in handles]
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


def unregister(connection, name: str) -> int:
    """Drop the registrations ``register(connection, name, ...)`` made;
    returns how many. Tables opened afterwards fail ("no registered Dataset
    with this handle"): DuckDB's views open a scan per query, so they fail
    at once; a SQLite virtual table already connected holds its provider
    and keeps serving the data until it is dropped or its connection
    closes. Closing the connection unregisters every name it holds."""
    scope = _scope_of(connection)
    ids = scope.pop(name) if scope else None
    if ids is None:
        return 0
    ids.release()
    return len(ids)


def _templates_of(connection):
    return getattr(connection, "_registered_datasets", None)


def read_xarray_table(ds, chunks: Chunks = None, *, coord_arrays=None, plugin: str | None = None,
                      nan_fill: str = "null"):
    """One Dataset (its variables sharing dimensions, as xarray-sql 0.6's
    ``read_xarray_table``) as a qlink table for a datafusion-python
    ``SessionContext.register_table`` or a catalog schema's. Needs the
    qlink wheel. The registration lasts as long as the returned table
    object (``coord_arrays``, xarray-sql's cache of coordinates it would
    otherwise read again, changes nothing: coordinates are read once).
    ``nan_fill`` as :func:`register`'s."""
    from .._core import Plugin

    nan = _nan_options(nan_fill, zarr=False)
    path = _ndarray.library(plugin).path
    groups = group_vars_by_dims(ds)
    if len(groups) > 1:
        raise ValueError(f"read_xarray_table takes variables of one set of dimensions; this Dataset has "
                         f"{len(groups)} ({', '.join(map(str, groups))}): register it with register() or "
                         "Context.from_dataset, which make a table per group")
    handle = register_dataset(ds, name="read_xarray_table", chunks=chunks, plugin=path)
    try:
        table = Plugin(path).table("dataset", id=handle, **nan)
    except BaseException:
        unregister_dataset(handle, path)
        raise
    try:
        weakref.finalize(table, unregister_dataset, handle, path)
    except TypeError:  # not weak-referenceable: registered until the process ends
        pass
    return table


# ------------------------------------------------------------- round trip


def _as_arrow(result):
    import pyarrow as pa

    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatch):
        return pa.Table.from_batches([result])
    if hasattr(result, "to_arrow_table"):
        return result.to_arrow_table()
    if hasattr(result, "arrow") and callable(result.arrow):  # a DuckDB relation
        table = result.arrow()
        return table if isinstance(table, pa.Table) else table.read_all()
    if hasattr(result, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(result).read_all()
    if hasattr(result, "read_all"):
        return result.read_all()
    raise TypeError(f"cannot read an Arrow table from {type(result).__name__}")


def _cftime_back(values: np.ndarray, calendar: str) -> np.ndarray:
    import cftime

    out = np.empty(len(values), dtype=object)
    for i, text in enumerate(values):
        if text is None or text == "":
            out[i] = None
            continue
        date, _, clock = str(text).partition("T")
        y, m, d = (int(p) for p in date.split("-"))
        hh, mm, ss = clock.split(":") if clock else ("0", "0", "0")
        sec, _, frac = ss.partition(".")
        out[i] = cftime.datetime(y, m, d, int(hh), int(mm), int(sec), int((frac or "0").ljust(6, "0")[:6]),
                                 calendar=calendar)
    return out


def to_dataset(result, dims: list[str] | None = None, template=None, sparsity: str = "result",
               fill_value: Any = np.nan, chunks=None, coords: str = "discover", max_result_bytes: int | None = None,
               spill=False, *, scanned=None):
    """A labelled ``xarray.Dataset`` from a query result (a pyarrow Table or
    RecordBatch, a DuckDB relation, a DataFrame of :meth:`Context.sql`, any
    ``__arrow_c_stream__``): ``dims`` (default: the ``template``'s
    dimensions present in the result) become dimensions, the other columns
    data variables; with a template, its attributes, the dtype of its
    dimension coordinates (cftime dates again), its non-dimension
    coordinates over the kept dimensions and, with
    ``sparsity="template"``, its full coordinate ranges (missing cells
    ``fill_value``) are restored. The result is read whole, once:
    ``chunks`` (a mapping or ``"auto"``) chunks the Dataset built from it
    with dask, ``"inherit"`` (the default of ``Context.sql(...).to_dataset``)
    as the template is along the dimensions it cuts into several chunks; ``coords``, ``max_result_bytes`` and ``spill`` (xarray-sql's
    controls of its lazy re-executing reader) are accepted and change
    nothing here. ``scanned`` (what :meth:`Context.sql`'s ``to_dataset``
    passes: the registered Dataset of the one table the query scans) gives
    the dimension coordinates' order before the template does: a template
    of another table never reorders the scanned one's coordinates. Dimension columns come back to the template's types:
    zone-aware times as its UTC instants, durations sent as text ("21600s",
    as MySQL and Trino return them) as timedelta64, float16 through
    float32 (pandas has no float16 index)."""
    import pandas as pd
    import xarray as xr

    if sparsity == "template" and template is None:
        raise ValueError("sparsity='template' requires template= to be supplied (the Dataset whose coordinates "
                         "the result is reindexed to)")
    table = _as_arrow(result)
    columns = list(table.column_names)
    if dims is None:
        if template is None:
            raise ValueError("dims cannot be inferred without a template: pass dims=[...] or template=")
        dims = [str(d) for d in template.dims if str(d) in columns]
    missing = [d for d in dims if d not in columns]
    if missing:
        raise ValueError(f"dimensions {missing} are not columns of the result (columns: {columns})")
    df = table.to_pandas()
    for d in dims:
        col = df[d]
        want = template[d].dtype if template is not None and d in template.coords else None
        if isinstance(col.dtype, pd.DatetimeTZDtype):
            df[d] = col.dt.tz_convert("UTC").dt.tz_localize(None)
        elif want is not None and want.kind == "m" and pd.api.types.is_string_dtype(col):
            df[d] = pd.to_timedelta(col)
        elif col.dtype == np.float16:
            df[d] = col.astype(np.float32)
    if template is not None:
        for d in dims:
            if d in template.coords and template[d].dtype == object and _is_cftime_array(np.asarray(template[d].values)):
                cal = next(v.calendar for v in template[d].values.reshape(-1) if v is not None)
                df[d] = _cftime_back(df[d].to_numpy(), cal)
    if df.duplicated(subset=dims).any():
        raise ValueError(f"the result has several rows for some {tuple(dims)}: they are not dimensions of it")
    out = df.set_index(dims).to_xarray() if dims else xr.Dataset({c: ((), df[c].iloc[0]) for c in df.columns})
    if template is None:
        return out.chunk(chunks) if chunks is not None and chunks != "inherit" else out
    if sparsity == "template":
        out = out.reindex({d: template[d].values for d in dims if d in template.coords}, fill_value=fill_value)
    elif sparsity == "result":
        # the template's coordinate order (to_xarray sorts): a descending latitude stays descending
        order = {}
        for d in dims:
            for source in (scanned, template):
                if source is None or d not in source.coords or source[d].ndim != 1:
                    continue
                want = source[d].values
                if want.dtype == np.float16:
                    want = want.astype(np.float32)
                try:
                    keep = want[pd.Index(want).isin(out[d].values)]
                except (TypeError, NotImplementedError):
                    continue
                if len(keep) == out.sizes[d]:
                    order[d] = keep
                    break
        if order:
            out = out.reindex(order)
    else:
        raise ValueError(f"sparsity must be 'result' or 'template', not {sparsity!r}")
    for d in dims:
        if d in template.coords:
            want = template[d].dtype
            if want != out[d].dtype and want != object:
                try:
                    out = out.assign_coords({d: out[d].values.astype(want)})
                except (TypeError, ValueError, NotImplementedError):
                    pass
            out[d].attrs = dict(template[d].attrs)
    for name in out.data_vars:
        if name in template.variables:
            src = template[name]
            out[name].attrs = dict(src.attrs)
            # the storage encoding survives, less what is bound to the stored dtype (SQL may have cast it)
            out[name].encoding = {k: v for k, v in src.encoding.items()
                                  if k not in ("dtype", "_FillValue", "missing_value", "scale_factor", "add_offset",
                                               "units", "calendar", "chunks", "preferred_chunks", "source",
                                               "original_shape")}
            # a plain select of the variable (all its dimensions kept) gets its dtype back where the
            # engine widened it (bool as an integer, integers as floats once NaN-padded) and no value
            # changes; an aggregate over fewer dimensions keeps the engine's type
            same_dims = set(out[name].dims) == set(src.dims)
            if same_dims and src.dtype.kind in "biu" and out[name].dtype != src.dtype and not out[name].isnull().any():
                cast = out[name].astype(src.dtype)
                if (cast.astype(out[name].dtype) == out[name]).all():
                    attrs = out[name].attrs
                    out[name] = cast
                    out[name].attrs = attrs
    extra = {c: template.coords[c] for c in template.coords
             if c not in out.coords and c not in dims and set(template.coords[c].dims) <= set(dims)
             and all(template.sizes[x] == out.sizes.get(x) for x in template.coords[c].dims)}
    if extra:
        try:
            out = out.assign_coords({c: v.sel({x: out[x].values for x in v.dims}) for c, v in extra.items()})
        except (KeyError, ValueError):
            pass
    out.attrs = dict(template.attrs)
    if isinstance(chunks, str) and chunks == "inherit":
        # the template's dask chunks along the dimensions it cuts into several; eager where it cuts none
        sizes = {d: template.chunksizes[d] for d in out.dims
                 if d in template.chunksizes and len(template.chunksizes[d]) > 1}
        chunks = {d: c[0] for d, c in sizes.items()} if sizes else None
    return out.chunk(chunks) if chunks is not None else out


# ---------------------------------------------------------- DataFusion


def _context_class():
    try:
        importlib.import_module("qlink._core")
    except ImportError as exc:
        raise ImportError("qlink.xarray.Context needs the qlink wheel (its native module qlink._qlink, which "
                          "python/build.sh builds); register() on DuckDB and SQLite works without it") from exc
    from datafusion import SessionContext

    class XarrayDataFrame:
        """A DataFusion DataFrame with :meth:`to_dataset`; every other
        member is the DataFrame's."""

        def __init__(self, inner, templates):
            self._inner = inner
            self._templates = templates

        def to_pandas(self):
            return self._inner.to_pandas()

        def to_arrow_table(self):
            return self._inner.to_arrow_table()

        def to_dataset(self, dims=None, *, dimension_columns=None, template=None, sparsity="result",
                       fill_value=np.nan, chunks="inherit", **kwargs):
            dims = dims if dims is not None else dimension_columns
            table = self._inner.to_arrow_table()
            scanned = self._scanned()
            if isinstance(template, str):
                if template not in self._templates:
                    raise ValueError(f"template {template!r} is not a registered table (registered: "
                                     f"{sorted(self._templates)})")
                template = self._templates[template]
            elif template is None and self._templates:
                # the registered Dataset (table) sharing most names with the result's columns
                cols = set(table.column_names)

                def overlap(t):
                    return len(cols & ({str(d) for d in t.dims} | {str(v) for v in t.data_vars}))

                scores = [(overlap(t), t) for t in self._templates.values()]
                top = max(score for score, _ in scores)
                best = [t for score, t in scores if score == top]
                template = best[0] if top and len(best) == 1 else None  # ambiguous: no template
            return to_dataset(table, dims, template, sparsity=sparsity, fill_value=fill_value, chunks=chunks,
                              scanned=scanned if scanned is not template else None, **kwargs)

        def _scanned(self):
            """The registered Dataset of the one registered table the query
            scans (xarray-sql takes the coordinates from it, whatever
            ``template`` says); None for none or several."""
            import re

            try:
                plan = self._inner.logical_plan().display_indent()
            except Exception:  # noqa: BLE001 - no plan to read: no scanned table known
                return None
            names = {n for n in re.findall(r"^\s*TableScan: (\S+)", plan, re.M) if n in self._templates}
            return self._templates[names.pop()] if len(names) == 1 else None

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def __repr__(self):
            return repr(self._inner)

    class Context(SessionContext):
        """A datafusion-python ``SessionContext`` whose ``from_dataset``
        registers xarray Datasets as qlink tables (module documentation)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._registered_datasets = {}

        def from_dataset(self, name: str, input_table, *, table_names: TableNames = None, chunks: Chunks = None,
                         plugin: str | None = None, route: str = "auto", nan_fill: str = "null"):
            """Register ``input_table`` as :func:`register` does (``route``:
            ``"auto"``, ``"ndarray"`` or ``"zarr"``; ``nan_fill``: ``"null"``
            or ``"nan"``; as documented there)."""
            register(self, name, input_table, table_names=table_names, chunks=chunks, plugin=plugin, route=route,
                     nan_fill=nan_fill)
            if not getattr(self, "_cftime_udf", False) and any(
                    v.dtype == object and _is_cftime_array(np.asarray(v.values)) for v in input_table.coords.values()):
                self._register_cftime_udf()
            return self

        def _register_cftime_udf(self):
            import pyarrow as pa
            from datafusion import udf

            def cftime_fn(values: pa.Array) -> pa.Array:
                return pa.array([cftime_text(v) for v in values.to_pylist()], pa.string())

            self.register_udf(udf(cftime_fn, [pa.string()], pa.string(), "immutable", name="cftime"))
            self._cftime_udf = True

        def sql(self, query: str, *args, **kwargs):
            return XarrayDataFrame(super().sql(query, *args, **kwargs), self._registered_datasets)

    return Context


def __getattr__(name: str):
    if name in ("Context", "XarrayContext"):
        cls = _context_class()
        globals()["Context"] = globals()["XarrayContext"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
