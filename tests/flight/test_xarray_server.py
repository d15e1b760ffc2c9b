# SPDX-License-Identifier: Apache-2.0
"""qlink.xarray.FlightSQLServer and qlink.xarray.serve (xarray-sql 0.6's
Flight SQL server) over ``qlink serve``, queried with ADBC's Flight SQL
driver: the tables of a Dataset's dimension groups with the values
``ds.to_dataframe()`` has, the secret, the process and its temporary files.
``QLINK_CLI`` names the binary, ``QLINK_BUILD_DIR`` the C build."""

from __future__ import annotations

import gc
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
flight_sql = pytest.importorskip("adbc_driver_flightsql.dbapi")

from flight_server import BUILD, CLI, ROOT  # noqa: E402

os.environ.setdefault("QLINK_BUILD_DIR", str(BUILD))
os.environ.setdefault("QLINK_CLI", str(CLI))
sys.path.insert(0, str(ROOT / "python"))  # this tree's package, not an installed wheel

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
    data variables by name (as qlink_zarr lists a written store's)."""
    frame = ds[variables].to_dataframe().reset_index()
    dims = list(ds[variables].dims)
    return frame[dims + sorted(variables)]


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
        server.register("Grid", ds, table_names={("lat",): "Stations", ("time", "lat"): "surface"})
        assert xql.register(server, "Single", ds[["elev"]]) is server  # xarray-sql's dispatch
        with pytest.raises(TypeError, match="takes chunks= and table_names= only"):
            xql.register(server, "x", ds, route="ndarray")
        server.serve()
        got = query(server, 'SELECT lat, elev FROM "Grid"."Stations" ORDER BY lat')
        pd.testing.assert_frame_equal(got, expected(ds, ["elev"]))
        assert query(server, 'SELECT sum(count) AS c FROM "Grid".surface').values.tolist() == [[21]]
        pd.testing.assert_frame_equal(query(server, 'SELECT * FROM "Single" ORDER BY lat'), expected(ds, ["elev"]))
        with pytest.raises(Exception, match="(?i)not found|doesn't exist|does not exist"):
            query(server, "SELECT * FROM single")


def test_a_wrong_or_missing_secret_is_refused():
    with xql.FlightSQLServer() as server:
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
        # chunks= made the written store's chunks
        folder = Path(server._process.folder)
        stores = [xr.open_zarr(p, consolidated=False) for p in sorted(folder.glob("store-*.zarr"))]
        assert [s.t2m.encoding["chunks"] for s in stores if "t2m" in s] == [(2, 2)]
    finally:
        server.shutdown()
    assert not server.is_running


def test_with_block_stops_the_process_and_removes_its_files():
    with xql.FlightSQLServer() as server:
        server.register("era5", dataset()).serve()
        proc, folder = server._process.proc, Path(server._process.folder)
        secret_file = folder / "secret"
        assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
        assert secret_file.read_text() == server.secret + "\n"
        assert sorted(p.name for p in folder.glob("store-*")) == ["store-0.zarr"]
    assert proc.poll() is not None and not server.is_running
    assert not folder.exists()
    with pytest.raises(RuntimeError, match="shut down"):
        server.register("again", dataset())
    with pytest.raises(RuntimeError, match="shut down"):
        server.serve()


def test_collection_stops_the_process():
    server = xql.FlightSQLServer().register("era5", dataset()).serve()
    proc, folder = server._process.proc, Path(server._process.folder)
    del server
    gc.collect()
    assert proc.wait(timeout=10) is not None and not folder.exists()


def test_registering_while_serving_restarts_on_the_same_port():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        server.register("a", ds[["elev"]]).serve()
        port = server.port
        server.register("b", ds[["t2m"]])
        assert server.port == port and server.is_running
        assert query(server, "SELECT count(*) AS n FROM a").values.tolist() == [[3]]
        assert query(server, "SELECT count(*) AS n FROM b").values.tolist() == [[6]]
        server.register("a", ds[["t2m"]])  # replaced: its old store is removed
        assert query(server, "SELECT count(*) AS n FROM a").values.tolist() == [[6]]
        assert sorted(p.name for p in Path(server._process.folder).glob("store-*")) == ["store-1.zarr", "store-2.zarr"]


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
def test_a_zarr_backed_dataset_is_served_from_its_own_store(tmp_path):
    # a consolidated store (xarray's default), opened with its variables by name, as the zarr route wants
    ds = dataset().drop_vars("label")
    ds.to_zarr(tmp_path / "odd ? name & 100%.zarr", zarr_format=3)
    opened = xr.open_zarr(tmp_path / "odd ? name & 100%.zarr")
    with xql.FlightSQLServer() as server:
        server.register("z", opened).serve()
        assert not list(Path(server._process.folder).glob("store-*"))
        pd.testing.assert_frame_equal(query(server, "SELECT * FROM z.time_lat ORDER BY time, lat"),
                                      expected(ds, ["t2m", "count"]))
        pd.testing.assert_frame_equal(query(server, "SELECT * FROM z.lat ORDER BY lat"), expected(ds, ["elev"]))


def test_what_qlink_serve_cannot_express_is_a_clear_error():
    ds = dataset()
    with xql.FlightSQLServer() as server:
        with pytest.raises(ValueError, match="'a=b' has an '='"):
            server.register("a=b", ds)
        with pytest.raises(ValueError, match="table name 'x,y'"):
            server.register("s", ds, table_names={("lat",): "x,y"})
        with pytest.raises(ValueError, match="variable 'o' is object"):
            server.register("s", ds.assign(o=("lat", np.array([1, "a", None], dtype=object))))
        with pytest.raises(ValueError, match="0-d data variables"):
            server.register("s", ds.assign(c=((), 1.0)))
        with pytest.raises(TypeError, match="got a DataArray"):
            server.register("s", ds.t2m)
        assert not list(Path(server._process.folder).glob("store-*"))


def test_a_missing_binary_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("QLINK_CLI", str(tmp_path / "no-qlink"))
    with pytest.raises(FileNotFoundError, match="QLINK_CLI names .*no-qlink, which is not a file"):
        xql.FlightSQLServer()
    monkeypatch.delenv("QLINK_CLI")
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"QLINK_CLI is not set, there is no {tmp_path}/release/qlink and no "
                                                "qlink on PATH"):
        xql.serve({"era5": dataset()})


def test_a_server_that_cannot_start_says_why():
    with xql.FlightSQLServer() as server:
        server.register("era5", dataset())
        with pytest.raises(RuntimeError, match="qlink serve .* did not start.*"):
            server.serve(host="not-an-address")
        assert not server.is_running
        server.serve()
        assert query(server, "SELECT count(*) AS n FROM era5.lat").values.tolist() == [[3]]


def test_interpreter_exit_stops_the_process(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import xarray as xr, qlink.xarray as xql\n"
        "s = xql.serve({'t': xr.Dataset({'v': ('x', [1.0, 2.0])})})\n"
        "print(s._process.proc.pid, s._process.folder, flush=True)\n"
        "keep = s  # never shut down: the finalizer's atexit hook must\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(Path(xql.__file__).parents[2]),
                                                                     os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pid, folder = out.stdout.split()
    assert not Path(folder).exists()
    with pytest.raises(ProcessLookupError):
        for _ in range(50):  # the child was reaped by the script: its pid is gone
            os.kill(int(pid), 0)
            time.sleep(0.1)
