# SPDX-License-Identifier: Apache-2.0
"""The public :class:`qlink.Session`: qlink._core's Session plus
:meth:`~Session.register_dataset`, which hands an ``xarray.Dataset`` to
:func:`qlink.xarray.register`.

It lives here, above both, so that imports point down: qlink.xarray builds
on qlink._core's Session (as one of its engines) and this module builds on
qlink.xarray. qlink.xarray is imported on the first call, so ``import
qlink`` does not import xarray."""

from __future__ import annotations

from . import _core


class Session(_core.Session):
    __doc__ = _core.Session.__doc__

    def register_dataset(self, name: str, ds, *, table_names=None, chunks=None, route="auto", nan_fill="null"):
        """Register an ``xarray.Dataset``'s variables by reference (the
        qlink_ndarray plugin; an unchanged Dataset opened from a local Zarr
        store through qlink_zarr, ``route``), named as xarray-sql 0.6
        names its tables: ``name``, or ``name.<dims>`` per dimension group.
        Returns the session. See :func:`qlink.xarray.register` (its
        arguments and errors)."""
        from .xarray import register

        register(self, name, ds, table_names=table_names, chunks=chunks, route=route, nan_fill=nan_fill)
        return self
