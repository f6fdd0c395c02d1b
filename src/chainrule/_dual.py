"""Where forward mode keeps its tangents (the core's part of forward-mode AD).

A tensor's tangents live in its ``_extra["tangent"]``, a dict ``{level: tangent}`` (never
changed in place, so tensors may share it); a tangent of a level that is not active is not
seen. A tangent is an array, or a Tensor when it has a history of its own: a tangent of a
nested level carries the tangents of the levels outside it (forward-over-forward), and one
computed with grad mode on from inputs that require grad can be differentiated
(reverse-over-forward). While a level is active, the
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
    """The tangent (an array) carried by ``x`` at ``level`` (default: the innermost
    active dual level), or None."""
    t = stored_tangent(x, level)
    return t._data if isinstance(t, Tensor) else t


def stored_tangent(x, level=None):
    """The tangent of ``x`` at ``level`` as stored: an array, a Tensor (a tangent with a
    history), or None."""
    if not isinstance(x, Tensor) or not x._extra:
        return None
    entry = x._extra.get("tangent")
    if entry is None:
        return None
    return entry.get(STATE.dual_level if level is None else level)


def set_tangent(t, tangent, level=None):
    """Give tensor ``t`` the tangent ``tangent`` (an array or a Tensor) at ``level``
    (default: the innermost active dual level)."""
    entry = t._extra.get("tangent") if t._extra else None
    level = STATE.dual_level if level is None else level
    t._extra_set("tangent", {level: tangent} if not entry else {**entry, level: tangent})


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
