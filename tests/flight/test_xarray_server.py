# SPDX-License-Identifier: Apache-2.0
"""qlink.xarray.FlightSQLServer and qlink.xarray.serve (xarray-sql 0.6's
Flight SQL server), served in this process by ``Session.serve_flight_sql``
and queried with ADBC's Flight SQL driver: the tables of a Dataset's
dimension groups with the values ``ds.to_dataframe()`` has, the secret,
registering while serving, shutting down. Runs the installed package
(``make install-python``)."""

from __future__ import annotations

import gc
import socket
import time

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
flight_sql = pytest.importorskip("adbc_driver_flightsql.dbapi")
qlink = pytest.importorskip("qlink")

import qlink.xarray as xql  # noqa: E402


def dataset() -> xr.Dataset:
    """Two dimension groups, (time, lat) and (lat,): floats with NaN,
    integers, text, datetimes."""
    return xr.Dataset(
        {
            "t2m": (("time", "lat"), np.array([[1.5, 2.5, np.nan], [4.0, -5.25, 6.0]], dtype="f8")),
            "count": (("time", "lat"), np.array([[1, 2, 3], [4, 5, 6]], dtype="i4")),
            "elev": (("lat",), np.array([100.0, np.nan, 300.5], dtype="f4")),
            "label": (("lat",), np.array(["north", "mid", "south"])),
        },
        coords={"time": np.array(["2020-01-01T00:00", "2020-01-02T06:00"], dtype="datetime64[ns]"), "lat": [10.0, 20.0, 30.0]},
    )


def connect(server, secret: str | None = "server"):
    kwargs = server.db_kwargs if secret == "server" else (
        {} if secret is None else {"adbc.flight.sql.authorization_header": f"Bearer {secret}"})
    return flight_sql.connect(server.uri, db_kwargs=kwargs, autocommit=True)


def query(server, sql: str) -> pd.DataFrame:
    with connect(server) as con, con.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table().to_pandas()


def expected(ds: xr.Dataset, variables: list[str]) -> pd.DataFrame:
    """``ds[variables].to_dataframe()`` as a table: the dimensions, then the
    data variables in the Dataset's order (as xarray-sql lists them)."""
    frame = ds[variables].to_dataframe().reset_index()
    dims = list(ds[variables].dims)
    return frame[dims + [v for v in ds.data_vars if v in variables]]


