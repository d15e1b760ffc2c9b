#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-ffi: the per-scan and per-query cost of a table provider (and a query
planner) reached through datafusion-ffi, side by side with qlink's, in one run.

Data: a 65 x 16 float64 grid (1,040 rows: y float64, x int64, v float64), the
same values on every path. The paths compared for the interface hold it in
memory and hand out the same Arrow buffers on every scan:

  native          datafusion-python 55, register_record_batches
  ffi_reference   datafusion-python 55, a MemTable exported the standard way
                  (datafusion-ffi 55.2.0 FFI_TableProvider; bench/ffi/ref_provider)
  qlink_dfpy      datafusion-python 55, qlink_sample's in-memory `grid` table
                  through qlink's capsule (qlink.Plugin(...).table("grid"))
  qlink_session   qlink.Session, the same `grid` table
  session_native  qlink.Session, register_arrow (its own in-memory table)
  xarray_sql      xarray-sql 0.6.0 from_dataset (its FFI provider), in its own
                  venv with datafusion-python 54, beside
  xarray_sql_native  that venv's in-memory table

Extra rows, labelled as such: qlink_dfpy_zarr and qlink_session_zarr scan the
same grid written as a Zarr v3 store through qlink_zarr (a file read and
decode per scan: storage plus interface, not the interface alone).

Workloads: the scan with 0, 250, 500 and 1,000 extra Python scalar UDFs
registered; one query over eleven small tables through CTEs that DataFusion
inlines into 2,992 scans; ``SELECT 1`` with no planner, with a pass-through
planner exported through datafusion-ffi (FFI_QueryPlanner), with qlink's
planner capsule, and in qlink.Session with and without qlink_fold installed.

