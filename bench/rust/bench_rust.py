# SPDX-License-Identifier: Apache-2.0
"""bench_rust.py: `make bench-rust` in one run (bench/rust/README.md).

A Rust-exported plugin (qlink_memtable: a DataFusion `MemTable` and a
`ScalarUDF`, exported with qlink-plugin) against the same data as each
engine's own table, side by side, ratios printed and written to
bench/results/rust.json:

- DataFusion (bench_rust, Rust): the plugin's table and UDF through the
  DataFusion host vs the same objects registered natively;
- DuckDB and SQLite: `qlink_scan` / a qlink virtual table vs a native table
  holding the same rows (copied from the plugin's table);
- datafusion-python: the plugin's table through qlink's capsules vs the same
  rows as datafusion-python's own in-memory table, and, when bench-ffi's
  reference module is built, vs the same rows behind datafusion-ffi's
  `FFI_TableProvider` (`rust_vs_datafusion_ffi_speedup`).

Queries: every row of 1,040 (`SELECT *`), and `sum(x)` over 10 M rows.
Times are medians of interleaved repetitions, in milliseconds.

    bench_rust.py PLUGIN_DIR DATAFUSION.json OUT.json [--reps N]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

SIZES = {"scan_1040_rows": (1040, "SELECT * FROM {t}"), "sum_10m_rows": (10_000_000, "SELECT sum(x) FROM {t}")}


def pair(run_a, run_b, reps: int) -> tuple[float, float]:
    for _ in range(reps // 5 + 3):
        run_a()
        run_b()
    ta, tb = [], []
    for i in range(reps):
        order = [(run_a, ta), (run_b, tb)] if i % 2 == 0 else [(run_b, tb), (run_a, ta)]
        for f, out in order:
            t = time.perf_counter()
            f()
            out.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ta), statistics.median(tb)


def spec(n: int) -> str:
    return f"qlink_memtable/rows?n={n}"


def duckdb_rows(plugin_dir: str, reps: int) -> dict:
    import qlink.duckdb

    con = qlink.duckdb.connect(plugin_dirs=[plugin_dir])
    out = {}
    for name, (n, sql) in SIZES.items():
        con.execute(f"CREATE VIEW p_{n} AS SELECT * FROM qlink_scan('{spec(n)}')")
        con.execute(f"CREATE TABLE n_{n} AS SELECT * FROM p_{n}")
        a = sql.format(t=f"n_{n}")
        b = sql.format(t=f"p_{n}")
        assert con.execute(a).fetchall() == con.execute(b).fetchall() or name.startswith("scan")
        out[name] = pair(lambda: con.execute(a).fetchall(), lambda: con.execute(b).fetchall(), reps)
    return out


def sqlite_rows(plugin_dir: str, reps: int) -> dict:
    import qlink.sqlite

    db = qlink.sqlite.connect(plugin_dirs=[plugin_dir])
    out = {}
    for name, (n, sql) in SIZES.items():
        db.execute(f"CREATE VIRTUAL TABLE p_{n} USING qlink('{spec(n)}')")
        db.execute(f"CREATE TABLE n_{n} AS SELECT * FROM p_{n}")
        a, b = sql.format(t=f"n_{n}"), sql.format(t=f"p_{n}")
        assert db.execute(a).fetchall() == db.execute(b).fetchall() or name.startswith("scan")
        out[name] = pair(lambda: db.execute(a).fetchall(), lambda: db.execute(b).fetchall(), max(reps // 4, 5))
    return out


def datafusion_python_rows(plugin_dir: str, reps: int) -> tuple[dict, dict | None, str | None]:
    import datafusion
    import qlink

    plugin = qlink.Plugin(f"{plugin_dir}/qlink_memtable.so")
    ctx = datafusion.SessionContext()
    native, ffi = {}, {}
    try:
        import qlink_ffi_ref
    except ImportError:
        qlink_ffi_ref, why = None, "bench-ffi's reference module (qlink_ffi_ref) is not built: make bench-ffi"
    else:
        why = None
    for name, (n, sql) in SIZES.items():
        ctx.register_table(f"p_{n}", plugin.table("rows", n=str(n)))
        data = ctx.sql(f"SELECT * FROM p_{n}").to_arrow_table()
        ctx.register_record_batches(f"n_{n}", [data.to_batches()])
        a, b = sql.format(t=f"n_{n}"), sql.format(t=f"p_{n}")
        native[name] = pair(lambda: ctx.sql(a).collect(), lambda: ctx.sql(b).collect(), reps)
        if qlink_ffi_ref is not None:
            ctx.register_table(f"f_{n}", qlink_ffi_ref.MemoryProvider(data))
            c = sql.format(t=f"f_{n}")
            ffi[name] = pair(lambda: ctx.sql(c).collect(), lambda: ctx.sql(b).collect(), reps)
    return native, (ffi or None), why


def main() -> None:
    plugin_dir, df_json, out = sys.argv[1], sys.argv[2], sys.argv[3]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 40
    result = {"datafusion": json.loads(Path(df_json).read_text())}
    sections = {"duckdb": duckdb_rows(plugin_dir, reps), "sqlite": sqlite_rows(plugin_dir, reps)}
    dfp, ffi, why = datafusion_python_rows(plugin_dir, reps)
    sections["datafusion_python"] = dfp
    for engine, rows in sections.items():
        result[engine] = {k: {"native_ms": round(a, 4), "qlink_ms": round(b, 4), "ratio": round(b / a, 4)}
                          for k, (a, b) in rows.items()}
    if ffi:
        result["datafusion_ffi"] = {k: {"ffi_ms": round(a, 4), "qlink_ms": round(b, 4), "speedup": round(a / b, 4)}
                                    for k, (a, b) in ffi.items()}
    df = result["datafusion"]
    result["targets"] = {
        "rust_scan_ratio_native_1040": df["scan_1040_rows"]["ratio"],
        "rust_scan_ratio_native_10m": df["sum_10m_rows"]["ratio"],
        "rust_udf_ratio_native": df["udf_10m_rows"]["ratio"],
        "rust_vs_datafusion_ffi_speedup": (min(r["speedup"] for r in result["datafusion_ffi"].values())
                                           if ffi else None),
        "rust_vs_datafusion_ffi_note": why,
        "target_ratio_max": 1.10,
    }
    print(f"{'engine / query':<34} {'native ms':>11} {'qlink ms':>11} {'ratio':>7}")
    for engine in ("datafusion", "duckdb", "sqlite", "datafusion_python"):
        for k, r in result[engine].items():
            print(f"{engine + ' ' + k:<34} {r['native_ms']:>11.3f} {r['qlink_ms']:>11.3f} {r['ratio']:>7.3f}")
    for k, r in (result.get("datafusion_ffi") or {}).items():
        print(f"{'datafusion-ffi ' + k:<34} {r['ffi_ms']:>11.3f} {r['qlink_ms']:>11.3f} {r['speedup']:>6.2f}x faster")
    if why:
        print(f"datafusion-ffi: {why}")
    Path(out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
