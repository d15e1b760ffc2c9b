# SPDX-License-Identifier: Apache-2.0
"""Registered xarray Datasets (qlink_ndarray, qlink.xarray) across trust
boundaries (docs/security/datasets.md).

* SQL on another connection or database of the process cannot name
  a Dataset one connection registered (handles are 128 random bits, and
  only the registering connection's catalogue holds them).
* closing (or dropping) the connection, or registering the name
  again, releases the registration and the arrays.
* a plugin folder whose name holds ``?``, ``%41``, ``&``, ``#``,
  a space or a quote is percent-encoded into the spec, so the host loads
  that very plugin (and no library the raw text would name instead).

The DuckDB and SQLite routes need the C build (QLINK_BUILD_DIR); the
DataFusion ones the qlink wheel as well, else they are skipped.
"""

from __future__ import annotations

import gc
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
PLUGINS = BUILD / "plugins"
PLUGIN = PLUGINS / "qlink_ndarray.so"
DUCKDB_EXT = BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension"
SQLITE_EXT = BUILD / "hosts" / "sqlite" / "qlink.so"
try:  # the installed package (the wheel) when there is one, for the DataFusion route
    import qlink._qlink  # noqa: F401
except ImportError:  # else the source tree's, C routes only
    sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("QLINK_BUILD_DIR", str(BUILD))

if not PLUGIN.is_file():
    pytest.skip(f"qlink_ndarray is not built: {PLUGIN}", allow_module_level=True)

np = pytest.importorskip("numpy")
xr = pytest.importorskip("xarray")

import qlink.xarray as xql  # noqa: E402

# xarray imports dask the first time a Dataset is built, and dask keeps the
# ImportError of an optional module it lacks, with the frames of that first
# build (and the arrays in them): build one here, so no test's array is kept.
xr.Dataset({"warm": ("x", np.zeros(1))})

REFUSED = "no registered Dataset with this handle"
HANDLE = re.compile(r"[0-9a-fA-F]{32}")


def _engines():
    return [k for k, ext in (("duckdb", DUCKDB_EXT), ("sqlite", SQLITE_EXT)) if ext.is_file()]


ENGINES = pytest.mark.parametrize("kind", _engines())


def connect(kind: str, plugin_dirs=None, database: str = ":memory:"):
    dirs = [str(d) for d in (plugin_dirs or [PLUGINS])]
    if kind == "duckdb":
        import qlink.duckdb

        return qlink.duckdb.connect(database, plugin_dirs=dirs)
    import qlink.sqlite

    return qlink.sqlite.connect(database, plugin_dirs=dirs)


def rows(con, sql: str) -> list[tuple]:
    return [tuple(r) for r in con.execute(sql).fetchall()]


def scan_sql(kind: str, spec: str) -> tuple[str, str | None]:
    """(setup, query) reading ``spec`` in ``kind``'s own syntax."""
    text = "'" + spec.replace("'", "''") + "'"
    if kind == "duckdb":
        return "", f"SELECT * FROM qlink_scan({text})"
    return f"CREATE VIRTUAL TABLE temp.probe USING qlink({text})", "SELECT * FROM temp.probe"


def read_spec(kind: str, con, spec: str) -> list[tuple]:
    setup, query = scan_sql(kind, spec)
    if setup:
        con.execute("DROP TABLE IF EXISTS temp.probe")
        con.execute(setup)
    return rows(con, query)


def secret_dataset():
    return xr.Dataset({"secret": ("i", np.array([7.0, 11.0, 13.0]))})


def ndarray_spec(handle: str, plugin: Path = PLUGIN) -> str:
    return xql._ndarray_source(str(plugin), handle).spec()


# ------------------------------------------------ another connection

