# SPDX-License-Identifier: Apache-2.0
"""``qlink serve`` through a real Flight SQL client: ADBC's Flight SQL
driver (the Go driver behind ``adbc_driver_flightsql.dbapi``), over a
qlink_sample series and a Zarr store read by qlink_zarr. Rows, listings and
error statuses are asserted exactly."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from flight_server import CLI, SAMPLE, ZARR, secret_file

SERIES = ["--plugin", str(SAMPLE), "--table", "s=qlink_sample/series?stop=10&partitions=2"]


@pytest.fixture
def store(tmp_path):
    """A Zarr store of one variable ``v`` (float64) over ``t`` (3) x ``x`` (2)."""
    import xarray as xr

    ds = xr.Dataset({"v": (("t", "x"), np.arange(6, dtype="float64").reshape(3, 2))},
                    coords={"t": np.array([0, 1, 2], dtype="int64"), "x": np.array([10, 20], dtype="int64")})
    path = tmp_path / "grid.zarr"
    ds.to_zarr(path, mode="w")
    return path


def rows(con, sql, parameters=None):
    with con.cursor() as cur:
        cur.execute(sql, parameters)
        return cur.fetchall()


def test_queries_over_a_series_and_a_zarr_store(serve, store):
    s = serve([*SERIES, "--schema", f"z={ZARR}/store?path={store}"])
    with s.connect() as con:
        assert rows(con, "SELECT value, square, parity FROM s WHERE value BETWEEN 3 AND 5 ORDER BY value") == [
            (3, 9, "odd"), (4, 16, "even"), (5, 25, "odd")]
        assert rows(con, "SELECT parity, sum(add_one(value)) AS n FROM s GROUP BY parity ORDER BY parity") == [
            ("even", 25), ("odd", 30)]
        assert rows(con, "SELECT t, x, v FROM z.t_x WHERE v >= 3 ORDER BY t, x") == [
            (1, 20, 3.0), (2, 10, 4.0), (2, 20, 5.0)]
        with con.cursor() as cur:
            cur.execute("SELECT value FROM s ORDER BY value")
            table = cur.fetch_arrow_table()
        assert str(table.schema) == "value: int64 not null"
        assert table.column("value").to_pylist() == list(range(10))


def test_prepared_statements(serve):
    s = serve(SERIES)
    with s.connect() as con, con.cursor() as cur:
        cur.adbc_prepare("SELECT value, parity FROM s WHERE value > $1 AND parity = $2 ORDER BY value")
        cur.execute("SELECT value, parity FROM s WHERE value > $1 AND parity = $2 ORDER BY value", (5, "odd"))
        assert cur.fetchall() == [(7, "odd"), (9, "odd")]
        # the same statement again with other values
        cur.execute("SELECT value, parity FROM s WHERE value > $1 AND parity = $2 ORDER BY value", (6, "even"))
        assert cur.fetchall() == [(8, "even")]
        # no parameters
        cur.adbc_prepare("SELECT count(*) AS n FROM s")
        cur.execute("SELECT count(*) AS n FROM s")
        assert cur.fetchall() == [(10,)]
    # several rows of parameters are refused, naming the limit
    import adbc_driver_manager

    import pyarrow as pa

    with s.connect() as con, con.cursor() as cur:
        cur.adbc_prepare("SELECT value FROM s WHERE value = $1")
        cur.adbc_statement.bind(pa.record_batch({"p": pa.array([1, 2], pa.int64())}))
        with pytest.raises(adbc_driver_manager.NotSupportedError) as e:
            cur.adbc_statement.execute_query()
        assert "qlink serve binds one row of parameters to a prepared query, not 2" in str(e.value)


def test_catalogs_schemas_and_tables_listed(serve, store):
    s = serve([*SERIES, "--schema", f"z={ZARR}/store?path={store}"])
    with s.connect() as con:
        objects = con.adbc_get_objects(depth="tables").read_all().to_pylist()
        listed = {(c["catalog_name"], d["db_schema_name"], t["table_name"], t["table_type"])
                  for c in objects for d in c["catalog_db_schemas"] for t in (d["db_schema_tables"] or [])}
        assert listed == {("datafusion", "public", "s", "BASE TABLE"), ("datafusion", "z", "t_x", "BASE TABLE")}
        schema = con.adbc_get_table_schema("t_x", db_schema_filter="z")
        assert [(f.name, str(f.type)) for f in schema] == [("t", "int64"), ("x", "int64"), ("v", "double")]
        assert con.adbc_get_table_types() == ["BASE TABLE", "LOCAL TEMPORARY", "VIEW"]
        info = con.adbc_get_info()
        assert (info["vendor_name"], info["vendor_arrow_version"]) == ("qlink", "59.3.2")


def test_errors_are_flight_statuses(serve):
    import adbc_driver_manager as dm

    s = serve(SERIES)
    with s.connect() as con:
        cases = [
            ("SELEC 1", dm.ProgrammingError, "INVALID_ARGUMENT",
             'SQL error: ParserError("Expected: an SQL statement, found: SELEC at Line: 1, Column: 1")'),
            ("SELECT * FROM nope", dm.ProgrammingError, "NOT_FOUND", "table 'datafusion.public.nope' not found"),
            ("CREATE EXTERNAL TABLE e STORED AS CSV LOCATION '/etc/passwd'", dm.ProgrammingError, "INVALID_ARGUMENT",
             "DDL not supported: CreateExternalTable"),
            ("SET datafusion.execution.batch_size = 1", dm.ProgrammingError, "INVALID_ARGUMENT",
             "Statement not supported: SetVariable"),
        ]
        for sql, kind, code, message in cases:
            with con.cursor() as cur, pytest.raises(kind) as e:
                cur.execute(sql)
            assert str(e.value).startswith(f"{code}: [FlightSQL] {message} ("), (sql, str(e.value))
        # the server answers after its errors
        assert rows(con, "SELECT count(*) FROM s") == [(10,)]


def test_the_secret_is_required_when_given(serve, tmp_path):
    import adbc_driver_manager as dm

    secret = secret_file(tmp_path)
    s = serve([*SERIES, "--secret-file", str(secret)])
    for given, why in ((None, "carries no secret"), ("0" * 64, "carries a wrong secret")):
        with pytest.raises(dm.Error) as e:
            with s.connect(given) as con:
                rows(con, "SELECT count(*) FROM s")
        assert "UNAUTHENTICATED" in str(e.value), str(e.value)
        assert f"qlink serve: the call {why}" in str(e.value), str(e.value)
    with s.connect(secret.read_text().strip()) as con:
        assert rows(con, "SELECT count(*) FROM s") == [(10,)]


def test_a_public_address_needs_a_secret(tmp_path):
    env = {"PATH": "/usr/bin:/bin"}
    p = subprocess.run([str(CLI), "serve", "--host", "0.0.0.0", "--port", "0", *SERIES], capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 2
    assert p.stderr == ("qlink: error: serve --host 0.0.0.0 is not a loopback address: a server other machines "
                        "can reach needs the clients' secret (--secret-file FILE or QLINK_SECRET; e.g. "
                        "`openssl rand -hex 32 > FILE`)\n")


CLIENT = """
import sys
import adbc_driver_flightsql.dbapi as flight_sql
con = flight_sql.connect(sys.argv[1], autocommit=True)
cur = con.cursor()
cur.execute("SELECT value, square FROM s")
reader = cur.fetch_record_batch()
reader.read_next_batch()
print("read one batch", flush=True)
sys.stdin.read()  # until killed
"""


def test_a_client_going_away_mid_stream_cancels_its_query(serve):
    """a client reading a result of a billion rows is killed after its first
    batch: the server drops the stream (saying so), stays up and answers."""
    s = serve(["--plugin", str(SAMPLE), "--table", "s=qlink_sample/series?stop=1000000000&partitions=2"])
    for n in range(3):
        client = subprocess.Popen([sys.executable, "-c", CLIENT, s.uri], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert client.stdout.readline() == "read one batch\n"
        finally:
            client.kill()
            client.wait()
        deadline = time.time() + 30
        while s.stderr().count("its client stopped reading") <= n and time.time() < deadline:
            time.sleep(0.05)
        lines = [x for x in s.stderr().splitlines() if x.startswith("qlink serve: query ")]
        assert len(lines) == n + 1, s.stderr()
        assert lines[-1].endswith(" batches: its client stopped reading"), lines
        assert s.proc.poll() is None
    with s.connect() as con:
        assert rows(con, "SELECT value FROM s WHERE value BETWEEN 999999998 AND 999999999 ORDER BY value") == [
            (999999998,), (999999999,)]
