# SPDX-License-Identifier: Apache-2.0
"""xarray_sql for the compatibility run: xarray-sql 0.6's public API
(Context / XarrayContext, register, to_dataset, FlightSQLServer, serve)
answered by qlink.xarray;
every other name is an internal stand-in (_internal.py)."""

import qlink.xarray as _q

from ._internal import context as _context
from ._internal import install as _install
from ._internal import module_getattr as _module_getattr

_install()
from . import cftime  # noqa: E402,F401  (a stand-in module)

register = _q.register
to_dataset = _q.to_dataset
read_xarray_table = _q.read_xarray_table
FlightSQLServer = _q.FlightSQLServer
serve = _q.serve
__version__ = "0.6.0+qlink"

_fallback = _module_getattr("xarray_sql")


def __getattr__(name):
    if name in ("Context", "XarrayContext"):
        return _context(name)
    return _fallback(name)