_OTHER_CONNECTION = r"""
import json, os, sys, secrets
sys.path.insert(0, {python!r})
import numpy as np, xarray as xr
import qlink.{kind}, qlink.xarray as xql
dirs = [{plugins!r}]
owner = qlink.{kind}.connect(plugin_dirs=dirs)
# the first Dataset this process registers: the old scheme named it id=1
xql.register(owner, "secret", xr.Dataset({{"secret": ("i", np.array([7.0, 11.0, 13.0]))}}))
other = qlink.{kind}.connect(plugin_dirs=dirs)
out = {{"owner": [list(r) for r in owner.execute("SELECT secret FROM secret").fetchall()], "other": {{}}}}
src = xql._ndarray_source({plugin!r}, "")
guesses = [str(i) for i in range(0, 9)] + ["01", "+1", "1.0", "0x1", "", secrets.token_hex(16),
                                          "0" * 32, "f" * 32, "0" * 31 + "1"]
for guess in guesses:
    src.options["id"] = guess
    text = "'" + src.spec().replace("'", "''") + "'"
    try:
        if {kind!r} == "duckdb":
            got = other.execute(f"SELECT * FROM qlink_scan({{text}})").fetchall()
        else:
            other.execute("DROP TABLE IF EXISTS temp.probe")
            other.execute(f"CREATE VIRTUAL TABLE temp.probe USING qlink({{text}})")
            got = other.execute("SELECT * FROM temp.probe").fetchall()
        out["other"][guess] = {{"rows": [list(r) for r in got]}}
    except Exception as exc:
        out["other"][guess] = {{"error": str(exc)}}
print(json.dumps(out))
"""


@ENGINES
def test_another_connection_cannot_read_a_registered_dataset(kind):
    """in a fresh process a connection registers its first Dataset;
    a second database of the same engine tries the ids the old scheme gave
    (1, 2, ...), other spellings, and random or patterned 32-digit handles:
    every one is refused with the same error and no rows, while the owner
    reads its table."""
    script = _OTHER_CONNECTION.format(python=str(ROOT / "python"), kind=kind, plugins=str(PLUGINS),
                                      plugin=str(PLUGIN))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "QLINK_BUILD_DIR": str(BUILD)})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["owner"] == [[7.0], [11.0], [13.0]]
    assert len(out["other"]) == 18
    for guess, got in out["other"].items():
        assert "rows" not in got, f"id={guess!r} read {got['rows']}"
        if guess == "":
            assert "option 'id' is required" in got["error"]
        else:
            assert REFUSED in got["error"], (guess, got["error"])


@ENGINES
def test_the_owner_reads_by_handle_and_the_handle_is_the_only_key(kind):
    """The positive twin of the cross-connection test in this process: the spec qlink.xarray
    writes is read by the owner; the same spec with any other id (its hex
    case changed aside), or after unregistering, is refused."""
    handle = xql.register_dataset(secret_dataset(), name="secret", plugin=str(PLUGIN))
    assert HANDLE.fullmatch(handle) and handle == handle.lower()
    try:
        con = connect(kind)
        assert read_spec(kind, con, ndarray_spec(handle)) == [(0, 7.0), (1, 11.0), (2, 13.0)]
        assert read_spec(kind, con, ndarray_spec(handle.upper())) == [(0, 7.0), (1, 11.0), (2, 13.0)]
        flipped = handle[:-1] + ("0" if handle[-1] != "0" else "1")
        for wrong in (flipped, handle[:-1], handle + "0", secrets.token_hex(16)):
            with pytest.raises(Exception, match=REFUSED):
                read_spec(kind, con, ndarray_spec(wrong))
    finally:
        assert xql.unregister_dataset(handle, str(PLUGIN))
    with pytest.raises(Exception, match=REFUSED):
        read_spec(kind, connect(kind), ndarray_spec(handle))
    assert not xql.unregister_dataset(handle, str(PLUGIN))


def test_duckdb_cursor_finds_neither_the_tables_nor_the_handles():
    """DuckDB shares a database's schemas between its connections (a
    cursor), and has no temporary schemas: the ``name.<group>`` views name
    the registering connection's temporary views, so a cursor finds no
    table behind them and no handle in any view's SQL."""
    if "duckdb" not in _engines():
        pytest.skip(f"the DuckDB extension is not built: {DUCKDB_EXT}")
    con = connect("duckdb")
    ds = xr.Dataset({"a": ("x", np.array([1.0, 2.0])), "b": ("y", np.array([3.0]))})
    xql.register(con, "g", ds)
    assert rows(con, "SELECT a FROM g.x") == [(1.0,), (2.0,)]
    assert rows(con, "SELECT b FROM g_y") == [(3.0,)]
    own_sql = " ".join(r[0] for r in rows(con, "SELECT sql FROM duckdb_views() WHERE NOT internal"))
    assert HANDLE.search(own_sql)  # the owner's temporary views hold the handles
    cur = con.cursor()
    for table in ("g.x", "g.y", "g_x", "g_y"):
        with pytest.raises(Exception, match="does not exist"):
            cur.execute(f"SELECT * FROM {table}").fetchall()
    seen = " ".join(r[0] or "" for r in cur.execute("SELECT sql FROM duckdb_views()").fetchall())
    assert "g_x" in seen and not HANDLE.search(seen)


