# SPDX-License-Identifier: Apache-2.0
"""Zarr stores read over HTTP: a Session makes an HTTP object store for an
http(s):// URL on first use (hosts/datafusion/session/src/remote.rs), so
``qlink.zarr("https://host/store.zarr")`` needs no set-up step.

The server here is the standard library's file server plus single ranges
(RFC 9110 section 14), which is what object_store's HttpStore sends for a
chunk; like most static file servers it cannot list directories (no WebDAV),
so only stores with consolidated metadata open over it."""

import functools
import http.server
import os
import re
import threading

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import qlink

RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """GET with one `Range: bytes=a-b` answers 206 with that slice."""

    requests = []  # (method, path, range header) of every request, for the tests

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        RangeHandler.requests.append(("HEAD", self.path, None))
        super().do_HEAD()

    def do_GET(self):
        spec = self.headers.get("Range")
        RangeHandler.requests.append(("GET", self.path, spec))
        m = RANGE.match(spec or "")
        path = self.translate_path(self.path)
        if not m or not os.path.isfile(path):
            return super().do_GET()
        size = os.path.getsize(path)
        start = int(m.group(1))
        end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.end_headers()
            return
        with open(path, "rb") as f:
            f.seek(start)
            body = f.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", self.date_time_string(int(os.path.getmtime(path))))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A directory served over HTTP on 127.0.0.1: (root, base URL)."""
    root = tmp_path_factory.mktemp("http-root")
    handler = functools.partial(RangeHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class PlainHandler(http.server.SimpleHTTPRequestHandler):
    """The standard library's file server as it is: no range requests
    (`python -m http.server`); every GET answers 200 with the whole file."""

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def plain_served(tmp_path_factory):
    root = tmp_path_factory.mktemp("plain-root")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(PlainHandler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def dataset():
    t = pd.date_range("2024-03-01", periods=6, freq="D")
    temp = np.arange(6 * 4 * 3, dtype="f4").reshape(6, 4, 3) / 8
    temp[1, 2, 0] = np.nan  # xarray writes NaN as the fill value: SQL NULL
    return xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), temp, {"units": "degC"}),
            "flag": (("time", "lat", "lon"), (np.arange(72) % 5).astype("i2").reshape(6, 4, 3)),
            "depth": (("lat", "lon"), np.arange(12, dtype="f8").reshape(4, 3) * 10),
        },
        coords={"time": t, "lat": [50.0, 51.5, 53.0, 54.5], "lon": [-3.0, 0.0, 3.0]},
    )


@pytest.mark.parametrize("fmt", [2, 3])
def test_consolidated_store_over_http_equals_xarray(served, fmt):
    root, base = served
    ds = dataset()
    name = f"obs-v{fmt}.zarr"
    ds.to_zarr(root / name, zarr_format=fmt, consolidated=True,
               encoding={"temp": {"chunks": (2, 4, 3)}, "flag": {"chunks": (4, 2, 3)}})
    z = qlink.zarr(f"{base}/{name}")
    assert z.tables == ["lat_lon", "time_lat_lon"]
    got = z.table("time_lat_lon").to_pandas()
    want = ds[["temp", "flag"]].to_dataframe().reset_index()
    assert list(got.columns) == ["time", "lat", "lon", "flag", "temp"]
    for col in ("time", "lat", "lon", "flag"):
        assert got[col].tolist() == want[col].tolist(), col
    np.testing.assert_array_equal(got["temp"].to_numpy(), want["temp"].to_numpy())
    assert z.table("time_lat_lon").column("temp")[1 * 12 + 2 * 3 + 0].as_py() is None
    assert z.table("lat_lon").to_pydict()["depth"] == ds["depth"].values.ravel().tolist()
    # Chunks are fetched with ranged or whole GETs of the store's own keys.
    paths = {p for _, p, _ in RangeHandler.requests}
    assert any(p.startswith(f"/{name}/temp/") for p in paths)


