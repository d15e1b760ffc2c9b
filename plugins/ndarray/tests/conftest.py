# SPDX-License-Identifier: Apache-2.0
"""Fixtures for qlink.xarray over the C build (DuckDB and SQLite routes).

The package under test is this source tree's python/qlink (importable
without qlink's native module); the plugin and the engines' extensions come
from the C release build (QLINK_BUILD_DIR, default build/release).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
sys.path.insert(0, str(ROOT / "python"))
os.environ.setdefault("QLINK_BUILD_DIR", str(BUILD))

PLUGIN = BUILD / "plugins" / "qlink_ndarray.so"
DUCKDB_EXT = BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension"
SQLITE_EXT = BUILD / "hosts" / "sqlite" / "qlink.so"

if not PLUGIN.is_file():
    pytest.skip(f"qlink_ndarray is not built: {PLUGIN}", allow_module_level=True)


class Engine:
    """One engine's connection and the spelling of a query's rows."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind == "duckdb":
            import qlink.duckdb

            self.con = qlink.duckdb.connect(plugin_dirs=[str(BUILD / "plugins")])
        else:
            import qlink.sqlite

            self.con = qlink.sqlite.connect(plugin_dirs=[str(BUILD / "plugins")])

    def rows(self, sql: str, args=()):
        if self.kind == "duckdb":
            return self.con.execute(sql, list(args)).fetchall()
        return self.con.execute(sql, tuple(args)).fetchall()

    def columns(self, table: str) -> list[str]:
        if self.kind == "duckdb":
            return [d[0] for d in self.con.execute(f"SELECT * FROM {table} LIMIT 0").description]
        cur = self.con.cursor()
        cur.execute(f"SELECT * FROM {table} LIMIT 1")  # apsw describes a statement while it has a row
        return [d[0] for d in cur.getdescription()]


def _engines():
    out = []
    if DUCKDB_EXT.is_file():
        out.append("duckdb")
    if SQLITE_EXT.is_file():
        out.append("sqlite")
    return out


@pytest.fixture(params=_engines())
def engine(request):
    return Engine(request.param)


@pytest.fixture()
def air():
    """A small air-temperature-like Dataset: time x lat x lon, one NaN."""
    rng = np.random.default_rng(7)
    data = rng.normal(280, 5, size=(6, 4, 5)).astype(np.float32)
    data[2, 1, 3] = np.nan
    return xr.Dataset(
        {"air": (("time", "lat", "lon"), data, {"units": "K", "long_name": "air temperature"})},
        coords={
            "time": pd.date_range("2013-01-01", periods=6, freq="6h"),
            "lat": np.array([75.0, 72.5, 70.0, 67.5]),
            "lon": np.array([200.0, 202.5, 205.0, 207.5, 210.0]),
        },
        attrs={"title": "test"},
    )
