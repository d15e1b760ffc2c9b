# SPDX-License-Identifier: Apache-2.0
"""Virtual Zarr: kerchunk reference files (kerchunk 0.2.10) read as Zarr
stores, every chunk inline or a byte range of the netCDF file it came from,
compared exactly with xarray's reading of that file
(`xr.open_dataset(file).to_dataframe()`); relative urls; and every broken
reference a clean error naming the key and the target.

The HTTP half (tests/test_kerchunk_http.py) reads the same references
over a local range-serving HTTP server through the qlink tool."""
import base64
import json
import os
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import assert_same_rows, expected_rows_of, run_scan
from test_errors import fails

kerchunk_hdf = pytest.importorskip("kerchunk.hdf")
kerchunk_nc3 = pytest.importorskip("kerchunk.netCDF3")


def dataset():
    """Two dimension groups, a scalar, a NaN (the fill value), a packed
    variable with a fill value, CF times."""
    t = pd.date_range("2024-03-01", periods=5, freq="6h")
    temp = np.arange(5 * 4 * 3, dtype="f4").reshape(5, 4, 3) / 8
    temp[1, 2, 0] = np.nan
    depth = np.arange(12, dtype="f8").reshape(4, 3) * 10.5
    depth[0, 1] = np.nan
    return xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), temp, {"units": "degC", "long_name": "air temperature"}),
            "flag": (("time", "lat", "lon"), (np.arange(60) % 5).astype("i2").reshape(5, 4, 3)),
            "depth": (("lat", "lon"), depth, {"units": "m"}),
            "elev": ((), 12.5),
        },
        coords={"time": t, "lat": [50.0, 51.5, 53.0, 54.5], "lon": [-3.0, 0.0, 3.0]},
    )


NC4_ENCODING = {"temp": {"chunksizes": (2, 4, 3), "zlib": True, "shuffle": True},
                "flag": {"chunksizes": (1, 2, 3)},
                "depth": {"dtype": "i2", "scale_factor": 0.5, "_FillValue": -999}}


def write_refs(refs, path):
    path.write_text(json.dumps(refs))
    return path


@pytest.fixture(scope="module")
def nc4(tmp_path_factory):
    d = tmp_path_factory.mktemp("kc4")
    dataset().to_netcdf(d / "obs.nc", engine="netcdf4", encoding=NC4_ENCODING)
    return d / "obs.nc"


@pytest.fixture(scope="module")
def nc3(tmp_path_factory):
    d = tmp_path_factory.mktemp("kc3")
    dataset().to_netcdf(d / "obs3.nc", format="NETCDF3_64BIT", unlimited_dims=["time"])
    return d / "obs3.nc"


