"""Fixtures for the qlink Python tests.

The package under test is the installed one (python/build.sh builds the
wheel and installs it into .venv); its plugins ship inside it.
"""

import pyarrow as pa
import pytest

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
