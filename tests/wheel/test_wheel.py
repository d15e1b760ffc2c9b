# SPDX-License-Identifier: Apache-2.0
"""The installed qlink wheel on its own (tests/wheel/run.sh): run from a
directory outside the source tree, in a fresh virtual environment with the
wheel and the engines' packages from the registry, no compiler on PATH and
no QLINK_BUILD_DIR. Every engine answers a query over plugin tables with
exact values, and every library the plugins need comes from the wheel's
qlink.libs/, not from the machine.

series(stop=1000) is qlink_sample's table of value = 0..999 (parity 'even'
or 'odd'); its sum is 499500 and its sum of squares 332833500.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import qlink
import qlink._ndarray
import qlink.duckdb
import qlink.sqlite
import qlink.xarray

SERIES = "qlink_sample/series?stop=1000"
PACKAGE = Path(qlink.__file__).resolve().parent
LIBS = PACKAGE.parent / "qlink.libs"


def test_the_package_is_the_installed_wheel_alone():
    assert "QLINK_BUILD_DIR" not in os.environ
    assert PACKAGE.is_relative_to(Path(sys.prefix).resolve()), PACKAGE
    tree = os.environ.get("QLINK_SOURCE_TREE")
    assert tree and not Path.cwd().resolve().is_relative_to(Path(tree).resolve())
    for tool in ("gcc", "cc", "clang", "clang-14", "cargo", "rustc"):
        assert shutil.which(tool) is None, f"{tool} is on PATH"
    assert qlink.plugin_dir() == str(PACKAGE / "plugins")
    assert qlink.plugin_path("qlink_zarr") == str(PACKAGE / "plugins" / "qlink_zarr.so")
    assert qlink.duckdb.extension_path("v1") == str(PACKAGE / "hosts" / "duckdb" / "qlink.duckdb_extension")
    assert qlink.sqlite.extension_path() == str(PACKAGE / "hosts" / "sqlite" / "qlink.so")


def test_duckdb_both_builds():
    import duckdb

    # the V2 build matches the duckdb this environment pins; its footer names the version
    v2 = qlink.duckdb.extension_path("v2")
    assert qlink.duckdb.extension_duckdb_version(v2) == duckdb.__version__
    assert qlink.duckdb.choose_api() == "v2"
    for api in ("v1", "v2"):
        con = qlink.duckdb.connect(api=api)
        assert qlink.duckdb.loaded_api(con) == api
        rows = con.execute(f"SELECT sum(value), count(*) FROM qlink_scan('{SERIES}') WHERE parity = 'odd'").fetchall()
        assert rows == [(250000, 500)]
        qlink.duckdb.load(con, "qlink_sample")
        assert con.execute(f"SELECT sum_sq(value) FROM qlink_scan('{SERIES}')").fetchall() == [(332833500,)]
        con.close()


def test_sqlite():
    db = qlink.sqlite.connect()
    db.execute(f"CREATE VIRTUAL TABLE s USING qlink('{SERIES}')")
    assert db.execute("SELECT sum(value), count(*) FROM s WHERE value >= 990").fetchall() == [(9945, 10)]


def test_datafusion_python():
    import datafusion

    sample = qlink.Plugin(qlink.plugin_path("qlink_sample"))
    ctx = datafusion.SessionContext()
    ctx.register_table("t", sample.table("series", start=0, stop=1000))
    ctx.register_udaf(datafusion.udaf(sample.udaf("sum_sq")))
    got = ctx.sql("SELECT parity, sum(value) AS s, sum_sq(value) AS q FROM t GROUP BY parity ORDER BY parity")
    table = got.to_arrow_table().to_pydict()
    evens, odds = range(0, 1000, 2), range(1, 1000, 2)
    assert table == {"parity": ["even", "odd"], "s": [sum(evens), sum(odds)],
                     "q": [sum(v * v for v in evens), sum(v * v for v in odds)]}


def test_session():
    s = qlink.Session()
    s.register_table("t", qlink.plugin_path("qlink_sample"), "series", stop=1000)
    assert s.sql("SELECT sum(value) AS s FROM t").to_pydict() == {"s": [499500]}


def dataset():
    air = np.arange(12, dtype="float64").reshape(4, 3)
    return xr.Dataset({"air": (("time", "lat"), air)},
                      coords={"time": np.arange(4), "lat": np.array([10.0, 20.0, 30.0])})


# sum over time of air[time, lat] = arange(12).reshape(4, 3): 18, 22, 26
BY_LAT = [(10.0, 18.0), (20.0, 22.0), (30.0, 26.0)]


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_xarray_register(engine):
    con = qlink.duckdb.connect() if engine == "duckdb" else qlink.sqlite.connect()
    qlink.xarray.register(con, "air", dataset())
    assert con.execute("SELECT lat, sum(air) FROM air GROUP BY lat ORDER BY lat").fetchall() == BY_LAT


def test_xarray_context():
    ctx = qlink.xarray.Context()
    ctx.from_dataset("air", dataset())
    got = ctx.sql("SELECT lat, sum(air) AS air FROM air GROUP BY lat ORDER BY lat").to_arrow_table().to_pydict()
    assert got == {"lat": [lat for lat, _ in BY_LAT], "air": [s for _, s in BY_LAT]}


def test_xarray_zarr_store_decoded_by_the_shipped_libraries(tmp_path):
    # a store xarray writes, its chunks compressed with blosc (lz4 inside) and
    # zstd, served by qlink_zarr in DuckDB, which decodes them with qlink.libs'
    import zarr.codecs

    path = tmp_path / "air.zarr"
    ds = dataset()
    ds["air2"] = ds.air * 2
    encoding = {"air": {"chunks": (2, 3), "compressors": [zarr.codecs.BloscCodec(cname="lz4")]},
                "air2": {"chunks": (2, 3), "compressors": [zarr.codecs.ZstdCodec()]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is not in the Zarr v3 spec
        ds.to_zarr(path, consolidated=True, encoding=encoding)
        stored = xr.open_zarr(path)
    con = qlink.duckdb.connect()
    qlink.xarray.register(con, "air", stored, route="zarr")
    rows = con.execute("SELECT lat, sum(air), sum(air2) FROM air GROUP BY lat ORDER BY lat").fetchall()
    assert rows == [(lat, s, 2 * s) for lat, s in BY_LAT]


def loaded(path_part: str) -> set[str]:
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if path_part in line and "/" in line}


def test_plugins_link_the_wheels_own_libraries():
    # the plugins that link libraries, loaded into this process; theirs are qlink.libs' copies
    qlink.Plugin(qlink.plugin_path("qlink_zarr"))
    qlink._ndarray.library()
    mapped = loaded("/")
    for lib in ("libblosc", "libzstd", "liblz4", "libjansson", "liblzma", "libbz2"):
        ours = {m for m in mapped if Path(m).parent == LIBS and Path(m).name.startswith(lib + "-")}
        assert ours, f"no {lib} from {LIBS} is loaded"
    for lib in ("libblosc.so", "libjansson.so"):
        assert not {m for m in mapped if Path(m).name.startswith(lib)}, f"the machine's {lib} is loaded"
    ldd = "/usr/bin/ldd"
    for so in [*PACKAGE.glob("plugins/*.so"), PACKAGE / "_qlink.abi3.so", PACKAGE / "hosts" / "sqlite" / "qlink.so"]:
        out = subprocess.run([ldd, str(so)], capture_output=True, text=True, check=True).stdout
        assert "not found" not in out, out
        for line in out.splitlines():
            if any(f" {lib}-" in line for lib in ("libblosc", "libzstd", "liblz4", "libjansson")):
                assert str(LIBS) in line, line
