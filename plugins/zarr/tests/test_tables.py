# SPDX-License-Identifier: Apache-2.0
"""qlink_zarr against xarray: every table's full contents equal
Dataset.to_dataframe() (NULL where the fill value was), for stores written
by xarray + zarr-python + numcodecs, Zarr v2 and v3."""
import numpy as np
import numcodecs
import pandas as pd
import pytest
import warnings
import xarray as xr
from zarr.codecs.numcodecs import LZ4 as NumcodecsLZ4, Zlib as NumcodecsZlib
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec, ZstdCodec

from conftest import assert_same_rows, expected_rows, open_xr, run_scan

FORMATS = [2, 3]


def write(ds, path, fmt, encoding=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=fmt, mode="w", encoding=encoding or {}, **kw)
    return path


def chunk_encoding(ds, chunks, base=None):
    """Encoding giving every variable (and coordinate) the chunk extents in
    `chunks` (per dimension), without dask."""
    enc = {}
    for name, var in ds.variables.items():
        if var.ndim == 0:
            continue
        enc[name] = dict(base.get(name, {}) if base else {}, chunks=tuple(min(chunks.get(d, n), n) for d, n in var.sizes.items()))
    return enc


def check_table(path, table=None, columns=None):
    args = []
    if table:
        args += ["--table", table]
    if columns:
        args += ["--columns", ",".join(columns)]
    scan = run_scan(path, *args)
    want = expected_rows(path, scan)
    dims = [c for c in scan.columns if c in open_xr(path).dims]
    assert_same_rows(scan.rows, want, len(dims))
    assert scan.plan_stats["num_rows"] == len(want)
    assert scan.plan_stats["exact"]
    return scan


