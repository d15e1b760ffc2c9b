# SPDX-License-Identifier: Apache-2.0
"""qlink.Session(workers=[...]): a session distributing plugin scans over
qlink-worker processes on this machine (the binary beside the qlink tool:
QLINK_CLI's folder, default $CARGO_TARGET_DIR/release)."""
import os
import secrets
import socket
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import qlink

QLINK = os.environ.get("QLINK_CLI") or str(
    Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache/qlink-target")) / "release/qlink")
WORKER = str(Path(QLINK).with_name("qlink-worker"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def secret_file(tmp_path):
    path = tmp_path / "secret"
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return str(path)


@pytest.fixture()
def workers(sample_path, secret_file):
    procs, urls = [], []
    for _ in range(2):
        port = free_port()
        p = subprocess.Popen([WORKER, "--port", str(port), "--plugin-dir", os.path.dirname(sample_path),
                              "--secret-file", secret_file], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline() == f"qlink-worker: serving on http://127.0.0.1:{port}\n"
        procs.append(p)
        urls.append(f"http://127.0.0.1:{port}")
    yield urls
    for p in procs:
        p.kill()
        p.wait()


def test_a_distributed_session_gives_the_local_answer(workers, sample_path, secret_file):
    sql = "SELECT parity, count(*) AS n, sum(value) AS total FROM s GROUP BY parity ORDER BY parity"
    want = pa.table({"parity": ["even", "odd"], "n": pa.array([50000, 50000], pa.int64()),
                     "total": pa.array([2499950000, 2500000000], pa.int64())})
    for s in (qlink.Session(), qlink.Session(workers=workers, secret_file=secret_file)):
        s.load_plugin(sample_path)
        s.register_table("s", sample_path, "series", stop=100000, partitions=8)
        assert s.sql(sql).to_pylist() == want.to_pylist()
    plan = "\n".join(s.sql("EXPLAIN SELECT sum(value) FROM s").column("plan").to_pylist())
    a, b = (w.removeprefix("http://") for w in workers)
    assert f"8 partitions over 2 tasks: t0:[0..4)@{a} t1:[4..8)@{b}" in plan, plan


def test_an_unreachable_or_malformed_worker_is_a_value_error(secret_file):
    port = free_port()
    with pytest.raises(ValueError, match=f"worker http://127.0.0.1:{port}/ is unreachable: "):
        qlink.Session(workers=[f"http://127.0.0.1:{port}"], secret_file=secret_file)
    with pytest.raises(ValueError, match="has no port"):
        qlink.Session(workers=["http://127.0.0.1"], secret_file=secret_file)


def test_workers_without_a_secret_are_a_value_error(workers, monkeypatch):
    monkeypatch.delenv("QLINK_SECRET", raising=False)
    with pytest.raises(ValueError, match="distributed queries need the workers' shared secret: set QLINK_SECRET"):
        qlink.Session(workers=workers)


def test_a_wrong_secret_is_refused_by_the_workers(workers, sample_path, tmp_path):
    wrong = tmp_path / "wrong"
    wrong.write_text(secrets.token_hex(32))
    s = qlink.Session(workers=workers, secret_file=str(wrong))
    s.load_plugin(sample_path)
    s.register_table("s", sample_path, "series", stop=1000, partitions=4)
    with pytest.raises(Exception, match="carries a wrong secret"):
        s.sql("SELECT sum(value) FROM s").to_pylist()
