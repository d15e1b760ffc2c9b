# SPDX-License-Identifier: Apache-2.0
"""``qlink-worker`` processes on this machine's loopback interface, for the
distributed route of the conformance suite (``engine_datafusion``), the
distributed tests (``test_distributed.py``) and ``bench/distributed``.

``Workers(n)`` starts ``n`` workers, each on a free port of 127.0.0.1
(bound, released, then given to ``qlink-worker --port``; a port taken in
between is retried on another), each loading plugins from the C build's
plugin folder (``--plugin-dir``) and requiring a fresh random secret
(``--secret-file``), and waits for each to print
``qlink-worker: serving on http://127.0.0.1:PORT``. ``urls`` lists them,
``arg`` is the ``--workers`` value, ``args`` the coordinator's options
(``--workers`` and ``--secret-file``); ``stop()`` ends exactly the
processes it started. The binary is ``$QLINK_WORKER``, default ``qlink-worker``
beside the qlink CLI (``make build-cli`` builds both).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from engine import build_dir, release_binary


def worker_path() -> Path:
    return release_binary("qlink-worker", "QLINK_WORKER")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WorkerError(RuntimeError):
    pass


class Worker:
    """One ``qlink-worker --port PORT`` process; its stderr goes to a file
    (``log()``) so a failing query's worker-side message can be shown."""

    def __init__(self, binary: Path, extra: list[str], timeout: float):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._err = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen([str(binary), "--port", str(self.port), *extra], stdout=subprocess.PIPE,
                                     stderr=self._err, text=True)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        want = f"qlink-worker: serving on {self.url}\n"
        if not line or line[0] != want:
            self.stop()
            got = repr(line[0]) if line else f"nothing within {timeout:.0f} s"
            raise WorkerError(f"{binary} --port {self.port}: expected {want!r} on stdout, got {got}; "
                              f"stderr: {self.log().strip()!r}")
        # keep draining stdout so the worker never blocks on a full pipe
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def log(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def write_secret(folder: str) -> str:
    """A file holding a fresh 256-bit secret (hex), readable by its owner only."""
    path = os.path.join(folder, "secret")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return path


class Workers:
    def __init__(self, n: int = 2, extra: list[str] | None = None, timeout: float = 60.0, attempts: int = 3,
                 plugin_dir: str | None = None):
        binary = worker_path()
        if not binary.is_file():
            raise WorkerError(f"qlink-worker is not built: {binary} (make build-cli)")
        self.workers: list[Worker] = []
        self._dir = tempfile.TemporaryDirectory(prefix="qlink-workers-")
        self.secret_file = write_secret(self._dir.name)
        base = ["--plugin-dir", plugin_dir or str(build_dir() / "plugins"), "--secret-file", self.secret_file]
        try:
            for _ in range(n):
                self.workers.append(self._start(binary, base + (extra or []), timeout, attempts))
        except BaseException:
            self.stop()
            raise

    @staticmethod
    def _start(binary: Path, extra: list[str], timeout: float, attempts: int) -> Worker:
        for attempt in range(attempts):
            try:
                return Worker(binary, extra, timeout)
            except WorkerError:
                if attempt + 1 == attempts:
                    raise
                time.sleep(0.2)  # the port was taken between probe and bind: another one
        raise AssertionError("unreachable")

    @property
    def urls(self) -> list[str]:
        return [w.url for w in self.workers]

    @property
    def arg(self) -> str:
        return ",".join(self.urls)

    @property
    def args(self) -> list[str]:
        """A coordinator's options: the workers and their secret."""
        return ["--workers", self.arg, "--secret-file", self.secret_file]

    def logs(self) -> str:
        return "\n".join(f"{w.url}: {w.log().strip()}" for w in self.workers if w.log().strip())

    def stop(self):
        for w in self.workers:
            w.stop()
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
