# SPDX-License-Identifier: Apache-2.0
"""``qlink serve``'s gates: with a secret, no call runs without it; and a
client, which sends only SQL, cannot make the server load code: plugins
come from the server's command line alone, and its SQL is read-only.

The marker library proves whether the server process (its pid) ran outside
code; the positive twin names the same library on the server's own command
line, where it does load, so the check can fail. The attacks speak Flight
SQL with ADBC's driver (a client with no qlink code) and, for the raw
descriptor, with pyarrow.flight."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import build_marker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "flight"))

from flight_server import CLI, SAMPLE, Server, secret_file  # noqa: E402

pytestmark = pytest.mark.skipif(not CLI.is_file() or not SAMPLE.is_file(),
                                reason=f"needs {CLI} and {SAMPLE} (make build-cli build-release)")

SERIES = ["--plugin", str(SAMPLE), "--table", "s=qlink_sample/series?stop=10"]


@pytest.fixture
def server():
    started = []

    def start(args):
        s = Server(args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def test_a_call_without_the_secret_is_refused_before_anything_runs(tmp_path, server):
    """raw Flight calls (GetFlightInfo with SQL naming the marker, DoGet,
    DoAction) without the secret, or with a wrong one, are UNAUTHENTICATED."""
    import pyarrow.flight as fl

    marker = build_marker(tmp_path / "outside")
    s = server([*SERIES, "--secret-file", str(secret_file(tmp_path))])
    client = fl.connect(s.uri)
    for headers in ([], [(b"authorization", b"Bearer " + b"0" * 64)]):
        opts = fl.FlightCallOptions(headers=headers)
        calls = [
            lambda: client.get_flight_info(fl.FlightDescriptor.for_command(f"SELECT * FROM '{marker.path}'"), opts),
            lambda: client.do_get(fl.Ticket(b"anything"), opts).read_all(),
            lambda: list(client.do_action(fl.Action("CreatePreparedStatement", b""), opts)),
            lambda: list(client.list_actions(opts)),
        ]
        for call in calls:
            with pytest.raises(fl.FlightUnauthenticatedError) as e:
                call()
            assert "qlink serve: the call carries" in str(e.value), str(e.value)
    assert s.proc.poll() is None
    assert s.proc.pid not in marker.pids()


def test_sql_cannot_load_a_plugin(tmp_path, server):
    """every way SQL could name a library (a path as a table, an external
    table, a spec as an identifier, a function, a setting, a copy) fails
    and maps nothing; the positive twin loads the marker from the command
    line."""
    import adbc_driver_manager as dm

    marker = build_marker(tmp_path / "outside")
    path = marker.path
    s = server(SERIES)
    attacks = [
        f"SELECT * FROM '{path}'",
        f'SELECT * FROM "{path}/series"',
        f'SELECT * FROM "{path}/series?stop=1"',
        f"CREATE EXTERNAL TABLE e STORED AS PARQUET LOCATION '{path}'",
        f"SELECT qlink_load('{path}')",
        f"SET qlink.plugin = '{path}'",
        f"COPY (SELECT 1) TO '{tmp_path}/out.csv'",
        f"--plugin {path}",
        f"SELECT * FROM s; SELECT * FROM '{path}'",
    ]
    with s.connect() as con:
        for sql in attacks:
            with con.cursor() as cur, pytest.raises(dm.Error):
                cur.execute(sql)
        with con.cursor() as cur:  # a prepared statement too
            cur.adbc_prepare("SELECT value FROM s WHERE value = $1")
            with pytest.raises(dm.Error):
                cur.execute(f"SELECT * FROM '{path}' WHERE x = $1", (1,))
        with con.cursor() as cur:
            cur.execute("SELECT count(*) FROM s")
            assert cur.fetchall() == [(10,)]
    assert not (tmp_path / "out.csv").exists()
    assert s.proc.poll() is None
    assert s.proc.pid not in marker.pids()
    # positive twin: the same library named on the server's command line is
    # loaded (and, not being a plugin, refused), so the marker check can fail
    import subprocess

    p = subprocess.Popen([str(CLI), "serve", "--port", "0", "--plugin", str(path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 1, (out, err)
    assert p.pid in marker.pids()


def test_a_refused_public_bind_loads_nothing(tmp_path):
    """--host 0.0.0.0 without a secret is refused before any plugin loads."""
    import subprocess

    marker = build_marker(tmp_path / "outside")
    p = subprocess.Popen([str(CLI), "serve", "--host", "0.0.0.0", "--port", "0", "--plugin", str(marker.path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={"PATH": "/usr/bin:/bin"})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2
    assert "is not a loopback address" in err
    assert p.pid not in marker.pids()
