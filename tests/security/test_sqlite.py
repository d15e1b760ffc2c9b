# SPDX-License-Identifier: Apache-2.0
"""The SQLite host's gates, attacked through SQL (apsw, and the sqlite3 CLI
for Debian's SQLite 3.40), each proving with the marker library that no
outside code ran, and where it makes sense a positive twin showing the
same library *does* run when legitimately allowed (so the check can fail).

Gates (docs/security/sqlite.md): the plugin path rule (symlinks, '..',
absolute paths, encoded names, non-ELF files, directories, FIFOs), the
sealed directory list, an operator's QLINK_PLUGIN_PATH that SQL cannot
widen, a hostile database file's schema, NULL
arguments and NUL bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUILD, ROOT, Marker

apsw = pytest.importorskip("apsw")
EXT = BUILD / "hosts" / "sqlite" / "qlink.so"
PLUGINS = (BUILD / "plugins").resolve()

pytestmark = pytest.mark.skipif(not EXT.is_file(), reason=f"the SQLite extension is not built: {EXT}")

OUTSIDE = "outside the allowed plugin directories"
# what the loader says once the marker's constructor has run (its
# qlink_plugin_init refuses every version)
MARKER_REFUSED = "failed to initialise (ABI 0.1): QL_EINVAL: (no message)"


@pytest.fixture(autouse=True)
def no_operator_path(monkeypatch):
    """The extension reads QLINK_PLUGIN_PATH when it loads: tests set it
    themselves."""
    monkeypatch.delenv("QLINK_PLUGIN_PATH", raising=False)


def open_db(database: str | Path = ":memory:", allow: list[Path] = ()) -> "apsw.Connection":
    """A connection with the extension loaded and `allow` passed to
    qlink_allow (not sealed: the first plugin named seals it)."""
    db = apsw.Connection(str(database))
    db.enable_load_extension(True)
    db.load_extension(str(EXT), "sqlite3_qlink_init")
    db.enable_load_extension(False)
    for d in allow:
        db.execute("SELECT qlink_allow(?)", (str(d),)).fetchall()
    return db


def error_of(db, sql: str, *args) -> str:
    with pytest.raises(apsw.Error) as e:
        db.execute(sql, args).fetchall()
    return str(e.value)


@pytest.fixture
def allowed(tmp_path) -> Path:
    """An allowed plugin directory of the test's own (empty)."""
    d = tmp_path / "allowed"
    d.mkdir()
    return d.resolve()


# ------------------------------------------------------------ the path rule


def test_symlink_out_of_an_allowed_directory(marker: Marker, allowed):
    (allowed / "evil.so").symlink_to(marker.path)
    db = open_db(allow=[allowed])
    for sql in ("CREATE VIRTUAL TABLE t USING qlink('evil/t')",
                f"CREATE VIRTUAL TABLE t USING qlink('{allowed}/evil.so/t')",
                "SELECT qlink_load('evil')",
                "CREATE VIRTUAL TABLE t USING qlink_call('evil', 'f')",
                "SELECT * FROM qlink_tables('evil/t')"):
        message = error_of(db, sql)
        assert f"resolves to {marker.path.resolve()}, {OUTSIDE}" in message, sql
    assert not marker.ran()


def test_symlink_inside_twin_runs_the_marker(marker: Marker, allowed):
    """The positive twin of every refusal here: the same library inside an
    allowed directory is loaded (and refused as no plugin only after its
    constructor ran), so a test that finds no marker proves the gate."""
    marker.copy_to(allowed, "evil.so")
    db = open_db(allow=[allowed])
    assert error_of(db, "SELECT qlink_load('evil')") == (
        f"qlink_load: plugin '{allowed}/evil.so' {MARKER_REFUSED}")
    assert marker.pids() == [os.getpid()]


