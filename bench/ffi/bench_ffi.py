#!/usr/bin/env python3
"""bench-ffi: the per-scan and per-query cost of a table provider (and a query
planner) reached through datafusion-ffi, side by side with qlink's, in one run.

Paths, all over the same data (an xarray Dataset of 65 x 16 float64 with two
dimension coordinates: 1,040 rows), each timed on ``SELECT * FROM t``:

  native          datafusion-python 55, in-memory table (register_record_batches)
  ffi_reference   datafusion-python 55, a MemTable exported the standard way
                  (datafusion-ffi 55.2.0 FFI_TableProvider; bench/ffi/ref_provider)
  qlink_dfpy      datafusion-python 55, the qlink_zarr table through qlink's
                  capsule (qlink.Plugin(...).table(...) + ctx.register_table)
  qlink_session   qlink.Session, the qlink_zarr table
  session_native  qlink.Session, in-memory table (register_arrow)
  xarray_sql      xarray-sql 0.6.0 from_dataset (its FFI provider), in its own
                  venv with datafusion-python 54, beside
  xarray_sql_native  that venv's in-memory table

Workloads: the scan with 0, 250, 500 and 1,000 extra Python scalar UDFs
registered; one query over eleven small tables through CTEs that DataFusion
inlines into 2,992 scans; ``SELECT 1`` with no planner, with a pass-through
planner exported through datafusion-ffi (FFI_QueryPlanner), with qlink's
planner capsule (if the installed qlink has one), and in qlink.Session with
and without qlink_fold installed.

Figures are per-query milliseconds over --reps repetitions after a warm-up:
``*_ms`` is the median, ``*_mean_ms`` the mean; ratios are medians over the
native median of the same engine version (xarray-sql: over its own venv's
native). A path that cannot run here is reported as missing with the reason,
never estimated.

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


def make_dataset() -> xr.Dataset:
    """65 x 16 float64 on two dimension coordinates (1,040 rows as a table)."""
    y = np.linspace(-80.0, 80.0, NY)
    x = np.arange(NX, dtype=np.int64)
    v = np.sin(np.arange(NY * NX, dtype=np.float64)).reshape(NY, NX)
    return xr.Dataset({"v": (("y", "x"), v)}, coords={"y": y, "x": x})


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


def time_ms(run, reps: int, warmup: int) -> dict:
    """Per-call milliseconds of run() (median, mean) with the GC held off."""
    for _ in range(warmup):
        run()
    gc.collect()
    gc.disable()
    try:
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            run()
            samples.append((time.perf_counter() - t0) * 1e3)
    finally:
        gc.enable()
    return {"ms": statistics.median(samples), "mean_ms": statistics.fmean(samples)}


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


# ---- datafusion-python paths (the same code serves 54 in the xarray-sql venv)

def dfpy_collect(ctx, sql: str) -> pa.Table:
    return pa.Table.from_batches(ctx.sql(sql).collect())


def dfpy_add_udfs(ctx, start: int, stop: int) -> None:
    """Register trivial Python scalar UDFs bench_udf_<start..stop-1>."""
    from datafusion import udf

    for i in range(start, stop):
        ctx.register_udf(udf(lambda a: a, [pa.float64()], pa.float64(), "immutable", name=f"bench_udf_{i}"))


def measure_dfpy(results: dict, name: str, make_ctx, register, args, want: pa.Table, want_sum: float) -> None:
    """Scan at each UDF level, then the view query, for one datafusion-python path.

    register(ctx, table_name) registers the path's table under that name."""
    ctx = make_ctx()
    register(ctx, "t")
    check_same(name, dfpy_collect(ctx, SCAN), want)
    for level_i, n in enumerate(UDF_LEVELS):
        dfpy_add_udfs(ctx, UDF_LEVELS[level_i - 1] if level_i else 0, n)
        r = time_ms(lambda: ctx.sql(SCAN).collect(), args.reps, args.warmup)
        put(results, name, n, r)
        print(f"  {name:18s} {n:5d} UDFs  {r['ms']:8.3f} ms (mean {r['mean_ms']:.3f})", file=sys.stderr)
    ctx = make_ctx()
    for i in range(VIEW_TABLES):
        register(ctx, f"t{i}")
    q = view_query()
    check_view(name, dfpy_collect(ctx, q), want_sum)
    r = time_ms(lambda: ctx.sql(q).collect(), args.view_reps, 1)
    results[f"views_{name}_ms"] = r["ms"]
    print(f"  {name:18s} views ({VIEW_SCANS} scans)  {r['ms']:.1f} ms", file=sys.stderr)


