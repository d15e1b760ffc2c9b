#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-plans: deep plans over small xarray tables, every qlink route beside
its own engine's native tables and xarray-sql 0.6.0, one run.

Workloads:
 a. join chains of depth 40, 80, 160 over an 8-row Dataset ``t`` (chunks
    {"i": 8}): ``WITH x0 AS (SELECT i, v FROM t), x1 AS (SELECT a.i, a.v +
    b.v AS v FROM x0 a JOIN t b ON a.i = b.i), ... SELECT SUM(v) FROM xN``,
    whose answer is exactly 28 (N + 1). Planning time and total time.
 b. a one-layer GPT forward pass as one statement over 11 tables, every
    step a CTE (bench/plans/gpt.py), logits checked against numpy to 1e-9
    relative: the small model (seq 8, emb 16, 2 heads, MLP 64, vocab 32)
    on every route, with and without the qlink_fold planner; the large one
    (seq 128, emb 64, 4 heads, MLP 256, vocab 64) on datafusion-python's
    own tables and the fold planner's routes, as one statement and in its
    staged form (one statement per step, each result registered as the
    engine's own in-memory table: gpt.gpt_steps).
 c. bench-xarray's ``SELECT * FROM t`` over a 65 x 16 float64 Dataset
    (1,040 rows).

Routes (each builds its own connection and registers the same tables):
  native          datafusion-python 55, register_record_batches over Arrow
                  arrays made from the Datasets' numpy buffers
  context         qlink.xarray.Context().from_dataset (qlink_ndarray)
  context_fold    the same with qlink_fold installed (ctx.set_query_planner)
  session         qlink.Session().register_dataset
  session_native  qlink.Session().register_arrow (its own in-memory table)
  session_fold    qlink.Session with install_planner(qlink_fold, "fold")
  duckdb          qlink.xarray.register on qlink.duckdb.connect()
  duckdb_native   DuckDB tables (CREATE TABLE AS from the same Arrow data)
  sqlite          qlink.xarray.register on qlink.sqlite.connect() (apsw)
  sqlite_native   SQLite tables of the same rows, same apsw build
  sqlite_stdlib_native  extra (GPT only): Python's sqlite3 module, another
                  SQLite version (it cannot load extensions here)
  xarray_sql      xarray-sql 0.6.0 from_dataset, in bench/zarr/.venv-xsql
                  (datafusion-python 54), beside
  xarray_sql_native  that venv's register_record_batches

What is timed: "total" is the query from its text to all rows in Python
(DataFusion: ``ctx.sql(q).collect()``; Session: ``sql(q)``; DuckDB and
SQLite: ``execute(q).fetchall()``, SQLite without apsw's statement cache).
"plan" is DataFusion's ``ctx.sql(q).execution_plan()`` (parse, logical
plan, optimizers, physical plan), Session's ``explain(q)`` (the same plus
the EXPLAIN text), DuckDB's ``PREPARE p AS q`` and ``DEALLOCATE p`` (parse,
bind, optimize, physical plan; EXPLAIN's rendering of a 160-join tree
would cost more than the query) and SQLite's prepare of ``EXPLAIN QUERY PLAN q``
(its planner runs at prepare, xBestIndex included).

