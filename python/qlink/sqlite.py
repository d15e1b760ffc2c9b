# SPDX-License-Identifier: Apache-2.0
"""qlink plugins inside SQLite, through the qlink SQLite extension.

Needs the extension (the wheel ships it; in a source tree, the C build:
``make build-release`` or the CMake release build): no DataFusion, no Rust,
and it does not import qlink's native module. Connections come from ``apsw`` (pinned in scripts/requirements.txt;
it bundles its own SQLite, 3.54, and can load extensions, which this
machine's pyenv ``sqlite3`` module cannot)::

    import qlink.sqlite
    db = qlink.sqlite.connect()                     # plugins from qlink.plugin_dir()
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=10')")
    db.execute("SELECT sum(value) FROM s").fetchall()

``connect(database=":memory:", plugin_dirs=None, extension=None)`` opens
the database, loads the extension (``extension_path()``), allows the
directories ``plugin_dirs`` (default: ``QLINK_PLUGIN_PATH`` if set, which
the extension reads itself, else ``qlink.plugin_dir()``) and then
seals the list with ``qlink_allow()``: SQL run on the connection can load
plugins from those directories only and cannot add any. When
``QLINK_PLUGIN_PATH`` is set it is the operator's list, which nothing on
the connection can widen: ``plugin_dirs`` naming a directory outside it
raises ``apsw.SQLError`` (``qlink_allow: 'DIR' is not one of the plugin
directories QLINK_PLUGIN_PATH set ...``).

A database file's schema is not trusted: a ``USING qlink(...)`` table
stored in the file is refused when a later connection reads it (``...
run SELECT qlink_trust_schema(1) first if you trust this database``). To
reopen a file you trust (one you wrote, say), trust it first::

    db = qlink.sqlite.connect("data.db")
    db.execute("SELECT qlink_trust_schema(1)")
    db.execute("SELECT sum(value) FROM s").fetchall()

(hosts/sqlite/README.md, docs/security/sqlite.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _resources


def extension_path() -> str:
    """The qlink SQLite extension: ``QLINK_SQLITE_EXTENSION``, else
    ``hosts/sqlite/qlink.so`` in the build directory ``QLINK_BUILD_DIR``
    when set, else in the package (the wheel ships it), else in this source
    tree's ``build/release`` (qlink/_resources.py). FileNotFoundError names
    the places looked in."""
    env = os.environ.get("QLINK_SQLITE_EXTENSION")
    if env:
        if not Path(env).is_file():
            raise FileNotFoundError(f"the qlink SQLite extension QLINK_SQLITE_EXTENSION names is not there: {env}")
        return env
    try:
        return str(_resources.find("hosts/sqlite/qlink.so"))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"the qlink SQLite extension is not built or shipped: {exc}") from None


def default_plugin_dirs() -> list[str]:
    """``QLINK_PLUGIN_PATH``'s directories if set, else :func:`qlink.plugin_dir`
    (the package's plugins, or ``QLINK_BUILD_DIR``'s)."""
    env = os.environ.get("QLINK_PLUGIN_PATH")
    if env:
        return [d for d in env.split(":") if d]
    return [_resources.plugin_dir()]


def connect(database: str = ":memory:", plugin_dirs: list[str] | None = None, extension: str | None = None):
    """An ``apsw.Connection`` with the qlink extension loaded and the plugin
    directories allowed and sealed (see the module's documentation)."""
    import apsw

    db = apsw.Connection(database)
    db.enable_load_extension(True)
    db.load_extension(extension or extension_path(), "sqlite3_qlink_init")
    db.enable_load_extension(False)
    for d in default_plugin_dirs() if plugin_dirs is None else plugin_dirs:
        db.execute("SELECT qlink_allow(?)", (d,)).fetchall()
    db.execute("SELECT qlink_allow()").fetchall()
    return db
