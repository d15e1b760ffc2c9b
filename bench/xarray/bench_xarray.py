#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-xarray: qlink.xarray (xarray Datasets through qlink_ndarray) against
datafusion-python's native in-memory table and xarray-sql 0.6.0, one run.

Workloads:
 1. ``SELECT * FROM t`` over a 65 x 16 float64 Dataset (1,040 rows), --reps
    rounds: datafusion-python 55 native (register_record_batches),
    qlink.xarray.Context.from_dataset (qlink's capsule table over
    qlink_ndarray), and in bench/zarr/.venv-xsql (datafusion-python 54)
    xarray-sql 0.6.0 from_dataset beside that venv's native table. Also
    qlink.xarray.register on DuckDB and SQLite, each beside the engine's own
    table of the same rows (extra rows, labelled so).
 2. the same after 1,000 Python scalar UDFs registered on each context.
 3. an ERA5-like Dataset (--days x 181 x 360, t2m and tp float32; the
    generator of bench/zarr/make_era5.py) in memory (numpy) and lazily
    opened from netCDF: a full scan (avg t2m) and a regional query
    (latitude 30..60, longitude 0..40): rows of the table per second,
    qlink.xarray's Context (and its DuckDB and SQLite routes) vs xarray-sql.
 4. Polars (polars 2.1.0 in both venvs): workloads 1 and 3 run by Polars
    (``LazyFrame.collect``; the ERA5 queries in ``pl.SQLContext``) over
    qlink.xarray's frames (``to_polars``, ``register`` on a SQLContext:
    qlink.polars IO sources) and over xarray-sql 0.6.0's Polars route
    (``pl.scan_pyarrow_dataset(xarray_sql.arrow_dataset(ds))``), beside
    Polars' own in-memory frame of the same rows.

