# SPDX-License-Identifier: Apache-2.0
"""Distributed execution over qlink_zarr (``qlink sql --workers`` over the
session's two ``qlink-worker``s, conftest.py's ``qlink_workers``):

- each worker reads its own chunks: from ``EXPLAIN ANALYZE VERBOSE``'s
  per-task metrics, task t's ``chunks_read`` and ``bytes_read`` are exactly
  those of the chunk files of the blocks in its partitions (the scan's
  partitions divided as ``TaskScanExec`` draws them, the blocks dealt to
  partitions as qlink_zarr does: contiguous runs in C order), the two sets
  are disjoint, and their union is what the single-process scan reads
  (its own ``chunks_read`` and ``bytes_read``); for a full scan and for a
  box that prunes chunks;
- rows equal the single-process ones exactly;
- the fold planner (``--planner qlink_fold/fold``), whose FoldExec keeps
  the plan on the coordinator, gives the same rows with ``--workers`` as
  without, and as the stock plan.

The store is written here with the venv's xarray/zarr: 16 x 4 x 6 float32
values in 2 x 2 x 6 chunks (16 chunks, ``block_rows=1``: one block per
chunk), each time block's values of more entropy than the one before, so
the chunk files differ in size and a task reading another set of chunks
would show other byte counts.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import warnings
from pathlib import Path

import pytest

import datasets
from engine import plugin_path
from plan_metrics import covers, metric, node_line, task_metric, task_spans
from engine_datafusion import cli_path
from workers import worker_path

NT, NY, NX = 16, 4, 6
CT, CY = 2, 2  # chunk extents along time and y (x: whole)


def need_tools():
    for path, what in ((cli_path(), "the qlink CLI"), (worker_path(), "qlink-worker")):
        if not path.is_file():
            pytest.skip(f"{what} is not built: {path} (make build-cli)")
    if not Path(plugin_path("qlink_zarr")).is_file():
        pytest.skip(f"qlink_zarr is not built: {plugin_path('qlink_zarr')}")
    if datasets.unavailable():
        pytest.skip(datasets.unavailable())


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    need_tools()
    import numpy as np
    import pandas as pd
    import xarray as xr

    rng = np.random.default_rng(3)
    v = np.zeros((NT, NY, NX), dtype="float32")
    for b in range(NT // CT):
        v[b * CT:(b + 1) * CT] = rng.integers(0, 2 ** (2 * b), (CT, NY, NX))
    ds = xr.Dataset({"v": (("time", "y", "x"), v)},
                    coords={"time": pd.date_range("2020-01-01", periods=NT, freq="h"),
                            "y": np.arange(NY, dtype="int64"), "x": np.arange(NX, dtype="int64")})
    path = tmp_path_factory.mktemp("distributed") / "c.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is not in the v3 spec
        ds.to_zarr(path, mode="w", zarr_format=3, encoding={"v": {"chunks": (CT, CY, NX)}})
    return path


def qlink(*args: str) -> str:
    out = subprocess.run([str(cli_path()), *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"qlink {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def table(store: Path) -> list[str]:
    return ["--table", f"z={plugin_path('qlink_zarr')}/table?path={store}&block_rows=1"]


def rows(store: Path, sql: str, *extra: str) -> list[dict]:
    return json.loads(qlink("sql", "--format", "json", *extra, *table(store), "--", sql) or "[]")


def plans(store: Path, sql: str, *extra: str) -> dict[str, str]:
    """``EXPLAIN ANALYZE VERBOSE sql``'s plans by plan_type."""
    out = qlink("sql", "--format", "csv", *extra, *table(store), "--", f"EXPLAIN ANALYZE VERBOSE {sql}")
    return {r["plan_type"]: r["plan"] for r in csv.DictReader(io.StringIO(out))}


# ---- which chunk files each task must read