def test_dotdot_out_of_an_allowed_directory(marker: Marker, allowed):
    db = open_db(allow=[allowed])
    escape = f"{allowed}/../outside/evil.so"
    message = error_of(db, f"CREATE VIRTUAL TABLE t USING qlink('{escape}/t')")
    assert message == (f"qlink: {escape}/t: plugin '{escape}' resolves to {marker.path.resolve()}, "
                       f"{OUTSIDE} ({allowed}): plugins load only from QLINK_PLUGIN_PATH or qlink_allow directories, "
                       "symlinks and '..' resolved")
    assert OUTSIDE in error_of(db, "SELECT qlink_load(?)", escape)
    assert not marker.ran()


def test_absolute_path_outside(marker: Marker, allowed):
    db = open_db(allow=[allowed])
    assert OUTSIDE in error_of(db, f"CREATE VIRTUAL TABLE t USING qlink('{marker.path}/t')")
    assert OUTSIDE in error_of(db, "SELECT qlink_load(?)", str(marker.path))
    assert OUTSIDE in error_of(db, "SELECT * FROM qlink_tables(?)", f"{marker.path}/t")
    assert not marker.ran()


@pytest.mark.parametrize("encoded", ["%2e%2e/outside/evil.so", "%2E%2E%2Foutside%2Fevil.so", "..%2foutside/evil.so"])
def test_encoded_names(marker: Marker, allowed, encoded):
    """A spec's plugin is percent-decoded before the rule applies, so an
    encoded '..' or '/' is resolved like a written one."""
    db = open_db(allow=[allowed])
    spec = f"{allowed}/{encoded}/t"
    message = error_of(db, "SELECT * FROM qlink_tables(?)", spec)
    assert f"plugin '{allowed}/../outside/evil.so' resolves to {marker.path.resolve()}, {OUTSIDE}" in message
    assert not marker.ran()


def test_encoded_nul_is_refused(allowed):
    db = open_db(allow=[allowed])
    assert error_of(db, "SELECT * FROM qlink_tables(?)", "evil%00.so/t") == (
        "qlink_tables: evil%00.so/t: bad percent escape '%00' in table spec plugin 'evil%00.so'")


def test_not_elf_directory_fifo(marker: Marker, allowed):
    (allowed / "notes.so").write_text("not a shared library\n")
    (allowed / "folder.so").mkdir()
    os.mkfifo(allowed / "pipe.so")  # opening it for reading would block: the rule must not open it
    db = open_db(allow=[allowed])
    assert error_of(db, "SELECT qlink_load('notes')") == (
        f"qlink_load: {allowed}/notes.so is not a qlink plugin: {allowed}/notes.so: file too short")
    assert error_of(db, "SELECT qlink_load('folder')") == (
        f"qlink_load: plugin 'folder' ({allowed}/folder.so) is not a regular file")
    assert error_of(db, "SELECT qlink_load('pipe')") == (
        f"qlink_load: plugin 'pipe' ({allowed}/pipe.so) is not a regular file")
    assert not marker.ran()


# ------------------------------------------------- the sealed directory list


def test_allow_after_a_load_is_refused(marker: Marker):
    db = open_db(allow=[PLUGINS])
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=3')")
    assert error_of(db, "SELECT qlink_allow(?)", str(marker.path.parent)) == (
        f"qlink_allow: plugin directory '{marker.path.parent}': the allowed directories are fixed once a "
        "plugin was loaded or the configuration locked")
    assert OUTSIDE in error_of(db, "SELECT qlink_load(?)", str(marker.path))
    assert not marker.ran()


def test_allow_after_a_failed_load_is_refused(marker: Marker, allowed):
    db = open_db(allow=[allowed])
    assert "is in no allowed plugin directory" in error_of(db, "SELECT qlink_load('nothing')")
    assert "the allowed directories are fixed" in error_of(db, "SELECT qlink_allow(?)", str(marker.path.parent))
    assert "is in no allowed plugin directory" in error_of(db, "SELECT qlink_load('evil')")
    assert not marker.ran()


# ------------------------------- an operator's QLINK_PLUGIN_PATH holds


