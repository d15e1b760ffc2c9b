# SPDX-License-Identifier: Apache-2.0
"""The ctypes mirrors of qlink_ndarray.h's structs against the layout the
plugin was compiled with (nd_api.layout): loading the library checks them,
and a mirror that differs is an ImportError naming the member."""

from __future__ import annotations

import ctypes

import pytest
from conftest import PLUGIN

import qlink._ndarray as _ndarray  # not "from qlink import": qlink's __getattr__ without the wheel


def test_the_mirrors_match_the_plugin():
    lib = _ndarray.library(str(PLUGIN))
    _ndarray.check_layout(lib.api.layout, lib.path)  # what loading did: no error
    entries, i = set(), 0
    while lib.api.layout[i].type is not None:
        e = lib.api.layout[i]
        entries.add((e.type.decode(), e.member.decode() if e.member else None))
        i += 1
    for struct, mirror in _ndarray.MIRRORS.items():
        assert {m for t, m in entries if t == struct and m} == {name for name, _ in mirror._fields_}


def _mirror_of_nd_variable(fields):
    return type("Mirror", (ctypes.Structure,), {"_fields_": fields})


@pytest.mark.parametrize("change, says", [
    # ndim as an int64 and no is_coord: the first member that differs is named
    (lambda f: f[:1] + [("ndim", ctypes.c_int64)] + f[3:], r"nd_variable\.ndim is at offset 8 \(4 bytes\)"),
    # a member the C struct lacks
    (lambda f: f + [("extra", ctypes.c_void_p)], "has no member 'extra'"),
    # a member the mirror lacks
    (lambda f: f[:-1], "lacks: null_cell"),
    # the right offset, the wrong size
    (lambda f: f[:-1] + [("null_cell", ctypes.c_uint32)], r"nd_variable\.null_cell"),
], ids=["moved", "extra", "missing", "resized"])
def test_a_wrong_mirror_is_an_import_error_naming_the_member(change, says):
    lib = _ndarray.library(str(PLUGIN))
    broken = _mirror_of_nd_variable(change(list(_ndarray.NdVariable._fields_)))
    with pytest.raises(ImportError, match=says):
        _ndarray.check_layout(lib.api.layout, lib.path, {"nd_variable": broken})
