# SPDX-License-Identifier: Apache-2.0
"""SQLite through Python (apsw==3.54.1.0, ``qlink.sqlite.connect``) and
through Debian's ``sqlite3`` CLI (3.40.1, ``-json``), both loading the qlink
extension ``build/release/hosts/sqlite/qlink.so`` with the build's plugins/
folder allowed. SQLite types values, not columns: each column's type is the
storage class of its first non-NULL value, named in engine.TYPE_NAMES.

SQLite cannot call a plugin table function by name in FROM (its virtual
tables fix their columns before they see arguments): the host calls it
through ``CREATE VIRTUAL TABLE t USING qlink_call('PLUGIN', 'NAME', ...)``
(hosts/sqlite/README.md). ``call_tables`` is the one place that turns the
suite's ``NAME(args)`` calls into such tables. The Python route also hosts
qlink.xarray Datasets (``Query.datasets``: ``qlink.xarray.register`` on the
apsw connection); the CLI cannot (engine.GAPS)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import datasets
from engine import Engine, Query, Result, build_dir, normalise_type, normalise_value, qlink_package


def extension_path() -> Path:
    return build_dir() / "hosts" / "sqlite" / "qlink.so"


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def setup_sql(query: Query) -> list[str]:
    """The statements registering what the query needs (plugins by name:
    the extension finds them in the allowed plugins/ folder)."""
    stmts = [f"SELECT qlink_load({quote(p)})" for p in query.functions]
    stmts += [f"CREATE VIRTUAL TABLE {n} USING qlink({quote(s)})" for n, s in query.tables.items()]
    stmts += [f"SELECT qlink_attach({quote(n)}, {quote(s)})" for n, s in query.schemas.items()]
    return stmts


def closing_paren(sql: str, start: int) -> int:
    """The index of the ')' closing the '(' just before ``start``, past
    'strings' and "identifiers"."""
    depth, i = 1, start
    while i < len(sql):
        c = sql[i]
        if c in "'\"":
            end = sql.find(c, i + 1)
            while end != -1 and sql[end + 1:end + 2] == c:  # '' and "" escapes
                end = sql.find(c, end + 2)
            if end == -1:
                break
            i = end
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unbalanced parentheses after position {start} in: {sql}")


def call_tables(query: Query, sql: str) -> tuple[list[str], str]:
    """Each call ``NAME(args)`` of a table function of ``query`` (PLUGIN.NAME
    in ``query.table_functions``) becomes ``CREATE VIRTUAL TABLE NAME USING
    qlink_call('PLUGIN', 'NAME', args)`` (NAME_2, NAME_3 for further calls),
    the arguments as written, and the SQL names that table instead. Returns
    the statements and the SQL."""
    stmts = []
    for spec in query.table_functions:
        plugin, name = spec.split(".", 1)
        pattern = re.compile(rf"\b{re.escape(name)}\s*\(")
        parts, i, n = [], 0, 0
        while (m := pattern.search(sql, i)) is not None:
            close = closing_paren(sql, m.end())
            args = sql[m.end():close].strip()
            n += 1
            table = name if n == 1 else f"{name}_{n}"
            stmts.append(f"CREATE VIRTUAL TABLE {table} USING qlink_call({quote(plugin)}, {quote(name)}"
                         f"{', ' + args if args else ''})")
            parts.append(sql[i:m.start()] + table)
            i = close + 1
        sql = "".join(parts) + sql[i:]
    return stmts, sql


def storage_class(v) -> str:
    """SQLite's typeof() of a value as Python holds it."""
    if v is None:
        return "null"
    if isinstance(v, bool) or isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "real"
    if isinstance(v, (bytes, bytearray)):
        return "blob"
    return "text"


def column_types(engine: str, rows: list[tuple], n: int) -> list[str]:
    types = []
    for i in range(n):
        cls = next((storage_class(r[i]) for r in rows if r[i] is not None), "null")
        types.append(normalise_type(engine, cls))
    return types


class SQLitePython(Engine):
    name = "sqlite-python"

    def unavailable(self):
        if not extension_path().is_file():
            return f"the qlink SQLite extension is not built: {extension_path()}"
        try:
            import apsw  # noqa: F401
        except ImportError:
            return "the apsw Python module is not installed (scripts/setup.sh)"
        return None

    def run(self, query: Query, sql: str) -> Result:
        qlink_package()
        import qlink.sqlite

        db = qlink.sqlite.connect(plugin_dirs=[str(build_dir() / "plugins")], extension=str(extension_path()))
        calls, sql = call_tables(query, sql)
        try:
            for stmt in setup_sql(query) + calls:
                db.execute(stmt).fetchall()
            for name, (key, route) in query.datasets.items():
                datasets.register(db, name, key, route)
            cur = db.execute(sql)
            columns = [d[0] for d in cur.getdescription()]  # before fetching: apsw forgets it at the end
            rows = [tuple(normalise_value(v) for v in r) for r in cur.fetchall()]
            return Result(columns, column_types(self.name, rows, len(columns)), rows)
        finally:
            db.close()


class SQLiteCli(Engine):
    name = "sqlite-cli"

    def unavailable(self):
        if not extension_path().is_file():
            return f"the qlink SQLite extension is not built: {extension_path()}"
        return None if shutil.which("sqlite3") else "the sqlite3 CLI is not installed (scripts/setup.sh)"

    def run(self, query: Query, sql: str) -> Result:
        # .load takes the path without its suffix; -json prints REAL with 20
        # significant digits, so floats come back bit for bit.
        ext = str(extension_path())[: -len(".so")]
        calls, sql = call_tables(query, sql)
        script = "\n".join([f".load {ext}", *(s + ";" for s in setup_sql(query) + calls), ".mode json", sql + ";"]) + "\n"
        env = {**os.environ, "QLINK_PLUGIN_PATH": str(build_dir() / "plugins")}
        out = subprocess.run(["sqlite3", "-bail", ":memory:"], input=script, capture_output=True, text=True, env=env,
                             timeout=600)
        if out.returncode != 0 or out.stderr.strip():
            raise RuntimeError(f"sqlite3 CLI failed ({out.returncode}): {out.stderr.strip()}")
        # the setup's SELECTs print in the default list mode; the query's JSON array is last
        text = out.stdout[out.stdout.rfind("\n[{") + 1:] if "\n[{" in out.stdout else out.stdout
        objs = json.loads(text) if text.strip().startswith("[") else []
        columns = list(objs[0].keys()) if objs else []
        rows = [tuple(normalise_value(o[c]) for c in columns) for o in objs]
        return Result(columns, column_types(self.name, rows, len(columns)), rows)


ENGINES = [SQLitePython(), SQLiteCli()]