def put(results: dict, name: str, n_udf: int, r: dict) -> None:
    suffix = f"_{n_udf}udf" if n_udf else ""
    results[f"{name}_ms{suffix}"] = r["ms"]
    results[f"{name}_mean_ms{suffix}"] = r["mean_ms"]


def missing(results: dict, name: str, why: str) -> None:
    results[f"{name}_missing"] = why
    print(f"  {name}: MISSING: {why}", file=sys.stderr)


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
    measure_dfpy(results, "xarray_sql_native", datafusion.SessionContext,
                 lambda ctx, name: ctx.register_record_batches(name, [table.to_batches()]), args, table, want_sum)
    measure_dfpy(results, "xarray_sql", xarray_sql.Context,
                 lambda ctx, name: ctx.from_dataset(name, ds), args, table, want_sum)
    json.dump(results, sys.stdout)


def _dist_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


# ---- the main process (datafusion-python 55, qlink, the reference crate)

def measure_session(results: dict, qlink, name: str, register, args, want: pa.Table, want_sum: float) -> None:
    s = qlink.Session()
    register(s, "t")
    check_same(name, s.sql(SCAN), want)
    r = time_ms(lambda: s.sql(SCAN), args.reps, args.warmup)
    put(results, name, 0, r)
    print(f"  {name:18s}     0 UDFs  {r['ms']:8.3f} ms (mean {r['mean_ms']:.3f})", file=sys.stderr)
    s = qlink.Session()
    for i in range(VIEW_TABLES):
        register(s, f"t{i}")
    q = view_query()
    check_view(name, s.sql(q), want_sum)
    r = time_ms(lambda: s.sql(q), args.view_reps, 1)
    results[f"views_{name}_ms"] = r["ms"]
    print(f"  {name:18s} views ({VIEW_SCANS} scans)  {r['ms']:.1f} ms", file=sys.stderr)


def measure_planners(results: dict, qlink, ref, args) -> None:
    """SELECT 1 per query: no planner vs an installed one, in both engines."""
    import datafusion

    def dfpy(planner):
        ctx = datafusion.SessionContext()
        if planner is not None:
            ctx.set_query_planner(planner)
        return time_ms(lambda: ctx.sql("SELECT 1").collect(), args.reps, args.warmup)

    cases = {"select1_dfpy_none": lambda: dfpy(None),
             "select1_dfpy_ffi_reference": lambda: dfpy(ref.DefaultPlanner())}
    planner = qlink.Plugin(qlink.plugin_path("qlink_fold")).planner("fold")
    cases["select1_dfpy_qlink_capsule"] = lambda: dfpy(planner)

    def session(with_fold: bool):
        s = qlink.Session()
        if with_fold:
            s.install_planner(qlink.plugin_path("qlink_fold"), "fold")
        return time_ms(lambda: s.sql("SELECT 1"), args.reps, args.warmup)

    cases["select1_session_none"] = lambda: session(False)
    cases["select1_session_fold"] = lambda: session(True)
    for key, run in cases.items():
        r = run()
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


def ratios(results: dict) -> None:
    """Each path's median over its engine's native median, per UDF level."""
    base_of = {"native": "native", "ffi_reference": "native", "qlink_dfpy": "native",
               "qlink_session": "native", "session_native": "native",
               "xarray_sql": "xarray_sql_native", "xarray_sql_native": "xarray_sql_native"}
    for name, base in base_of.items():
        for n in UDF_LEVELS:
            sfx = f"_{n}udf" if n else ""
            a, b = results.get(f"{name}_ms{sfx}"), results.get(f"{base}_ms{sfx}")
            if a is not None and b:
                results[f"{name}_ratio{sfx}"] = a / b
        a, b = results.get(f"views_{name}_ms"), results.get(f"views_{base}_ms")
        if a is not None and b:
            results[f"views_{name}_ratio"] = a / b
    for name in ("ffi_reference", "qlink_capsule"):
        a, b = results.get(f"select1_dfpy_{name}_ms"), results.get("select1_dfpy_none_ms")
        if a is not None and b:
            results[f"select1_dfpy_{name}_ratio"] = a / b
    a, b = results.get("select1_session_fold_ms"), results.get("select1_session_none_ms")
    if a is not None and b:
        results["select1_session_fold_ratio"] = a / b


