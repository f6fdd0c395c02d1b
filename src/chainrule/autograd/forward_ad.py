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

from .. import _dispatch, _ns
from .._dual import NODE_TANGENTS, set_tangent, tangent_of
from .._state import STATE
from .._tensor import Tensor, check_grad_dtype, wrap
from ..backend import backend_of, dtype_kind

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level",
           "exit_dual_level"]

_ids = itertools.count(1)

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Start a dual level; returns its id. Only one level at a time (as in PyTorch)."""
    if STATE.dual_level:
        raise RuntimeError("a dual level is already active; nested levels are not supported")
    STATE.set_modes(dual_level=next(_ids))
    return STATE.dual_level


def exit_dual_level(*, level=None):
    """End the active dual level: the tangents made in it are no longer seen."""
    STATE.set_modes(dual_level=0)
    NODE_TANGENTS.clear()


class dual_level:
    """``with dual_level():`` scopes forward-mode AD; tangents do not outlive it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _require_level(what):
    if not STATE.dual_level:
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
    t = tangent._data if isinstance(tangent, Tensor) else tangent
    data = tensor._data
    if data.__class__ is np.ndarray:
        t = np.asarray(t)
    if tuple(t.shape) != tuple(tensor.shape):
        raise RuntimeError(f"make_dual: the tangent has shape {tuple(t.shape)} but the "
                           f"primal has shape {tuple(tensor.shape)}; they must match")
    check_grad_dtype(t.dtype, "tangent")
    dual = _plain_view(tensor)
    if isinstance(tangent, Tensor) and t.__class__ is data.__class__ and t.dtype == data.dtype:
        # no copy needed: the dual carries the tangent tensor itself, and unpack_dual gives
        # that very tensor back (as in PyTorch's forward-AD tutorial)
        set_tangent(dual, t)
        dual._extra_set("tangent_tensor", tangent)
    elif data.__class__ is np.ndarray:
        set_tangent(dual, np.array(t, dtype=tensor.dtype))
    else:  # on the primal's backend (a tangent of another backend raises there)
        set_tangent(dual, backend_of(data).xp.astype(t, data.dtype, copy=True))
    return dual


def _plain_view(tensor):
    """A view of ``tensor`` with its history and no tangent."""
    level = STATE.dual_level
    STATE.set_modes(dual_level=0)
    try:
        return tensor.view(tensor.shape)
    finally:
        STATE.set_modes(dual_level=level)


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor``: a view without the tangent, and the tangent as
    a Tensor (None when ``tensor`` carries none at the active level)."""
    t = tangent_of(tensor)
    if t is None:
        return UnpackedDualTensor(_plain_view(tensor), None)
    given = tensor._extra.get("tangent_tensor")
    return UnpackedDualTensor(_plain_view(tensor),
                              given if given is not None and given._data is t else wrap(t))


def _tangent(op, inputs, datas, attrs, out, result):
    """The dispatcher's hook in forward mode: the output tangent from the op's JVP rules,
    summed over the inputs that carry a tangent."""
    if not STATE.dual_level:
        return
    ts = [tangent_of(x) for x in inputs]
    if all(t is None for t in ts):
        return
    # A batch of tangents (jacfwd: one per column) runs the same rules on the batched
    # namespace; the output tangent is then batched too.
    batched = _ns.BATCHING.batched
    is_batched = batched is not None and any(isinstance(t, batched) for t in ts)
    first = out if op.nout == 1 else out[0]
    foreign = first.__class__ is not np.ndarray and not isinstance(first, np.generic)
    if is_batched:
        F = _ns.batched()
    elif foreign:
        b = backend_of(first)
        F = _ns.raw_for(b, None if b.lazy else getattr(first, "device", None))
    else:
        F = _ns.RAW

    def args(params, pool):
        return [pool[op.pool.index(p)] for p in params]

    shapes = [tuple(d.shape) if hasattr(d, 'shape') else () for d in datas]
    if op.variadic:
        fn, params = _jvp_rule(op, 0)
        t_out = fn(F, ts, *args(params, (datas, out, *attrs, shapes)))
    else:
        pool = (*datas, out, *attrs, *shapes)
        t_out = None
        for i, t in enumerate(ts):
            if t is None:
                continue
            fn, params = _jvp_rule(op, i)
            part = fn(F, t, *args(params, pool))
            t_out = part if t_out is None else _add_tangents(t_out, part)
    outs = (result,) if op.nout == 1 else result
    parts = (t_out,) if op.nout == 1 else (t_out or (None,) * op.nout)
    for r, o, part in zip(outs, (out,) if op.nout == 1 else out, parts):
        if part is None or dtype_kind(o.dtype) != "f":
            continue
        if is_batched and isinstance(part, batched):
            set_tangent(r, batched(part.rows(np.shape(o), o.dtype)))
        elif foreign:
            xp = backend_of(o).xp
            set_tangent(r, xp.astype(xp.broadcast_to(xp.asarray(part), o.shape), o.dtype,
                                     copy=True))
        else:
            set_tangent(r, np.array(np.broadcast_to(part, np.shape(o)), dtype=o.dtype))
    node = outs[0]._grad_fn
    if node is not None:
        NODE_TANGENTS[node] = (STATE.dual_level, ts, [tangent_of(r) for r in outs])


def _jvp_rule(op, i):
    rule = op.jvp_rules.get(op.inputs[i])
    if rule is None:
        raise NotImplementedError(
            f"forward-mode AD: {op.name} has no JVP rule for its input {op.inputs[i]!r}")
    return rule


def _add_tangents(a, b):
    if isinstance(a, tuple):
        return tuple(y if x is None else x if y is None else x + y for x, y in zip(a, b))
    return a + b


_dispatch.AFTER_OP.append(_tangent)
