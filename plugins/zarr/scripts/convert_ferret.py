#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the netCDF files of Debian's ferret-datasets package as Zarr v2 and
v3 stores, the way an xarray user would: OUT_DIR/<name>.v2.zarr and
OUT_DIR/<name>.v3.zarr (consolidated metadata, default codecs).

    convert_ferret.py OUT_DIR [--source /usr/share/ferret-vis/data] [--force]

The files keep their real-world quirks: climatological time axes counted
from year 0 ("hour since 0000-01-01 00:00:00", which xarray cannot decode),
large negative fill values (-1e34, -1e10, -99.9) and upper-case names. Times
are written undecoded (decode_times=False) so the stored numbers and units
are exactly the file's; readers decode them (or, for year 0, keep them
numeric). Fill values are kept as the files declare them (_FillValue and
missing_value).

Cached: a store is rewritten only when missing, older than its source, or
written by another version of this script. Each store is written to a
temporary directory and renamed into place, so an interrupted run never
leaves a half-written store behind.
"""
import argparse
import os
import shutil
import sys
import tempfile
import warnings

FILES = ["coads_climatology", "levitus_climatology", "monthly_navy_winds", "etopo5"]
VERSION = "2"  # bump when the conversion changes
TARGET_ELEMENTS = 1 << 16  # 256 KB of float32 per chunk: several partitions per table


def chunks_for(shape):
    """Chunk extents holding at most TARGET_ELEMENTS: split the leading axis
    (time or depth) first for 3-D and larger arrays, as climate stores are
    usually chunked, then halve the largest extent."""
    chunks = list(shape)
    if len(chunks) >= 3:
        while chunks[0] > 1 and _product(chunks) > TARGET_ELEMENTS:
            chunks[0] = (chunks[0] + 1) // 2
    while chunks and _product(chunks) > TARGET_ELEMENTS:
        i = max(range(len(chunks)), key=lambda k: chunks[k])
        chunks[i] = (chunks[i] + 1) // 2
    return tuple(max(1, c) for c in chunks)


def _product(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def up_to_date(store, source):
    stamp = os.path.join(store, ".qlink-convert")
    try:
        with open(stamp) as f:
            if f.read().strip() != VERSION:
                return False
        return os.path.getmtime(stamp) >= os.path.getmtime(source)
    except OSError:
        return False


def convert(source, store, fmt):
    import xarray as xr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(source, decode_times=False)
        encoding = {}
        for name, var in ds.variables.items():
            enc = {"chunks": chunks_for(var.shape)} if var.ndim else {}
            # keep the file's fill values (NaN is the decoded mask)
            for key in ("_FillValue", "missing_value"):
                if key in var.encoding:
                    enc[key] = var.encoding[key]
            if "_FillValue" not in enc:
                enc["_FillValue"] = None
            encoding[name] = enc
        parent = os.path.dirname(os.path.abspath(store))
        tmp = tempfile.mkdtemp(prefix=".convert-", dir=parent)
        try:
            target = os.path.join(tmp, "store.zarr")
            ds.to_zarr(target, zarr_format=fmt, mode="w", encoding=encoding, consolidated=True)
            with open(os.path.join(target, ".qlink-convert"), "w") as f:
                f.write(VERSION + "\n")
            if os.path.exists(store):
                shutil.rmtree(store)
            os.rename(target, store)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        ds.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--source", default="/usr/share/ferret-vis/data")
    parser.add_argument("--force", action="store_true", help="rewrite even when up to date")
    parser.add_argument("--only", nargs="*", default=FILES, help="a subset of " + ", ".join(FILES))
    args = parser.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    for name in args.only:
        source = os.path.join(args.source, name + ".cdf")
        if not os.path.exists(source):
            print(f"convert_ferret: missing {source} (install Debian's ferret-datasets)", file=sys.stderr)
            return 1
        for fmt in (2, 3):
            store = os.path.join(args.out_dir, f"{name}.v{fmt}.zarr")
            if not args.force and up_to_date(store, source):
                print(f"convert_ferret: {store} up to date")
                continue
            convert(source, store, fmt)
            print(f"convert_ferret: wrote {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
