# SPDX-License-Identifier: Apache-2.0
"""DuckDB through its Python module (duckdb==2.0.1) and through its CLI
(duckdb-cli==1.5.6, ``duckdb -unsigned``), both loading the qlink extension
``build/release/hosts/duckdb/qlink.duckdb_extension`` with the build's
plugins/ folder as QLINK_PLUGIN_PATH. The Python module also hosts
qlink.xarray Datasets (``Query.datasets``: ``qlink.xarray.register`` on the
connection); the CLI cannot (engine.GAPS)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
from engine import Engine, Query, Result, build_dir, normalise_type, normalise_value, plugin_path, resolve_spec


def extension_path() -> Path:
    return build_dir() / "hosts" / "duckdb" / "qlink.duckdb_extension"



def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def setup_sql(query: Query) -> list[str]:
    """The statements registering what the query needs."""
    stmts = [f"LOAD {quote(str(extension_path()))}"]
    stmts += [f"CALL qlink_load({quote(plugin_path(p))})" for p in query.functions]
    stmts += [f"CREATE VIEW {n} AS SELECT * FROM qlink_scan({quote(resolve_spec(s))})" for n, s in query.tables.items()]
    stmts += [f"CALL qlink_attach({quote(n)}, {quote(resolve_spec(s))})" for n, s in query.schemas.items()]
    return stmts


def plugin_env() -> dict:
    return {**os.environ, "QLINK_PLUGIN_PATH": str(build_dir() / "plugins")}


class DuckDBPython(Engine):
    name = "duckdb-python"

    def unavailable(self):
        if not extension_path().is_file():
            return f"the qlink DuckDB extension is not built: {extension_path()}"
        try:
            import duckdb  # noqa: F401
        except ImportError:
            return "the duckdb Python module is not installed (scripts/setup.sh)"
        return None

    def run(self, query: Query, sql: str) -> Result:
        import duckdb

        os.environ["QLINK_PLUGIN_PATH"] = str(build_dir() / "plugins")
        con = duckdb.connect(config={"allow_unsigned_extensions": True})
        try:
            for stmt in setup_sql(query):
                con.execute(stmt)
            for name, (key, route) in query.datasets.items():
                datasets.register(con, name, key, route)
            cur = con.execute(sql)
            columns = [d[0] for d in cur.description]
            types = [normalise_type(self.name, str(d[1])) for d in cur.description]
            rows = [tuple(normalise_value(v) for v in r) for r in cur.fetchall()]
            return Result(columns, types, rows)
        finally:
            con.close()


def duckdb_cli() -> str | None:
    exe = Path(sys.executable).parent / "duckdb"
    return str(exe) if exe.is_file() else shutil.which("duckdb")


class DuckDBCli(Engine):
    name = "duckdb-cli"

    def unavailable(self):
        if not extension_path().is_file():
            return f"the qlink DuckDB extension is not built: {extension_path()}"
        return None if duckdb_cli() else "the duckdb CLI is not installed (duckdb-cli, scripts/setup.sh)"

    def _json(self, query: Query, sql: str) -> list[dict]:
        script = ";\n".join(setup_sql(query) + [sql]) + ";\n"
        out = subprocess.run([duckdb_cli(), "-unsigned", "-json", ":memory:"], input=script, capture_output=True,
                             text=True, env=plugin_env(), timeout=600)
        if out.returncode != 0 or out.stderr.strip():
            raise RuntimeError(f"duckdb CLI failed ({out.returncode}): {out.stderr.strip()}")
        # One JSON array per statement that returns rows; the query's is the last.
        text = out.stdout.strip()
        if not text:
            return []
        arrays = json.loads("[" + text.replace("]\n[", "],\n[") + "]") if text.startswith("[") else []
        return arrays[-1] if arrays else []

    def run(self, query: Query, sql: str) -> Result:
        objs = self._json(query, sql)
        columns = list(objs[0].keys()) if objs else []
        rows = [tuple(normalise_value(o[c]) for c in columns) for o in objs]
        types: list[str] = []
        if columns:
            described = self._json(query, f"DESCRIBE {sql}")
            types = [normalise_type(self.name, d["column_type"]) for d in described]
        return Result(columns, types, rows)


ENGINES = [DuckDBPython(), DuckDBCli()]
