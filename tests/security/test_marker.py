# SPDX-License-Identifier: Apache-2.0
"""The marker library itself: loading it leaves its pid, so a gate test that
finds no marker file proves something."""

import ctypes
import os


def test_marker_fires_when_loaded(marker):
    """The marker itself works: loading it writes this process's pid."""
    assert not marker.ran()
    ctypes.CDLL(str(marker.path))
    assert marker.pids() == [os.getpid()]
