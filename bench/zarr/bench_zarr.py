#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""qlink_zarr in the DataFusion host vs xarray-sql 0.6.0 vs xarray + pandas,
on the same Zarr stores: a full scan and a filtered regional query each.

    bench_zarr.py --era5 STORE [--era5-blosc STORE] --etopo5 STORE --qlink BIN --plugin SO
                  [--out bench/results/zarr.json] [--png bench/results/zarr.png]
                  [--reps 3] [--baseline-reps 2]

Every case is one SQL text, run three ways:
  qlink       the `qlink sql --timing` command line with the table given as
              PLUGIN/table?path=STORE&table=T. Timed two ways: the query
              alone, as the CLI reports it (from SQL submission until the
              last batch is printed; the headline, on the same basis as
              xarray-sql's), and the wall time of the whole process
              (start-up, plugin load, store metadata, query, CSV output),
              reported beside it.
  xarray-sql  xarray_sql.Context().from_dataset(name, xr.open_zarr(STORE,
              chunks=None)) (the store's own chunks become the partitions),
              then ctx.sql(SQL).to_pandas(). Timed twice: the query alone
              (the headline; open and registration excluded, which favours
              xarray-sql) and open + register + query.
  pandas      xr.open_zarr(STORE).to_dataframe(), reset_index(), then a
              boolean filter and the aggregates in pandas (timed from open).
Best of --reps runs for qlink, of --baseline-reps for xarray-sql and of
--pandas-reps for pandas.
Every method's answer is checked against the others (counts exactly, floats
to a relative 1e-6: the sums are taken in different orders); a mismatch
fails the run. Prints a markdown table, writes JSON and a PNG plot.
"""
import argparse
import csv
import io
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
import warnings

import re

import numpy as np

ERA5_TABLE = "time_latitude_longitude"
ETOPO5_TABLE = "ETOPO05_Y_ETOPO05_X"
REL_TOL = 1e-6
# `qlink sql --timing` on stderr: the query's own wall and CPU seconds.
TIMING = re.compile(r"qlink: query elapsed ([0-9.]+) s, cpu ([0-9.]+) s")

# The filtered ERA5 query: a Europe/North-Africa box over ten days.
ERA5_BOX = {"lat": (30, 60), "lon": (0, 40), "t0": "2023-01-10 00:00:00", "t1": "2023-01-20 00:00:00"}
# ETOPO5: highest point in a Himalaya box.
ETOPO5_BOX = {"y": (27, 36), "x": (75, 95)}


def era5_cases(id_prefix="era5", label_prefix="ERA5-like"):
    """The ERA5 queries; a second store of the same data (--era5-blosc)
    gets its own ids and labels."""
    b = ERA5_BOX
    where_sql = (f"latitude BETWEEN {b['lat'][0]} AND {b['lat'][1]} "
                 f"AND longitude BETWEEN {b['lon'][0]} AND {b['lon'][1]} "
                 f"AND time >= TIMESTAMP '{b['t0']}' AND time < TIMESTAMP '{b['t1']}'")

    def scan_pandas(df):
        return [len(df), df["t2m"].astype("float64").sum(), df["tp"].astype("float64").sum(),
                df["t2m"].max(), df["tp"].max()]

    def filtered_pandas(df):
        import pandas as pd
        m = (df["latitude"].between(*b["lat"]) & df["longitude"].between(*b["lon"])
             & (df["time"] >= pd.Timestamp(b["t0"])) & (df["time"] < pd.Timestamp(b["t1"])))
        sel = df[m]
        return [len(sel), sel["t2m"].astype("float64").mean(), sel["tp"].astype("float64").sum(), sel["tp"].max()]

    return [
        {"id": f"{id_prefix}_scan", "kind": "scan", "label": f"{label_prefix} full scan",
         "sql": "SELECT COUNT(*), SUM(t2m), SUM(tp), MAX(t2m), MAX(tp) FROM era5",
         "pandas": scan_pandas},
        {"id": f"{id_prefix}_filtered", "kind": "filtered", "label": f"{label_prefix} box x 10 days",
         "sql": f"SELECT COUNT(*), AVG(t2m), SUM(tp), MAX(tp) FROM era5 WHERE {where_sql}",
         "pandas": filtered_pandas},
    ]


def etopo5_cases():
    b = ETOPO5_BOX
    where_sql = (f'"ETOPO05_Y" BETWEEN {b["y"][0]} AND {b["y"][1]} '
                 f'AND "ETOPO05_X" BETWEEN {b["x"][0]} AND {b["x"][1]}')

    def scan_pandas(df):
        r = df["ROSE"].astype("float64")
        return [len(df), r.sum(), r.min(), r.max()]

    def filtered_pandas(df):
        m = df["ETOPO05_Y"].between(*b["y"]) & df["ETOPO05_X"].between(*b["x"])
        r = df.loc[m, "ROSE"].astype("float64")
        return [int(m.sum()), r.max(), r.mean()]

    return [
        {"id": "etopo5_scan", "kind": "scan", "label": "ETOPO5 full scan",
         "sql": 'SELECT COUNT(*), SUM("ROSE"), MIN("ROSE"), MAX("ROSE") FROM etopo5',
         "pandas": scan_pandas},
        {"id": "etopo5_filtered", "kind": "filtered", "label": "ETOPO5 highest point, Himalaya",
         "sql": f'SELECT COUNT(*), MAX("ROSE"), AVG("ROSE") FROM etopo5 WHERE {where_sql}',
         "pandas": filtered_pandas},
    ]


# ---------------------------------------------------------------- helpers

def open_store(path):
    import xarray as xr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # chunks=None: lazily indexed numpy-backed arrays, no dask; xarray-sql
        # then partitions by the store's own chunks.
        return xr.open_zarr(path, chunks=None)


def cpu_seconds():
    """CPU time (user + system) of this process and of its reaped children:
    on a shared machine it says what the work costs when the wall time is
    inflated by other jobs."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(n, fn):
    """Run fn n times; return (best wall seconds, best CPU seconds, last result)."""
    best, best_cpu, result = math.inf, math.inf, None
    for _ in range(n):
        c0, t0 = cpu_seconds(), time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, cpu_seconds() - c0)
    return best, best_cpu, result


