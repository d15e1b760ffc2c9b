# SPDX-License-Identifier: Apache-2.0
"""Deep plans: DataFusion's physical optimizer asks every scan for its
statistics again at each rule, so a left-deep join chain of depth N asks
O(N^2) times in all. A plan's statistics never change: qlink computes each
scan's once (the plugin per partition argument, the DataFusion host per
node, the capsule its encoded bytes), and the plugin's
``statistics_computed`` metric proves it, scan by scan, in EXPLAIN ANALYZE.
"""

import re

import numpy as np
import pytest
import xarray as xr

import qlink
import qlink.xarray

DEPTH = 40


def chain(depth: int) -> str:
    ctes = ["x0 AS (SELECT i, v FROM t)"]
    for k in range(depth):
        ctes.append(f"x{k + 1} AS (SELECT a.i, a.v + b.v AS v FROM x{k} a JOIN t b ON a.i = b.i)")
    return "WITH " + ", ".join(ctes) + f" SELECT SUM(v) AS s FROM x{depth}"


@pytest.fixture()
def dataset():
    return xr.Dataset({"v": (("i",), np.arange(8.0))}, coords={"i": np.arange(8)})


def scan_metrics(plan_text: str) -> list[dict[str, str]]:
    """The metrics of every qlink scan line of an EXPLAIN ANALYZE plan."""
    out = []
    for line in plan_text.splitlines():
        if "statistics_computed=" not in line:
            continue
        out.append(dict(re.findall(r"(\w+)=([^,\]\s]+)", line.split("metrics=", 1)[1])))
    return out


def explain_analyze(df_like) -> str:
    table = df_like.to_arrow_table() if hasattr(df_like, "to_arrow_table") else df_like
    return "\n".join(str(x) for x in table.column("plan").to_pylist())


def check(plan: str):
    scans = scan_metrics(plan)
    # x0 reads t once, each of the DEPTH joins reads it again
    assert len(scans) == DEPTH + 1, plan
    assert [s["statistics_computed"] for s in scans] == ["1"] * (DEPTH + 1), plan


def test_a_chain_computes_each_scans_statistics_once_in_a_context(dataset):
    ctx = qlink.xarray.Context()
    ctx.from_dataset("t", dataset, chunks={"i": 8})
    assert ctx.sql(chain(DEPTH)).to_pandas()["s"].tolist() == [(DEPTH + 1) * 28.0]
    check(explain_analyze(ctx.sql("EXPLAIN ANALYZE " + chain(DEPTH))))


def test_a_chain_computes_each_scans_statistics_once_in_a_session(dataset):
    s = qlink.Session()
    s.register_dataset("t", dataset, chunks={"i": 8})
    assert s.sql(chain(DEPTH)).column("s").to_pylist() == [(DEPTH + 1) * 28.0]
    check(explain_analyze(s.sql("EXPLAIN ANALYZE " + chain(DEPTH))))
