# SPDX-License-Identifier: Apache-2.0
"""numcodecs' codecs as real stores use them: Zarr v3 stores written by
zarr-python 3 with its numcodecs codecs ("numcodecs.<id>": the array ->
array filters delta, fixedscaleoffset, quantize, bitround, astype, packbits;
the bytes -> bytes shuffle, compressors and checksums) and Zarr v2 stores
with the numcodecs compressors bz2 and lzma and the checksums, as
compressors and as filters. Every table's full contents equal xarray's
Dataset.to_dataframe(); corrupt chunks and the layouts that stay refused
give an error naming the store, the array and the codec."""
import json
import warnings

import numcodecs
import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr.codecs.numcodecs as N
from zarr.codecs import BytesCodec

from conftest import run_scan
from test_tables import check_table, write


def dataset():
    """float32, int16, uint8, float64 and bool variables over a datetime
    coordinate, with the edge values of each type (NaN and infinities,
    integer extremes whose deltas wrap)."""
    rng = np.random.default_rng(11)
    nt, ny = 9, 7
    f4 = rng.normal(size=(nt, ny)).astype("f4") * 100
    f4[1, 2], f4[2, 3], f4[3, 4] = np.nan, np.inf, -np.inf
    f8 = rng.uniform(990, 1010, size=(nt, ny))
    f8[4, 1] = np.nan
    i2 = rng.integers(-32768, 32767, size=(nt, ny), endpoint=True).astype("i2")
    i2[0, :2] = [-32768, 32767]
    u1 = rng.integers(0, 255, size=(nt, ny), endpoint=True).astype("u1")
    u1[5, :3] = [0, 255, 0]
    return xr.Dataset(
        {"f4": (("time", "y"), f4), "f8": (("time", "y"), f8), "i2": (("time", "y"), i2),
         "u1": (("time", "y"), u1), "b": (("time", "y"), rng.integers(0, 2, size=(nt, ny)).astype(bool))},
        coords={"time": pd.date_range("1999-12-30T06:00", periods=nt, freq="7h"), "y": np.arange(ny) * 0.5},
    )


