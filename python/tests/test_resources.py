# SPDX-License-Identifier: Apache-2.0
"""Where the installed package finds its native parts (qlink/_resources.py):
its own copies, or QLINK_BUILD_DIR's alone when that is set."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import qlink
import qlink._ndarray
import qlink.duckdb
import qlink.sqlite

PACKAGE = Path(qlink.__file__).resolve().parent


@pytest.fixture(autouse=True)
def no_overrides(monkeypatch):
    for var in ("QLINK_BUILD_DIR", "QLINK_PLUGIN_DIR", "QLINK_PLUGIN_PATH", "QLINK_NDARRAY_PLUGIN",
                "QLINK_DUCKDB_EXTENSION", "QLINK_SQLITE_EXTENSION"):
        monkeypatch.delenv(var, raising=False)


def test_the_package_ships_every_part():
    assert qlink.plugin_dir() == str(PACKAGE / "plugins")
    for name in ("qlink_sample", "qlink_zarr", "qlink_fold", "qlink_ndarray"):
        assert qlink.plugin_path(name) == str(PACKAGE / "plugins" / f"{name}.so")
    assert qlink._ndarray.plugin_path() == str(PACKAGE / "plugins" / "qlink_ndarray.so")
    assert qlink.duckdb.extension_path("v1") == str(PACKAGE / "hosts" / "duckdb" / "qlink.duckdb_extension")
    assert qlink.duckdb.extension_path("v2") == str(PACKAGE / "hosts" / "duckdb" / "qlink_v2.duckdb_extension")
    assert qlink.sqlite.extension_path() == str(PACKAGE / "hosts" / "sqlite" / "qlink.so")
    assert qlink.duckdb.default_plugin_dirs() == qlink.sqlite.default_plugin_dirs() == [qlink.plugin_dir()]


def test_a_build_dir_replaces_the_package_copies(monkeypatch, tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "qlink_sample.so").write_bytes(b"")
    monkeypatch.setenv("QLINK_BUILD_DIR", str(tmp_path))
    assert qlink.plugin_dir() == str(tmp_path.resolve() / "plugins")
    assert qlink.plugin_path("qlink_sample") == str(tmp_path.resolve() / "plugins" / "qlink_sample.so")
    with pytest.raises(qlink.PluginError, match="qlink_zarr"):
        qlink.plugin_path("qlink_zarr")
    # nothing falls back to the package's copies
    with pytest.raises(FileNotFoundError, match=re.escape(f"no {tmp_path}/hosts/sqlite/qlink.so ")):
        qlink.sqlite.extension_path()
    with pytest.raises(FileNotFoundError, match=re.escape(f"no {tmp_path}/hosts/duckdb/qlink.duckdb_extension ")):
        qlink.duckdb.extension_path()
    assert qlink.duckdb.choose_api() == "v1"


def test_a_missing_build_dir_is_named(monkeypatch, tmp_path):
    monkeypatch.setenv("QLINK_BUILD_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="nowhere/plugins"):
        qlink.plugin_dir()
    with pytest.raises(qlink.PluginError, match="nowhere/plugins"):
        qlink.plugin_path("qlink_sample")


def test_plugin_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("QLINK_PLUGIN_DIR", str(tmp_path))
    assert qlink.plugin_dir() == str(tmp_path.resolve())


def footer(fields: list[str]) -> bytes:
    """A DuckDB metadata footer as hosts/duckdb/scripts/footer.c writes it."""
    out = bytearray(512)
    for i, f in enumerate(fields):
        out[(7 - i) * 32:(7 - i) * 32 + len(f)] = f.encode()
    return bytes(out)


def test_the_v2_builds_footer_names_its_duckdb(tmp_path):
    v1, v2 = tmp_path / "v1.duckdb_extension", tmp_path / "v2.duckdb_extension"
    v1.write_bytes(b"\x7fELF..." + footer(["4", "linux_amd64", "v1.5.6", "0.1.0", "C_STRUCT"]))
    v2.write_bytes(b"\x7fELF..." + footer(["4", "linux_amd64", "v2.0.1", "0.1.0", "C_STRUCT_UNSTABLE"]))
    assert qlink.duckdb.extension_duckdb_version(v1) is None
    assert qlink.duckdb.extension_duckdb_version(v2) == "2.0.1"
    shipped = qlink.duckdb.extension_path("v2")
    import duckdb

    assert qlink.duckdb.extension_duckdb_version(shipped) == duckdb.__version__ == qlink.duckdb.pinned_duckdb_version()
