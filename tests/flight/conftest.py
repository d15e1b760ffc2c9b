# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Flight SQL suite: ``qlink serve`` driven by ADBC's
Flight SQL driver (adbc-driver-flightsql, pinned in
scripts/requirements.txt)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flight_server import CLI, SAMPLE, ZARR, Server  # noqa: E402


def pytest_collection_modifyitems(items):
    if not CLI.is_file() or not SAMPLE.is_file() or not ZARR.is_file():
        skip = pytest.mark.skip(reason=f"needs {CLI}, {SAMPLE} and {ZARR} (make build-cli build-release)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture
def serve():
    """Starts ``qlink serve`` with the given arguments; every server started
    is stopped at the test's end."""
    started = []

    def start(args, env=None):
        s = Server(args, env)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()
