# SPDX-License-Identifier: Apache-2.0
"""The adapter interface of the cross-engine conformance suite, and the one
place where documented engine differences are normalised.

An engine adapter is a file ``tests/engines/engine_<host>.py`` defining
``ENGINES``: a list of ``Engine`` instances (one host may offer several
routes, e.g. DuckDB through Python and through its CLI). The suite
(``test_engines.py``) imports every such file; adding a host is adding one
file. See the documentation at the top of ``test_engines.py``.
"""

from __future__ import annotations

import importlib
import math
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def release_binary(name: str, env: str) -> Path:
    """A Rust binary of this workspace: ``$env``, default
    ``${CARGO_TARGET_DIR:-~/.cache/qlink-target}/release/NAME``."""
    if os.environ.get(env):
        return Path(os.environ[env])
    target = os.environ.get("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "qlink-target"))
    return Path(target) / "release" / name


def build_dir() -> Path:
    """The C release build (``QLINK_BUILD_DIR``, default build/release)."""
    return Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))


def plugin_path(name: str) -> str:
    """The path of plugin ``name`` (qlink_sample, qlink_zarr) in the C build."""
    return str(build_dir() / "plugins" / f"{name}.so")


def resolve_spec(spec: str) -> str:
    """PLUGIN/PROVIDER?... with PLUGIN a plugin name -> the plugin's path."""
    plugin, rest = spec.split("/", 1)
    return f"{plugin_path(plugin)}/{rest}"


def qlink_package():
    """The ``qlink`` package: the installed wheel when there is one (its
    native module serves the DataFusion Python routes), else this tree's
    python/ (qlink.duckdb, qlink.sqlite and qlink.xarray's DuckDB and
    SQLite routes need the C build alone). Imported once per process."""
    try:
        return importlib.import_module("qlink")
    except ModuleNotFoundError as exc:
        if exc.name != "qlink":
            raise
    sys.path.insert(0, str(ROOT / "python"))
    return importlib.import_module("qlink")


def has_native_qlink() -> bool:
    """Whether ``qlink_package()`` has its native module (the wheel)."""
    qlink_package()
    try:
        importlib.import_module("qlink._qlink")
        return True
    except ImportError:
        return False


@dataclass(frozen=True)
class Query:
    """One conformance query.

    ``sql`` names its tables as ``{name}`` placeholders; ``tables`` maps each
    name to a table-provider spec (``PLUGIN/PROVIDER?k=v``, PLUGIN a plugin
    name resolved by ``plugin_path``), ``schemas`` maps a schema name to a
    schema-provider spec (tables reached as ``{name}.table``), ``functions``
    lists plugins whose functions the query calls, ``table_functions`` the
    plugin table functions among them as ``PLUGIN.NAME`` (an engine that
    cannot host them answers with its documented refusal, ``REFUSALS``
    below). ``types`` are the
    expected neutral column types (see ``NEUTRAL_TYPES``). ``ordered``: rows
    compare in order (the SQL has an ORDER BY), else as a sorted multiset.
    ``unsupported`` maps an engine name to why its dialect cannot express
    the query: such a pair is reported as a skip naming the reason, never
    dropped silently. ``datasets`` maps a placeholder to an xarray Dataset
    and the qlink.xarray route that registers it, ``(key, route)`` with
    ``key`` one of ``datasets.py`` and ``route`` ``"ndarray"`` or
    ``"zarr"`` (tables reached as ``{name}.group``, or ``{name}`` for a
    Dataset of one dimension group).
    """

    id: str
    sql: str
    types: tuple[str, ...]
    tables: dict[str, str] = field(default_factory=dict)
    schemas: dict[str, str] = field(default_factory=dict)
    functions: tuple[str, ...] = ()
    table_functions: tuple[str, ...] = ()
    ordered: bool = True
    unsupported: dict[str, str] = field(default_factory=dict)
    datasets: dict[str, tuple[str, str]] = field(default_factory=dict)
    oracle: object = None  # callable() -> list of row tuples, or None: compare engines with each other


@dataclass
class Result:
    """What an engine returns: column names, neutral types, rows of Python
    values (int, float, str, bool, None, datetime.* ...)."""

    columns: list[str]
    types: list[str]
    rows: list[tuple]