def fmt(v, spec=".3f"):
    return "—" if v is None else format(v, spec)


def print_tables(r: dict) -> None:
    rows = [("native", "datafusion-python 55, in-memory table"),
            ("ffi_reference", "datafusion-python 55, datafusion-ffi FFI_TableProvider (reference)"),
            ("qlink_dfpy", "datafusion-python 55, qlink capsule (qlink_zarr)"),
            ("qlink_session", "qlink.Session, qlink_zarr"),
            ("session_native", "qlink.Session, in-memory table"),
            ("xarray_sql_native", f"datafusion-python {r.get('version_xsql_datafusion_python', '?')}, in-memory table"),
            ("xarray_sql", f"xarray-sql {r.get('version_xarray_sql', '?')} from_dataset (FFI)")]
    print(f"\n### SELECT * FROM t, {NY * NX} rows, {r['reps']} reps: median ms per query (ratio to native)\n")
    head = " | ".join(f"{n} UDFs" for n in UDF_LEVELS)
    print(f"| path | {head} | views, {VIEW_SCANS} scans |")
    print("|---|" + "---|" * (len(UDF_LEVELS) + 1))
    for name, label in rows:
        cells = []
        for n in UDF_LEVELS:
            sfx = f"_{n}udf" if n else ""
            ms, ratio = r.get(f"{name}_ms{sfx}"), r.get(f"{name}_ratio{sfx}")
            cells.append("—" if ms is None else f"{ms:.3f} ({fmt(ratio, '.2f')}x)")
        vms, vr = r.get(f"views_{name}_ms"), r.get(f"views_{name}_ratio")
        cells.append("—" if vms is None else f"{vms:.1f} ({fmt(vr, '.2f')}x)")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\n### SELECT 1 with a query planner installed: median ms per query\n")
    print("| engine | no planner | with planner | ratio (x) |")
    print("|---|---|---|---|")
    print(f"| datafusion-python 55, pass-through planner via datafusion-ffi FFI_QueryPlanner | {fmt(r.get('select1_dfpy_none_ms'))} "
          f"| {fmt(r.get('select1_dfpy_ffi_reference_ms'))} | {fmt(r.get('select1_dfpy_ffi_reference_ratio'), '.2f')} |")
    print(f"| datafusion-python 55, qlink_fold via qlink's planner capsule | {fmt(r.get('select1_dfpy_none_ms'))} "
          f"| {fmt(r.get('select1_dfpy_qlink_capsule_ms'))} | {fmt(r.get('select1_dfpy_qlink_capsule_ratio'), '.2f')} |")
    print(f"| qlink.Session, qlink_fold installed | {fmt(r.get('select1_session_none_ms'))} "
          f"| {fmt(r.get('select1_session_fold_ms'))} | {fmt(r.get('select1_session_fold_ratio'), '.2f')} |")
    gone = {k[: -len("_missing")]: v for k, v in r.items() if k.endswith("_missing")}
    if gone:
        print("\nMissing rows:")
        for k, v in gone.items():
            print(f"- {k}: {v}")


