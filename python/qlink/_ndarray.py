# SPDX-License-Identifier: Apache-2.0
"""The qlink_ndarray plugin's registration API, through ctypes.

The plugin exports only ``qlink_plugin_init`` (docs/abi.md R12); its
descriptor's last member (``private_data``) is the ``struct nd_api`` of
``plugins/ndarray/src/qlink_ndarray.h``. The library is opened by the path
the engines load it from, so dlopen returns the same image and one registry
serves this process's Python and every engine in it.

The ctypes mirrors of the header's structs (:class:`NdVariable`,
:class:`NdApi`, :class:`NdLayoutEntry`) are checked when the library is
loaded, before anything is registered: their sizes and every member's
offset and size against the table the plugin compiled (``nd_api.layout``),
as the Rust mirrors of the ABI are checked against the headers at compile
time. A mismatch is an ImportError naming the struct and the member.

Needs only the C build (no ``qlink._qlink``).
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from . import _resources

QL_ABI_VERSION_0_1 = (0 << 16) | 1
ND_API_MAGIC = 0x3241444E  # the API with handles (qlink_ndarray.h)
ND_MAX_DIMS = 32
ND_HANDLE_HEX = 32

LOAD_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_int64),
                           ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
RELEASE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class NdVariable(ctypes.Structure):
    """``struct nd_variable``."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("ndim", ctypes.c_int32),
        ("is_coord", ctypes.c_int32),
        ("dims", ctypes.POINTER(ctypes.c_char_p)),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("dtype", ctypes.c_char_p),
        ("data", ctypes.c_void_p),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("chunks", ctypes.POINTER(ctypes.c_int64)),
        ("attrs_json", ctypes.c_char_p),
        ("load", LOAD_FN),
        ("load_ctx", ctypes.c_void_p),
        ("null_cell", ctypes.c_void_p),
    ]