class Engine:
    """The adapter interface. Subclasses set ``name`` and implement:

    - ``unavailable()``: None when the engine can run here, else the reason
      it cannot (the artifact that is missing); its queries then skip with
      that reason.
    - ``run(query, sql)``: register ``query.tables`` / ``query.schemas`` /
      ``query.functions`` / ``query.datasets`` (``datasets.register``) in
      a fresh session, run ``sql`` (the query's SQL
      with the placeholders already replaced by ``table_name``), and return
      a ``Result`` whose types went through ``normalise_type(self.name, t)``
      and whose values went through ``normalise_value``.
    - ``table_name(name)``: how the SQL names the registered table ``name``
      (default: ``name`` itself).
    - ``prepare(request)``: called with the test's pytest ``request``
      before ``run`` (default: nothing), for a route that needs a fixture
      (the distributed route: its session's ``qlink-worker``s).

    ``same_as``: the name of an engine whose answer this route must give
    exactly (types and rows, as a multiset when the query is unordered),
    checked besides the oracle (the distributed route: the single-process
    CLI's).
    """

    name = "?"
    same_as: str | None = None

    def prepare(self, request) -> None:
        pass

    def unavailable(self) -> str | None:
        raise NotImplementedError

    def run(self, query: Query, sql: str) -> Result:
        raise NotImplementedError

    def table_name(self, name: str) -> str:
        return name


# ---- every documented engine difference, in one place.

# Plugin object kinds a host cannot express through its engine's API, with
# the error the host answers when asked to load one: a query that needs such
# a kind must fail in that engine with that message (the suite checks the
# refusal; it neither skips nor drops the pair). Keys: the engine family
# (the part of its name before the first "-").
REFUSALS: dict[str, dict[str, str]] = {
    # None today: SQLite, which cannot name a plugin table function in FROM,
    # calls it through its qlink_call module (engine_sqlite.call_tables).
}


# What an engine's route cannot register at all, by what the query needs
# (``datasets``, ``functions``, ``schemas``, ``table_functions``), with why:
# such a pair reports as a skip naming the reason. Keys: engine names.
_IN_PROCESS = ("an xarray Dataset is registered by reference in this Python process (qlink.xarray); "
               "the {} runs in another process, which cannot reach it")
GAPS: dict[str, dict[str, str]] = {
    "duckdb-cli": {"datasets": _IN_PROCESS.format("DuckDB CLI")},
    "sqlite-cli": {"datasets": _IN_PROCESS.format("sqlite3 CLI")},
    "datafusion": {"datasets": _IN_PROCESS.format("qlink CLI")},
    "datafusion-distributed": {"datasets": _IN_PROCESS.format("qlink CLI")},
    # pl.SQLContext runs Polars expressions only: no user function can be
    # registered with it, so a plugin's scalar, aggregate and table
    # functions have no name in its SQL
    "polars": {
        "functions": "Polars' SQL (pl.SQLContext) cannot register functions: a plugin's scalar, aggregate and "
                     "table functions have no name there",
        "table_functions": "Polars' SQL (pl.SQLContext) cannot register table functions",
        "schemas": "qlink.polars.scan takes one table's spec: a plugin's schema (every table of a store) is "
                   "registered table by table there, which these queries' schema specs do not name",
    },
}


# Known bugs of a route, by engine name: (which queries, the error they
# fail with today, why). Such a pair must fail with that error and reports
# as an expected failure naming the bug; once it passes, the suite fails
# until the entry is removed.
KNOWN_BUGS: dict[str, list[tuple[object, str, str]]] = {}


def known_bug(engine: str, query: Query) -> tuple[str, str] | None:
    """(the error ``engine`` fails ``query`` with today, the bug), or None."""
    for applies, error, why in KNOWN_BUGS.get(engine, []):
        if applies(query):
            return error, why
    return None


def gap(engine: str, query: Query) -> str | None:
    """Why ``engine`` cannot register what ``query`` needs, or None."""
    gaps = GAPS.get(engine, {})
    for need in ("datasets", "functions", "table_functions", "schemas"):
        if getattr(query, need) and need in gaps:
            return gaps[need]
    return None


def refusal(engine: str, query: Query) -> str | None:
    """The error ``engine`` must answer ``query`` with, or None when it
    runs it."""
    refused = REFUSALS.get(engine.split("-")[0], {})
    if query.table_functions and "table_function" in refused:
        return refused["table_function"]
    return None


