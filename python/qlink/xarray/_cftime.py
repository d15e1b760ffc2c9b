# SPDX-License-Identifier: Apache-2.0
"""cftime dates as text and back: the ISO-8601 text a cftime column holds
(:func:`cftime_text`, also the ``cftime()`` SQL function of a
:class:`~qlink.xarray.Context`), and the dates :func:`~qlink.xarray.to_dataset`
makes of it again."""

from __future__ import annotations

import numpy as np

_CFTIME_ATTR = "qlink:cftime_calendar"


def _is_cftime_array(values: np.ndarray) -> bool:
    try:
        import cftime
    except ImportError:  # pragma: no cover - cftime is pinned
        return False
    flat = values.reshape(-1)
    first = next((v for v in flat if v is not None), None)
    return isinstance(first, cftime.datetime)


def _iso(value) -> str | None:
    if value is None:
        return None
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text


_ISO = None


def cftime_text(text: str | None) -> str | None:
    """A date as the text a cftime column holds: ``2000-7-1``,
    ``2000-07-01 12:30`` or ``2000-02-30T00:00:00.5`` become
    ``YYYY-MM-DDTHH:MM:SS[.ffffff]``, so comparisons with a column are exact
    (``time > cftime('2000-07-01')`` leaves out midnight, which the bare
    ``'2000-07-01'``, a prefix of it, would not). ``ValueError`` for other
    text. The ``cftime()`` SQL function of :class:`Context`."""
    global _ISO
    if text is None:
        return None
    if _ISO is None:
        import re

        _ISO = re.compile(r"\s*(-?\d{1,4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*$")
    m = _ISO.match(str(text))
    if not m:
        raise ValueError(f"cftime(): {text!r} is not a date (YYYY-MM-DD[THH:MM[:SS[.ffffff]]])")
    y, mo, d, h, mi, sec, frac = m.groups()
    out = f"{int(y):04d}-{int(mo):02d}-{int(d):02d}T{int(h or 0):02d}:{int(mi or 0):02d}:{int(sec or 0):02d}"
    return out + (f".{frac.ljust(6, '0')}" if frac and int(frac) else "")


def _cftime_back(values: np.ndarray, calendar: str) -> np.ndarray:
    import cftime

    out = np.empty(len(values), dtype=object)
    for i, text in enumerate(values):
        if text is None or text == "":
            out[i] = None
            continue
        date, _, clock = str(text).partition("T")
        y, m, d = (int(p) for p in date.split("-"))
        hh, mm, ss = clock.split(":") if clock else ("0", "0", "0")
        sec, _, frac = ss.partition(".")
        out[i] = cftime.datetime(y, m, d, int(hh), int(mm), int(sec), int((frac or "0").ljust(6, "0")[:6]),
                                 calendar=calendar)
    return out
