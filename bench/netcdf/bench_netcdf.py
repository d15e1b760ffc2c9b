#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench-netcdf: qlink_netcdf against xarray-sql 0.6.0, xarray + pandas and
qlink_zarr, on one ERA5-like dataset written as a chunked, zlib-compressed
netCDF-4 file, as a netCDF-3 file and as a Zarr store. One run.

Data (--days x 181 x 360 hourly cells, t2m and tp float32; the generator of
bench/zarr/make_era5.py, cached under --work with a stamp):
  era5-<N>d.nc4.nc  netCDF-4 (HDF5), t2m and tp chunked 24 h x 181 x 360,
                    zlib (xarray's zlib=True: level 4, shuffle), time int32
                    "hours since 1900-01-01" as ERA5's files encode it;
  era5-<N>d.nc3.nc  netCDF-3 64-bit offset, time the unlimited (record)
                    dimension, no compression (netCDF-3 has none);
  era5-<N>d.v3.zarr make_era5.py's Zarr v3 store (zstd, the same chunks).

Queries (answers checked equal before anything is timed: counts exactly,
averages to a relative 1e-6, since float32 values are summed in different
orders and precisions by the routes):
  scan      SELECT avg(t2m), avg(tp), count(*) over every cell;
  filtered  the same over latitude 30..60 and longitude 0..40 (2.0% of the
            cells; no chunk can be skipped, every chunk is sliced).

Routes:
  duckdb    qlink_netcdf (and qlink_zarr) in DuckDB: qlink.duckdb.connect(),
            a view over qlink_scan('.../qlink_netcdf.so/table?path=FILE');
  session   qlink_netcdf (and qlink_zarr) in DataFusion: qlink.Session,
            register_table(..., "table", path=FILE);
  xarray_sql xarray-sql 0.6.0 (DataFusion 54) in bench/zarr/.venv-xsql, a
            subprocess: Context().from_dataset("era5", xr.open_dataset(FILE),
            chunks={"time": 24}), registered once, then ctx.sql(...);
  pandas    xr.open_dataset(FILE).to_dataframe().reset_index() then the
            pandas filter and means (open and conversion timed: that is the
            query).

Cold rows: each call is a fresh process that opens the file, registers
it and runs the query, all timed (imports and start-up are not): a new
qlink.Session with the table registered; xr.open_dataset and an
xarray-sql Context. HDF5's cache of decompressed chunks starts empty (the
operating system's page cache stays warm). A fresh process, because in
one process HDF5 shares an open dataset's chunk cache with every later
open of the same file, and xarray keeps files open by path. The other rows query a table registered once: both
libnetcdf builds then keep up to 64 MiB of decompressed chunks per variable
(netCDF-C 4.10's default, which qlink_netcdf sets too), which holds every
chunk of this file.

Measurement: bench/ffi/bench_ffi.py's ``interleaved`` (each route once per
round in a fresh random order, medians of --reps rounds after one warm-up
round); xarray-sql's cases are interleaved among themselves in their own
process. Every time is wall-clock milliseconds of the query alone (the
table or view registered beforehand).

  bench_netcdf.py [--out bench/results/netcdf.json] [--days 4] [--reps 7]
  bench_netcdf.py --xsql-worker --files ... (bench/zarr/.venv-xsql's python)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STAMP_VERSION = 1  # bump when the written files change


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


ffi = _load("bench_ffi", ROOT / "bench" / "ffi" / "bench_ffi.py")
era5 = _load("make_era5", ROOT / "bench" / "zarr" / "make_era5.py")

SCAN = "SELECT avg(t2m) AS a, avg(tp) AS p, count(*) AS n FROM {t}"
REGION = SCAN + " WHERE latitude BETWEEN 30 AND 60 AND longitude BETWEEN 0 AND 40"
QUERIES = {"scan": SCAN, "filtered": REGION}
FILES = ("nc4", "nc3")


# ---------------------------------------------------------------- the data


def paths(work: Path, days: int) -> dict:
    return {"nc4": work / f"era5-{days}d.nc4.nc", "nc3": work / f"era5-{days}d.nc3.nc",
            "zarr": work / f"era5-{days}d.v3.zarr"}


def write_netcdf(ds, path: Path, kind: str) -> None:
    """Write ``ds`` as ``kind`` (nc4 or nc3) beside ``path``, then rename it
    into place with a stamp, so an interrupted run leaves no file that looks
    complete."""
    time_enc = {"units": "hours since 1900-01-01", "calendar": "proleptic_gregorian", "dtype": "int32"}
    if kind == "nc4":
        chunks = (24, ds.sizes["latitude"], ds.sizes["longitude"])
        enc = {v: {"zlib": True, "chunksizes": chunks} for v in ("t2m", "tp")}
        kw = {"format": "NETCDF4", "unlimited_dims": []}
    else:
        enc = {}
        kw = {"format": "NETCDF3_64BIT", "unlimited_dims": ["time"]}
    for v in ("t2m", "tp", "latitude", "longitude"):
        enc.setdefault(v, {})["_FillValue"] = None
    enc["time"] = time_enc
    tmp = path.with_name(path.name + ".tmp")
    ds.to_netcdf(tmp, engine="netcdf4", encoding=enc, **kw)
    os.replace(tmp, path)


def stamp_ok(path: Path, want: dict) -> bool:
    try:
        return path.exists() and json.loads(Path(str(path) + ".stamp").read_text()) == want
    except (OSError, ValueError):
        return False


def make_data(work: Path, days: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    p = paths(work, days)
    era5.main([str(p["zarr"]), "--days", str(days)])
    ds = None
    for kind in FILES:
        want = {"version": STAMP_VERSION, "days": days, "kind": kind}
        if stamp_ok(p[kind], want):
            print(f"bench_netcdf: {p[kind]} up to date")
            continue
        if ds is None:
            ds = era5.build_dataset(days, "2023-01-01", 0)
        t0 = time.perf_counter()
        write_netcdf(ds, p[kind], kind)
        Path(str(p[kind]) + ".stamp").write_text(json.dumps(want))
        print(f"bench_netcdf: wrote {p[kind]} in {time.perf_counter() - t0:.1f} s "
              f"({p[kind].stat().st_size / 1e6:.0f} MB)")
    return p


def reference(path: Path) -> dict:
    """Float64 answers from the values themselves (numpy over the netCDF-4
    file): {query: (avg t2m, avg tp, n)}."""
    import numpy as np
    import xarray as xr

    with xr.open_dataset(path) as ds:
        t, p = ds.t2m.values.astype(np.float64), ds.tp.values.astype(np.float64)
        lat, lon = ds.latitude.values, ds.longitude.values
    m = ((lat >= 30) & (lat <= 60))[:, None] & ((lon >= 0) & (lon <= 40))[None, :]
    return {"scan": (float(t.mean()), float(p.mean()), int(t.size)),
            "filtered": (float(t[:, m].mean()), float(p[:, m].mean()), int(t[:, m].size))}


def check(name: str, got: tuple, want: tuple) -> None:
    a, p, n = got
    if n != want[2] or not math.isclose(a, want[0], rel_tol=1e-6) or not math.isclose(p, want[1], rel_tol=1e-6):
        raise SystemExit(f"bench_netcdf: {name}: got avg(t2m)={a} avg(tp)={p} n={n}, want {want}")


# ----------------------------------------------------------- xarray-sql


def xsql_worker(args) -> None:
    """xarray-sql 0.6.0 over xr.open_dataset of each file; JSON on stdout."""
    import xarray as xr
    import xarray_sql

    want = json.loads(args.want)
    out = {"version_xarray_sql": ffi._dist_version("xarray-sql")}
    cases = {}
    for kind, path in zip(FILES, args.files):
        ctx = xarray_sql.Context()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctx.from_dataset("era5", xr.open_dataset(path), chunks={"time": 24})
        for q, sql in QUERIES.items():
            s = sql.format(t="era5")

            def run(c=ctx, s=s):
                r = c.sql(s).to_arrow_table()
                return (r.column("a")[0].as_py(), r.column("p")[0].as_py(), r.column("n")[0].as_py())

            check(f"xarray_sql {kind} {q}", run(), tuple(want[q]))
            cases[f"xarray_sql_{kind}_{q}"] = run
    for name, v in ffi.interleaved(cases, args.reps, 1).items():
        out[f"{name}_ms"] = v["ms"]
    json.dump(out, sys.stdout)


def run_xsql(args, p: dict, want: dict, results: dict) -> None:
    py = ROOT / "bench" / "zarr" / ".venv-xsql" / "bin" / "python"
    if not py.is_file():
        ffi.missing(results, "xarray_sql", f"{py} not found (bench/zarr/setup.sh makes it)")
        return
    cmd = [str(py), __file__, "--xsql-worker", "--reps", str(args.reps), "--want", json.dumps(want),
           "--files", *(str(p[k]) for k in FILES)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench_netcdf: the xarray-sql worker failed: {proc.stderr.strip()[-1500:]}")
    results.update(json.loads(proc.stdout))


# ---------------------------------------------------------------- qlink


def use_qlink() -> None:
    """The installed qlink package (the wheel: qlink.Session) when there is
    one, else this tree's python/ (DuckDB only)."""
    try:
        import qlink  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "python"))


def build_dir() -> Path:
    return Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))


