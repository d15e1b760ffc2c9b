# SPDX-License-Identifier: Apache-2.0
"""bench/plans/gpt.py: the GPT forward pass as SQL answers what numpy does.

The statement runs on DuckDB's and datafusion-python's own tables (no qlink
code involved: this checks the generator and the reference, which
bench-plans and the tests of qlink's routes rely on), every logit to 1e-9
relative; and the numpy reference is checked against a plain loop written
from the model's definition. A tiny model keeps it fast (DataFusion's time
is its planning of the statement's 2,822 scans, whatever the sizes).

    .venv/bin/python -m pytest -q tests/plans
"""

from __future__ import annotations

import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


_spec = importlib.util.spec_from_file_location("bench_plans_gpt", ROOT / "bench" / "plans" / "gpt.py")
gpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpt)

TINY = gpt.GPTConfig(seq=5, emb=8, heads=2, mlp=12, vocab=7)


@pytest.fixture(scope="module")
def model():
    tables = gpt.gpt_tables(TINY, seed=3)
    return tables, gpt.gpt_numpy(TINY, tables)


def loop_forward(cfg, tables) -> np.ndarray:
    """The forward pass written out element by element (no einsum, no
    broadcasting): an independent check of gpt_numpy."""
    g = {k: {v: tables[k][v].values for v in tables[k].data_vars} for k in tables}
    T, D, H, E, F, V = cfg.seq, cfg.emb, cfg.heads, cfg.head_dim, cfg.mlp, cfg.vocab

    def layernorm(x, gain, bias):
        out = []
        for row in x:
            mu = sum(row) / D
            var = sum((a - mu) ** 2 for a in row) / D
            out.append([(row[d] - mu) / math.sqrt(var + cfg.eps) * gain[d] + bias[d] for d in range(D)])
        return out

    tok = g["tokens"]["tok"]
    x = [[g["wte"]["w"][tok[t], d] + g["wpe"]["w"][t, d] for d in range(D)] for t in range(T)]
    ln = g["ln_w"]
    h = layernorm(x, ln["g1"], ln["b1"])
    wq, bq = g["w_qkv"]["w"], g["b_qkv"]["b"]
    qkv = [[[[sum(h[t][d] * wq[d, m, hh, e] for d in range(D)) + bq[m, hh, e] for e in range(E)]
             for hh in range(H)] for m in range(3)] for t in range(T)]
    ctx = [[[0.0] * E for _ in range(H)] for _ in range(T)]
    for hh in range(H):
        for tq in range(T):
            s = [sum(qkv[tq][0][hh][e] * qkv[tk][1][hh][e] for e in range(E)) / math.sqrt(E) for tk in range(tq + 1)]
            mx = max(s)
            p = [math.exp(a - mx) for a in s]
            z = sum(p)
            for e in range(E):
                ctx[tq][hh][e] = sum(p[tk] / z * qkv[tk][2][hh][e] for tk in range(tq + 1))
    wp, br = g["w_proj"]["w"], g["b_res"]
    x1 = [[x[t][d] + sum(ctx[t][hh][e] * wp[hh, e, d] for hh in range(H) for e in range(E)) + br["proj"][d]
           for d in range(D)] for t in range(T)]
    h2 = layernorm(x1, ln["g2"], ln["b2"])
    c = math.sqrt(2 / math.pi)
    fc = [[sum(h2[t][d] * g["w_fc"]["w"][d, f] for d in range(D)) + g["b_fc"]["b"][f] for f in range(F)]
          for t in range(T)]
    act = [[0.5 * a * (1 + math.tanh(c * (a + 0.044715 * a ** 3))) for a in row] for row in fc]
    x2 = [[x1[t][d] + sum(act[t][f] * g["w_fc2"]["w"][f, d] for f in range(F)) + br["fc2"][d] for d in range(D)]
          for t in range(T)]
    hf = layernorm(x2, ln["gf"], ln["bf"])
    return np.array([[sum(hf[t][d] * g["wte"]["w"][v, d] for d in range(D)) for v in range(V)] for t in range(T)])


def test_numpy_reference_matches_the_definition(model):
    tables, want = model
    assert want.shape == (TINY.seq, TINY.vocab)
    assert gpt.max_rel_error(want, loop_forward(TINY, tables)) < 1e-12


