# SPDX-License-Identifier: Apache-2.0
"""The DuckDB host's gates (docs/security/duckdb.md), each played as an
attacker against both builds of the extension (V1 `qlink.duckdb_extension`,
V2 `qlink_v2.duckdb_extension`), with the marker library proving that no
outside code ran, and where it makes sense a positive twin in which the
same library, legitimately allowed, does run (so the check can fail)."""

from __future__ import annotations

import os
import subprocess
import warnings
from pathlib import Path

import pytest
from conftest import BUILD, ROOT, Marker

duckdb = pytest.importorskip("duckdb")

EXTS = {"v1": BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension",
        "v2": BUILD / "hosts" / "duckdb" / "qlink_v2.duckdb_extension"}
PLUGINS = BUILD / "plugins"
PINNED = next(line.split("==")[1] for line in (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
              if line.startswith("duckdb=="))
# qlink_attach and qlink_load: V1 as CALL (named `:=`), V2 as PRAGMA (named `=`).
STMT = {"v1": "CALL", "v2": "PRAGMA"}
NAMED = {"v1": ":=", "v2": "="}

pytestmark = pytest.mark.skipif(not EXTS["v1"].is_file(), reason=f"the DuckDB extension is not built: {EXTS['v1']}")


def _builds() -> list:
    v2_skip = (f"the V2 DuckDB extension is not built: {EXTS['v2']}" if not EXTS["v2"].is_file() else
               f"the V2 build loads into duckdb {PINNED} only" if duckdb.__version__ != PINNED else None)
    return ["v1", pytest.param("v2", marks=pytest.mark.skipif(v2_skip is not None, reason=v2_skip or ""))]


BUILDS = _builds()


@pytest.fixture
def open_ext(monkeypatch):
    """open_ext(build): a fresh in-memory DuckDB with that build loaded and
    no plugin directory allowed (QLINK_PLUGIN_PATH unset)."""
    monkeypatch.delenv("QLINK_PLUGIN_PATH", raising=False)

    def open_(build: str):
        con = duckdb.connect(config={"allow_unsigned_extensions": True})
        con.execute(f"LOAD '{EXTS[build]}'")
        return con
    return open_


def refused(con, sql: str, *words: str) -> str:
    """Run `sql`, which must fail with an error holding every one of `words`
    (and never as DuckDB's INTERNAL error); the message."""
    with pytest.raises(duckdb.Error) as e:
        con.execute(sql).fetchall()
    msg = str(e.value)
    assert "INTERNAL" not in msg, msg
    for w in words:
        assert w in msg, (w, msg)
    return msg


def allow(con, folder: Path) -> None:
    con.execute("SELECT * FROM qlink_allow(?)", [str(folder)]).fetchall()


def zarr_store(path: Path, values=(1.0, 2.0, 3.0, 4.0)) -> Path:
    """A consolidated Zarr store of one variable v(y); sum(v) = sum(values)."""
    xr = pytest.importorskip("xarray")
    np = pytest.importorskip("numpy")
    ds = xr.Dataset({"v": (("y",), np.array(values))}, coords={"y": np.arange(float(len(values)))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", consolidated=True)
    return path


def plugins_with(folder: Path, *names: str) -> Path:
    """`folder` holding copies of the build's plugins `names` (an allowed
    directory of the test's own)."""
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / f"{n}.so").write_bytes((PLUGINS / f"{n}.so").read_bytes())
    return folder


# ---- lock_configuration


@pytest.mark.parametrize("build", BUILDS)
def test_lock_configuration_refuses_allow(open_ext, marker: Marker, build):
    con = open_ext(build)
    con.execute("SET lock_configuration = true")
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')",
            f"qlink_allow('{marker.path.parent}'): refused: DuckDB's lock_configuration is true")
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')", "outside")
    assert not marker.ran()


@pytest.mark.parametrize("build", BUILDS)
def test_unlocked_allow_does_load_the_marker(open_ext, marker: Marker, build):
    """The positive twin of the gates below: allowed, the marker runs."""
    con = open_ext(build)
    allow(con, marker.path.parent)
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')", f"qlink_scan('{marker.path}/x')")
    assert marker.pids() == [os.getpid()]


# ---- enable_external_access, allowed_directories, allowed_paths


@pytest.mark.parametrize("build", BUILDS)
def test_external_access_off_loads_no_plugin(open_ext, marker: Marker, build, tmp_path):
    con = open_ext(build)
    allow(con, marker.path.parent)  # the owner allowed it, but then turned external access off
    con.execute("SET enable_external_access = false")
    setting = "DuckDB's enable_external_access is false"
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')",
            f"loading plugin '{marker.path}' is refused: {setting} (DuckDB refuses LOAD then too)")
    refused(con, "SELECT * FROM qlink_tables('evil/x')", "loading plugin 'evil' is refused", setting)
    refused(con, f"{STMT[build]} qlink_attach('s', 'evil/x')", "loading plugin 'evil' is refused", setting)
    refused(con, f"{STMT[build]} qlink_load('evil')", "loading plugin 'evil' is refused", setting)
    refused(con, "SELECT * FROM qlink_table_function_0('evil', 'f')", "loading plugin 'evil' is refused", setting)
    refused(con, f"SELECT * FROM qlink_allow('{tmp_path}')",
            f"qlink_allow('{tmp_path}'): refused: {setting}, and no plugin loads then")
    # DuckDB's own gate, which qlink's follow
    refused(con, f"LOAD '{_evil_extension(marker, tmp_path / 'ext')}'", "Loading external extensions is disabled")
    assert not marker.ran()


