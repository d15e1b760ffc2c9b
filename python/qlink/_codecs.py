# SPDX-License-Identifier: Apache-2.0
"""qlink's extension codecs for datafusion-python 55 (:func:`codecs`).

datafusion-python serializes every plan it hands to a foreign query planner
(``set_query_planner``, ``with_extensions``) as protobuf. A qlink table, and
the plan a qlink planner returns, cross that serialization *by reference*:
a handle into a per-process registry, so nothing is copied and a deep plan
costs no more than a shallow one. A session that is to run a qlink planner
must carry these codecs::

    ctx = datafusion.SessionContext().with_extensions(qlink.codecs())
    ctx.register_table("t", plugin.table("points"))
    ctx.set_query_planner(plugin.planner("fold"))

``ctx.with_extensions(planner)`` installs them together with the planner,
and :class:`qlink.xarray.Context` carries them from the start. A plan
encoded with them decodes only in the process that encoded it, while its
tables are registered; anywhere else it is a clear error.
"""

from __future__ import annotations

from ._qlink import CODEC_ID, LogicalCodec, PhysicalCodec

__all__ = ["Codecs", "codecs", "components"]


def components(ctx):
    """The ``SessionExtensionComponents`` of qlink's codecs for ``ctx`` (a
    datafusion-python ``SessionContext``), leaving out a codec ``ctx``
    already carries (datafusion-python refuses an id installed twice)."""
    from datafusion.extensions import SessionExtensionComponents

    logical = () if CODEC_ID in ctx.logical_extension_codec_ids() else (LogicalCodec(),)
    physical = () if CODEC_ID in ctx.physical_extension_codec_ids() else (PhysicalCodec(),)
    return SessionExtensionComponents(logical_extension_codecs=logical, physical_extension_codecs=physical)


class Codecs:
    """An extension bundle for ``SessionContext.with_extensions`` that
    installs qlink's logical and physical codecs (module documentation).
    Holds no state; thread-safe."""

    def __datafusion_session_components__(self, ctx):
        return components(ctx)

    def __repr__(self) -> str:
        return f"qlink.codecs({CODEC_ID})"


def codecs() -> Codecs:
    """qlink's codecs as an extension bundle:
    ``ctx = ctx.with_extensions(qlink.codecs())`` returns a context whose
    plans can carry qlink tables to, and qlink plans from, a query planner.
    Installing them on a context that has them already is a no-op."""
    return Codecs()