def refused(port: int, timeout: float = 10.0) -> bool:
    """Whether connecting to ``port`` is refused within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_each_dimension_group_is_a_table_with_the_datasets_values():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        assert server.register("era5", ds) is server
        assert server.serve() is server
        assert server.is_running and server.uri == f"grpc://127.0.0.1:{server.port}"
        got = query(server, "SELECT * FROM era5.time_lat ORDER BY time, lat")
        pd.testing.assert_frame_equal(got, expected(ds, ["t2m", "count"]))
        assert got["t2m"].tolist()[:2] == [1.5, 2.5] and np.isnan(got["t2m"][2])
        assert got["time"].tolist() == [pd.Timestamp("2020-01-01")] * 3 + [pd.Timestamp("2020-01-02T06:00")] * 3
        got = query(server, "SELECT * FROM era5.lat ORDER BY lat")
        pd.testing.assert_frame_equal(got, expected(ds, ["elev", "label"]))
        assert got["label"].tolist() == ["north", "mid", "south"]
        # NaN is NULL, as xarray-sql serves it: count and avg skip it
        assert query(server, "SELECT count(t2m) AS n, sum(count) AS c FROM era5.time_lat").values.tolist() == [[5, 21]]


def test_table_names_and_exact_mixed_case_names():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        with pytest.warns(RuntimeWarning, match='quote these in queries: "Grid", "Stations"') as record:
            server.register("Grid", ds, table_names={("lat",): "Stations", ("time", "lat"): "surface"})
        assert record[0].filename == __file__  # the warning points at the caller
        with pytest.warns(RuntimeWarning, match='quote these in queries: "Single"') as record:
            assert xql.register(server, "Single", ds[["elev"]]) is server  # xarray-sql's dispatch
        assert record[0].filename == __file__
        with pytest.raises(TypeError, match="takes chunks= and table_names= only"):
            xql.register(server, "x", ds, route="ndarray")
        server.serve()
        got = query(server, 'SELECT lat, elev FROM "Grid"."Stations" ORDER BY lat')
        pd.testing.assert_frame_equal(got, expected(ds, ["elev"]))
        assert query(server, 'SELECT sum(count) AS c FROM "Grid".surface').values.tolist() == [[21]]
        # names are kept exactly, as xarray-sql's server keeps them: a mixed-case one is quoted
        pd.testing.assert_frame_equal(query(server, 'SELECT * FROM "Single" ORDER BY lat'), expected(ds, ["elev"]))
        with pytest.raises(Exception, match="(?i)not found"):
            query(server, "SELECT * FROM single")
        with pytest.raises(Exception, match="(?i)not found"):
            query(server, "SELECT * FROM grid.surface")


def test_a_wrong_or_missing_secret_is_refused():
    with xql.FlightSQLServer(secret=True) as server:
        server.register("era5", dataset()).serve()
        assert len(server.secret) == 64 and server.headers == {"authorization": f"Bearer {server.secret}"}
        for secret, why in (("x" * 64, "a wrong secret"), (None, "no secret")):
            with connect(server, secret) as con, con.cursor() as cur:
                with pytest.raises(Exception, match=f"UNAUTHENTICATED: .*qlink serve: the call carries {why}"):
                    cur.execute("SELECT count(*) FROM era5.lat")
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]


def test_serve_registers_every_dataset_and_returns_the_running_server():
    ds = dataset()
    server = xql.serve({"grid": ds[["t2m"]], "stations": ds[["elev", "label"]]}, chunks={"lat": 2}, memory_limit=1 << 30)
    try:
        assert isinstance(server, xql.FlightSQLServer) and server.is_running and server.port > 0
        pd.testing.assert_frame_equal(query(server, "SELECT * FROM grid ORDER BY time, lat"), expected(ds, ["t2m"]))
        pd.testing.assert_frame_equal(query(server, "SELECT * FROM stations ORDER BY lat"),
                                      expected(ds, ["elev", "label"]))
        # chunks= made the blocks: lat in blocks of 2, so a filter on lat reads one block of two
        assert query(server, "SELECT count(*) AS n FROM grid WHERE lat > 25").values.tolist() == [[2]]
    finally:
        server.shutdown()
    assert not server.is_running


def test_with_block_stops_the_server_and_frees_its_port():
    with xql.FlightSQLServer() as server:
        server.register("era5", dataset()).serve()
        port = server.port
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]
    assert not server.is_running and refused(port)
    with pytest.raises(RuntimeError, match="shut down"):
        server.register("again", dataset())
    with pytest.raises(RuntimeError, match="shut down"):
        server.serve()
    server.shutdown()  # idempotent


def test_collection_stops_the_server():
    server = xql.FlightSQLServer().register("era5", dataset()).serve()
    port = server.port
    del server
    gc.collect()
    assert refused(port)


def test_registering_while_serving_is_seen_by_the_next_query():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        server.register("a", ds[["elev"]]).serve()
        port = server.port
        server.register("b", ds[["t2m"]])
        assert server.port == port and server.is_running
        assert query(server, "SELECT count(*) AS n FROM a").values.tolist() == [[3]]
        assert query(server, "SELECT count(*) AS n FROM b").values.tolist() == [[6]]
        server.register("a", ds[["t2m"]])  # replaced
        assert query(server, "SELECT count(*) AS n FROM a").values.tolist() == [[6]]
        server.register("a", ds)  # a table replaced by a schema, and back
        assert query(server, "SELECT count(*) AS n FROM a.lat").values.tolist() == [[3]]
        server.register("a", ds[["elev"]])
        assert query(server, "SELECT count(*) AS n FROM a").values.tolist() == [[3]]


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
def test_a_zarr_backed_dataset_is_served_from_its_own_store(tmp_path):
    # a consolidated store (xarray's default), opened with its variables by name, as the zarr route wants
    ds = dataset().drop_vars("label")
    ds.to_zarr(tmp_path / "odd ? name & 100%.zarr", zarr_format=3)
    opened = xr.open_zarr(tmp_path / "odd ? name & 100%.zarr")
    with xql.FlightSQLServer() as server:
        server.register("z", opened).serve()
        got = query(server, "SELECT * FROM z.time_lat ORDER BY time, lat")
        # qlink_zarr lists a store's data variables by name
        pd.testing.assert_frame_equal(got, expected(ds, ["t2m", "count"])[["time", "lat", "count", "t2m"]])
        pd.testing.assert_frame_equal(query(server, "SELECT * FROM z.lat ORDER BY lat"), expected(ds, ["elev"]))


def test_bad_registrations_are_clear_errors_and_leave_the_server_serving():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        server.register("ok", ds[["elev"]]).serve()
        with pytest.raises(ValueError, match="name must be a non-empty str"):
            server.register("", ds)
        with pytest.raises(TypeError, match="got a DataArray"):
            server.register("s", ds.t2m)
        with pytest.raises(ValueError, match="nan_fill|route"):
            xql.register(server._session, "s", ds, route="nowhere")
        with pytest.raises(Exception):
            server.register("ok", ds.assign(o=("lat", np.array([1, "a", None], dtype=object))))
        # the failed replacement left the old table
        assert query(server, "SELECT count(*) AS n FROM ok").values.tolist() == [[3]]


def test_a_server_that_cannot_start_says_why():
    with xql.FlightSQLServer() as server:
        server.register("era5", dataset())
        with pytest.raises(ValueError, match='host "not-an-address" is not an IP address'):
            server.serve(host="not-an-address")
        assert not server.is_running
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            with pytest.raises(RuntimeError, match=f"cannot listen on 127.0.0.1:{taken.getsockname()[1]}"):
                server.serve(port=taken.getsockname()[1])
        server.serve()
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]
        with pytest.raises(RuntimeError, match="already serving"):
            server.serve()


def test_without_a_secret_only_loopback_is_served():
    with xql.FlightSQLServer() as server:
        assert server.secret is None and server.headers == {} and server.db_kwargs == {}
        server.register("era5", dataset())
        with pytest.raises(ValueError, match="host 0.0.0.0 is not a loopback address: a server other machines can "
                                             "reach needs a secret"):
            server.serve("0.0.0.0")
        assert not server.is_running
        server.serve("localhost")
        assert server.uri == f"grpc://127.0.0.1:{server.port}"
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]
    with xql.FlightSQLServer(secret="k" * 40) as server:
        server.register("era5", dataset()).serve("0.0.0.0")
        assert server.uri == f"grpc://localhost:{server.port}" and server.secret == "k" * 40
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]
    with pytest.raises(ValueError, match="secret must be None, True or a str, not int"):
        xql.FlightSQLServer(secret=7)


def test_session_serve_flight_sql_needs_a_secret_off_loopback():
    session = qlink.Session()
    session.register_arrow("t", __import__("pyarrow").table({"x": [1, 2, 3]}))
    with pytest.raises(ValueError, match="host 0.0.0.0 is not a loopback address: a server other machines can reach "
                                         "needs a secret"):
        session.serve_flight_sql("0.0.0.0")
    with pytest.raises(ValueError, match="the secret from secret has 5 bytes; it needs at least 32"):
        session.serve_flight_sql(secret="short")
    server = session.serve_flight_sql()  # loopback without a secret: no header needed
    try:
        assert server.is_running and server.url == f"grpc://127.0.0.1:{server.port}"
        with flight_sql.connect(server.url, autocommit=True) as con, con.cursor() as cur:
            cur.execute("SELECT sum(x) AS s FROM t")
            assert cur.fetch_arrow_table().to_pylist() == [{"s": 6}]
            with pytest.raises(Exception, match="(?i)ddl|not supported|not allowed"):
                cur.execute("CREATE TABLE u AS SELECT 1")
    finally:
        server.shutdown()
    assert not server.is_running and refused(server.port)
    server.shutdown()


def test_a_plain_flight_path_names_a_table_or_a_query():
    # what clients without Flight SQL send (ClickHouse's arrowFlight, pyarrow's for_path)
    pa_flight = pytest.importorskip("pyarrow.flight")
    with xql.FlightSQLServer() as server:
        with pytest.warns(RuntimeWarning, match="quote"):
            server.register("Grid", dataset())
        server.serve()
        client = pa_flight.FlightClient(server.uri)

        def read(*path):
            info = client.get_flight_info(pa_flight.FlightDescriptor.for_path(*path))
            return client.do_get(info.endpoints[0].ticket).read_all()

        assert read("Grid.lat").column_names == ["lat", "elev", "label"]
        assert read("Grid", "time_lat").num_rows == 6
        assert read('SELECT count(*) AS n FROM "Grid".lat').to_pylist() == [{"n": 3}]
        with pytest.raises(Exception, match="(?i)not found"):
            read("nope")
        with pytest.raises(Exception, match="names no table"):
            read("a", "b", "c", "d")
        with pytest.raises(Exception, match="(?i)single SQL statement|ddl|not supported|not allowed"):
            read("WITH x AS (SELECT 1) SELECT * FROM x; DROP TABLE t")
        with pytest.raises(Exception, match="(?i)invalid argument"):
            client.get_flight_info(pa_flight.FlightDescriptor.for_command(b"not a command"))
        url = b"type.googleapis.com/qlink.NotACommand"  # a well-formed protobuf Any of an unknown command
        with pytest.raises(Exception, match=r"not a Flight SQL command \(type.googleapis.com/qlink.NotACommand\)"):
            client.get_flight_info(pa_flight.FlightDescriptor.for_command(bytes([0x0A, len(url)]) + url))