def dtype_dataset():
    rng = np.random.default_rng(0)
    nt, ny = 7, 5
    time = pd.date_range("2001-03-01", periods=nt, freq="6h")
    data = {}
    for dt in ["i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
        info = np.iinfo(dt)
        data[dt] = (("time", "y"), rng.integers(info.min, info.max, size=(nt, ny), dtype=dt, endpoint=True))
    for dt in ["f2", "f4", "f8"]:
        a = rng.normal(size=(nt, ny)).astype(dt)
        a[1, 2] = np.nan
        data[dt] = (("time", "y"), a)
    data["flag"] = (("time", "y"), rng.integers(0, 2, size=(nt, ny)).astype(bool))
    stamps = np.array(pd.date_range("1999-12-31", periods=nt * ny, freq="37min")).reshape(nt, ny)
    stamps[0, 0] = np.datetime64("NaT")
    data["when"] = (("time", "y"), stamps)
    data["lag"] = (("time", "y"), (np.arange(nt * ny).reshape(nt, ny) * np.timedelta64(90, "s")).astype("m8[s]"))
    data["name"] = (("y",), np.array(["alpha", "b", "", "dëlta", "ε€𝄞"]))
    data["code"] = (("y",), np.array([b"A1", b"B", b"", b"D4x", b"\x01\x02"]))
    coords = {
        "time": time,
        "y": np.array([10, 20, 30, 40, 50], dtype="i4"),
        "ylabel": (("y",), np.array(["p", "q", "r", "s", "t"])),
        "weight": (("time", "y"), rng.uniform(size=(nt, ny))),
    }
    return xr.Dataset(data, coords=coords)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("chunks", [None, {"time": 3, "y": 2}, {"time": 1, "y": 5}, {"time": 4, "y": 3}])
def test_every_dtype(tmp_path, fmt, chunks):
    ds = dtype_dataset()
    path = write(ds, tmp_path / "d.zarr", fmt, chunk_encoding(ds, chunks) if chunks else None)
    listing = run_scan(path, "--list")
    with open(tmp_path / "tables.txt", "w") as f:
        f.write(str(listing.header))
    assert sorted(listing.header["tables"]) == ["time_y", "y"]
    scan = check_table(path, "time_y")
    assert scan.columns[:2] == ["time", "y"]
    assert "ylabel" in scan.columns and "weight" in scan.columns
    assert scan.formats["time"] == "tsn:"
    assert scan.formats["f2"] == "f"
    assert scan.formats["when"] == "tsn:"
    assert scan.formats["lag"] == "tDs"
    assert scan.formats["i8"] == "l" and scan.formats["u8"] == "L" and scan.formats["u1"] == "C"
    scan_y = check_table(path, "y")
    assert scan_y.formats["name"] == "u" and scan_y.formats["code"] == "z"


def packed_dataset():
    rng = np.random.default_rng(1)
    nx, ny = 9, 4
    temp = rng.uniform(-5, 35, size=(nx, ny))
    temp[2, 1] = np.nan  # becomes the fill value when packed
    counts = rng.integers(0, 1000, size=(nx, ny)).astype("f8")
    counts[0, 0] = np.nan
    sst = rng.normal(size=(nx, ny)).astype("f4")
    sst[3, 3] = np.nan
    small = rng.integers(0, 200, size=(nx, ny)).astype("f4")
    small[4, 0] = np.nan
    hole = np.full((nx, ny), np.nan, dtype="f4")
    hole[:3, :2] = 1.5  # other chunks stay unwritten: they read as the fill value
    return xr.Dataset(
        {
            "temp": (("x", "y"), temp),
            "counts": (("x", "y"), counts),
            "sst": (("x", "y"), sst),
            "small": (("x", "y"), small),
            "hole": (("x", "y"), hole),
        },
        coords={"x": np.linspace(0.5, 8.5, nx), "y": np.arange(ny)},
    )


PACKED_ENCODING = {
    "temp": {"dtype": "i2", "scale_factor": 0.01, "add_offset": 15.0, "_FillValue": -32767},
    "counts": {"dtype": "i4", "_FillValue": -1},
    "sst": {"_FillValue": -9999.0},
    "small": {"dtype": "u1", "_FillValue": 255},
    "hole": {"_FillValue": -1e34},
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("chunks", [(3, 2), (9, 4), (2, 3)])
def test_fill_values_and_packing(tmp_path, fmt, chunks):
    ds = packed_dataset()
    enc = {k: dict(v, chunks=chunks) for k, v in PACKED_ENCODING.items()}
    path = write(ds, tmp_path / "p.zarr", fmt, enc)
    scan = check_table(path)
    assert scan.formats["temp"] == "g"
    assert scan.formats["counts"] == "g"
    assert scan.formats["small"] == "f"
    assert scan.formats["sst"] == "f"
    temp = scan.column("temp")
    assert temp.count(None) == 1
    sst = scan.column("sst")
    assert sst.count(None) == 1 and "NaN" not in [str(v) for v in sst]


@pytest.mark.parametrize("fmt", FORMATS)
def test_nan_that_is_not_a_fill_value_stays_nan(tmp_path, fmt):
    import zarr

    ds = xr.Dataset({"v": (("x",), np.array([1.0, 5.0, np.nan, 2.0]))}, coords={"x": [0, 1, 2, 3]})
    path = write(ds, tmp_path / "n.zarr", fmt, {"v": {"_FillValue": -9999.0}})
    # xarray writes NaN as the fill value; store a real NaN behind its back
    zarr.open_array(str(path / "v"), mode="a")[1] = np.nan
    scan = run_scan(path)
    got = [[r[0], "NaN" if isinstance(r[1], float) and np.isnan(r[1]) else r[1]] for r in scan.rows]
    assert got == [[0, 1.0], [1, "NaN"], [2, None], [3, 2.0]]
    check_table(path)


CODECS_V2 = {
    "blosc_lz4_shuffle": numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE),
    "blosc_zstd_bitshuffle": numcodecs.Blosc(cname="zstd", shuffle=numcodecs.Blosc.BITSHUFFLE),
    "blosc_zlib_noshuffle": numcodecs.Blosc(cname="zlib", shuffle=numcodecs.Blosc.NOSHUFFLE),
    "blosc_blosclz": numcodecs.Blosc(cname="blosclz"),
    "zstd": numcodecs.Zstd(level=3),
    "zlib": numcodecs.Zlib(level=6),
    "gzip": numcodecs.GZip(level=5),
    "lz4": numcodecs.LZ4(),
    "none": None,
}

CODECS_V3 = {
    "default": None,
    "blosc_lz4": {"compressors": [BloscCodec(cname="lz4", shuffle="shuffle")]},
    "blosc_zstd_bitshuffle": {"compressors": [BloscCodec(cname="zstd", shuffle="bitshuffle")]},
    "blosc_zlib": {"compressors": [BloscCodec(cname="zlib", shuffle="noshuffle")]},
    "blosc_blosclz": {"compressors": [BloscCodec(cname="blosclz", shuffle="shuffle")]},
    "zstd": {"compressors": [ZstdCodec(level=5)]},
    "gzip": {"compressors": [GzipCodec(level=4)]},
    "crc32c": {"compressors": [ZstdCodec(), Crc32cCodec()]},
    "numcodecs_lz4": {"compressors": [NumcodecsLZ4()]},
    "numcodecs_zlib": {"compressors": [NumcodecsZlib()]},
    "big_endian": {"serializer": BytesCodec(endian="big")},
    "transpose": {"filters": [TransposeCodec(order=(1, 0))]},
    "none": {"compressors": None},
    "sharding": {"chunks": (2, 3), "shards": (4, 6)},
    "sharding_gzip": {"chunks": (3, 2), "shards": (6, 4), "compressors": [GzipCodec()]},
}


def codec_dataset():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(10, 11)).astype("f4")
    b = rng.integers(-1000, 1000, size=(10, 11)).astype("i8")
    c = rng.normal(size=(10, 11))
    c[7:, 8:] = np.nan
    return xr.Dataset(
        {"a": (("x", "y"), a), "b": (("x", "y"), b), "c": (("x", "y"), c)},
        coords={"x": np.arange(10) * 0.25, "y": np.arange(11)[::-1]},
    )