def plugin(name: str) -> str:
    return str(build_dir() / "plugins" / f"{name}.so")


def qlink_routes(p: dict, results: dict) -> dict:
    """{route_file: run(sql with {t}) -> (a, p, n)} for DuckDB and qlink.Session."""
    routes = {}
    sources = {k: ("qlink_netcdf", p[k]) for k in FILES}
    sources["zarr"] = ("qlink_zarr", p["zarr"])
    try:
        import qlink.duckdb

        con = qlink.duckdb.connect()
        for kind, (plug, path) in sources.items():
            con.execute(f"CREATE VIEW era5_{kind} AS SELECT * FROM qlink_scan('{plugin(plug)}/table?path={path}')")

            def run(sql, c=con, k=kind):
                return tuple(c.execute(sql.format(t=f"era5_{k}")).fetchone())

            routes[f"duckdb_{kind}"] = run
    except Exception as exc:  # noqa: BLE001 - reported as missing
        ffi.missing(results, "duckdb", f"{type(exc).__name__}: {exc}")
    try:
        import qlink

        session = qlink.Session()
        for kind, (plug, path) in sources.items():
            session.register_table(f"era5_{kind}", plugin(plug), "table", path=str(path))

            def run(sql, s=session, k=kind):
                r = s.sql(sql.format(t=f"era5_{k}"))
                return (r.column("a")[0].as_py(), r.column("p")[0].as_py(), r.column("n")[0].as_py())

            routes[f"session_{kind}"] = run
    except Exception as exc:  # noqa: BLE001 - the wheel missing: reported as such
        ffi.missing(results, "session", f"{type(exc).__name__}: {exc}")
    return routes


