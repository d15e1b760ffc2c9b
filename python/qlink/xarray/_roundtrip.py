# SPDX-License-Identifier: Apache-2.0
"""The round trip: a query's result back into a labelled
``xarray.Dataset`` (:func:`to_dataset`), with a template's coordinates,
dtypes and attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._cftime import _cftime_back, _is_cftime_array


def _as_arrow(result):
    import pyarrow as pa

    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatch):
        return pa.Table.from_batches([result])
    if type(result).__module__.split(".")[0] == "polars" and hasattr(result, "collect"):  # a LazyFrame
        result = result.collect()
    if hasattr(result, "to_arrow_table"):
        return result.to_arrow_table()
    if hasattr(result, "arrow") and callable(result.arrow):  # a DuckDB relation
        table = result.arrow()
        return table if isinstance(table, pa.Table) else table.read_all()
    if hasattr(result, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(result).read_all()
    if hasattr(result, "read_all"):
        return result.read_all()
    if hasattr(result, "fetch_arrow_table"):  # a DB-API cursor of ADBC (a Flight SQL client's, say)
        return result.fetch_arrow_table()
    raise TypeError(f"cannot read an Arrow table from {type(result).__name__}")


def to_dataset(result, dims: list[str] | None = None, template=None, sparsity: str = "result",
               fill_value: Any = np.nan, chunks=None, coords: str = "discover", max_result_bytes: int | None = None,
               spill=False, *, scanned=None):
    """A labelled ``xarray.Dataset`` from a query result (a pyarrow Table or
    RecordBatch, a DuckDB relation, an ADBC cursor after ``execute`` (a
    Flight SQL client's), a DataFrame of :meth:`Context.sql`, any
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
            if want != out[d].dtype and want != object:  # noqa: E721 (numpy dtypes compare equal to object)
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
