# SPDX-License-Identifier: Apache-2.0
"""qlink plugin tables as Polars LazyFrames (``polars.io.plugins``).

::

    import polars as pl
    import qlink.polars

    lf = qlink.polars.scan("qlink_zarr/table?path=era5.zarr")      # a polars.LazyFrame
    lf.filter(pl.col("latitude").is_between(30, 60)).select("t2m").head(10).collect()

    ctx = pl.SQLContext(era5=lf)                                      # Polars' own SQL
    ctx.execute("SELECT avg(t2m) FROM era5 WHERE latitude > 30").collect()

:func:`scan` registers the table on a ``qlink.Session`` (the embedded
DataFusion host of ``qlink._qlink``, the qlink wheel) and hands Polars an IO
source (``polars.io.plugins.register_io_source``). When Polars collects,
the source receives what Polars pushed into the scan and turns it into one
statement on that session: the projection (``with_columns``) is the
``SELECT`` list, the predicate's conjuncts that qlink can express
(:func:`pushdown`) are its ``WHERE``, and the row limit (``n_rows``) its
``LIMIT`` when the whole predicate went into the ``WHERE``. DataFusion then
passes the projection, the filters and the limit to the plugin's scan
(``docs/abi.md`` R10): the plugin prunes with them and applies those it
answers EXACT; DataFusion applies the rest. Polars does not re-apply what
an IO source is given (its streaming engine trusts the source for both the
predicate and ``n_rows``), so the source applies everything it receives:
the conjuncts it could not translate run in Polars on each batch
(``DataFrame.filter``), and ``n_rows`` is then counted after them.

Batches cross as Arrow C streams: the session's ``pyarrow.RecordBatchReader``
yields the batches the plugin's stream produced (DataFusion passes a
plugin's arrays through when no filter runs on its side), and
``polars.from_arrow`` wraps their numeric, boolean and timestamp buffers
without copying (Polars copies string columns into its own string layout).

Needs the qlink wheel (``python/build.sh``) and ``polars`` (pinned in
scripts/requirements.txt). The module never imports them at load.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import math
import threading
from typing import Any

__all__ = ["scan", "pushdown", "parse_spec", "DEFAULT_BATCH_SIZE"]

log = logging.getLogger("qlink.polars")

_HEX = "0123456789abcdefABCDEF"


def _percent_decode(text: str, what: str, spec: str) -> str:
    """Strict percent-decoding as the hosts do it (``%XX`` only; ``+``
    stays ``+``): ValueError naming ``what`` for a malformed escape or a
    decoded NUL."""
    out = bytearray()
    i = 0
    raw = text.encode("utf-8")
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # '%'
            pair = raw[i + 1:i + 3].decode("ascii", "replace")
            if len(pair) != 2 or pair[0] not in _HEX or pair[1] not in _HEX:
                raise ValueError(f"table spec {spec!r}: {what} {text!r} has a malformed percent escape "
                                 f"at byte {i} (expected %XX with two hex digits)")
            c = int(pair, 16)
            i += 3
        else:
            i += 1
        if c == 0:
            raise ValueError(f"table spec {spec!r}: {what} {text!r} contains a NUL byte")
        out.append(c)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"table spec {spec!r}: {what} {text!r} is not UTF-8 once decoded") from exc


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """``PLUGIN/PROVIDER?key=value&...`` -> ``(plugin, provider, options)``,
    every part percent-decoded, as every qlink host parses a spec
    (``src/loader/table_spec.c``): the provider is what follows the last
    ``/`` before the ``?``, ``a=1&&b=2`` and a trailing ``&`` are
    tolerated. ``plugin`` is returned as written (a path, or a plugin
    name: :func:`scan` resolves names).

    Errors: TypeError (not a str), ValueError naming what is wrong (no
    ``/``, an empty plugin or provider, an option without ``=`` or with
    an empty key, an option given twice, a malformed ``%`` escape, a NUL).
    """
    if not isinstance(spec, str):
        raise TypeError(f"a table spec is a str (PLUGIN/PROVIDER?key=value&...), not {type(spec).__name__}")
    if "\x00" in spec:
        raise ValueError(f"table spec {spec!r} contains a NUL byte")
    head, _, query = spec.partition("?")
    plugin, slash, provider = head.rpartition("/")
    if not slash:
        raise ValueError(f"table spec {spec!r} has no '/': expected PLUGIN/PROVIDER?key=value&...")
    if not plugin:
        raise ValueError(f"table spec {spec!r}: the plugin is empty")
    if not provider:
        raise ValueError(f"table spec {spec!r}: the provider is empty")
    options: dict[str, str] = {}
    for part in query.split("&") if query else []:
        if not part:
            continue
        key, eq, value = part.partition("=")
        if not eq:
            raise ValueError(f"table spec {spec!r}: option {part!r} has no '=' (expected key=value)")
        if not key:
            raise ValueError(f"table spec {spec!r}: option {part!r} has an empty key")
        key = _percent_decode(key, "option key", spec)
        if key in options:
            raise ValueError(f"table spec {spec!r}: option {key!r} is given twice")
        options[key] = _percent_decode(value, "option value", spec)
    return (_percent_decode(plugin, "plugin", spec), _percent_decode(provider, "provider", spec), options)


def _plugin_file(plugin: str) -> str:
    """A plugin path as written, or a bare name (no ``/``; ``.so`` optional)
    resolved by :func:`qlink.plugin_path` (``QLINK_PLUGIN_DIR``, else the
    plugins shipped in the package)."""
    if "/" in plugin:
        return plugin
    from ._core import plugin_path

    return plugin_path(plugin[:-3] if plugin.endswith(".so") else plugin)


# ---- predicate pushdown: a Polars expression -> SQL over the session


def _quote(ident: str) -> str:
    return '"' + str(ident).replace('"', '""') + '"'


_COMPARISONS = {"Eq": "=", "NotEq": "<>", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIPPED = {"Eq": "Eq", "NotEq": "NotEq", "Lt": "Gt", "LtEq": "GtEq", "Gt": "Lt", "GtEq": "LtEq"}
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}
_ARROW_INTS = {"Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"}
_UNITS = {"ns": "Nanosecond", "us": "Microsecond", "ms": "Millisecond"}


class _Untranslatable(Exception):
    """This node stays in Polars."""


def _has_column(node) -> bool:
    if isinstance(node, dict):
        return any(k in ("Column", "Columns", "Nth", "Selector", "Wildcard", "Len") or _has_column(v)
                   for k, v in node.items())
    if isinstance(node, list):
        return any(_has_column(v) for v in node)
    return False


def _expr_of(node):
    import polars as pl

    return pl.Expr.deserialize(io.StringIO(json.dumps(node)), format="json")


def _constant(node):
    """A column-free node evaluated by Polars: a Series (its values). A
    node JSON cannot carry (a NaN literal, written as null) fails to
    deserialize, so it stays in Polars."""
    import polars as pl

    if _has_column(node):
        raise _Untranslatable("not a constant")
    try:
        return pl.select(_expr_of(node)).to_series()
    except Exception as exc:  # noqa: BLE001 - any failure: leave the node to Polars
        raise _Untranslatable(str(exc)) from exc


def _sql_value(value, dtype) -> str:
    """One non-null value of Polars type ``dtype`` as a SQL literal of the
    same Arrow type in DataFusion (exact: no value changes on the way).
    Timestamps are :func:`_literal_sql`'s (it has their integer)."""
    import polars as pl

    name = type(dtype).__name__ if not isinstance(dtype, type) else dtype.__name__
    if dtype == pl.Boolean:
        return "TRUE" if value else "FALSE"
    if name in _ARROW_INTS:
        return f"arrow_cast({int(value)}, '{name}')"
    if dtype in (pl.Float32, pl.Float64):
        if math.isnan(value):
            raise _Untranslatable("NaN literal (plugins compare floats in C, where NaN equals nothing)")
        text = repr(float(value)) if math.isfinite(value) else ("'Infinity'" if value > 0 else "'-Infinity'")
        return f"arrow_cast({text}, '{name}')"
    if dtype == pl.String:
        return "'" + str(value).replace("'", "''") + "'"
    if dtype == pl.Date:
        return f"DATE '{value.isoformat()}'"
    raise _Untranslatable(f"a literal of type {dtype} is not translated")


