# SPDX-License-Identifier: Apache-2.0
"""qlink for Python: query qlink plugins with DataFusion.

Two ways in:

- :class:`Session`, an embedded DataFusion 55.2 host. Plugins, their
  tables, schemas, functions and planners, object stores and a memory limit
  are registered on it; :meth:`Session.sql` returns a ``pyarrow.Table`` and
  :meth:`Session.sql_reader` a ``pyarrow.RecordBatchReader``. The GIL is
  released while a query runs. The runtime environment (memory pool, object
  stores) is the session's own, so plugins see the limit and the stores.
- :class:`Plugin`, a loaded plugin (``Plugin(path)``), whose objects also
  plug into datafusion-python 55 through its capsule protocol:
  ``ctx.register_table(name, plugin.table(provider, **options))``,
  ``ctx.register_udf(datafusion.udf(plugin.udf(name)))`` (``udaf``,
  ``udwf`` likewise) and ``ctx.set_query_planner(plugin.planner(name))``.
  Tables scan through qlink's own entry points: no per-scan or per-execute
  rebuild of the session (see python/DESIGN.md). A datafusion-python of
  another major version raises :class:`VersionMismatchError`.

:mod:`qlink.polars` reads a plugin table as a ``polars.LazyFrame`` over a
:class:`Session` (``qlink.polars.scan("PLUGIN/PROVIDER?key=value")``), with
Polars' projection, predicate and row limit pushed into the plugin's scan.

Errors are subclasses of :class:`QlinkError` carrying the plugin's own
message: :class:`PlanError` (bad SQL, unknown table or option),
:class:`ExecutionError` (a failure while running, including a plugin's),
:class:`ResourcesExhaustedError` (the memory limit refused a reservation),
:class:`NotSupportedError`, :class:`PluginError` (loading or opening a
plugin), :class:`VersionMismatchError` and :class:`TableExistsError` (a
:class:`PlanError`: a Zarr store's tables or schema would take a name
already in use). Nothing a plugin does aborts the
interpreter: the host turns panics and plugin failures into these errors.

Everything native ships inside the package: the plugins (``qlink_sample``,
``qlink_zarr``, ``qlink_fold``, ``qlink_ndarray``) in :func:`plugin_dir`
(:func:`plugin_path` names one), the DuckDB and SQLite extensions that
qlink.duckdb and qlink.sqlite load. ``QLINK_BUILD_DIR``, when set, names a
C build to use instead (qlink/_resources.py).
"""

from __future__ import annotations

from ._resources import plugin_dir  # noqa: F401  (pure Python: there without the native module too)

try:
    from ._core import *  # noqa: F401,F403  (the names listed in _core.__all__)
    from ._core import __all__ as _CORE_ALL
    from ._core import __version__  # noqa: F401
    from ._session import Session  # noqa: F401  (_core's Session plus register_dataset)
    from ._zarr import ZarrStore, zarr  # noqa: F401  (qlink.zarr is the function; the module is qlink._zarr)

    __all__ = [*_CORE_ALL, "ZarrStore", "zarr"]
except ModuleNotFoundError as _missing:
    # Only the native module may be missing: qlink.sqlite (the SQLite host)
    # needs the C build alone. Every native name then explains itself.
    if _missing.name != "qlink._qlink":
        raise
    _NATIVE_ERROR = _missing

    def __getattr__(name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ImportError(
            f"qlink.{name} needs qlink's native module, which is not built here (python/build.sh builds it); "
            "qlink.sqlite works without it"
        ) from _NATIVE_ERROR
