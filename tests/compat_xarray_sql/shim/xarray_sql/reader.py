# SPDX-License-Identifier: Apache-2.0
"""xarray_sql.reader: read_xarray_table as qlink.xarray's (a qlink table);
its other names are stand-ins (_internal.py)."""
import qlink.xarray as _q

from ._internal import module_getattr as _m

read_xarray_table = _q.read_xarray_table
__getattr__ = _m(__name__)