def test_operator_path_cannot_be_widened(marker: Marker, allowed, monkeypatch):
    monkeypatch.setenv("QLINK_PLUGIN_PATH", f"{allowed}:{PLUGINS}")
    db = open_db()
    outside = marker.path.parent
    assert error_of(db, "SELECT qlink_allow(?)", str(outside)) == (
        f"qlink_allow: '{outside}' is not one of the plugin directories QLINK_PLUGIN_PATH set "
        f"({allowed}:{PLUGINS}), and SQL cannot add any: add it to QLINK_PLUGIN_PATH before the extension loads")
    # a directory the operator listed adds nothing and is accepted, as
    # qlink.sqlite.connect() does with the operator's own list
    assert db.execute("SELECT qlink_allow(?, ?)", (str(allowed) + "/", str(PLUGINS))).fetchall() == [(2,)]
    assert "is not one of the plugin directories QLINK_PLUGIN_PATH set" in error_of(
        db, "SELECT qlink_allow(?)", "/nonexistent/dir")
    assert "is in no allowed plugin directory" in error_of(db, "SELECT qlink_load('evil')")
    assert OUTSIDE in error_of(db, "SELECT qlink_load(?)", str(marker.path))
    assert db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=4')") is not None
    assert db.execute("SELECT sum(value) FROM s").fetchall() == [(6,)]
    assert not marker.ran()


def test_unset_operator_path_keeps_allow_before_other_sql(marker: Marker):
    """The twin: without QLINK_PLUGIN_PATH, qlink_allow('DIR') before other
    SQL is how a directory is allowed, and the library in it runs."""
    db = open_db(allow=[marker.path.parent])
    assert error_of(db, "SELECT qlink_load('evil')") == (
        f"qlink_load: plugin '{marker.path.resolve()}' {MARKER_REFUSED}")
    assert marker.pids() == [os.getpid()]


def test_empty_operator_path_is_unset(marker: Marker, monkeypatch):
    monkeypatch.setenv("QLINK_PLUGIN_PATH", ":")
    db = open_db(allow=[PLUGINS])
    assert db.execute("SELECT qlink_allow()").fetchall() == [(1,)]
    assert not marker.ran()


# ------------------------------------------ a hostile database file


def hostile_file(path: Path, *statements: str, schema: tuple[tuple[str, str], ...] = ()) -> Path:
    """A database file as an attacker writes it, without qlink: ordinary
    statements, then `schema` rows (name, CREATE text) written straight
    into sqlite_schema, as any tool can."""
    db = apsw.Connection(str(path))
    for sql in statements:
        db.execute(sql)
    if schema:
        db.execute("PRAGMA writable_schema = ON")
        for name, sql in schema:
            db.execute("INSERT INTO sqlite_schema(type, name, tbl_name, rootpage, sql) VALUES ('table', ?, ?, 0, ?)",
                       (name, name, sql))
        db.execute("PRAGMA writable_schema = OFF")
    db.close()
    return path


def refused_table(db_name: str, table: str, args: str) -> str:
    return (f"qlink: {db_name}.{table} comes from the database's schema (USING qlink({args})), which this "
            "connection did not create: a database file can name any plugin or path there, so qlink connects it "
            "only when the connection trusts the schema; run SELECT qlink_trust_schema(1) first if you trust this "
            "database")


def test_hostile_virtual_table_is_not_connected(marker: Marker, tmp_path):
    """The victim allows a directory that holds the library (so only the
    schema gate stands between the file and it)."""
    path = hostile_file(tmp_path / "hostile.db",
                        schema=(("t", "CREATE VIRTUAL TABLE t USING qlink('evil/t')"),
                                ("c", "CREATE VIRTUAL TABLE c USING qlink_call('evil', 'f', 1)")))
    db = open_db(path, allow=[marker.path.parent])
    assert error_of(db, "SELECT * FROM t") == refused_table("main", "t", "'evil/t'")
    assert error_of(db, "SELECT * FROM c").startswith(
        "qlink: main.c comes from the database's schema (USING qlink_call('evil', 'f', 1))")
    # attached, too
    db.execute("ATTACH ? AS other", (str(path),))
    assert error_of(db, "SELECT * FROM other.t") == refused_table("other", "t", "'evil/t'")
    assert not marker.ran()
    # the twin: trusting the schema connects the table, and the library runs
    assert db.execute("SELECT qlink_trust_schema(1)").fetchall() == [(1,)]
    assert error_of(db, "SELECT * FROM t") == f"qlink: evil/t: plugin '{marker.path.resolve()}' {MARKER_REFUSED}"
    assert marker.pids() == [os.getpid()]