def pandas_route(path: Path):
    import xarray as xr

    def run(sql):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with xr.open_dataset(path) as ds:
                df = ds[["t2m", "tp"]].to_dataframe().reset_index()
        if sql == REGION:
            df = df[df.latitude.between(30, 60) & df.longitude.between(0, 40)]
        return (float(df.t2m.mean()), float(df.tp.mean()), int(len(df)))

    return run


def measure(args, p: dict, want: dict, results: dict) -> None:
    routes = qlink_routes(p, results)
    for kind in FILES:
        routes[f"pandas_{kind}"] = pandas_route(p[kind])
    cases = {}
    for route, run in routes.items():
        for q, sql in QUERIES.items():
            check(f"{route} {q}", run(sql), want[q])
            cases[f"{route}_{q}"] = lambda r=run, s=sql: r(s)
    for name, v in ffi.interleaved(cases, args.reps, 1).items():
        results[f"{name}_ms"] = v["ms"]


# ------------------------------------------------------------------ cold


def cold_worker(args) -> None:
    """One cold query in a fresh process: open the file, register it, run
    the query, all timed (imports are not); {"ms", "answer"} on stdout."""
    route, kind, q, path = args.cold_worker
    sql = QUERIES[q]
    if route == "session":
        import qlink

        plug = plugin("qlink_zarr" if kind == "zarr" else "qlink_netcdf")
        t0 = time.perf_counter()
        session = qlink.Session()
        session.register_table("era5", plug, "table", path=path)
        r = session.sql(sql.format(t="era5"))
    else:
        import xarray as xr
        import xarray_sql

        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        with xr.open_dataset(path) as ds:
            ctx = xarray_sql.Context()
            ctx.from_dataset("era5", ds, chunks={"time": 24})
            r = ctx.sql(sql.format(t="era5")).to_arrow_table()
    ms = (time.perf_counter() - t0) * 1e3
    json.dump({"ms": ms, "answer": [r.column(c)[0].as_py() for c in ("a", "p", "n")]}, sys.stdout)