def test_filtered_query_over_http_reads_only_the_chunks_it_needs(served):
    root, base = served
    ds = dataset()
    ds.to_zarr(root / "filtered.zarr", zarr_format=3, consolidated=True, encoding={"temp": {"chunks": (1, 4, 3)}})
    s = qlink.Session()
    s.register_zarr(f"{base}/filtered.zarr", name="f")
    RangeHandler.requests.clear()
    got = s.sql("SELECT time, SUM(temp) AS s FROM f.time_lat_lon "
                "WHERE time >= TIMESTAMP '2024-03-05' GROUP BY time ORDER BY time").to_pydict()
    want = ds["temp"].sel(time=slice("2024-03-05", None)).sum(("lat", "lon"))
    assert got["s"] == want.values.tolist()
    assert [t.isoformat() for t in got["time"]] == ["2024-03-05T00:00:00", "2024-03-06T00:00:00"]
    temp_chunks = sorted(p for m, p, _ in RangeHandler.requests if m == "GET" and p.startswith("/filtered.zarr/temp/c/"))
    assert temp_chunks == ["/filtered.zarr/temp/c/4/0/0", "/filtered.zarr/temp/c/5/0/0"]


def test_missing_chunk_over_http_reads_as_fill_value(served):
    root, base = served
    ds = dataset()
    ds["temp"][2:4] = np.nan  # chunk (1, 0, 0) is all fill: never written
    ds.to_zarr(root / "sparse.zarr", zarr_format=3, consolidated=True, write_empty_chunks=False,
               encoding={"temp": {"chunks": (2, 4, 3)}})
    assert not (root / "sparse.zarr" / "temp" / "c" / "1").exists()
    got = qlink.zarr(f"{base}/sparse.zarr").table("time_lat_lon").to_pydict()
    # The fill value (NaN) is masked: SQL NULL where xarray has NaN.
    want = ds["temp"].values.ravel().tolist()
    assert [None if np.isnan(w) else w for w in want] == got["temp"]


def test_unconsolidated_store_over_http_names_the_problem(served):
    root, base = served
    dataset().to_zarr(root / "plain.zarr", zarr_format=3, consolidated=False)
    with pytest.raises(qlink.QlinkError, match=r"plain\.zarr") as e:
        qlink.zarr(f"{base}/plain.zarr")
    assert "consolidated" in str(e.value)


def test_missing_store_over_http(served):
    _, base = served
    with pytest.raises(qlink.QlinkError, match=r"nothing\.zarr"):
        qlink.zarr(f"{base}/nothing.zarr")


def test_registering_an_http_store_explicitly(served):
    root, base = served
    dataset().to_zarr(root / "explicit.zarr", zarr_format=2, consolidated=True)
    s = qlink.Session()
    s.register_object_store(base)
    assert s.register_zarr(f"{base}/explicit.zarr", name="e") == ["e.lat_lon", "e.time_lat_lon"]
    assert s.sql("SELECT COUNT(*) AS n FROM e.time_lat_lon").to_pydict() == {"n": [72]}


def test_http_store_in_datafusion_python(served):
    import datafusion

    root, base = served
    ds = dataset()
    ds.to_zarr(root / "dfpy.zarr", zarr_format=3, consolidated=True)
    ctx = datafusion.SessionContext()
    assert qlink.zarr(f"{base}/dfpy.zarr").register(ctx) == ["lat_lon", "time_lat_lon"]
    got = ctx.sql("SELECT lat, SUM(flag) AS s FROM time_lat_lon GROUP BY lat ORDER BY lat").to_pydict()
    assert got == {"lat": [50.0, 51.5, 53.0, 54.5], "s": ds["flag"].sum(("time", "lon")).values.tolist()}


@pytest.mark.parametrize("fmt", [2, 3])
def test_server_without_range_requests(plain_served, fmt):
    # python -m http.server: chunks are fetched whole with plain GETs
    root, base = plain_served
    ds = dataset()
    ds.to_zarr(root / f"plain-v{fmt}.zarr", zarr_format=fmt, consolidated=True, encoding={"temp": {"chunks": (2, 2, 3)}})
    z = qlink.zarr(f"{base}/plain-v{fmt}.zarr")
    got = z.table("time_lat_lon").to_pandas()
    want = ds[["temp", "flag"]].to_dataframe().reset_index()
    assert got["flag"].tolist() == want["flag"].tolist()
    np.testing.assert_array_equal(got["temp"].to_numpy(), want["temp"].to_numpy())
    s = z.session
    got = s.sql(f"SELECT SUM(flag) AS s FROM {z.schema}.time_lat_lon WHERE lat > 51").to_pydict()
    assert got == {"s": [int(ds["flag"].where(ds["lat"] > 51).sum())]}