Measurement: bench/ffi/bench_ffi.py's ``interleaved`` (one call per path per
round, a fresh random order every round, GC held off; medians). Every path's
answer is checked against the native one before it is timed. A path that
cannot run (the qlink wheel not installed, the xarray-sql venv missing) is
reported missing with the reason, never estimated.

  bench_xarray.py --out bench/results/xarray.json [--reps 300] [--days 2]
  bench_xarray.py --xsql-worker ...   (run with bench/zarr/.venv-xsql's python)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import xarray as xr

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ffi = _load("bench_ffi", ROOT / "bench" / "ffi" / "bench_ffi.py")
era5 = _load("make_era5", ROOT / "bench" / "zarr" / "make_era5.py")

SCAN = "SELECT * FROM t"
FULL = "SELECT avg(t2m) AS a, count(*) AS n FROM era5"
REGION = ("SELECT avg(t2m) AS a, count(*) AS n FROM era5 "
          "WHERE latitude BETWEEN 30 AND 60 AND longitude BETWEEN 0 AND 40")
N_UDF = 1000


def add_udfs(ctx, n: int) -> None:
    ffi.dfpy_add_udfs(ctx, 0, n)


def era5_data(days: int, work: Path):
    ds = era5.build_dataset(days, "2023-01-01", 0)
    nc = work / f"era5-{days}d.nc"
    if not nc.is_file():
        ds.to_netcdf(nc)
    return ds, nc


def check_agg(name: str, got: pa.Table, want: dict) -> None:
    a, n = got.column("a")[0].as_py(), got.column("n")[0].as_py()
    if n != want["n"] or abs(a - want["a"]) > 1e-3 * abs(want["a"]):
        raise SystemExit(f"bench_xarray: {name}: got avg={a} n={n}, want avg={want['a']} n={want['n']}")


def era5_answers(ds) -> dict:
    t = ds.t2m.astype(np.float64)
    sel = t.where((ds.latitude >= 30) & (ds.latitude <= 60) & (ds.longitude >= 0) & (ds.longitude <= 40), drop=True)
    return {"full": {"a": float(t.mean()), "n": int(t.size)}, "region": {"a": float(sel.mean()), "n": int(sel.size)}}


def put(results: dict, path: str, timing: dict) -> None:
    """`path` is NAME or NAME@N (N UDFs registered): NAME_ms[_Nudf], NAME_mean_ms[_Nudf]."""
    name, _, n = path.partition("@")
    ffi.put(results, name, int(n or 0), timing)


def rows_per_s(rows: int, ms: float) -> float:
    return rows / (ms / 1e3)


# ---------------------------------------------------------------- xarray-sql


def xsql_worker(args) -> None:
    """xarray-sql 0.6.0 and its venv's native table; JSON on stdout."""
    import datafusion
    import xarray_sql

    ds = ffi.make_dataset()
    want = ffi.dataset_table(ds)
    out = {"version_xarray_sql": ffi._dist_version("xarray-sql"), "version_datafusion_xsql": datafusion.__version__}
    paths = {}
    for n_udf in (0, N_UDF):
        native = datafusion.SessionContext()
        native.register_record_batches("t", [want.to_batches()])
        xs = xarray_sql.Context()
        xs.from_dataset("t", ds)
        for ctx in (native, xs):
            add_udfs(ctx, n_udf)
        ffi.check_same("xarray_sql", ffi.dfpy_collect(xs, SCAN), want)
        at = f"@{n_udf}" if n_udf else ""
        paths[f"xarray_sql_native{at}"] = lambda c=native: c.sql(SCAN).collect()
        paths[f"xarray_sql{at}"] = lambda c=xs: c.sql(SCAN).collect()
    try:
        import polars as pl
    except ImportError as exc:
        ffi.missing(out, "xarray_sql_polars", f"polars is not installed in this venv ({exc})")
    else:
        lf = pl.scan_pyarrow_dataset(xarray_sql.arrow_dataset(ds))
        ffi.check_same("xarray_sql_polars", lf.collect().to_arrow(), want)
        paths["xarray_sql_polars"] = lambda f=lf: f.collect()
    for k, v in ffi.interleaved(paths, args.reps, args.warmup).items():
        put(out, k, v)
    big, nc = era5_data(args.days, Path(args.work))
    answers = era5_answers(big)
    rows = int(big.t2m.size)
    for kind in ("memory", "netcdf"):
        data = big if kind == "memory" else xr.open_dataset(nc)
        ctx = xarray_sql.Context()
        ctx.from_dataset("era5", data, chunks={"time": 24})
        cases = {}
        for q, sql in (("full", FULL), ("region", REGION)):
            check_agg(f"xarray_sql {kind} {q}", ctx.sql(sql).to_arrow_table(), answers[q])
            cases[f"xarray_sql|{q}"] = lambda c=ctx, s=sql: c.sql(s).collect()
        if "xarray_sql_polars" in paths:
            import polars as pl

            pctx = pl.SQLContext(era5=pl.scan_pyarrow_dataset(xarray_sql.arrow_dataset(data, chunks={"time": 24})))
            for q, sql in (("full", FULL), ("region", REGION)):
                check_agg(f"xarray_sql_polars {kind} {q}", pctx.execute(sql).collect().to_arrow(), answers[q])
                cases[f"xarray_sql_polars|{q}"] = lambda c=pctx, s=sql: c.execute(s).collect()
        for name, v in ffi.interleaved(cases, args.era5_reps, 1).items():
            route, q = name.split("|")
            out[f"era5_{kind}_{q}_{route}_ms"] = v["ms"]
            out[f"era5_{kind}_{q}_{route}_rows_per_s"] = rows_per_s(rows, v["ms"])
    json.dump(out, sys.stdout)


def run_xsql(args, results: dict) -> None:
    py = ROOT / "bench" / "zarr" / ".venv-xsql" / "bin" / "python"
    if not py.is_file():
        ffi.missing(results, "xarray_sql", f"{py} not found (bench/zarr/setup.sh makes it)")
        return
    cmd = [str(py), __file__, "--xsql-worker", "--reps", str(args.reps), "--warmup", str(args.warmup),
           "--days", str(args.days), "--era5-reps", str(args.era5_reps), "--work", args.work]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        ffi.missing(results, "xarray_sql", f"worker failed: {proc.stderr.strip()[-600:]}")
        return
    results.update(json.loads(proc.stdout))


# ------------------------------------------------------------------- qlink


def use_qlink() -> None:
    """The installed qlink package (the wheel: DataFusion route) when there
    is one, with this tree's qlink.xarray and qlink.polars where a wheel
    older than it lacks them; else this tree's python/qlink (the C-build routes only)."""
    try:
        import qlink
    except ImportError:
        sys.path.insert(0, str(ROOT / "python"))
        import qlink
    if importlib.util.find_spec("qlink.xarray") is None or importlib.util.find_spec("qlink.polars") is None:
        qlink.__path__.append(str(ROOT / "python" / "qlink"))


def qlink_context():
    """qlink.xarray.Context, or the reason it cannot be made."""
    try:
        import qlink.xarray as xql

        return xql.Context, None
    except Exception as exc:  # noqa: BLE001 - the wheel missing, reported as such
        return None, f"{type(exc).__name__}: {exc}"


def qlink_polars():
    """(polars, None) when qlink.polars can run (polars and the qlink
    wheel), else (None, why not)."""
    try:
        import polars

        import qlink.polars  # noqa: F401
        from qlink import _qlink  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - reported as missing
        return None, f"{type(exc).__name__}: {exc}"
    return polars, None


def engine_connections():
    """DuckDB and SQLite connections with the qlink extensions (C build)."""
    import importlib

    out = {}
    for kind in ("duckdb", "sqlite"):
        try:
            mod = importlib.import_module(f"qlink.{kind}")
            out[kind] = mod.connect
        except Exception as exc:  # noqa: BLE001
            out[kind] = exc
    return out


def measure_scan(args, results: dict) -> None:
    import datafusion

    import qlink.xarray as xql

    ds = ffi.make_dataset()
    want = ffi.dataset_table(ds)
    Context, why = qlink_context()
    paths = {}
    for n_udf in (0, N_UDF):
        suffix = f"@{n_udf}" if n_udf else ""
        native = datafusion.SessionContext()
        native.register_record_batches("t", [want.to_batches()])
        add_udfs(native, n_udf)
        paths[f"native{suffix}"] = lambda c=native: c.sql(SCAN).collect()
        if Context is not None:
            q = Context()
            q.from_dataset("t", ds)
            add_udfs(q, n_udf)
            ffi.check_same("qlink_xarray", q.sql(SCAN).to_arrow_table(), want)
            paths[f"qlink_xarray{suffix}"] = lambda c=q: c.sql(SCAN).collect()
    if Context is None:
        ffi.missing(results, "qlink_xarray", why)
    polars, why_polars = qlink_polars()
    if polars is None:
        ffi.missing(results, "qlink_xarray_polars", why_polars)
    else:
        lf = xql.to_polars(ds)
        ffi.check_same("qlink_xarray_polars", lf.collect().to_arrow(), want)
        native_pl = polars.from_arrow(want).lazy()
        paths["polars_native"] = lambda f=native_pl: f.collect()
        paths["qlink_xarray_polars"] = lambda f=lf: f.collect()
    conns = engine_connections()
    if isinstance(conns["duckdb"], Exception):
        ffi.missing(results, "qlink_xarray_duckdb", str(conns["duckdb"]))
    else:
        con = conns["duckdb"]()
        xql.register(con, "t", ds)
        con.register("t_native", want)
        ffi.check_same("qlink_xarray_duckdb", con.sql(SCAN).to_arrow_table(), want)
        paths["duckdb_native"] = lambda c=con: c.execute("SELECT * FROM t_native").fetchall()
        paths["qlink_xarray_duckdb"] = lambda c=con: c.execute(SCAN).fetchall()
    if isinstance(conns["sqlite"], Exception):
        ffi.missing(results, "qlink_xarray_sqlite", str(conns["sqlite"]))
    else:
        db = conns["sqlite"]()
        xql.register(db, "t", ds)
        db.execute("CREATE TABLE t_native(y REAL, x INTEGER, v REAL)")
        db.executemany("INSERT INTO t_native VALUES (?, ?, ?)", list(zip(*[want.column(c).to_pylist()
                                                                          for c in ("y", "x", "v")])))
        got = sorted(db.execute(SCAN).fetchall())
        if got != sorted(db.execute("SELECT * FROM t_native").fetchall()):
            raise SystemExit("bench_xarray: qlink_xarray_sqlite differs from SQLite's own table")
        paths["sqlite_native"] = lambda c=db: c.execute("SELECT * FROM t_native").fetchall()
        paths["qlink_xarray_sqlite"] = lambda c=db: c.execute(SCAN).fetchall()
    for k, v in ffi.interleaved(paths, args.reps, args.warmup).items():
        put(results, k, v)


def measure_era5(args, results: dict) -> None:
    import qlink.xarray as xql

    work = Path(args.work)
    big, nc = era5_data(args.days, work)
    answers = era5_answers(big)
    rows = int(big.t2m.size)
    results["era5_rows"] = rows
    Context, why = qlink_context()
    conns = engine_connections()
    for kind in ("memory", "netcdf"):
        data = big if kind == "memory" else xr.open_dataset(nc)
        routes = {}
        if kind == "memory":
            # The floor: DataFusion's own in-memory table of the same rows
            # (one partition per core), whose scan costs nothing; no
            # provider can answer faster than DataFusion aggregates.
            import datafusion

            native = datafusion.SessionContext()
            table = pa.Table.from_pandas(big[["t2m", "tp"]].to_dataframe().reset_index(), preserve_index=False)
            half = (table.num_rows + 1) // 2
            native.register_record_batches("era5", [table.slice(0, half).to_batches(65536),
                                                    table.slice(half).to_batches(65536)])
            routes["native"] = lambda s, c=native: c.sql(s).to_arrow_table()
        if Context is not None:
            ctx = Context()
            ctx.from_dataset("era5", data, chunks={"time": 24})
            routes["qlink_xarray"] = lambda s, c=ctx: c.sql(s).to_arrow_table()
        polars, _ = qlink_polars()
        if polars is not None:
            pctx = polars.SQLContext()
            xql.register(pctx, "era5", data, chunks={"time": 24})
            routes["qlink_xarray_polars"] = lambda s, c=pctx: c.execute(s).collect().to_arrow()
            if kind == "memory":
                frame = polars.from_arrow(table).lazy()
                routes["polars_native"] = lambda s, c=polars.SQLContext(era5=frame): c.execute(s).collect().to_arrow()
        if not isinstance(conns["duckdb"], Exception):
            con = conns["duckdb"]()
            xql.register(con, "era5", data, chunks={"time": 24})
            routes["qlink_xarray_duckdb"] = lambda s, c=con: c.sql(s).to_arrow_table()
        if not isinstance(conns["sqlite"], Exception):
            db = conns["sqlite"]()
            xql.register(db, "era5", data, chunks={"time": 24})

            def sqlite_route(s, c=db):
                a, n = c.execute(s).fetchall()[0]
                return pa.table({"a": [a], "n": [n]})

            routes["qlink_xarray_sqlite"] = sqlite_route
        cases = {}
        for route, run in routes.items():
            for q, sql in (("full", FULL), ("region", REGION)):
                got = run(sql)
                check_agg(f"{route} {kind} {q}", pa.table(got) if not isinstance(got, pa.Table) else got, answers[q])
                cases[f"{route}|{q}"] = lambda r=run, s=sql: r(s)
        for name, v in ffi.interleaved(cases, args.era5_reps, 1).items():
            route, q = name.split("|")
            results[f"era5_{kind}_{q}_{route}_ms"] = v["ms"]
            results[f"era5_{kind}_{q}_{route}_rows_per_s"] = rows_per_s(rows, v["ms"])
        if kind == "netcdf":
            data.close()
    if Context is None:
        ffi.missing(results, "era5_qlink_xarray", why)


def ratios(r: dict) -> None:
    def ratio(a, b):
        return r[a] / r[b] if r.get(a) is not None and r.get(b) else None

    r["qlink_xarray_ratio_native"] = ratio("qlink_xarray_ms", "native_ms")
    r["xarray_sql_ratio_native"] = ratio("xarray_sql_ms", "xarray_sql_native_ms")
    r["qlink_xarray_ratio_native_1000udf"] = ratio("qlink_xarray_ms_1000udf", "native_ms_1000udf")
    r["qlink_xarray_udf_flatness"] = ratio("qlink_xarray_ms_1000udf", "qlink_xarray_ms")
    # workload 2's target: the ratio to native with 1,000 UDFs over the ratio without (flat: <= 1.05)
    r["qlink_xarray_udf_ratio_flatness"] = ratio("qlink_xarray_ratio_native_1000udf", "qlink_xarray_ratio_native")
    r["xarray_sql_udf_flatness"] = ratio("xarray_sql_ms_1000udf", "xarray_sql_ms")
    r["qlink_xarray_duckdb_ratio_native"] = ratio("qlink_xarray_duckdb_ms", "duckdb_native_ms")
    r["qlink_xarray_sqlite_ratio_native"] = ratio("qlink_xarray_sqlite_ms", "sqlite_native_ms")
    for q in ("full", "region"):
        # the most any provider could gain on xarray-sql in DataFusion: the
        # native table's speedup (a scan that costs nothing)
        r[f"era5_memory_{q}_native_speedup_vs_xarray_sql"] = ratio(f"era5_memory_{q}_native_rows_per_s",
                                                                    f"era5_memory_{q}_xarray_sql_rows_per_s")
        r[f"era5_memory_{q}_qlink_xarray_ratio_native"] = ratio(f"era5_memory_{q}_qlink_xarray_ms",
                                                                f"era5_memory_{q}_native_ms")
    r["qlink_xarray_polars_ratio_native"] = ratio("qlink_xarray_polars_ms", "polars_native_ms")
    r["xarray_sql_polars_ratio_native"] = ratio("xarray_sql_polars_ms", "polars_native_ms")
    r["qlink_xarray_polars_speedup_vs_xarray_sql_polars"] = ratio("xarray_sql_polars_ms", "qlink_xarray_polars_ms")
    for kind in ("memory", "netcdf"):
        for q in ("full", "region"):
            r[f"era5_{kind}_{q}_qlink_xarray_polars_speedup_vs_xarray_sql_polars"] = ratio(
                f"era5_{kind}_{q}_qlink_xarray_polars_rows_per_s", f"era5_{kind}_{q}_xarray_sql_polars_rows_per_s")
    for kind in ("memory", "netcdf"):
        for q in ("full", "region"):
            for route in ("qlink_xarray", "qlink_xarray_duckdb", "qlink_xarray_sqlite"):
                a = f"era5_{kind}_{q}_{route}_rows_per_s"
                b = f"era5_{kind}_{q}_xarray_sql_rows_per_s"
                r[f"era5_{kind}_{q}_{route}_speedup_vs_xarray_sql"] = ratio(a, b)


def print_tables(r: dict) -> None:
    fmt = ffi.fmt
    print("\n1-2. SELECT * FROM t, 65 x 16 float64 (1,040 rows): median ms")
    print(f"{'path':28} {'0 UDFs':>10} {'1,000 UDFs':>11}")
    for p in ("native", "qlink_xarray", "xarray_sql_native", "xarray_sql"):
        print(f"{p:28} {fmt(r.get(p + '_ms')):>10} {fmt(r.get(p + '_ms_1000udf')):>11}")
    for p in ("duckdb_native", "qlink_xarray_duckdb", "sqlite_native", "qlink_xarray_sqlite"):
        print(f"{p + ' (extra)':28} {fmt(r.get(p + '_ms')):>10}")
    for k in ("qlink_xarray_ratio_native", "xarray_sql_ratio_native", "qlink_xarray_ratio_native_1000udf",
              "qlink_xarray_udf_flatness", "qlink_xarray_udf_ratio_flatness", "xarray_sql_udf_flatness", "qlink_xarray_duckdb_ratio_native",
              "qlink_xarray_sqlite_ratio_native"):
        print(f"  {k} = {fmt(r.get(k))}")
    print(f"\n3. ERA5-like, {r.get('era5_rows', 0):,} rows: M rows/s (median)")
    print(f"{'dataset / query':18} {'qlink ctx':>10} {'qlink duckdb':>13} {'qlink sqlite':>13} {'xarray-sql':>11}"
          f" {'DF native':>10}")
    for kind in ("memory", "netcdf"):
        for q in ("full", "region"):
            vals = [r.get(f"era5_{kind}_{q}_{route}_rows_per_s") for route in
                    ("qlink_xarray", "qlink_xarray_duckdb", "qlink_xarray_sqlite", "xarray_sql", "native")]
            print(f"{kind + ' ' + q:18} " + " ".join(f"{fmt(v / 1e6 if v else None, '.1f'):>{w}}"
                                                    for v, w in zip(vals, (10, 13, 13, 11, 10))))
    for q in ("full", "region"):
        for k in (f"era5_memory_{q}_qlink_xarray_speedup_vs_xarray_sql", f"era5_memory_{q}_native_speedup_vs_xarray_sql",
                  f"era5_memory_{q}_qlink_xarray_ratio_native"):
            print(f"  {k} = {fmt(r.get(k))}")
    print("\n4. Polars: SELECT * (1,040 rows, median ms) and ERA5-like (M rows/s)")
    print(f"{'path':28} {'ms':>10}")
    for p in ("polars_native", "qlink_xarray_polars", "xarray_sql_polars"):
        print(f"{p:28} {fmt(r.get(p + '_ms')):>10}")
    print(f"{'dataset / query':18} {'qlink':>10} {'xarray-sql':>11} {'Polars native':>14}")
    for kind in ("memory", "netcdf"):
        for q in ("full", "region"):
            vals = [r.get(f"era5_{kind}_{q}_{route}_rows_per_s") for route in
                    ("qlink_xarray_polars", "xarray_sql_polars", "polars_native")]
            print(f"{kind + ' ' + q:18} " + " ".join(f"{fmt(v / 1e6 if v else None, '.1f'):>{w}}"
                                                    for v, w in zip(vals, (10, 11, 14))))
    for k in sorted(k for k in r if "polars" in k and ("ratio" in k or "speedup" in k)):
        print(f"  {k} = {fmt(r.get(k))}")
    for k, v in sorted(r.items()):
        if k.endswith("_missing"):
            print(f"MISSING {k[:-8]}: {v}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "xarray.json"))
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--days", type=int, default=2)
    ap.add_argument("--era5-reps", type=int, default=5)
    ap.add_argument("--work", default=str(ROOT / "build" / "bench-xarray"))
    ap.add_argument("--xsql-worker", action="store_true")
    args = ap.parse_args()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    if args.xsql_worker:
        xsql_worker(args)
        return
    use_qlink()
    results = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
               "reps": args.reps, "era5_days": args.days, "era5_reps": args.era5_reps,
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    import datafusion

    results["version_datafusion"] = datafusion.__version__
    t0 = time.time()
    measure_scan(args, results)
    measure_era5(args, results)
    run_xsql(args, results)
    ratios(results)
    results["seconds"] = time.time() - t0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print_tables(results)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