def test_eleven_long_tables(model):
    tables, _ = model
    assert tuple(tables) == gpt.TABLES
    cols = gpt.long_columns(tables["w_qkv"])
    assert list(cols) == ["d", "m", "h", "e", "w"]
    assert len(cols["w"]) == TINY.emb * 3 * TINY.heads * TINY.head_dim
    # row k of the long form is element k of the C-ordered array
    k = 37
    d, m, h, e = (int(cols[c][k]) for c in "dmhe")
    assert cols["w"][k] == tables["w_qkv"].w.values[d, m, h, e]
    # the value column shares the Dataset's buffer
    assert np.shares_memory(cols["w"], tables["w_qkv"].w.values)


def test_duckdb_native_tables(model):
    duckdb = pytest.importorskip("duckdb")
    tables, want = model
    con = duckdb.connect()
    for name, table in gpt.arrow_tables(tables).items():
        con.register("arrow_in", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow_in")
        con.unregister("arrow_in")
    rows = con.execute(gpt.gpt_sql(TINY)).fetchall()
    assert [(t, v) for t, v, _ in rows] == [(t, v) for t in range(TINY.seq) for v in range(TINY.vocab)]
    assert gpt.check_logits("duckdb", rows, want, TINY) <= 1e-9


def test_datafusion_native_tables(model):
    datafusion = pytest.importorskip("datafusion")
    tables, want = model
    ctx = datafusion.SessionContext()
    for name, table in gpt.arrow_tables(tables).items():
        ctx.register_record_batches(name, [table.to_batches()])
    sql = gpt.gpt_sql(TINY)
    df = ctx.sql(sql)
    stack, scans = [df.execution_plan()], 0
    while stack:
        p = stack.pop()
        stack.extend(p.children())
        scans += not p.children()
    assert scans == 2822  # every CTE inlined at each of its references
    import pyarrow as pa

    got = pa.Table.from_batches(df.collect())
    assert gpt.check_logits("datafusion", got, want, TINY) <= 1e-9


def test_staged_form_answers_the_same(model):
    """gpt_steps: the statement's CTEs as statements, each result a table."""
    duckdb = pytest.importorskip("duckdb")
    tables, want = model
    steps = gpt.gpt_steps(TINY)
    assert [name for name, _ in steps][:3] == ["emb", "ln1_mu", "ln1_var"]
    assert steps[-1][0] == "logits" and len(steps) == 29
    con = duckdb.connect()
    for name, table in gpt.arrow_tables(tables).items():
        con.register("arrow_in", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow_in")
        con.unregister("arrow_in")
    for name, body in steps:
        con.execute(f"CREATE TABLE {name} AS {body}")
    rows = con.execute("SELECT t, v, logit FROM logits ORDER BY t, v").fetchall()
    assert gpt.check_logits("duckdb staged", rows, want, TINY) <= 1e-9


def test_qlink_session_runs_each_repeated_cte_once(model):
    """qlink.Session plans and runs each CTE used twice once (EXPLAIN VERBOSE names
    each SharedSubplanExec and its references), and the logits are
    numpy's."""
    qlink = pytest.importorskip("qlink")
    tables, want = model
    s = qlink.Session()
    for name, table in gpt.arrow_tables(tables).items():
        s.register_arrow(name, table)
    sql = gpt.gpt_sql(TINY)
    text = s.sql("EXPLAIN VERBOSE " + sql).to_pydict()["plan"]
    text = "\n".join(text)
    shared = dict(re.findall(r"SharedSubplanExec: name=(\w+), references=(\d+)", text))
    # the CTEs DuckDB materializes too (bench/plans/README.md), with their
    # references counted once per distinct enclosing CTE
    assert shared == {"emb": "4", "ln1_mu": "2", "qkv": "3", "scores": "2", "att_exp": "2", "res1": "4",
                      "ln2_mu": "2", "res2": "3", "lnf_mu": "2"}
    assert gpt.check_logits("qlink.Session", s.sql(sql), want, TINY) <= 1e-9


def test_a_wrong_logit_is_caught(model):
    _, want = model
    rows = [(t, v, want[t, v]) for t in range(TINY.seq) for v in range(TINY.vocab)]
    rows[3] = (rows[3][0], rows[3][1], rows[3][2] * (1 + 1e-8))
    with pytest.raises(gpt.Mismatch):
        gpt.check_logits("x", rows, want, TINY)
    with pytest.raises(gpt.Mismatch):
        gpt.check_logits("x", rows[:-1], want, TINY)
