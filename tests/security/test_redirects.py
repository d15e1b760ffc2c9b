# SPDX-License-Identifier: Apache-2.0
"""An HTTP store's redirects stay within its origin: a server answering 302 to another host must not make qlink
send that host the metadata and chunk requests meant for the first, unless
the user opts in (QLINK_FOLLOW_REDIRECTS=1). Through the qlink tool, whose
session makes HTTP stores on first use (hosts/datafusion/session/src/remote.rs)."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from conftest import BUILD

TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "qlink-target")) / "release"
CLI = Path(os.environ.get("QLINK_CLI") or TARGET / "qlink")
ZARR = BUILD / "plugins" / "qlink_zarr.so"

pytestmark = pytest.mark.skipif(not CLI.is_file() or not ZARR.is_file(), reason=f"needs {CLI} and {ZARR}")


class Files(http.server.SimpleHTTPRequestHandler):
    """A file server that records each path asked."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.asked.append(self.path)
        super().do_GET()

    def do_HEAD(self):
        self.server.asked.append(self.path)
        super().do_HEAD()


class Redirect(http.server.BaseHTTPRequestHandler):
    """Answers every request with a 302 to `server.target` + the same path."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.asked.append(self.path)
        self.send_response(302)
        self.send_header("Location", self.server.target(self.path))
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET


def serve(handler):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.asked = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def servers(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    xr.Dataset({"v": (("x",), np.arange(6.0))}, coords={"x": np.arange(6)}).to_zarr(root / "s.zarr", consolidated=True)
    files = serve(functools.partial(Files, directory=str(root)))
    other = f"http://127.0.0.1:{files.server_address[1]}"
    redirect = serve(Redirect)
    redirect.target = lambda path: other + path
    yield redirect, files, root
    for s in (redirect, files):
        s.shutdown()
        s.server_close()


def query(url: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "QLINK_FOLLOW_REDIRECTS"}
    env.update(env_extra or {})
    return subprocess.run([str(CLI), "sql", "--format", "csv", "--schema", f"s={ZARR}/store?path={url}/s.zarr",
                           "SELECT sum(v) AS t FROM s.x"], capture_output=True, text=True, env=env, timeout=120)


def test_a_redirect_to_another_origin_is_refused_naming_both(servers):
    redirect, files, _ = servers
    a = f"http://127.0.0.1:{redirect.server_address[1]}"
    b = f"http://127.0.0.1:{files.server_address[1]}"
    p = query(a)
    assert p.returncode == 1, p
    assert (f"HTTP redirect from {a} to {b} refused: redirects are followed within one origin only "
            f"(set QLINK_FOLLOW_REDIRECTS=1 to follow them anywhere)") in p.stderr, p.stderr
    assert redirect.asked, "the first server was asked"
    assert files.asked == [], f"the other origin received {files.asked}"


def test_the_user_may_opt_in_to_any_redirect(servers):
    redirect, files, _ = servers
    p = query(f"http://127.0.0.1:{redirect.server_address[1]}", {"QLINK_FOLLOW_REDIRECTS": "1"})
    assert p.returncode == 0, p.stderr
    assert p.stdout == "t\n15.0\n"
    assert files.asked


def test_a_redirect_within_the_origin_is_followed(servers):
    _, _, root = servers

    class Moved(Files):
        def do_GET(self):
            if self.path.startswith("/old/"):
                self.server.asked.append(self.path)
                self.send_response(301)
                self.send_header("Location", self.path[len("/old"):])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

    moved = serve(functools.partial(Moved, directory=str(root)))
    try:
        p = query(f"http://127.0.0.1:{moved.server_address[1]}/old")
        assert p.returncode == 0, p.stderr
        assert p.stdout == "t\n15.0\n"
        assert any(a.startswith("/old/") for a in moved.asked)
    finally:
        moved.shutdown()
        moved.server_close()
