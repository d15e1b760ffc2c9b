# SPDX-License-Identifier: Apache-2.0
"""pytest plugin of the xarray-sql compatibility run (run.py).

What it changes around xarray-sql's own tests, and why:

* qlink is the installed wheel's, with this tree's qlink.xarray where the
  wheel predates it (else this tree's python/qlink, without the wheel).
* ``duckdb.connect`` opens connections with ``allow_unsigned_extensions``
  and the qlink extension loaded (DuckDB loads an unsigned extension only
  when the database is opened so; xarray-sql needs no extension): the V2
  build where the pinned duckdb runs, as ``qlink.xarray.register`` loads
  it, which holds no connection of its own, so a database closed by the
  test is closed. The caller's database, read_only and config arguments
  are kept.
* ``xarray.tutorial.open_dataset("air_temperature" | "rasm")`` returns a
  Dataset of the tutorial file's structure built here (this machine reaches
  no data server): same dimensions, sizes, coordinates, dtypes, calendar
  and attributes; values are deterministic, not the NCEP / RASM numbers
  (the tests compare engines with xarray over the same Dataset).
* DuckDB 2's relations have no ``fetchone()`` (the tests target DuckDB
  1.x, where it ran the relation and returned its first row): it is put
  back as ``rel.fetchall()[0]`` (None without rows).
* every test gets 120 s (SIGALRM), then fails as a timeout.
* each test's outcome, with the exception's first line, goes to the JSON
  file named by QLINK_COMPAT_OUT.
"""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pandas as pd
import pytest

_results: list[dict] = []


def _qlink_connect(real):
    import qlink.duckdb as qd

    def connect(database=":memory:", read_only=False, config=None, **kwargs):
        config = dict(config or {})
        config["allow_unsigned_extensions"] = True
        con = real(database, read_only=read_only, config=config, **kwargs)
        con.load_extension(qd.extension_path("auto"))
        for d in qd.default_plugin_dirs():
            try:
                con.execute("SELECT * FROM qlink_allow(?)", [d]).fetchall()
            except duckdb_error():  # the same database opened again: its list is sealed, and holds d
                pass
        return con

    return connect


def duckdb_error():
    import duckdb

    return duckdb.Error


def _air_temperature():
    import xarray as xr

    time = pd.date_range("2013-01-01", "2014-12-31 18:00", freq="6h")
    lat = np.arange(75.0, 14.9, -2.5, dtype=np.float32)
    lon = np.arange(200.0, 330.1, 2.5, dtype=np.float32)
    t = np.arange(len(time))[:, None, None]
    air = (273.15 + 20 * np.cos(np.deg2rad(lat))[None, :, None] + 5 * np.sin(t / 40.0)
           + 0.01 * lon[None, None, :]).astype(np.float64)  # the file's int16 x 0.01 decodes to float64
    return xr.Dataset(
        {"air": (("time", "lat", "lon"), air, {"long_name": "4xDaily Air temperature at sigma level 995",
                                                 "units": "degK", "precision": 2, "GRIB_id": 11,
                                                 "GRIB_name": "TMP", "var_desc": "Air temperature",
                                                 "dataset": "NMC Reanalysis", "level_desc": "Surface",
                                                 "statistic": "Individual Obs", "parent_stat": "Other",
                                                 "actual_range": np.array([185.16, 322.1], dtype=np.float32)})},
        coords={"time": ("time", time, {"long_name": "Time", "standard_name": "time"}),
                "lat": ("lat", lat, {"standard_name": "latitude", "long_name": "Latitude", "units": "degrees_north",
                                     "axis": "Y"}),
                "lon": ("lon", lon, {"standard_name": "longitude", "long_name": "Longitude", "units": "degrees_east",
                                     "axis": "X"})},
        attrs={"Conventions": "COARDS", "title": "4x daily NMC reanalysis (1948)",
               "description": "Data is from NMC initialized reanalysis\n(4x/day).  These are the 0.9950 sigma level "
                              "values.", "platform": "Model",
               "references": "http://www.esrl.noaa.gov/psd/data/gridded/data.ncep.reanalysis.html"},
    )


