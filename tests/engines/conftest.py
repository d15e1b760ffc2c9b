# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the conformance suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workers import Workers  # noqa: E402


@pytest.fixture(scope="session")
def qlink_workers():
    """Two ``qlink-worker``s on free loopback ports, for the whole session
    (the distributed route and test_distributed.py); stopped at its end."""
    with Workers(2) as w:
        yield w
