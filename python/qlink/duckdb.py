"""qlink plugins inside DuckDB, through the qlink DuckDB extension.

Needs only the C build (``make build-release`` or the CMake release build)
and the ``duckdb`` Python package (pinned in scripts/requirements.txt): no
DataFusion, no Rust, and it does not import qlink's native module::

    import qlink.duckdb
    con = qlink.duckdb.connect()                    # plugins from build/release/plugins
    con.execute("SELECT sum(value) FROM qlink_scan('qlink_sample/series?stop=10')").fetchall()
    con.execute("CALL qlink_attach('era5', 'qlink_zarr/store?path=/data/era5.zarr')")

``connect(database=":memory:", plugin_dirs=None, extension=None, config=None)``
opens the database with unsigned extensions allowed, loads the extension
(``extension_path()``) and allows the directories ``plugin_dirs`` (default:
``QLINK_PLUGIN_PATH`` if set, which the extension reads itself, else the
build's ``plugins/`` folder) with ``qlink_allow``. The list is sealed as soon
as a plugin loads; to hand the connection to untrusted SQL before that, run
``SET lock_configuration = true`` on it.
"""

from __future__ import annotations

import os
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[2]


def _build_dir() -> Path:
    return Path(os.environ.get("QLINK_BUILD_DIR", _ROOT / "build" / "release"))


def extension_path() -> str:
    """The qlink DuckDB extension: ``QLINK_DUCKDB_EXTENSION``, else
    ``hosts/duckdb/qlink.duckdb_extension`` in the build directory
    (``QLINK_BUILD_DIR``, default ``build/release`` of this source tree)."""
    env = os.environ.get("QLINK_DUCKDB_EXTENSION")
    path = Path(env) if env else _build_dir() / "hosts" / "duckdb" / "qlink.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(f"the qlink DuckDB extension is not built: {path} (run the C release build)")
    return str(path)


def default_plugin_dirs() -> list[str]:
    """``QLINK_PLUGIN_PATH``'s directories if set, else the build's ``plugins/``."""
    env = os.environ.get("QLINK_PLUGIN_PATH")
    if env:
        return [d for d in env.split(":") if d]
    return [str(_build_dir() / "plugins")]


def connect(database: str = ":memory:", plugin_dirs: list[str] | None = None, extension: str | None = None,
            config: dict | None = None):
    """A ``duckdb.DuckDBPyConnection`` with the qlink extension loaded and
    the plugin directories allowed (see the module's documentation)."""
    import duckdb

    con = duckdb.connect(database, config={**(config or {}), "allow_unsigned_extensions": True})
    con.load_extension(extension or extension_path())
    for d in default_plugin_dirs() if plugin_dirs is None else plugin_dirs:
        con.execute("SELECT * FROM qlink_allow(?)", [d]).fetchall()
    return con
