# SPDX-License-Identifier: Apache-2.0
"""xarray_sql.backends: register as qlink.xarray's; the rest stand-ins."""
import qlink.xarray as _q

from .._internal import module_getattr as _m

register = _q.register
__getattr__ = _m(__name__)
