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
  `FFI_TableProvider` (`rust_vs_datafusion_ffi_speedup`);
- planners, in DataFusion and datafusion-python: the plugin's `topk`
  planner (written with the SDK) installed vs none, over the native
  tables: `ORDER BY x` over 1,040 rows (asked, declines: what an installed
  planner costs a query, `rust_planner_declining_cost_ms`) and `ORDER BY x
  DESC LIMIT 10` over 10 M rows (it answers); in datafusion-python also vs
  datafusion-ffi's `FFI_QueryPlanner` (DataFusion's default planner behind
  it) on `ORDER BY` over VALUES (`rust_planner_vs_datafusion_ffi_planner_speedup`:
  datafusion-ffi's planner fails on a query over datafusion-python's own
  table, recorded in `datafusion_ffi_planner_over_a_native_table`).

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


PLANNER_QUERIES = {
    # the planner is asked and declines: what an installed planner costs a query
    "planner_declines_sort_1040": ("n_1040", "SELECT * FROM n_1040 ORDER BY x"),
    # it answers: the plugin's TopK over the host's scan
    "planner_topk_10m": ("n_10000000", "SELECT id FROM n_10000000 ORDER BY x DESC LIMIT 10"),
}


def datafusion_python_rows(plugin_dir: str, reps: int) -> tuple[dict, dict | None, str | None]:
    """The plugin's table and planner in datafusion-python 55 (qlink's
    capsules) vs its own in-memory table and no planner; and, when the
    reference module is built, vs datafusion-ffi's FFI_TableProvider over
    the same rows and its FFI_QueryPlanner (DataFusion's default planner)
    installed in place of qlink's."""
    import datafusion
    import qlink

    plugin = qlink.Plugin(f"{plugin_dir}/qlink_memtable.so")
    ctx = datafusion.SessionContext()
    planned = datafusion.SessionContext().with_extensions(plugin.planner("topk"))
    native, ffi = {}, {}
    try:
        import qlink_ffi_ref
    except ImportError:
        qlink_ffi_ref, why = None, "bench-ffi's reference module (qlink_ffi_ref) is not built: make bench-ffi"
    else:
        why = None
    ffi_planned = None
    if qlink_ffi_ref is not None:
        ffi_planned = datafusion.SessionContext()
        ffi_planned.set_query_planner(qlink_ffi_ref.DefaultPlanner())
    for name, (n, sql) in SIZES.items():
        ctx.register_table(f"p_{n}", plugin.table("rows", n=str(n)))
        data = ctx.sql(f"SELECT * FROM p_{n}").to_arrow_table()
        for c in (ctx, planned, ffi_planned):
            if c is not None:
                c.register_record_batches(f"n_{n}", [data.to_batches()])
        a, b = sql.format(t=f"n_{n}"), sql.format(t=f"p_{n}")
        native[name] = pair(lambda: ctx.sql(a).collect(), lambda: ctx.sql(b).collect(), reps)
        if qlink_ffi_ref is not None:
            ctx.register_table(f"f_{n}", qlink_ffi_ref.MemoryProvider(data))
            c = sql.format(t=f"f_{n}")
            ffi[name] = pair(lambda: ctx.sql(c).collect(), lambda: ctx.sql(b).collect(), reps)
    for name, (_, q) in PLANNER_QUERIES.items():
        assert ctx.sql(q).to_arrow_table() == planned.sql(q).to_arrow_table(), q
        n = reps * 5 if "1040" in name else reps
        native[name] = pair(lambda: ctx.sql(q).collect(), lambda: planned.sql(q).collect(), n)
    if ffi_planned is not None:
        # datafusion-ffi's planner is handed the plan as protobuf without a
        # codec for datafusion-python's own tables: a query over one fails
        # (recorded); a query over VALUES measures what it costs a query.
        try:
            ffi_planned.sql(PLANNER_QUERIES["planner_declines_sort_1040"][1]).collect()
            FFI_PLANNER_NOTE["native_table"] = "runs"
        except Exception as exc:  # noqa: BLE001 - the engine's error is the finding
            FFI_PLANNER_NOTE["native_table"] = str(exc).splitlines()[-1]
        q = "SELECT column1 AS v FROM (VALUES (3), (1), (2)) ORDER BY v"
        assert ffi_planned.sql(q).to_arrow_table() == planned.sql(q).to_arrow_table(), q
        ffi["planner_declines_values"] = pair(lambda: ffi_planned.sql(q).collect(), lambda: planned.sql(q).collect(), reps * 5)
    return native, (ffi or None), why


# What datafusion-ffi's planner did with a query over datafusion-python's own table.
FFI_PLANNER_NOTE: dict = {}


def main() -> None:
    plugin_dir, df_json, out = sys.argv[1], sys.argv[2], sys.argv[3]
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 40
    result = {"datafusion": json.loads(Path(df_json).read_text())}
    # The crossing's own cost per batch, apart from any plugin (bench_rust).
    result["datafusion_crossing"] = result["datafusion"].pop("crossing", None)
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
        "rust_vs_datafusion_ffi_speedup": (min(r["speedup"] for k, r in result["datafusion_ffi"].items()
                                               if not k.startswith("planner")) if ffi else None),
        "rust_planner_vs_datafusion_ffi_planner_speedup": (
            result["datafusion_ffi"]["planner_declines_values"]["speedup"] if ffi else None),
        "datafusion_ffi_planner_over_a_native_table": FFI_PLANNER_NOTE.get("native_table"),
        "rust_planner_declining_cost_ms": {
            "datafusion": round(df["planner_declines_sort_1040"]["qlink_ms"] - df["planner_declines_sort_1040"]["native_ms"], 4),
            "datafusion_python": round(result["datafusion_python"]["planner_declines_sort_1040"]["qlink_ms"]
                                       - result["datafusion_python"]["planner_declines_sort_1040"]["native_ms"], 4),
        },
        "rust_vs_datafusion_ffi_note": why,
        "rust_scan_ratio_floor_10m": (result["datafusion_crossing"] or {}).get("sum_10m_ratio_floor"),
        "rust_udf_ratio_floor": (result["datafusion_crossing"] or {}).get("udf_10m_ratio_floor"),
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
