#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerate the seed corpora in fuzz/corpus from stores zarr-python
writes (run with the project venv; the output is kept in the repo):

    make_corpus.py [OUT_DIR]

metadata_fuzz: consolidated roots (v2 .zmetadata, v3 zarr.json), single
.zarray / zarr.json documents, time-unit strings.
chunk_fuzz: 4 selector bytes (pipeline, dtype, shape) + a real chunk
written with the matching codecs (chunk_fuzz.c lists them in this order).
shard_read_fuzz: layout byte + 2 box bytes + a shard zarr-python wrote.
refs_fuzz: kerchunk reference files (kerchunk 0.2.10 over netCDF-4 and
netCDF-3 files xarray wrote; their urls point at the target's f.bin, 64
bytes), version 0, templates, base64 and whole-file references.
"""
import hashlib
import json
import os
import struct
import sys
import tempfile
import warnings

import numcodecs
import numpy as np
import xarray as xr
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec, ZstdCodec
import zarr.codecs.numcodecs as N
from zarr.codecs.numcodecs import LZ4, Zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def save(out, name, data):
    os.makedirs(out, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(out, f"{name}-{digest}"), "wb") as f:
        f.write(data)


def metadata_seeds(out, tmp):
    rng = np.random.default_rng(0)
    ds = xr.Dataset(
        {
            "t": (("time", "y"), rng.normal(size=(4, 3)).astype("f4"), {"units": "K", "long_name": "temp"}),
            "n": (("time", "y"), rng.integers(0, 9, size=(4, 3)).astype("f8")),
            "s": (("y",), np.array(["a", "bb", "c"])),
        },
        coords={"time": np.array(["2000-01-01", "2000-01-02", "2000-01-03", "2000-01-04"], dtype="M8[ns]"), "y": [1, 2, 3]},
    )
    enc = {"n": {"dtype": "i2", "_FillValue": -9, "scale_factor": 0.5}, "t": {"_FillValue": -1e34}}
    for fmt in (2, 3):
        path = os.path.join(tmp, f"m{fmt}.zarr")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=enc)
        for root, _, files in os.walk(path):
            for f in files:
                if f in (".zmetadata", "zarr.json", ".zarray", ".zattrs"):
                    with open(os.path.join(root, f), "rb") as fh:
                        save(out, f"v{fmt}{f.replace('.', '_')}", fh.read())
    # numcodecs codecs in the metadata: v3 numcodecs.<id> filters,
    # compressors and checksums, v2 filters and compressors
    nc = {"t": {"filters": [N.Delta(dtype="f4"), N.AsType(encode_dtype="f8", decode_dtype="f4")],
                "compressors": [N.Shuffle(elementsize=8), N.BZ2(level=1), N.CRC32(location="end")]},
          "n": {"filters": [N.BitRound(keepbits=3), N.FixedScaleOffset(offset=0, scale=10, dtype="f8", astype="i2")],
                "compressors": [N.LZMA(format=2), N.JenkinsLookup3(initval=1)]}}
    nc2 = {"t": {"filters": [numcodecs.Quantize(digits=1, dtype="<f4"), numcodecs.Adler32()],
                 "compressors": numcodecs.LZMA()},
           "n": {"filters": [numcodecs.Delta(dtype="<f8", astype="<f4")], "compressors": numcodecs.Fletcher32()}}
    for fmt, enc_nc in ((3, nc), (2, nc2)):
        path = os.path.join(tmp, f"nc{fmt}.zarr")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds[["t", "n"]].to_zarr(path, zarr_format=fmt, mode="w", encoding=enc_nc)
        for root, _, files in os.walk(path):
            for f in files:
                if f in (".zmetadata", "zarr.json", ".zarray") and (f != "zarr.json" or root == path):
                    with open(os.path.join(root, f), "rb") as fh:
                        save(out, f"v{fmt}numcodecs{f.replace('.', '_')}", fh.read())
    for units in ["days since 2000-01-01", "hour since 0000-01-01 00:00:00", "seconds since 1970-01-01T00:00:00+01:00",
                  "milliseconds since 1999-12-31 23:59:59.5"]:
        save(out, "units", json.dumps(units).encode())


def chunk_of(path, key):
    with open(os.path.join(path, key), "rb") as f:
        return f.read()


def chunk_seeds(out, tmp):
    # (selector, codecs kwargs, dtype index, shape) in chunk_fuzz.c's order
    configs = [
        (0, {"compressors": None}),
        (1, {"compressors": [BloscCodec(cname="lz4", shuffle="shuffle")]}),
        (2, {"compressors": [ZstdCodec()]}),
        (3, {"compressors": [GzipCodec()]}),
        (4, {"compressors": [Zlib()]}),
        (5, {"compressors": [LZ4()]}),
        (6, {"compressors": [ZstdCodec(), Crc32cCodec()]}),
        (7, {"filters": [TransposeCodec(order=(1, 0))], "serializer": BytesCodec(endian="big"), "compressors": [BloscCodec()]}),
        (8, {"shards": (4, 6), "chunks": (1, 2), "compressors": None}),
    ]
    data = np.arange(24, dtype="<f8").reshape(4, 6) * 1.5
    for sel, kw in configs:
        path = os.path.join(tmp, f"c{sel}.zarr")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = kw.pop("chunks", (4, 6))
            arr = zarr.create_array(path, shape=(4, 6), chunks=chunks, dtype="f8", zarr_format=3, **kw)
            arr[:] = data
        save(out, f"p{sel}", bytes([sel, 0, 1, 2]) + chunk_of(path, "c/0/0"))
    save(out, "p0-short", bytes([0, 3, 0, 0]) + b"\x01\x02\x03")
    # vlen-utf8 (pipeline 11): 4 items for the 2 x 2 shape of bytes 2-3 = 0
    items = [b"oslo", b"", "kyiv\u20ac".encode(), b"x"]
    chunk = struct.pack("<I", len(items)) + b"".join(struct.pack("<I", len(i)) + i for i in items)
    save(out, "p11-vlen", bytes([11, 0, 0, 0]) + chunk)
    # zarr-python 3's numcodecs.<id> codecs (pipelines 13-19), on a 4 x 6
    # chunk (bytes 2-3 = 1, 2), as chunk_fuzz.c spells them
    numcodecs_v3 = [
        (13, 0, {"filters": [N.Delta(dtype="f8")], "compressors": [N.BZ2(level=1)]}),
        (14, 0, {"filters": [N.FixedScaleOffset(offset=1000, scale=10, dtype="f8", astype="u2")],
                 "compressors": [N.LZMA()]}),
        (15, 0, {"filters": [N.Quantize(digits=2, dtype="f8")],
                 "compressors": [N.Shuffle(elementsize=8), N.Zstd(), N.CRC32()]}),
        (16, 0, {"compressors": [N.LZMA(format=2), N.Fletcher32()]}),
        (17, 8, {"filters": [N.PackBits()], "compressors": [N.JenkinsLookup3(initval=5)]}),
        (18, 0, {"filters": [N.BitRound(keepbits=9), N.AsType(encode_dtype="f4", decode_dtype="f8")],
                 "serializer": BytesCodec(endian="big"),
                 "compressors": [N.Adler32(location="end"), N.CRC32C(location="start")]}),
        (19, 0, {"filters": [N.Delta(dtype="f8")], "compressors": [N.BZ2()], "shards": (4, 6), "chunks": (1, 2)}),
    ]
    for sel, dtype_index, kw in numcodecs_v3:
        path = os.path.join(tmp, f"n{sel}.zarr")
        values = data + 1000 if dtype_index == 0 else (np.arange(24).reshape(4, 6) % 3 == 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = kw.pop("chunks", (4, 6))
            arr = zarr.create_array(path, shape=(4, 6), chunks=chunks, dtype=values.dtype, zarr_format=3, **kw)
            arr[:] = values
        save(out, f"p{sel}-numcodecs", bytes([sel, dtype_index, 1, 2]) + chunk_of(path, "c/0/0"))
    # v2 pipelines with numcodecs filters, compressors and checksums
    # (chunk_fuzz.c's V2_PIPELINES, after its 20 v3 ones), encoded by
    # numcodecs for the 2 x 2 shape of bytes 2-3 = 0
    f = numcodecs
    v2 = [
        (20, 1, None, [f.Delta(dtype="<i4"), f.Shuffle(elementsize=4)], "<i4"),
        (21, 0, f.Zstd(), [f.FixedScaleOffset(offset=1000, scale=10, dtype="<f8", astype="<u2")], "<f8"),
        (22, 0, None, [f.Quantize(digits=2, dtype="<f8", astype="<f4")], "<f8"),
        (23, 0, None, [f.BitRound(keepbits=5), f.AsType(encode_dtype=">f4", decode_dtype="<f8")], "<f8"),
        (24, 1, None, [f.Delta(dtype="<f4", astype="<f8"),
                       f.FixedScaleOffset(offset=-1, scale=0.5, dtype="<f8", astype="|i1")], "<f4"),
        (25, 0, f.BZ2(level=1), [f.CRC32()], "<f8"),
        (26, 0, f.LZMA(), [f.Delta(dtype="<f8")], "<f8"),
        (27, 8, f.Fletcher32(), [f.PackBits()], "bool"),
        (28, 0, f.JenkinsLookup3(), [f.LZMA(format=2)], "<f8"),
    ]
    for sel, dtype_index, compressor, filters, values_dtype in v2:
        buf = np.array([1000.5, 1002.25, 999.0, 1001.0]).astype(values_dtype)
        for flt in filters:
            buf = flt.encode(buf)
        buf = bytes(np.asarray(buf).tobytes()) if not isinstance(buf, bytes) else buf
        if compressor:
            buf = compressor.encode(buf)
        buf = bytes(np.asarray(buf).tobytes()) if not isinstance(buf, bytes) else buf
        save(out, f"p{sel}-filters", bytes([sel, dtype_index, 0, 0]) + bytes(buf))


def shard_read_seeds(out, tmp):
    # shard_read_fuzz.c: layout byte, box bytes (origin, extents), then a
    # shard zarr-python wrote in that layout (v(8, 8) int32, inner 2 x 4)
    rng = np.random.default_rng(2)
    layouts = [
        (0, {"index_location": "end", "compressors": None}),
        (1, {"index_location": "start", "compressors": None, "index_codecs": [BytesCodec()]}),
        (2, {"index_location": "end", "compressors": [ZstdCodec()]}),
        (3, {"index_location": "start", "compressors": [GzipCodec()]}),
    ]
    for i, (sel, kw) in enumerate(layouts):
        path = os.path.join(tmp, f"shard{i}.zarr")
        data = rng.integers(-50, 50, (8, 8)).astype("i4")
        index_codecs = kw.pop("index_codecs", [BytesCodec(), Crc32cCodec()])
        codecs = [BytesCodec()] + (kw["compressors"] or [])
        sharding = ShardingCodec(chunk_shape=(2, 4), codecs=codecs, index_codecs=index_codecs,
                                 index_location=kw["index_location"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = zarr.create_array(path, shape=(8, 8), chunks=(8, 8), dtype="i4", serializer=sharding,
                                  compressors=None, fill_value=-7, dimension_names=["t", "x"],
                                  config={"write_empty_chunks": False})
            data[4:6, 4:] = -7  # one inner chunk all fill: not stored
            a[:] = data
        shard = chunk_of(path, "c/0/0")
        for box in (bytes([0x15, 0x00]), bytes([0x00, 0x77]), bytes([0x64, 0x70])):
            save(out, f"l{sel}", bytes([sel]) + box + shard)


def refs_seeds(out, tmp):
    import kerchunk.hdf
    import kerchunk.netCDF3

    ds = xr.Dataset({"t": (("time", "x"), np.arange(6, dtype="f4").reshape(3, 2)), "n": (("x",), np.array([1, 2], "i2"))},
                    coords={"time": np.array(["2000-01-01", "2000-01-02", "2000-01-03"], dtype="M8[ns]"), "x": [0.5, 1.5]})
    nc4, nc3 = os.path.join(tmp, "r4.nc"), os.path.join(tmp, "r3.nc")
    ds.to_netcdf(nc4, encoding={"t": {"chunksizes": (1, 2), "zlib": True}})
    ds.to_netcdf(nc3, format="NETCDF3_64BIT")

    def point_at_f_bin(refs):
        for k, v in refs["refs"].items():
            if isinstance(v, list):
                refs["refs"][k] = ["f.bin", v[1] % 56, min(v[2], 8)] if len(v) == 3 else ["f.bin"]
        return refs

    for name, refs in (("nc4", kerchunk.hdf.SingleHdf5ToZarr(nc4, inline_threshold=0).translate()),
                       ("nc4inline", kerchunk.hdf.SingleHdf5ToZarr(nc4, inline_threshold=1000).translate()),
                       ("nc3", kerchunk.netCDF3.NetCDF3ToZarr(nc3, inline_threshold=0).translate())):
        save(out, f"kerchunk-{name}", json.dumps(point_at_f_bin(refs)).encode())
    save(out, "v0", b'{".zgroup": "{\\"zarr_format\\": 2}", "a/0": ["f.bin", 0, 8], "a/1": ["f.bin"]}')
    save(out, "templates", json.dumps({"version": 1, "templates": {"u": "f", "v": "memory:///d"},
                                       "refs": {".zgroup": "{}", "a/0": ["{{u}}.bin", 4, 4],
                                                "a/1": ["{{ v }}/f.bin", 60, 8], "a/2": "base64:AAECAw=="}}).encode())


def main(argv):
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "corpus")
    with tempfile.TemporaryDirectory() as tmp:
        metadata_seeds(os.path.join(out, "metadata_fuzz"), tmp)
        shard_read_seeds(os.path.join(out, "shard_read_fuzz"), tmp)
        chunk_seeds(os.path.join(out, "chunk_fuzz"), tmp)
        refs_seeds(os.path.join(out, "refs_fuzz"), tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
