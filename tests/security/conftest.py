# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the security suite (tests/security).

Every test here plays an attacker against one gate and proves, with a
*marker library*, that no outside code ran: a shared library whose ELF
constructor appends the loading process's pid to a file the moment it is
mapped, before any of its functions is called. A test asserts the marker
file does not exist after the attack (and, in its positive twin, that it
does when the same library is legitimately allowed, so the check can fail).

Environment: QLINK_BUILD_DIR (a CMake release build: plugins, the SQLite and
DuckDB extensions), QLINK_CLI and QLINK_WORKER (the Rust tools), as the other
suites take them; a test whose build is missing is skipped outside `make`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("QLINK_BUILD_DIR", ROOT / "build" / "release"))

MARKER_SOURCE = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void qlink_marker_ran(void) {
  FILE *f = fopen(MARKER_FILE, "a");
  if (f) { fprintf(f, "%ld\n", (long)getpid()); fclose(f); }
}
/* Looks like a plugin to anything that dlsym()s it; it is never meant to get here. */
int qlink_plugin_init(void) { return 1; }
"""


@dataclass
class Marker:
    """A marker library and the file its constructor writes.

    ``path``: the .so (``lib`` folder of its own, outside every allowed
    plugin directory unless a test copies it in); ``ran()``: whether any
    process mapped it, ``pids()``: which."""

    path: Path
    file: Path

    def ran(self) -> bool:
        return self.file.exists()

    def pids(self) -> list[int]:
        return [int(x) for x in self.file.read_text().split()] if self.ran() else []

    def copy_to(self, folder: Path, name: str | None = None) -> Path:
        """The same library under another name/folder (writes the same marker)."""
        folder.mkdir(parents=True, exist_ok=True)
        dst = folder / (name or self.path.name)
        shutil.copy2(self.path, dst)
        return dst


def build_marker(folder: Path, name: str = "evil.so") -> Marker:
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "marker.c"
    src.write_text(MARKER_SOURCE)
    so = folder / name
    mark = folder / "marker.ran"
    cc = os.environ.get("CC", "cc")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O0", f'-DMARKER_FILE="{mark}"', "-o", str(so), str(src)],
        check=True,
    )
    return Marker(so, mark)


@pytest.fixture
def marker(tmp_path) -> Marker:
    """A fresh marker library in ``tmp_path/outside`` (no allowed directory)."""
    return build_marker(tmp_path / "outside")

