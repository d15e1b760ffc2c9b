# SPDX-License-Identifier: Apache-2.0
"""Bad input: a clear error naming the store, the array and the problem;
never a crash (the driver runs under ASan/UBSan in the asan build) and
never a silently wrong value."""
import json
import os
import warnings

import numcodecs
import numpy as np
import pytest
import xarray as xr

from conftest import run_scan


def make(tmp_path, fmt, consolidated=True, compressor=None):
    ds = xr.Dataset(
        {"a": (("x", "y"), np.arange(24, dtype="f8").reshape(4, 6)), "b": (("x",), np.arange(4, dtype="i4"))},
        coords={"x": [1, 2, 3, 4], "y": np.arange(6) * 0.5},
    )
    enc = {"a": {"chunks": (2, 3)}}
    if compressor is not None:
        enc["a"]["compressors"] = compressor
    path = tmp_path / f"e{fmt}.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=enc, consolidated=consolidated)
    return path


def fails(path, *args):
    p = run_scan(path, *args, check=False)
    assert p.returncode == 1, f"expected a clean failure, got {p.returncode}: {p.stderr}"
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    return p.stderr


def edit_json(path, fn):
    with open(path) as f:
        doc = json.load(f)
    fn(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def meta_file(path, fmt, array):
    return path / array / (".zarray" if fmt == 2 else "zarr.json")


def drop_consolidated(path, fmt):
    if fmt == 2:
        os.remove(path / ".zmetadata")
    else:
        edit_json(path / "zarr.json", lambda d: d.pop("consolidated_metadata", None))


def chunk_file(path, fmt):
    return path / "a" / ("0.0" if fmt == 2 else "c/0/0")


@pytest.mark.parametrize("fmt", [2, 3])
def test_malformed_json(tmp_path, fmt):
    path = make(tmp_path, fmt)
    drop_consolidated(path, fmt)
    with open(meta_file(path, fmt, "a"), "w") as f:
        f.write('{"shape": [4, 6], "chunks": ')
    err = fails(path)
    assert str(path) in err and "a/" in err and "malformed JSON" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_malformed_consolidated_metadata(tmp_path, fmt):
    path = make(tmp_path, fmt)
    name = ".zmetadata" if fmt == 2 else "zarr.json"
    with open(path / name, "w") as f:
        f.write("{not json")
    err = fails(path)
    assert name in err and "malformed JSON" in err


def test_unsupported_codec_v2(tmp_path):
    path = make(tmp_path, 2, consolidated=False)
    edit_json(meta_file(path, 2, "a"), lambda d: d.update(compressor={"id": "zfpy", "mode": 4}))
    err = fails(path)
    assert "array 'a'" in err and "unsupported compressor 'zfpy'" in err


def test_unsupported_codec_v3(tmp_path):
    path = make(tmp_path, 3, consolidated=False)
    edit_json(meta_file(path, 3, "a"), lambda d: d["codecs"].append({"name": "numcodecs.zfpy", "configuration": {}}))
    err = fails(path)
    assert "array 'a'" in err and "unsupported codec 'numcodecs.zfpy'" in err


@pytest.mark.parametrize("fmt,dtype", [(2, "<c16"), (2, "|O"), (3, "complex128"), (3, "string")])
def test_unsupported_dtype(tmp_path, fmt, dtype):
    path = make(tmp_path, fmt, consolidated=False)
    key = "dtype" if fmt == 2 else "data_type"
    edit_json(meta_file(path, fmt, "a"), lambda d: d.update({key: dtype}))
    err = fails(path)
    assert "array 'a'" in err and dtype in err


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("codec", ["default", "zstd", "zlib", "lz4", "gzip", "blosc"])
def test_truncated_chunk(tmp_path, fmt, codec):
    compressors = {
        "default": None,
        "zstd": numcodecs.Zstd(),
        "zlib": numcodecs.Zlib(),
        "lz4": numcodecs.LZ4(),
        "gzip": numcodecs.GZip(),
        "blosc": numcodecs.Blosc(),
    }
    if fmt == 3:
        from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec
        from zarr.codecs.numcodecs import LZ4, Zlib

        compressors = {"default": None, "zstd": ZstdCodec(), "zlib": Zlib(), "lz4": LZ4(), "gzip": GzipCodec(),
                       "blosc": BloscCodec()}
    path = make(tmp_path, fmt, compressor=compressors[codec])
    chunk = chunk_file(path, fmt)
    data = chunk.read_bytes()
    chunk.write_bytes(data[: len(data) // 2])
    err = fails(path)
    assert str(path) in err and "array 'a' chunk" in err
    if codec == "blosc":
        assert f"blosc: chunk truncated ({len(data) // 2} of {len(data)} bytes)" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_corrupt_chunk(tmp_path, fmt):
    path = make(tmp_path, fmt)
    chunk = chunk_file(path, fmt)
    data = bytearray(chunk.read_bytes())
    for i in range(len(data) // 3, len(data)):
        data[i] ^= 0x5A
    chunk.write_bytes(bytes(data))
    p = run_scan(path, check=False)
    # either a clear error, or (if the codec cannot tell) never a crash
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr
    if p.returncode != 0:
        assert "array 'a' chunk" in p.stderr


def test_crc32c_detects_corruption(tmp_path):
    from zarr.codecs import Crc32cCodec, ZstdCodec

    path = make(tmp_path, 3, compressor=[ZstdCodec(), Crc32cCodec()])
    chunk = chunk_file(path, 3)
    data = bytearray(chunk.read_bytes())
    data[3] ^= 1
    chunk.write_bytes(bytes(data))
    err = fails(path)
    assert "crc32c: checksum mismatch" in err and "array 'a'" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_chunk_size_mismatch(tmp_path, fmt):
    path = make(tmp_path, fmt, consolidated=False)
    if fmt == 2:
        edit_json(meta_file(path, 2, "a"), lambda d: d.update(chunks=[2, 2]))
    else:
        edit_json(meta_file(path, 3, "a"), lambda d: d["chunk_grid"]["configuration"].update(chunk_shape=[2, 2]))
    err = fails(path)
    assert "array 'a' chunk" in err and "expected" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_shape_mismatch(tmp_path, fmt):
    path = make(tmp_path, fmt, consolidated=False)
    edit_json(meta_file(path, fmt, "b"), lambda d: d.update(shape=[5]))
    err = fails(path)
    assert "dimension 'x'" in err and "size 5" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_path_outside_the_store(tmp_path, fmt):
    path = make(tmp_path, fmt)
    if fmt == 2:
        def evil(d):
            d["metadata"]["../evil/.zarray"] = d["metadata"]["a/.zarray"]
        edit_json(path / ".zmetadata", evil)
    else:
        def evil(d):
            d["consolidated_metadata"]["metadata"][".."] = d["consolidated_metadata"]["metadata"]["a"]
        edit_json(path / "zarr.json", evil)
    err = fails(path)
    assert "outside the store" in err


def test_not_a_store(tmp_path):
    (tmp_path / "empty").mkdir()
    err = fails(tmp_path / "empty")
    assert "not a Zarr group" in err
    err = fails(tmp_path / "missing.zarr")
    assert "missing.zarr" in err


def test_unknown_table(tmp_path):
    path = make(tmp_path, 3)
    err = fails(path, "--table", "nope")
    assert "no table 'nope'" in err
    err = fails(path, "--tables", "x_y=grid,zz=other")
    assert "no table 'zz'" in err


@pytest.mark.parametrize("fmt", [2, 3])
def test_missing_chunk_reads_fill_value(tmp_path, fmt):
    path = make(tmp_path, fmt)
    os.remove(chunk_file(path, fmt))
    scan = run_scan(path, "--table", "x_y", "--where", "x <= 2", "--where", "y < 1.5")
    # xarray writes float arrays with a NaN fill value: the missing chunk's
    # NaN cells are masked (NULL)
    assert scan.columns == ["x", "y", "a"]
    values = [r[2] for r in scan.rows]
    assert values == [None] * 6


@pytest.mark.parametrize("fmt", [2, 3])
def test_path_at_an_array(tmp_path, fmt):
    # The message used to print node_type after its JSON was freed (garbage
    # under a release build, a use-after-free under ASan).
    path = make(tmp_path, fmt)
    err = fails(path / "a")
    assert str(path / "a") in err and "is an array, not a group" in err


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("chunks,words", [([2**40, 2**40], "chunks is too large: its 2 extents multiply to more than "
                                                             "2^48 = 281474976710656 elements"),
                                          ([2**20, 2**20], "chunk of 1099511627776 elements (8796093022208 bytes)")])
def test_chunk_too_large(tmp_path, fmt, chunks, words):
    path = make(tmp_path, fmt, consolidated=False)
    if fmt == 2:
        edit_json(meta_file(path, 2, "a"), lambda d: d.update(chunks=chunks))
    else:
        edit_json(meta_file(path, 3, "a"), lambda d: d["chunk_grid"]["configuration"].update(chunk_shape=chunks))
    err = fails(path, "--table", "x_y")
    if fmt == 3:
        words = words.replace("chunks is", "chunk_shape is")
    assert "array 'a'" in err and words in err and "too large" in err and "of -1 " not in err


@pytest.mark.parametrize("value", ["99999999999999999999999", str(2**40 + 1), "0", "12x"])
def test_block_rows_out_of_range(tmp_path, value):
    path = make(tmp_path, 3)
    err = fails(path, "--block-rows", value)
    assert "block_rows" in err and value in err


def test_block_rows_largest_accepted(tmp_path):
    path = make(tmp_path, 3)
    scan = run_scan(path, "--table", "x", "--block-rows", str(2**40))
    assert scan.column("b") == [0, 1, 2, 3]


# missing_value strings that are no number mask nothing, as in xarray
# (test_realworld.py::test_missing_value_string_masks_nothing)
@pytest.mark.parametrize("key", ["_FillValue"])
@pytest.mark.parametrize("value", ["not base64!", "AAAA"])
def test_v3_fill_value_not_base64(tmp_path, key, value):
    path = make(tmp_path, 3, consolidated=False)
    edit_json(meta_file(path, 3, "a"), lambda d: d["attributes"].update({key: value}))
    err = fails(path, "--table", "x_y")
    assert str(path) in err and "array 'a'" in err and key in err and "base64" in err


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("shape,words", [
    ([2**62, 6], "shape[0] = 4611686018427387904 is too large (at most 2^48 = 281474976710656)"),
    ([4, 2**63 - 1], "shape[1] = 9223372036854775807 is too large (at most 2^48 = 281474976710656)"),
    ([2**30, 2**30], "shape is too large: its 2 extents multiply to more than 2^48 = 281474976710656 elements"),
])
def test_shape_too_large(tmp_path, fmt, shape, words):
    # 2^62 used to say "shape[0] is not a non-negative integer"; a product
    # past int64 was accepted and overflowed the row count.
    path = make(tmp_path, fmt, consolidated=False)
    edit_json(meta_file(path, fmt, "a"), lambda d: d.update(shape=shape))
    err = fails(path)
    assert err.strip() == f"zarr-scan: open: zarr store {path}: array 'a': {words}"


def test_coordinates_table_too_large(tmp_path):
    # Only coordinates, three of 2^21 positions: the one table spans all
    # three, 2^63 rows. Its row count used to overflow (undefined behaviour).
    import zarr

    path = tmp_path / "coords.zarr"
    g = zarr.open_group(path, mode="w", zarr_format=3)
    for d in "xyz":
        g.create_array(d, shape=(2**21,), chunks=(2**21,), dtype="i8", fill_value=0, dimension_names=[d])
    err = fails(path)
    assert err.strip() == (f"zarr-scan: open: zarr store {path}: the table of its coordinates is too large: "
                           "with dimension 'z' (size 2097152) its row count passes 2^63")


DUP = ("dimension name 'x' is given twice (axes 0 and 1); each axis needs its own name (xarray does not support "
       "repeated dimension names either: it warns on open and cannot make a dataframe of the array)")


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("consolidated", [True, False])
def test_repeated_dimension_name(tmp_path, fmt, consolidated):
    # Accepted before: the table had two columns named 'x' and read the
    # array along one axis only (wrong values), and a DataFusion host failed
    # every query with a schema error that did not name the store.
    import zarr

    path = tmp_path / f"dup{fmt}.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(path, mode="w", zarr_format=fmt)
        kw = {"dimension_names": ["x", "x"]} if fmt == 3 else {}
        a = g.create_array("a", shape=(3, 3), dtype="f8", **kw)
        if fmt == 2:
            a.attrs["_ARRAY_DIMENSIONS"] = ["x", "x"]
        a[:] = np.arange(9.0).reshape(3, 3)
        if consolidated:
            zarr.consolidate_metadata(path, zarr_format=fmt)
        # xarray opens it with a warning, then cannot build the dataframe
        with pytest.raises(ValueError):
            xr.open_zarr(path, consolidated=consolidated).to_dataframe()
    err = fails(path)
    assert err.strip() == f"zarr-scan: open: zarr store {path}: array 'a': {DUP}"


def test_repeated_dimension_name_v3_attribute_fallback(tmp_path):
    # A v3 array without dimension_names falls back to _ARRAY_DIMENSIONS:
    # the same rule applies there.
    path = make(tmp_path, 3, consolidated=False)
    def dup(d):
        d["dimension_names"] = None
        d["attributes"]["_ARRAY_DIMENSIONS"] = ["x", "x"]
    edit_json(meta_file(path, 3, "a"), dup)
    err = fails(path)
    assert err.strip() == f"zarr-scan: open: zarr store {path}: array 'a': {DUP}"


@pytest.mark.parametrize("prefix", ["", "file://"])
def test_missing_path(tmp_path, prefix):
    # Used to say "not a Zarr group", as for an existing directory.
    for missing in (tmp_path / "nope.zarr", tmp_path / "no" / "such" / "dir.zarr"):
        err = fails(f"{prefix}{missing}")
        assert err.strip() == f"zarr-scan: open: zarr store {prefix}{missing}: the path does not exist"


def test_path_at_a_file(tmp_path):
    f = tmp_path / "data.nc"
    f.write_bytes(b"CDF\x01")
    err = fails(f)
    assert err.strip() == (f"zarr-scan: open: zarr store {f}: a file, not a Zarr store "
                           "(a directory holding zarr.json, .zmetadata or .zgroup)")


def test_directory_without_zarr_metadata(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "readme.txt").write_text("not zarr")
    for d in (tmp_path / "plain", tmp_path):
        err = fails(d)
        assert err.strip() == f"zarr-scan: open: zarr store {d}: not a Zarr group (no zarr.json, .zmetadata or .zgroup)"


# A v3 member whose metadata is no object or has no known node_type used to
# be skipped, losing its variable without a word (xarray refuses the store).
@pytest.mark.parametrize("entry,words", [
    ({"shape": "abc"}, "has node_type missing"),
    ("abc", "is not a JSON object"),
    ("node_type:banana", "has node_type 'banana'"),
])
@pytest.mark.parametrize("consolidated", [True, False])
def test_v3_member_without_node_type(tmp_path, entry, words, consolidated):
    path = make(tmp_path, 3, consolidated=consolidated)

    def damage(doc):
        if entry == "node_type:banana":
            doc["node_type"] = "banana"
            return doc
        return entry

    if consolidated:
        edit_json(path / "zarr.json",
                  lambda d: d["consolidated_metadata"]["metadata"].update(b=damage(d["consolidated_metadata"]["metadata"]["b"])))
        where = "consolidated metadata entry 'b'"
    else:
        with open(meta_file(path, 3, "b")) as f:
            doc = json.load(f)
        with open(meta_file(path, 3, "b"), "w") as f:
            json.dump(damage(doc), f)
        where = "zarr.json of 'b'"
    err = fails(path)
    assert str(path) in err and where in err and words in err, err