@pytest.mark.parametrize("name", sorted(CODECS_V2))
def test_codecs_v2(tmp_path, name):
    ds = codec_dataset()
    enc = {v: {"compressors": CODECS_V2[name], "chunks": (4, 5)} for v in ds.data_vars}
    if name == "lz4":
        enc["b"]["dtype"] = ">i8"  # and a big-endian dtype
    path = write(ds, tmp_path / f"{name}.zarr", 2, enc)
    check_table(path)


@pytest.mark.parametrize("name", sorted(CODECS_V3))
def test_codecs_v3(tmp_path, name):
    ds = codec_dataset()
    extra = CODECS_V3[name] or {}
    enc = {v: dict({"chunks": (4, 5)}, **extra) for v in ds.data_vars}
    path = write(ds, tmp_path / f"{name}.zarr", 3, enc)
    check_table(path)


def test_v2_fortran_order(tmp_path):
    import zarr

    ds = codec_dataset()
    path = write(ds, tmp_path / "f.zarr", 2, consolidated=False)
    g = zarr.open_group(str(path), mode="a", zarr_format=2)
    data = np.asfortranarray(np.arange(110, dtype="f8").reshape(10, 11))
    arr = g.create_array("fort", shape=(10, 11), chunks=(4, 3), dtype="f8", order="F", overwrite=True,
                         attributes={"_ARRAY_DIMENSIONS": ["x", "y"]}, fill_value=None)
    arr[:] = data
    zarr.consolidate_metadata(str(path), zarr_format=2)
    check_table(path)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("consolidated", [True, False])
def test_consolidated_or_listed(tmp_path, fmt, consolidated):
    ds = codec_dataset()
    path = write(ds, tmp_path / "c.zarr", fmt, chunk_encoding(ds, {"x": 3, "y": 4}), consolidated=consolidated)
    check_table(path)


