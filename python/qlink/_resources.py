# SPDX-License-Identifier: Apache-2.0
"""Where qlink's native parts are: the plugins, the DuckDB and SQLite
extensions. Pure Python (no ``qlink._qlink``): qlink.duckdb, qlink.sqlite
and qlink._ndarray use it with the C build alone.

The wheel ships them inside the package in the C build's layout
(``plugins/*.so``, ``hosts/duckdb/*.duckdb_extension``,
``hosts/sqlite/qlink.so``; python/build.sh copies them in), so the package
directory is searched like a build directory. The places, in order:

1. ``QLINK_BUILD_DIR`` (a CMake build directory), when it is set: then it
   is the only place, so a developer's build is never mixed with the
   installed copies;
2. the package's own directory (an installed wheel, or python/qlink after
   python/build.sh);
3. when the package is imported from a source tree (``python/qlink``),
   that tree's ``build/release``.

Each lookup raises FileNotFoundError naming every place it looked in.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def source_root() -> Path | None:
    """The source tree the package is imported from (``<root>/python/qlink``
    beside ``<root>/CMakeLists.txt``), or None for an installed package."""
    root = PACKAGE_DIR.parents[1]
    if PACKAGE_DIR.parent.name == "python" and (root / "CMakeLists.txt").is_file():
        return root
    return None


def roots() -> list[Path]:
    """The directories searched, in order (see the module's documentation)."""
    env = os.environ.get("QLINK_BUILD_DIR")
    if env:
        return [Path(env)]
    places = [PACKAGE_DIR]
    tree = source_root()
    if tree is not None:
        places.append(tree / "build" / "release")
    return places


def find(relative: str) -> Path:
    """The first ``root / relative`` that is a file (``relative`` in the
    build layout, e.g. ``hosts/sqlite/qlink.so``). FileNotFoundError names
    each candidate when none is (the caller says what was missing)."""
    candidates = [r / relative for r in roots()]
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(f"no {' and no '.join(str(c) for c in candidates)} (QLINK_BUILD_DIR names a C build)")


def plugin_dir() -> str:
    """The directory of the plugins qlink uses by default: ``QLINK_PLUGIN_DIR``
    if set, else the first ``plugins/`` of :func:`roots` that exists (the
    wheel's own ``qlink/plugins``). FileNotFoundError names the places when
    none exists. :func:`qlink.plugin_path` and the default plugin
    directories of qlink.duckdb and qlink.sqlite are this directory."""
    env = os.environ.get("QLINK_PLUGIN_DIR")
    candidates = [Path(env)] if env else [r / "plugins" for r in roots()]
    for c in candidates:
        if c.is_dir():
            return str(c.resolve())
    raise FileNotFoundError(f"no qlink plugin directory: looked for {' and '.join(str(c) for c in candidates)} "
                            "(QLINK_PLUGIN_DIR or QLINK_BUILD_DIR name one)")