def _literal_sql(series) -> str:
    import polars as pl

    if series.len() != 1 or series.null_count():
        raise _Untranslatable("not a single non-null value")
    dtype = series.dtype
    if isinstance(dtype, pl.Datetime) and dtype.time_zone is None and dtype.time_unit in _UNITS:
        raw = series.cast(pl.Int64)[0]
        return f"arrow_cast({raw}, 'Timestamp({_UNITS[dtype.time_unit]}, None)')"
    return _sql_value(series[0], dtype)


class _Translator:
    """Polars expression JSON (``Expr.meta.serialize(format="json")``) ->
    SQL text, for the forms whose meaning is the same in Polars and in
    DataFusion. Each comparison needs a bare column on one side and a
    constant of exactly the column's type on the other (Polars casts a
    literal to the column's type before it pushes a predicate; any other
    pairing, a cast column included, stays in Polars)."""

    def __init__(self, schema: dict):
        self.schema = schema

    def column(self, node) -> str:
        if isinstance(node, dict) and set(node) == {"Column"} and node["Column"] in self.schema:
            return node["Column"]
        raise _Untranslatable("not a column of the table")

    def typed(self, column: str, node) -> str:
        value = _constant(node)
        if value.dtype != self.schema[column]:
            raise _Untranslatable(f"a {value.dtype} constant against {column!r} of type {self.schema[column]}")
        return _literal_sql(value)

    def sql(self, node) -> str:
        if not isinstance(node, dict) or len(node) != 1:
            raise _Untranslatable("unknown node")
        kind, body = next(iter(node.items()))
        if kind == "BinaryExpr":
            op = body["op"]
            if op in ("And", "LogicalAnd"):
                return f"({self.sql(body['left'])} AND {self.sql(body['right'])})"
            if op in ("Or", "LogicalOr"):
                return f"({self.sql(body['left'])} OR {self.sql(body['right'])})"
            if op in _COMPARISONS:
                left, right = body["left"], body["right"]
                if not _has_column(left) and _has_column(right):
                    left, right, op = right, left, _FLIPPED[op]
                col = self.column(left)
                return f"{_quote(col)} {_COMPARISONS[op]} {self.typed(col, right)}"
            raise _Untranslatable(f"operator {op}")
        if kind == "Function":
            function, args = body["function"], body["input"]
            boolean = function.get("Boolean") if isinstance(function, dict) else None
            if boolean == "Not" and len(args) == 1:
                return f"(NOT {self.sql(args[0])})"
            if boolean in ("IsNull", "IsNotNull") and len(args) == 1:
                return f"{_quote(self.column(args[0]))} IS {'NOT ' if boolean == 'IsNotNull' else ''}NULL"
            if isinstance(boolean, dict) and "IsBetween" in boolean and len(args) == 3:
                col = self.column(args[0])
                lo, hi = self.typed(col, args[1]), self.typed(col, args[2])
                closed = boolean["IsBetween"].get("closed", "Both")
                if closed == "Both":
                    return f"{_quote(col)} BETWEEN {lo} AND {hi}"
                low_op, high_op = _BETWEEN[closed]
                return f"({_quote(col)} {low_op} {lo} AND {_quote(col)} {high_op} {hi})"
            if isinstance(boolean, dict) and "IsIn" in boolean and len(args) == 2:
                return self.is_in(args[0], args[1], boolean["IsIn"])
        raise _Untranslatable(f"{kind} node")

    def is_in(self, column_node, values_node, options) -> str:
        """``col IN (...)``: only without NULLs among the values (Polars
        answers false where SQL answers NULL, which NOT would tell apart)
        and with ``nulls_equal`` false."""
        import polars as pl

        if options.get("nulls_equal"):
            raise _Untranslatable("is_in(nulls_equal=True)")
        col = self.column(column_node)
        values = _constant(values_node)
        if isinstance(values.dtype, (pl.List, pl.Array)):
            if values.len() != 1 or values.null_count():
                raise _Untranslatable("not one list")
            values = values[0]
        if values.len() == 0 or values.null_count():
            raise _Untranslatable("an empty list or one holding NULL")
        if values.dtype != self.schema[col]:
            raise _Untranslatable(f"{values.dtype} values against {col!r} of type {self.schema[col]}")
        return f"{_quote(col)} IN ({', '.join(_literal_sql(values.slice(i, 1)) for i in range(values.len()))})"