Measurement: bench/ffi/bench_ffi.py's ``interleaved`` (one call per case per
round, a fresh random order every round, GC held off; medians). Every
route's answer is checked against the exact value (chains), numpy (GPT) or
the native rows (SELECT *) before it is timed; the check run is also the
warm-up. A route that cannot run is reported missing with its error text,
never estimated; a wrong answer is reported and makes the run fail.

  bench_plans.py --out bench/results/plans.json [--quick]
  bench_plans.py --xsql-worker ...   (run with bench/zarr/.venv-xsql's python)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import xarray as xr

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


sys.path.insert(0, str(ROOT / "bench" / "xarray"))
import bench_xarray  # noqa: E402  (its helpers: _load, use_qlink, and bench_ffi's as .ffi)

ffi = bench_xarray.ffi
gpt = bench_xarray._load("gpt", HERE / "gpt.py")

DEPTHS = (40, 80, 160)
CHAIN_CHUNKS = {"i": 8}
STAR = "SELECT * FROM t"

# The targets of the deep-plan work: (key, comparison, bound).
TARGETS = [("gpt_ratio_native", "<=", 1.10), ("chain160_plan_ratio_native", "<=", 1.10),
           ("select_star_ratio_native", "<=", 1.20),
           ("gpt_fold_ratio_noplanner_small_session", "<=", 1.02),
           ("gpt_fold_ratio_noplanner_small_context", "<=", 1.02),
           ("gpt_fold_speedup_vs_native_large_session", ">=", 3.0),
           ("gpt_fold_speedup_vs_native_large_context", ">=", 3.0),
           ("gpt_fold_speedup_vs_native_large_staged_session", ">=", 3.0),
           ("gpt_fold_speedup_vs_native_large_staged_context", ">=", 3.0)]


class WrongAnswer(Exception):
    pass


# ---------------------------------------------------------------- workloads


def chain_dataset() -> xr.Dataset:
    return xr.Dataset({"v": (("i",), np.arange(8.0))}, coords={"i": np.arange(8)})


def chain_sql(depth: int) -> str:
    ctes = ["x0 AS (SELECT i, v FROM t)"]
    ctes += [f"x{k} AS (SELECT a.i, a.v + b.v AS v FROM x{k - 1} a JOIN t b ON a.i = b.i)" for k in range(1, depth + 1)]
    return "WITH " + ", ".join(ctes) + f" SELECT SUM(v) FROM x{depth}"


def chain_answer(depth: int) -> float:
    return 28.0 * (depth + 1)


def rows_of(result) -> list[tuple]:
    """A route's result (pyarrow Table, list of RecordBatches, list of
    tuples) as a list of tuples."""
    if isinstance(result, list) and result and isinstance(result[0], pa.RecordBatch):
        result = pa.Table.from_batches(result)
    if isinstance(result, pa.Table):
        return list(zip(*(c.to_pylist() for c in result.columns)))
    return [tuple(r) for r in result]


def check_chain(name: str, result, depth: int) -> None:
    rows = rows_of(result)
    want = chain_answer(depth)
    if len(rows) != 1 or rows[0][0] != want:
        raise WrongAnswer(f"{name}: chain{depth} gave {rows[:3]}, want SUM(v) = {want}")


def check_gpt(name: str, result, want: np.ndarray, cfg) -> float:
    try:
        return gpt.check_logits(name, rows_of(result), want, cfg)
    except gpt.Mismatch as exc:
        raise WrongAnswer(str(exc)) from None


def check_star(name: str, result, want_rows: list[tuple]) -> None:
    if sorted(rows_of(result)) != want_rows:
        raise WrongAnswer(f"{name}: SELECT * FROM t differs from the Dataset's rows")


# ------------------------------------------------------------------ routes


class Route:
    """One engine connection with the workload's tables: ``plan(q)``,
    ``run(q)`` (what is timed) and ``shape(q)`` (what the plan is made of:
    {node name: count})."""

    def __init__(self, conn, plan, run, shape):
        self.conn, self.plan, self.run, self.shape = conn, plan, run, shape


def _leaves(plan) -> list[str]:
    stack, out = [plan], []
    while stack:
        p = stack.pop()
        kids = p.children()
        if kids:
            stack.extend(kids)
        else:
            out.append(re.split(r"[:,\s]", p.display(), 1)[0])
    return out


def dfpy_route(ctx) -> Route:
    return Route(ctx, lambda q: ctx.sql(q).execution_plan(), lambda q: ctx.sql(q).collect(),
                 lambda q: {f"leaf {k}": v for k, v in Counter(_leaves(ctx.sql(q).execution_plan())).items()})


def session_leaves(text: str) -> Counter:
    """Leaf nodes of the physical plan in Session.explain's table (a shared
    subquery, SharedSubplanExec, is a leaf at each reference; the plan shown
    under it, lines starting with "|", is not counted)."""
    lines, on = [], False
    for line in text.splitlines():
        cells = [c for c in line.split("|")]
        if len(cells) < 3:
            continue
        kind, body = cells[1].strip(), cells[2].rstrip()
        if kind:
            on = kind == "physical_plan"
        if on and body.strip() and not body.strip().startswith("|"):
            lines.append(body)
    depth = [len(b) - len(b.lstrip()) for b in lines]
    out = Counter()
    for i, b in enumerate(lines):
        if i + 1 == len(lines) or depth[i + 1] <= depth[i]:
            out["leaf " + re.split(r"[:,\s]", b.strip(), 1)[0]] += 1
    return out


def session_route(s) -> Route:
    return Route(s, lambda q: s.explain(q), lambda q: s.sql(q), lambda q: dict(session_leaves(s.explain(q))))


def duckdb_nodes(con, q: str) -> dict:
    """Node counts of DuckDB's physical plan, and the CTEs it materializes."""
    c, ctes = Counter(), []

    def walk(node):
        c[node.get("name")] += 1
        if node.get("name") == "CTE":
            ctes.append(node.get("extra_info", {}).get("CTE Name"))
        for ch in node.get("children", []):
            walk(ch)

    for n in json.loads(con.execute("EXPLAIN (FORMAT json) " + q).fetchall()[0][1]):
        walk(n)
    return {**c, "materialized": ctes}


def duckdb_route(con) -> Route:
    def plan(q):
        # PREPARE binds, optimizes and builds the physical plan without
        # running it (EXPLAIN would add its rendering, which for a 160-join
        # tree takes longer than the query itself)
        con.execute("PREPARE bench_plans_q AS " + q)
        con.execute("DEALLOCATE bench_plans_q")

    return Route(con, plan, lambda q: con.execute(q).fetchall(), lambda q: duckdb_nodes(con, q))


def sqlite_route(db) -> Route:
    def plan(q):
        return db.cursor().execute(q, can_cache=False, explain=2).fetchall()

    def shape(q):
        return dict(Counter(r[3].split(" ")[0] for r in plan(q)))

    return Route(db, plan, lambda q: db.cursor().execute(q, can_cache=False).fetchall(), shape)


def _duckdb_native(con, arrow: dict) -> None:
    for name, table in arrow.items():
        con.register("__bench_arrow", table)
        con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM __bench_arrow')
        con.unregister("__bench_arrow")


def _sqlite_native(db, tables: dict) -> None:
    for name, ds in tables.items():
        cols = gpt.long_columns(ds)
        decl = ", ".join(f"{c} {'INTEGER' if v.dtype.kind in 'iu' else 'REAL'}" for c, v in cols.items())
        db.execute(f'CREATE TABLE "{name}"({decl})')
        marks = ", ".join("?" for _ in cols)
        with db:
            db.executemany(f'INSERT INTO "{name}" VALUES ({marks})', list(zip(*(v.tolist() for v in cols.values()))))


def fold_plugin_path() -> str:
    import qlink

    return qlink.plugin_path("qlink_fold")


def build_route(kind: str, tables: dict, chunks: dict) -> Route:
    """The route ``kind`` with ``tables`` ({name: Dataset}) registered (the
    qlink routes with ``chunks[name]``)."""
    if kind in ("native", "xarray_sql_native"):
        import datafusion

        ctx = datafusion.SessionContext()
        for name, table in gpt.arrow_tables(tables).items():
            ctx.register_record_batches(name, [table.to_batches()])
        return dfpy_route(ctx)
    if kind == "xarray_sql":
        import xarray_sql

        ctx = xarray_sql.Context()
        for name, ds in tables.items():
            ctx.from_dataset(name, ds, chunks=chunks.get(name))
        return dfpy_route(ctx)
    if kind in ("context", "context_fold"):
        import qlink
        import qlink.xarray as xql

        ctx = xql.Context()
        for name, ds in tables.items():
            ctx.from_dataset(name, ds, chunks=chunks.get(name))
        if kind == "context_fold":
            ctx.set_query_planner(qlink.Plugin(fold_plugin_path()).planner("fold"))
        return dfpy_route(ctx)
    if kind in ("session", "session_native", "session_fold"):
        import qlink

        s = qlink.Session()
        if kind == "session_native":
            for name, table in gpt.arrow_tables(tables).items():
                s.register_arrow(name, table)
        else:
            for name, ds in tables.items():
                s.register_dataset(name, ds, chunks=chunks.get(name))
        if kind == "session_fold":
            s.install_planner(fold_plugin_path(), "fold")
        return session_route(s)
    if kind in ("duckdb", "duckdb_native"):
        import qlink.duckdb
        import qlink.xarray as xql

        con = qlink.duckdb.connect()
        if kind == "duckdb_native":
            _duckdb_native(con, gpt.arrow_tables(tables))
        else:
            for name, ds in tables.items():
                xql.register(con, name, ds, chunks=chunks.get(name))
        return duckdb_route(con)
    if kind in ("sqlite", "sqlite_native"):
        import qlink.sqlite
        import qlink.xarray as xql

        db = qlink.sqlite.connect()
        if kind == "sqlite_native":
            _sqlite_native(db, tables)
        else:
            for name, ds in tables.items():
                xql.register(db, name, ds, chunks=chunks.get(name))
        return sqlite_route(db)
    if kind == "sqlite_stdlib_native":
        # extra: Python's own sqlite3 module (another SQLite version, which
        # cannot load extensions here), to show what that SQLite plans
        import sqlite3

        db = sqlite3.connect(":memory:")
        for name, ds in tables.items():
            cols = gpt.long_columns(ds)
            db.execute(f'CREATE TABLE "{name}"({", ".join(cols)})')
            db.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" for _ in cols)})',
                           list(zip(*(v.tolist() for v in cols.values()))))
        return Route(db, lambda q: db.execute("EXPLAIN QUERY PLAN " + q).fetchall(),
                     lambda q: db.execute(q).fetchall(),
                     lambda q: dict(Counter(r[3].split(" ")[0] for r in db.execute("EXPLAIN QUERY PLAN " + q))))
    raise ValueError(f"unknown route {kind!r}")