def test_sqlite_file_holds_no_handle(tmp_path):
    """SQLite: the tables live in the connection's ``temp`` schema or an
    in-memory database ATTACHed to it; another connection to the same
    database file finds neither, nor a handle in its schema."""
    if "sqlite" not in _engines():
        pytest.skip(f"the SQLite extension is not built: {SQLITE_EXT}")
    path = str(tmp_path / "shared.db")
    con = connect("sqlite", database=path)
    xql.register(con, "one", secret_dataset())
    xql.register(con, "g", xr.Dataset({"a": ("x", np.array([1.0])), "b": ("y", np.array([2.0]))}))
    assert rows(con, "SELECT secret FROM one") == [(7.0,), (11.0,), (13.0,)]
    assert rows(con, "SELECT a FROM g.x") == [(1.0,)]
    other = connect("sqlite", database=path)
    for table in ("one", "g.x"):
        with pytest.raises(Exception, match="no such table"):
            rows(other, f"SELECT * FROM {table}")
    schema = " ".join(str(r) for r in rows(other, "SELECT * FROM sqlite_schema"))
    assert not HANDLE.search(schema)
    assert not HANDLE.search(Path(path).read_bytes().decode("latin-1"))


# ------------------------------------------------- release on close


def live() -> int:
    """Registrations alive once connections earlier tests left behind are
    collected (their release would otherwise land inside a test)."""
    gc.collect()
    return xql.live_datasets()


def _registered_array(con, name: str = "a"):
    """Register a Dataset over a fresh array on ``con``; a weak reference
    to the array (the only strong ones are the registration's)."""
    values = np.arange(5.0)
    ref = weakref.ref(values)
    xql.register(con, name, xr.Dataset({"v": ("i", values)}))
    return ref


@ENGINES
def test_closing_the_connection_releases_its_datasets(kind):
    """register, query, close: the registrations are released and
    the numpy buffers freed, with the connection object still alive."""
    before = live()
    con = connect(kind)
    ref = _registered_array(con)
    xql.register(con, "g", xr.Dataset({"a": ("x", np.array([1.0])), "b": ("y", np.array([2.0]))}))
    assert rows(con, "SELECT sum(v) FROM a") == [(10.0,)]
    assert xql.live_datasets() == before + 3
    con.close()
    gc.collect()
    assert xql.live_datasets() == before
    assert ref() is None


@ENGINES
def test_dropping_the_connection_releases_its_datasets(kind):
    """a connection collected without close() releases them too."""
    before = live()
    con = connect(kind)
    ref = _registered_array(con)
    assert rows(con, "SELECT count(*) FROM a") == [(5,)]
    del con
    gc.collect()
    assert xql.live_datasets() == before
    assert ref() is None


@ENGINES
def test_registering_a_name_again_releases_the_one_it_replaces(kind):
    """the replaced Dataset's registration and array go at once."""
    con = connect(kind)
    before = live()
    first = _registered_array(con)
    second = _registered_array(con)
    gc.collect()
    assert xql.live_datasets() == before + 1
    assert first() is None and second() is not None
    assert rows(con, "SELECT sum(v) FROM a") == [(10.0,)]
    assert xql.unregister(con, "a") == 1
    if kind == "sqlite":
        con.execute('DROP TABLE temp."a"')  # the connected table holds its provider until dropped
    gc.collect()
    assert xql.live_datasets() == before
    assert second() is None


def test_closing_a_duckdb_cursor_releases_its_own_datasets_only():
    """A DuckDB cursor is a connection of its own: closing it releases what
    it registered, not what its parent did."""
    if "duckdb" not in _engines():
        pytest.skip(f"the DuckDB extension is not built: {DUCKDB_EXT}")
    con = connect("duckdb")
    before = live()
    parent = _registered_array(con, "p")
    cur = con.cursor()
    child = _registered_array(cur, "c")
    assert rows(cur, "SELECT count(*) FROM c") == [(5,)]
    cur.close()
    gc.collect()
    assert xql.live_datasets() == before + 1
    assert child() is None and parent() is not None
    assert rows(con, "SELECT count(*) FROM p") == [(5,)]