Measurement: the paths compared with each other run interleaved, one query
each per round, in a fresh random order every round, for --reps rounds after
--warmup rounds, with the garbage collector held off. ``*_ms`` is the
median, ``*_mean_ms`` the mean; ratios are medians over the native median of
the same round set (xarray-sql: over its own venv's native). A path that
cannot run is reported missing with the reason, never estimated.

  bench_ffi.py --store S.zarr --out ffi.json --png ffi.png [--reps 300]
  bench_ffi.py --xsql-worker --store S.zarr ...   (run by the main process
      with bench/zarr/.venv-xsql's interpreter; prints JSON on stdout)
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import xarray as xr

SCAN = "SELECT * FROM t"
UDF_LEVELS = (0, 250, 500, 1000)
NY, NX = 65, 16
# The view workload: 11 tables, unioned 16 times, that union 17 times.
VIEW_TABLES, VIEW_INNER, VIEW_OUTER = 11, 16, 17
VIEW_SCANS = VIEW_TABLES * VIEW_INNER * VIEW_OUTER
GRID_SCHEMA = pa.schema([pa.field("y", pa.float64(), nullable=False),
                         pa.field("x", pa.int64(), nullable=False),
                         pa.field("v", pa.float64(), nullable=False)])


def grid_columns(ny: int = NY, nx: int = NX) -> dict:
    """qlink_sample's `grid` table, computed with the same IEEE operations
    (plugins/sample/src/grid.c): row k = i*nx + j."""
    k = np.arange(ny * nx, dtype=np.int64)
    i = (k // nx).astype(np.float64)
    y = np.full(ny * nx, -80.0) if ny == 1 else -80.0 + 160.0 * i / float(ny - 1)
    return {"y": y, "x": k % nx, "v": ((k * 37) % 101 - 50).astype(np.float64) / 8.0}


def grid_table() -> pa.Table:
    """The grid as one 1,040-row batch: what the `grid` table's one
    partition hands out with its default batch_rows (8192)."""
    return pa.Table.from_pydict(grid_columns(), schema=GRID_SCHEMA)


def make_dataset() -> xr.Dataset:
    """The grid as an xarray Dataset v(y, x) on two dimension coordinates."""
    c = grid_columns()
    return xr.Dataset({"v": (("y", "x"), c["v"].reshape(NY, NX))},
                      coords={"y": c["y"][::NX].copy(), "x": c["x"][:NX].copy()})


def dataset_table(ds: xr.Dataset) -> pa.Table:
    """The Dataset as one row per (y, x): columns y, x, v."""
    return pa.Table.from_pandas(ds.to_dataframe().reset_index(), preserve_index=False)


def view_query(table_prefix: str = "t") -> str:
    """One query, 2,992 scans: CTE v1 unions the 11 tables, v2 unions v1 16
    times, the query unions v2 17 times; DataFusion inlines every reference."""
    v1 = " UNION ALL ".join(f"SELECT v FROM {table_prefix}{i}" for i in range(VIEW_TABLES))
    v2 = " UNION ALL ".join("SELECT v FROM v1" for _ in range(VIEW_INNER))
    v3 = " UNION ALL ".join("SELECT v FROM v2" for _ in range(VIEW_OUTER))
    return f"WITH v1 AS ({v1}), v2 AS ({v2}) SELECT count(*) AS n, sum(v) AS s FROM ({v3}) u"


def interleaved(cases: dict, reps: int, warmup: int) -> dict:
    """Per-call milliseconds of each case, the cases run one call each per
    round in a fresh random order every round (seeded): drift in the
    machine's load falls on every case alike, and no case always follows
    the same one (a heavy predecessor leaves cold caches behind). The GC is
    held off. {name: {ms, mean_ms}}."""
    names = list(cases)
    order = random.Random(20261129)
    for _ in range(warmup):
        for n in names:
            cases[n]()
    samples = {n: [] for n in names}
    gc.collect()
    gc.disable()
    try:
        for _ in range(reps):
            order.shuffle(names)
            for n in names:
                run = cases[n]
                t0 = time.perf_counter()
                run()
                samples[n].append((time.perf_counter() - t0) * 1e3)
    finally:
        gc.enable()
    return {n: {"ms": statistics.median(v), "mean_ms": statistics.fmean(v)} for n, v in samples.items()}


def sorted_frame(table: pa.Table):
    df = table.select(["y", "x", "v"]).to_pandas()
    return df.sort_values(["y", "x"]).reset_index(drop=True)


def check_same(name: str, got: pa.Table, want: pa.Table) -> None:
    """Every path must return the native result, or its timing means nothing."""
    a, b = sorted_frame(got), sorted_frame(want)
    if len(a) != len(b) or not (a.values == b.values).all():
        raise SystemExit(f"bench_ffi: {name}: SELECT * FROM t differs from the native table")


def check_view(name: str, got: pa.Table, want_sum: float) -> None:
    n, s = got.column("n")[0].as_py(), got.column("s")[0].as_py()
    if n != VIEW_SCANS * NY * NX or not math.isclose(s, want_sum, rel_tol=1e-9, abs_tol=1e-6):
        raise SystemExit(f"bench_ffi: {name}: view query gave n={n} s={s}, want n={VIEW_SCANS * NY * NX} s={want_sum}")


def put(results: dict, name: str, n_udf: int, r: dict) -> None:
    suffix = f"_{n_udf}udf" if n_udf else ""
    results[f"{name}_ms{suffix}"] = r["ms"]
    results[f"{name}_mean_ms{suffix}"] = r["mean_ms"]


def missing(results: dict, name: str, why: str) -> None:
    results[f"{name}_missing"] = why
    print(f"  {name}: MISSING: {why}", file=sys.stderr)


# ---- datafusion-python paths (the same code serves 54 in the xarray-sql venv)

def dfpy_collect(ctx, sql: str) -> pa.Table:
    return pa.Table.from_batches(ctx.sql(sql).collect())


def dfpy_add_udfs(ctx, start: int, stop: int) -> None:
    """Register trivial Python scalar UDFs bench_udf_<start..stop-1>."""
    from datafusion import udf

    for i in range(start, stop):
        ctx.register_udf(udf(lambda a: a, [pa.float64()], pa.float64(), "immutable", name=f"bench_udf_{i}"))


def scan_case(ctx):
    return lambda: ctx.sql(SCAN).collect()


def measure_scans(results: dict, dfpy_paths: dict, session_paths: dict, args, want: pa.Table,
                  select1: str = "select1_dfpy_udfs") -> None:
    """The scan, every path at every UDF level, all interleaved in the same
    rounds (so a change in the machine's load shifts every figure alike,
    ratios and growth with the UDF count included).

    dfpy_paths: {name: (make_ctx, register(ctx, table_name))}: one session
    per path and level, with that level's UDFs; the first path's sessions
    also time SELECT 1 (as `select1`: what datafusion-python pays per query
    for its registered functions, whatever the table). session_paths:
    {name: session}: qlink.Session has no Python UDFs, its rows are level 0."""
    cases = {}
    for name, (make_ctx, register) in dfpy_paths.items():
        for n in UDF_LEVELS:
            ctx = make_ctx()
            register(ctx, "t")
            dfpy_add_udfs(ctx, 0, n)
            if n == 0:
                check_same(name, dfpy_collect(ctx, SCAN), want)
            cases[(name, n)] = scan_case(ctx)
            if name == next(iter(dfpy_paths)):
                cases[(select1, n)] = (lambda ctx: lambda: ctx.sql("SELECT 1").collect())(ctx)
    for name, s in session_paths.items():
        check_same(name, s.sql(SCAN), want)
        cases[(name, 0)] = (lambda s: lambda: s.sql(SCAN))(s)
    got = interleaved(cases, args.reps, args.warmup)
    for (name, n), r in got.items():
        put(results, name, n, r)
    for n in UDF_LEVELS:
        print(f"  {n:5d} UDFs: " + "  ".join(f"{k} {v['ms']:.3f}" for (k, m), v in got.items() if m == n),
              file=sys.stderr)


CORE = ("native", "qlink_dfpy", "qlink_session", "session_native")


def measure_core(results: dict, dfpy_paths: dict, session_paths: dict, args, want: pa.Table) -> None:
    """The in-memory paths alone at 0 UDFs, interleaved among themselves
    (`core_<path>_ms`, `core_<path>_ratio`). In the all-paths rounds each
    query follows any of ~27 others, most of them datafusion-python's own,
    so the code of qlink.Session (a second DataFusion build) is cold every
    time and its own in-memory table measures as slow as its plugin table;
    here each engine runs a quarter of the queries, closer to how one is
    used."""
    cases = {}
    for name in CORE:
        if name in dfpy_paths:
            make_ctx, register = dfpy_paths[name]
            ctx = make_ctx()
            register(ctx, "t")
            check_same(name, dfpy_collect(ctx, SCAN), want)
            cases[name] = scan_case(ctx)
        else:
            s = session_paths[name]
            cases[name] = (lambda s: lambda: s.sql(SCAN))(s)
    got = interleaved(cases, args.reps * 2, args.warmup)
    for name, r in got.items():
        results[f"core_{name}_ms"], results[f"core_{name}_mean_ms"] = r["ms"], r["mean_ms"]
        results[f"core_{name}_ratio"] = r["ms"] / got["native"]["ms"]
    print("  core: " + "  ".join(f"{k} {v['ms']:.3f}" for k, v in got.items()), file=sys.stderr)


def measure_views(results: dict, dfpy_paths: dict, session_paths: dict, new_session, args, want_sum: float) -> None:
    """The 2,992-scan query, every path interleaved. session_paths:
    {name: register(session, table_name)}; new_session() makes a session."""
    q = view_query()
    cases = {}
    for name, (make_ctx, register) in dfpy_paths.items():
        ctx = make_ctx()
        for i in range(VIEW_TABLES):
            register(ctx, f"t{i}")
        check_view(name, dfpy_collect(ctx, q), want_sum)
        cases[name] = (lambda ctx: lambda: ctx.sql(q).collect())(ctx)
    for name, register in session_paths.items():
        s = new_session()
        for i in range(VIEW_TABLES):
            register(s, f"t{i}")
        check_view(name, s.sql(q), want_sum)
        cases[name] = (lambda s: lambda: s.sql(q))(s)
    got = interleaved(cases, args.view_reps, 1)
    for name, r in got.items():
        results[f"views_{name}_ms"] = r["ms"]
    print("  views: " + "  ".join(f"{k} {v['ms']:.0f}" for k, v in got.items()), file=sys.stderr)


def xsql_worker(args) -> None:
    """Native and xarray-sql 0.6.0 in the xarray-sql venv; JSON on stdout."""
    import datafusion
    import xarray_sql

    ds = xr.open_zarr(args.store, consolidated=False).load()
    table = dataset_table(ds)
    want_sum = VIEW_SCANS * float(np.sum(table.column("v").to_numpy()))
    results = {
        "version_xsql_datafusion_python": datafusion.__version__,
        "version_xarray_sql": getattr(xarray_sql, "__version__", None) or _dist_version("xarray-sql"),
    }
    paths = {"xarray_sql_native": (datafusion.SessionContext,
                                   lambda ctx, name: ctx.register_record_batches(name, [table.to_batches()])),
             "xarray_sql": (xarray_sql.Context, lambda ctx, name: ctx.from_dataset(name, ds))}
    measure_scans(results, paths, {}, args, table, select1="select1_xsql_udfs")
    measure_views(results, paths, {}, None, args, want_sum)
    json.dump(results, sys.stdout)


def _dist_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


# ---- the main process (datafusion-python 55, qlink, the reference crate)

def measure_planners(results: dict, qlink, ref, args) -> None:
    """SELECT 1 per query: no planner vs an installed one, in both engines,
    interleaved."""
    import datafusion

    def dfpy(planner):
        ctx = datafusion.SessionContext()
        if planner is not None:
            ctx.set_query_planner(planner)
        return lambda: ctx.sql("SELECT 1").collect()

    def session(with_fold: bool):
        s = qlink.Session()
        if with_fold:
            s.install_planner(qlink.plugin_path("qlink_fold"), "fold")
        return lambda: s.sql("SELECT 1")

    cases = {"select1_dfpy_none": dfpy(None),
             "select1_dfpy_ffi_reference": dfpy(ref.DefaultPlanner()),
             "select1_dfpy_qlink_capsule": dfpy(qlink.Plugin(qlink.plugin_path("qlink_fold")).planner("fold")),
             "select1_session_none": session(False),
             "select1_session_fold": session(True)}
    for key, r in interleaved(cases, args.reps, args.warmup).items():
        results[f"{key}_ms"], results[f"{key}_mean_ms"] = r["ms"], r["mean_ms"]
        print(f"  {key:28s} {r['ms']:8.3f} ms (mean {r['mean_ms']:.3f})", file=sys.stderr)


def run_xsql(args, results: dict) -> None:
    if not args.xsql_python:
        missing(results, "xarray_sql", "no --xsql-python given")
        return
    cmd = [args.xsql_python, __file__, "--xsql-worker", "--store", args.store,
           "--reps", str(args.reps), "--warmup", str(args.warmup), "--view-reps", str(args.view_reps)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        missing(results, "xarray_sql", f"the xarray-sql worker failed (exit {p.returncode}; its stderr is above)")
        return
    results.update(json.loads(p.stdout))


BASE_OF = {"native": "native", "ffi_reference": "native", "qlink_dfpy": "native", "qlink_dfpy_zarr": "native",
           "qlink_session": "native", "qlink_session_zarr": "native", "session_native": "native",
           "xarray_sql": "xarray_sql_native", "xarray_sql_native": "xarray_sql_native"}


def ratios(results: dict) -> None:
    """Each path's median over its engine's native median, per UDF level;
    the growth of each path from 0 to 1,000 UDFs; the Done-when checks."""
    for name, base in BASE_OF.items():
        for n in UDF_LEVELS:
            sfx = f"_{n}udf" if n else ""
            a, b = results.get(f"{name}_ms{sfx}"), results.get(f"{base}_ms{sfx}")
            if a is not None and b:
                results[f"{name}_ratio{sfx}"] = a / b
        a, b = results.get(f"{name}_ms_1000udf"), results.get(f"{name}_ms")
        if a is not None and b:
            results[f"{name}_growth_1000udf"] = a / b
            # What the path costs beyond native, at 0 and at 1,000 UDFs.
            na, nb = results.get(f"{base}_ms_1000udf"), results.get(f"{base}_ms")
            if na is not None and nb is not None:
                results[f"{name}_excess_ms"] = b - nb
                results[f"{name}_excess_ms_1000udf"] = a - na
        a, b = results.get(f"views_{name}_ms"), results.get(f"views_{base}_ms")
        if a is not None and b:
            results[f"views_{name}_ratio"] = a / b
    a, b = results.get("select1_dfpy_udfs_ms_1000udf"), results.get("select1_dfpy_udfs_ms")
    if a is not None and b is not None:
        results["select1_dfpy_udfs_added_ms_1000udf"] = a - b
    a, b = results.get("qlink_session_ms"), results.get("session_native_ms")
    if a is not None and b:
        results["qlink_session_ratio_to_session_native"] = a / b
    for name in ("ffi_reference", "qlink_capsule"):
        a, b = results.get(f"select1_dfpy_{name}_ms"), results.get("select1_dfpy_none_ms")
        if a is not None and b:
            results[f"select1_dfpy_{name}_ratio"] = a / b
    a, b = results.get("select1_session_fold_ms"), results.get("select1_session_none_ms")
    if a is not None and b:
        results["select1_session_fold_ratio"] = a / b


def fmt(v, spec=".3f"):
    return "—" if v is None else format(v, spec)


ROWS = [("native", "datafusion-python 55, in-memory table (register_record_batches)"),
        ("ffi_reference", "datafusion-python 55, datafusion-ffi FFI_TableProvider over a MemTable (reference)"),
        ("qlink_dfpy", "datafusion-python 55, qlink capsule, in-memory `grid` table"),
        ("qlink_session", "qlink.Session, in-memory `grid` table"),
        ("session_native", "qlink.Session, register_arrow (its in-memory table)"),
        ("qlink_dfpy_zarr", "extra: datafusion-python 55, qlink capsule, qlink_zarr on disk"),
        ("qlink_session_zarr", "extra: qlink.Session, qlink_zarr on disk"),
        ("xarray_sql_native", None),
        ("xarray_sql", None)]


def print_tables(r: dict) -> None:
    labels = dict(ROWS)
    labels["xarray_sql_native"] = f"datafusion-python {r.get('version_xsql_datafusion_python', '?')}, in-memory table"
    labels["xarray_sql"] = f"xarray-sql {r.get('version_xarray_sql', '?')} from_dataset (FFI)"
    print(f"\n### SELECT * FROM t, {NY * NX} rows, {r['reps']} interleaved rounds: median ms per query "
          "(ratio to the same engine's native)\n")
    head = " | ".join(f"{n} UDFs" for n in UDF_LEVELS)
    print(f"| path | {head} | 1,000 / 0 UDFs | views, {VIEW_SCANS} scans |")
    print("|---|" + "---|" * (len(UDF_LEVELS) + 2))
    for name, _ in ROWS:
        cells = []
        for n in UDF_LEVELS:
            sfx = f"_{n}udf" if n else ""
            ms, ratio = r.get(f"{name}_ms{sfx}"), r.get(f"{name}_ratio{sfx}")
            cells.append("—" if ms is None else f"{ms:.3f} ({fmt(ratio, '.2f')}x)")
        cells.append(fmt(r.get(f"{name}_growth_1000udf"), ".2f"))
        vms, vr = r.get(f"views_{name}_ms"), r.get(f"views_{name}_ratio")
        cells.append("—" if vms is None else f"{vms:.1f} ({fmt(vr, '.2f')}x)")
        print(f"| {labels[name]} | " + " | ".join(cells) + " |")
    print("\nMeans (ms) at 0 / 1,000 UDFs: " + "; ".join(
        f"{n} {fmt(r.get(f'{n}_mean_ms'))} / {fmt(r.get(f'{n}_mean_ms_1000udf'))}" for n, _ in ROWS
        if r.get(f"{n}_mean_ms") is not None))
    print("\nCost beyond the same engine's native table, ms at 0 -> 1,000 UDFs: " + "; ".join(
        f"{n} {fmt(r.get(f'{n}_excess_ms'))} -> {fmt(r.get(f'{n}_excess_ms_1000udf'))}" for n, _ in ROWS
        if r.get(f"{n}_excess_ms") is not None and n not in ("native", "xarray_sql_native")))
    print("\nSELECT 1 in the same datafusion-python session, ms at 0 / 250 / 500 / 1,000 UDFs (its per-query "
          "cost of registered functions, whatever the table): " + " / ".join(
              fmt(r.get("select1_dfpy_udfs_ms" + (f"_{n}udf" if n else ""))) for n in UDF_LEVELS))
    if r.get("core_native_ms") is not None:
        print(f"\n### The in-memory paths alone, 0 UDFs, {2 * r['reps']} interleaved rounds: median ms (ratio to native)\n")
        print("| " + " | ".join(CORE) + " |")
        print("|" + "---|" * len(CORE))
        print("| " + " | ".join(f"{r[f'core_{n}_ms']:.3f} ({r[f'core_{n}_ratio']:.2f}x)" for n in CORE) + " |")
    print("\n### SELECT 1 with a query planner installed: median ms per query\n")
    print("| engine | no planner | with planner | ratio (x) |")
    print("|---|---|---|---|")
    print(f"| datafusion-python 55, pass-through planner via datafusion-ffi FFI_QueryPlanner | {fmt(r.get('select1_dfpy_none_ms'))} "
          f"| {fmt(r.get('select1_dfpy_ffi_reference_ms'))} | {fmt(r.get('select1_dfpy_ffi_reference_ratio'), '.2f')} |")
    print(f"| datafusion-python 55, qlink_fold via qlink's planner capsule | {fmt(r.get('select1_dfpy_none_ms'))} "
          f"| {fmt(r.get('select1_dfpy_qlink_capsule_ms'))} | {fmt(r.get('select1_dfpy_qlink_capsule_ratio'), '.2f')} |")
    print(f"| qlink.Session, qlink_fold installed | {fmt(r.get('select1_session_none_ms'))} "
          f"| {fmt(r.get('select1_session_fold_ms'))} | {fmt(r.get('select1_session_fold_ratio'), '.2f')} |")
    print("\n### Issue #5 targets (this run)\n")
    for text, value, ok in done_when(r):
        print(f"- [{'x' if ok else ' '}] {text}: {value}")
    gone = {k[: -len("_missing")]: v for k, v in r.items() if k.endswith("_missing")}
    if gone:
        print("\nMissing rows:")
        for k, v in gone.items():
            print(f"- {k}: {v}")


def done_when(r: dict) -> list:
    """(target, measured, met?) for each of issue #5's Done-when figures."""
    out = []
    fr, fr1 = r.get("ffi_reference_ratio"), r.get("ffi_reference_ratio_1000udf")
    fg = r.get("ffi_reference_growth_1000udf")
    if fr is not None and fr1 is not None and fg is not None:
        out.append(("reference provider several times native, growing with UDF count",
                    f"{fr:.1f}x at 0 UDFs, {fr1:.1f}x at 1,000 ({fg:.2f}x its own 0-UDF time)", fr >= 3 and fg > 1.05))
    q, qc = r.get("qlink_dfpy_ratio"), r.get("core_qlink_dfpy_ratio")
    if q is not None:
        out.append(("qlink in datafusion-python <= 1.3x native",
                    f"{q:.3f}x in the all-paths rounds, {fmt(qc, '.3f')}x among the in-memory paths",
                    q <= 1.3 and (qc is None or qc <= 1.3)))
    g = r.get("qlink_dfpy_growth_1000udf")
    if g is not None:
        ng = r.get("native_growth_1000udf")
        # The figure is qlink's ratio to native, as in design section 5 and
        # bench_datafusion: datafusion-python's own per-query cost grows with
        # its registered functions whatever the table (SELECT 1 too), so the
        # absolute time of every path grows; what qlink must not add is a
        # per-function cost of its own.
        q0, q1k = r.get("qlink_dfpy_ratio"), r.get("qlink_dfpy_ratio_1000udf")
        flat = q1k / q0 if q0 and q1k else None
        out.append(("qlink in datafusion-python flat in UDF count (1,000-UDF figure within 1.05x of 0-UDF)",
                    f"{fmt(q0, '.3f')}x native at 0 UDFs, {fmt(q1k, '.3f')}x at 1,000: {fmt(flat, '.3f')}x "
                    f"(absolute time {g:.3f}x, native itself {fmt(ng, '.3f')}x; qlink's cost beyond native "
                    f"{fmt(r.get('qlink_dfpy_excess_ms'))} -> {fmt(r.get('qlink_dfpy_excess_ms_1000udf'))} ms)",
                    flat is not None and flat <= 1.05))
    s, sc = r.get("qlink_session_ratio"), r.get("core_qlink_session_ratio")
    if s is not None:
        out.append(("qlink in qlink.Session <= 1.05x native",
                    f"{fmt(sc, '.3f')}x datafusion-python's native among the in-memory paths, {s:.3f}x in the "
                    f"all-paths rounds ({fmt(r.get('qlink_session_ratio_to_session_native'), '.3f')}x qlink.Session's "
                    f"own in-memory table there)", sc is not None and sc <= 1.05))
    return out


def plot(r: dict, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, label in [("native", "native (dfpy 55)"), ("ffi_reference", "datafusion-ffi reference"),
                        ("xarray_sql_native", "native (dfpy 54)"), ("xarray_sql", "xarray-sql 0.6.0"),
                        ("qlink_dfpy", "qlink in dfpy 55 (in-memory)"), ("qlink_dfpy_zarr", "qlink in dfpy 55 (zarr, disk)")]:
        pts = [(n, r.get(f"{name}_ms" + (f"_{n}udf" if n else ""))) for n in UDF_LEVELS]
        pts = [(n, v) for n, v in pts if v is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
    s = r.get("qlink_session_ms")
    if s is not None:
        ax.plot([0], [s], marker="s", linestyle="none", label="qlink.Session (in-memory; no Python UDFs)")
    ax.set_xlabel("extra scalar UDFs registered")
    ax.set_ylabel(f"ms per SELECT * ({NY * NX} rows), median")
    ax.set_yscale("log")
    ax.set_title("Per-scan cost against registered functions")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(png).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="Zarr store of the benchmark Dataset (rewritten if it differs)")
    ap.add_argument("--reps", type=int, default=300, help="timed rounds per case (default 300)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed rounds first (default 20)")
    ap.add_argument("--view-reps", type=int, default=3, help="timed rounds of the 2,992-scan query (default 3)")
    ap.add_argument("--xsql-python", help="interpreter of the xarray-sql venv")
    ap.add_argument("--xsql-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip", default="", help="comma-separated: xsql,views,planners (for quick runs)")
    ap.add_argument("--out", help="write the flat JSON here")
    ap.add_argument("--png", help="write the per-scan vs UDF-count plot here")
    args = ap.parse_args()
    if args.xsql_worker:
        xsql_worker(args)
        return
    skip = set(filter(None, args.skip.split(",")))

    import datafusion
    import qlink
    import qlink_ffi_ref as ref

    ds = make_dataset()
    store = str(Path(args.store).resolve())
    if not Path(store).exists() or not xr.open_zarr(store, consolidated=False).load().identical(ds):
        # Uncompressed, one chunk: the plugin's per-scan work is reading the
        # file, not a codec.
        enc = {k: {"compressors": None} for k in ("v", "x", "y")}
        ds.to_zarr(store, mode="w", zarr_format=3, consolidated=False, encoding=enc)
    table = grid_table()
    want_sum = VIEW_SCANS * float(np.sum(table.column("v").to_numpy()))
    r = {"reps": args.reps, "warmup": args.warmup, "view_reps": args.view_reps, "rows": table.num_rows,
         "view_scans": VIEW_SCANS, "python": platform.python_version(), "interleaved": True,
         "version_datafusion_python": datafusion.__version__, "version_qlink": qlink.__version__,
         "version_qlink_datafusion": qlink.DATAFUSION_VERSION,
         "version_reference_datafusion_ffi": ref.DATAFUSION_FFI_VERSION,
         "version_pyarrow": pa.__version__, "version_xarray": xr.__version__,
         "qlink_profile": os.environ.get("QLINK_PROFILE", "unknown"),
         "qlink_py_run": os.environ.get("QLINK_PY_RUN") or "inline",  # how qlink.Session ran its queries
         "load_avg_1min_start": os.getloadavg()[0],  # other work on the machine skews timings
         "git_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()}
    print("versions: " + ", ".join(f"{k[8:]}={v}" for k, v in r.items() if k.startswith("version_")), file=sys.stderr)

    sample = qlink.Plugin(qlink.plugin_path("qlink_sample"))
    zarr_plugin = qlink.Plugin(qlink.plugin_path("qlink_zarr"))
    # The same batches (schema, values, one partition of one 1,040-row
    # batch) for the native table, the reference MemTable and register_arrow;
    # the grid table hands out that layout from its own memory.
    grid = sample.table("grid")
    got = pa.Table.from_batches(
        (lambda c: (c.register_table("g", grid), c.sql("SELECT * FROM g").collect())[1])(datafusion.SessionContext()))
    if got.schema != table.schema or [b.num_rows for b in got.to_batches()] != [b.num_rows for b in table.to_batches()] \
            or not got.equals(table):
        raise SystemExit("bench_ffi: qlink_sample's grid table differs from the native batches (schema, sizes or values)")

    dfpy_paths = {
        "native": (datafusion.SessionContext, lambda ctx, name: ctx.register_record_batches(name, [table.to_batches()])),
        "ffi_reference": (datafusion.SessionContext, lambda ctx, name: ctx.register_table(name, ref.MemoryProvider(table))),
        "qlink_dfpy": (datafusion.SessionContext, lambda ctx, name: ctx.register_table(name, sample.table("grid"))),
        "qlink_dfpy_zarr": (datafusion.SessionContext,
                            lambda ctx, name: ctx.register_table(name, zarr_plugin.table("table", path=store))),
    }

    session_paths = {"qlink_session": lambda s, name: s.register_table(name, sample, "grid"),
                     "session_native": lambda s, name: s.register_arrow(name, table),
                     "qlink_session_zarr": lambda s, name: s.register_table(name, zarr_plugin, "table", path=store)}
    sessions = {}
    for name, register in session_paths.items():
        sessions[name] = qlink.Session()
        register(sessions[name], "t")
    measure_scans(r, dfpy_paths, sessions, args, table)
    measure_core(r, dfpy_paths, sessions, args, table)
    missing(r, "qlink_session_udf", "qlink.Session has no Python UDF registration; its UDF-level rows are not measured")
    if "views" not in skip:
        measure_views(r, dfpy_paths, session_paths, qlink.Session, args, want_sum)
    if "xsql" not in skip:
        run_xsql(args, r)
    if "planners" not in skip:
        measure_planners(r, qlink, ref, args)
    r["load_avg_1min_end"] = os.getloadavg()[0]
    ratios(r)
    print_tables(r)
    print(f"\nqlink.Session queries ran on: {r['qlink_py_run']} (QLINK_PY_RUN)")
    print(f"load average (1 min) at start {r['load_avg_1min_start']:.2f}, at end {r['load_avg_1min_end']:.2f}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {args.out}", file=sys.stderr)
    if args.png:
        plot(r, args.png)
        print(f"wrote {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