def _conjuncts(expr) -> list:
    """``[(conjunct, its JSON tree)]`` of a Polars expression: the
    operands of its top-level ANDs as the caller's own ``Expr`` objects
    (``meta.pop``, which lists a node's inputs last first), so what stays
    in Polars is never rebuilt from JSON, which is lossy (Polars writes a
    NaN or infinite literal as null)."""
    tree = json.loads(expr.meta.serialize(format="json"))
    if isinstance(tree, dict) and "BinaryExpr" in tree and tree["BinaryExpr"]["op"] in ("And", "LogicalAnd"):
        parts = expr.meta.pop()
        if len(parts) == 2:
            return [c for part in reversed(parts) for c in _conjuncts(part)]
    return [(expr, tree)]


def pushdown(predicate, schema) -> tuple[str | None, Any]:
    """Split a Polars predicate into what qlink runs and what stays in Polars.

    ``predicate``: a ``polars.Expr`` (or None); ``schema``: the table's
    ``polars.Schema`` (or a name -> dtype mapping). Returns ``(where,
    residual)``: ``where`` the SQL text (DataFusion's dialect) of the
    conjuncts of ``predicate`` that have the same meaning there, AND-ed,
    or None; ``residual`` a ``polars.Expr`` of the other conjuncts, AND-ed,
    or None. Rows passing ``where`` and then ``residual`` are exactly the
    rows passing ``predicate`` in Polars.

    Translated, each on a column of the table against constants of exactly
    its type (a constant expression, ``pl.lit("2020-01-01").str.to_date()``
    say, is evaluated first): comparisons (``== != < <= > >=``),
    ``is_between`` (every ``closed``), ``is_in`` over a list without nulls,
    ``is_null``/``is_not_null``, and ``&``, ``|``, ``~`` of those. Constant
    types: booleans, integers, floats (not NaN), strings, dates and
    timestamps without a time zone. Anything else (arithmetic, a cast
    column, string functions, ``eq_missing``...) is residual. Pure; any
    thread.
    """
    if predicate is None:
        return None, None
    translator = _Translator(dict(schema))
    sql, residual = [], None
    for expr, tree in _conjuncts(predicate):
        try:
            sql.append(translator.sql(tree))
        except _Untranslatable:
            residual = expr if residual is None else residual & expr
    return (" AND ".join(sql) if sql else None), residual