def test_sqlite_scope_function_counts_and_is_direct_only(tmp_path):
    """SQLite's close sentinel is the function ``qlink_xarray_scope()``: the
    registrations the connection holds; direct-only, so no view or trigger
    of a database file can call it."""
    if "sqlite" not in _engines():
        pytest.skip(f"the SQLite extension is not built: {SQLITE_EXT}")
    con = connect("sqlite")
    _registered_array(con, "a")
    xql.register(con, "g", xr.Dataset({"a": ("x", np.array([1.0])), "b": ("y", np.array([2.0]))}))
    assert rows(con, "SELECT qlink_xarray_scope()") == [(3,)]
    con.execute("CREATE VIEW main.calls AS SELECT qlink_xarray_scope()")  # as a database file's view would
    with pytest.raises(Exception, match="unsafe use of qlink_xarray_scope"):
        rows(con, "SELECT * FROM calls")


def _qlink_wheel():
    try:
        import qlink._core  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"the DataFusion route needs the qlink wheel ({exc})")


def test_dropping_a_datafusion_context_releases_its_datasets():
    """On DataFusion: a ``Context`` (or a plain ``SessionContext``)
    has no close; collecting it releases what it registered."""
    _qlink_wheel()
    from datafusion import SessionContext

    before = live()
    for make in (xql.Context, SessionContext):
        ctx = make()
        ref = _registered_array(ctx)
        assert ctx.sql("SELECT sum(v) AS s FROM a").to_pandas()["s"].tolist() == [10.0]
        del ctx
        gc.collect()
        assert xql.live_datasets() == before, make
        assert ref() is None, make


def test_dropping_a_qlink_session_releases_its_datasets():
    _qlink_wheel()
    import qlink

    before = live()
    session = qlink.Session()
    values = np.arange(5.0)
    ref = weakref.ref(values)
    session.register_dataset("a", xr.Dataset({"v": ("i", values)}), route="ndarray")
    del values
    assert session.sql("SELECT sum(v) AS s FROM a").column("s").to_pylist() == [10.0]
    del session
    gc.collect()
    assert xql.live_datasets() == before
    assert ref() is None


# ----------------------------------------- spec characters in paths

FOLDER_NAMES = ["a?b", "%41", "a&b=c", "a b", "a#b", "it's", "we?ird %41&#'dir"]


@ENGINES
@pytest.mark.parametrize("folder", FOLDER_NAMES)
def test_plugin_folder_with_spec_characters(kind, folder, tmp_path):
    """the plugin in a folder named with a spec's special
    characters is the one loaded, and its rows come back exactly."""
    home = tmp_path / folder
    home.mkdir()
    plugin = home / "qlink_ndarray.so"
    shutil.copy2(PLUGIN, plugin)
    con = connect(kind, plugin_dirs=[home])
    ds = xr.Dataset({"v": ("i", np.array([1.5, -2.0, 4.25]))}, coords={"i": [10, 20, 30]})
    xql.register(con, "t", ds, plugin=str(plugin))
    assert rows(con, "SELECT i, v FROM t ORDER BY i") == [(10, 1.5), (20, -2.0), (30, 4.25)]
    assert xql.live_datasets(str(plugin)) == 1  # that copy's registry, not the build's
    spec = ndarray_spec("0" * 32, plugin)
    assert "?" not in spec.split("/dataset?", 1)[0] and " " not in spec and "#" not in spec


@ENGINES
def test_an_encoded_folder_name_loads_no_other_library(kind, tmp_path, marker):
    """With a marker: under an allowed directory, folder ``%41``
    holds qlink_ndarray and folder ``A`` a marker library of the same
    name. The spec must name ``%41`` encoded (``%2541``); written raw, the
    host would decode it to ``A`` and run the marker. The positive twin,
    the raw spec, shows it would."""
    allowed = tmp_path / "plugins"
    (allowed / "%41").mkdir(parents=True)
    plugin = allowed / "%41" / "qlink_ndarray.so"
    shutil.copy2(PLUGIN, plugin)
    marker.copy_to(allowed / "A", "qlink_ndarray.so")
    con = connect(kind, plugin_dirs=[allowed])
    xql.register(con, "t", secret_dataset(), plugin=str(plugin))
    assert rows(con, "SELECT secret FROM t") == [(7.0,), (11.0,), (13.0,)]
    assert not marker.ran()
    raw = f"{plugin}/dataset?id={'0' * 32}"
    with pytest.raises(Exception):
        read_spec(kind, connect(kind, plugin_dirs=[allowed]), raw)
    assert marker.pids() == [os.getpid()]