@pytest.mark.parametrize("fmt", FORMATS)
def test_cf_times(tmp_path, fmt):
    n = 6
    times = pd.date_range("1980-01-14 14:00", periods=n, freq="730h")
    ds = xr.Dataset(
        {"v": (("time",), np.arange(n, dtype="f4"))},
        coords={"time": times},
    )
    cases = {
        "days_int": {"units": "days since 1970-01-01", "dtype": "i8"},
        "hours_float": {"units": "hours since 1980-01-14 14:00:00", "dtype": "f8"},
        "seconds_int32": {"units": "seconds since 1980-01-01", "dtype": "i4"},
        "minutes_tz": {"units": "minutes since 1979-12-31T23:00:00+01:00", "dtype": "f8"},
        "gregorian": {"units": "days since 1900-01-01", "calendar": "gregorian", "dtype": "f8"},
    }
    for name, enc in cases.items():
        path = write(ds, tmp_path / f"{name}.zarr", fmt, {"time": enc})
        scan = check_table(path)
        assert scan.formats["time"] == "tsn:", name


@pytest.mark.parametrize("units", ["msec since 2001-02-03", "hrs since 1900-01-01 00:00:00 UTC", "d since 2000-1-1",
                                   "mins since 1999-12-31T23:00:00Z", "secs since 1970-01-01", "h since 2020-06-01"])
def test_cftime_unit_abbreviations(tmp_path, units):
    # xarray decodes these through cftime (pandas refuses them): timestamps
    ds = xr.Dataset({"v": (("t",), np.arange(4.0))},
                    coords={"t": ("t", np.array([0, 7, 1000, 12345], dtype="i8"), {"units": units})})
    path = write(ds, tmp_path / "a.zarr", 3)
    scan = check_table(path)
    assert scan.formats["t"] == "tsn:"


@pytest.mark.parametrize("fmt", FORMATS)
def test_fractional_float_hours(tmp_path, fmt):
    # float hours that do not land on whole nanoseconds after scaling
    hours = np.array([0.1, 17.3333333, 1e5 + 0.7, 3.0])
    ds = xr.Dataset({"v": (("t",), np.arange(4.0))}, coords={"t": ("t", hours, {"units": "hours since 1990-05-05 05:05:05"})})
    path = write(ds, tmp_path / "h.zarr", fmt)
    scan = check_table(path)
    assert scan.formats["t"] == "tsn:"


