# SPDX-License-Identifier: Apache-2.0
"""qlink_netcdf's paths behind DuckDB's sandbox (docs/security/duckdb.md):
libnetcdf opens files by name, so the plugin asks the session's file://
store (the host's gate) before it opens any. Proof that a refused file is
never opened: the file is a FIFO, and a watcher tries, all through the
query, to open it for writing without blocking, which succeeds only while
some process has it open for reading. The positive twin shows the watcher
does see a reader."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from test_duckdb import BUILDS, allow, open_ext, plugins_with, refused  # noqa: F401 (open_ext: a fixture)

xr = pytest.importorskip("xarray")
np = pytest.importorskip("numpy")

WORDS = "is refused: DuckDB's enable_external_access is false and it lies in none of allowed_directories and allowed_paths"


class Watcher:
    """Whether any process opened `fifo` for reading while it ran."""

    def __init__(self, fifo: Path):
        self.fifo, self.seen, self._stop = fifo, False, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                fd = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as e:
                assert e.errno == errno.ENXIO, e  # no reader: the only other answer
                time.sleep(0.001)
                continue
            self.seen = True
            os.write(fd, b"not netcdf")
            os.close(fd)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        time.sleep(0.05)
        self._stop.set()
        self._thread.join()


def nc_file(path: Path, values=(1.0, 2.0, 3.0)) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ds = xr.Dataset({"v": (("y",), np.array(values))}, coords={"y": np.arange(len(values))})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_netcdf(path, unlimited_dims=["y"])
    return path


def test_the_watcher_sees_a_reader(tmp_path):
    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    with Watcher(fifo) as w:
        subprocess.run([sys.executable, "-c", f"open({str(fifo)!r}, 'rb').read()"], timeout=30, check=True)
    assert w.seen


@pytest.mark.parametrize("build", BUILDS)
def test_refused_netcdf_paths_are_never_opened(open_ext, build, tmp_path):
    inside = nc_file(tmp_path / "inside" / "a.nc")
    nc_file(tmp_path / "inside" / "b.nc", values=(4.0,))
    outside = tmp_path / "outside"
    outside.mkdir()
    fifo = outside / "secret.nc"
    os.mkfifo(fifo)
    secret = nc_file(outside / "secret2.nc", values=(100.0,))
    (tmp_path / "inside" / "link").mkdir()
    (tmp_path / "inside" / "link" / "c.nc").symlink_to(fifo)
    (tmp_path / "inside" / "link2").mkdir()
    (tmp_path / "inside" / "link2" / "d.nc").symlink_to(secret)
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_netcdf"))
    q = "SELECT sum(v) FROM qlink_scan('qlink_netcdf/table?path={}')"
    assert con.execute(q.format(inside)).fetchall() == [(6.0,)]  # loaded before the switch
    con.execute(f"SET allowed_directories = ['{tmp_path / 'inside'}']")
    con.execute("SET enable_external_access = false")
    assert con.execute(q.format(inside)).fetchall() == [(6.0,)]
    assert con.execute(q.format(f"{tmp_path}/inside/*.nc")).fetchall() == [(10.0,)]
    with Watcher(fifo) as w:
        refused(con, q.format(fifo), f"option path '{fifo}' {WORDS}")
        refused(con, q.format(f"{tmp_path}/inside/../outside/secret.nc"), WORDS)
        refused(con, q.format(f"{tmp_path}/outside/*.nc"), WORDS)
        # a symlink out of the allowed directory: refused by the path check ...
        refused(con, q.format(tmp_path / "inside" / "link" / "c.nc"), WORDS)
        # ... and (the store lists no FIFO) nothing to read in its folder
        refused(con, q.format(f"{tmp_path}/inside/link/*.nc"), "no file matches")
    assert not w.seen
    # a symlink to a netCDF file outside, found by a glob or a folder listing: refused by the
    # session's file store before the plugin opens it
    link = tmp_path / "inside" / "link2" / "d.nc"
    refused(con, q.format(f"{tmp_path}/inside/link2/*.nc"), f"reading file '{link}' {WORDS}")
    refused(con, q.format(f"{tmp_path}/inside/link2"), f"reading file '{link}' {WORDS}")
