# SPDX-License-Identifier: Apache-2.0
"""make bench-duckdb: the qlink DuckDB extension against native DuckDB and
against qlink_zarr in DataFusion. One run; prints a table and writes
bench/results/duckdb.json.

(1) crossing cost: SELECT sum(value) over the sample series table (10 M
    rows) through qlink_scan vs the same rows in a native DuckDB table:
    qlink_scan_ratio_native = qlink time / native time. Beside it, min/max
    over both (qlink_scan_minmax_ratio_native) and the sum over DuckDB's own
    range() table function (qlink_scan_ratio_duckdb_range): DuckDB sums a
    native table with sum_no_overflow, chosen from column statistics that a
    C API table function cannot provide.
(2) qlink_zarr in DuckDB vs in DataFusion (the qlink CLI, --timing) on the
    ERA5-like store of make bench-zarr: a full scan and the filtered box
    query; duckdb_vs_datafusion_scan_ratio = DuckDB time / DataFusion time
    of the full scan (null, with the reason, when the CLI is not built).
    For the box query, the bytes each engine read (DuckDB: this process's
    rchar; DataFusion: the scan's bytes_read metric) and the rows its scan
    returned: DuckDB's stable C API has no filter pushdown.
    The V2 build (qlink_v2.duckdb_extension, DuckDB's unstable C API V2,
    when the running duckdb is the version it is built for) pushes the box
    filters into qlink_zarr: the same box query through it, its bytes and
    the rows its scan returned (EXPLAIN ANALYZE), and its time over
    DataFusion's (duckdb_v2_vs_datafusion_box_ratio) and over V1's.
(3) the same table as Parquet read by DuckDB natively: the reference row.
Times are the best of --repeat runs (3 x --repeat for the series queries),
wall clock, in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))


def best(con, sql, repeat):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = con.execute(sql).fetchall()
        times.append(time.perf_counter() - t)
    return min(times), result


def datafusion_time(cli, plugin, store, table, sql, repeat):
    times = []
    for _ in range(repeat):
        out = subprocess.run([cli, "sql", "--timing", "--format", "csv", "--schema", f"era5={plugin}/store?path={store}",
                              "--", sql.replace("{t}", f"era5.{table}")], capture_output=True, text=True, check=True)
        m = re.search(r"query elapsed ([0-9.]+) s", out.stderr)
        times.append(float(m.group(1)))
    return min(times)


def duckdb_bytes_read(con, sql):
    """Bytes this process read (rchar of /proc/self/io: qlink_zarr reads its
    chunks with pread) while DuckDB ran `sql` once."""
    def rchar():
        return int(next(line for line in Path("/proc/self/io").read_text().splitlines()
                        if line.startswith("rchar:")).split()[1])
    before = rchar()
    con.execute(sql).fetchall()
    return rchar() - before


def count_of(text):
    """A DataFusion metric count ("157.8 M", "945.6 K", "31") as a number."""
    num, _, unit = text.strip().partition(" ")
    return float(num) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9}[unit.strip()]


def datafusion_scan_metrics(cli, plugin, store, table, sql):
    """bytes_read and output_rows of the qlink_zarr scan, from EXPLAIN ANALYZE."""
    out = subprocess.run([cli, "explain", "--analyze", "--schema", f"era5={plugin}/store?path={store}", "--",
                          sql.replace("{t}", f"era5.{table}")], capture_output=True, text=True, check=True).stdout
    line = next(x for x in out.splitlines() if "ZarrScanExec" in x)
    get = lambda key: count_of(re.search(key + r"=([0-9.]+(?: [KMGB])?)", line).group(1))  # noqa: E731
    return get("bytes_read"), get("output_rows")


def scan_rows(con, sql):
    """Rows the QLINK_SCAN operator returned, from EXPLAIN ANALYZE."""
    profile = con.execute("EXPLAIN ANALYZE " + sql).fetchall()[0][1]
    rest = profile[profile.index("QLINK_SCAN"):]
    return int(re.search(r"([0-9,]+) rows", rest).group(1).replace(",", ""))


def v2_box(a, store, table, box, box_rows):
    """The box query through the V2 build: (seconds, bytes read, scan rows),
    or None with the reason."""
    ext = BUILD / "hosts" / "duckdb" / "qlink_v2.duckdb_extension"
    pinned = next((x.split("==")[1] for x in (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
                   if x.startswith("duckdb==")), None)
    if not ext.is_file():
        return None, f"the V2 build is not there ({ext})"
    if duckdb.__version__ != pinned:
        return None, f"the V2 build loads into duckdb {pinned} only, this is {duckdb.__version__}"
    con = duckdb.connect(config={"allow_unsigned_extensions": True, "threads": a.threads})
    con.execute(f"LOAD '{ext}'")
    src = f"qlink_scan('qlink_zarr/store?path={store}', \"table\" := '{table}')"
    t, r = best(con, box.format(t=src), a.repeat)
    assert r[0][0] == box_rows, (r, box_rows)
    return (t, duckdb_bytes_read(con, box.format(t=src)), scan_rows(con, box.format(t=src))), None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--era5", required=True)
    ap.add_argument("--out", default="bench/results/duckdb.json")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--qlink", default=os.environ.get("QLINK", ""))
    a = ap.parse_args(argv)
    os.environ["QLINK_PLUGIN_PATH"] = str(BUILD / "plugins")
    con = duckdb.connect(config={"allow_unsigned_extensions": True, "threads": a.threads})
    con.execute(f"LOAD '{BUILD / 'hosts' / 'duckdb' / 'qlink.duckdb_extension'}'")
    rows = []

    series = "qlink_scan('qlink_sample/series?stop=10000000')"
    con.execute(f"CREATE TABLE native_series AS SELECT * FROM {series}")
    # The series queries take tens of milliseconds: three times as many runs
    # steady their best on a shared machine.
    rs = 3 * a.repeat
    t_q, r_q = best(con, f"SELECT sum(value) FROM {series}", rs)
    t_n, r_n = best(con, "SELECT sum(value) FROM native_series", rs)
    assert r_q == r_n, (r_q, r_n)
    rows += [("series sum, qlink_scan", t_q), ("series sum, native table", t_n)]
    # Why the sum ratio stays above the crossing's own cost: DuckDB rewrites
    # sum(BIGINT) over a native table into sum_no_overflow from the column
    # statistics, which a C API table function cannot give it. min() has no
    # such rewrite, and DuckDB's own range() table function has no statistics
    # either: both show the crossing itself.
    no_overflow = "sum_no_overflow" in "\n".join(
        r[1] for r in con.execute("EXPLAIN SELECT sum(value) FROM native_series").fetchall())
    t_qmin, r_qmin = best(con, f"SELECT min(value), max(value) FROM {series}", rs)
    t_nmin, r_nmin = best(con, "SELECT min(value), max(value) FROM native_series", rs)
    assert r_qmin == r_nmin, (r_qmin, r_nmin)
    t_range, r_range = best(con, "SELECT sum(range) FROM range(10000000)", rs)
    assert r_range == r_q, (r_range, r_q)
    rows += [("series min/max, qlink_scan", t_qmin), ("series min/max, native table", t_nmin),
             ("series sum, DuckDB's range() table function", t_range)]

    store = str(Path(a.era5).resolve())
    plugin = str(BUILD / "plugins" / "qlink_zarr.so")
    tables = [t for (t,) in con.execute(f"SELECT * FROM qlink_tables('qlink_zarr/store?path={store}')").fetchall()]
    table = max(tables, key=lambda t: t.count("_"))  # the variables over every dimension
    con.execute(f"CALL qlink_attach('era5', 'qlink_zarr/store?path={store}')")
    full = "SELECT count(*), avg(t2m) FROM {t}"
    box = "SELECT count(*), avg(t2m) FROM {t} WHERE latitude BETWEEN 30 AND 60 AND longitude BETWEEN 0 AND 40"
    t_full, r_full = best(con, full.format(t=f"era5.{table}"), a.repeat)
    t_box, r_box = best(con, box.format(t=f"era5.{table}"), a.repeat)
    rows += [("zarr full scan, DuckDB", t_full), ("zarr box query, DuckDB", t_box)]

    parquet = ROOT / "data" / "bench" / (Path(store).name + ".parquet")
    if not parquet.exists():
        con.execute(f"COPY (SELECT * FROM era5.{table}) TO '{parquet}' (FORMAT parquet)")
    t_pfull, r_pfull = best(con, full.format(t=f"read_parquet('{parquet}')"), a.repeat)
    t_pbox, _ = best(con, box.format(t=f"read_parquet('{parquet}')"), a.repeat)
    assert r_pfull[0][0] == r_full[0][0]
    rows += [("Parquet full scan, DuckDB native", t_pfull), ("Parquet box query, DuckDB native", t_pbox)]

    # What each engine reads and receives for the box query: DuckDB's stable
    # C API has no filter pushdown, so the scan hands it every row.
    bytes_box_duckdb = duckdb_bytes_read(con, box.format(t=f"era5.{table}"))
    bytes_full_duckdb = duckdb_bytes_read(con, full.format(t=f"era5.{table}"))
    v2, v2_missing = v2_box(a, store, table, box, r_box[0][0])
    t_box_v2, bytes_box_v2, rows_box_v2 = v2 if v2 else (None, None, None)
    if v2:
        rows += [("zarr box query, DuckDB V2 build (filter pushdown)", t_box_v2)]
    ratio_df, reason = None, None
    t_dfull = t_dbox = bytes_box_df = rows_box_df = None
    if a.qlink and Path(a.qlink).is_file():
        t_dfull = datafusion_time(a.qlink, plugin, store, table, full, a.repeat)
        t_dbox = datafusion_time(a.qlink, plugin, store, table, box, a.repeat)
        bytes_box_df, rows_box_df = datafusion_scan_metrics(a.qlink, plugin, store, table, box)
        ratio_df = t_full / t_dfull
        rows += [("zarr full scan, DataFusion", t_dfull), ("zarr box query, DataFusion", t_dbox)]
    else:
        reason = f"the qlink CLI is not built ({a.qlink or 'QLINK unset'})"

    result = {
        "threads": a.threads, "repeat": a.repeat, "series_repeat": rs, "store": store, "table": table,
        "series_rows": 10_000_000,
        "qlink_scan_s": t_q, "native_s": t_n, "qlink_scan_ratio_native": t_q / t_n,
        "native_sum_uses_statistics": no_overflow,
        "qlink_scan_minmax_s": t_qmin, "native_minmax_s": t_nmin, "qlink_scan_minmax_ratio_native": t_qmin / t_nmin,
        "duckdb_range_sum_s": t_range, "qlink_scan_ratio_duckdb_range": t_q / t_range,
        "zarr_full_duckdb_s": t_full, "zarr_box_duckdb_s": t_box,
        "zarr_full_datafusion_s": t_dfull, "zarr_box_datafusion_s": t_dbox,
        "duckdb_vs_datafusion_scan_ratio": ratio_df, "duckdb_vs_datafusion_box_ratio":
            (t_box / t_dbox) if t_dbox else None,
        "datafusion_missing": reason,
        "parquet_full_duckdb_s": t_pfull, "parquet_box_duckdb_s": t_pbox,
        "zarr_rows": r_full[0][0], "box_rows": r_box[0][0],
        "zarr_box_duckdb_bytes_read": bytes_box_duckdb, "zarr_full_duckdb_bytes_read": bytes_full_duckdb,
        "zarr_box_duckdb_scan_rows": r_full[0][0],
        "zarr_box_datafusion_bytes_read": bytes_box_df, "zarr_box_datafusion_scan_rows": rows_box_df,
        "zarr_box_duckdb_v2_s": t_box_v2, "zarr_box_duckdb_v2_bytes_read": bytes_box_v2,
        "zarr_box_duckdb_v2_scan_rows": rows_box_v2, "duckdb_v2_missing": v2_missing,
        "duckdb_v2_vs_v1_box_ratio": (t_box_v2 / t_box) if t_box_v2 else None,
        "duckdb_v2_vs_datafusion_box_ratio": (t_box_v2 / t_dbox) if (t_box_v2 and t_dbox) else None,
    }
    print("| query | seconds |\n|---|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.4f} |")
    print(f"\nqlink_scan_ratio_native = {result['qlink_scan_ratio_native']:.3f} (target <= 1.5; native sum "
          f"{'uses' if no_overflow else 'does not use'} the column statistics' sum_no_overflow)")
    print(f"qlink_scan_minmax_ratio_native = {result['qlink_scan_minmax_ratio_native']:.3f}, "
          f"qlink_scan_ratio_duckdb_range = {result['qlink_scan_ratio_duckdb_range']:.3f}")
    print(f"duckdb_vs_datafusion_scan_ratio = {ratio_df if ratio_df is None else round(ratio_df, 3)}"
          + (f" ({reason})" if reason else " (target <= 1.2)"))
    if t_dbox:
        print(f"box query: DuckDB / DataFusion = {t_box / t_dbox:.3f}; bytes read {bytes_box_duckdb / 1e6:.1f} MB vs "
              f"{bytes_box_df / 1e6:.1f} MB; rows out of the scan {r_full[0][0]:,} vs {int(rows_box_df):,} "
              f"(box rows {r_box[0][0]:,})")
    if v2:
        vs_df = f", {t_box_v2 / t_dbox:.3f} of DataFusion's (target <= 1.2)" if t_dbox else ""
        print(f"box query, V2 build: {t_box_v2:.4f} s ({t_box_v2 / t_box:.3f} of V1's{vs_df}), bytes read "
              f"{bytes_box_v2 / 1e6:.1f} MB, rows out of the scan {rows_box_v2:,}")
    else:
        print(f"box query, V2 build: not measured ({v2_missing})")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    sys.exit(main())
