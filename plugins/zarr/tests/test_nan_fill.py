# SPDX-License-Identifier: Apache-2.0
"""NaN and NULL: a float variable whose fill value is NaN (what xarray
writes by default) has its NaN cells masked (SQL NULL, where xarray and
pandas show a missing NaN); a float variable with no fill value, or a
non-NaN one, keeps its NaNs as NaN."""
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

from conftest import assert_same_rows, expected_rows, run_scan

NAN = float("nan")


def write_xr(path, fmt, dtype):
    ds = xr.Dataset({"v": (("x",), np.array([1.0, NAN, 3.0, NAN, 5.0, 6.0, NAN, 8.0, 9.0, 10.0], dtype=dtype))},
                    coords={"x": np.arange(10)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding={"v": {"chunks": (5,)}})
    return path


def is_nan(v):
    return isinstance(v, float) and v != v


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype", ["f4", "f8"])
@pytest.mark.parametrize("block_rows", ["1", "100"])
def test_nan_fill_masks_nan_cells(tmp_path, fmt, dtype, block_rows):
    # block_rows 100: the whole array is one block, whose float32 cells are
    # viewed in place with a validity bitmap (the zero-copy path)
    path = write_xr(tmp_path / "n.zarr", fmt, dtype)
    scan = run_scan(path, "--block-rows", block_rows)
    assert scan.column("v") == [1.0, None, 3.0, None, 5.0, 6.0, None, 8.0, 9.0, 10.0]
    want = expected_rows(path, scan)
    assert_same_rows(scan.rows, want, 1)


def write_raw(path, fmt, fill, attr_fill):
    """A float64 array written by zarr-python: zarr fill_value `fill`, and for
    v3 an xarray _FillValue attribute `attr_fill` (None: no attribute)."""
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    kw = {"dimension_names": ["x"]} if fmt == 3 else {}
    attrs = {} if fmt == 3 else {"_ARRAY_DIMENSIONS": ["x"]}
    if attr_fill is not None:
        attrs["_FillValue"] = attr_fill
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = g.create_array("v", shape=(4,), chunks=(2,), dtype="f8", fill_value=fill, attributes=attrs, **kw)
    a[:] = np.array([1.0, NAN, -999.0, 4.0])
    return path


@pytest.mark.parametrize("fmt", [2, 3])
def test_non_nan_fill_keeps_nan(tmp_path, fmt):
    # fill -999: the -999 cell is NULL, the NaN cell stays NaN
    path = write_raw(tmp_path / "m.zarr", fmt, -999.0, -999.0 if fmt == 3 else None)
    values = run_scan(path).column("v")
    assert values[0] == 1.0 and is_nan(values[1]) and values[2] is None and values[3] == 4.0


def test_no_fill_keeps_nan(tmp_path):
    # v3 without a _FillValue attribute: nothing is masked
    path = write_raw(tmp_path / "f.zarr", 3, NAN, None)
    values = run_scan(path).column("v")
    assert values[0] == 1.0 and is_nan(values[1]) and values[2] == -999.0 and values[3] == 4.0


def test_nan_missing_value_masks_nan(tmp_path):
    # v3, no _FillValue but missing_value NaN
    g = zarr.open_group(str(tmp_path / "mv.zarr"), mode="w", zarr_format=3)
    a = g.create_array("v", shape=(3,), chunks=(3,), dtype="f4", fill_value=0.0, dimension_names=["x"],
                       attributes={"missing_value": "NaN"})
    a[:] = np.array([NAN, 2.0, 0.0], dtype="f4")
    assert run_scan(tmp_path / "mv.zarr").column("v") == [None, 2.0, 0.0]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_non_finite_attributes_as_python_writes_them(tmp_path, fmt, consolidated):
    # zarr-python writes float attributes NaN / inf as the bare JSON tokens
    # NaN / Infinity / -Infinity (Python's json default); the store opens, and
    # missing_value NaN masks the NaN cells as xarray does
    ds = xr.Dataset({"v": (("x",), np.array([1.0, NAN, 3.0, 4.0]),
                           {"missing_value": NAN, "valid_max": float("inf"), "valid_min": float("-inf")})},
                    coords={"x": np.arange(4)})
    path = tmp_path / "attrs.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", consolidated=consolidated, encoding={"v": {"chunks": (2,)}})
    docs = "".join(p.read_text() for p in path.rglob("*") if p.name in (".zattrs", ".zmetadata", "zarr.json"))
    assert "NaN" in docs and "-Infinity" in docs  # the bare tokens really are in the store
    scan = run_scan(path)
    assert scan.column("v") == [1.0, None, 3.0, 4.0]
    assert_same_rows(scan.rows, expected_rows(path, scan), 1)


def test_v2_fill_value_attribute_when_the_zarr_fill_value_is_null(tmp_path):
    # zarr-python stores with fill_value null and _FillValue in .zattrs (as
    # hand-written attributes give): xarray masks with the attribute, and so
    # does the plugin; a CF time's fill becomes NULL, never a date
    g = zarr.open_group(str(tmp_path / "a.zarr"), mode="w", zarr_format=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v = g.create_array("v", shape=(4,), chunks=(2,), dtype="i2", fill_value=None,
                           attributes={"_ARRAY_DIMENSIONS": ["i"], "_FillValue": -999})
        t = g.create_array("t", shape=(4,), chunks=(4,), dtype="i8", fill_value=None,
                           attributes={"_ARRAY_DIMENSIONS": ["i"], "_FillValue": -1,
                                       "units": "hours since 2000-01-01"})
        f = g.create_array("f", shape=(4,), chunks=(4,), dtype="f4", fill_value=9.0,
                           attributes={"_ARRAY_DIMENSIONS": ["i"], "_FillValue": -9999.0})
    v[:] = [1, -999, 0, 4]
    t[:] = [0, -1, 5, 6]
    f[:] = [9.0, -9999.0, 1.5, 2.0]  # a non-null zarr fill_value wins over the attribute, as in xarray
    zarr.consolidate_metadata(str(tmp_path / "a.zarr"), zarr_format=2)
    scan = run_scan(tmp_path / "a.zarr")
    assert scan.column("v") == [1.0, None, 0.0, 4.0]
    assert scan.column("t") == [946684800000000000, None, 946702800000000000, 946706400000000000]
    assert scan.column("f") == [None, -9999.0, 1.5, 2.0]
    assert_same_rows(scan.rows, expected_rows(tmp_path / "a.zarr", scan), 1)
