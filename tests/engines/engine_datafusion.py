# SPDX-License-Identifier: Apache-2.0
"""DataFusion through the qlink CLI (``qlink sql``): ``$QLINK_CLI``, default
``${CARGO_TARGET_DIR:-~/.cache/qlink-target}/release/qlink`` (``make test``
builds it), in one process (datafusion) and distributed over two
``qlink-worker``s on the loopback interface (datafusion-distributed: ``qlink
sql --workers``, the workers started once per test session by conftest.py's
``qlink_workers``; its answers must equal the single-process CLI's exactly);
and in this process through the qlink wheel (``make
test-python`` installs it): ``qlink.Session`` (datafusion-session: every
query, Datasets through ``Session.register_dataset``'s route) and
qlink.xarray's ``Context``, a datafusion-python 55 ``SessionContext``
(datafusion-context: plugin tables as capsules and Datasets through
``Context.from_dataset``; engine.GAPS says what it leaves to the Session)."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

from urllib.parse import parse_qsl

import datasets
from engine import (Engine, Query, Result, has_native_qlink, normalise_type, normalise_value, plugin_path,
                    release_binary, resolve_spec)


def cli_path() -> Path:
    return release_binary("qlink", "QLINK_CLI")



class DataFusionCli(Engine):
    name = "datafusion"

    def unavailable(self):
        cli = cli_path()
        return None if cli.is_file() else f"the qlink CLI is not built: {cli}"

    def options(self) -> list[str]:
        """Options of ``qlink sql`` this route adds."""
        return []

    def _sql(self, query: Query, sql: str) -> list[dict]:
        args = [str(cli_path()), "sql", "--format", "json", *self.options()]
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
            # JSON prints timestamps as ISO text: the datetimes the Python routes return
            rows = [tuple(datetime.datetime.fromisoformat(v) if k == "timestamp" and isinstance(v, str) else v
                          for v, k in zip(row, types)) for row in rows]
        return Result(columns, types, rows)


class DataFusionDistributed(DataFusionCli):
    name = "datafusion-distributed"
    same_as = "datafusion"

    def __init__(self):
        self.workers = None

    def unavailable(self):
        from workers import worker_path

        return super().unavailable() or (None if worker_path().is_file() else
                                         f"qlink-worker is not built: {worker_path()} (make build-cli)")

    def prepare(self, request):
        self.workers = request.getfixturevalue("qlink_workers")

    def options(self):
        return self.workers.args


def split_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """PLUGIN/PROVIDER?k=v&... -> (plugin path, provider, options), the
    options percent-decoded as the hosts decode them."""
    plugin, rest = spec.split("/", 1)
    provider, _, query = rest.partition("?")
    return plugin_path(plugin), provider, dict(parse_qsl(query, keep_blank_values=True))


def _arrow_result(engine: str, table, typeof) -> Result:
    """A pyarrow Table as a Result; ``typeof(sql)`` answers a one-row table
    of the columns' arrow_typeof names."""
    columns = list(table.column_names)
    rows = [tuple(normalise_value(v) for v in row) for row in zip(*(c.to_pylist() for c in table.columns))]
    return Result(columns, [normalise_type(engine, t) for t in typeof], rows)


def _typed(columns: list[str], sql: str) -> str:
    typed = ", ".join(f'arrow_typeof("{c}") AS "{c}"' for c in columns)
    return f"SELECT {typed} FROM ({sql}) AS q LIMIT 1"


class _InProcess(Engine):
    def unavailable(self):
        if not has_native_qlink():
            return "the qlink wheel (its native module qlink._qlink) is not installed: python/build.sh"
        try:
            import datafusion  # noqa: F401
        except ImportError:
            return "datafusion-python is not installed (scripts/setup.sh)"
        return None


class DataFusionSession(_InProcess):
    name = "datafusion-session"

    def run(self, query: Query, sql: str) -> Result:
        import qlink

        s = qlink.Session()
        for p in query.functions:
            s.load_plugin(plugin_path(p))
        for name, spec in query.tables.items():
            path, provider, options = split_spec(spec)
            s.register_table(name, path, provider, **options)
        for name, spec in query.schemas.items():
            path, provider, options = split_spec(spec)
            s.register_schema(name, path, provider, **options)
        for name, (key, route) in query.datasets.items():
            datasets.register(s, name, key, route)
        table = s.sql(sql)
        columns = list(table.column_names)
        types = []
        if columns and table.num_rows:
            t = s.sql(_typed(columns, sql))
            types = [t.column(i)[0].as_py() for i in range(len(columns))]
        return _arrow_result(self.name, table, types)


def _register_functions(ctx, plugin) -> None:
    """Every function of ``plugin`` on a datafusion-python SessionContext,
    through qlink's capsules, as python/README.md shows a user."""
    import datafusion

    for kind, name, _ in plugin.items():
        if kind == "scalar_function":
            ctx.register_udf(datafusion.udf(plugin.udf(name)))
        elif kind == "aggregate_function":
            ctx.register_udaf(datafusion.udaf(plugin.udaf(name)))
        elif kind == "window_function":
            ctx.register_udwf(datafusion.udwf(plugin.udwf(name)))
        elif kind == "table_function":
            ctx.register_udtf(datafusion.udtf(plugin.udtf(name), name))


class DataFusionContext(_InProcess):
    name = "datafusion-context"

    def run(self, query: Query, sql: str) -> Result:
        import qlink
        import qlink.xarray as xql

        ctx = xql.Context()
        for p in query.functions:
            _register_functions(ctx, qlink.Plugin(plugin_path(p)))
        for name, spec in query.tables.items():
            path, provider, options = split_spec(spec)
            ctx.register_table(name, qlink.Plugin(path).table(provider, **options))
        for name, spec in query.schemas.items():
            path, provider, options = split_spec(spec)
            ctx.catalog().register_schema(name, qlink.Plugin(path).schema(provider, **options))
        for name, (key, route) in query.datasets.items():
            datasets.register(ctx, name, key, route)
        table = ctx.sql(sql).to_arrow_table()
        columns = list(table.column_names)
        types = []
        if columns and table.num_rows:
            t = ctx.sql(_typed(columns, sql)).to_arrow_table()
            types = [t.column(i)[0].as_py() for i in range(len(columns))]
        return _arrow_result(self.name, table, types)


ENGINES = [DataFusionCli(), DataFusionDistributed(), DataFusionSession(), DataFusionContext()]