def measure_cold(args, p: dict, want: dict, results: dict) -> None:
    """Each cold case --reps times, one fresh process per call, the cases in
    a fresh random order every round; medians."""
    import random
    import statistics

    xsql_py = ROOT / "bench" / "zarr" / ".venv-xsql" / "bin" / "python"
    cases = {}
    for kind in ("nc4", "nc3", "zarr"):
        for q in QUERIES:
            cases[f"session_{kind}_{q}_cold"] = (sys.executable, "session", kind, q)
            if kind != "zarr" and xsql_py.is_file():
                cases[f"xarray_sql_{kind}_{q}_cold"] = (str(xsql_py), "xarray_sql", kind, q)
    samples = {n: [] for n in cases}
    order = random.Random(20261206)
    names = list(cases)
    for _ in range(args.reps):
        order.shuffle(names)
        for name in names:
            py, route, kind, q = cases[name]
            proc = subprocess.run([py, __file__, "--cold-worker", route, kind, q, str(p[kind])],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"bench_netcdf: cold {name} failed: {proc.stderr.strip()[-1500:]}")
            out = json.loads(proc.stdout)
            check(f"{name}", tuple(out["answer"]), want[q])
            samples[name].append(out["ms"])
    for name, v in samples.items():
        results[f"{name}_ms"] = statistics.median(v)


# ---------------------------------------------------------------- report


def ratios(r: dict) -> None:
    def ratio(a, b):
        return r[a] / r[b] if r.get(a) is not None and r.get(b) else None

    # headline: qlink_netcdf in DataFusion (qlink.Session) vs xarray-sql in
    # DataFusion, on the chunked netCDF-4 file
    r["netcdf_scan_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc4_scan_ms", "session_nc4_scan_ms")
    r["netcdf_filtered_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc4_filtered_ms", "session_nc4_filtered_ms")
    # > 1: the netCDF-4 file is slower to scan than the same data as Zarr
    r["netcdf_vs_zarr_scan_ratio"] = ratio("session_nc4_scan_ms", "session_zarr_scan_ms")
    r["netcdf_vs_zarr_filtered_ratio"] = ratio("session_nc4_filtered_ms", "session_zarr_filtered_ms")
    for kind in FILES:
        for q in QUERIES:
            for route in ("session", "duckdb"):
                r[f"{route}_{kind}_{q}_speedup_vs_xarray_sql"] = ratio(f"xarray_sql_{kind}_{q}_ms",
                                                                       f"{route}_{kind}_{q}_ms")
                r[f"{route}_{kind}_{q}_speedup_vs_pandas"] = ratio(f"pandas_{kind}_{q}_ms", f"{route}_{kind}_{q}_ms")
        r[f"duckdb_{kind}_vs_zarr_scan_ratio"] = ratio(f"duckdb_{kind}_scan_ms", "duckdb_zarr_scan_ms")
    r["session_nc3_vs_zarr_scan_ratio"] = ratio("session_nc3_scan_ms", "session_zarr_scan_ms")
    # cold: a fresh process per call opens the file, registers it and
    # queries (HDF5's chunk cache empty)
    r["netcdf_cold_scan_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc4_scan_cold_ms", "session_nc4_scan_cold_ms")
    r["netcdf_cold_filtered_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc4_filtered_cold_ms",
                                                           "session_nc4_filtered_cold_ms")
    r["netcdf3_cold_scan_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc3_scan_cold_ms", "session_nc3_scan_cold_ms")
    r["netcdf3_cold_filtered_speedup_vs_xarray_sql"] = ratio("xarray_sql_nc3_filtered_cold_ms",
                                                            "session_nc3_filtered_cold_ms")
    r["netcdf_vs_zarr_cold_scan_ratio"] = ratio("session_nc4_scan_cold_ms", "session_zarr_scan_cold_ms")


