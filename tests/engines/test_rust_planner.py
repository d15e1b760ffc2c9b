# SPDX-License-Identifier: Apache-2.0
"""A planner written in Rust with the plugin SDK (qlink_memtable's ``topk``:
ORDER BY ... LIMIT k planned by the plugin, over the input the host
planned) in every engine that takes planners: the qlink CLI (DataFusion),
``qlink.Session`` and datafusion-python 55 (``with_extensions`` with the
planner's capsule). Each query's rows are exact, equal to the same query
without the planner, and the plan shows the plugin's operators over the
host's subtree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from engine import has_native_qlink, plugin_path
from engine_datafusion import cli_path

N = 20000
MEMTABLE = plugin_path("qlink_memtable")


def label(i: int) -> str:
    return f"r{i % 100}"


def view_value(i: int):
    if i % 3 == 2:
        return None
    return f"row {i}: longer than twelve bytes" if i % 2 == 1 else f"r{i}"


# (SQL over t = rows?n=20000 and v = views, the rows it must return)
QUERIES = [
    ("SELECT id, x FROM t ORDER BY x DESC LIMIT 5",
     [(i, i * 0.5) for i in range(N - 1, N - 6, -1)]),
    ("SELECT label, id FROM t WHERE id % 7 = 3 ORDER BY label, id LIMIT 4",
     sorted((label(i), i) for i in range(N) if i % 7 == 3)[:4]),
    ("SELECT a.id, b.label FROM t a JOIN t b ON a.id = b.id + 1 ORDER BY a.id DESC LIMIT 3",
     [(i, label(i - 1)) for i in (N - 1, N - 2, N - 3)]),
    ("SELECT label, count(*) AS n FROM t GROUP BY label ORDER BY n DESC, label LIMIT 2",
     [("r0", N // 100), ("r1", N // 100)]),
    ("SELECT id, s FROM v ORDER BY s NULLS FIRST, id LIMIT 3",
     sorted(((i, view_value(i)) for i in range(6)),
            key=lambda r: (r[1] is not None, r[1] or "", r[0]))[:3]),
    ("SELECT id FROM t ORDER BY x * -1 + 3, id LIMIT 2", [(N - 1,), (N - 2,)]),
    ("SELECT id FROM t ORDER BY id LIMIT 0", []),
]


def need_plugin():
    if not Path(MEMTABLE).is_file():
        pytest.skip(f"qlink_memtable is not built: {MEMTABLE} (make build-rust-plugins)")


def cli(*args: str) -> str:
    if not cli_path().is_file():
        pytest.skip(f"the qlink CLI is not built: {cli_path()}")
    out = subprocess.run([str(cli_path()), *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def cli_tables(planner: bool) -> list[str]:
    args = ["--table", f"t={MEMTABLE}/rows?n={N}", "--table", f"v={MEMTABLE}/views"]
    return ["--plugin", MEMTABLE, "--planner", "qlink_memtable/topk", *args] if planner else args


def as_rows(objs: list[dict]) -> list[tuple]:
    return [tuple(o.values()) for o in objs]


@pytest.mark.parametrize("sql,want", QUERIES, ids=[q for q, _ in QUERIES])
def test_rust_planner_in_the_cli(sql, want):
    need_plugin()
    got = as_rows(json.loads(cli("sql", "--format", "json", *cli_tables(True), "--", sql) or "[]"))
    assert got == want
    assert as_rows(json.loads(cli("sql", "--format", "json", *cli_tables(False), "--", sql) or "[]")) == want


@pytest.mark.parametrize("sql,want", QUERIES, ids=[q for q, _ in QUERIES])
def test_rust_planner_with_workers(sql, want, qlink_workers):
    """datafusion-distributed: the planner runs on the coordinator; the
    subtrees it asks the host to plan may be split among the workers."""
    need_plugin()
    args = [*qlink_workers.args, *cli_tables(True)]
    assert as_rows(json.loads(cli("sql", "--format", "json", *args, "--", sql) or "[]")) == want


def test_rust_planner_shows_in_explain():
    need_plugin()
    sql = "SELECT id, x FROM t WHERE id % 2 = 0 ORDER BY x DESC LIMIT 5"
    plan = cli("explain", *cli_tables(True), sql)
    # The plugin's operators (its merge, and the per-partition top-k sort
    # in its line), with the host's filter and the table's scan beneath.
    lines = [line for line in plan[plan.index("physical_plan"):].splitlines() if "Exec" in line]
    assert "SortPreservingMergeExec: [x@1 DESC], fetch=5 <- SortExec: TopK(fetch=5)" in lines[0], plan
    assert "FilterExec: id@0 % 2 = 0" in lines[1] and "DataSourceExec" in lines[2], plan
    analyzed = cli("explain", "--analyze", *cli_tables(True), sql)
    assert "output_rows=5" in analyzed.replace(" ", ""), analyzed
    # Without a LIMIT the planner declines: the host's own sort.
    plain = cli("explain", *cli_tables(True), "SELECT id FROM t ORDER BY x DESC")
    assert "SortExec" in plain and "fetch" not in plain, plain


def need_wheel():
    need_plugin()
    if not has_native_qlink():
        pytest.skip("the qlink wheel is not installed: python/build.sh")


@pytest.mark.parametrize("sql,want", QUERIES, ids=[q for q, _ in QUERIES])
def test_rust_planner_in_a_qlink_session(sql, want):
    need_wheel()
    import qlink

    s = qlink.Session()
    s.install_planner(MEMTABLE, "topk")
    s.register_table("t", MEMTABLE, "rows", n=str(N))
    s.register_table("v", MEMTABLE, "views")
    t = s.sql(sql)
    assert list(zip(*(c.to_pylist() for c in t.columns))) == want


@pytest.mark.parametrize("sql,want", QUERIES, ids=[q for q, _ in QUERIES])
def test_rust_planner_in_datafusion_python(sql, want):
    need_wheel()
    import datafusion
    import qlink

    p = qlink.Plugin(MEMTABLE)
    ctx = datafusion.SessionContext().with_extensions(p.planner("topk"))
    ctx.register_table("t", p.table("rows", n=str(N)))
    ctx.register_table("v", p.table("views"))
    t = ctx.sql(sql).to_arrow_table()
    assert list(zip(*(c.to_pylist() for c in t.columns))) == want


def test_rust_planner_over_datafusion_pythons_own_table():
    """The planner answers over a table datafusion-python holds itself (its
    in-memory batches cross to the plugin by reference) joined with the
    plugin's table."""
    need_wheel()
    import datafusion
    import pyarrow as pa
    import qlink

    p = qlink.Plugin(MEMTABLE)
    ctx = datafusion.SessionContext().with_extensions(p.planner("topk"))
    ctx.register_table("t", p.table("rows", n=str(N)))
    ctx.register_record_batches("w", [[pa.record_batch({"id": [5, 17, 19998, 12], "w": [0.5, 1.5, 2.5, 3.5]})]])
    sql = "SELECT t.id, t.label, w.w FROM t JOIN w ON t.id = w.id ORDER BY w.w DESC LIMIT 3"
    assert ctx.sql(sql).to_pydict() == {"id": [12, 19998, 17], "label": ["r12", "r98", "r17"], "w": [3.5, 2.5, 1.5]}
    plan = "\n".join(str(r) for r in ctx.sql(f"EXPLAIN {sql}").to_pydict()["plan"])
    assert "TopK(fetch=3)" in plan, plan
    assert ctx.sql("SELECT id FROM w ORDER BY w LIMIT 2").to_pydict() == {"id": [5, 17]}


def test_rust_planner_refuses_unknown_names_and_options():
    need_wheel()
    import qlink

    s = qlink.Session()
    with pytest.raises(qlink.QlinkError, match="no planner 'nope' in qlink_memtable"):
        s.install_planner(MEMTABLE, "nope")
    with pytest.raises(qlink.QlinkError, match="planner 'topk' has no option 'k'"):
        s.install_planner(MEMTABLE, "topk", k="3")
