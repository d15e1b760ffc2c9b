# SPDX-License-Identifier: Apache-2.0
"""Polars' side of a registration: LazyFrames over the providers
(:mod:`qlink.polars`, one qlink.Session shared by a Dataset's frames), a
``polars.SQLContext``'s tables, and the owner that releases a Dataset's
qlink_ndarray handles once no frame needs them."""

from __future__ import annotations

import weakref

from ._buffers import unregister_dataset
from ._scope import _objects_of


def _release(handles: list[str], plugin: str) -> None:
    for handle in handles:
        unregister_dataset(handle, plugin)


class _Owner:
    """Holds a registration's qlink_ndarray handles for the LazyFrames over
    them: every frame (and every frame Polars derives from one) references
    it through its IO source, and its collection, once the last of them
    is gone, releases the handles. Empty for the zarr route. Thread-safe
    (the finalizer runs once, on whichever thread drops the last frame)."""

    def __init__(self, handles: list[str], plugin: str):
        self.handles = tuple(handles)
        if self.handles:
            weakref.finalize(self, _release, list(self.handles), plugin)


def _frames(sources, owner: _Owner, batch_size: int | None) -> list:
    """One ``polars.LazyFrame`` per source, on one new qlink.Session."""
    from .. import polars as qpolars

    session = qpolars._new_session(batch_size)
    return [qpolars.scan(src.spec(), session=session, batch_size=batch_size, _keep=owner) for src in sources]


def _register_polars(ctx, name: str, parts, sources, owner: _Owner, batch_size: int | None) -> list:
    """Register the frames on a ``polars.SQLContext``: ``name`` for a
    Dataset of one dimension group, else ``name.<group>`` (Polars' SQL
    reads the dotted name as one table name) and xarray-sql's
    ``name_<group>`` for each group. Names an earlier registration of
    ``name`` made that this one does not are unregistered. Returns the
    names registered."""
    frames = _frames(sources, owner, batch_size)
    if parts[0][0] is None:
        made = [(name, frames[0])]
    else:
        made = []
        for (group, _), frame in zip(parts, frames):
            made += [(f"{name}.{group}", frame), (f"{name}_{group}", frame)]
    names = [n for n, _ in made]
    stale = [n for n in _objects_of(ctx, name) if n not in names]
    if stale:
        ctx.unregister(stale)
    for table, frame in made:
        ctx.register(table, frame)
    return names


def _unregister_polars(ctx, names) -> None:
    """Drop the tables a registration made (those still there)."""
    present = set(ctx.tables())
    gone = [n for n in names if n in present]
    if gone:
        ctx.unregister(gone)