def print_tables(r: dict) -> None:
    fmt = ffi.fmt
    print(f"\nERA5-like, {r['rows']:,} rows ({r['days']} days x 181 x 360), t2m + tp float32: median ms "
          f"of {r['reps']} rounds")
    cols = [("qlink DuckDB", "duckdb"), ("qlink DataFusion", "session"), ("xarray-sql", "xarray_sql"),
            ("xarray+pandas", "pandas")]
    print(f"{'data / query':22}" + "".join(f"{c:>17}" for c, _ in cols)
          + f"{'x xarray-sql (DF)':>19}{'x xarray-sql (DuckDB)':>23}")
    for kind, label in (("nc4", "netCDF-4 zlib"), ("nc3", "netCDF-3"), ("zarr", "Zarr v3 zstd")):
        for q in QUERIES:
            vals = [r.get(f"{route}_{kind}_{q}_ms") for _, route in cols]
            sp = [r.get(f"session_{kind}_{q}_speedup_vs_xarray_sql"), r.get(f"duckdb_{kind}_{q}_speedup_vs_xarray_sql")]
            print(f"{label + ' ' + q:22}" + "".join(f"{fmt(v, '.1f'):>17}" for v in vals)
                  + f"{fmt(sp[0], '.1f'):>19}{fmt(sp[1], '.1f'):>23}")
    print("\ncold (a fresh process per call: open, register, query; a new qlink.Session, or xr.open_dataset "
          "and an xarray-sql Context): median ms")
    print(f"{'data / query':22}{'qlink DataFusion':>17}{'xarray-sql':>17}{'x xarray-sql':>14}")
    for kind, label in (("nc4", "netCDF-4 zlib"), ("nc3", "netCDF-3"), ("zarr", "Zarr v3 zstd")):
        for q in QUERIES:
            a, b = r.get(f"session_{kind}_{q}_cold_ms"), r.get(f"xarray_sql_{kind}_{q}_cold_ms")
            x = b / a if a and b else None
            print(f"{label + ' ' + q:22}{fmt(a, '.1f'):>17}{fmt(b, '.1f'):>17}{fmt(x, '.1f'):>14}")
    print()
    for k in ("netcdf_scan_speedup_vs_xarray_sql", "netcdf_filtered_speedup_vs_xarray_sql", "netcdf_vs_zarr_scan_ratio",
              "netcdf_cold_scan_speedup_vs_xarray_sql", "netcdf_cold_filtered_speedup_vs_xarray_sql",
              "netcdf3_cold_scan_speedup_vs_xarray_sql", "netcdf3_cold_filtered_speedup_vs_xarray_sql",
              "netcdf_vs_zarr_cold_scan_ratio", "netcdf_vs_zarr_filtered_ratio", "session_nc3_vs_zarr_scan_ratio",
              "duckdb_nc4_vs_zarr_scan_ratio",
              "duckdb_nc3_vs_zarr_scan_ratio"):
        print(f"  {k} = {fmt(r.get(k), '.2f')}")
    for k, v in sorted(r.items()):
        if k.endswith("_missing"):
            print(f"MISSING {k[:-8]}: {v}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "netcdf.json"))
    ap.add_argument("--days", type=int, default=4)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--work", default=str(ROOT / "data" / "bench" / "netcdf"))
    ap.add_argument("--xsql-worker", action="store_true")
    ap.add_argument("--files", nargs="*")
    ap.add_argument("--want")
    ap.add_argument("--cold-worker", nargs=4, metavar=("ROUTE", "KIND", "QUERY", "PATH"))
    args = ap.parse_args()
    if args.xsql_worker:
        xsql_worker(args)
        return
    if args.cold_worker:
        if args.cold_worker[0] == "session":
            use_qlink()
        cold_worker(args)
        return
    use_qlink()
    p = make_data(Path(args.work), args.days)
    want = reference(p["nc4"])
    results = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
               "days": args.days, "reps": args.reps, "rows": want["scan"][2],
               "filtered_rows": want["filtered"][2],
               "bytes": {k: (sum(f.stat().st_size for f in v.rglob("*") if f.is_file()) if v.is_dir()
                             else v.stat().st_size) for k, v in p.items()},
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "load_average_before": os.getloadavg()}
    t0 = time.time()
    measure(args, p, want, results)
    run_xsql(args, p, want, results)
    measure_cold(args, p, want, results)
    results["load_average_after"] = os.getloadavg()
    ratios(results)
    results["seconds"] = time.time() - t0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print_tables(results)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
