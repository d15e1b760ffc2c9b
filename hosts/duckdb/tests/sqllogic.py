# SPDX-License-Identifier: Apache-2.0
"""A small runner of DuckDB's SQL logic test format (sqllogictest), for the
files under hosts/duckdb/test/sql: each file runs against one build of the
extension, on a fresh connection that has it loaded (test_sqllogic.py).

What it reads, as DuckDB's runner does:

- `# ...` comment lines, and blank lines between records;
- `require qlink` (the file needs the extension: the runner loaded it) and
  `require-env NAME` (the file is skipped unless the runner defines NAME);
- `statement ok` / `statement error`, the SQL on the following lines; an
  error's expected message after a `----` line: it must occur in DuckDB's
  message (or match it, written `<REGEX>:pattern`);
- `query TYPES [nosort|rowsort|valuesort]` (TYPES one letter per column: I
  integer, R real, T text), the SQL, a `----` line, then one line per row
  with the values separated by tabs: NULL for a null, true / false,
  (empty) for an empty string;
- `onlyif NAME` / `skipif NAME` before a record, NAME being the build
  (v1, v2), where DuckDB's runner names an engine;
- `mode skip` / `mode unskip` around records not to run.

`${NAME}` in SQL and results is replaced by the runner's variable NAME (an
unknown name is an error)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


class LogicError(AssertionError):
    """A record whose outcome differs from the file's, with its place."""


class Skip(Exception):
    """The file cannot run here (a `require` it does not meet)."""


@dataclass
class Record:
    kind: str                  # "statement ok", "statement error", "query", "require", "require-env"
    line: int                  # where it starts in the file (1-based)
    args: list = field(default_factory=list)  # query: [TYPES, SORT]; require(-env): [NAME]
    sql: str = ""
    expected: list = field(default_factory=list)  # the lines after ----
    only: str | None = None    # onlyif NAME
    skip: str | None = None    # skipif NAME


def parse(text: str) -> list[Record]:
    """The records of a .test file."""
    lines = text.splitlines()
    records, i, pending, skipping = [], 0, {}, False
    while i < len(lines):
        line = lines[i].rstrip("\n")
        words = line.split()
        if not words or line.lstrip().startswith("#"):
            i += 1
            continue
        head, start = words[0], i + 1
        if head == "mode":
            skipping = words[1:] == ["skip"]
            i += 1
            continue
        if head in ("onlyif", "skipif"):
            pending["only" if head == "onlyif" else "skip"] = words[1]
            i += 1
            continue
        if head in ("require", "require-env"):
            records.append(Record(head, start, words[1:2]))
            i += 1
            continue
        if head not in ("statement", "query"):
            raise LogicError(f"line {start}: unknown record '{line}'")
        if head == "statement" and words[1:] not in (["ok"], ["error"]):
            raise LogicError(f"line {start}: a statement is 'statement ok' or 'statement error'")
        body, i = [], i + 1
        while i < len(lines) and lines[i].strip() and lines[i] != "----":
            body.append(lines[i])
            i += 1
        expected = []
        if i < len(lines) and lines[i] == "----":
            i += 1
            while i < len(lines) and lines[i].strip():
                expected.append(lines[i])
                i += 1
        if head == "query":
            sort = words[2] if len(words) > 2 else "nosort"
            if len(words) < 2 or not re.fullmatch(r"[IRT]+", words[1]) or sort not in ("nosort", "rowsort",
                                                                                       "valuesort"):
                raise LogicError(f"line {start}: a query is 'query TYPES [nosort|rowsort|valuesort]'")
            record = Record("query", start, [words[1], sort], "\n".join(body), expected)
        else:
            record = Record(" ".join(words[:2]), start, [], "\n".join(body), expected)
        if not body:
            raise LogicError(f"line {start}: '{line}' has no SQL")
        record.only, record.skip = pending.pop("only", None), pending.pop("skip", None)
        if not skipping:
            records.append(record)
    return records


def substitute(text: str, variables: dict) -> str:
    def one(m):
        if m.group(1) not in variables:
            raise LogicError(f"${{{m.group(1)}}} is not a variable of this run ({', '.join(sorted(variables))})")
        return str(variables[m.group(1)])
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", one, text)


def cell(value) -> str:
    """A value as the result lines write it."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value == "":
        return "(empty)"
    return str(value)


def run(path: Path, connect, build: str, variables: dict) -> int:
    """Run the records of `path` on connect() (a connection with the build
    loaded); the number run. Raises LogicError at the first record whose
    outcome differs, Skip when a `require` is not met."""
    records = parse(path.read_text())
    con, n = connect(), 0
    for r in records:
        where = f"{path.name}:{r.line}"
        if r.kind == "require":
            if r.args != ["qlink"]:
                raise Skip(f"{where}: require {' '.join(r.args)}: only qlink is loaded here")
            continue
        if r.kind == "require-env":
            if r.args[0] not in variables:
                raise Skip(f"{where}: require-env {r.args[0]}: not set in this run")
            continue
        if (r.only and r.only != build) or (r.skip and r.skip == build):
            continue
        sql = substitute(r.sql, variables)
        expected = [substitute(e, variables) for e in r.expected]
        n += 1
        try:
            cursor = con.execute(sql)
            rows = cursor.fetchall() if cursor.description else []
            error = None
        except Exception as e:  # noqa: BLE001 - compared with the record
            rows, error = None, e
        if r.kind == "statement error":
            if error is None:
                raise LogicError(f"{where}: succeeded, the file expects an error\n{sql}")
            want = "\n".join(expected)
            message = str(error)
            ok = re.search(want[len("<REGEX>:"):], message, re.S) if want.startswith("<REGEX>:") else want in message
            if not ok:
                raise LogicError(f"{where}: the error\n  {message}\ndoes not contain\n  {want}\n{sql}")
            continue
        if error is not None:
            raise LogicError(f"{where}: {type(error).__name__}: {error}\n{sql}")
        if r.kind == "query":
            types, sort = r.args
            width = len(cursor.description)
            if width != len(types):
                raise LogicError(f"{where}: {width} columns, the file expects {len(types)} ({types})\n{sql}")
            got = ["\t".join(cell(v) for v in row) for row in rows]
            want = list(expected)
            if sort == "rowsort":
                got, want = sorted(got), sorted(want)
            elif sort == "valuesort":
                got = sorted(v for line in got for v in line.split("\t"))
                want = sorted(v for line in want for v in line.split("\t"))
            if got != want:
                raise LogicError(f"{where}: wrong result\n{sql}\n-- expected\n" + "\n".join(want) +
                                 "\n-- got\n" + "\n".join(got))
    return n