def to_number(v):
    if v is None or v == "" or (isinstance(v, str) and v.upper() == "NULL"):
        return None
    if isinstance(v, (np.integer, int)):
        return int(v)
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    f = float(v)
    return None if math.isnan(f) else f  # SQL NULL comes back from pandas as NaN


def agree(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if not (x is None and y is None):
                return False
            continue
        if isinstance(x, int) and isinstance(y, int):
            if x != y:
                return False
        elif not math.isclose(float(x), float(y), rel_tol=REL_TOL, abs_tol=1e-12):
            return False
    return True


def rows_in(store_ds, table_vars):
    n = 1
    for d in store_ds[table_vars[0]].dims:
        n *= store_ds.sizes[d]
    return n


# ---------------------------------------------------------------- methods

class Qlink:
    """The qlink CLI, one process per query."""

    def __init__(self, binary, plugin):
        self.binary, self.plugin = binary, plugin

    def command(self, name, store, table, sql):
        spec = f"{name}={self.plugin}/table?path={os.path.abspath(store)}&table={table}"
        return [self.binary, "sql", "--timing", "--table", spec, sql, "--format", "csv"]

    def execute(self, name, store, table, sql):
        """The CSV output; the query's own wall and CPU seconds (--timing)
        are kept in self.last_query."""
        cmd = self.command(name, store, table, sql)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"qlink failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.strip()}")
        m = TIMING.search(p.stderr)
        if not m:
            raise RuntimeError(f"qlink printed no --timing line: {' '.join(cmd)}\n{p.stderr.strip()}")
        self.last_query = (float(m.group(1)), float(m.group(2)))
        return p.stdout

    def run(self, name, store, table, sql):
        """The answer row; the query's own wall and CPU seconds (--timing) are
        kept in self.last_query."""
        out = self.execute(name, store, table, sql)
        rows = list(csv.reader(io.StringIO(out)))
        rows = [r for r in rows if r]
        if len(rows) != 2:
            raise RuntimeError(f"qlink: expected a header and one row, got:\n{out[:2000]}")
        return [to_number(v) for v in rows[1]]

    def best_of(self, n, name, store, table, sql):
        """n runs: (best query wall s, best query CPU s, best process wall s,
        best process CPU s, last answer)."""
        q, qc, w, wc, result = math.inf, math.inf, math.inf, math.inf, None
        for _ in range(n):
            c0, t0 = cpu_seconds(), time.perf_counter()
            result = self.run(name, store, table, sql)
            w = min(w, time.perf_counter() - t0)
            wc = min(wc, cpu_seconds() - c0)
            q, qc = min(q, self.last_query[0]), min(qc, self.last_query[1])
        return q, qc, w, wc, result


