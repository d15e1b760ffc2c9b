# SPDX-License-Identifier: Apache-2.0
"""Datasets as Polars LazyFrames: :func:`to_polars` (one dimension group)
and :func:`to_polars_tables` (every group, named as xarray-sql 0.6's
``arrow_datasets`` names them), over :mod:`qlink.polars`."""

from __future__ import annotations

import importlib

from ._buffers import _check_dataset
from ._engines import _nan_options
from ._naming import Chunks, TableNames, group_vars_by_dims, table_names_of
from ._polars import _frames, _Owner, _release
from ._register import _sources, _split, _store_for

_ndarray = importlib.import_module("qlink._ndarray")  # importlib: see _buffers.py


def to_polars_tables(ds, name: str | None = None, *, chunks: Chunks = None, table_names: TableNames = None,
                     route: str = "auto", nan_fill: str = "null", plugin: str | None = None,
                     batch_size: int | None = None) -> dict:
    """One ``polars.LazyFrame`` per dimension group of ``ds``, by table name.

    The names are those xarray-sql 0.6's ``arrow_datasets(ds, name,
    table_names=...)`` gives its Polars tables: ``name_<group>`` (the bare
    group name without ``name``; groups named by ``table_names`` or their
    dimensions joined by ``_``, ``scalar`` for 0-d variables), and a
    Dataset of one group is one frame keyed ``name`` (its group's name
    without ``name``). Register them on a ``polars.SQLContext`` one by one,
    or let :func:`register` do it (``register(pl.SQLContext(), name,
    ds)``, which also names them ``name.<group>``).

    ``chunks``, ``route``, ``nan_fill`` and ``plugin`` are
    :func:`register`'s (the variables by reference through qlink_ndarray,
    or a local Zarr store's chunks through qlink_zarr); ``batch_size`` is
    :func:`qlink.polars.scan`'s (rows per batch). Each frame scans as
    :func:`qlink.polars.scan` does: projection, predicate and row limit
    reach the plugin, so a filter on a dimension prunes blocks.

    Ownership: the frames share one ``qlink.Session`` and hold the
    Dataset's registration; it is released when the last frame (or frame
    derived from one) is collected, and the Dataset's arrays are read in
    place until then. Thread-safety: the frames may be collected from any
    thread. Errors: as :func:`register` (TypeError for a non-Dataset,
    ValueError for a bad ``nan_fill``, ``route`` or ``chunks``,
    :class:`NotRoutable` for ``route="zarr"`` off a store); ImportError
    without the qlink wheel or polars.
    """
    _nan_options(nan_fill, zarr=False)
    _check_dataset(ds)
    plugin_file = _ndarray.library(plugin).path
    store = _store_for(ds, route, chunks, table_names)
    parts = _split(ds, table_names, case_insensitive=False)
    handles: list[str] = []
    try:
        sources = _sources(ds, name or "polars", parts, store, chunks, plugin_file, nan_fill, handles)
        frames = _frames(sources, _Owner(handles, plugin_file), batch_size)
    except BaseException:
        _release(handles, plugin_file)
        raise
    if parts[0][0] is None:
        only = name or next(iter(table_names_of(ds, table_names).values()), "scalar")
        return {only: frames[0]}
    return {(f"{name}_{group}" if name else group): frame for (group, _), frame in zip(parts, frames)}


def to_polars(ds, chunks: Chunks = None, *, route: str = "auto", nan_fill: str = "null", plugin: str | None = None,
              batch_size: int | None = None):
    """``ds`` as one ``polars.LazyFrame``, the Polars counterpart of
    xarray-sql 0.6's ``pl.scan_pyarrow_dataset(xql.arrow_dataset(ds))``:
    every data variable must have the same dimensions (ValueError
    otherwise, as ``arrow_dataset`` says; :func:`to_polars_tables` splits
    a Dataset by dimension group). Columns: the dimensions, the
    non-dimension coordinates, then the data variables, one row per
    coordinate tuple in C order (the XQL model). Options, ownership,
    thread-safety and errors as :func:`to_polars_tables`."""
    _check_dataset(ds)
    groups = group_vars_by_dims(ds)
    if len(groups) > 1:
        raise ValueError(f"All dimensions must be equal. Please filter data_vars in the Dataset: its variables "
                         f"have {len(groups)} sets of dimensions ({', '.join(map(str, groups))}); "
                         "to_polars_tables(ds, name) makes a frame per set")
    return next(iter(to_polars_tables(ds, chunks=chunks, route=route, nan_fill=nan_fill, plugin=plugin,
                                      batch_size=batch_size).values()))
