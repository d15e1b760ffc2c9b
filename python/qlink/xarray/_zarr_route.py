# SPDX-License-Identifier: Apache-2.0
"""The Zarr route: whether a Dataset is a local Zarr store as xarray
opened it, unchanged, so that qlink_zarr serves it straight from the store
with the rows qlink_ndarray would serve (:func:`zarr_route`), and when
:func:`~qlink.xarray.register` tries it."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

import numpy as np

from ._buffers import _is_lazy
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of


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
