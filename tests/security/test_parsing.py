# SPDX-License-Identifier: Apache-2.0
"""libqlink's table-spec parsing as SQL reaches it (through the SQLite
host): any number of options (the repeat check was
quadratic, 60,000 options took seconds and 200,000 over a minute), repeats
reported as before, NUL bytes refused by position, nothing cut
silently.

The parser itself is also tested in C (src/loader/table_spec_test.c, the
same 200,000 options with every key and value checked) and fuzzed
(src/loader/table_spec_fuzz.c).
"""

from __future__ import annotations

import time

import pytest

from conftest import BUILD

apsw = pytest.importorskip("apsw")
EXT = BUILD / "hosts" / "sqlite" / "qlink.so"
PLUGINS = (BUILD / "plugins").resolve()

pytestmark = pytest.mark.skipif(not EXT.is_file(), reason=f"the SQLite extension is not built: {EXT}")

# broken_unknown_option_ok/numbers ignores unknown options and serves
# x = 0..n-1, so the rows prove which value of `n` reached the plugin
PROVIDER = "broken_unknown_option_ok/numbers"


@pytest.fixture
def db(monkeypatch):
    monkeypatch.delenv("QLINK_PLUGIN_PATH", raising=False)
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(str(EXT), "sqlite3_qlink_init")
    con.execute("SELECT qlink_allow(?)", (str(PLUGINS),)).fetchall()
    return con


def many(n: int) -> str:
    return "".join(f"&k{i}=v{i}" for i in range(n))


def error_of(db, sql: str, *args) -> str:
    with pytest.raises(apsw.Error) as e:
        db.execute(sql, args).fetchall()
    return str(e.value)


def test_200000_options(db):
    spec = f"{PROVIDER}?{many(200_000)}&n=7"
    started = time.monotonic()
    db.execute(f"CREATE VIRTUAL TABLE t USING qlink('{spec}')")
    assert db.execute("SELECT count(*), sum(x) FROM t").fetchall() == [(7, 21)]
    assert db.execute("SELECT table_name, column_name FROM qlink_tables(?)", (spec,)).fetchall() == [("numbers", "x")]
    print(f"200,000 options: {time.monotonic() - started:.2f} s")  # 0.3 s here; the quadratic check took 90 s


def test_repeat_among_many_options(db):
    spec = f"{PROVIDER}?{many(200_000)}&k199999=again&n=1"
    message = error_of(db, "SELECT * FROM qlink_tables(?)", spec)
    assert message.endswith(f"table spec '{spec}': option 'k199999' is given twice")
    spec = f"{PROVIDER}?n=1{many(100_000)}&k5=x&k3=y"
    assert error_of(db, "SELECT * FROM qlink_tables(?)", spec).endswith("option 'k5' is given twice")


@pytest.mark.parametrize("query, key", [
    ("a=1&b=1&b=2&a=2", "b"),      # the first repeat in spec order, as before
    ("z=1&a=1&z=2&a=2", "z"),
    ("n=1&n=1", "n"),
    ("a%3Db=1&a=b=2&a%3db=3", "a=b"),  # keys compare decoded
])
def test_first_repeat_in_spec_order(db, query, key):
    spec = f"{PROVIDER}?{query}"
    assert error_of(db, "SELECT * FROM qlink_tables(?)", spec) == (
        f"qlink_tables: {spec}: table spec '{spec}': option '{key}' is given twice")


def test_repeat_before_a_malformed_option(db):
    spec = f"{PROVIDER}?a=1&a=2&flag"
    assert error_of(db, "SELECT * FROM qlink_tables(?)", spec).endswith("option 'a' is given twice")
    spec = f"{PROVIDER}?a=1&flag&a=2"
    assert error_of(db, "SELECT * FROM qlink_tables(?)", spec).endswith(
        "option 'flag' has no '=' (expected key=value)")


@pytest.mark.parametrize("before, after", [
    ("", "broken_unknown_option_ok/numbers"),
    (PROVIDER + "?n", "=3"),
    (PROVIDER + "?n=3", "&n=1000"),
    (PROVIDER + "?n=3&", "k=v"),
])
def test_nul_anywhere_is_refused_by_offset(db, before, after):
    """spec || char(0) || more used to read as spec alone."""
    total = len(before.encode()) + 1 + len(after.encode())
    assert error_of(db, "SELECT * FROM qlink_tables(? || char(0) || ?)", before, after) == (
        f"qlink_tables: {before}: table spec has a NUL byte at offset {len(before)} (of {total} bytes), after "
        f"'{before}': text may not hold NUL bytes")


def test_nul_quote_is_cut_visibly(db):
    """The text before a NUL is quoted up to 200 bytes, then '...'."""
    before = f"{PROVIDER}?" + "a" * 300
    message = error_of(db, "SELECT * FROM qlink_tables(? || char(0))", before)
    assert f"has a NUL byte at offset {len(before)} (of {len(before) + 1} bytes), after '{before[:200]}...': " in message


def test_percent_encoded_nul(db):
    spec = f"{PROVIDER}?n=3&k=a%00b"
    assert error_of(db, "SELECT * FROM qlink_tables(?)", spec) == (
        f"qlink_tables: {spec}: bad percent escape '%00' in table spec option value 'a%00b'")


def test_long_values_are_kept_whole(db):
    """A 1 MB option value reaches the plugin whole (here: as a number with
    a million leading zeros, which only an exact reading gives as 5)."""
    spec = f"{PROVIDER}?n={'0' * 1_000_000}5"
    assert db.execute("SELECT count(*) FROM qlink_tables(?)", (spec,)).fetchall() == [(1,)]
    db.execute(f"CREATE VIRTUAL TABLE t USING qlink('{spec}')")
    assert db.execute("SELECT count(*) FROM t").fetchall() == [(5,)]
