# SPDX-License-Identifier: Apache-2.0
"""Shared by the DuckDB host's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
EXTS = {"v1": BUILD / "hosts" / "duckdb" / "qlink.duckdb_extension",
        "v2": BUILD / "hosts" / "duckdb" / "qlink_v2.duckdb_extension"}
PINNED = next(line.split("==")[1] for line in (ROOT / "scripts" / "requirements.txt").read_text().splitlines()
              if line.startswith("duckdb=="))
# How each build is asked for qlink_attach and qlink_load: DuckDB's C API V2
# runs SQL for an extension only as a query PRAGMA's statements.
STATEMENT = {"v1": "CALL", "v2": "PRAGMA"}


def builds() -> list:
    """Both builds as pytest parameters, V2 skipped where it cannot load."""
    import duckdb

    v2_skip = (f"the V2 DuckDB extension is not built: {EXTS['v2']}" if not EXTS["v2"].is_file() else
               f"the V2 build loads into duckdb {PINNED} only" if duckdb.__version__ != PINNED else None)
    return ["v1", pytest.param("v2", marks=pytest.mark.skipif(v2_skip is not None, reason=v2_skip or ""))]


def open_db(ext: Path, plugin_path: str | None, threads: int | None = None):
    """A DuckDB connection with the extension `ext` loaded, plugins from
    `plugin_path` (QLINK_PLUGIN_PATH, which the extension reads when it loads
    into a database; None: unset)."""
    import duckdb

    if plugin_path is None:
        os.environ.pop("QLINK_PLUGIN_PATH", None)
    else:
        os.environ["QLINK_PLUGIN_PATH"] = plugin_path
    config = {"allow_unsigned_extensions": True}
    if threads:
        config["threads"] = threads
    con = duckdb.connect(config=config)
    con.execute(f"LOAD '{ext}'")
    return con


@pytest.fixture
def run_helper():
    """run(code): `code` in a fresh Python that imports qlink from python/
    (no native module), with this build and no QLINK_PLUGIN_PATH; its stdout
    split into words (the run must succeed)."""
    def run(code: str) -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "QLINK_PLUGIN_PATH"}
        env["QLINK_BUILD_DIR"] = str(BUILD)
        env["PYTHONPATH"] = str(ROOT / "python")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    return run


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A small consolidated Zarr store: t2m(time, lat) and sp(lat)."""
    xr = pytest.importorskip("xarray")
    np = pytest.importorskip("numpy")
    path = tmp_path_factory.mktemp("zarr") / "era5.zarr"
    ds = xr.Dataset({"t2m": (("time", "lat"), np.arange(6, dtype="float64").reshape(3, 2)),
                     "sp": (("lat",), np.array([1.5, 2.5]))},
                    coords={"time": np.array(["2020-01-01", "2020-01-02", "2020-01-03"], dtype="datetime64[ns]"),
                            "lat": [10.0, 20.0]})
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, mode="w", consolidated=True)
    return path