class XarraySql:
    def __init__(self, name, store):
        self.name, self.store = name, store

    def register(self):
        import xarray_sql as xs
        ctx = xs.Context()
        ctx.from_dataset(self.name, open_store(self.store))
        return ctx

    @staticmethod
    def query(ctx, sql):
        df = ctx.sql(sql).to_pandas()
        # column by column: a row of mixed dtypes would upcast counts to float
        return [to_number(df[c].iloc[0]) for c in df.columns]


def pandas_run(store, fn):
    ds = open_store(store)
    df = ds.to_dataframe().reset_index()
    return [to_number(v) for v in fn(df)]


# ---------------------------------------------------------------- main

def bench_store(name, store, table, cases, qlink, reps, baseline_reps, pandas_reps, log):
    ds = open_store(store)
    data_vars = list(ds.data_vars)
    n_rows = rows_in(ds, data_vars)
    log(f"{name}: {store} ({n_rows:,} rows, {', '.join(data_vars)})")
    xsql = XarraySql(name, store)
    t0 = time.perf_counter()
    ctx = xsql.register()
    register_s = time.perf_counter() - t0
    startup = None
    if qlink is not None:
        # Process start, plugin load and store metadata, with no data read.
        startup = best_of(reps, lambda: qlink.run(name, store, table, "SELECT 1"))[0]
        log(f"  qlink start-up (SELECT 1 with the table registered): {startup:.3f} s")
    out = []
    for case in cases:
        sql = case["sql"]
        r = {"id": case["id"], "kind": case["kind"], "label": case["label"], "store": store,
             "sql": sql, "table_rows": n_rows}
        if qlink is not None:
            # qlink_s / qlink_cpu_s: the query alone (--timing), as xarray_sql_s is;
            # qlink_process_*: the whole `qlink sql` process
            (r["qlink_s"], r["qlink_cpu_s"], r["qlink_process_s"], r["qlink_process_cpu_s"],
             r["qlink_result"]) = qlink.best_of(reps, name, store, table, sql)
            r["qlink_startup_s"] = startup
        r["xarray_sql_s"], r["xarray_sql_cpu_s"], r["xarray_sql_result"] = best_of(baseline_reps, lambda: XarraySql.query(ctx, sql))
        r["xarray_sql_open_register_query_s"] = register_s + r["xarray_sql_s"]
        r["pandas_s"], r["pandas_cpu_s"], r["pandas_result"] = best_of(pandas_reps, lambda: pandas_run(store, case["pandas"]))
        ref = r["xarray_sql_result"]
        r["agree"] = {"pandas_vs_xarray_sql": agree(r["pandas_result"], ref)}
        if qlink is not None:
            r["agree"]["qlink_vs_xarray_sql"] = agree(r["qlink_result"], ref)
        for key in ("qlink", "xarray_sql", "pandas"):
            if f"{key}_s" in r:
                r[f"{key}_rows_per_s"] = n_rows / r[f"{key}_s"]
        if qlink is not None:
            r["qlink_process_rows_per_s"] = n_rows / r["qlink_process_s"]
            r["ratio_vs_xarray_sql"] = r["xarray_sql_s"] / r["qlink_s"]
            r["ratio_vs_pandas"] = r["pandas_s"] / r["qlink_process_s"]  # both from nothing
            r["cpu_ratio_vs_xarray_sql"] = r["xarray_sql_cpu_s"] / max(r["qlink_cpu_s"], 1e-9)
            # whole process against xarray-sql's open + register + query (both from nothing)
            r["process_ratio_vs_xarray_sql_query"] = r["xarray_sql_s"] / r["qlink_process_s"]
            r["process_ratio_vs_xarray_sql_open_register_query"] = (
                r["xarray_sql_open_register_query_s"] / r["qlink_process_s"])
            r["process_cpu_ratio_vs_xarray_sql"] = r["xarray_sql_cpu_s"] / max(r["qlink_process_cpu_s"], 1e-9)
        log(f"  {case['label']}: " + ", ".join(
            f"{k} {r[k + '_s']:.3f} s" for k in ("qlink", "xarray_sql", "pandas") if k + "_s" in r)
            + f"; agree {r['agree']}")
        out.append(r)
    return out


def fmt_rate(v):
    return f"{v / 1e6:,.1f} M rows/s"


