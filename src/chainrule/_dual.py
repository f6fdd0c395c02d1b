"""Where forward mode keeps its tangents (the core's part of forward-mode AD).

A tensor's tangent at the active dual level lives in its ``_extra["tangent"]`` as
``(level, tangent)``; a tangent of another level is not seen. While a level is active, the
tangents of the inputs and outputs of recorded nodes are kept too (:data:`NODE_TANGENTS`),
so that a ``create_graph`` backward rebuilds saved values with them (forward-over-reverse).

The rules that compute tangents live in ``chainrule.autograd.forward_ad``, which registers
them with the dispatcher; this module only stores and reads.
"""

from __future__ import annotations

import weakref

from ._state import STATE
from ._tensor import Tensor

# node -> (level, input tangents, output tangents), while a dual level is active
NODE_TANGENTS = weakref.WeakKeyDictionary()


def tangent_of(x, level=None):
    """The tangent (an array) carried by ``x`` at the active dual level, or None."""
    if not isinstance(x, Tensor) or not x._extra:
        return None
    entry = x._extra.get("tangent")
    if entry is None or entry[0] != (STATE.dual_level if level is None else level):
        return None
    return entry[1]


def set_tangent(t, tangent):
    """Give tensor ``t`` the tangent ``tangent`` at the active dual level."""
    t._extra_set("tangent", (STATE.dual_level, tangent))


def node_tangents(node):
    """``(input tangents, output tangents)`` recorded for ``node`` at the active level, or
    None."""
    level = STATE.dual_level
    if not level:
        return None
    entry = NODE_TANGENTS.get(node)
    if entry is None or entry[0] != level:
        return None
    return entry[1], entry[2]


def with_tangent(t, tangent):
    """``t`` after giving it ``tangent`` (when not None)."""
    if tangent is not None:
        set_tangent(t, tangent)
    return t