def hdf_refs(nc, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kerchunk_hdf.SingleHdf5ToZarr(str(nc), **kw).translate()


def nc3_refs(nc, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kerchunk_nc3.NetCDF3ToZarr(str(nc), **kw).translate()


def assert_equals_netcdf(refs_file, nc):
    """Every table of the reference file equals xarray's reading of `nc`."""
    tables = run_scan(refs_file, "--list").tables
    names = sorted(t["name"] if isinstance(t, dict) else t for t in tables)
    assert names == ["lat_lon", "scalars", "time_lat_lon"], tables
    ds = xr.open_dataset(nc).load()
    raw = xr.open_dataset(nc, mask_and_scale=False, decode_times=False).load()
    for table, n_dims in (("time_lat_lon", 3), ("lat_lon", 2)):
        scan = run_scan(refs_file, "--table", table)
        want = expected_rows_of(ds, raw, scan)
        assert len(scan.rows) == len(want) > 0
        assert_same_rows(scan.rows, want, n_dims)
    scalars = run_scan(refs_file, "--table", "scalars")
    assert scalars.columns == ["elev"]
    assert scalars.rows == [[float(ds["elev"])]]
    return ds


def test_netcdf4_ranges_equal_xarray(nc4, tmp_path):
    refs = hdf_refs(nc4, inline_threshold=0)
    ranged = [v for v in refs["refs"].values() if isinstance(v, list)]
    assert ranged and all(len(v) == 3 and v[0] == str(nc4) for v in ranged)
    ds = assert_equals_netcdf(write_refs(refs, tmp_path / "obs.json"), nc4)
    # the exact cells, as a spot check of what the comparison covers
    scan = run_scan(tmp_path / "obs.json", "--table", "time_lat_lon", "--block-rows", "65536")
    rows = [dict(zip(scan.columns, r)) for r in scan.rows]
    assert rows[0] == {"time": pd.Timestamp("2024-03-01").value, "lat": 50.0, "lon": -3.0, "flag": 0, "temp": 0.0}
    assert rows[1 * 12 + 2 * 3 + 0]["temp"] is None  # the NaN, xarray's fill value: NULL
    assert rows[59] == {"time": pd.Timestamp("2024-03-02").value, "lat": 54.5, "lon": 3.0, "flag": 4, "temp": 7.375}
    assert ds["temp"].attrs["units"] == "degC" and scan.metadata["temp"]["units"] == "degC"


def test_netcdf4_inline_refs_equal_xarray(nc4, tmp_path):
    refs = hdf_refs(nc4, inline_threshold=100000)
    chunks = {k: v for k, v in refs["refs"].items() if not k.split("/")[-1].startswith(".")}
    assert chunks and all(isinstance(v, str) for v in chunks.values())
    assert any(v.startswith("base64:") for v in chunks.values())
    assert_equals_netcdf(write_refs(refs, tmp_path / "inline.json"), nc4)


def test_netcdf3_equals_xarray(nc3, tmp_path):
    refs = nc3_refs(nc3, inline_threshold=0)
    assert any(isinstance(v, list) for v in refs["refs"].values())
    assert_equals_netcdf(write_refs(refs, tmp_path / "obs3.json"), nc3)


def test_version_0_and_relative_urls(nc4, tmp_path):
    """A flat (version 0) reference set whose urls are relative to the
    reference file's folder, read from another working directory."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(nc4, data / "obs.nc")
    refs = hdf_refs(nc4, inline_threshold=0)["refs"]
    flat = {k: (["../data/obs.nc", *v[1:]] if isinstance(v, list) else v) for k, v in refs.items()}
    (tmp_path / "refs").mkdir()
    write_refs(flat, tmp_path / "refs" / "v0.json")
    cwd = os.getcwd()
    os.chdir("/")
    try:
        assert_equals_netcdf(tmp_path / "refs" / "v0.json", nc4)
    finally:
        os.chdir(cwd)


def test_templates(nc4, tmp_path):
    refs = hdf_refs(nc4, inline_threshold=0)
    refs["templates"] = {"u": str(nc4.parent)}
    refs["refs"] = {k: (["{{u}}/" + nc4.name, *v[1:]] if isinstance(v, list) else v) for k, v in refs["refs"].items()}
    assert_equals_netcdf(write_refs(refs, tmp_path / "t.json"), nc4)


# ---- errors: each names the reference file, the key and the target


def first_chunk(refs, var):
    return next(k for k, v in refs["refs"].items() if k.startswith(var + "/") and isinstance(v, list))


def test_missing_target(nc4, tmp_path):
    refs = hdf_refs(nc4, inline_threshold=0)
    key = first_chunk(refs, "temp")
    refs["refs"][key][0] = str(tmp_path / "gone.nc")
    f = write_refs(refs, tmp_path / "m.json")
    err = fails(f, "--table", "time_lat_lon")
    assert f"kerchunk references {f}: key '{key}' -> 'file://{tmp_path}/gone.nc': the target does not exist" in err


def test_offset_past_the_end_and_short_read(nc4, tmp_path):
    size = nc4.stat().st_size
    refs = hdf_refs(nc4, inline_threshold=0)
    key = first_chunk(refs, "temp")
    refs["refs"][key][1] = size + 100
    f = write_refs(refs, tmp_path / "past.json")
    err = fails(f, "--table", "time_lat_lon")
    assert f"key '{key}' -> 'file://{nc4}' bytes {size + 100}.." in err, err
    refs["refs"][key][1] = size - 4
    refs["refs"][key][2] = 40
    f = write_refs(refs, tmp_path / "short.json")
    err = fails(f, "--table", "time_lat_lon")
    assert (f"key '{key}' -> 'file://{nc4}' bytes {size - 4}..{size + 36}: the target ends first "
            f"(short read: 4 of 40 bytes)") in err, err


def test_bad_documents(tmp_path):
    cases = {
        "malformed.json": ('{"version": 1, "refs": {".zgroup": ', "malformed JSON at line 1"),
        "base64.json": ('{"version": 1, "refs": {".zgroup": "{}", "a/0": "base64:%%%"}}', "key 'a/0': bad base64"),
        "absurd.json": ('{"version": 1, "refs": {".zgroup": "{}", "a/0": ["x.nc", 0, 99999999999]}}',
                        "key 'a/0' -> 'x.nc': offset 0 and length 99999999999 are out of range"),
        "negative.json": ('{"version": 1, "refs": {".zgroup": "{}", "a/0": ["x.nc", -8, 8]}}',
                          "offset -8 and length 8 are out of range"),
        "version.json": ('{"version": 2, "refs": {}}', "unsupported version"),
        "nogroup.json": ('{"version": 1, "refs": {"a/0": "x"}}', "no Zarr group"),
        "gen.json": ('{"version": 1, "refs": {".zgroup": "{}"}, "gen": [{"key": "a/{{i}}"}]}', "(\"gen\") are not"),
        "climb.json": ('{"version": 1, "refs": {".zgroup": "{}", "a/0": ["../../../../../../../../x", 0, 1]}}',
                       "key 'a/0' -> '../../../../../../../../x': path"),
    }
    for name, (text, words) in cases.items():
        (tmp_path / name).write_text(text)
        err = fails(tmp_path / name, "--list")
        assert f"kerchunk references {tmp_path / name}" in err and words in err, (name, err)


def test_parquet_references_are_refused(tmp_path):
    (tmp_path / "refs.parq").mkdir()
    err = fails(tmp_path / "refs.parq", "--list")
    assert "Parquet references are not supported (no Parquet reader is linked)" in err


def test_a_reference_to_itself_is_bytes_not_a_loop(tmp_path):
    """Targets are read as bytes, never as references: a chunk pointing at
    the reference file itself fails to decode, naming the chunk."""
    zattrs = json.dumps({"_ARRAY_DIMENSIONS": ["x"]})
    zarray = json.dumps({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<f8", "fill_value": None,
                         "compressor": {"id": "zlib", "level": 1}, "filters": None, "order": "C"})
    refs = {"version": 1, "refs": {".zgroup": '{"zarr_format":2}', "v/.zarray": zarray, "v/.zattrs": zattrs,
                                   "v/0": ["self.json"]}}
    f = write_refs(refs, tmp_path / "self.json")
    err = fails(f, "--table", "x")
    assert f"zarr store {f}: array 'v' chunk 'v/0'" in err, err


def test_inline_base64_chunk_exact(tmp_path):
    """A chunk given as base64 bytes and another as a range of a plain
    binary file, as VirtualiZarr's kerchunk writer emits them."""
    (tmp_path / "blob.bin").write_bytes(b"HEAD" + np.array([1.5, -2.25], "<f8").tobytes())
    zarray = json.dumps({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<f8", "fill_value": None,
                         "compressor": None, "filters": None, "order": "C"})
    refs = {"version": 1, "refs": {
        ".zgroup": '{"zarr_format":2}', ".zattrs": "{}", "v/.zarray": zarray,
        "v/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["x"]}),
        "v/0": [str(tmp_path / "blob.bin"), 4, 16],
        "v/1": "base64:" + base64.b64encode(np.array([3.0, 1e300], "<f8").tobytes()).decode()}}
    scan = run_scan(write_refs(refs, tmp_path / "b.json"), "--table", "x")
    assert scan.rows == [[0, 1.5], [1, -2.25], [2, 3.0], [3, 1e300]]