def test_hostile_view_over_qlink_tables(marker: Marker, tmp_path):
    path = hostile_file(tmp_path / "hostile.db", "CREATE VIEW v AS SELECT * FROM qlink_tables('evil/t')")
    db = open_db(path, allow=[marker.path.parent])
    assert error_of(db, "SELECT * FROM v") == 'unsafe use of virtual table "qlink_tables"'
    assert not marker.ran()
    # the twin: a connection that trusts its schema (before qlink_tables
    # is first used) lets SQLite's own trusted_schema decide: ON here
    db = open_db(path, allow=[marker.path.parent])
    db.execute("SELECT qlink_trust_schema(1)").fetchall()
    assert error_of(db, "SELECT * FROM v") == (
        f"qlink_tables: evil/t: plugin '{marker.path.resolve()}' {MARKER_REFUSED}")
    assert marker.ran()


def test_trusted_schema_off_still_refuses_views(marker: Marker, tmp_path):
    """qlink's trust does not override SQLite's: with trusted_schema=OFF a
    view cannot use qlink_tables either."""
    path = hostile_file(tmp_path / "hostile.db", "CREATE VIEW v AS SELECT * FROM qlink_tables('evil/t')")
    db = open_db(path, allow=[marker.path.parent])
    db.execute("PRAGMA trusted_schema = OFF")
    db.execute("SELECT qlink_trust_schema(1)").fetchall()
    assert error_of(db, "SELECT * FROM v") == 'unsafe use of virtual table "qlink_tables"'
    assert not marker.ran()


@pytest.mark.parametrize("call", ["qlink_load('evil')", "qlink_attach('x', 'evil/s')", "qlink_allow('/')",
                                  "qlink_allow()", "qlink_trust_schema(1)", "qlink_trust_schema()"])
def test_hostile_trigger(marker: Marker, tmp_path, call):
    path = hostile_file(tmp_path / "hostile.db", "CREATE TABLE log(x)",
                        f"CREATE TRIGGER tr AFTER INSERT ON log BEGIN SELECT {call}; END")
    db = open_db(path, allow=[marker.path.parent])
    name = call[:call.index("(")]
    assert error_of(db, "INSERT INTO log VALUES (1)") == f"unsafe use of {name}()"
    # trusting the schema does not make these callable from a trigger
    db.execute("SELECT qlink_trust_schema(1)").fetchall()
    assert error_of(db, "INSERT INTO log VALUES (1)") == f"unsafe use of {name}()"
    assert db.execute("SELECT qlink_trust_schema()").fetchall() == [(1,)]
    assert db.execute("SELECT count(*) FROM log").fetchall() == [(0,)]
    assert not marker.ran()


def test_hostile_view_over_a_victims_table_and_function(marker: Marker, tmp_path):
    """A view of the file over a qlink table the victim creates in it, or
    over a function qlink_load registered: direct-only unless trusted."""
    path = hostile_file(tmp_path / "hostile.db", "CREATE VIEW v AS SELECT value FROM s",
                        "CREATE VIEW w AS SELECT add_one(1)")
    db = open_db(path, allow=[PLUGINS])
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=3')")
    db.execute("SELECT qlink_load('qlink_sample')").fetchall()
    assert db.execute("SELECT sum(value), add_one(1) FROM s").fetchall() == [(3, 2)]
    assert error_of(db, "SELECT * FROM v") == 'unsafe use of virtual table "s"'
    assert error_of(db, "SELECT * FROM w") == "unsafe use of add_one()"
    db.close()
    # the twin: trusted before the table connects and the functions exist
    db = open_db(path, allow=[PLUGINS])
    db.execute("SELECT qlink_trust_schema(1)").fetchall()
    db.execute("SELECT qlink_load('qlink_sample')").fetchall()
    assert db.execute("SELECT (SELECT sum(value) FROM v), (SELECT * FROM w)").fetchall() == [(3, 2)]
    assert not marker.ran()


