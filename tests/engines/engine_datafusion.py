"""DataFusion through the qlink CLI (``qlink sql``): ``$QLINK_CLI``, default
``${CARGO_TARGET_DIR:-~/.cache/qlink-target}/release/qlink`` (``make test``
builds it)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from engine import Engine, Query, Result, normalise_type, normalise_value, plugin_path


def cli_path() -> Path:
    env = os.environ.get("QLINK_CLI")
    if env:
        return Path(env)
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "qlink-target"))
    return Path(target) / "release" / "qlink"


def resolve_spec(spec: str) -> str:
    """PLUGIN/PROVIDER?... with PLUGIN a plugin name -> the plugin's path."""
    plugin, rest = spec.split("/", 1)
    return f"{plugin_path(plugin)}/{rest}"


class DataFusionCli(Engine):
    name = "datafusion"

    def unavailable(self):
        cli = cli_path()
        return None if cli.is_file() else f"the qlink CLI is not built: {cli}"

    def _sql(self, query: Query, sql: str) -> list[dict]:
        args = [str(cli_path()), "sql", "--format", "json"]
        for p in query.functions:
            args += ["--plugin", plugin_path(p)]
        for name, spec in query.tables.items():
            args += ["--table", f"{name}={resolve_spec(spec)}"]
        for name, spec in query.schemas.items():
            args += ["--schema", f"{name}={resolve_spec(spec)}"]
        out = subprocess.run(args + ["--", sql], capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"qlink sql failed ({out.returncode}): {out.stderr.strip()}")
        return json.loads(out.stdout) if out.stdout.strip() else []

    def run(self, query: Query, sql: str) -> Result:
        objs = self._sql(query, sql)
        columns = list(objs[0].keys()) if objs else []
        rows = [tuple(normalise_value(o[c]) for c in columns) for o in objs]
        types: list[str] = []
        if columns:
            typed = ", ".join(f'arrow_typeof("{c}") AS "{c}"' for c in columns)
            t = self._sql(query, f"SELECT {typed} FROM ({sql}) AS q LIMIT 1")[0]
            types = [normalise_type(self.name, t[c]) for c in columns]
        return Result(columns, types, rows)


ENGINES = [DataFusionCli()]
