# SPDX-License-Identifier: Apache-2.0
"""Metrics read back from ``EXPLAIN ANALYZE [VERBOSE]`` text, as DataFusion
and datafusion-distributed display them (used by test_distributed.py and
bench/distributed):

- a count under 1,000 exactly, above it in K/M/B/T with two decimals
  (``22.20 K``): ``interval`` gives the exact values it may stand for;
- a duration with its unit (``139.89µs``, ``1.23ms``, ``2.01s``);
- in a distributed plan's "Plan with Full Metrics", a node's per-task
  values as ``name={0:v, 1:v}`` or ``name=v, 0:v, 1:v`` (``task_metric``);
  a stage's task times as ``plan_executed_at={0:.., 1:..}``.
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
VALUE = r"[0-9.]+(?: [KMBGT])?(?:ns|µs|us|ms|s)?"


def interval(text: str) -> tuple[float, float]:
    """The exact values a displayed count may stand for, [lo, hi]."""
    num, _, unit = text.strip().partition(" ")
    scale = _UNITS[unit]
    decimals = len(num.split(".")[1]) if "." in num else 0
    half = 0.5 * 10 ** -decimals * scale if unit else 0
    return float(num) * scale - half, float(num) * scale + half


def count(text: str) -> float:
    """A displayed count as a number (the middle of its ``interval``)."""
    lo, hi = interval(text)
    return (lo + hi) / 2


def covers(text: str, exact: int) -> bool:
    lo, hi = interval(text)
    return lo <= exact <= hi


def seconds(text: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * _TIME_UNITS[m.group(2)]


def node_line(plan: str, node: str) -> str:
    """The one line of ``plan`` naming ``node`` (e.g. ``TaskScanExec:``)."""
    lines = [line for line in plan.splitlines() if node in line]
    if len(lines) != 1:
        raise AssertionError(f"one {node} line expected in:\n{plan}")
    return lines[0]


def metric(line: str, name: str) -> str:
    """Metric ``name``'s displayed value on a node's line."""
    m = re.search(rf"[\[ ]{name}=({VALUE})[,\]]", line)
    if not m:
        raise AssertionError(f"no {name} in {line}")
    return m.group(1)


def task_metric(line: str, name: str) -> dict[int, str]:
    """Metric ``name`` of each task (task index -> displayed value), from a
    line of "Plan with Full Metrics"."""
    m = re.search(rf"[\[ ]{name}=(\{{[^}}]*\}}|{VALUE}(?:, [0-9]+:{VALUE})+)", line)
    if not m:
        raise AssertionError(f"no per-task {name} in {line}")
    return {int(t): v for t, v in re.findall(rf"([0-9]+):({VALUE})", m.group(1))}


def task_spans(line: str) -> tuple[int, list[tuple[int, int, int]]]:
    """A TaskScanExec line's ``P partitions over T tasks: t0:[a..b)@host:port ...``
    (the worker part only on the coordinator): (P, [(task, a, b), ...])."""
    m = re.search(r"([0-9]+) partitions over ([0-9]+) tasks:((?: t[0-9]+:\[[0-9]+\.\.[0-9]+\)(?:@[^ ,]+)?)+)", line)
    if not m:
        raise AssertionError(f"no task spans in {line}")
    spans = [(int(t), int(a), int(b)) for t, a, b in re.findall(r"t([0-9]+):\[([0-9]+)\.\.([0-9]+)\)", m.group(3))]
    if len(spans) != int(m.group(2)):
        raise AssertionError(f"{m.group(2)} tasks but {len(spans)} spans in {line}")
    return int(m.group(1)), spans