def test_own_file_reopened_needs_trust(tmp_path):
    """The rule for legitimate files: a connection's own qlink tables
    reconnect after a schema reload; a later connection to the file trusts
    it first."""
    path = tmp_path / "mine.db"
    db = open_db(path, allow=[PLUGINS])
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=5')")
    other = apsw.Connection(str(path))
    other.execute("CREATE TABLE plain(x)")  # this connection reads the schema again
    other.close()
    assert db.execute("SELECT sum(value) FROM s").fetchall() == [(10,)]
    db.close()
    db = open_db(path, allow=[PLUGINS])
    assert error_of(db, "SELECT sum(value) FROM s") == refused_table(
        "main", "s", "'qlink_sample/series?stop=5'")
    db.execute("SELECT qlink_trust_schema(1)").fetchall()
    assert db.execute("SELECT sum(value) FROM s").fetchall() == [(10,)]


def test_trust_schema_arguments():
    db = open_db()
    assert db.execute("SELECT qlink_trust_schema(), qlink_trust_schema(TRUE), qlink_trust_schema(0)").fetchall() == [
        (0, 1, 0)]
    assert error_of(db, "SELECT qlink_trust_schema(2)") == (
        "qlink_trust_schema: argument 1 must be 1 (trust the schema) or 0 (do not), got the integer '2'")
    assert error_of(db, "SELECT qlink_trust_schema('on')") == (
        "qlink_trust_schema: argument 1 must be 1 (trust the schema) or 0 (do not), got the text 'on'")
    assert error_of(db, "SELECT qlink_trust_schema(NULL)") == (
        "qlink_trust_schema: argument 1 is NULL (expected 1 to trust the schema, 0 not to)")