# ---- the IO source


_names = itertools.count()
_names_lock = threading.Lock()


def _table_name() -> str:
    with _names_lock:
        return f"qlink_polars_{next(_names)}"


# Rows per batch of a session scan() makes: Polars' own IO-source batch
# hint. Each batch costs Polars' IO-source path about 0.1 ms whatever its
# size, so DataFusion's default (8,192 rows) made a full scan of 3.1 M rows
# 5x slower than this (bench/xarray).
DEFAULT_BATCH_SIZE = 100_000


def _new_session(batch_size: int | None):
    try:
        from ._core import Session
    except ModuleNotFoundError as exc:
        raise ImportError("qlink.polars needs qlink's native module (the qlink wheel: python/build.sh)") from exc
    return Session(batch_size=batch_size or DEFAULT_BATCH_SIZE)


def _register(session, plugin: str, provider: str, options: dict[str, str]) -> str:
    name = _table_name()
    session.register_table(name, _plugin_file(plugin), provider, **options)
    return name


def scan(spec: str, *, batch_size: int | None = None, session=None, _keep: Any = None):
    """The plugin table ``spec`` as a ``polars.LazyFrame``.

    ``spec``: ``PLUGIN/PROVIDER?key=value&...`` as every qlink host takes it
    (:func:`parse_spec`): ``PLUGIN`` a plugin's path, or a bare plugin name
    (``qlink_zarr``) found by :func:`qlink.plugin_path`; the provider must
    be a table provider (``qlink_zarr/table?path=...&table=...``,
    ``qlink_sample/series?stop=100``). The plugin path is trusted as
    ``qlink.Session.register_table``'s is: it is the caller's, and Polars'
    SQL (``pl.SQLContext``) reaches only frames the caller registered.

    ``batch_size``: rows per batch the plugin produces (the session's
    ``batch_size``; default :data:`DEFAULT_BATCH_SIZE`, 100,000, Polars'
    own batch hint) and the most each batch handed to Polars holds;
    Polars' hint caps it further. ``session``:
    a ``qlink.Session`` to register the table on (default: a new one per
    call, which ``batch_size`` configures; with ``session`` given,
    ``batch_size`` only cuts batches). The table is registered under a
    fresh name (``qlink_polars_N``).

    The schema is the table's Arrow schema as Polars types
    (``polars.from_arrow``: Utf8 and LargeUtf8 are String, a
    second-resolution timestamp becomes Datetime("ms")). Each collect runs
    one query on the session: see the module documentation for what is
    pushed down (projection, :func:`pushdown`'s predicate, the row limit)
    and what Polars applies. The statement is logged at DEBUG on the
    ``qlink.polars`` logger.

    Ownership: the LazyFrame (and every frame derived from it) holds the
    session and the table; the plugin stays loaded for the process (as
    every plugin loaded from Python). Batches are Arrow buffers the plugin
    produced, owned by Polars once yielded. Thread-safety: frames may be
    collected from several threads at once (each collect is its own query
    on the thread-safe session).

    Errors, raised here: TypeError/ValueError for a malformed spec (naming
    what is wrong), ``qlink.PluginError`` (a plugin name not found, a file
    that is not a plugin), ``qlink.PlanError`` or ``qlink.ExecutionError``
    (the provider or an option refused, in the plugin's words), ImportError
    when the qlink wheel is not installed. Raised when collecting: the
    plugin's errors while scanning (pyarrow's ``ArrowInvalid`` carrying the
    plugin's message).
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0):
        raise ValueError(f"batch_size must be a positive int, not {batch_size!r}")
    plugin, provider, options = parse_spec(spec)
    session = session if session is not None else _new_session(batch_size)
    name = _register(session, plugin, provider, options)
    arrow_schema = session.sql_reader(f"SELECT * FROM {_quote(name)} LIMIT 0").schema
    schema = pl.from_arrow(arrow_schema.empty_table()).schema
    source = _Source(session, name, schema, batch_size, _keep)
    return register_io_source(source, schema=schema, explain_name="qlink", explain_detail=f"{plugin}/{provider}")


class _Source:
    """The IO source of one registered table (called by Polars, on any of
    its threads, once per collect)."""

    def __init__(self, session, name: str, schema, batch_size: int | None, keep: Any):
        self.session, self.name, self.schema = session, name, schema
        self.batch_size, self.keep = batch_size, keep

    def __call__(self, with_columns, predicate, n_rows, batch_size):
        columns = list(self.schema) if with_columns is None else list(with_columns)
        if not columns:
            columns = list(self.schema)[:1]
        where, residual = pushdown(predicate, self.schema)
        needed = list(columns)
        if residual is not None:
            needed += [c for c in residual.meta.root_names() if c not in needed]
        sql = f"SELECT {', '.join(_quote(c) for c in needed)} FROM {_quote(self.name)}"
        if where:
            sql += f" WHERE {where}"
        if n_rows is not None and residual is None:
            sql += f" LIMIT {int(n_rows)}"
        cap = min(b for b in (self.batch_size, batch_size) if b) if (self.batch_size or batch_size) else None
        log.debug("%s", sql)
        return self._batches(sql, columns, residual, n_rows, cap, len(needed) != len(columns))

    def _batches(self, sql, columns, residual, n_rows, cap, reselect):
        import polars as pl

        left = n_rows
        if left is not None and left <= 0:
            return
        reader = self.session.sql_reader(sql)
        try:
            for batch in reader:
                df = pl.from_arrow(batch, rechunk=False)
                if residual is not None:
                    df = df.filter(residual)
                if reselect:
                    df = df.select(columns)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                if df.height:
                    step = cap or df.height
                    for start in range(0, df.height, step):
                        yield df.slice(start, step)
                if left is not None and left <= 0:
                    break
        finally:
            reader.close()