# ---- normalisation

# The neutral vocabulary results are compared in.
NEUTRAL_TYPES = {"int64", "int32", "float64", "float32", "utf8", "bool", "date", "timestamp", "timestamptz",
                 "interval", "decimal"}

# Engine type names -> neutral names. DataFusion reports Arrow types
# (arrow_typeof); DuckDB its SQL types. utf8 and large utf8 are one type to
# SQL (DuckDB has only VARCHAR); timestamps of every unit are one
# "timestamp" (DuckDB reads s/ms/ns units as TIMESTAMP_S/_MS/_NS).
TYPE_NAMES = {
    "datafusion": {
        "Int64": "int64", "Int32": "int32", "Float64": "float64", "Float32": "float32",
        "Utf8": "utf8", "LargeUtf8": "utf8", "Utf8View": "utf8", "Boolean": "bool", "Date32": "date",
    },
    "duckdb": {
        "BIGINT": "int64", "INTEGER": "int32", "DOUBLE": "float64", "FLOAT": "float32",
        "VARCHAR": "utf8", "BOOLEAN": "bool", "DATE": "date", "INTERVAL": "interval",
        "TIMESTAMP": "timestamp", "TIMESTAMP_S": "timestamp", "TIMESTAMP_MS": "timestamp",
        "TIMESTAMP_NS": "timestamp", "TIMESTAMP WITH TIME ZONE": "timestamptz",
    },
    # Polars' dtypes (engine_polars._dtype_name): String is utf8 whatever
    # the Arrow string type it was read from; every time unit is one
    # "timestamp".
    "polars": {
        "Int64": "int64", "Int32": "int32", "Float64": "float64", "Float32": "float32", "String": "utf8",
        "Boolean": "bool", "Date": "date", "Datetime": "timestamp", "Datetime[tz]": "timestamptz",
        "Duration": "interval", "Decimal": "decimal",
    },
    # SQLite types values (typeof): one 64-bit INTEGER and one double REAL,
    # so int32/float32 columns read as int64/float64; timestamps and dates
    # are ISO TEXT and decimals exact TEXT (hosts/sqlite/README.md), so a
    # query whose answer has those types is marked unsupported for sqlite.
    "sqlite": {"integer": "int64", "real": "float64", "text": "utf8"},
}


def normalise_type(engine: str, t: str) -> str:
    family = engine.split("-")[0]  # duckdb-python and duckdb-cli share DuckDB's names
    if t.startswith("Timestamp("):
        return "timestamptz" if "Some(" in t or '"' in t else "timestamp"
    if t.startswith("Decimal128(") or t.startswith("DECIMAL("):
        return "decimal"
    return TYPE_NAMES.get(family, {}).get(t, f"unmapped:{t}")


def normalise_value(v):
    """JSON and CSV routes print NaN and infinities as strings (the qlink
    CLI: "NaN", "Infinity", "-Infinity"); they are floats."""
    if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("Infinity", "inf"))
    return v


def comparable(v):
    """A key comparing floats bit for bit (NaN equals NaN of the same bits;
    0.0 and -0.0 differ), usable to sort rows of mixed values and None."""
    if isinstance(v, float):
        return (2, struct.pack(">d", v).hex() if not math.isnan(v) else "nan")
    if v is None:
        return (0, "")
    if isinstance(v, bool):
        return (1, str(int(v)))
    if isinstance(v, int):
        return (1, f"{v:+021d}")
    return (3, str(v))


def seen_by(engine: str, rows):
    """Rows as ``engine`` can hold them: SQLite stores NaN as NULL
    (hosts/sqlite/README.md), so compared with SQLite a NaN is a NULL; the
    sqlite3 shell's text has no -0.0."""
    if engine.split("-")[0] != "sqlite":
        return rows
    rows = [tuple(None if isinstance(v, float) and v != v else v for v in row) for row in rows]
    if engine == "sqlite-cli":  # the sqlite3 shell prints -0.0 as 0.0 (`SELECT -0.0` shows 0.0)
        rows = [tuple(0.0 if isinstance(v, float) and v == 0.0 else v for v in row) for row in rows]
    return rows


def rows_key(rows, ordered: bool):
    keyed = [tuple(comparable(v) for v in row) for row in rows]
    return keyed if ordered else sorted(keyed)
