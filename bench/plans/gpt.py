# SPDX-License-Identifier: Apache-2.0
"""A one-layer GPT forward pass as one SQL statement over 11 small tables,
its tables as xarray Datasets, and the same forward pass in numpy.

    cfg = GPTConfig()                      # seq 8, emb 16, 2 heads, MLP 64, vocab 32
    tables = gpt_tables(cfg, seed=0)       # {name: xr.Dataset}, 11 tables
    sql = gpt_sql(cfg)                     # -> rows (t, v, logit), ORDER BY t, v
    want = gpt_numpy(cfg, tables)          # float64 [seq, vocab]
    check_logits("route", rows, want)      # every logit to 1e-9 relative

The model: token + position embeddings, LayerNorm, causal multi-head
attention (softmax through max, exp and sum), output projection with bias,
residual, LayerNorm, MLP (GELU, tanh form: every engine has ``tanh``),
residual, final LayerNorm and logits on the tied token embeddings. Every
step is a CTE; each table is in long (tidy) form, one row per coordinate
tuple, as qlink.xarray (and xarray-sql) serve a Dataset: dimension columns
first, then the data variables.

Tables (dimension columns, then value columns):

    tokens(t, tok)                   token id at position t
    wte(v, d, w)                     token embeddings, also the logits' weights
    wpe(t, d, w)                     position embeddings
    ln_w(d, g1, b1, g2, b2, gf, bf)  the three LayerNorms' gains and biases
    w_qkv(d, m, h, e, w)             m = 0 (query), 1 (key), 2 (value); head h, e < emb/heads
    b_qkv(m, h, e, b)
    w_proj(h, e, d, w)               attention output projection
    b_res(d, proj, fc2)              the biases added to the residual stream
    w_fc(d, f, w)                    MLP in
    b_fc(f, b)
    w_fc2(f, d, w)                   MLP out

DataFusion inlines every CTE at each reference, so the statement scans the
tables thousands of times (2,822 scans for any model size); DuckDB and
SQLite decide for themselves (bench/plans/README.md).

Only numpy and xarray are needed (pyarrow for :func:`arrow_tables`): the
module also runs in xarray-sql's own environment.
"""

# (no ``from __future__ import annotations``: the module is loaded from its
# path, outside sys.modules, where dataclasses cannot resolve string
# annotations)
import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

TABLES = ("tokens", "wte", "wpe", "ln_w", "w_qkv", "b_qkv", "w_proj", "b_res", "w_fc", "b_fc", "w_fc2")
GELU_C = math.sqrt(2.0 / math.pi)


@dataclass(frozen=True)
class GPTConfig:
    seq: int = 8
    emb: int = 16
    heads: int = 2
    mlp: int = 64
    vocab: int = 32
    eps: float = 1e-5

    def __post_init__(self):
        if self.emb % self.heads:
            raise ValueError(f"emb ({self.emb}) must be a multiple of heads ({self.heads})")

    @property
    def head_dim(self) -> int:
        return self.emb // self.heads


SMALL = GPTConfig()
LARGE = GPTConfig(seq=128, emb=64, heads=4, mlp=256, vocab=64)


# ------------------------------------------------------------------ tables


def _ds(name: str, dims: tuple[str, ...], values: dict[str, np.ndarray]) -> xr.Dataset:
    shape = next(iter(values.values())).shape
    coords = {d: np.arange(n, dtype=np.int64) for d, n in zip(dims, shape)}
    return xr.Dataset({k: (dims, np.ascontiguousarray(v)) for k, v in values.items()}, coords=coords)