def markdown(results):
    lines = ["| case | qlink_zarr query | xarray-sql 0.6.0 query | vs xarray-sql | qlink_zarr whole process "
             "| vs xarray-sql query (process) | xarray + pandas (from open) | vs pandas (process) | agree |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        has = "qlink_s" in r
        if r["kind"] == "scan":
            cells = [fmt_rate(r["qlink_rows_per_s"]) if has else "n/a", fmt_rate(r["xarray_sql_rows_per_s"])]
            proc = fmt_rate(r["qlink_process_rows_per_s"]) if has else "n/a"
            pand = fmt_rate(r["pandas_rows_per_s"])
        else:
            cells = [f"{r['qlink_s']:.3f} s" if has else "n/a", f"{r['xarray_sql_s']:.3f} s"]
            proc = f"{r['qlink_process_s']:.3f} s" if has else "n/a"
            pand = f"{r['pandas_s']:.3f} s"

        def x(k):
            return f"{r[k]:.1f}x" if k in r else "n/a"

        ok = "yes" if all(r["agree"].values()) else "NO"
        lines.append(f"| {r['label']} ({r['table_rows'] / 1e6:.1f} M rows) | " + " | ".join(
            cells + [x("ratio_vs_xarray_sql"), proc, x("process_ratio_vs_xarray_sql_query"), pand,
                     x("ratio_vs_pandas")]) + f" | {ok} |")
    lines += ["", "CPU seconds (user + system, all threads; best run) -- robust to other jobs on the machine:", "",
              "| case | qlink_zarr query | xarray-sql query | xarray-sql / qlink | qlink_zarr whole process "
              "| xarray-sql / qlink process | xarray + pandas |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        q, qp = r.get("qlink_cpu_s"), r.get("qlink_process_cpu_s")

        def f(v):
            return f"{v:.3f}" if v is not None else "n/a"

        lines.append(f"| {r['label']} | {f(q)} | {r['xarray_sql_cpu_s']:.3f} | "
                     + (f"{r['xarray_sql_cpu_s'] / q:.1f}x" if q else "n/a") + f" | {f(qp)} | "
                     + (f"{r['xarray_sql_cpu_s'] / qp:.1f}x" if qp else "n/a") + f" | {r['pandas_cpu_s']:.3f} |")
    return "\n".join(lines)


def plot(results, path, subtitle):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    methods = [("qlink", "qlink_zarr (DataFusion)", "#1b7837"), ("xarray_sql", "xarray-sql 0.6.0", "#762a83"),
               ("pandas", "xarray + pandas", "#999999")]
    scans = [r for r in results if r["kind"] == "scan"]
    filtered = [r for r in results if r["kind"] == "filtered"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, group, metric, title, ylabel in (
            (axes[0], scans, "rows_per_s", "Full scan (higher is better)", "million rows / s"),
            (axes[1], filtered, "s", "Filtered regional query (lower is better)", "seconds")):
        width = 0.8 / len(methods)
        for i, (key, label, color) in enumerate(methods):
            xs, ys = [], []
            for j, r in enumerate(group):
                v = r.get(f"{key}_{metric}")
                if v is not None:
                    xs.append(j + (i - 1) * width)
                    ys.append(v / 1e6 if metric == "rows_per_s" else v)
            bars = ax.bar(xs, ys, width, label=label, color=color)
            ax.bar_label(bars, fmt="%.3g", fontsize=8)
        ax.set_xticks(range(len(group)), [
            r["label"] + (f"\nqlink {r['ratio_vs_xarray_sql']:.1f}x xarray-sql" if "ratio_vs_xarray_sql" in r else "")
            for r in group], fontsize=9)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_title(title)
        ax.set_ylabel(ylabel)
    axes[0].legend(fontsize=8)
    fig.suptitle("qlink_zarr vs xarray-sql vs xarray+pandas on the same Zarr stores (best of N)\n" + subtitle,
                 fontsize=11)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--era5", required=True)
    parser.add_argument("--era5-blosc", help="the same ERA5-like data as zarr-python 2 wrote it by default "
                        "(v2, Blosc lz4 + shuffle): extra rows beside the zstd ones")
    parser.add_argument("--etopo5", required=True)
    parser.add_argument("--qlink", help="the qlink CLI binary")
    parser.add_argument("--plugin", help="qlink_zarr.so")
    parser.add_argument("--out", default="bench/results/zarr.json")
    parser.add_argument("--png", default="bench/results/zarr.png")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline-reps", type=int, default=2)
    parser.add_argument("--pandas-reps", type=int, default=1,
                        help="xarray + pandas is the slowest by far and not the headline")
    args = parser.parse_args(argv)

    qlink = None
    if args.qlink and args.plugin:
        for what, path in (("qlink CLI", args.qlink), ("qlink_zarr plugin", args.plugin)):
            if not os.path.exists(path):
                print(f"bench_zarr: {what} not found at {path}", file=sys.stderr)
                return 2
        qlink = Qlink(args.qlink, os.path.abspath(args.plugin))
    else:
        print("bench_zarr: no --qlink/--plugin given: measuring the baselines only", file=sys.stderr)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    import datafusion
    import pandas
    import xarray
    import xarray_sql
    import zarr

    log(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = []
    results += bench_store("era5", args.era5, ERA5_TABLE, era5_cases(), qlink, args.reps, args.baseline_reps,
                           args.pandas_reps, log)
    if args.era5_blosc:
        results += bench_store("era5", args.era5_blosc, ERA5_TABLE,
                               era5_cases("era5_blosc", "ERA5-like v2 Blosc-lz4"), qlink, args.reps,
                               args.baseline_reps, args.pandas_reps, log)
    results += bench_store("etopo5", args.etopo5, ETOPO5_TABLE, etopo5_cases(), qlink, args.reps, args.baseline_reps,
                           args.pandas_reps, log)

    by_id = {r["id"]: r for r in results}
    scan, filt = by_id["era5_scan"], by_id["era5_filtered"]
    summary = {
        "scan_rows_per_s": scan.get("qlink_rows_per_s"),
        "xarray_sql_scan_rows_per_s": scan["xarray_sql_rows_per_s"],
        "filtered_query_s": filt.get("qlink_s"),
        "xarray_sql_filtered_query_s": filt["xarray_sql_s"],
        "pandas_scan_rows_per_s": scan["pandas_rows_per_s"],
        "pandas_filtered_query_s": filt["pandas_s"],
        "scan_ratio_vs_xarray_sql": scan.get("ratio_vs_xarray_sql"),
        "filtered_ratio_vs_xarray_sql": filt.get("ratio_vs_xarray_sql"),
        "qlink_startup_s": scan.get("qlink_startup_s"),
        # the whole `qlink sql` process (start-up, plugin load, store metadata, query, output)
        "process_scan_rows_per_s": scan.get("qlink_process_rows_per_s"),
        "process_filtered_query_s": filt.get("qlink_process_s"),
        "process_scan_ratio_vs_xarray_sql": scan.get("process_ratio_vs_xarray_sql_query"),
        "process_filtered_ratio_vs_xarray_sql": filt.get("process_ratio_vs_xarray_sql_query"),
        "process_scan_cpu_ratio_vs_xarray_sql": scan.get("process_cpu_ratio_vs_xarray_sql"),
        "process_filtered_cpu_ratio_vs_xarray_sql": filt.get("process_cpu_ratio_vs_xarray_sql"),
        "scan_cpu_ratio_vs_xarray_sql": scan.get("cpu_ratio_vs_xarray_sql"),
        "filtered_cpu_ratio_vs_xarray_sql": filt.get("cpu_ratio_vs_xarray_sql"),
    }
    if "era5_blosc_scan" in by_id:
        # the same data, zarr v2 + Blosc lz4 (zarr-python 2's defaults), beside the zstd figures above
        bscan, bfilt = by_id["era5_blosc_scan"], by_id["era5_blosc_filtered"]
        summary.update({
            "blosc_scan_rows_per_s": bscan.get("qlink_rows_per_s"),
            "xarray_sql_blosc_scan_rows_per_s": bscan["xarray_sql_rows_per_s"],
            "blosc_filtered_query_s": bfilt.get("qlink_s"),
            "xarray_sql_blosc_filtered_query_s": bfilt["xarray_sql_s"],
            "blosc_scan_ratio_vs_xarray_sql": bscan.get("ratio_vs_xarray_sql"),
            "blosc_filtered_ratio_vs_xarray_sql": bfilt.get("ratio_vs_xarray_sql"),
            "blosc_scan_cpu_ratio_vs_xarray_sql": bscan.get("cpu_ratio_vs_xarray_sql"),
            "blosc_filtered_cpu_ratio_vs_xarray_sql": bfilt.get("cpu_ratio_vs_xarray_sql"),
            "process_blosc_scan_rows_per_s": bscan.get("qlink_process_rows_per_s"),
            "process_blosc_filtered_query_s": bfilt.get("qlink_process_s"),
            "process_blosc_scan_ratio_vs_xarray_sql": bscan.get("process_ratio_vs_xarray_sql_query"),
            "process_blosc_filtered_ratio_vs_xarray_sql": bfilt.get("process_ratio_vs_xarray_sql_query"),
        })
    for case in results:
        for k in ("qlink_result", "xarray_sql_result", "pandas_result"):
            if k in case:
                case[k] = [None if v is None else (v if isinstance(v, int) else float(v)) for v in case[k]]
    doc = dict(summary)
    doc["all_agree"] = all(all(r["agree"].values()) for r in results)
    doc["target"] = "qlink_zarr >= 5x xarray-sql on the ERA5-like scan (rows/s) and filtered query (s); 10x is the aim"
    doc["meets_5x"] = (summary["scan_ratio_vs_xarray_sql"] or 0) >= 5 and (summary["filtered_ratio_vs_xarray_sql"] or 0) >= 5
    if "blosc_scan_ratio_vs_xarray_sql" in summary:
        doc["meets_5x_blosc"] = ((summary["blosc_scan_ratio_vs_xarray_sql"] or 0) >= 5
                                 and (summary["blosc_filtered_ratio_vs_xarray_sql"] or 0) >= 5)
    doc["method"] = {
        "qlink": "the query alone, as `qlink sql --timing ... --format csv` reports it: wall (and process CPU) "
                 "from SQL submission until the last batch is printed, after start-up, plugin load and table "
                 "registration (store metadata), like xarray-sql's query alone; best of %d. The whole process "
                 "(start-up included) is reported beside it as qlink_process_s / process_* keys" % args.reps,
        "xarray_sql": "ctx.sql(SQL).to_pandas() after Context.from_dataset on xr.open_zarr(store, chunks=None), "
                      "best of %d; open+register time reported separately" % args.baseline_reps,
        "pandas": "xr.open_zarr(store).to_dataframe().reset_index() then boolean filter + aggregates, best of %d"
                  % args.pandas_reps,
    }
    doc["versions"] = {"python": platform.python_version(), "xarray_sql": xarray_sql.__version__ if hasattr(xarray_sql, "__version__") else "0.6.0",
                       "datafusion_python": datafusion.__version__, "xarray": xarray.__version__,
                       "pandas": pandas.__version__, "zarr": zarr.__version__}
    try:
        doc["versions"]["qlink_git_commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    doc["machine"] = {"cpus": os.cpu_count(), "platform": platform.platform(),
                      "load_average_1_5_15": list(os.getloadavg())}
    doc["cases"] = [{k: v for k, v in r.items() if k != "pandas"} for r in results]

    table = markdown(results)
    print(table)
    print()
    if qlink is not None:
        print(f"ERA5-like scan: qlink_zarr {summary['scan_ratio_vs_xarray_sql']:.1f}x xarray-sql's rows/s; "
              f"filtered query: {summary['filtered_ratio_vs_xarray_sql']:.1f}x faster "
              f"(target 5x, aim 10x: {'met' if doc['meets_5x'] else 'NOT met'})")
        if "meets_5x_blosc" in doc:
            print(f"ERA5-like v2 Blosc-lz4 store: scan {summary['blosc_scan_ratio_vs_xarray_sql']:.1f}x xarray-sql's "
                  f"rows/s; filtered query: {summary['blosc_filtered_ratio_vs_xarray_sql']:.1f}x faster "
                  f"(target 5x: {'met' if doc['meets_5x_blosc'] else 'NOT met'})")
    if qlink is not None:
        print(f"whole qlink process against xarray-sql's query alone: scan "
              f"{summary['process_scan_ratio_vs_xarray_sql']:.1f}x, filtered "
              f"{summary['process_filtered_ratio_vs_xarray_sql']:.1f}x")
        print("qlink headline times are the query alone (--timing), as xarray-sql's; start-up (process, plugin "
              "load, store metadata; measured as SELECT 1) is " + ", ".join(
                  f"{r['qlink_startup_s']:.3f} s for {r['label']}" for r in results if r["kind"] == "scan"))
    print(f"results agree across methods: {'yes' if doc['all_agree'] else 'NO'}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    plot(results, args.png, f"{os.cpu_count()} CPUs, load average {doc['machine']['load_average_1_5_15'][0]:.1f} "
         "at the end; qlink and xarray-sql: the query alone")
    print(f"wrote {args.out} and {args.png}")
    return 0 if doc["all_agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
