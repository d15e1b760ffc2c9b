# SPDX-License-Identifier: Apache-2.0
"""DataFusion: :func:`read_xarray_table` (one Dataset as a qlink table for
a datafusion-python ``SessionContext``) and the ``Context`` class, a
``SessionContext`` with ``from_dataset`` (made on first use: it needs
datafusion-python and the qlink wheel)."""

from __future__ import annotations

import importlib
import weakref

import numpy as np

from ._buffers import register_dataset, unregister_dataset
from ._cftime import _is_cftime_array, cftime_text
from ._engines import _nan_options
from ._naming import Chunks, TableNames, group_vars_by_dims
from ._register import register
from ._roundtrip import to_dataset

_ndarray = importlib.import_module("qlink._ndarray")  # importlib: see _buffers.py


def read_xarray_table(ds, chunks: Chunks = None, *, coord_arrays=None, plugin: str | None = None,
                      nan_fill: str = "null"):
    """One Dataset (its variables sharing dimensions, as xarray-sql 0.6's
    ``read_xarray_table``) as a qlink table for a datafusion-python
    ``SessionContext.register_table`` or a catalog schema's. Needs the
    qlink wheel. The registration lasts as long as the returned table
    object (``coord_arrays``, xarray-sql's cache of coordinates it would
    otherwise read again, changes nothing: coordinates are read once).
    ``nan_fill`` as :func:`register`'s."""
    from .._qlink import Plugin

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


def _context_class():
    try:
        importlib.import_module("qlink._qlink")
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
            # qlink's codecs, so a query planner installed on this context
            # (set_query_planner, with_extensions) receives its tables.
            from .._codecs import codecs

            self.ctx = self.with_extensions(codecs()).ctx
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

        def with_extensions(self, *extensions):
            """``SessionContext.with_extensions``, returning a Context (on
            the same session, sharing its registered Datasets)."""
            derived = super().with_extensions(*extensions)
            new = type(self).__new__(type(self))
            new.__dict__.update(self.__dict__)
            new.ctx = derived.ctx
            return new

        def sql(self, query: str, *args, **kwargs):
            return XarrayDataFrame(super().sql(query, *args, **kwargs), self._registered_datasets)

    return Context
