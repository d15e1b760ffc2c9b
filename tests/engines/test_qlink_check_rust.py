# SPDX-License-Identifier: Apache-2.0
"""qlink-check (the conformance kit) passes on every plugin written in Rust
(plugins/rust), with specs for the tables that need a file."""

from __future__ import annotations

import subprocess

import pytest

import files
from engine import build_dir, plugin_path

CHECK = build_dir() / "tools" / "qlink-check"


def specs() -> dict:
    f = files.paths()
    return {
        "qlink_template": ["numbers?count=7"],
        "qlink_memtable": ["rows?n=20000"],
        "qlink_json": [],
        "qlink_geo": [],
        "qlink_orc": [f"orc?path={f.get('orc', '')}"],
        "qlink_listing": [f"parquet?path={f.get('parquet', '')}", f"parquet?path={f.get('folder', '')}",
                          f"csv?path={f.get('csv', '')}", f"folder?path={f.get('lake', '')}"],
    }


@pytest.mark.parametrize("plugin", sorted(specs()))
def test_qlink_check_passes(plugin):
    path = plugin_path(plugin)
    if files.unavailable():
        pytest.skip(files.unavailable())
    args = [str(CHECK), path]
    for s in specs()[plugin]:
        args += ["--spec", s]
    p = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.rstrip().endswith(f"{path}: 0 violation(s)"), p.stdout
