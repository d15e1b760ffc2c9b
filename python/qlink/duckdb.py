# SPDX-License-Identifier: Apache-2.0
"""qlink plugins inside DuckDB, through the qlink DuckDB extension.

Needs the extension (the wheel ships both builds; in a source tree, the C
build: ``make build-release`` or the CMake release build) and the
``duckdb`` Python package (pinned in scripts/requirements.txt): no
DataFusion, no Rust, and it does not import qlink's native module::

    import qlink.duckdb
    con = qlink.duckdb.connect()                    # plugins from qlink.plugin_dir()
    con.execute("SELECT sum(value) FROM qlink_scan('qlink_sample/series?stop=10')").fetchall()
    qlink.duckdb.attach(con, "era5", "qlink_zarr/store?path=/data/era5.zarr")  # either build
    qlink.duckdb.load(con, "qlink_sample")          # either build: add_one(), sum_sq(), sample_range()

Two builds of the extension exist: ``qlink.duckdb_extension`` (DuckDB's
stable C API V1, any DuckDB from 1.5.6 on) and ``qlink_v2.duckdb_extension``
(the unstable C API V2 of the DuckDB version scripts/requirements.txt pins,
and only that one: the same functions, filter pushdown, and no connection
of its own, so a closed database file can be reopened read-only in the same
process). They take qlink_attach and qlink_load differently: V1 as ``CALL
qlink_attach(...)`` / ``CALL qlink_load('P', name := 'F')``, V2 as
``PRAGMA qlink_attach(...)`` / ``PRAGMA qlink_load('P', name = 'F')`` (C API
V2 runs an extension's SQL only as a query PRAGMA's statements; see
hosts/duckdb/README.md). ``connect()`` loads the V2 build when the running
``duckdb`` is the pinned version and that build exists, else V1;
``api="v1"`` or ``api="v2"`` chooses. ``attach(con, name, spec)`` (a schema
of views over ``qlink_scan``) and ``load(con, plugin, name=None)`` run the
right statement for the build loaded on ``con`` (``loaded_api(con)``).

``connect(database=":memory:", plugin_dirs=None, extension=None, config=None, api="auto", locked=False)``
opens the database with unsigned extensions allowed, loads the extension
(``extension_path(api)``), allows the directories ``plugin_dirs`` (default:
``QLINK_PLUGIN_PATH`` if set, which the extension reads itself, else
``qlink.plugin_dir()``) with ``qlink_allow``, then closes every way
for SQL on the connection to load other native code (see ``connect``).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import _resources

_ROOT = _resources.source_root()  # None for an installed package
_V1 = "hosts/duckdb/qlink.duckdb_extension"
_V2 = "hosts/duckdb/qlink_v2.duckdb_extension"


def _shipped(relative: str) -> Path | None:
    try:
        return _resources.find(relative)
    except FileNotFoundError:
        return None


def extension_duckdb_version(path: str | Path) -> str | None:
    """The DuckDB version a C API V2 build at ``path`` loads into (``2.0.1``),
    read from the metadata footer its build appended (the last 512 bytes,
    hosts/duckdb/scripts/footer.c: the version in field 2, the ABI type
    ``C_STRUCT_UNSTABLE`` in field 4), or None for a V1 build."""
    with open(path, "rb") as f:
        f.seek(-512, os.SEEK_END)
        footer = f.read(512)

    def field(i: int) -> str:
        return footer[(7 - i) * 32:(8 - i) * 32].split(b"\0", 1)[0].decode("ascii", "replace")

    if field(4) != "C_STRUCT_UNSTABLE":
        return None
    return field(2).removeprefix("v")


def pinned_duckdb_version() -> str | None:
    """The DuckDB version the V2 build is made for: ``duckdb==`` in
    scripts/requirements.txt of this source tree, or of the tree the build
    directory (``QLINK_BUILD_DIR``) is in, else the version the V2 build
    found (the wheel's own, when installed) names in its footer; None when
    none of them is there."""
    trees = [_ROOT] if _ROOT is not None else []
    if os.environ.get("QLINK_BUILD_DIR"):
        trees.append(Path(os.environ["QLINK_BUILD_DIR"]).resolve().parent.parent)
    req = next((t / "scripts" / "requirements.txt" for t in trees if (t / "scripts" / "requirements.txt").is_file()), None)
    if req is not None:
        for line in req.read_text().splitlines():
            if line.startswith("duckdb=="):
                return line.split("==", 1)[1].strip()
        return None
    v2 = _shipped(_V2)
    return extension_duckdb_version(v2) if v2 is not None else None


def choose_api(api: str = "auto") -> str:
    """"v1" or "v2": ``api`` itself, or for "auto" "v2" when the running
    duckdb is the pinned version and the V2 build exists, else "v1"."""
    if api in ("v1", "v2"):
        return api
    if api != "auto":
        raise ValueError(f"api must be 'auto', 'v1' or 'v2', not {api!r}")
    import duckdb

    return "v2" if _shipped(_V2) is not None and duckdb.__version__ == pinned_duckdb_version() else "v1"


def extension_path(api: str = "v1") -> str:
    """The qlink DuckDB extension: ``QLINK_DUCKDB_EXTENSION``, else
    ``hosts/duckdb/qlink.duckdb_extension`` (api "v1") or
    ``hosts/duckdb/qlink_v2.duckdb_extension`` (api "v2") in the build
    directory ``QLINK_BUILD_DIR`` when set, else in the package (the wheel
    ships both), else in this source tree's ``build/release``
    (qlink/_resources.py). FileNotFoundError names the places looked in."""
    env = os.environ.get("QLINK_DUCKDB_EXTENSION")
    if env:
        if not Path(env).is_file():
            raise FileNotFoundError(f"the qlink DuckDB extension QLINK_DUCKDB_EXTENSION names is not there: {env}")
        return env
    try:
        return str(_resources.find(_V2 if choose_api(api) == "v2" else _V1))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"the qlink DuckDB extension is not built or shipped: {exc}") from None


def default_plugin_dirs() -> list[str]:
    """``QLINK_PLUGIN_PATH``'s directories if set, else :func:`qlink.plugin_dir`
    (the package's plugins, or ``QLINK_BUILD_DIR``'s)."""
    env = os.environ.get("QLINK_PLUGIN_PATH")
    if env:
        return [d for d in env.split(":") if d]
    return [_resources.plugin_dir()]


def connect(database: str = ":memory:", plugin_dirs: list[str] | None = None, extension: str | None = None,
            config: dict | None = None, api: str = "auto", locked: bool = False):
    """A ``duckdb.DuckDBPyConnection`` (the caller's: close it) with the qlink
    extension loaded and the plugin directories allowed, after which SQL on
    it (and on every connection to the same database) can load native code
    only as qlink plugins from those directories, and DuckDB's own signed
    extensions:

    - the directory list is sealed (``qlink_seal()``): ``qlink_allow`` is
      refused;
    - ``allow_unsigned_extensions``, which loading qlink's own unsigned
      extension needs, is turned off again once it is loaded: ``LOAD`` of
      any other unsigned extension is refused, and DuckDB refuses to turn
      it back on while the database runs;
    - ``allow_community_extensions`` is turned off (community extensions
      are third-party code; DuckDB cannot turn it back on either).

    ``locked=True`` also sets ``lock_configuration``, so SQL can change no
    setting at all (threads, memory_limit, ...): for handing the connection
    to untrusted SQL. It is not the default because a user's own SQL often
    sets such options; nothing above depends on it. Both builds honour it
    (``qlink_allow`` then fails naming the setting).

    ``config`` is DuckDB's; ``{"enable_external_access": False}`` cannot be
    passed here (DuckDB then refuses to LOAD the extension): run ``SET
    enable_external_access = false`` on the returned connection instead, and
    from then on no plugin loads and plugins read only files in
    ``allowed_directories`` / ``allowed_paths``.

    Connecting again to a database file this process has open reuses its
    instance: the directories must then be ones it already allows.

    Errors: FileNotFoundError (the extension is not built), ValueError
    (``api``), ``duckdb.Error`` naming the directory ``qlink_allow``
    refused (missing, no directory, or not allowed before on a reused
    instance)."""
    import duckdb

    path = extension or extension_path(api)
    con = duckdb.connect(database, config={**(config or {}), "allow_unsigned_extensions": True})
    try:
        con.load_extension(path)
        _allow(con, default_plugin_dirs() if plugin_dirs is None else plugin_dirs)
        con.execute("SELECT * FROM qlink_seal()").fetchall()
        for option in ("allow_unsigned_extensions", "allow_community_extensions"):
            if con.execute(f"SELECT current_setting('{option}')").fetchone()[0]:
                con.execute(f"SET {option} = false")
        if locked and not con.execute("SELECT current_setting('lock_configuration')").fetchone()[0]:
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _allow(con, dirs: list[str]) -> None:
    """qlink_allow each of ``dirs``; on a reused instance whose list is
    sealed, each must be allowed already."""
    import duckdb

    for d in dirs:
        try:
            con.execute("SELECT * FROM qlink_allow(?)", [d]).fetchall()
        except duckdb.Error:
            allowed = {a for (a,) in con.execute("SELECT * FROM qlink_seal()").fetchall()}
            if os.path.realpath(d) not in allowed:
                raise


def _sql_text(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def loaded_api(con) -> str:
    """"v2" when the V2 build is loaded on ``con`` (its generic
    ``qlink_scalar_function`` exists), else "v1"."""
    n = con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = 'qlink_scalar_function'").fetchone()
    return "v2" if n[0] else "v1"


def load(con, plugin: str, name: str | None = None) -> list[tuple[str, str, str]]:
    """``qlink_load``: the functions of ``plugin`` (or only ``name``) as
    DuckDB functions of their names, with either build (V1 ``CALL``, V2
    ``PRAGMA``); the rows ``(name, kind, status)``."""
    v2 = loaded_api(con) == "v2"
    named = "" if name is None else f", name {'=' if v2 else ':='} {_sql_text(name)}"
    return con.execute(f"{'PRAGMA' if v2 else 'CALL'} qlink_load({_sql_text(plugin)}{named})").fetchall()


def attach(con, name: str, spec: str) -> list[str]:
    """Every table of the schema provider ``spec`` as a view ``name.<table>``
    over ``qlink_scan(spec, "table" := '<table>')``, as qlink_attach makes
    them, with either build of the extension (on ``con`` itself, so the V1
    build's own connection is not involved); returns the table names."""
    tables = [t for (t,) in con.execute("SELECT * FROM qlink_tables(?)", [spec]).fetchall()]
    schema = '"' + name.replace('"', '""') + '"'
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    for t in tables:
        view = '"' + t.replace('"', '""') + '"'
        con.execute(f"CREATE OR REPLACE VIEW {schema}.{view} AS SELECT * FROM qlink_scan({_sql_text(spec)}, "
                    f"\"table\" := {_sql_text(t)})")
    return tables
