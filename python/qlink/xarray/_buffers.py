# SPDX-License-Identifier: Apache-2.0
"""Variable buffers: a Dataset's variables described to qlink_ndarray
(``struct nd_variable`` through qlink._ndarray), numpy buffers read in
place, object arrays converted to fixed-width ones, lazy variables loaded
per block; and the registry calls over them (:func:`register_dataset`,
:func:`unregister_dataset`, :func:`live_datasets`) with the owners kept
alive until the plugin releases them."""

from __future__ import annotations

import ctypes
import importlib
import itertools
import json
import math
import threading
from collections.abc import Mapping

import numpy as np

from ._cftime import _CFTIME_ATTR, _is_cftime_array, _iso
from ._naming import Chunks

# importlib, not "from qlink import": without the native module the
# package's __getattr__ answers every missing name with an ImportError
_ndarray = importlib.import_module("qlink._ndarray")


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
