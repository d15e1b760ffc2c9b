# SPDX-License-Identifier: Apache-2.0
"""Files for the Rust plugins' queries: one table, ``trips``, written as a
Parquet file (row groups of 100 rows, for pruning), the same rows split in
two Parquet files in a folder, a CSV file and an ORC file, each once per
process with pyarrow into a temporary folder.

``trips`` has 1,000 rows, ``i`` = 0..999:

- ``id`` BIGINT ``i``; ``city`` VARCHAR, ``CITIES[i % 5]``;
- ``fare`` DOUBLE ``i * 0.25`` (exact in binary, so sums are exact in any
  order);
- ``doc`` VARCHAR, a JSON object ``{"city": city, "n": i, "tags": [...]}``
  with ``i % 3`` tags (Parquet and ORC only: CSV holds the first three
  columns).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

CITIES = ("Lyon", "Oslo", "Quito", "Nara", "Perth")
N = 1000
_paths: dict = {}


def row(i: int) -> tuple:
    """Row ``i`` of ``trips``: (id, city, fare, doc)."""
    city = CITIES[i % 5]
    doc = json.dumps({"city": city, "n": i, "tags": [f"t{k}" for k in range(i % 3)]})
    return (i, city, i * 0.25, doc)


def rows() -> list:
    return [row(i) for i in range(N)]


def unavailable() -> str | None:
    """Why the files cannot be written here, or None."""
    try:
        import pyarrow.orc  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        return f"pyarrow with ORC and Parquet is not installed ({exc.name}; scripts/setup.sh)"
    return None


def paths() -> dict:
    """{"parquet": file, "folder": dir/, "glob": dir/*.parquet, "csv": file,
    "txt": the CSV file named .txt, "orc": file, "lake": a folder holding trips.parquet (every row) and
    parts/ (two files), "csv_lake": a folder holding trips.csv}, written once per process; {} when
    pyarrow is missing."""
    if _paths or unavailable():
        return _paths
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.orc
    import pyarrow.parquet as pq

    folder = Path(tempfile.mkdtemp(prefix="qlink-engines-files-"))
    atexit.register(shutil.rmtree, folder, True)
    cols = list(zip(*rows()))
    table = pa.table({"id": pa.array(cols[0], pa.int64()), "city": pa.array(cols[1], pa.string()),
                      "fare": pa.array(cols[2], pa.float64()), "doc": pa.array(cols[3], pa.string())})
    pq.write_table(table, folder / "trips.parquet", row_group_size=100)
    (folder / "parts").mkdir()
    pq.write_table(table.slice(0, 500), folder / "parts" / "a.parquet")
    pq.write_table(table.slice(500), folder / "parts" / "b.parquet")
    pyarrow.csv.write_csv(table.select(["id", "city", "fare"]), folder / "trips.csv")
    # a file named by its path is read whatever its extension
    (folder / "trips.txt").write_bytes((folder / "trips.csv").read_bytes())
    pyarrow.orc.write_table(table, folder / "trips.orc")
    # folders served as schemas: every entry a table
    lake = folder / "lake"
    (lake / "parts").mkdir(parents=True)
    pq.write_table(table, lake / "trips.parquet", row_group_size=100)
    pq.write_table(table.slice(0, 500), lake / "parts" / "a.parquet")
    pq.write_table(table.slice(500), lake / "parts" / "b.parquet")
    (folder / "csv_lake").mkdir()
    (folder / "csv_lake" / "trips.csv").write_bytes((folder / "trips.csv").read_bytes())
    _paths.update(parquet=str(folder / "trips.parquet"), folder=str(folder / "parts") + "/",
                  glob=str(folder / "parts" / "*.parquet"), csv=str(folder / "trips.csv"),
                  txt=str(folder / "trips.txt"),
                  orc=str(folder / "trips.orc"), lake=str(lake), csv_lake=str(folder / "csv_lake"))
    return _paths
