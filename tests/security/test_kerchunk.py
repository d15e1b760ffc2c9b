# SPDX-License-Identifier: Apache-2.0
"""A kerchunk reference file (qlink_zarr's virtual Zarr, plugins/zarr/README.md)
names files and URLs in its contents: each target must meet the same gates
as a `path` option naming it directly. Played as an attacker: a reference
file inside DuckDB's allowed_directories whose chunks or metadata point
outside (a netCDF file, /etc/passwd, the marker library), or at a web
server, with enable_external_access off; a reference file served over
HTTP pointing at local files; a target whose server redirects to another
origin. Each has its positive twin (the same reference read where it is
allowed), and the marker library, named as a target, is only ever read as
bytes, never loaded."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from conftest import Marker
from test_duckdb import BUILDS, STMT, allow, open_ext, plugins_with, refused  # noqa: F401 (open_ext: a fixture)
from test_redirects import CLI, ZARR, Files, Redirect, serve

xr = pytest.importorskip("xarray")
np = pytest.importorskip("numpy")
kerchunk_hdf = pytest.importorskip("kerchunk.hdf")

WORDS = "is refused: DuckDB's enable_external_access is false and it lies in none of allowed_directories and allowed_paths"


def netcdf(path: Path, values=(1.0, 2.0, 3.0, 4.0)) -> Path:
    """A netCDF-4 file of v(y); sum(v) = sum(values)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    xr.Dataset({"v": (("y",), np.array(values))}, coords={"y": np.arange(float(len(values)))}).to_netcdf(path)
    return path