def gpt_tables(cfg: GPTConfig = SMALL, seed: int = 0) -> dict[str, xr.Dataset]:
    """The model's 11 tables as xarray Datasets (float64 values, int64
    dimension coordinates 0..n-1), random with ``seed``."""
    rng = np.random.default_rng(seed)
    T, D, H, E, F, V = cfg.seq, cfg.emb, cfg.heads, cfg.head_dim, cfg.mlp, cfg.vocab

    def w(*shape, scale):
        return rng.standard_normal(shape) * scale

    ln = {k: (1.0 + w(D, scale=0.1)) if k.startswith("g") else w(D, scale=0.1)
          for k in ("g1", "b1", "g2", "b2", "gf", "bf")}
    return {
        "tokens": _ds("tokens", ("t",), {"tok": rng.integers(0, V, T).astype(np.int64)}),
        "wte": _ds("wte", ("v", "d"), {"w": w(V, D, scale=0.5)}),
        "wpe": _ds("wpe", ("t", "d"), {"w": w(T, D, scale=0.2)}),
        "ln_w": _ds("ln_w", ("d",), ln),
        "w_qkv": _ds("w_qkv", ("d", "m", "h", "e"), {"w": w(D, 3, H, E, scale=1.0 / math.sqrt(D))}),
        "b_qkv": _ds("b_qkv", ("m", "h", "e"), {"b": w(3, H, E, scale=0.1)}),
        "w_proj": _ds("w_proj", ("h", "e", "d"), {"w": w(H, E, D, scale=1.0 / math.sqrt(D))}),
        "b_res": _ds("b_res", ("d",), {"proj": w(D, scale=0.1), "fc2": w(D, scale=0.1)}),
        "w_fc": _ds("w_fc", ("d", "f"), {"w": w(D, F, scale=1.0 / math.sqrt(D))}),
        "b_fc": _ds("b_fc", ("f",), {"b": w(F, scale=0.1)}),
        "w_fc2": _ds("w_fc2", ("f", "d"), {"w": w(F, D, scale=1.0 / math.sqrt(F))}),
    }


def long_columns(ds: xr.Dataset) -> dict[str, np.ndarray]:
    """A Dataset (every data variable on the same dimensions) as the columns
    of its long table: the dimension coordinates broadcast in C order, then
    the data variables flattened (views of the Dataset's own buffers)."""
    dims = next(iter(ds.data_vars.values())).dims
    grids = np.meshgrid(*[ds[d].values for d in dims], indexing="ij")
    cols = {d: g.reshape(-1) for d, g in zip(dims, grids)}
    for name, var in ds.data_vars.items():
        if var.dims != dims:
            raise ValueError(f"{name}: dimensions {var.dims}, not {dims}")
        cols[str(name)] = var.values.reshape(-1)
    return cols


def arrow_tables(tables: dict[str, xr.Dataset]) -> dict:
    """Each Dataset as a pyarrow Table of its long form (the value columns
    zero-copy over the numpy buffers)."""
    import pyarrow as pa

    return {name: pa.table({k: pa.array(v) for k, v in long_columns(ds).items()}) for name, ds in tables.items()}


# ----------------------------------------------------------------- numpy