def _sample_beside_marker(tmp_path, folder: str, marker) -> Path:
    """qlink_sample copied into ``tmp_path/folder``, and the marker under
    the same file name in ``tmp_path/A`` (what ``%41`` decodes to)."""
    home = tmp_path / folder
    home.mkdir()
    plugin = home / "qlink_sample.so"
    shutil.copy2(PLUGINS / "qlink_sample.so", plugin)
    marker.copy_to(tmp_path / "A", "qlink_sample.so")
    return plugin


@pytest.mark.parametrize("folder", ["a?b", "%41", "a&b=c", "a b#c"])
def test_a_session_names_a_plugin_folder_with_spec_characters(folder, tmp_path, marker):
    """On qlink.Session: the spec it writes for a plugin path is
    percent-encoded, so the folder is the one loaded. Beside ``%41`` sits a
    folder ``A`` holding a marker of the same file name, which a raw spec
    would name instead."""
    _qlink_wheel()
    import qlink

    plugin = _sample_beside_marker(tmp_path, folder, marker)
    s = qlink.Session()
    s.register_table("s", str(plugin), "series", stop=5)
    assert s.sql("SELECT sum(value) AS n FROM s").column("n").to_pylist() == [10]
    assert not marker.ran()


# ------------------------------------------------------------- Polars


def _polars():
    _qlink_wheel()
    return pytest.importorskip("polars")


def test_dropping_polars_frames_releases_their_datasets():
    """On Polars: the frames of ``register`` on a ``pl.SQLContext`` (and
    of ``to_polars``) hold the registration, in a qlink.Session of their
    own; once the context and every frame taken from it are collected,
    the Dataset is released and its array freed."""
    pl = _polars()
    before = live()
    ctx = pl.SQLContext()
    ref = _registered_array(ctx)
    assert ctx.execute("SELECT sum(v) AS s FROM a").collect()["s"].to_list() == [10.0]
    assert xql.live_datasets() == before + 1
    del ctx
    gc.collect()
    assert xql.live_datasets() == before
    assert ref() is None
    values = np.arange(4.0)
    ref = weakref.ref(values)
    frame = xql.to_polars(xr.Dataset({"v": ("i", values)}))
    del values
    assert frame.select(pl.col("v").sum()).collect().item() == 6.0
    del frame
    gc.collect()
    assert xql.live_datasets() == before
    assert ref() is None


def test_a_polars_frame_names_no_handle_in_its_plan_or_log(caplog):
    """The handle is only in the frames' private session: neither Polars'
    plan of a frame nor the statement qlink.polars logs shows it."""
    import logging

    pl = _polars()
    caplog.set_level(logging.DEBUG, logger="qlink.polars")
    frame = xql.to_polars(secret_dataset())
    assert frame.filter(pl.col("secret") > 10).collect()["secret"].to_list() == [11.0, 13.0]
    shown = frame.explain() + "\n".join(r.getMessage() for r in caplog.records)
    assert not HANDLE.search(shown), shown


@pytest.mark.parametrize("folder", ["a?b", "%41", "a&b=c", "a b#c"])
def test_qlink_polars_names_a_plugin_folder_with_spec_characters(folder, tmp_path, marker):
    """On qlink.polars.scan: a spec is decoded as every host decodes it, so
    the spec qlink.xarray writes (every part encoded) loads the plugin in
    the folder named ``%41``, never the marker of the same file name in
    ``A``. The positive twin, the raw path as spec text, decodes ``%41`` to
    ``A`` and runs the marker, as DuckDB's and SQLite's hosts would."""
    _polars()
    import qlink.polars

    plugin = _sample_beside_marker(tmp_path, folder, marker)
    spec = xql._engines._Source(str(plugin), "series", {"stop": "5"}).spec()
    frame = qlink.polars.scan(spec)
    assert sorted(frame.collect()["value"].to_list()) == [0, 1, 2, 3, 4]
    assert not marker.ran()
    if folder == "%41":
        with pytest.raises(Exception):
            qlink.polars.scan(f"{plugin}/series?stop=5")
        assert marker.pids() == [os.getpid()]
