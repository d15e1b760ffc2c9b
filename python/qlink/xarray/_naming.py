# SPDX-License-Identifier: Apache-2.0
"""Table names: the dimension groups of a Dataset and the table each
becomes (xarray-sql 0.6's naming), and the types of the options that shape
them."""

from __future__ import annotations

from collections.abc import Mapping

Chunks = Mapping[str, int] | None
TableNames = Mapping[tuple[str, ...], str] | None


def group_vars_by_dims(ds) -> dict[tuple[str, ...], list[str]]:
    """Data variables by their exact dimension tuple, in the Dataset's order
    (xarray-sql 0.6's grouping)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for name, var in ds.data_vars.items():
        groups.setdefault(tuple(str(d) for d in var.dims), []).append(str(name))
    return groups


def table_names_of(ds, table_names: TableNames = None, *, case_insensitive: bool = False) -> dict:
    """Each dimension group's table name: ``table_names`` where it names the
    group, else the dimensions joined by ``_`` (``scalar`` for 0-d). Two
    groups with one name raise ``ValueError``."""
    overrides = dict(table_names or {})
    names = {dims: overrides.get(dims, "_".join(dims) or "scalar") for dims in group_vars_by_dims(ds)}
    taken: dict[str, tuple] = {}
    for dims, name in names.items():
        key = name.casefold() if case_insensitive else name
        if key in taken:
            how = "" if taken[key][1] == name else " (DuckDB compares names case-insensitively)"
            raise ValueError(
                f"dimension groups {taken[key][0]} and {dims} would both take the same table name {name!r}{how}; "
                "name one of them with table_names={dims: 'name'}"
            )
        taken[key] = (dims, name)
    return names