@pytest.mark.parametrize("build", BUILDS)
def test_external_access_off_reads_only_allowed_files(open_ext, build, tmp_path):
    inside = zarr_store(tmp_path / "inside" / "a.zarr")
    other = zarr_store(tmp_path / "other.zarr", values=(10.0, 20.0))
    listed = zarr_store(tmp_path / "listed.zarr", values=(5.0,))
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_zarr"))
    q = "SELECT sum(v) FROM qlink_scan('qlink_zarr/table?path={}')"
    assert con.execute(q.format(other)).fetchall() == [(30.0,)]  # loaded, and reading, before the switch
    con.execute(f"SET allowed_directories = ['{tmp_path / 'inside'}']")
    con.execute(f"SET allowed_paths = ['{listed}']")
    con.execute("SET enable_external_access = false")
    assert con.execute(q.format(inside)).fetchall() == [(10.0,)]
    words = "is refused: DuckDB's enable_external_access is false and it lies in none of allowed_directories and allowed_paths"
    refused(con, q.format(other), f"option path '{other}' {words}")
    # allowed_paths lists files, as DuckDB's readers take it: a store is a directory of them
    refused(con, q.format(listed), f"reading file '{listed}/zarr.json' {words}")
    refused(con, q.format(f"file://{tmp_path}/inside/../other.zarr"), words)
    refused(con, q.format(f"{tmp_path}/insidex/a.zarr"), words)  # a prefix, not the directory
    refused(con, f"SELECT * FROM qlink_tables('qlink_zarr/store?path={other}')", words)
    refused(con, f"{STMT[build]} qlink_attach('o', 'qlink_zarr/store?path={other}')", words)
    refused(con, q.format("https://127.0.0.1:9/x.zarr"),
            "reading URL 'https://127.0.0.1:9/x.zarr' is refused: DuckDB's enable_external_access is false")
    # a symlink inside an allowed directory pointing out: refused by the path check ...
    (tmp_path / "inside" / "link.zarr").symlink_to(other)
    refused(con, q.format(tmp_path / "inside" / "link.zarr"), words)
    # ... and a store whose chunk is a symlink out, by the session's file store the plugin reads through
    sneaky = zarr_store(tmp_path / "inside" / "sneaky.zarr", values=(7.0, 7.0))
    chunk = next(p for p in (sneaky / "v").rglob("*") if p.is_file() and not p.name.startswith(".")
                 and p.name != "zarr.json")
    secret = tmp_path / "secret.bin"
    secret.write_bytes(chunk.read_bytes())
    chunk.unlink()
    chunk.symlink_to(secret)
    refused(con, q.format(sneaky), f"reading file '{chunk}' {words}")


