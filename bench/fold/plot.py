# SPDX-License-Identifier: Apache-2.0
"""Plot bench/results/fold.json (written by bench_fold) into a PNG.

Usage: python bench/fold/plot.py [fold.json] [fold.png]
Left: speedup of the fold planner over stock DataFusion per query (log
scale; green where FoldExec fired, grey where the planner declined, red
where the results disagreed). Right: TPC-H planning time per query with and
without the planner installed.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = Path(__file__).resolve().parents[2]
src = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "bench/results/fold.json"
dst = Path(sys.argv[2]) if len(sys.argv) > 2 else src.with_suffix(".png")
data = json.loads(src.read_text())

rows = data["rows"]
labels = [f'{r["workload"]}: {r["query"]}' for r in rows]
speedups = [r["speedup"] for r in rows]
colors = ["tab:red" if not r["results_agree"] else "tab:green" if r["fold_fired"] else "tab:gray" for r in rows]

fig, (ax, bx) = plt.subplots(1, 2, figsize=(16, 0.32 * len(rows) + 2), gridspec_kw={"width_ratios": [3, 2]})
y = list(range(len(rows)))
ax.barh(y, speedups, color=colors)
ax.set_yticks(y, labels, fontsize=7)
ax.invert_yaxis()
ax.set_xscale("log")
ax.axvline(1.0, color="black", linewidth=0.8)
ax.set_xlabel("speedup over stock DataFusion (stock time / fold time)")
ax.set_title("fold planner vs stock DataFusion 55.2.0 (green: FoldExec, grey: declined)")
for yi, s in zip(y, speedups):
    ax.text(s, yi, f" {s:.2f}x", va="center", fontsize=6)

q = data["tpch_queries"]
xs = [t["query"] for t in q]
width = 0.4
bx.bar([x - width / 2 for x in xs], [t["plan_ms_stock"] for t in q], width, label="stock")
bx.bar([x + width / 2 for x in xs], [t["plan_ms_planner"] for t in q], width, label="fold planner installed")
bx.set_xticks(xs)
bx.set_xlabel("TPC-H query")
bx.set_ylabel("planning time, ms (min of repetitions)")
bx.set_title(f'TPC-H SF1 planning: {data["tpch_planner_overhead_ms_total"]:+.3f} ms over 22 queries')
bx.legend()

fig.tight_layout()
dst.parent.mkdir(parents=True, exist_ok=True)
fig.savefig(dst, dpi=110)
print(f"wrote {dst}")
