# SPDX-License-Identifier: Apache-2.0
"""make compat-xarray-sql: xarray-sql 0.6.0's own test suite (from its PyPI
sdist, downloaded into build/compat-xarray-sql, never committed) run
against qlink.xarray standing in for xarray_sql (shim/xarray_sql), then a
report: passed / failed / not applicable, each failure and each
not-applicable test with its reason (REPORT.md beside this file, and
results.json in the build folder).

Not applicable: a test that skips itself (a missing optional package, a
server it needs), one that reaches an xarray-sql internal (the shim's
stand-ins raise NotApplicable: its Arrow readers, pushdown datasets, Flight
SQL server, ADBC adapters, cftime encoders, ...), and those judged so in
JUDGED below, each with why. A test of the DataFusion route when the qlink
wheel (qlink._qlink) is not installed is "not run" and counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VERSION = "0.6.0"

# Tests judged not applicable by reading them: (regex on the test id, reason).
JUDGED: list[tuple[str, str]] = [
    (r"test_timedelta_microseconds_register_filter_and_prune",
     "monkeypatches xarray_sql.sql.read_xarray_table (an internal) to count its Python blocks"),
    (r"arco-era5|test_adbc_era5_integration",
     "reads ARCO-ERA5 from Google Cloud Storage (gcsfs and network access, neither here)"),
]
# Failures judged not applicable by what they raise: (regex on the error text, reason).
JUDGED_ERRORS: list[tuple[str, str]] = [
    (r"unexpected keyword arguments? \[?'_iteration_callback'",
     "passes xarray-sql's private _iteration_callback to observe its Python batch loop (qlink has none: "
     "the scan is C)"),
    (r"Please install gcsfs", "reads a dataset from Google Cloud Storage (gcsfs and network access, neither here)"),
]


# Failures explained (test id regex -> what causes it), printed with the reason.
NOTES: list[tuple[str, str]] = [
    (r"test_360day_integer_filter", "a different representation, by design: qlink serves cftime dates as "
     "ISO-8601 text, xarray-sql non-Gregorian ones as integer offsets from a reference date"),
    (r"test_gregorian_like_no_cftime_udf", "qlink registers cftime() for every cftime calendar, since all of "
     "them are text here; xarray-sql only for the non-Gregorian ones"),
    (r"test_exact_byte_size_in_scan_statistics", "a different rule, by design: a float variable's NaN is "
     "served as NULL, so its column may carry a validity buffer sized per batch, and qlink reports the "
     "scan's byte size as Inexact; xarray-sql counts the values' bytes alone and calls that Exact"),
    (r"test_adbc_backend\.py::.*\[duckdb", "not built: xarray-sql 0.6's ADBC backend ingests (copies) a Dataset "
     "into any database through an ADBC connection; qlink.xarray registers Datasets by reference in engines "
     "that load its plugins (DuckDB through qlink.duckdb.connect()), and has no ingest route"),
    (r"test_a_failed_mixed_dimension_registration_adds_nothing", "a different rule: registering a name again on "
     "qlink's FlightSQLServer replaces it (a failed replacement keeps the old one); xarray-sql adds the new "
     "groups and refuses names already taken"),
    (r"test_a_malformed_descriptor_is_the_clients_error|test_plain_flight_schema_of_a_path", "not built: "
     "GetSchema is answered UNIMPLEMENTED for every descriptor by arrow-flight 59's Flight SQL service, which "
     "qlink serve builds on (GetFlightInfo, which carries the schema, is served for paths and commands)"),
    (r"test_missing_partition_bound_removes_global_coordinate_statistics", "qlink gives statistics where "
     "xarray-sql gives none: the coordinate's NaN is NULL, so its min 0.0 and max 3.0 over the other cells "
     "are exact (xarray-sql drops them because one partition has no bound)"),
]


def fetch_sdist(work: Path) -> Path:
    """The sdist's tests/, copied alone into work/suite (beside them the
    sdist's own xarray_sql package would shadow the shim)."""
    suite = work / "suite"
    if (suite / "tests").is_dir():
        return suite
    src = work / f"xarray_sql-{VERSION}"
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                    "--no-binary", "xarray-sql", f"xarray-sql=={VERSION}", "-d", str(work)], check=True)
    with tarfile.open(work / f"xarray_sql-{VERSION}.tar.gz") as tar:
        tar.extractall(work, filter="data")
    suite.mkdir()
    shutil.copytree(src / "tests", suite / "tests")
    return suite