# ---- qlink.duckdb.connect()


def _evil_extension(marker: Marker, folder: Path) -> Path:
    """The marker library as a loadable DuckDB extension (metadata footer
    appended, unsigned)."""
    ext = folder / "evil.duckdb_extension"
    marker.copy_to(folder, ext.name)
    subprocess.run([str(BUILD / "hosts" / "duckdb" / "qlink_duckdb_footer"), str(ext)], check=True)
    return ext


def _connect(**kw):
    import qlink.duckdb

    return qlink.duckdb.connect(plugin_dirs=[str(PLUGINS)], **kw)


def test_an_unsigned_extension_loads_where_allowed(marker: Marker, tmp_path):
    """Positive twin: with allow_unsigned_extensions, DuckDB maps the marker."""
    ext = _evil_extension(marker, tmp_path / "ext")
    con = duckdb.connect(config={"allow_unsigned_extensions": True})
    with pytest.raises(duckdb.Error):
        con.execute(f"LOAD '{ext}'")
    assert marker.pids() == [os.getpid()]


@pytest.mark.parametrize("build", BUILDS)
def test_connect_leaves_sql_no_other_native_code(marker: Marker, build, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "python"))
    monkeypatch.setenv("QLINK_BUILD_DIR", str(BUILD))
    ext = _evil_extension(marker, tmp_path / "ext")
    con = _connect(api=build)
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=5')").fetchall() == [(5,)]
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')",
            "refused: the allowed plugin directories are sealed (SQL named a plugin, or qlink_seal() ran)")
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')", "outside")
    refused(con, f"LOAD '{ext}'", "unsigned extensions are disabled")
    refused(con, "SET allow_unsigned_extensions = true", "Cannot change allow_unsigned_extensions")
    refused(con, "SET allow_community_extensions = true", "Cannot change allow_community_extensions")
    con.execute("SET threads = 1")  # not locked: the user's own settings still change
    # what qlink.xarray.register does after connect(): a spec from the allowed directories attaches
    store = zarr_store(tmp_path / "s.zarr")
    assert con.execute(f"{STMT[build]} qlink_attach('s', 'qlink_zarr/store?path={store}')").fetchall() == [("y",)]
    assert con.execute("SELECT sum(v) FROM s.y").fetchall() == [(10.0,)]
    assert not marker.ran()


@pytest.mark.parametrize("build", BUILDS)
def test_connect_locked_changes_no_setting(marker: Marker, build, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "python"))
    monkeypatch.setenv("QLINK_BUILD_DIR", str(BUILD))
    con = _connect(api=build, locked=True)
    refused(con, "SET threads = 1", "the configuration has been locked")
    refused(con, "SET lock_configuration = false", "the configuration has been locked")
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')",
            "refused: DuckDB's lock_configuration is true")
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=3')").fetchall() == [(3,)]
    assert not marker.ran()


# ---- a failed load seals the list


@pytest.mark.parametrize("build", BUILDS)
def test_failed_load_seals_the_list(open_ext, marker: Marker, build, tmp_path):
    con = open_ext(build)
    allowed = tmp_path / "allowed"
    marker.copy_to(allowed, "notaplugin.so")
    allow(con, allowed)
    refused(con, "SELECT * FROM qlink_scan('notaplugin/x')", "qlink_scan('notaplugin/x')")
    assert marker.ran()  # the load ran its constructor, then failed: the list is sealed all the same
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')", "sealed")


@pytest.mark.parametrize("build", BUILDS)
def test_a_missing_plugin_seals_the_list(open_ext, marker: Marker, build, tmp_path):
    con = open_ext(build)
    refused(con, "SELECT * FROM qlink_scan('nosuch/x')", "qlink_scan('nosuch/x')")
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')", "sealed")
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')", "qlink_scan(")
    assert not marker.ran()


# ---- no silent truncation