def plot(r: dict, png: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, label in [("native", "native (dfpy 55)"), ("ffi_reference", "datafusion-ffi reference"),
                        ("xarray_sql_native", "native (dfpy 54)"), ("xarray_sql", "xarray-sql 0.6.0"),
                        ("qlink_dfpy", "qlink in dfpy 55"), ("qlink_session", "qlink.Session")]:
        pts = [(n, r.get(f"{name}_ms" + (f"_{n}udf" if n else ""))) for n in UDF_LEVELS]
        pts = [(n, v) for n, v in pts if v is not None]
        if pts:
            ax.plot(*zip(*pts), marker="o", label=label)
    ax.set_xlabel("extra scalar UDFs registered")
    ax.set_ylabel(f"ms per SELECT * ({NY * NX} rows), median")
    ax.set_title("Per-scan cost against registered functions")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", required=True, help="Zarr store of the benchmark Dataset (written if absent)")
    ap.add_argument("--reps", type=int, default=300, help="timed queries per case (default 300)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed queries first (default 20)")
    ap.add_argument("--view-reps", type=int, default=3, help="timed runs of the 2,992-scan query (default 3)")
    ap.add_argument("--xsql-python", help="interpreter of the xarray-sql venv")
    ap.add_argument("--xsql-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="write the flat JSON here")
    ap.add_argument("--png", help="write the per-scan vs UDF-count plot here")
    args = ap.parse_args()
    if args.xsql_worker:
        xsql_worker(args)
        return

    import datafusion
    import qlink
    import qlink_ffi_ref as ref

    ds = make_dataset()
    store = str(Path(args.store).resolve())
    if not Path(store).exists():
        # Uncompressed, one chunk: the plugin's per-scan work is reading the
        # file, so what the paths differ by is the interface, not a codec.
        enc = {k: {"compressors": None} for k in ("v", "x", "y")}
        ds.to_zarr(store, mode="w", zarr_format=3, consolidated=False, encoding=enc)
    ds = xr.open_zarr(store, consolidated=False).load()  # every path gets the stored values
    table = dataset_table(ds)
    want_sum = VIEW_SCANS * float(np.sum(table.column("v").to_numpy()))
    r = {"reps": args.reps, "warmup": args.warmup, "view_reps": args.view_reps, "rows": table.num_rows,
         "view_scans": VIEW_SCANS, "python": platform.python_version(),
         "version_datafusion_python": datafusion.__version__, "version_qlink": qlink.__version__,
         "version_qlink_datafusion": qlink.DATAFUSION_VERSION,
         "version_reference_datafusion_ffi": ref.DATAFUSION_FFI_VERSION,
         "version_pyarrow": pa.__version__, "version_xarray": xr.__version__,
         "qlink_profile": os.environ.get("QLINK_PROFILE", "unknown"),
         "load_avg_1min_start": os.getloadavg()[0],  # other work on the machine skews timings
         "git_commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()}
    print("versions: " + ", ".join(f"{k[8:]}={v}" for k, v in r.items() if k.startswith("version_")), file=sys.stderr)

    def reg_native(ctx, name):
        ctx.register_record_batches(name, [table.to_batches()])

    measure_dfpy(r, "native", datafusion.SessionContext, reg_native, args, table, want_sum)
    measure_dfpy(r, "ffi_reference", datafusion.SessionContext,
                 lambda ctx, name: ctx.register_table(name, ref.MemoryProvider(table)), args, table, want_sum)
    zarr_plugin = qlink.Plugin(qlink.plugin_path("qlink_zarr"))
    measure_dfpy(r, "qlink_dfpy", datafusion.SessionContext,
                 lambda ctx, name: ctx.register_table(name, zarr_plugin.table("table", path=store)), args, table, want_sum)
    measure_session(r, qlink, "qlink_session",
                    lambda s, name: s.register_table(name, qlink.plugin_path("qlink_zarr"), "table", path=store), args, table, want_sum)
    measure_session(r, qlink, "session_native", lambda s, name: s.register_arrow(name, table), args, table, want_sum)
    missing(r, "qlink_session_udf", "qlink.Session has no Python UDF registration; its UDF-level rows are not measured")
    run_xsql(args, r)
    measure_planners(r, qlink, ref, args)
    r["load_avg_1min_end"] = os.getloadavg()[0]
    ratios(r)
    print_tables(r)
    print(f"\nload average (1 min) at start {r['load_avg_1min_start']:.1f}, at end {r['load_avg_1min_end']:.1f}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
        print(f"\nwrote {args.out}", file=sys.stderr)
    if args.png:
        plot(r, args.png)
        print(f"wrote {args.png}", file=sys.stderr)


if __name__ == "__main__":
    main()
