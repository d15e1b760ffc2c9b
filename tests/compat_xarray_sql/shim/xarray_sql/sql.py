# SPDX-License-Identifier: Apache-2.0
"""xarray_sql.sql: Context, as qlink.xarray's."""
import qlink.xarray as _q  # noqa: F401 (the import registers the shim's route)

from ._internal import context as _context

from ._internal import module_getattr as _m

_fallback = _m(__name__)


def __getattr__(name):
    if name in ("Context", "XarrayContext"):
        return _context(name)
    return _fallback(name)