def _why(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= 800 else text[:800] + " ..."


class Run:
    """Results of one process: flat keys, missing routes with reasons, wrong answers."""

    def __init__(self):
        self.results: dict = {}
        self.wrong: list[str] = []

    def missing(self, key: str, why: str) -> None:
        self.results[f"{key}_missing"] = why
        print(f"  MISSING {key}: {why}", file=sys.stderr)

    def routes(self, workload: str, kinds, tables: dict, chunks: dict, check) -> dict:
        """Build each route and check its answer (``check(name, route)``);
        the ones that pass, by kind."""
        out = {}
        for kind in kinds:
            try:
                route = build_route(kind, tables, chunks)
            except Exception as exc:  # noqa: BLE001 - reported as missing, with the reason
                self.missing(f"{workload}_{kind}", _why(exc))
                continue
            try:
                check(kind, route)
            except WrongAnswer as exc:
                self.wrong.append(str(exc))
                self.missing(f"{workload}_{kind}", f"wrong answer: {exc}")
                continue
            except Exception as exc:  # noqa: BLE001
                self.missing(f"{workload}_{kind}", _why(exc))
                continue
            out[kind] = route
        return out


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------- measuring


def measure_chains(run: Run, kinds, args) -> None:
    r = run.results
    ds = chain_dataset()
    for depth in args.depths:
        q = chain_sql(depth)
        progress(f"chain{depth}: {', '.join(kinds)}")

        def check(kind, route, depth=depth, q=q):
            check_chain(kind, route.run(q), depth)
            route.plan(q)

        routes = run.routes(f"chain{depth}", kinds, {"t": ds}, {"t": CHAIN_CHUNKS}, check)
        cases = {}
        for kind, route in routes.items():
            cases[f"{kind}|plan"] = lambda rt=route: rt.plan(q)
            cases[f"{kind}|total"] = lambda rt=route: rt.run(q)
            try:
                r[f"chain{depth}_plan_nodes_{kind}"] = route.shape(q)
            except Exception as exc:  # noqa: BLE001 - the shape is informative only
                r[f"chain{depth}_plan_nodes_{kind}"] = _why(exc)
        for name, v in ffi.interleaved(cases, args.chain_rounds, 1).items():
            kind, what = name.split("|")
            r[f"chain{depth}_{'plan_ms' if what == 'plan' else 'ms'}_{kind}"] = v["ms"]


def measure_gpt(run: Run, kinds, cfg, label: str, rounds: int, plan: bool = False) -> None:
    r = run.results
    tables = gpt.gpt_tables(cfg, seed=0)
    want = gpt.gpt_numpy(cfg, tables)
    q = gpt.gpt_sql(cfg)
    r[f"{label}_config"] = {k: getattr(cfg, k) for k in ("seq", "emb", "heads", "mlp", "vocab", "eps")}
    progress(f"{label}: {', '.join(kinds)}")

    def check(kind, route):
        t0 = time.perf_counter()
        r[f"{label}_max_rel_error_{kind}"] = check_gpt(kind, route.run(q), want, cfg)
        progress(f"  {kind}: checked ({time.perf_counter() - t0:.2f} s)")

    routes = run.routes(label, kinds, tables, {}, check)
    for kind, route in routes.items():
        try:
            r[f"{label}_plan_nodes_{kind}"] = route.shape(q)
        except Exception as exc:  # noqa: BLE001
            r[f"{label}_plan_nodes_{kind}"] = _why(exc)
    cases = {f"{kind}|total": (lambda rt=route: rt.run(q)) for kind, route in routes.items()}
    if plan:
        cases.update({f"{kind}|plan": (lambda rt=route: rt.plan(q)) for kind, route in routes.items()})
    for name, v in ffi.interleaved(cases, rounds, 1).items():
        kind, what = name.split("|")
        r[f"{label}_{'plan_ms' if what == 'plan' else 'ms'}_{kind}"] = v["ms"]


def run_staged(route: Route, steps: list[tuple[str, str]]):
    """The staged form on ``route``: each step a statement of its own, its
    result registered under the step's name as the engine's own in-memory
    table (datafusion-python: ``register_record_batches``; qlink.Session:
    ``register_arrow``), so no step is computed twice; the last result."""
    conn, out = route.conn, None
    for name, body in steps:
        if hasattr(conn, "register_record_batches"):
            out = conn.sql(body).collect()
            conn.deregister_table(name)
            conn.register_record_batches(name, [out])
        else:
            out = conn.sql(body)
            conn.sql(f"DROP TABLE IF EXISTS {name}")
            conn.register_arrow(name, out)
    return out


def measure_gpt_staged(run: Run, kinds, cfg, label: str, rounds: int) -> None:
    """The forward pass in its staged form (gpt.gpt_steps): one statement per
    step, each result cached as a table."""
    r = run.results
    tables = gpt.gpt_tables(cfg, seed=0)
    want = gpt.gpt_numpy(cfg, tables)
    steps = gpt.gpt_steps(cfg)
    progress(f"{label}: {', '.join(kinds)} ({len(steps)} statements)")

    def check(kind, route):
        t0 = time.perf_counter()
        r[f"{label}_max_rel_error_{kind}"] = check_gpt(kind, run_staged(route, steps), want, cfg)
        progress(f"  {kind}: checked ({time.perf_counter() - t0:.2f} s)")

    routes = run.routes(label, kinds, tables, {}, check)
    cases = {kind: (lambda rt=route: run_staged(rt, steps)) for kind, route in routes.items()}
    for kind, v in ffi.interleaved(cases, rounds, 1).items():
        r[f"{label}_ms_{kind}"] = v["ms"]


def measure_star(run: Run, kinds, args) -> None:
    r = run.results
    ds = ffi.make_dataset()
    want = sorted(rows_of(ffi.dataset_table(ds)))
    progress(f"select_star: {', '.join(kinds)}")
    routes = run.routes("select_star", kinds, {"t": ds}, {}, lambda kind, rt: check_star(kind, rt.run(STAR), want))
    cases = {kind: (lambda rt=route: rt.run(STAR)) for kind, route in routes.items()}
    for kind, v in ffi.interleaved(cases, args.star_rounds, args.star_warmup).items():
        r[f"select_star_ms_{kind}"] = v["ms"]


def measure_all(run: Run, args, side: str) -> None:
    """side "main": the project's .venv routes; "xsql": xarray-sql's venv."""
    if side == "xsql":
        base = ["xarray_sql_native", "xarray_sql"]
        chain_kinds = gpt_kinds = star_kinds = base
        large_kinds = []
    else:
        chain_kinds = ["native", "context", "session_native", "session", "duckdb_native", "duckdb",
                       "sqlite_native", "sqlite"]
        gpt_kinds = ["native", "context", "context_fold", "session_native", "session", "session_fold",
                     "duckdb_native", "duckdb", "sqlite_native", "sqlite", "sqlite_stdlib_native"]
        large_kinds = ["native", "context_fold", "session_fold"] + (["context", "session"] if args.large_all else [])
        star_kinds = chain_kinds
    measure_chains(run, chain_kinds, args)
    measure_gpt(run, gpt_kinds, gpt.SMALL, "gpt", args.gpt_rounds, args.gpt_plan)
    if large_kinds and args.large_rounds:
        measure_gpt(run, large_kinds, gpt.LARGE, "gpt_large", args.large_rounds)
        measure_gpt_staged(run, ["native", "context_fold", "session", "session_fold"], gpt.LARGE,
                           "gpt_large_staged", args.large_rounds)
    measure_star(run, star_kinds, args)


# ---------------------------------------------------------------- xarray-sql


def xsql_worker(args) -> None:
    import datafusion

    run = Run()
    run.results.update({"version_xarray_sql": ffi._dist_version("xarray-sql"),
                        "version_datafusion_xsql": datafusion.__version__})
    measure_all(run, args, "xsql")
    json.dump({"results": run.results, "wrong": run.wrong}, sys.stdout)


def run_xsql(args, run: Run) -> None:
    py = Path(args.xsql_python)
    if not py.is_file():
        run.missing("xarray_sql", f"{py} not found (bench/zarr/setup.sh makes it)")
        return
    cmd = [str(py), __file__, "--xsql-worker"] + args.passthrough
    progress("xarray-sql 0.6.0 in " + str(py.parent.parent))
    # stdout to a file (no pipe to fill while its stderr is read), stderr
    # shown as it comes and kept for the reason if it fails
    with tempfile.TemporaryFile("w+") as out_file:
        with subprocess.Popen(cmd, stdout=out_file, stderr=subprocess.PIPE, text=True) as proc:
            err = []
            for line in proc.stderr:
                sys.stderr.write(line)
                err.append(line)
        out_file.seek(0)
        out = out_file.read()
    if proc.returncode != 0:
        run.missing("xarray_sql", f"worker failed: {''.join(err).strip()[-800:]}")
        return
    got = json.loads(out)
    run.results.update(got["results"])
    run.wrong += got["wrong"]


# ------------------------------------------------------------------- qlink


def use_qlink() -> None:
    """The installed qlink package (the wheel) when there is one, else this
    tree's python/qlink (the DuckDB and SQLite routes need the C build only);
    as bench-xarray does."""
    bench_xarray.use_qlink()


# ------------------------------------------------------------------ report

# Routes compared: (qlink route, the native route of the same engine, key suffix, label)
PAIRS = [("context", "native", "", "qlink.xarray.Context / datafusion-python"),
         ("session", "session_native", "_session", "qlink.Session / its register_arrow"),
         ("duckdb", "duckdb_native", "_duckdb", "DuckDB register / DuckDB tables"),
         ("sqlite", "sqlite_native", "_sqlite", "SQLite register / SQLite tables"),
         ("xarray_sql", "xarray_sql_native", "_xarray_sql", "xarray-sql 0.6.0 / its datafusion 54")]

_MS_KEY = re.compile(r"^(chain\d+|gpt_large|gpt|select_star)_(?:plan_)?ms_(.+)$")


def why_missing(r: dict, ms_key: str) -> str | None:
    """Why the figure ``ms_key`` (e.g. gpt_ms_context) is missing: its
    route's recorded reason."""
    m = _MS_KEY.match(ms_key)
    if not m:
        return None
    workload, kind = m.groups()
    why = r.get(f"{workload}_{kind}_missing")
    if why is None and kind.startswith("xarray_sql"):
        why = r.get("xarray_sql_missing")
    return f"{kind}: {why}" if why else None


def ratios(r: dict) -> None:
    """Ratios of medians; a ratio that cannot be formed is None, with
    ``<key>_missing`` saying which figure is missing and why."""

    def put(key, a, b):
        r[key] = r[a] / r[b] if r.get(a) is not None and r.get(b) else None
        if r[key] is None:
            r[f"{key}_missing"] = "; ".join(w for w in (why_missing(r, a), why_missing(r, b)) if w) or "not measured"

    for qroute, nroute, sfx, _ in PAIRS:
        for d in r.get("depths", DEPTHS):
            put(f"chain{d}_plan_ratio_native{sfx}", f"chain{d}_plan_ms_{qroute}", f"chain{d}_plan_ms_{nroute}")
            put(f"chain{d}_ratio_native{sfx}", f"chain{d}_ms_{qroute}", f"chain{d}_ms_{nroute}")
        put(f"gpt_ratio_native{sfx}", f"gpt_ms_{qroute}", f"gpt_ms_{nroute}")
        if r.get(f"gpt_plan_ms_{nroute}") is not None:
            put(f"gpt_plan_ratio_native{sfx}", f"gpt_plan_ms_{qroute}", f"gpt_plan_ms_{nroute}")
        put(f"select_star_ratio_native{sfx}", f"select_star_ms_{qroute}", f"select_star_ms_{nroute}")
    put("gpt_speedup_vs_xarray_sql", "gpt_ms_xarray_sql", "gpt_ms_context")
    put("gpt_speedup_vs_xarray_sql_session", "gpt_ms_xarray_sql", "gpt_ms_session")
    put("gpt_speedup_vs_xarray_sql_native", "gpt_ms_xarray_sql", "gpt_ms_native")
    for route in ("session", "context"):
        put(f"gpt_fold_ratio_noplanner_small_{route}", f"gpt_ms_{route}_fold", f"gpt_ms_{route}")
        put(f"gpt_fold_speedup_vs_native_large_{route}", "gpt_large_ms_native", f"gpt_large_ms_{route}_fold")
        put(f"gpt_fold_speedup_vs_native_large_staged_{route}", "gpt_large_staged_ms_native",
            f"gpt_large_staged_ms_{route}_fold")
    for key in [k for k in r if k.startswith("gpt_plan_nodes_")]:
        nodes = r[key]
        if isinstance(nodes, dict) and any(k.startswith("leaf ") for k in nodes):
            scans = sum(v for k, v in nodes.items() if k.startswith("leaf "))
            r["gpt_scans" + ("" if key == "gpt_plan_nodes_native" else "_" + key[len("gpt_plan_nodes_"):])] = scans


def fmt(v, spec=".3f") -> str:
    return ffi.fmt(v, spec)


def target_status(r: dict, key: str, op: str, bound: float) -> str:
    v = r.get(key)
    if v is None:
        return "missing"
    return "met" if (v <= bound if op == "<=" else v >= bound) else "missed"


def print_tables(r: dict) -> None:
    rows = []
    for d in r.get("depths", DEPTHS):
        rows += [(f"chain{d} plan", f"chain{d}_plan_ms_", f"chain{d}_plan_ratio_native"),
                 (f"chain{d} total", f"chain{d}_ms_", f"chain{d}_ratio_native")]
    if any(k.startswith("gpt_plan_ms_") for k in r):
        rows.append(("GPT small plan", "gpt_plan_ms_", "gpt_plan_ratio_native"))
    rows += [("GPT small", "gpt_ms_", "gpt_ratio_native"),
             ("SELECT * 1,040 rows", "select_star_ms_", "select_star_ratio_native")]
    print("\nbench-plans: median ms, qlink route beside its engine's native tables (— = missing, reasons below)")
    print(f"{'workload':20} {'engine: qlink route / native':42} {'native ms':>11} {'qlink ms':>11} {'ratio':>7}")
    for label, ms, ratio in rows:
        for qroute, nroute, sfx, engine in PAIRS:
            spec = ".3f" if ms.startswith("select") else ".1f"
            print(f"{label:20} {engine:42} {fmt(r.get(ms + nroute), spec):>11} {fmt(r.get(ms + qroute), spec):>11}"
                  f" {fmt(r.get(ratio + sfx), '.2f'):>7}")
    print("\nGPT forward pass, median ms (small: seq 8, emb 16; large: seq 128, emb 64)")
    print(f"{'route':28}{'no planner':>12}{'qlink_fold':>12}")
    for size, prefix in (("small", "gpt_ms_"), ("large", "gpt_large_ms_")):
        for route in ("native", "context", "session", "session_native", "xarray_sql", "xarray_sql_native",
                      "duckdb_native", "duckdb", "sqlite_native", "sqlite", "sqlite_stdlib_native"):
            a, b = r.get(prefix + route), r.get(prefix + route + "_fold")
            if a is not None or b is not None or route in ("native", "context", "session"):
                fold = fmt(b, ".1f") if route in ("context", "session") else ""
                print(f"{size + ' ' + route:28}{fmt(a, '.1f'):>12}{fold:>12}")
    for route in ("native", "session", "context_fold", "session_fold"):
        print(f"{'large staged ' + route:28}{fmt(r.get('gpt_large_staged_ms_' + route), '.1f'):>12}")
    print(f"  gpt_scans (scan leaves of datafusion-python's physical plan) = {r.get('gpt_scans')}")
    for k in ("gpt_speedup_vs_xarray_sql", "gpt_speedup_vs_xarray_sql_session", "gpt_speedup_vs_xarray_sql_native"):
        print(f"  {k} = {fmt(r.get(k))}")
    print("\ntargets")
    for key, op, bound in TARGETS:
        status = target_status(r, key, op, bound)
        why = f" ({r.get(key + '_missing', 'not measured')[:110]})" if status == "missing" else ""
        print(f"  {key:44} {fmt(r.get(key)):>8} {op} {bound:<5} {status}{why}")
    print("\nwhat each engine's plan of the GPT statement is made of (node counts)")
    for kind in ("native", "context", "session", "xarray_sql", "duckdb_native", "duckdb", "sqlite_native", "sqlite",
                 "sqlite_stdlib_native"):
        v = r.get(f"gpt_plan_nodes_{kind}")
        if v is not None:
            print(f"  {kind:22} {v}")
    # the routes that could not run (the ratios' *_missing keys repeat them)
    for k, v in sorted(r.items()):
        if k.endswith("_missing") and "ratio" not in k and "speedup" not in k:
            print(f"MISSING {k[:-8]}: {v}")


# -------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "plans.json"))
    ap.add_argument("--chain-rounds", type=int, default=15)
    ap.add_argument("--gpt-rounds", type=int, default=5)
    ap.add_argument("--large-rounds", type=int, default=3)
    ap.add_argument("--large-all", action="store_true", help="also time the large model without a planner")
    ap.add_argument("--gpt-plan", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the small GPT statement's planning alone (default: yes)")
    ap.add_argument("--star-rounds", type=int, default=200)
    ap.add_argument("--star-warmup", type=int, default=10)
    ap.add_argument("--depths", default=",".join(map(str, DEPTHS)))
    ap.add_argument("--quick", action="store_true", help="few rounds, no large model (while developing)")
    ap.add_argument("--no-xsql", action="store_true")
    ap.add_argument("--xsql-python", default=str(ROOT / "bench" / "zarr" / ".venv-xsql" / "bin" / "python"))
    ap.add_argument("--xsql-worker", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.chain_rounds, args.gpt_rounds, args.large_rounds, args.star_rounds, args.star_warmup = 3, 1, 0, 20, 2
        args.gpt_plan = False
    args.depths = [int(d) for d in str(args.depths).split(",") if d]
    args.passthrough = ["--chain-rounds", str(args.chain_rounds), "--gpt-rounds", str(args.gpt_rounds),
                        "--gpt-plan" if args.gpt_plan else "--no-gpt-plan",
                        "--large-rounds", "0", "--star-rounds", str(args.star_rounds),
                        "--star-warmup", str(args.star_warmup), "--depths", ",".join(map(str, args.depths))]
    if args.xsql_worker:
        xsql_worker(args)
        return
    use_qlink()
    import datafusion
    import duckdb

    run = Run()
    r = run.results
    r.update({"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "version_datafusion": datafusion.__version__,
              "version_duckdb": duckdb.__version__, "chain_rounds": args.chain_rounds, "gpt_rounds": args.gpt_rounds,
              "large_rounds": args.large_rounds, "star_rounds": args.star_rounds, "depths": args.depths,
              "loadavg_start": os.getloadavg()[0]})
    try:
        import apsw

        r["version_sqlite"] = apsw.sqlite_lib_version()
    except ImportError:
        pass
    import sqlite3

    r["version_sqlite_stdlib"] = sqlite3.sqlite_version
    try:
        import qlink._qlink

        r["version_qlink"] = qlink._qlink.__version__
    except Exception as exc:  # noqa: BLE001
        r["version_qlink"] = None
        r["qlink_wheel_missing"] = _why(exc)
    t0 = time.time()
    measure_all(run, args, "main")
    if not args.no_xsql:
        run_xsql(args, run)
    ratios(r)
    r["seconds"] = time.time() - t0
    r["loadavg_end"] = os.getloadavg()[0]
    r["wrong_answers"] = run.wrong
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    print_tables(r)
    print(f"\nwrote {args.out} ({r['seconds']:.0f} s)")
    if run.wrong:
        print("WRONG ANSWERS:\n  " + "\n  ".join(run.wrong), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
