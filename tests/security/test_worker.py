# SPDX-License-Identifier: Apache-2.0
"""qlink-worker's gates: no call runs without the shared secret, and no
plugin loads but a file of the worker's own --plugin-dir whose digest the
coordinator named, checked on the opened file before anything in it runs.

The attacks speak gRPC with grpcio (a client with no qlink code), as any
local process could; the marker library proves whether the worker process
(its pid) ran outside code, and each refusal has a positive twin that
does load the marker, so the check can fail.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import BUILD, build_marker

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "qlink-target")) / "release"
WORKER = Path(os.environ.get("QLINK_WORKER") or TARGET / "qlink-worker")
CLI = Path(os.environ.get("QLINK_CLI") or TARGET / "qlink")
SAMPLE = BUILD / "plugins" / "qlink_sample.so"
CONFIG = "x-datafusion-distributed-config-qlink.plugins"

pytestmark = pytest.mark.skipif(not WORKER.is_file() or not CLI.is_file() or not SAMPLE.is_file(),
                                reason=f"needs {WORKER}, {CLI} and {SAMPLE} (make build-cli build-release)")


def fnv1a64(data: bytes) -> int:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def secret_file(folder: Path) -> Path:
    path = folder / "secret"
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path


class Worker:
    def __init__(self, args: list[str], env: dict | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([str(WORKER), "--port", str(self.port), *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        assert line == f"qlink-worker: serving on {self.url}\n", (line, self.proc.stderr.read())

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def worker_with(tmp_path):
    started = []

    def start(args, env=None):
        w = Worker(args, env)
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def grpc_call(url: str, headers: dict[str, str], method: str = "CoordinatorChannel") -> dict[str, str]:
    """One gRPC call, made with grpcio (no qlink code), whose message is
    well formed but whose plan is garbage: the worker builds the query's
    session, then fails to decode the plan. Returns the call's status
    (``grpc-status`` as its number, ``grpc-message``)."""
    import grpc

    # CoordinatorToWorkerMsg { set_plan_request (1): SetPlanRequest {
    #   task_key (1): TaskKey { query_id (1): 16 bytes }, task_count (2): 1,
    #   plan_proto (3): b"garbage", target_worker_url (5): url } }
    key = b"\x0a\x10" + secrets.token_bytes(16)
    target = url.encode()
    plan = (b"\x0a" + bytes([len(key)]) + key + b"\x10\x01" + b"\x1a\x07garbage"
            + b"\x2a" + bytes([len(target)]) + target)
    msg = b"\x0a" + bytes([len(plan)]) + plan
    with grpc.insecure_channel(url.removeprefix("http://")) as channel:
        call = channel.stream_stream(f"/worker.WorkerService/{method}")  # raw bytes both ways
        try:
            for _ in call(iter([msg]), metadata=list(headers.items()), timeout=20):
                pass
        except grpc.RpcError as e:
            return {"grpc-status": str(e.code().value[0]), "grpc-message": e.details() or ""}
    return {"grpc-status": "0", "grpc-message": ""}


def shipped(path: str, digest: int, name: str = "evil") -> str:
    return urlencode({"name": name, "version": "0.1.0", "abi": "1", "digest": f"{digest:016x}", "path": path,
                      "scalar": "f"})


def test_a_worker_does_not_start_without_a_secret(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "QLINK_SECRET"}
    p = subprocess.run([str(WORKER), "--port", str(free_port())], capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode == 2
    assert p.stderr == ("qlink-worker: error: a worker needs the secret its coordinators send: --secret-file FILE "
                        "or QLINK_SECRET (e.g. `openssl rand -hex 32 > FILE`)\n")
    short = tmp_path / "short"
    short.write_text("abc\n")
    p = subprocess.run([str(WORKER), "--port", str(free_port()), "--secret-file", str(short)], capture_output=True,
                       text=True, env=env, timeout=30)
    assert p.returncode == 2
    assert "has 3 bytes; it needs at least 32" in p.stderr


@pytest.mark.parametrize("given", ["none", "wrong"])
def test_a_call_without_the_secret_is_refused_before_anything_runs(tmp_path, worker_with, given):
    marker = build_marker(tmp_path / "outside")
    w = worker_with(["--secret-file", str(secret_file(tmp_path))])
    headers = {CONFIG: shipped(str(marker.path), fnv1a64(marker.path.read_bytes()))}
    if given == "wrong":
        headers["authorization"] = "Bearer " + secrets.token_hex(32)
    got = grpc_call(w.url, headers)
    assert got.get("grpc-status") == "16", got  # UNAUTHENTICATED
    assert f"the call carries {'no' if given == 'none' else 'a wrong'} secret" in got.get("grpc-message", ""), got
    assert w.proc.pid not in marker.pids()


def test_a_request_naming_a_path_loads_nothing_outside_the_plugin_dir(tmp_path, worker_with):
    """with the secret, a call naming /abs/evil.so (its true digest)
    makes the worker look for evil.so in its own --plugin-dir only; the
    positive twin puts the same library there, and it does load."""
    secret = secret_file(tmp_path)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    marker = build_marker(tmp_path / "outside")
    auth = {"authorization": "Bearer " + secret.read_text().strip()}
    digest = fnv1a64(marker.path.read_bytes())
    for args in (["--plugin-dir", str(plugins)], []):  # and a worker without a plugin dir
        w = worker_with(["--secret-file", str(secret), *args])
        for path in (str(marker.path), f"{plugins}/../outside/{marker.path.name}", "/"):
            grpc_call(w.url, {**auth, CONFIG: shipped(path, digest)})
        # a symlink in the plugin dir pointing out of it
        link = plugins / "link.so"
        if not link.exists():
            link.symlink_to(marker.path)
        grpc_call(w.url, {**auth, CONFIG: shipped(str(link), digest)})
        assert w.proc.poll() is None
        assert w.proc.pid not in marker.pids(), args
    # positive twin: the same library inside the plugin dir, its digest named
    inside = marker.copy_to(plugins, "evil.so")
    w = worker_with(["--secret-file", str(secret), "--plugin-dir", str(plugins)])
    grpc_call(w.url, {**auth, CONFIG: shipped(str(inside), digest)})
    deadline = time.time() + 10
    while w.proc.pid not in marker.pids() and time.time() < deadline:
        time.sleep(0.05)
    assert w.proc.pid in marker.pids()


SERIES = f"t={SAMPLE}/series?stop=100000&partitions=8"  # large enough to be split among two workers


def test_a_file_with_another_digest_is_not_loaded(tmp_path):
    """the workers' plugin dir holds a qlink_sample.so that is not
    the coordinator's build: it is refused on its digest, unloaded."""
    secret = secret_file(tmp_path)
    plugins = tmp_path / "plugins"
    marker = build_marker(tmp_path / "outside")
    marker.copy_to(plugins, "qlink_sample.so")
    ws = [Worker(["--secret-file", str(secret), "--plugin-dir", str(plugins)]) for _ in range(2)]
    urls = ",".join(w.url for w in ws)
    try:
        sql = "SELECT sum(value) AS s FROM t"
        p = subprocess.run([str(CLI), "sql", "--workers", urls, "--secret-file", str(secret), "--plugin", str(SAMPLE),
                            "--table", SERIES, sql], capture_output=True, text=True, timeout=120)
        assert p.returncode == 1, p
        want = fnv1a64(SAMPLE.read_bytes())
        mine = fnv1a64((plugins / "qlink_sample.so").read_bytes())
        assert (f"this worker's plugin file {plugins.resolve()}/qlink_sample.so has digest {mine:016x}, "
                f"the coordinator's is qlink_sample") in p.stderr, p.stderr
        assert f"digest {want:016x}" in p.stderr
        assert not set(marker.pids()) & {w.proc.pid for w in ws}, marker.pids()
        # positive twin: the coordinator's own build in the workers' dir answers
        shutil.copy2(SAMPLE, plugins / "qlink_sample.so")
        p = subprocess.run([str(CLI), "sql", "--format", "csv", "--workers", urls, "--secret-file", str(secret),
                            "--plugin", str(SAMPLE), "--table", SERIES, sql], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stdout == "s\n4999950000\n"
    finally:
        for w in ws:
            w.stop()


def test_a_coordinator_with_a_wrong_secret_gets_a_clear_error(tmp_path, worker_with):
    secret = secret_file(tmp_path)
    urls = ",".join(worker_with(["--secret-file", str(secret), "--plugin-dir", str(SAMPLE.parent)]).url for _ in range(2))
    wrong = tmp_path / "wrong"
    wrong.write_text(secrets.token_hex(32))
    p = subprocess.run([str(CLI), "sql", "--workers", urls, "--secret-file", str(wrong), "--plugin", str(SAMPLE),
                        "--table", SERIES, "SELECT sum(value) FROM t"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1
    assert "the call carries a wrong secret" in p.stderr, p.stderr
    env = {k: v for k, v in os.environ.items() if k != "QLINK_SECRET"}
    p = subprocess.run([str(CLI), "sql", "--workers", urls, "SELECT 1"], capture_output=True, text=True, timeout=60,
                       env=env)
    assert p.returncode == 1
    assert "distributed queries need the workers' shared secret: set QLINK_SECRET" in p.stderr, p.stderr