@pytest.mark.parametrize("fmt", FORMATS)
def test_other_calendars_stay_numeric(tmp_path, fmt):
    ds = xr.Dataset(
        {"v": (("time",), np.arange(4.0))},
        coords={"time": ("time", np.array([0.0, 31, 59, 90]), {"units": "days since 2000-01-01", "calendar": "noleap"})},
    )
    path = write(ds, tmp_path / "n.zarr", fmt)
    scan = run_scan(path)
    assert scan.formats["time"] == "g"
    assert scan.metadata["time"] == {"units": "days since 2000-01-01", "calendar": "noleap"}
    assert scan.column("time") == [0.0, 31.0, 59.0, 90.0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_year_zero_climatology_stays_numeric(tmp_path, fmt):
    # ferret's climatological axes count from year 0, which xarray cannot decode
    ds = xr.Dataset(
        {"v": (("TIME",), np.arange(3.0))},
        coords={"TIME": ("TIME", np.array([366.0, 1096.5, 1826.25]), {"units": "hour since 0000-01-01 00:00:00"})},
    )
    path = write(ds, tmp_path / "y0.zarr", fmt)
    scan = run_scan(path)
    assert scan.formats["TIME"] == "g"
    assert scan.metadata["TIME"]["units"] == "hour since 0000-01-01 00:00:00"
    assert scan.column("TIME") == [366.0, 1096.5, 1826.25]


@pytest.mark.parametrize("fmt", FORMATS)
def test_dimension_without_coordinate_and_renames(tmp_path, fmt):
    ds = xr.Dataset(
        {"a": (("t", "k"), np.arange(12.0).reshape(3, 4)), "s": (("k",), np.arange(4, dtype="i2"))},
        coords={"t": [5, 6, 7]},
    )
    path = write(ds, tmp_path / "r.zarr", fmt)
    assert sorted(run_scan(path, "--list").header["tables"]) == ["k", "t_k"]
    assert sorted(run_scan(path, "--list", "--tables", "t_k=grid,k=static").header["tables"]) == ["grid", "static"]
    scan = check_table(path, "t_k")
    assert scan.formats["k"] == "l"
    assert sorted(set(scan.column("k"))) == [0, 1, 2, 3]
    renamed = run_scan(path, "--tables", "t_k=grid", "--table", "grid")
    assert renamed.columns == ["t", "k", "a"]


def test_default_table_is_largest(tmp_path):
    ds = xr.Dataset({"big": (("x", "y"), np.zeros((3, 4))), "small": (("x",), np.zeros(3))}, coords={"x": [1, 2, 3]})
    path = write(ds, tmp_path / "l.zarr", 3)
    assert run_scan(path).columns == ["x", "y", "big"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_batches_and_limit(tmp_path, fmt):
    ds = codec_dataset()
    path = write(ds, tmp_path / "b.zarr", fmt, chunk_encoding(ds, {"x": 5, "y": 11}))
    scan = run_scan(path, "--batch", "7")
    assert scan.metrics["max_batch"] == 7
    assert scan.metrics["rows"] == 110
    assert scan.header["partitions"] == 2
    limited = run_scan(path, "--limit", "3")
    # the limit applies per partition; the host applies it globally
    assert limited.metrics["rows"] == 6
    assert limited.plan_stats["num_rows"] == 6


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("freq", ["7D", "3h", "5min", "11s", "250ms", "3us", "7ns"])
def test_every_time_unit_xarray_writes(tmp_path, fmt, freq):
    # xarray picks the units ("days since", "hours since", ... "nanoseconds
    # since") from the data's resolution; timedeltas likewise
    times = pd.date_range("2001-02-03 04:05:06", periods=5, freq=freq)
    deltas = (times - times[0]).values.astype("m8[ns]")
    ds = xr.Dataset({"lag": (("time",), deltas)}, coords={"time": times})
    path = write(ds, tmp_path / "t.zarr", fmt)
    scan = check_table(path)
    assert scan.formats["time"] == "tsn:"
    assert scan.formats["lag"].startswith("tD")


def test_string_dimension_coordinate(tmp_path):
    ds = xr.Dataset({"v": (("station",), np.arange(3.0))}, coords={"station": np.array(["oslo", "rome", "kyiv"])})
    path = write(ds, tmp_path / "s.zarr", 3)
    scan = check_table(path)
    assert scan.formats["station"] == "u"
    got = run_scan(path, "--where", "station = 1")
    assert got.header["answers"] == [0]


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_dimension(tmp_path, fmt):
    ds = xr.Dataset({"v": (("t", "x"), np.zeros((0, 3)))}, coords={"t": np.array([], dtype="f8"), "x": [1, 2, 3]})
    path = write(ds, tmp_path / "e.zarr", fmt)
    scan = run_scan(path)
    assert scan.rows == []
    assert scan.table_stats["num_rows"] == 0
    assert scan.table_stats["min"]["x"] is None


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("chunks", [None, {"station": 2, "t": 3}])
def test_variable_length_strings(tmp_path, fmt, chunks):
    # object strings (netCDF string variables) are written with vlen-utf8
    names = np.array(["oslo", "", "kyiv€", "são paulo", "𝄞x"], dtype=object)
    ds = xr.Dataset(
        {
            "label": (("station", "t"), np.array([[f"{n}:{i}" for i in range(4)] for n in names], dtype=object)),
            "v": (("station", "t"), np.arange(20.0).reshape(5, 4)),
            "country": (("station",), np.array(["NO", "XX", "UA", "BR", "--"], dtype=object)),
        },
        coords={"station": names, "t": np.arange(4)},
    )
    path = write(ds, tmp_path / "v.zarr", fmt, chunk_encoding(ds, chunks) if chunks else None)
    scan = check_table(path, "station_t")
    assert scan.formats["station"] == "u" and scan.formats["label"] == "u"
    check_table(path, "station")
    got = run_scan(path, "--table", "station_t", "--where", "t >= 2", "--columns", "label")
    assert sorted(r[0] for r in got.rows) == sorted(f"{n}:{i}" for n in names for i in (2, 3))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("chunks", [None, {"latitude": 2, "longitude": 3}])
def test_scalar_coordinates_are_columns_of_every_table(tmp_path, fmt, chunks):
    # as cfgrib and CMIP write them: 0-d coordinates (a subset of any
    # table's dimensions) repeat on every row, as in to_dataframe(); a 0-d
    # data variable (a grid mapping) is a column of the scalars table
    # (test_scalars.py); a scalar whose chunk was never written reads as its
    # fill value (NULL)
    rng = np.random.default_rng(3)
    ds = xr.Dataset(
        {"t2m": (("latitude", "longitude"), rng.random((3, 4)).astype("f4")),
         "lat_bnds": (("latitude", "bnds"), rng.random((3, 2))),
         "crs": ((), np.int32(0), {"grid_mapping_name": "latitude_longitude"})},
        coords={"latitude": [10.0, 20.0, 30.0], "longitude": [0.0, 1.0, 2.0, 3.0], "number": np.int64(7),
                "step": np.timedelta64(6, "h").astype("m8[ns]"), "valid_time": np.datetime64("2024-01-01T06:00", "ns"),
                "label": "analysis", "unwritten": np.nan})
    path = write(ds, tmp_path / "s.zarr", fmt, chunk_encoding(ds, chunks) if chunks else None)
    for f in (path / "unwritten").iterdir():
        if f.name not in (".zarray", ".zattrs", "zarr.json"):
            f.unlink()
    assert run_scan(path, "--list").tables == ["latitude_bnds", "latitude_longitude", "scalars"]
    assert run_scan(path, "--table", "scalars").columns == ["label", "number", "step", "unwritten", "valid_time", "crs"]
    for table in ("latitude_longitude", "latitude_bnds"):
        scan = check_table(path, table)
        assert scan.columns[-6:-1] == ["label", "number", "step", "unwritten", "valid_time"]
        row = scan.rows[-1]
        assert row[-6:-1] == ["analysis", 7, 21600000000000, None, 1704088800000000000]


def filters_v2():
    """numcodecs filters as xarray users set them (encoding 'filters'), per
    variable of filter_dataset(): lossy ones too (quantize, bitround),
    whose stored values xarray then reads."""
    F = numcodecs
    return {
        "quantize": {"f": [F.Quantize(digits=2, dtype="f8", astype="f4")], "g": [F.Quantize(digits=1, dtype="f4")]},
        "bitround": {"g": [F.BitRound(keepbits=5)]},
        "delta": {"i": [F.Delta(dtype="i4")], "f": [F.Delta(dtype="f8")], "u": [F.Delta(dtype="u1")]},
        "fixedscaleoffset": {"f": [F.FixedScaleOffset(offset=1000, scale=10, dtype="f8", astype="u2")],
                             "g": [F.FixedScaleOffset(offset=-2.5, scale=100, dtype="f4", astype="i2")]},
        "shuffle": {"f": [F.Shuffle(elementsize=8)], "i": [F.Shuffle(elementsize=4)]},
        "astype": {"f": [F.AsType(encode_dtype="f4", decode_dtype="f8")]},
        "chain": {"i": [F.Delta(dtype="i4"), F.Shuffle(elementsize=4)],
                  "f": [F.Quantize(digits=3, dtype="f8"), F.Shuffle(elementsize=8)]},
    }


def filter_dataset():
    rng = np.random.default_rng(5)
    f = rng.uniform(990, 1010, size=(9, 7))
    f[2, 3] = np.nan
    return xr.Dataset(
        {"f": (("x", "y"), f), "g": (("x", "y"), rng.uniform(-3, 3, size=(9, 7)).astype("f4")),
         "i": (("x", "y"), rng.integers(-10**6, 10**6, size=(9, 7)).astype("i4")),
         "u": (("x", "y"), rng.integers(0, 255, size=(9, 7)).astype("u1"))},
        coords={"x": np.arange(9), "y": np.arange(7) * 2.0})


@pytest.mark.parametrize("name", sorted(filters_v2()))
@pytest.mark.parametrize("compressor", [None, "zstd"])
def test_numcodecs_filters_v2(tmp_path, name, compressor):
    ds = filter_dataset()
    filters = filters_v2()[name]
    ds = ds[sorted(filters)]
    enc = {v: {"filters": filters[v], "chunks": (4, 3),
               "compressors": [numcodecs.Zstd(level=3)] if compressor else None} for v in filters}
    path = write(ds, tmp_path / f"{name}.zarr", 2, enc)
    check_table(path)


def test_numcodecs_filter_errors(tmp_path):
    # an unknown filter, and a known one missing a parameter: errors naming
    # the array and the filter (not consolidated: .zarray is what is read)
    import json

    ds = filter_dataset()[["f"]]
    path = write(ds, tmp_path / "bad.zarr", 2, {"f": {"filters": [numcodecs.Delta(dtype="f8")]}}, consolidated=False)
    zarray = path / "f" / ".zarray"
    meta = json.loads(zarray.read_text())
    meta["filters"] = [{"id": "categorize", "labels": ["a"], "dtype": "<U1"}]
    zarray.write_text(json.dumps(meta))
    p = run_scan(path, "--columns", "f", check=False)
    assert p.returncode != 0 and "unsupported v2 filter 'categorize'" in p.stderr and "array 'f'" in p.stderr
    meta["filters"] = [{"id": "fixedscaleoffset", "dtype": "<f8", "astype": "<u2", "offset": 0}]
    zarray.write_text(json.dumps(meta))
    p = run_scan(path, "--columns", "f", check=False)
    assert p.returncode != 0 and "'scale' is missing or not a number" in p.stderr


@pytest.mark.parametrize("fmt", FORMATS)
def test_netcdf_style_attributes(tmp_path, fmt):
    # as netCDF conversions leave them: one-element lists for scale_factor and
    # add_offset (xarray takes the element), fixed-width bytes with _Encoding
    # (xarray decodes them to str), a bytes dimension coordinate among them
    import zarr

    path = tmp_path / "nc.zarr"
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)

    def array(name, dtype, data, attrs, fill=None):
        kw = {"dimension_names": ["station"]} if fmt == 3 else {}
        at = dict(attrs) if fmt == 3 else dict(attrs, _ARRAY_DIMENSIONS=["station"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = g.create_array(name, shape=(4,), chunks=(3,), dtype=dtype, fill_value=fill, attributes=at, **kw)
        a[:] = np.array(data, dtype=dtype)

    array("station", "S4", [b"OSL", b"BGO", b"TR\xc3\xb8", b"X"], {"_Encoding": "utf-8"})
    packed = {"scale_factor": [0.5], "add_offset": [10.0]}
    if fmt == 3:
        packed["_FillValue"] = -32767
    array("t", "i2", [1, 2, -32767, 4], packed, fill=-32767)
    array("code", "S2", [b"ab", b"", b"c", b"de"], {"_Encoding": "ascii"})
    scan = check_table(path)
    assert scan.formats["station"] == "u" and scan.formats["code"] == "u"
    assert scan.column("station") == ["OSL", "BGO", "TRø", "X"]
    assert scan.column("t") == [10.5, 11.0, None, 12.0]
    assert "_Encoding" not in scan.metadata["code"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_time_bounds_take_the_time_units(tmp_path, fmt):
    # CMIP stores: time_bnds carries no units of its own; xarray copies the
    # time variable's units and calendar onto it (CF cell boundaries)
    import zarr

    path = tmp_path / "b.zarr"
    g = zarr.open_group(str(path), mode="w", zarr_format=fmt)

    def array(name, dims, data, attrs):
        kw = {"dimension_names": dims} if fmt == 3 else {}
        at = dict(attrs) if fmt == 3 else dict(attrs, _ARRAY_DIMENSIONS=dims)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = g.create_array(name, shape=np.shape(data), chunks=np.shape(data), dtype="f8", fill_value=None,
                               attributes=at, **kw)
        a[:] = np.array(data, dtype="f8")

    array("time", ["time"], [15.5, 45.0], {"units": "days since 2000-01-01", "calendar": "standard", "bounds": "time_bnds"})
    array("time_bnds", ["time", "bnds"], [[0.0, 31.0], [31.0, 60.0]], {})
    array("tas", ["time"], [280.0, 281.5], {})
    scan = check_table(path, "time_bnds")
    assert scan.formats["time_bnds"] == "tsn:"
    assert scan.column("time_bnds")[1] == pd.Timestamp("2000-02-01").value