def chunk_file(store: Path, block: int) -> Path:
    """The chunk file of block ``block`` (C order over time x y blocks)."""
    bt, by = divmod(block, NY // CY)
    return store / "v" / "c" / str(bt) / str(by) / "0"


def kept_blocks(t_range: range, y_range: range) -> list[int]:
    """Blocks meeting time rows ``t_range`` and y values ``y_range``, in C order."""
    return [bt * (NY // CY) + by for bt in range(NT // CT) for by in range(NY // CY)
            if set(range(bt * CT, (bt + 1) * CT)) & set(t_range) and set(range(by * CY, (by + 1) * CY)) & set(y_range)]


def partition_blocks(blocks: list[int], parts: int) -> list[list[int]]:
    """qlink_zarr's dealing: contiguous runs in order, the first ``n % parts``
    partitions one block longer (plugins/zarr/core/src/scan.c)."""
    base, extra = divmod(len(blocks), parts)
    first = [p * base + min(p, extra) for p in range(parts + 1)]
    return [blocks[first[p]:first[p + 1]] for p in range(parts)]


CASES = [
    ("full_scan", "SELECT count(*) AS n, sum(v) AS s, max(v) AS hi FROM z", range(NT), range(NY)),
    # a box: time rows 3..10 (time blocks 1..5), y 2..3 (y block 1)
    ("box", "SELECT count(*) AS n, sum(v) AS s, min(v) AS lo FROM z "
            "WHERE time >= TIMESTAMP '2020-01-01T03:00:00' AND time <= TIMESTAMP '2020-01-01T10:00:00' AND y >= 2",
     range(3, 11), range(2, NY)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_workers_read_disjoint_chunks_whose_union_is_the_scan(store, qlink_workers, case):
    _, sql, t_range, y_range = case
    workers = qlink_workers.args
    assert rows(store, sql, *workers) == rows(store, sql)

    kept = kept_blocks(t_range, y_range)
    sizes = {b: chunk_file(store, b).stat().st_size for b in kept}
    local = node_line(plans(store, sql)["Plan with Metrics"], "ZarrScanExec:")
    assert metric(local, "chunks_read") == str(len(kept)), local
    assert covers(metric(local, "bytes_read"), sum(sizes.values())), (local, sum(sizes.values()))

    full = node_line(plans(store, sql, *workers)["Plan with Full Metrics"], "TaskScanExec:")
    parts = int(re.search(r"ZarrScanExec: .* partitions=([0-9]+) ", full).group(1))
    spanned, spans = task_spans(full)
    assert spanned == parts and len(spans) == 2, full
    by_partition = partition_blocks(kept, parts)
    chunks, nbytes = task_metric(full, "chunks_read"), task_metric(full, "bytes_read")
    assert sorted(chunks) == sorted(nbytes) == [0, 1], full
    seen: list[set[int]] = []
    for t, lo, hi in spans:
        mine = [b for p in range(lo, hi) for b in by_partition[p]]
        assert mine, f"task {t} was given no chunk: {full}"
        assert chunks[t] == str(len(mine)), (t, mine, full)
        assert covers(nbytes[t], sum(sizes[b] for b in mine)), (t, mine, [sizes[b] for b in mine], full)
        seen.append(set(mine))
    # disjoint, together the single-process scan's chunks, and told apart
    # by their bytes (else the byte check above would not tell which set a
    # task read)
    assert not seen[0] & seen[1] and seen[0] | seen[1] == set(kept)
    assert sum(sizes[b] for b in seen[0]) != sum(sizes[b] for b in seen[1])


# ---- the fold planner: a matmul C[i,k] = sum_j A[i,j] * B[j,k] over two
# qlink_zarr tables.

FOLD_SQL = ("SELECT a.i, b.k, SUM(a.a * b.b) AS c FROM a JOIN b ON a.j = b.j "
            "GROUP BY a.i, b.k ORDER BY a.i, b.k")


@pytest.fixture(scope="module")
def matrices(tmp_path_factory):
    need_tools()
    import numpy as np
    import xarray as xr

    rng = np.random.default_rng(2)
    root = tmp_path_factory.mktemp("fold")
    a = xr.Dataset({"a": (("i", "j"), rng.integers(-9, 10, (40, 12)).astype("int64"))},
                   coords={"i": np.arange(40, dtype="int64"), "j": np.arange(12, dtype="int64")})
    b = xr.Dataset({"b": (("j", "k"), rng.integers(-9, 10, (12, 6)).astype("int64"))},
                   coords={"j": np.arange(12, dtype="int64"), "k": np.arange(6, dtype="int64")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a.to_zarr(root / "a.zarr", mode="w", zarr_format=3, encoding={"a": {"chunks": (10, 12)}})
        b.to_zarr(root / "b.zarr", mode="w", zarr_format=3, encoding={"b": {"chunks": (4, 6)}})
    want = (a.a.values @ b.b.values)
    return root, [{"i": i, "k": k, "c": int(want[i, k])} for i in range(40) for k in range(6)]


def fold_args(root: Path, planner: bool) -> list[str]:
    zarr = plugin_path("qlink_zarr")
    args = ["--table", f"a={zarr}/table?path={root / 'a.zarr'}&block_rows=1",
            "--table", f"b={zarr}/table?path={root / 'b.zarr'}&block_rows=1"]
    if planner:
        args = ["--plugin", plugin_path("qlink_fold"), "--planner", "qlink_fold/fold", *args]
    return args


def test_the_fold_planner_gives_the_same_rows_with_workers(matrices, qlink_workers):
    if not Path(plugin_path("qlink_fold")).is_file():
        pytest.skip(f"qlink_fold is not built: {plugin_path('qlink_fold')}")
    root, want = matrices
    workers = qlink_workers.args

    def run(*args):
        return json.loads(qlink("sql", "--format", "json", *args, "--", FOLD_SQL))

    def analyzed(*args):
        return qlink("explain", "--analyze", "--format", "csv", *args, FOLD_SQL)

    assert run(*fold_args(root, True)) == want
    assert run(*workers, *fold_args(root, True)) == want
    assert run(*workers, *fold_args(root, False)) == want
    # FoldExec ran, on the coordinator (no stage went to a worker) ...
    plan = analyzed(*workers, *fold_args(root, True))
    assert "FoldExec:" in plan and "DistributedExec" not in plan, plan
    # ... where the stock plan of the same query is distributed
    plan = analyzed(*workers, *fold_args(root, False))
    assert "DistributedExec" in plan and "TaskScanExec:" in plan and "FoldExec" not in plan, plan
