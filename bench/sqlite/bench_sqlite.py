#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The SQLite host against SQLite itself (apsw, one process, warm runs).

    bench_sqlite.py OUT.json [--rows 1000000] [--store DIR] [--repeat 5]

1. SELECT sum(value) over the sample plugin's `series` table (--rows rows)
   through the qlink virtual table, and over the same rows copied into a
   native SQLite table: sqlite_scan_ratio_native = qlink / native (best of
   --repeat runs each).
2. A filtered query over an ERA5-like qlink_zarr store (bench/zarr/
   make_era5.py, 3 days hourly on a 1-degree grid, one chunk a day), with
   the filters pushed down (time and latitude reach the scan through
   xBestIndex) and without (the same filters on +column, which SQLite does
   not offer to a virtual table): time, and bytes read by the process
   (/proc/self/io rchar: what the store's reads returned).

Prints a table and writes OUT.json.
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import qlink.sqlite as qsql  # noqa: E402


def rchar() -> int:
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("rchar:"):
                return int(line.split()[1])
    return 0


def best(db, sql, repeat):
    times, answer = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        answer = db.execute(sql).fetchall()
        times.append(time.perf_counter() - t)
    return min(times), answer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--store", default=str(ROOT / "build" / "bench-sqlite" / "era5.zarr"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    db = qsql.connect()
    db.execute(f"CREATE VIRTUAL TABLE s USING qlink('qlink_sample/series?start=0&stop={a.rows}&step=1')")
    db.execute("CREATE TABLE n(value INTEGER, square INTEGER, parity TEXT)")
    db.execute("INSERT INTO n SELECT value, square, parity FROM s")
    t_qlink, r_qlink = best(db, "SELECT sum(value) FROM s", a.repeat)
    t_native, r_native = best(db, "SELECT sum(value) FROM n", a.repeat)
    if r_qlink != r_native:
        sys.exit(f"bench_sqlite: answers differ: qlink {r_qlink}, native {r_native}")

    subprocess.run([sys.executable, str(ROOT / "bench" / "zarr" / "make_era5.py"), a.store, "--days", "3"], check=True)
    tables = [r[0] for r in db.execute("SELECT DISTINCT table_name FROM qlink_tables(?)",
                                       (f"qlink_zarr/store?path={a.store}",)).fetchall()]
    table = next(t for t in tables if "latitude" in t and "time" in t)
    db.execute("SELECT qlink_attach('era5', ?)", (f"qlink_zarr/store?path={a.store}",)).fetchall()
    where = "{c}time BETWEEN '2023-01-02' AND '2023-01-02 23:00:00' AND {c}latitude BETWEEN 30 AND 60"
    q = f'SELECT count(*), round(avg(t2m), 4) FROM era5."{table}" WHERE ' + where
    results = {}
    for name, prefix in (("pushdown", ""), ("no_pushdown", "+")):
        sql = q.format(c=prefix)
        db.execute(sql).fetchall()  # warm the page cache
        before = rchar()
        t0 = time.perf_counter()
        answer = db.execute(sql).fetchall()
        elapsed = time.perf_counter() - t0
        results[name] = {"seconds": elapsed, "bytes_read": rchar() - before, "answer": list(answer[0]),
                         "plan": db.execute("EXPLAIN QUERY PLAN " + sql).fetchall()[0][3]}
    if results["pushdown"]["answer"] != results["no_pushdown"]["answer"]:
        sys.exit(f"bench_sqlite: pushdown changed the answer: {results}")

    ratio = t_qlink / t_native
    out = {
        "rows": a.rows,
        "sqlite_version": db.execute("SELECT sqlite_version()").fetchall()[0][0],
        "sum_value_qlink_s": t_qlink,
        "sum_value_native_s": t_native,
        "sqlite_scan_ratio_native": ratio,
        "zarr_store": a.store,
        "zarr_table": table,
        "zarr_query": q.format(c=""),
        "zarr_pushdown": results["pushdown"],
        "zarr_no_pushdown": results["no_pushdown"],
    }
    print(f"{'measure':<44}{'qlink':>14}{'native/none':>14}")
    print(f"{'SELECT sum(value), series, %d rows (s)' % a.rows:<44}{t_qlink:>14.4f}{t_native:>14.4f}")
    print(f"{'  ratio qlink / native':<44}{ratio:>14.3f}")
    p, n = results["pushdown"], results["no_pushdown"]
    print(f"{'zarr filtered query, pushdown vs none (s)':<44}{p['seconds']:>14.4f}{n['seconds']:>14.4f}")
    print(f"{'  bytes read':<44}{p['bytes_read']:>14}{n['bytes_read']:>14}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
