"""Forward-mode AD with PyTorch's dual-number API.

>>> import chainrule as cr
>>> import chainrule.autograd.forward_ad as fwAD
>>> X = cr.randn(3, 3); V = cr.randn(3, 3)
>>> with fwAD.dual_level():
...     Y = fwAD.make_dual(X, V) @ fwAD.make_dual(X, V)
...     jvp = fwAD.unpack_dual(Y).tangent        # V X + X V: the JVP of X -> X @ X
>>> bool(((jvp - (V @ X + X @ V)).abs() < 1e-12).all())
True

A dual tensor carries a tangent ``t`` beside its primal ``x``; every op then also computes
the tangent of its output, ``J t`` (a Jacobian-vector product), from the JVP rules declared
next to its VJP rules in the derivative table. The Jacobian itself is never formed.
"""

from __future__ import annotations

import collections
import itertools

import numpy as np

from .. import _dispatch
from .._tensor import Tensor, check_grad_dtype, wrap

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level",
           "exit_dual_level"]

_ids = itertools.count(1)

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Start a dual level; returns its id. Only one level at a time (as in PyTorch)."""
    if _dispatch.DUAL_LEVEL:
        raise RuntimeError("a dual level is already active; nested levels are not supported")
    _dispatch.set_modes(dual_level=next(_ids))
    return _dispatch.DUAL_LEVEL


def exit_dual_level(*, level=None):
    """End the active dual level: the tangents made in it are no longer seen."""
    _dispatch.set_modes(dual_level=0)
    _dispatch.NODE_TANGENTS.clear()


class dual_level:
    """``with dual_level():`` scopes forward-mode AD; tangents do not outlive it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _require_level(what):
    if not _dispatch.DUAL_LEVEL:
        raise RuntimeError(f"{what} must be called inside `with dual_level():`")


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` that carries ``tangent`` (same shape, float dtype).

    The view keeps ``tensor``'s autograd history, so forward and reverse mode combine
    (forward-over-reverse). Raises RuntimeError outside a dual level, and for a tangent whose
    shape differs from the primal's or a non-float dtype.
    """
    _require_level("make_dual")
    if not isinstance(tensor, Tensor):
        tensor = wrap(np.asarray(tensor))
    check_grad_dtype(tensor.dtype, "primal")
    t = np.asarray(tangent._data if isinstance(tangent, Tensor) else tangent)
    if t.shape != tensor.shape:
        raise RuntimeError(f"make_dual: the tangent has shape {t.shape} but the primal has "
                           f"shape {tuple(tensor.shape)}; they must match")
    check_grad_dtype(t.dtype, "tangent")
    dual = _plain_view(tensor)
    _dispatch.set_tangent(dual, np.array(t, dtype=tensor.dtype))
    return dual


def _plain_view(tensor):
    """A view of ``tensor`` with its history and no tangent."""
    level = _dispatch.DUAL_LEVEL
    _dispatch.set_modes(dual_level=0)
    try:
        return tensor.view(tensor.shape)
    finally:
        _dispatch.set_modes(dual_level=level)


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: a view without the tangent, and the tangent as
    a Tensor (None when ``tensor`` carries none at the active level)."""
    t = _dispatch.tangent_of(tensor)
    return UnpackedDualTensor(_plain_view(tensor), None if t is None else wrap(t))