def _rasm():
    import cftime
    import xarray as xr

    time = [cftime.DatetimeNoLeap(1980 + (8 + m) // 12, (8 + m) % 12 + 1, 16, 12) for m in range(36)]
    y, x = np.arange(205), np.arange(275)
    xc = (189.2 + 0.5 * x[None, :] + 0.1 * y[:, None]).astype(np.float64)
    yc = (16.5 + 0.25 * y[:, None] + 0.01 * x[None, :]).astype(np.float64)
    tair = (-20 + 30 * np.sin(np.arange(36) / 6.0)[:, None, None] + 0.05 * yc[None] + 0.0 * xc[None])
    tair[:, :20, :30] = np.nan  # ocean cells
    return xr.Dataset(
        {"Tair": (("time", "y", "x"), tair, {"units": "C", "long_name": "Surface air temperature",
                                              "type_preferred": "double", "time_rep": "instantaneous"})},
        coords={"time": ("time", time, {"long_name": "time", "type_preferred": "int"}),
                "xc": (("y", "x"), xc, {"long_name": "longitude of grid cell center", "units": "degrees_east"}),
                "yc": (("y", "x"), yc, {"long_name": "latitude of grid cell center", "units": "degrees_north"})},
        attrs={"title": "/workspace/jhamman/processed/R1002RBRxaaa01a/lnd/temp/R1002RBRxaaa01a.vic.ha.1979-09-01.nc",
               "institution": "U.W.", "source": "RACM R1002RBRxaaa01a", "output_frequency_daily": 24,
               "output_mode": "averaged", "convention": "CF-1.4"},
    )


def _use_qlink() -> None:
    """The installed qlink (the wheel) when there is one, with this tree's
    modules that a wheel older than them lacks (qlink.xarray); else this
    tree's python/qlink (the C-build routes only)."""
    import importlib.util
    import sys
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "python"
    try:
        import qlink
    except ImportError:
        sys.path.insert(0, str(source))
        import qlink
    if importlib.util.find_spec("qlink.xarray") is None:
        qlink.__path__.append(str(source / "qlink"))


_use_qlink()  # at import: the suite's conftest imports xarray_sql (the shim) before pytest_configure


def pytest_configure(config):
    import duckdb
    import xarray as xr

    if not hasattr(duckdb.DuckDBPyRelation, "fetchone") or "no longer" in str(
            getattr(duckdb.DuckDBPyRelation.fetchone, "__doc__", "")):
        duckdb.DuckDBPyRelation.fetchone = lambda self: (self.fetchall() or [None])[0]
    if not getattr(duckdb.connect, "_qlink", False):
        duckdb.connect = _qlink_connect(duckdb.connect)
        duckdb.connect._qlink = True
    real_open = xr.tutorial.open_dataset
    made = {"air_temperature": _air_temperature, "rasm": _rasm}

    def open_dataset(name, *args, **kwargs):
        if name in made:
            ds = made[name]()
            chunks = kwargs.get("chunks")
            return ds.chunk(chunks) if chunks else ds
        return real_open(name, *args, **kwargs)

    xr.tutorial.open_dataset = open_dataset


class _Timeout(Exception):
    pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def alarm(signum, frame):
        raise _Timeout("test took longer than 120 s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(120)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _reason(report) -> str:
    lr = report.longrepr
    if lr is None:
        return ""
    if isinstance(lr, tuple):  # a skip: (file, line, reason)
        return str(lr[2])
    crash = getattr(getattr(lr, "reprcrash", None), "message", None)
    text = crash or str(lr)
    return text.strip().splitlines()[0][:400] if text.strip() else ""


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed") or (
            report.when == "teardown" and report.outcome == "failed"):
        _results.append({"test": report.nodeid, "when": report.when, "outcome": report.outcome,
                         "reason": _reason(report), "text": str(report.longrepr)[-3000:] if report.failed else ""})


def pytest_collectreport(report):
    if report.failed:
        _results.append({"test": report.nodeid, "when": "collect", "outcome": "error", "reason": _reason(report),
                         "text": str(report.longrepr)[-3000:]})


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("QLINK_COMPAT_OUT")
    if out:
        with open(out, "w") as f:
            json.dump(_results, f, indent=1)