def store(tmp_path, name, fmt, encoding):
    """Write the variables `encoding` names, each in chunks of 4 x 3 (the
    last ones partial). The time coordinate keeps its default codecs."""
    ds = dataset()[sorted(encoding)]
    enc = {v: dict({"chunks": (4, 3)}, **e) for v, e in encoding.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write(ds, tmp_path / f"{name}.zarr", fmt, enc)


def codecs_of(path, array):
    return json.loads((path / array / "zarr.json").read_text())["codecs"]


# ------------------------------------------------------------------ Zarr v3

def v3_filters():
    """Variable -> encoding, per case: array -> array filters, one or
    several, with and without a compressor after them."""
    return {
        "delta": {"f4": {"filters": [N.Delta(dtype="f4")]}, "i2": {"filters": [N.Delta(dtype="i2")]},
                  "u1": {"filters": [N.Delta(dtype="u1")]}, "f8": {"filters": [N.Delta(dtype="float64")]}},
        "delta_astype": {"i2": {"filters": [N.Delta(dtype="i2", astype="i4")]},
                         "f4": {"filters": [N.Delta(dtype="<f4", astype="f8")], "compressors": None}},
        "fixedscaleoffset": {"f8": {"filters": [N.FixedScaleOffset(offset=1000, scale=10, dtype="f8", astype="u2")]},
                             "u1": {"filters": [N.FixedScaleOffset(offset=0, scale=1, dtype="u1", astype="u1")]},
                             # float32 stored values: NumPy divides in float32
                             "f4": {"filters": [N.FixedScaleOffset(offset=0.5, scale=3.3, dtype="f4", astype="f4")]}},
        "quantize": {"f8": {"filters": [N.Quantize(digits=3, dtype="f8")]},
                     "f4": {"filters": [N.Quantize(digits=1, dtype="f4")], "compressors": None}},
        "bitround": {"f4": {"filters": [N.BitRound(keepbits=4)]}, "f8": {"filters": [N.BitRound(keepbits=12)]}},
        "astype": {"f8": {"filters": [N.AsType(encode_dtype="f4", decode_dtype="f8")]},
                   "i2": {"filters": [N.AsType(encode_dtype="i4", decode_dtype="i2")]}},
        "packbits": {"b": {"filters": [N.PackBits()]}},
        "chain": {"i2": {"filters": [N.Delta(dtype="i2"), N.AsType(encode_dtype="i8", decode_dtype="i2")],
                         "compressors": [N.Shuffle(elementsize=8), N.BZ2(level=9), N.CRC32()]},
                  "f8": {"filters": [N.Quantize(digits=2, dtype="f8"), N.Delta(dtype="f8")],
                         "compressors": [N.Shuffle(), N.Zstd(level=1)]},
                  "f4": {"filters": [N.BitRound(keepbits=8), N.AsType(encode_dtype="f8", decode_dtype="f4")],
                         "compressors": [N.LZMA(preset=1), N.Adler32(location="end")]}},
        "big_endian_bytes": {"i2": {"filters": [N.Delta(dtype="i2")], "serializer": BytesCodec(endian="big")},
                             "f8": {"filters": [N.FixedScaleOffset(offset=1000, scale=100, dtype="f8", astype="i4")],
                                    "serializer": BytesCodec(endian="big")}},
    }


@pytest.mark.parametrize("name", sorted(v3_filters()))
def test_v3_filters(tmp_path, name):
    path = store(tmp_path, name, 3, v3_filters()[name])
    for array, enc in v3_filters()[name].items():
        names = [c["name"] for c in codecs_of(path, array)]
        assert names[0].startswith("numcodecs."), names
    check_table(path)


def v3_bytes_codecs():
    """One compressor / checksum chain per case, on every variable."""
    return {
        "shuffle_zlib": [N.Shuffle(), N.Zlib(level=5)],
        "gzip": [N.GZip(level=1)],
        "lz4": [N.LZ4(acceleration=2)],
        "zstd": [N.Zstd(level=7)],
        "blosc": [N.Blosc(cname="zstd", shuffle=2)],
        "bz2": [N.BZ2(level=1)],
        "lzma": [N.LZMA()],
        "lzma_alone": [N.LZMA(format=2, preset=6)],
        "crc32": [N.CRC32()],
        "crc32_end": [N.Zlib(), N.CRC32(location="end")],
        "crc32c": [N.CRC32C()],
        "crc32c_start": [N.BZ2(), N.CRC32C(location="start")],
        "adler32": [N.LZ4(), N.Adler32()],
        "fletcher32": [N.Fletcher32()],
        "fletcher32_after_bz2": [N.BZ2(), N.Fletcher32()],
        "jenkins": [N.JenkinsLookup3()],
        "jenkins_initval": [N.LZMA(), N.JenkinsLookup3(initval=12345)],
        "two_checksums": [N.CRC32(), N.Zstd(), N.Fletcher32()],
    }


@pytest.mark.parametrize("name", sorted(v3_bytes_codecs()))
def test_v3_bytes_codecs(tmp_path, name):
    ds = dataset()
    path = store(tmp_path, name, 3, {v: {"compressors": v3_bytes_codecs()[name]} for v in ds.data_vars})
    check_table(path)


def test_v3_sharded_filters(tmp_path):
    # numcodecs codecs inside a shard's inner chunks
    enc = {"i2": {"filters": [N.Delta(dtype="i2")], "compressors": [N.BZ2()], "shards": (8, 6), "chunks": (4, 3)},
           "f4": {"filters": [N.Quantize(digits=2, dtype="f4")], "compressors": [N.LZMA(), N.CRC32()],
                  "shards": (4, 6), "chunks": (2, 3)}}
    path = store(tmp_path, "sharded", 3, enc)
    assert codecs_of(path, "i2")[0]["name"] == "sharding_indexed"
    check_table(path)


def test_v3_datetime_coordinate_compressed(tmp_path):
    # bytes -> bytes numcodecs codecs on the int64 datetime coordinate too
    ds = dataset()[["f8"]]
    enc = {"f8": {"chunks": (4, 3), "compressors": [N.BZ2()]},
           "time": {"chunks": (5,), "compressors": [N.LZMA(), N.Fletcher32()]}}
    path = write(ds, tmp_path / "dt.zarr", 3, enc)
    scan = check_table(path)
    assert scan.formats["time"].startswith("ts")


# NumPy accumulates delta's cumsum in the common type of dtype and astype
# and casts each step: a float32 array with float64 deltas, and back, and
# integer widths in both directions
DELTA_TYPES = [("f4", "f8"), ("f8", "f4"), ("i2", "i4"), ("i2", "i1"), ("u1", "i2"), ("f4", "i2"), ("f8", "u2")]


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("dtype,astype", DELTA_TYPES)
def test_delta_types(tmp_path, fmt, dtype, astype):
    if fmt == 3 and dtype == "u1":
        pytest.skip("zarr-python 3.1.6 cannot write it (its bytes codec has no endian for a uint8 array)")
    rng = np.random.default_rng(4)
    raw = {"f4": rng.normal(size=(9, 7)) * 300, "f8": rng.uniform(0, 60000, size=(9, 7)),
           "i2": rng.integers(-120, 120, size=(9, 7)), "u1": rng.integers(0, 255, size=(9, 7))}[dtype]
    var = dtype if dtype in ("f4", "f8", "i2", "u1") else "i2"
    ds = dataset()[[var]]
    ds[var] = (("time", "y"), raw.astype(dtype))
    flt = (numcodecs.Delta(dtype=f"<{dtype}" if dtype != "u1" else "|u1", astype=astype) if fmt == 2
           else N.Delta(dtype=dtype, astype=astype))
    path = write(ds, tmp_path / "d.zarr", fmt, {var: {"chunks": (4, 3), "filters": [flt]}})
    check_table(path)


# ------------------------------------------------------------------ Zarr v2

def v2_cases():
    F = numcodecs
    return {
        "bz2": {"compressors": F.BZ2(level=1)},
        "lzma": {"compressors": F.LZMA()},
        "lzma_alone": {"compressors": F.LZMA(format=2)},
        "crc32": {"compressors": F.CRC32()},
        "crc32c": {"compressors": F.CRC32C()},
        "adler32": {"compressors": F.Adler32(location="end")},
        "fletcher32": {"compressors": F.Fletcher32()},
        "jenkins": {"compressors": F.JenkinsLookup3(initval=3)},
        "checksum_filter_bz2": {"filters": [F.CRC32()], "compressors": F.BZ2()},
        "shuffle_lzma": {"filters": [F.Shuffle(elementsize=1)], "compressors": F.LZMA(preset=9)},
    }


@pytest.mark.parametrize("name", sorted(v2_cases()))
def test_v2_codecs(tmp_path, name):
    ds = dataset()
    path = store(tmp_path, name, 2, {v: dict(v2_cases()[name]) for v in ds.data_vars})
    check_table(path)


def test_v2_filters_and_bz2(tmp_path):
    F = numcodecs
    enc = {"i2": {"filters": [F.Delta(dtype="<i2", astype="<i4"), F.Fletcher32()], "compressors": F.BZ2()},
           "f8": {"filters": [F.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<u2"), F.Adler32()],
                  "compressors": F.LZMA()},
           "b": {"filters": [F.PackBits()], "compressors": F.LZMA(format=2)},
           "f4": {"filters": [F.FixedScaleOffset(offset=-7.25, scale=1 / 3, dtype="<f4", astype="<f4"),
                              F.JenkinsLookup3()]}}
    path = store(tmp_path, "chain2", 2, enc)
    check_table(path)


# ------------------------------------------------------------------ errors

def fails(path):
    p = run_scan(path, check=False)
    assert p.returncode == 1, f"expected a clean failure, got {p.returncode}: {p.stderr}"
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
    return p.stderr


def chunk_path(path, fmt, array="f8"):
    return path / array / ("0.0" if fmt == 2 else "c/0/0")


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("codec,damage,message", [
    ("bz2", "flip", "bz2: "),  # a corrupt block, or more output than the chunk holds
    ("bz2", "cut", "bz2: truncated chunk (the stream has no end)"),
    ("lzma", "flip", "lzma: corrupt chunk"),
    ("lzma", "cut", "lzma: truncated chunk (the stream has no end)"),
    ("crc32", "flip", "crc32: checksum mismatch"),
    ("fletcher32", "flip", "fletcher32: checksum mismatch"),
    ("jenkins_lookup3", "cut", "jenkins_lookup3: checksum mismatch"),
    ("lzma", "empty", "lzma: decoded 0 bytes, expected 96"),
    ("bz2", "empty", "bz2: decoded 0 bytes, expected 96"),
])
def test_corrupt_chunk(tmp_path, fmt, codec, damage, message):
    v2 = {"bz2": numcodecs.BZ2(), "lzma": numcodecs.LZMA(), "crc32": numcodecs.CRC32(),
          "fletcher32": numcodecs.Fletcher32(), "jenkins_lookup3": numcodecs.JenkinsLookup3()}
    v3 = {"bz2": N.BZ2(), "lzma": N.LZMA(), "crc32": N.CRC32(), "fletcher32": N.Fletcher32(),
          "jenkins_lookup3": N.JenkinsLookup3()}
    compressors = v2[codec] if fmt == 2 else [v3[codec]]
    path = store(tmp_path, codec, fmt, {"f8": {"compressors": compressors}})
    chunk = chunk_path(path, fmt)
    data = bytearray(chunk.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x5A
    elif damage == "cut":
        data = data[: len(data) - 7]
    else:
        data = b""
    chunk.write_bytes(bytes(data))
    err = fails(path)
    assert str(path) in err and "array 'f8' chunk" in err and message in err, err


def test_refused_layouts(tmp_path):
    # what stays unsupported says so, naming the store, the array and the codec
    path = store(tmp_path, "refused", 3, {"i2": {"filters": [N.Delta(dtype="i2")]}})
    meta = path / "i2" / "zarr.json"
    doc = json.loads(meta.read_text())
    root = json.loads((path / "zarr.json").read_text())
    root.pop("consolidated_metadata", None)
    (path / "zarr.json").write_text(json.dumps(root))
    cases = [
        ([{"name": "transpose", "configuration": {"order": [1, 0]}}] + doc["codecs"],
         "numcodecs.delta together with transpose is not supported"),
        ([{"name": "numcodecs.delta", "configuration": {"dtype": "f4"}}] + doc["codecs"][1:],
         "numcodecs.delta decodes to float32, not the array's int16 (a cast is not supported)"),
        ([{"name": "numcodecs.delta", "configuration": {"dtype": "c8"}}] + doc["codecs"][1:],
         "filter 'delta': dtype: "),
        (doc["codecs"] + [{"name": "numcodecs.lzma", "configuration": {"format": 3, "filters": [{"id": 33}]}}],
         "lzma: raw format (format 3) is not supported"),
        (doc["codecs"] + [{"name": "numcodecs.pcodec", "configuration": {}}], "unsupported codec 'numcodecs.pcodec'"),
    ]
    for codecs, message in cases:
        meta.write_text(json.dumps(dict(doc, codecs=codecs)))
        err = fails(path)
        assert str(path) in err and "array 'i2'" in err and message in err, err


def test_v2_unsupported_filter(tmp_path):
    path = store(tmp_path, "cat", 2, {"u1": {"filters": [numcodecs.Delta(dtype="u1")]}})
    (path / ".zmetadata").unlink()
    zarray = path / "u1" / ".zarray"
    meta = json.loads(zarray.read_text())
    meta["filters"] = [{"id": "categorize", "labels": ["a"], "dtype": "<U1", "astype": "u1"}]
    zarray.write_text(json.dumps(meta))
    err = fails(path)
    assert str(path) in err and "array 'u1'" in err and "unsupported v2 filter 'categorize'" in err, err