def classify(r: dict, have_wheel: bool) -> tuple[str, str]:
    text = r.get("text", "") + " " + r.get("reason", "")
    for pattern, why in JUDGED:
        if re.search(pattern, r["test"]):
            return "not applicable", why
    if r["outcome"] == "passed":
        return "passed", ""
    for pattern, why in JUDGED_ERRORS:
        if re.search(pattern, text):
            return "not applicable", why
    m = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
    if r["when"] == "collect" and m and not m.group(1).startswith("xarray_sql"):
        return "not applicable", f"imports {m.group(1)}, an optional dependency of xarray-sql not installed here"
    if r["outcome"] == "skipped":
        return "not applicable", "skips itself: " + r["reason"]
    m = re.search(r"NotApplicable: (uses xarray-sql internal [\w.]+)", text)
    if m:
        return "not applicable", m.group(1)
    if not have_wheel and ("qlink._qlink" in text or "needs qlink's native module" in text):
        return "not run", "DataFusion route: the qlink wheel (qlink._qlink) is not installed"
    note = next((why for pattern, why in NOTES if re.search(pattern, r["test"])), None)
    return "failed", r["reason"] + (f" ({note})" if note else "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=str(ROOT / "build" / "compat-xarray-sql"))
    ap.add_argument("--report", default=str(HERE / "REPORT.md"))
    ap.add_argument("-k", default=None, help="pytest -k expression (a partial run; the report says so)")
    ap.add_argument("--report-only", action="store_true", help="classify the last run's outcomes again")
    args = ap.parse_args()
    work = Path(args.work)
    src = fetch_sdist(work)
    out = work / "results.json"
    env = dict(os.environ)
    # qlink itself: the installed wheel where there is one (compat_plugin.py adds this tree's modules a
    # wheel older than them lacks), else this tree's python/ (the DuckDB route only)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE / "shim"), str(HERE)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["QLINK_COMPAT_OUT"] = str(out)
    probe = subprocess.run([sys.executable, "-c", "import qlink._qlink"], capture_output=True, env=env)
    have_wheel = probe.returncode == 0
    if have_wheel:
        # the wheel as a user has it: its own plugins and extensions (qlink.plugin_dir()), no source tree
        env.pop("QLINK_BUILD_DIR", None)
    else:
        env.setdefault("QLINK_BUILD_DIR", str(ROOT / "build" / "release"))
    if args.report_only:
        args.k = json.loads((work / "run.json").read_text()).get("k")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "compat_plugin", "--tb=short",
           "--continue-on-collection-errors", "-o", "addopts=", str(src / "tests")]
    if args.k:
        cmd += ["-k", args.k]
    if not args.report_only:
        out.unlink(missing_ok=True)
        proc = subprocess.run(cmd, cwd=src, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        (work / "pytest.log").write_text(proc.stdout)
        (work / "run.json").write_text(json.dumps({"k": args.k}))
    if not out.is_file():
        sys.exit(f"compat-xarray-sql: pytest reported nothing; its output ends:\n{proc.stdout[-3000:]}")
    results = json.loads(out.read_text())
    rows = []
    for r in results:
        verdict, why = classify(r, have_wheel)
        rows.append({**r, "verdict": verdict, "why": why})
    (work / "verdicts.json").write_text(json.dumps(rows, indent=1))
    counts = Counter(r["verdict"] for r in rows)
    by_file: dict[str, Counter] = defaultdict(Counter)
    for r in rows:
        by_file[r["test"].split("::")[0].replace("tests/", "")][r["verdict"]] += 1
    verdicts = ["passed", "failed", "not applicable", "not run"]
    lines = [
        f"# xarray-sql {VERSION}'s test suite against qlink.xarray",
        "",
        "Written by `make compat-xarray-sql` (tests/compat_xarray_sql/run.py): the tests of the",
        f"xarray-sql {VERSION} sdist, with `xarray_sql` answered by `qlink.xarray`",
        "(tests/compat_xarray_sql/shim). What the run changes around them: compat_plugin.py.",
        ("qlink: the installed wheel alone (its own plugins and DuckDB and SQLite extensions; no source tree)."
         if have_wheel else "qlink: this tree's python/ and C build (no wheel installed: the DataFusion route "
                            "is not run).")
        + (f" Partial run: -k {args.k!r}." if args.k else ""),
        "",
        "| verdict | tests |", "|---|---|",
        *[f"| {v} | {counts.get(v, 0)} |" for v in verdicts],
        "",
        "## By file", "",
        "| file | " + " | ".join(verdicts) + " |", "|---|" + "---|" * len(verdicts),
        *[f"| {f} | " + " | ".join(str(c.get(v, 0)) for v in verdicts) + " |" for f, c in sorted(by_file.items())],
        "",
        "## Failed", "",
        *[f"- `{r['test']}`: {r['why']}" for r in rows if r["verdict"] == "failed"],
        "",
        "## Not applicable", "",
    ]
    na = defaultdict(list)
    for r in rows:
        if r["verdict"] == "not applicable":
            na[r["why"]].append(r["test"])
    for why, tests in sorted(na.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- {why} ({len(tests)}): " + ", ".join(f"`{t.split('::', 1)[-1]}`" for t in tests[:12])
                     + (" ..." if len(tests) > 12 else ""))
    if counts.get("not run"):
        lines += ["", "## Not run", "", f"- {counts['not run']} tests of the DataFusion route: the qlink wheel "
                  "(qlink._qlink) is not installed here"]
    Path(args.report).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:14]))
    print(f"report: {args.report}; details: {work / 'verdicts.json'}; pytest log: {work / 'pytest.log'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
