#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write an ERA5-like Zarr store with xarray, the way ERA5 mirrors lay it out.

    make_era5.py OUT.zarr [--days 31] [--start 2023-01-01] [--format 3]
                 [--codecs default|zarr2-defaults] [--time-chunk 24] [--seed 0]
                 [--force]

Dimensions: time (hourly), latitude (1 degree, 90 .. -90, descending as in
ERA5), longitude (0 .. 359). Variables, float32 like ERA5's unpacked fields:
  t2m  2 metre temperature in K: a latitude profile, a diurnal cycle that
       follows local solar time, travelling synoptic waves, and noise;
  tp   total precipitation in m: zero wherever a smooth "weather" field plus
       noise stays under a threshold (about 70% of the values), positive and
       skewed elsewhere.
time is CF-encoded as int32 "hours since 1900-01-01" (ERA5's own encoding);
latitude/longitude are float32 (as in ERA5's files). Chunks are whole
time-chunk-hour slabs of the full grid (24 hours x 181 x 360 by default, as
the daily-chunked mirrors do). Codecs:
  default         zarr-python 3's defaults for the format (v3: bytes + zstd
                  level 0);
  zarr2-defaults  what zarr-python 2 wrote when no compressor was given, as
                  most existing cloud ERA5 Zarr stores were written: zarr v2,
                  numcodecs Blosc(cname="lz4", clevel=5, shuffle=SHUFFLE,
                  blocksize=0) (zarr-python 2.18's default compressor, see
                  zarr-developers/zarr-python issue 2267); forces --format 2.

Cached: the store carries a stamp with its parameters; when the stamp
matches the store is left alone. The store is written to a temporary
directory beside OUT and renamed into place, so an interrupted run never
leaves a half-written store that looks complete.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np

STAMP = ".qlink-bench-era5"
VERSION = 1  # bump when the generated field changes
CODECS = ("default", "zarr2-defaults")


def parameters(args):
    return {
        "version": VERSION,
        "days": args.days,
        "start": args.start,
        "format": args.format,
        "codecs": args.codecs,
        "time_chunk": args.time_chunk,
        "seed": args.seed,
    }


def up_to_date(out, params):
    try:
        with open(os.path.join(out, STAMP)) as f:
            stamp = json.load(f)
        stamp.setdefault("codecs", "default")  # stamps written before --codecs existed
        return stamp == params
    except (OSError, ValueError):
        return False


def build_dataset(days, start, seed):
    """The Dataset in memory: (days*24) x 181 x 360 float32 per variable."""
    import pandas as pd
    import xarray as xr

    nt = days * 24
    times = pd.date_range(start, periods=nt, freq="h")
    lat = np.linspace(90.0, -90.0, 181, dtype=np.float32)
    lon = np.arange(0.0, 360.0, 1.0, dtype=np.float32)

    rng = np.random.default_rng(seed)
    hours = np.arange(nt, dtype=np.float32)[:, None, None]
    phi = np.deg2rad(lat.astype(np.float32))[None, :, None]
    lam = np.deg2rad(lon.astype(np.float32))[None, None, :]
    cosphi = np.cos(phi)

    # Equator ~300 K, poles ~245 K; the day/night swing is largest on land-ish
    # low latitudes and peaks at 14h local solar time.
    local_hour = (hours + lon[None, None, :] / np.float32(15.0)) % np.float32(24.0)
    t2m = np.float32(300.0) - np.float32(55.0) * np.abs(np.sin(phi)) ** np.float32(1.5)
    t2m = t2m + np.float32(6.0) * cosphi * np.cos(np.float32(2 * np.pi / 24) * (local_hour - np.float32(14.0)))
    t2m = t2m + np.float32(4.0) * np.sin(np.float32(4.0) * lam - hours / np.float32(40.0)) * np.sin(np.float32(2.0) * phi)
    t2m = t2m + rng.standard_normal(t2m.shape, dtype=np.float32) * np.float32(0.6)
    t2m = t2m.astype(np.float32)

    weather = np.sin(np.float32(3.0) * lam + hours / np.float32(30.0)) * np.cos(np.float32(3.0) * phi)
    weather = weather + rng.standard_normal(weather.shape, dtype=np.float32) * np.float32(0.35)
    tp = np.maximum(weather - np.float32(0.55), np.float32(0.0)) ** np.float32(2.0) * np.float32(0.004)
    tp = tp.astype(np.float32)
    del weather

    ds = xr.Dataset(
        {
            "t2m": (("time", "latitude", "longitude"), t2m,
                    {"units": "K", "long_name": "2 metre temperature", "standard_name": "air_temperature"}),
            "tp": (("time", "latitude", "longitude"), tp,
                   {"units": "m", "long_name": "Total precipitation", "standard_name": "precipitation_amount"}),
        },
        coords={
            "time": ("time", times.values, {"long_name": "time"}),
            "latitude": ("latitude", lat, {"units": "degrees_north", "long_name": "latitude"}),
            "longitude": ("longitude", lon, {"units": "degrees_east", "long_name": "longitude"}),
        },
        attrs={"Conventions": "CF-1.6", "title": "ERA5-like synthetic single levels (qlink benchmark)"},
    )
    return ds


def write(out, params):
    ds = build_dataset(params["days"], params["start"], params["seed"])
    chunks = (params["time_chunk"], ds.sizes["latitude"], ds.sizes["longitude"])
    encoding = {
        "t2m": {"chunks": chunks},
        "tp": {"chunks": chunks},
        "time": {"units": "hours since 1900-01-01", "calendar": "proleptic_gregorian", "dtype": "int32"},
    }
    if params["codecs"] == "zarr2-defaults":
        from numcodecs import Blosc

        # zarr-python 2 gave every array this compressor (coordinates too)
        for name in ("t2m", "tp", "time", "latitude", "longitude"):
            encoding.setdefault(name, {})["compressors"] = [Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE,
                                                                   blocksize=0)]
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".era5-", dir=parent)
    try:
        target = os.path.join(tmp, "store.zarr")
        with warnings.catch_warnings():
            # zarr-python warns that consolidated metadata is not in the v3 spec
            warnings.simplefilter("ignore")
            ds.to_zarr(target, mode="w", zarr_format=params["format"], encoding=encoding)
        with open(os.path.join(target, STAMP), "w") as f:
            json.dump(params, f)
        if os.path.exists(out):
            shutil.rmtree(out)
        os.rename(target, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return ds


def store_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            total += os.path.getsize(os.path.join(root, name))
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--days", type=int, default=31)
    parser.add_argument("--start", default="2023-01-01")
    parser.add_argument("--format", type=int, choices=(2, 3), default=3)
    parser.add_argument("--codecs", choices=CODECS, default="default")
    parser.add_argument("--time-chunk", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true", help="rewrite even when up to date")
    args = parser.parse_args(argv)
    if args.days < 1 or args.time_chunk < 1:
        parser.error("--days and --time-chunk must be positive")
    if args.codecs == "zarr2-defaults":
        args.format = 2
    params = parameters(args)
    nt = args.days * 24
    raw = nt * 181 * 360 * 4 * 2
    if not args.force and up_to_date(args.out, params):
        print(f"make_era5: {args.out} up to date ({nt} x 181 x 360, {raw / 1e6:.0f} MB uncompressed, "
              f"{store_bytes(args.out) / 1e6:.0f} MB on disk)")
        return 0
    t0 = time.perf_counter()
    write(args.out, params)
    print(f"make_era5: wrote {args.out} in {time.perf_counter() - t0:.1f} s ({nt} x 181 x 360, "
          f"{raw / 1e6:.0f} MB uncompressed, {store_bytes(args.out) / 1e6:.0f} MB on disk, zarr v{args.format}, {args.codecs} codecs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
