#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Do two engines' CSV answers agree? same_answers.py LABEL A.csv B.csv

Rows are compared in order, cell by cell: cells that both read as numbers
are equal within a relative 1e-9 (SQLite prints REAL with 15 significant
digits, DataFusion with 17); others as text, with an empty cell equal to
NULL. Column names must match. Exit 0 when they agree, 1 naming the first
difference."""
import csv
import math
import sys


def number(s):
    try:
        return float(s)
    except ValueError:
        return None


def same(a, b):
    if a in ("", "NULL") and b in ("", "NULL"):
        return True
    x, y = number(a), number(b)
    if x is not None and y is not None:
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def main():
    label, pa, pb = sys.argv[1:4]
    with open(pa, newline="") as fa, open(pb, newline="") as fb:
        ra, rb = list(csv.reader(fa)), list(csv.reader(fb))
    if [h.lower() for h in ra[:1][0]] != [h.lower() for h in rb[:1][0]]:
        sys.exit(f"{label}: columns differ: {ra[:1]} vs {rb[:1]}")
    if len(ra) != len(rb):
        sys.exit(f"{label}: {len(ra) - 1} rows vs {len(rb) - 1}")
    for i, (x, y) in enumerate(zip(ra[1:], rb[1:]), 1):
        if len(x) != len(y) or not all(same(a, b) for a, b in zip(x, y)):
            sys.exit(f"{label}: row {i} differs: {x} vs {y}")


if __name__ == "__main__":
    main()
