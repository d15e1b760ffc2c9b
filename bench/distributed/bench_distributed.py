#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The distributed path (``qlink sql --workers``) on one machine: its
overhead against the single process, what each worker read, and a model of
scan time for N workers over an N-times larger store.

    bench_distributed.py --era5 STORE --qlink BIN --worker BIN --plugin SO
                         [--out bench/results/distributed.json] [--reps 7]

On the ERA5-like store of ``make bench-zarr`` (bench/zarr/make_era5.py) and
its two queries (bench_zarr.era5_cases: the full-scan aggregate and the
box x 10 days):

1. overhead: each query ``--reps`` times as one process and through two
   ``qlink-worker``s on 127.0.0.1 (started here, stopped at the end),
   alternating; the query alone as ``qlink sql --timing`` reports it (the
   basis of bench-zarr's headline) and the whole process; medians.
   ``distributed_overhead_ratio`` = distributed / single process (the
   larger of the two queries'), target <= 1.5;
2. per worker: from ``EXPLAIN ANALYZE VERBOSE``'s per-task metrics, chunks
   and bytes read, rows, the plugin's time and the task's time, and their
   balance (the busiest worker against the mean), with the sum checked
   against the single-process scan's chunks_read and bytes_read;
3. a model (``model``): per-worker read bandwidth (every chunk file the
   scan reads, read back by one process, page cache warm) and per-worker
   decode rate (uncompressed bytes a task produced per second of its own
   wall time: read from the page cache, decode, partial aggregation, on the
   one core each worker has here) measured here, then for N workers over
   an N-times larger store (each worker holding this store's bytes) the
   predicted scan time, with the assumptions written into the JSON.

Answers of the two paths are checked to agree (counts exactly, floats to a
relative 1e-6, bench_zarr.agree); a mismatch fails the run.
"""
import argparse
import csv
import io
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "zarr"))
sys.path.insert(0, str(ROOT / "tests" / "engines"))

from bench_zarr import ERA5_TABLE, Qlink as QlinkCli, agree, era5_cases  # noqa: E402
from plan_metrics import count, metric, node_line, seconds, task_metric, task_spans  # noqa: E402
from workers import Workers  # noqa: E402

TARGET = 1.5
BALANCE = 0.10  # the busiest worker within 10% of the mean


class DistributedCli(QlinkCli):
    """The qlink CLI as a coordinator over ``workers``."""

    def __init__(self, binary, plugin, workers):
        super().__init__(binary, plugin)
        self.workers = workers

    def command(self, name, store, table, sql):
        cmd = super().command(name, store, table, sql)
        return cmd[:2] + self.workers + cmd[2:]


def worker_cpu(pids):
    """CPU seconds (user + system) the processes ``pids`` used so far."""
    ticks = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return ticks / os.sysconf("SC_CLK_TCK")


def timed(cli, store, sql, pids=()):
    """(query-alone wall s, query CPU s, whole-process wall s, answer) of one
    run; the CPU seconds are the qlink process's during the query (--timing)
    plus what the workers ``pids`` used meanwhile."""
    c0, t0 = worker_cpu(pids), time.perf_counter()
    answer = cli.run("era5", store, ERA5_TABLE, sql)
    wall = time.perf_counter() - t0
    return cli.last_query[0], cli.last_query[1] + worker_cpu(pids) - c0, wall, answer


def explain(cli, store, sql):
    """EXPLAIN ANALYZE VERBOSE's plans by plan_type, and the statement's
    --timing wall seconds."""
    out = cli.execute("era5", store, ERA5_TABLE, f"EXPLAIN ANALYZE VERBOSE {sql}")
    return {r["plan_type"]: r["plan"] for r in csv.DictReader(io.StringIO(out))}, cli.last_query[0]


def per_task(plans):
    """What each task of the scan's stage did, from the Full Metrics plan."""
    full = plans.get("Plan with Full Metrics", "")
    if "TaskScanExec:" not in full:
        raise SystemExit("bench_distributed.py: the scan was not divided among the workers (a store too small "
                         f"for the query, ERA5_DAYS < 20?); the plan:\n{full or plans}")
    scan = node_line(full, "TaskScanExec:")
    # the stage whose leaf is the scan: the last "Stage N" header above it
    lines = full.splitlines()
    at = lines.index(scan)
    stage = next(lines[i] for i in range(at, -1, -1) if "┌───── Stage " in lines[i])
    parts, spans = task_spans(scan)
    got = {name: task_metric(scan, name) for name in ("chunks_read", "bytes_read", "output_rows",
                                                      "plugin_elapsed_compute")}
    started, finished = task_metric(stage, "plan_executed_at"), task_metric(stage, "plan_finished_at")
    tasks = []
    for t, lo, hi in spans:
        tasks.append({
            "task": t, "partitions": [lo, hi],
            "chunks_read": int(count(got["chunks_read"][t])),
            "bytes_read": count(got["bytes_read"][t]),
            "rows": count(got["output_rows"][t]),
            "plugin_s": seconds(got["plugin_elapsed_compute"][t]),
            "task_s": seconds(finished[t]) - seconds(started[t]),
        })
    return parts, tasks


def imbalance(values):
    """The busiest worker's excess over the mean (0 = perfectly balanced)."""
    mean = statistics.fmean(values)
    return max(values) / mean - 1 if mean else 0.0


def chunk_files(store, arrays):
    files = []
    for a in arrays:
        for root, _, names in os.walk(os.path.join(store, a, "c")):
            files += [os.path.join(root, n) for n in names]
    return files


def read_bandwidth(files, reps=3):
    """Bytes per second reading ``files`` whole in one process (best of
    ``reps``; the page cache is warm after the first pass)."""
    total = sum(os.path.getsize(f) for f in files)
    buf = bytearray(max(os.path.getsize(f) for f in files))
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for f in files:
            with open(f, "rb", buffering=0) as fh:
                fh.readinto(buf)
        best = min(best, time.perf_counter() - t0)
    return total, total / best


def model(scan, store_bytes, raw_bytes_per_row, read_bps, overhead_s, workers_list, remote_bps):
    """Predicted scan time for N workers over an N-times larger store."""
    tasks = scan["tasks"]
    slower = max(tasks, key=lambda t: t["task_s"])
    decode_bps = slower["rows"] * raw_bytes_per_row / slower["task_s"]
    chunks_per_s = slower["chunks_read"] / slower["task_s"]
    store_raw = scan["single"]["rows"] * raw_bytes_per_row
    predictions = []
    for n in workers_list:
        read_s = store_bytes / read_bps
        decode_s = store_raw / decode_bps
        row = {"workers": n, "store_days": round(scan["single"]["rows"] / (24 * 181 * 360)) * n,
               "store_bytes": store_bytes * n,
               "read_s": read_s, "decode_s": decode_s, "overhead_s": overhead_s,
               "scan_s": overhead_s + read_s + decode_s}
        if remote_bps:
            row["scan_s_remote"] = overhead_s + store_bytes / remote_bps + decode_s
        # the same N workers over this store alone (each holding 1/N of it)
        row["scan_s_this_store"] = overhead_s + (read_s + decode_s) / n
        predictions.append(row)
    return {
        "inputs": {
            "read_bytes_per_s": read_bps,
            "decode_bytes_per_s": decode_bps,
            "decode_chunks_per_s": chunks_per_s,
            "raw_bytes_per_row": raw_bytes_per_row,
            "per_worker_store_bytes": store_bytes,  # the chunk files the scan reads, exactly
            "per_worker_raw_bytes": store_raw,
            "overhead_s": overhead_s,
            "remote_read_bytes_per_s_assumed": remote_bps,
        },
        "formula": "scan_s(N) = overhead_s + store_bytes / read_bytes_per_s + raw_bytes / decode_bytes_per_s, "
                   "store_bytes and raw_bytes those of this store (each of the N workers holds one store's worth); "
                   "scan_s_this_store(N) = overhead_s + (store_bytes / read_bytes_per_s + raw_bytes / "
                   "decode_bytes_per_s) / N, the N workers over this store alone",
        "assumptions": [
            "the N-times larger store is N copies of this one's layout (N times its daily chunks per array), so "
            "TaskScanExec gives each worker a contiguous run of about this store's blocks; the balance measured here "
            "(one block more on one worker of two) stays within one block",
            "each worker reads its chunks from its own storage at read_bytes_per_s, measured here as one "
            "process reading every chunk file the scan reads with the page cache warm (an upper bound: a "
            "disk or an object store is slower; scan_s_remote uses remote_read_bytes_per_s_assumed instead, "
            "an assumption, not a measurement)",
            "reading and decoding do not overlap (an upper bound on time); the page-cache read the plugin "
            "does is inside decode_bytes_per_s too, so the local read term counts it twice",
            "decode_bytes_per_s is per worker with one core, as each of the two workers on this 2-core "
            "machine had (the slower task's uncompressed bytes per second of task wall time: decode and "
            "partial aggregation); a worker with k cores and k partitions would decode about k times faster",
            "the coordinator's cost does not grow with N: plans go out concurrently (1.6 KB each here) and "
            "the aggregate's partial results are one row per task; overhead_s is what the two-worker run "
            "took beyond its slower task (planning, plan send, result collection, final aggregate)",
            "no shuffle: the queries aggregate to one row; a GROUP BY with many groups would add a "
            "repartition across the network",
        ],
        "predictions": predictions,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--era5", required=True)
    ap.add_argument("--qlink", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "distributed.json"))
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--explain-reps", type=int, default=3)
    ap.add_argument("--remote-read-mbps", type=float, default=200.0,
                    help="assumed per-worker read bandwidth of a remote store for the model (MB/s)")
    args = ap.parse_args(argv)
    for path, hint in ((args.qlink, "make build-cli"), (args.worker, "make build-cli"),
                       (args.plugin, "make build-release")):
        if not os.path.isfile(path):
            sys.exit(f"bench_distributed.py: {path} not found ({hint})")
    os.environ["QLINK_WORKER"] = args.worker
    load0 = os.getloadavg()
    single = QlinkCli(args.qlink, args.plugin)
    results = {"cases": []}
    with Workers(2, plugin_dir=os.path.dirname(os.path.abspath(args.plugin))) as workers:
        dist = DistributedCli(args.qlink, args.plugin, workers.args)
        for case in era5_cases():
            sql = case["sql"]
            print(f"{case['label']}: {args.reps} runs each way", file=sys.stderr)
            runs = {"single": [], "distributed": []}
            answers = {}
            pids = [w.proc.pid for w in workers.workers]
            for cli in (single, dist):  # warm the page cache and both paths
                timed(cli, args.era5, sql)
            for _ in range(args.reps):
                for way, cli, cpu_of in (("single", single, ()), ("distributed", dist, pids)):
                    q, c, w, answers[way] = timed(cli, args.era5, sql, cpu_of)
                    runs[way].append({"query_s": q, "query_cpu_s": c, "process_s": w})
            if not agree(answers["single"], answers["distributed"]):
                sys.exit(f"{case['id']}: the distributed answer {answers['distributed']} differs from the "
                         f"single-process one {answers['single']}")
            med = {way: {k: statistics.median(r[k] for r in rs) for k in ("query_s", "query_cpu_s", "process_s")}
                   for way, rs in runs.items()}
            local = node_line(explain(single, args.era5, sql)[0]["Plan with Metrics"], "ZarrScanExec:")
            # per-task figures from the EXPLAIN run of median wall time; the
            # overhead, what each run took beyond its slower task, as a median
            explained = []
            for _ in range(args.explain_reps):
                plans, elapsed = explain(dist, args.era5, sql)
                parts, tasks = per_task(plans)
                explained.append((elapsed, tasks, elapsed - max(t["task_s"] for t in tasks)))
            explained.sort(key=lambda e: e[0])
            _, tasks, _ = explained[len(explained) // 2]
            overhead = statistics.median(e[2] for e in explained)
            one = {"chunks_read": int(count(metric(local, "chunks_read"))),
                   "bytes_read": count(metric(local, "bytes_read")), "rows": count(metric(local, "output_rows"))}
            if sum(t["chunks_read"] for t in tasks) != one["chunks_read"]:
                sys.exit(f"{case['id']}: workers read {[t['chunks_read'] for t in tasks]} chunks, the single "
                         f"process {one['chunks_read']}")
            results["cases"].append({
                "id": case["id"], "label": case["label"], "sql": sql,
                "single": {**med["single"], **one}, "distributed": med["distributed"], "runs": runs,
                "ratio": med["distributed"]["query_s"] / med["single"]["query_s"],
                "cpu_ratio": med["distributed"]["query_cpu_s"] / med["single"]["query_cpu_s"],
                "overhead_s": overhead,
                "process_ratio": med["distributed"]["process_s"] / med["single"]["process_s"],
                "partitions": parts, "tasks": tasks,
                "chunks_imbalance": imbalance([t["chunks_read"] for t in tasks]),
                "bytes_imbalance": imbalance([t["bytes_read"] for t in tasks]),
                "answer": answers["single"],
            })
    scan = results["cases"][0]
    # t2m and tp, float32: the uncompressed bytes per row the scan decodes
    raw_per_row = 8
    files = chunk_files(args.era5, ("t2m", "tp"))
    total, read_bps = read_bandwidth(files)
    m = model(scan, total, raw_per_row, read_bps, max(scan["overhead_s"], 0.0), (1, 2, 4, 8, 16, 64),
              args.remote_read_mbps * 1e6)
    ratios = {c["id"]: c["ratio"] for c in results["cases"]}
    out = {
        "distributed_overhead_ratio": max(ratios.values()),
        **{f"distributed_overhead_ratio_{k.removeprefix('era5_')}": v for k, v in ratios.items()},
        "process_overhead_ratio": max(c["process_ratio"] for c in results["cases"]),
        "cpu_overhead_ratio": max(c["cpu_ratio"] for c in results["cases"]),
        "target": TARGET,
        "meets_target": max(ratios.values()) <= TARGET,
        "bytes_imbalance": max(c["bytes_imbalance"] for c in results["cases"]),
        "chunks_imbalance": max(c["chunks_imbalance"] for c in results["cases"]),
        "balanced_within_10pct": all(c["bytes_imbalance"] <= BALANCE and c["chunks_imbalance"] <= BALANCE
                                     for c in results["cases"]),
        "model": m,
        "cases": results["cases"],
        "method": {
            "timing": f"median of {args.reps} runs each way, alternating, after one warm-up run each; query_s "
                      "is the query alone as `qlink sql --timing` reports it (SQL submission to last batch "
                      "printed), process_s the whole qlink process, query_cpu_s the qlink process's CPU "
                      "seconds during the query plus the workers' (from /proc) over the run: the steadier "
                      "figure on a shared machine",
            "overhead": f"median over {args.explain_reps} EXPLAIN ANALYZE VERBOSE runs of the statement's "
                        "--timing wall time minus its slower task's (plan_finished_at - plan_executed_at)",
            "workers": "two qlink-worker processes on 127.0.0.1 of this machine, sharing its cores with the "
                       "coordinator; the single process uses DataFusion's default target partitions (the "
                       "core count) and so do the workers' scans, each task running its share",
            "per_worker": "EXPLAIN ANALYZE VERBOSE's per-task metrics (chunks_read, bytes_read, output_rows, "
                          "plugin_elapsed_compute) and stage task times (plan_finished_at - plan_executed_at); "
                          "bytes are displayed to 4 significant digits",
            "imbalance": "the busiest worker's chunks or bytes over the mean, minus 1",
        },
        "store": {"path": os.path.relpath(os.path.abspath(args.era5), ROOT), "rows": scan["single"]["rows"],
                  "chunk_files_bytes": total},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_before": load0,
                    "load_after": os.getloadavg()},
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(markdown(out))
    return 0


def markdown(out):
    lines = ["| query | single process (s) | 2 workers (s) | ratio | whole process ratio | CPU s, single | "
             "CPU s, 2 workers | CPU ratio | overhead (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in out["cases"]:
        lines.append(f"| {c['label']} | {c['single']['query_s']:.3f} | {c['distributed']['query_s']:.3f} | "
                     f"{c['ratio']:.2f} | {c['process_ratio']:.2f} | {c['single']['query_cpu_s']:.3f} | "
                     f"{c['distributed']['query_cpu_s']:.3f} | {c['cpu_ratio']:.2f} | {c['overhead_s']:.3f} |")
    lines += ["", "| query | task | partitions | chunks | bytes read (MB) | rows (M) | plugin (s) | task (s) |",
              "|---|---:|---|---:|---:|---:|---:|---:|"]
    for c in out["cases"]:
        for t in c["tasks"]:
            lines.append(f"| {c['label']} | {t['task']} | [{t['partitions'][0]}..{t['partitions'][1]}) | "
                         f"{t['chunks_read']} | {t['bytes_read'] / 1e6:.1f} | {t['rows'] / 1e6:.2f} | "
                         f"{t['plugin_s']:.3f} | {t['task_s']:.3f} |")
        lines.append(f"| {c['label']} | single | | {c['single']['chunks_read']} | "
                     f"{c['single']['bytes_read'] / 1e6:.1f} | {c['single']['rows'] / 1e6:.2f} | | |")
    m = out["model"]
    i = m["inputs"]
    lines += ["", f"Model inputs: read {i['read_bytes_per_s'] / 1e9:.2f} GB/s per worker (page cache), decode "
                  f"{i['decode_bytes_per_s'] / 1e6:.0f} MB/s per one-core worker, overhead {i['overhead_s']:.3f} s; "
                  f"remote read assumed {i['remote_read_bytes_per_s_assumed'] / 1e6:.0f} MB/s.", "",
              "| workers | store (N x this one) | predicted scan (s) | with remote reads (s) | this store alone (s) |",
              "|---:|---:|---:|---:|---:|"]
    for p in m["predictions"]:
        lines.append(f"| {p['workers']} | {p['store_bytes'] / 1e9:.2f} GB | {p['scan_s']:.2f} | "
                     f"{p.get('scan_s_remote', float('nan')):.2f} | {p['scan_s_this_store']:.2f} |")
    lines += ["", f"distributed_overhead_ratio {out['distributed_overhead_ratio']:.2f} (target <= {out['target']}), "
                  f"bytes imbalance {out['bytes_imbalance']:.1%}, chunks imbalance {out['chunks_imbalance']:.1%}"]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
