# SPDX-License-Identifier: Apache-2.0
"""Polars (polars==2.1.0) through qlink.polars: each plugin table a
LazyFrame (``qlink.polars.scan``: an IO source over a ``qlink.Session``,
the qlink wheel), each xarray Dataset the frames of
``qlink.xarray.register`` on the ``polars.SQLContext``, and the query run
by Polars' own SQL (``SQLContext.execute``), so projection, predicate and
limit pushdown go through Polars' optimizer into the plugin's scan.
Polars' SQL cannot call plugin functions (engine.GAPS)."""

from __future__ import annotations

import datasets
from engine import Engine, Query, Result, has_native_qlink, normalise_type, normalise_value, resolve_spec



class PolarsSql(Engine):
    name = "polars"

    def unavailable(self):
        try:
            import polars  # noqa: F401
        except ImportError:
            return "polars is not installed (scripts/setup.sh)"
        if not has_native_qlink():
            return "the qlink wheel (its native module qlink._qlink) is not installed: python/build.sh"
        return None

    def run(self, query: Query, sql: str) -> Result:
        import polars as pl
        import qlink
        import qlink.polars

        ctx = pl.SQLContext()
        session = qlink.Session()
        for name, spec in query.tables.items():
            ctx.register(name, qlink.polars.scan(resolve_spec(spec), session=session))
        for name, (key, route) in query.datasets.items():
            datasets.register(ctx, name, key, route)
        df = ctx.execute(sql).collect()
        types = [normalise_type(self.name, _dtype_name(t)) for t in df.dtypes]
        rows = [tuple(normalise_value(v) for v in row) for row in df.rows()]
        return Result(list(df.columns), types, rows)


def _dtype_name(dtype) -> str:
    """Polars' dtype as ``engine.TYPE_NAMES["polars"]`` names it: the class
    name, a time zone marked (``Datetime[tz]``)."""
    import polars as pl

    if isinstance(dtype, pl.Datetime):
        return "Datetime[tz]" if dtype.time_zone else "Datetime"
    return type(dtype).__name__ if not isinstance(dtype, type) else dtype.__name__


ENGINES = [PolarsSql()]