def test_hostile_file_in_the_sqlite3_cli(marker: Marker, tmp_path):
    """Debian's sqlite3 3.40, as a victim would run it: the table and the
    view are refused, the library in the allowed directory never runs."""
    if not Path("/usr/bin/sqlite3").exists():
        pytest.skip("no sqlite3 CLI")
    path = hostile_file(tmp_path / "hostile.db", "CREATE VIEW v AS SELECT * FROM qlink_tables('evil/t')",
                        schema=(("t", "CREATE VIRTUAL TABLE t USING qlink('evil/t')"),))
    env = dict(os.environ, QLINK_PLUGIN_PATH=str(marker.path.parent))
    script = f".load {str(EXT)[:-3]}\nSELECT * FROM t;\nSELECT * FROM v;\nSELECT 'done';\n"
    out = subprocess.run(["sqlite3", str(path)], input=script, capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split() == ["done"]
    assert "main.t comes from the database's schema (USING qlink('evil/t'))" in out.stderr
    assert 'unsafe use of virtual table "qlink_tables"' in out.stderr
    assert not marker.ran()


# ------------------------------------------- NULL arguments and NUL bytes


@pytest.mark.parametrize("sql, message", [
    ("SELECT qlink_allow(NULL)", "qlink_allow: argument 1 (a plugin directory) is NULL"),
    # nothing is allowed when one argument is refused: all or none
    ("SELECT qlink_allow('/tmp', NULL)", "qlink_allow: argument 2 (a plugin directory) is NULL"),
    ("SELECT qlink_load(NULL)", "qlink_load: argument 1 (the plugin) is NULL"),
    ("SELECT qlink_load('qlink_sample', NULL)", "qlink_load: argument 2 (the function) is NULL"),
    ("SELECT qlink_attach(NULL, 'qlink_sample/series')", "qlink_attach: argument 1 (the schema name) is NULL"),
    ("SELECT qlink_attach('n', NULL)", "qlink_attach: argument 2 (the spec) is NULL"),
    ("SELECT * FROM qlink_tables(NULL)", "qlink_tables: the spec is NULL (expected 'PLUGIN/PROVIDER?...')"),
    ("SELECT qlink_trust_schema(NULL)", "qlink_trust_schema: argument 1 is NULL (expected 1 to trust the schema, 0 not to)"),
])
def test_null_arguments(sql, message):
    db = open_db(allow=[PLUGINS])
    assert error_of(db, sql) == f"{message}"
    # nothing was loaded or allowed: the list is still open, the connection works
    assert db.execute("SELECT qlink_allow(?)", (str(PLUGINS),)).fetchall() == [(1,)]


NUL_TAIL = "text may not hold NUL bytes"


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM qlink_tables('qlink_sample/series?stop=3' || char(0) || '&stop=1000')",
     "qlink_tables: qlink_sample/series?stop=3: table spec has a NUL byte at offset 26 (of 37 bytes), after "
     "'qlink_sample/series?stop=3'"),
    ("SELECT qlink_attach('n', 'broken_third_batch/tables' || char(0) || 'x')",
     "qlink_attach: argument 2 (the spec) has a NUL byte at offset 25 (of 27 bytes), after 'broken_third_batch/tables'"),
    ("SELECT qlink_load('qlink_sample' || char(0) || '/../x')",
     "qlink_load: argument 1 (the plugin) has a NUL byte at offset 12 (of 18 bytes), after 'qlink_sample'"),
    ("SELECT qlink_load('qlink_sample', 'add_one' || char(0))",
     "qlink_load: argument 2 (the function) has a NUL byte at offset 7 (of 8 bytes), after 'add_one'"),
    ("SELECT qlink_attach(CAST(X'6e00' AS TEXT), 'broken_third_batch/tables')",
     "qlink_attach: argument 1 (the schema name) has a NUL byte at offset 1 (of 2 bytes), after 'n'"),
    # a blob is read as its bytes, a NUL among them included
    ("SELECT * FROM qlink_tables(X'702f7400')",
     "qlink_tables: p/t: table spec has a NUL byte at offset 3 (of 4 bytes), after 'p/t'"),
    ("SELECT qlink_allow('/tmp' || char(0) || '/x')",
     "qlink_allow: argument 1 (a plugin directory) has a NUL byte at offset 4 (of 7 bytes), after '/tmp'"),
])
def test_nul_bytes_are_refused_by_position(marker: Marker, sql, message):
    """a NUL inside a text argument used to end it silently there;
    nothing is loaded or allowed."""
    db = open_db()
    assert error_of(db, sql) == f"{message}: {NUL_TAIL}"
    assert db.execute("SELECT qlink_allow(?)", (str(PLUGINS),)).fetchall() == [(1,)]  # nothing was added
    # the same spec without the NUL is read whole
    spec = "qlink_sample/series?stop=3&partitions=2"
    assert db.execute("SELECT count(*) FROM qlink_tables(?)", (spec,)).fetchall() == [(3,)]
    assert not marker.ran()


def test_python_connect_with_operator_path(monkeypatch):
    """qlink.sqlite.connect() re-allows the operator's own directories
    (accepted: they add nothing) and seals."""
    monkeypatch.setenv("QLINK_PLUGIN_PATH", str(PLUGINS))
    monkeypatch.setenv("QLINK_BUILD_DIR", str(BUILD))
    sys.path.insert(0, str(ROOT / "python"))
    import qlink.sqlite as qsql

    db = qsql.connect()
    db.execute("CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?stop=3')")
    assert db.execute("SELECT sum(value) FROM s").fetchall() == [(3,)]
    with pytest.raises(apsw.SQLError, match="is not one of the plugin directories QLINK_PLUGIN_PATH set"):
        qsql.connect(plugin_dirs=["/tmp"])