@pytest.mark.parametrize("build", BUILDS)
def test_attach_of_a_long_spec_and_long_table_name(open_ext, build, tmp_path):
    deep = tmp_path
    for i in range(7):
        deep = deep / (f"{i}" * 200)
    long_store = zarr_store(deep / "a.zarr", values=(1.0, 2.0))
    zarr_store(tmp_path / "a.zarr", values=(100.0, 200.0))  # what a cut spec could have read
    encoded = "".join(f"%{b:02X}" for b in str(long_store).encode())
    table = "t" * 600
    spec = f"qlink_zarr/store?path={encoded}&tables=y={table}"
    assert len(spec) > 4096
    con = open_ext(build)
    allow(con, PLUGINS)
    assert con.execute(f"{STMT[build]} qlink_attach('s', '{spec}')").fetchall() == [(table,)]
    assert con.execute(f'SELECT sum(v) FROM s."{table}"').fetchall() == [(3.0,)]
    sql = con.execute("SELECT sql FROM duckdb_views() WHERE schema_name = 's'").fetchone()[0]
    assert spec in sql


# ---- a NUL byte inside text


@pytest.mark.parametrize("build", BUILDS)
def test_nul_inside_text_is_refused(open_ext, marker: Marker, build):
    """Specs through libqlink's ql_table_spec_parse_n, other text through
    ql_text_check_nul: the NUL's offset, and the text before it. (V1 has no
    length getter: its messages count the bytes up to the NUL.)"""
    con = open_ext(build)

    def nul(what: str, before: str) -> str:
        return f"{what} has a NUL byte at offset {len(before.encode())} (of "

    spec = "qlink_sample/series?stop=3"
    refused(con, f"SELECT * FROM qlink_scan('{spec}' || chr(0) || '&x=1')",
            f"qlink_scan('{spec}'): " + nul("table spec", spec), f"after '{spec}': text may not hold NUL bytes")
    refused(con, f"SELECT * FROM qlink_scan('{spec}', \"table\" := 'a' || chr(0) || 'b')",
            "qlink_scan: " + nul('argument "table"', "a"))
    refused(con, "SELECT * FROM qlink_tables('x/y' || chr(0))", "qlink_tables('x/y'): " + nul("table spec", "x/y"))
    refused(con, f"{STMT[build]} qlink_attach('s' || chr(0), 'x/y')", "qlink_attach: " + nul("the schema name", "s"))
    refused(con, f"{STMT[build]} qlink_attach('s', 'x/y' || chr(0))", "qlink_attach: " + nul("the spec", "x/y"))
    refused(con, f"{STMT[build]} qlink_load('qlink_sample' || chr(0) || 'x')",
            "qlink_load: " + nul("the plugin name", "qlink_sample"))
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}' || chr(0) || 'x')",
            "qlink_allow: " + nul("the directory", str(marker.path.parent)))
    refused(con, "SELECT * FROM qlink_table_function_1('qlink_sample', 'sample_range', 'a' || chr(0))",
            nul("argument 1", "a"))
    allow(con, PLUGINS)  # nothing above sealed or widened the list
    assert con.execute(f"SELECT count(*) FROM qlink_scan('{spec}')").fetchall() == [(3,)]
    assert not marker.ran()


# ---- NULL arguments


@pytest.mark.parametrize("build", BUILDS)
def test_null_arguments_are_clean_errors(open_ext, build):
    con = open_ext(build)
    allow(con, PLUGINS)
    s, n = STMT[build], NAMED[build]
    cases = [
        ("SELECT * FROM qlink_scan(NULL)", "qlink_scan: the spec is NULL"),
        ("SELECT * FROM qlink_scan('qlink_sample/series', \"table\" := NULL)", 'qlink_scan: argument "table" is NULL'),
        ("SELECT * FROM qlink_allow(NULL)", "qlink_allow: the directory is NULL"),
        ("SELECT * FROM qlink_tables(NULL)", "qlink_tables: the spec is NULL"),
        (f"{s} qlink_attach(NULL, 'x/y')", "qlink_attach: the schema name is NULL"),
        (f"{s} qlink_attach('s', NULL)", "qlink_attach: the spec is NULL"),
        (f"{s} qlink_load(NULL)", "qlink_load: the plugin name is NULL"),
        (f"{s} qlink_load('qlink_sample', name {n} NULL)", 'qlink_load: argument "name" is NULL'),
        ("SELECT * FROM qlink_table_function_0(NULL, 'f')", "the plugin name is NULL"),
        ("SELECT * FROM qlink_table_function_0('qlink_sample', NULL)", "the function name is NULL"),
    ]
    if build == "v2":
        cases += [("SELECT qlink_scalar_function(NULL, 'add_one', 1)", "the plugin name is NULL"),
                  ("SELECT qlink_aggregate_function('qlink_sample', NULL, 1)", "the function name is NULL")]
    for sql, words in cases:
        refused(con, sql, words)
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=4')").fetchall() == [(4,)]