def _layernorm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) * (x - mu)).mean(axis=1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def gpt_numpy(cfg: GPTConfig, tables: dict[str, xr.Dataset]) -> np.ndarray:
    """The forward pass in numpy: logits [seq, vocab] (float64)."""
    g = {name: ds for name, ds in tables.items()}
    tok = g["tokens"].tok.values
    wte, wpe = g["wte"].w.values, g["wpe"].w.values
    ln = g["ln_w"]
    x = wte[tok] + wpe                                            # (T, D)
    h = _layernorm(x, ln.g1.values, ln.b1.values, cfg.eps)
    qkv = np.einsum("td,dmhe->tmhe", h, g["w_qkv"].w.values) + g["b_qkv"].b.values
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]                     # (T, H, E)
    s = np.einsum("qhe,khe->hqk", q, k) * (1.0 / math.sqrt(cfg.head_dim))
    causal = np.tril(np.ones((cfg.seq, cfg.seq), dtype=bool))
    s = np.where(causal, s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    a = p / p.sum(axis=2, keepdims=True)
    ctx = np.einsum("hqk,khe->qhe", a, v)
    x1 = x + np.einsum("qhe,hed->qd", ctx, g["w_proj"].w.values) + g["b_res"].proj.values
    h2 = _layernorm(x1, ln.g2.values, ln.b2.values, cfg.eps)
    f = gelu(h2 @ g["w_fc"].w.values + g["b_fc"].b.values)
    x2 = x1 + f @ g["w_fc2"].w.values + g["b_res"].fc2.values
    hf = _layernorm(x2, ln.gf.values, ln.bf.values, cfg.eps)
    return hf @ wte.T


# -------------------------------------------------------------------- SQL


def _layernorm_sql(src: str, out: str, g: str, b: str, eps: float) -> list[str]:
    return [
        f"{out}_mu AS (SELECT t, AVG(x) AS mu FROM {src} GROUP BY t)",
        f"{out}_var AS (SELECT a.t, AVG((a.x - m.mu) * (a.x - m.mu)) AS var "
        f"FROM {src} a JOIN {out}_mu m ON m.t = a.t GROUP BY a.t)",
        f"{out} AS (SELECT a.t, a.d, (a.x - m.mu) / SQRT(s.var + {eps!r}) * w.{g} + w.{b} AS x "
        f"FROM {src} a JOIN {out}_mu m ON m.t = a.t JOIN {out}_var s ON s.t = a.t JOIN ln_w w ON w.d = a.d)",
    ]


def gpt_sql(cfg: GPTConfig = SMALL) -> str:
    """The forward pass as one statement: rows (t, v, logit) ordered by t, v.
    Standard SQL that DataFusion, DuckDB and SQLite (with its math
    functions) run unchanged; the model's sizes enter only through the
    attention scale (the tables carry the rest)."""
    scale = 1.0 / math.sqrt(cfg.head_dim)
    ctes = [
        "emb AS (SELECT k.t, te.d, te.w + pe.w AS x FROM tokens k JOIN wte te ON te.v = k.tok "
        "JOIN wpe pe ON pe.t = k.t AND pe.d = te.d)",
        *_layernorm_sql("emb", "ln1", "g1", "b1", cfg.eps),
        "qkv_mm AS (SELECT a.t, w.m, w.h, w.e, SUM(a.x * w.w) AS y FROM ln1 a JOIN w_qkv w ON w.d = a.d "
        "GROUP BY a.t, w.m, w.h, w.e)",
        "qkv AS (SELECT a.t, a.m, a.h, a.e, a.y + bb.b AS y FROM qkv_mm a "
        "JOIN b_qkv bb ON bb.m = a.m AND bb.h = a.h AND bb.e = a.e)",
        "q AS (SELECT t, h, e, y FROM qkv WHERE m = 0)",
        "k AS (SELECT t, h, e, y FROM qkv WHERE m = 1)",
        "v AS (SELECT t, h, e, y FROM qkv WHERE m = 2)",
        f"scores AS (SELECT qq.t AS tq, kk.t AS tk, qq.h, SUM(qq.y * kk.y) * {scale!r} AS s "
        "FROM q qq JOIN k kk ON kk.h = qq.h AND kk.e = qq.e WHERE kk.t <= qq.t GROUP BY qq.t, kk.t, qq.h)",
        "att_max AS (SELECT tq, h, MAX(s) AS mx FROM scores GROUP BY tq, h)",
        "att_exp AS (SELECT a.tq, a.tk, a.h, EXP(a.s - m.mx) AS p FROM scores a "
        "JOIN att_max m ON m.tq = a.tq AND m.h = a.h)",
        "att_sum AS (SELECT tq, h, SUM(p) AS z FROM att_exp GROUP BY tq, h)",
        "att AS (SELECT a.tq, a.tk, a.h, a.p / z.z AS p FROM att_exp a JOIN att_sum z ON z.tq = a.tq AND z.h = a.h)",
        "ctx AS (SELECT a.tq AS t, a.h, vv.e, SUM(a.p * vv.y) AS y FROM att a "
        "JOIN v vv ON vv.t = a.tk AND vv.h = a.h GROUP BY a.tq, a.h, vv.e)",
        "proj AS (SELECT c.t, w.d, SUM(c.y * w.w) AS y FROM ctx c JOIN w_proj w ON w.h = c.h AND w.e = c.e "
        "GROUP BY c.t, w.d)",
        "res1 AS (SELECT a.t, a.d, a.x + p.y + r.proj AS x FROM emb a JOIN proj p ON p.t = a.t AND p.d = a.d "
        "JOIN b_res r ON r.d = a.d)",
        *_layernorm_sql("res1", "ln2", "g2", "b2", cfg.eps),
        "fc AS (SELECT a.t, w.f, SUM(a.x * w.w) AS y FROM ln2 a JOIN w_fc w ON w.d = a.d GROUP BY a.t, w.f)",
        "fc_b AS (SELECT a.t, a.f, a.y + bb.b AS y FROM fc a JOIN b_fc bb ON bb.f = a.f)",
        f"gelu AS (SELECT t, f, 0.5 * y * (1.0 + TANH({GELU_C!r} * (y + 0.044715 * y * y * y))) AS y FROM fc_b)",
        "mlp AS (SELECT g.t, w.d, SUM(g.y * w.w) AS y FROM gelu g JOIN w_fc2 w ON w.f = g.f GROUP BY g.t, w.d)",
        "res2 AS (SELECT a.t, a.d, a.x + m.y + r.fc2 AS x FROM res1 a JOIN mlp m ON m.t = a.t AND m.d = a.d "
        "JOIN b_res r ON r.d = a.d)",
        *_layernorm_sql("res2", "lnf", "gf", "bf", cfg.eps),
        "logits AS (SELECT a.t, te.v, SUM(a.x * te.w) AS logit FROM lnf a JOIN wte te ON te.d = a.d "
        "GROUP BY a.t, te.v)",
    ]
    return "WITH " + ",\n".join(ctes) + "\nSELECT t, v, logit FROM logits ORDER BY t, v"


def gpt_steps(cfg: GPTConfig = SMALL) -> list[tuple[str, str]]:
    """The staged form: the statement's CTEs in order as (name, SELECT), each
    to run as its own statement over the tables and the earlier steps'
    results registered under their names; the last step is ``logits``
    (rows (t, v, logit), unordered)."""
    steps = []
    for cte in gpt_sql(cfg)[len("WITH "):].split("\nSELECT ")[0].split(",\n"):
        name, body = cte.split(" AS (", 1)
        steps.append((name, body[:-1]))
    return steps


# -------------------------------------------------------------- checking


class Mismatch(AssertionError):
    pass


def logits_of(rows, cfg: GPTConfig) -> np.ndarray:
    """Rows (t, v, logit) -- tuples, or a pyarrow Table -- as [seq, vocab];
    every (t, v) exactly once, else :class:`Mismatch`."""
    if hasattr(rows, "column"):
        rows = list(zip(*(rows.column(i).to_pylist() for i in range(3))))
    out = np.full((cfg.seq, cfg.vocab), np.nan)
    seen = np.zeros((cfg.seq, cfg.vocab), dtype=bool)
    for t, v, logit in rows:
        t, v = int(t), int(v)
        if not (0 <= t < cfg.seq and 0 <= v < cfg.vocab) or seen[t, v]:
            raise Mismatch(f"row ({t}, {v}) out of range or repeated")
        seen[t, v] = True
        out[t, v] = logit
    if not seen.all():
        raise Mismatch(f"{int((~seen).sum())} of {seen.size} logits missing")
    return out


def max_rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.abs(want)))


def check_logits(name: str, rows, want: np.ndarray, cfg: GPTConfig, rel: float = 1e-9) -> float:
    """Every logit equal to numpy's to ``rel`` relative (elementwise); the
    largest relative error, else :class:`Mismatch` naming ``name``."""
    got = logits_of(rows, cfg)
    err = max_rel_error(got, want)
    if not err <= rel:
        raise Mismatch(f"{name}: logits differ from numpy's, max relative error {err:.3g} > {rel:g}")
    return err
