# SPDX-License-Identifier: Apache-2.0
"""Virtual Zarr over HTTP: kerchunk references whose chunks are byte
ranges of netCDF files on a web server, read through the qlink tool (its
session makes an HTTP object store for an http(s):// URL, the same one a
`path=https://...` store uses, with its same-origin redirect rule), and
compared exactly with xarray's reading of the files. The server is
python/tests/test_http_store.py's: the standard library's file server plus
single ranges.

Needs the qlink tool (QLINK_CLI, default ~/.cache/qlink-target/release/qlink)
and the release build's plugin (QLINK_BUILD_DIR, default build/release)."""
import functools
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import ROOT
from test_kerchunk import NC4_ENCODING, dataset, hdf_refs, nc3_refs, write_refs

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "qlink-target")) / "release"
CLI = Path(os.environ.get("QLINK_CLI") or TARGET / "qlink")
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", Path(ROOT) / "build" / "release"))
ZARR = BUILD / "plugins" / "qlink_zarr.so"

pytestmark = pytest.mark.skipif(not CLI.is_file() or not ZARR.is_file(), reason=f"needs {CLI} and {ZARR}")


def range_handler():
    """RangeHandler of python/tests/test_http_store.py (its module imports
    the qlink package: skipped where that is not installed)."""
    path = Path(ROOT) / "python" / "tests" / "test_http_store.py"
    spec = importlib.util.spec_from_file_location("qlink_http_store_tests", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        pytest.skip(f"{path} needs {e.name}")
    return module.RangeHandler


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(root folder, base URL, handler class): netCDF-4 and netCDF-3 files
    served over HTTP with ranges on 127.0.0.1."""
    root = tmp_path_factory.mktemp("kc-http")
    ds = dataset()
    ds.to_netcdf(root / "obs.nc", engine="netcdf4", encoding=NC4_ENCODING)
    ds.to_netcdf(root / "obs3.nc", format="NETCDF3_64BIT", unlimited_dims=["time"])
    handler = range_handler()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def sql(path, query):
    p = subprocess.run([str(CLI), "sql", "--format", "json", "--schema", f"s={ZARR}/store?path={path}", query],
                       capture_output=True, text=True, timeout=300)
    return p


def rows(path, query):
    p = sql(path, query)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout or "[]")


def expected(nc):
    """xarray's to_dataframe() of the file's time_lat_lon variables, as the
    tool prints them (NaN, xarray's fill value, as null)."""
    df = xr.open_dataset(nc)[["flag", "temp"]].to_dataframe().reset_index()
    return [{"time": pd.Timestamp(r.time).isoformat(), "lat": r.lat, "lon": r.lon, "flag": int(r.flag),
             "temp": None if np.isnan(r.temp) else float(r.temp)} for r in df.itertuples()]


QUERY = "SELECT time, lat, lon, flag, temp FROM s.time_lat_lon ORDER BY time, lat, lon"


def with_urls(refs, fn):
    refs["refs"] = {k: ([fn(v[0]), *v[1:]] if isinstance(v, list) else v) for k, v in refs["refs"].items()}
    return refs


@pytest.mark.parametrize("name", ["obs.nc", "obs3.nc"])
def test_local_references_to_http_ranges(served, tmp_path, name):
    root, base, handler = served
    refs = hdf_refs(root / name, inline_threshold=0) if name == "obs.nc" else nc3_refs(root / name, inline_threshold=0)
    f = write_refs(with_urls(refs, lambda u: f"{base}/{Path(u).name}"), tmp_path / "r.json")
    handler.requests.clear()
    assert rows(f, QUERY) == expected(root / name)
    ranges = [r for r in handler.requests if r[0] == "GET" and r[1] == f"/{name}"]
    assert ranges and all(r[2] and r[2].startswith("bytes=") for r in ranges), handler.requests
    assert rows(f, "SELECT depth FROM s.lat_lon WHERE lat = 50.0 AND lon = 0.0") == [{"depth": None}]
    assert rows(f, "SELECT elev FROM s.scalars") == [{"elev": 12.5}]


def test_references_served_over_http_with_relative_urls(served):
    """The reference file itself on the server; kerchunk's relative urls
    resolve against its folder there."""
    root, base, _ = served
    sub = root / "refs"
    sub.mkdir(exist_ok=True)
    refs = with_urls(hdf_refs(root / "obs.nc", inline_threshold=0), lambda u: "../obs.nc")
    write_refs(refs, sub / "rel.json")
    assert rows(f"{base}/refs/rel.json", QUERY) == expected(root / "obs.nc")


def test_remote_references_may_not_read_local_files(served, tmp_path):
    root, base, _ = served
    local = tmp_path / "secret.nc"
    shutil.copy(root / "obs.nc", local)
    refs = with_urls(hdf_refs(root / "obs.nc", inline_threshold=0), lambda u: str(local))
    write_refs(refs, root / "evil.json")
    p = sql(f"{base}/evil.json", QUERY)
    assert p.returncode != 0
    assert f"-> '{local}' is refused: a reference file read from {base} may not point at local files" in p.stderr


def test_missing_http_target(served, tmp_path):
    root, base, _ = served
    refs = hdf_refs(root / "obs.nc", inline_threshold=0)
    key = next(k for k, v in refs["refs"].items() if k.startswith("temp/") and isinstance(v, list))
    refs["refs"][key][0] = f"{base}/gone.nc"
    f = write_refs(with_urls(refs, lambda u: u if u.startswith("http") else f"{base}/obs.nc"), tmp_path / "m.json")
    p = sql(f, QUERY)
    assert p.returncode != 0
    assert f"kerchunk references {f}: key '{key}' -> '{base}/gone.nc'" in p.stderr, p.stderr