# ---- many options


def first_line(message: str) -> str:
    """A DuckDB error message without its class ("Binder Error: ", V1, or
    "Invalid Input Error: ", V2) and the LINE context DuckDB appends."""
    return message.split("\n", 1)[0].split(" Error: ", 1)[1]


@pytest.mark.parametrize("build", BUILDS)
def test_many_options_are_quick(open_ext, build):
    """120,000 options, parsed by libqlink's O(n log n) parser (the quadratic
    repeat check took over 20 s here; about 0.2 s now). Exact answers and no
    clock: a slower parser shows as a slow run, never as a flaky failure."""
    con = open_ext(build)
    allow(con, PLUGINS)
    spec = "qlink_sample/series?stop=3" + "".join(f"&k{i}=v" for i in range(120_000))
    assert first_line(refused(con, f"SELECT * FROM qlink_scan('{spec}')")) == (
        f"qlink_scan('{spec}'): unknown option 'k0' for qlink_sample/series; accepted: start, stop, step, partitions")
    repeated = f"{spec}&k7=w"
    assert first_line(refused(con, f"SELECT * FROM qlink_scan('{repeated}')")) == (
        f"qlink_scan('{repeated}'): table spec '{repeated}': option 'k7' is given twice")
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=3')").fetchall() == [(3,)]


# ---- the gates that held


def _attacks(marker: Marker, root: Path) -> list[tuple[str, str]]:
    """(spec, words of the refusal) per route around the directory rule;
    `root/allowed` is the allowed directory."""
    allowed = root / "allowed"
    allowed.mkdir()
    (allowed / "link.so").symlink_to(marker.path)
    (allowed / "notelf.so").write_text("not a library\n")
    (allowed / "adir.so").mkdir()
    os.mkfifo(allowed / "fifo.so")
    rel = os.path.relpath(marker.path, allowed)
    return [
        (f"{marker.path}/x", "outside"),                                    # absolute path elsewhere
        (f"{allowed}/{rel}/x", "outside"),                                  # '..' out of the directory
        (f"{allowed}/link.so/x", "outside"),                                # a symlink pointing out
        (f"{allowed}/%2E%2E/{marker.path.parent.name}/{marker.path.name}/x", "outside"),  # encoded '..'
        (f"{''.join(f'%{b:02X}' for b in str(marker.path).encode())}/x", "outside"),   # encoded absolute path
        ("notelf/x", "qlink_scan('notelf/x')"),                             # no ELF file
        ("adir/x", "qlink_scan('adir/x')"),                                 # a directory
        ("fifo/x", "qlink_scan('fifo/x')"),                                 # a FIFO (must not block)
    ]


@pytest.mark.parametrize("build", BUILDS)
def test_routes_around_the_directory_rule_stay_refused(open_ext, marker: Marker, build, tmp_path):
    attacks = _attacks(marker, tmp_path)
    con = open_ext(build)
    allow(con, tmp_path / "allowed")
    for spec, words in attacks:
        refused(con, f"SELECT * FROM qlink_scan('{spec}')", words)
    assert not marker.ran()


@pytest.mark.parametrize("build", BUILDS)
def test_allow_after_a_load_is_refused(open_ext, marker: Marker, build):
    con = open_ext(build)
    allow(con, PLUGINS)
    assert con.execute("SELECT count(*) FROM qlink_scan('qlink_sample/series?stop=2')").fetchall() == [(2,)]
    refused(con, f"SELECT * FROM qlink_allow('{marker.path.parent}')", "sealed")
    refused(con, f"SELECT * FROM qlink_scan('{marker.path}/x')", "outside")
    assert not marker.ran()
