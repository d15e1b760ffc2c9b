# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the qlink Python tests.

The package under test is the installed one (`make test-python` installs
dist's wheel into .venv; python/build.sh installs an unrepaired one); its
plugins ship inside it.
"""

import numpy as np
import pyarrow as pa
import pytest
import xarray as xr

import qlink


@pytest.fixture(scope="session")
def sample_path():
    return qlink.plugin_path("qlink_sample")


@pytest.fixture()
def session(sample_path):
    s = qlink.Session()
    s.load_plugin(sample_path)
    return s


def series_table(start, stop, step=1):
    """What qlink_sample's series table holds, built independently in pyarrow."""
    values = list(range(start, stop, step))
    return pa.table(
        {
            "value": pa.array(values, pa.int64()),
            "square": pa.array([v * v for v in values], pa.int64()),
            "parity": pa.array(["even" if v % 2 == 0 else "odd" for v in values], pa.utf8()),
        }
    )


# Queries over the sample plugin's series table ({t}), run through every path
# and compared with the same query over a native in-memory table.
SERIES_QUERIES = [
    "SELECT * FROM {t} ORDER BY value",
    "SELECT count(*) AS n, sum(value) AS s, min(square) AS lo, max(square) AS hi FROM {t}",
    "SELECT parity, count(*) AS n, sum(square) AS s FROM {t} GROUP BY parity ORDER BY parity",
    "SELECT value, square FROM {t} WHERE value > 40 AND value <= 77 ORDER BY value DESC",
    "SELECT value FROM {t} WHERE parity = 'odd' AND value < 20 ORDER BY value LIMIT 4",
    "SELECT value FROM {t} WHERE abs(value - 50) < 3 ORDER BY value",
    "SELECT a.value, b.square FROM {t} a JOIN {t} b ON a.value = b.value + 3 WHERE a.value < 10 ORDER BY a.value",
    "SELECT value FROM {t} ORDER BY value DESC LIMIT 3",
]


@pytest.fixture(scope="session")
def store(tmp_path_factory):
    """A small xarray Dataset written as a Zarr v3 store: (ds, path)."""
    root = tmp_path_factory.mktemp("weather")
    ds = xr.Dataset(
        {
            "temp": (("time", "lat"), np.arange(20, dtype="f8").reshape(5, 4) / 4),
            "count": (("time", "lat"), np.arange(20, dtype="i4").reshape(5, 4) * 3),
            "elev": (("lat",), np.array([10, 20, 30, 40], dtype="i4")),
        },
        coords={"time": np.arange(5, dtype="i8"), "lat": np.array([-1.5, 0.0, 1.5, 3.0])},
    )
    path = root / "weather.zarr"
    ds.to_zarr(path, zarr_format=3, consolidated=False, encoding={"temp": {"chunks": (2, 4)}})
    return ds, path