def references(nc: Path, out: Path, url=None) -> Path:
    """kerchunk's references to `nc`, every chunk a byte range, each url
    replaced by url(old) when given."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refs = kerchunk_hdf.SingleHdf5ToZarr(str(nc), inline_threshold=0).translate()
    if url:
        refs["refs"] = {k: ([url(v[0]), *v[1:]] if isinstance(v, list) else v) for k, v in refs["refs"].items()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(refs))
    return out


def chunk_key(refs_file: Path, var: str = "v") -> str:
    refs = json.loads(refs_file.read_text())["refs"]
    return next(k for k, v in refs.items() if k.startswith(var + "/") and isinstance(v, list))


def retarget(refs_file: Path, key: str, target: str, out: Path) -> Path:
    doc = json.loads(refs_file.read_text())
    v = doc["refs"][key]
    doc["refs"][key] = [target, *v[1:]] if isinstance(v, list) else [target]
    out.write_text(json.dumps(doc))
    return out


Q = "SELECT sum(v) FROM qlink_scan('qlink_zarr/table?path={}')"


@pytest.mark.parametrize("build", BUILDS)
def test_duckdb_references_read_only_allowed_files(open_ext, marker: Marker, build, tmp_path):
    inside = tmp_path / "inside"
    own = references(netcdf(inside / "own.nc"), inside / "own.json")
    secret = netcdf(tmp_path / "secret" / "s.nc", values=(10.0, 20.0, 30.0, 40.0))
    out = references(secret, inside / "out.json")  # every chunk a range of the file outside
    key = chunk_key(own)
    passwd = retarget(own, ".zgroup", "/etc/passwd", inside / "passwd.json")
    lib = retarget(own, key, str(marker.path), inside / "lib.json")
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_zarr"))
    # positive twins, before the switch: each target is read (the marker only as bytes)
    assert con.execute(Q.format(own)).fetchall() == [(10.0,)]
    assert con.execute(Q.format(out)).fetchall() == [(100.0,)]
    refused(con, Q.format(passwd), "passwd.json")  # /etc/passwd read, then not Zarr metadata
    assert len(con.execute(Q.format(lib)).fetchall()) == 1  # the library's bytes, as float64 cells
    assert not marker.ran()
    con.execute(f"SET allowed_directories = ['{inside}']")
    con.execute("SET enable_external_access = false")
    assert con.execute(Q.format(own)).fetchall() == [(10.0,)]
    # (the coordinate y is read first, when the table opens)
    refused(con, Q.format(out), f"kerchunk references {out}: key 'y/0' -> 'file://{secret}'",
            f"reading file '{secret}' {WORDS}")
    refused(con, Q.format(passwd), f"kerchunk references {passwd}: key '.zgroup' -> 'file:///etc/passwd'",
            f"reading file '/etc/passwd' {WORDS}")
    refused(con, Q.format(lib), f"key '{key}' -> 'file://{marker.path}'", f"reading file '{marker.path}' {WORDS}")
    # relative urls climbing out of the allowed directory, and a symlink out of it
    climb = references(secret, inside / "climb.json", url=lambda u: "../secret/s.nc")
    refused(con, Q.format(climb), f"reading file '{secret}' {WORDS}")
    (inside / "link.nc").symlink_to(secret)
    linked = references(secret, inside / "linked.json", url=lambda u: "link.nc")
    refused(con, Q.format(linked), f"reading file '{inside / 'link.nc'}' {WORDS}")
    # the reference file itself outside: the path option's own gate
    elsewhere = references(netcdf(tmp_path / "elsewhere" / "e.nc"), tmp_path / "elsewhere" / "e.json")
    refused(con, Q.format(elsewhere), f"option path '{elsewhere}' {WORDS}")
    refused(con, f"{STMT[build]} qlink_attach('o', 'qlink_zarr/store?path={out}')", f"reading file '{secret}'")
    assert not marker.ran()


@pytest.fixture
def files(tmp_path):
    root = tmp_path / "www"
    netcdf(root / "w.nc", values=(1.0, 1.0, 1.0))
    server = serve(functools.partial(Files, directory=str(root)))
    yield root, f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("build", BUILDS)
def test_duckdb_references_to_urls_send_nothing(open_ext, build, files, tmp_path):
    """DuckDB's session serves no HTTP store: a reference to a URL fails,
    with external access on or off, and the server is never asked."""
    root, base, server = files
    refs = references(root / "w.nc", tmp_path / "r.json", url=lambda u: f"{base}/w.nc")
    con = open_ext(build)
    allow(con, plugins_with(tmp_path / "plugins", "qlink_zarr"))
    refused(con, Q.format(refs), f"kerchunk references {refs}: key", f"-> '{base}/w.nc'")
    con.execute(f"SET allowed_directories = ['{tmp_path}']")
    con.execute("SET enable_external_access = false")
    refused(con, Q.format(refs), f"-> '{base}/w.nc'")
    assert server.asked == []


def cli(path: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "QLINK_FOLLOW_REDIRECTS"}
    env.update(env_extra or {})
    return subprocess.run([str(CLI), "sql", "--format", "csv", "--table", f"t={ZARR}/table?path={path}",
                           "SELECT sum(v) AS s FROM t"], capture_output=True, text=True, env=env, timeout=120)


needs_cli = pytest.mark.skipif(not CLI.is_file() or not ZARR.is_file(), reason=f"needs {CLI} and {ZARR}")


@needs_cli
def test_served_references_may_not_read_local_files(files, tmp_path):
    root, base, server = files
    secret = netcdf(tmp_path / "secret.nc", values=(5.0, 5.0))
    references(secret, root / "evil.json", url=lambda u: str(secret))
    references(secret, root / "evil_url.json", url=lambda u: f"file://{secret}")
    shutil.copy(secret, root / "ok.nc")
    references(root / "ok.nc", root / "ok.json", url=lambda u: "ok.nc")
    assert cli(f"{base}/ok.json").stdout == "s\n10.0\n"  # positive twin: the same bytes, served
    for name, shown in (("evil.json", str(secret)), ("evil_url.json", f"file://{secret}")):
        p = cli(f"{base}/{name}")
        assert p.returncode == 1, p
        assert (f"-> '{shown}' is refused: a reference file read from {base} may not point at local files "
                f"(file://, memory://)") in p.stderr, p.stderr


@needs_cli
def test_a_target_redirected_to_another_origin_is_refused(files, tmp_path):
    root, base, server = files
    redirect = serve(Redirect)
    redirect.target = lambda path: base + path
    try:
        a = f"http://127.0.0.1:{redirect.server_address[1]}"
        refs = references(root / "w.nc", tmp_path / "r.json", url=lambda u: f"{a}/w.nc")
        server.asked.clear()
        p = cli(str(refs))
        assert p.returncode == 1, p
        assert f"HTTP redirect from {a} to {base} refused" in p.stderr, p.stderr
        assert server.asked == [], f"the other origin received {server.asked}"
        p = cli(str(refs), {"QLINK_FOLLOW_REDIRECTS": "1"})  # the user's opt-in, as for a path
        assert p.returncode == 0 and p.stdout == "s\n3.0\n", p.stderr
    finally:
        redirect.shutdown()
        redirect.server_close()
