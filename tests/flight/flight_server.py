# SPDX-License-Identifier: Apache-2.0
"""``qlink serve`` processes for the Flight SQL tests (tests/flight) and the
security suite (tests/security/test_flight.py).

``Server(args)`` starts ``qlink serve --port 0 ARGS`` (the system picks a
free port), waits for its line ``qlink serve: Flight SQL on
grpc://127.0.0.1:PORT`` and keeps its stderr in a file (``stderr()``);
``connect()`` opens an ADBC Flight SQL connection to it (with
``secret``, sent as ``authorization: Bearer SECRET``); ``stop()`` kills
exactly the process it started. The binary is ``$QLINK_CLI`` (``make
build-cli``), the plugins come from ``$QLINK_BUILD_DIR`` (a CMake release
build).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "qlink-target")) / "release"
CLI = Path(os.environ.get("QLINK_CLI") or TARGET / "qlink")
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))
SAMPLE = BUILD / "plugins" / "qlink_sample.so"
ZARR = BUILD / "plugins" / "qlink_zarr.so"


def secret_file(folder: Path) -> Path:
    """A fresh random secret (64 hex characters) in ``folder/secret``, mode 600."""
    path = folder / "secret"
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path


class Server:
    def __init__(self, args: list[str], env: dict | None = None):
        self._err = tempfile.NamedTemporaryFile("w+", prefix="qlink-serve-", suffix=".err")
        env = env if env is not None else {k: v for k, v in os.environ.items() if k != "QLINK_SECRET"}
        self.proc = subprocess.Popen([str(CLI), "serve", "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, env=env)
        line = self.proc.stdout.readline()
        prefix = "qlink serve: Flight SQL on grpc://127.0.0.1:"
        if not line.startswith(prefix):
            self.proc.wait(timeout=30)
            raise AssertionError(f"qlink serve did not start: {line!r}, stderr: {self.stderr()!r}")
        self.port = int(line[len(prefix):])
        self.uri = f"grpc://127.0.0.1:{self.port}"

    def stderr(self) -> str:
        return Path(self._err.name).read_text()

    def connect(self, secret: str | None = None):
        import adbc_driver_flightsql
        import adbc_driver_flightsql.dbapi as flight_sql

        kwargs = {}
        if secret is not None:
            kwargs[adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value] = f"Bearer {secret}"
        return flight_sql.connect(self.uri, db_kwargs=kwargs, autocommit=True)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._err.close()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