class NdLayoutEntry(ctypes.Structure):
    """``struct nd_layout_entry``."""

    _fields_ = [
        ("type", ctypes.c_char_p),
        ("member", ctypes.c_char_p),
        ("offset", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
    ]


class NdApi(ctypes.Structure):
    """``struct nd_api``."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("magic", ctypes.c_uint32),
        ("register_dataset", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(NdVariable), ctypes.c_int32,
                                              ctypes.c_char_p, ctypes.c_void_p, RELEASE_FN, ctypes.c_char_p,
                                              ctypes.c_char_p, ctypes.c_size_t)),
        ("unregister_dataset", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)),
        ("live_count", ctypes.CFUNCTYPE(ctypes.c_int64)),
        ("layout", ctypes.POINTER(NdLayoutEntry)),
    ]


# The C struct each mirror stands for.
MIRRORS = {"nd_variable": NdVariable, "nd_api": NdApi, "nd_layout_entry": NdLayoutEntry}


def check_layout(layout, path: str, mirrors=MIRRORS) -> None:
    """Compare ``mirrors`` (C struct name -> ctypes class) with the plugin's
    layout table (``nd_api.layout``, a pointer to its first entry):
    ImportError naming the first struct member whose offset or size
    differs, that one side lacks, or the struct whose size differs."""
    compiled: dict[tuple[str, str | None], tuple[int, int]] = {}
    i = 0
    while layout[i].type is not None:
        e = layout[i]
        compiled[(e.type.decode(), e.member.decode() if e.member is not None else None)] = (e.offset, e.size)
        i += 1
    for struct, mirror in mirrors.items():
        if (struct, None) not in compiled:
            raise ImportError(f"qlink._ndarray: {path} gives no layout of struct {struct}")
        names = [name for name, _ in mirror._fields_]
        for name in names:
            field = getattr(mirror, name)
            ours = (field.offset, field.size)
            theirs = compiled.get((struct, name))
            if theirs is None:
                raise ImportError(f"qlink._ndarray: struct {struct} of {path} has no member {name!r}, which the "
                                  f"ctypes mirror {mirror.__name__} has")
            if ours != theirs:
                raise ImportError(f"qlink._ndarray: {struct}.{name} is at offset {theirs[0]} ({theirs[1]} bytes) in "
                                  f"{path} but at offset {ours[0]} ({ours[1]} bytes) in the ctypes mirror "
                                  f"{mirror.__name__}")
        extra = [m for (t, m) in compiled if t == struct and m is not None and m not in names]
        if extra:
            raise ImportError(f"qlink._ndarray: struct {struct} of {path} has members the ctypes mirror "
                              f"{mirror.__name__} lacks: {', '.join(extra)}")
        size = compiled[(struct, None)][1]
        if size != ctypes.sizeof(mirror):
            raise ImportError(f"qlink._ndarray: struct {struct} is {size} bytes in {path} but "
                              f"{ctypes.sizeof(mirror)} in the ctypes mirror {mirror.__name__}")


def plugin_path() -> str:
    """``QLINK_NDARRAY_PLUGIN``, else ``qlink_ndarray.so`` in
    :func:`qlink.plugin_dir` (the copy the wheel ships, or the C build's
    when ``QLINK_BUILD_DIR`` is set; qlink/_resources.py)."""
    env = os.environ.get("QLINK_NDARRAY_PLUGIN")
    try:
        path = Path(env) if env else Path(_resources.plugin_dir()) / "qlink_ndarray.so"
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"the qlink_ndarray plugin is not built: {exc}") from None
    if not path.is_file():
        raise FileNotFoundError(f"the qlink_ndarray plugin is not built: {path} (run the C release build)")
    return str(path.resolve())


def zarr_plugin_path(ndarray_path: str | None = None) -> str:
    """qlink_zarr.so beside the qlink_ndarray plugin at ``ndarray_path``
    (default :func:`plugin_path`): the wheel and the C build put both in
    one folder, which the engines then allow once."""
    path = Path(ndarray_path or plugin_path()).resolve().parent / "qlink_zarr.so"
    if not path.is_file():
        raise FileNotFoundError(f"the qlink_zarr plugin is not built: {path} (run the C release build)")
    return str(path)


class Library:
    """The loaded plugin and its registration API."""

    def __init__(self, path: str):
        self.path = path
        self.dll = ctypes.CDLL(path)
        init = self.dll.qlink_plugin_init
        init.restype = ctypes.c_int
        init.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p]
        descriptor = (ctypes.c_uint8 * 512)()
        error = (ctypes.c_uint8 * 512)()
        rc = init(QL_ABI_VERSION_0_1, ctypes.addressof(descriptor), ctypes.addressof(error))
        if rc != 0:
            raise RuntimeError(f"{path}: qlink_plugin_init failed ({rc})")
        size = ctypes.c_uint32.from_buffer(descriptor, 0).value
        api = ctypes.c_void_p.from_buffer(descriptor, size - ctypes.sizeof(ctypes.c_void_p)).value
        release = ctypes.CFUNCTYPE(None, ctypes.c_void_p).from_buffer(descriptor, size - 2 * ctypes.sizeof(ctypes.c_void_p))
        self.api = NdApi.from_address(api)
        release(ctypes.addressof(descriptor))
        if self.api.magic != ND_API_MAGIC or self.api.struct_size < ctypes.sizeof(NdApi):
            raise RuntimeError(f"{path} is not a qlink_ndarray plugin with the registration API this module knows")
        check_layout(self.api.layout, path)


_lock = threading.Lock()
_libraries: dict[str, Library] = {}


def library(path: str | None = None) -> Library:
    """The plugin at ``path`` (default :func:`plugin_path`), loaded once."""
    path = str(Path(path).resolve()) if path else plugin_path()
    with _lock:
        lib = _libraries.get(path)
        if lib is None:
            lib = _libraries[path] = Library(path)
        return lib
