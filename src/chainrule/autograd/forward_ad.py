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
import threading

import numpy as np

from .. import _dispatch, _ns
from .._dual import NODE_TANGENTS, set_tangent, stored_tangent, tangent_of
from .._state import STATE
from .._tensor import Tensor, check_grad_dtype, wrap
from ..backend import backend_of, dtype_kind

__all__ = ["dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor", "enter_dual_level",
           "exit_dual_level"]

_ids = itertools.count(1)

# How many dual levels are active in all threads together: the recorded nodes' tangents
# (NODE_TANGENTS, shared by the threads) are dropped only when none is, so that a thread
# leaving its last level does not erase the tangents another thread's forward-over-reverse
# is about to read (its Hessian would silently lose terms)
_ACTIVE = [0]
_ACTIVE_LOCK = threading.Lock()

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level():
    """Start a dual level inside the active ones; returns its id.

    Levels nest (as torch.func's transforms and JAX's tracers): a tangent belongs to one
    level, and the tangents of an inner level carry the tangents of the outer levels, so
    ``make_dual`` at an outer level, then at an inner level, gives second derivatives
    (forward-over-forward). A new thread starts with no level."""
    level = next(_ids)
    with _ACTIVE_LOCK:
        _ACTIVE[0] += 1
    STATE.set_modes(dual_levels=STATE.dual_levels + (level,))
    return level


def exit_dual_level(*, level=None):
    """End the innermost dual level (or ``level``, which must be the innermost): the
    tangents made in it are no longer seen. RuntimeError when ``level`` is not active or
    not the innermost one."""
    levels = STATE.dual_levels
    if level is not None and (not levels or levels[-1] != level):
        raise RuntimeError(f"exit_dual_level: level {level} is not the innermost active "
                           f"dual level (active: {list(levels)}); exit levels in the reverse "
                           "order of entering them")
    if not levels:
        return
    STATE.dual_recorded = STATE.dual_recorded - {levels[-1]}
    STATE.set_modes(dual_levels=levels[:-1])
    with _ACTIVE_LOCK:
        _ACTIVE[0] = max(_ACTIVE[0] - 1, 0)
        if not _ACTIVE[0]:
            NODE_TANGENTS.clear()


class dual_level:
    """``with dual_level():`` scopes forward-mode AD; tangents do not outlive it. Levels
    nest: see :func:`enter_dual_level`."""

    def __enter__(self):
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)
        return False


def _require_level(what, level):
    if not STATE.dual_levels:
        raise RuntimeError(f"{what} must be called inside `with dual_level():`")
    if level is not None and level not in STATE.dual_levels:
        raise RuntimeError(f"{what}: level {level} is not an active dual level (active: "
                           f"{list(STATE.dual_levels)})")
    return STATE.dual_level if level is None else level


class _levels:
    """Run with only ``levels`` active (the tangents of the others are not seen)."""

    def __init__(self, levels):
        self.levels = levels

    def __enter__(self):
        self.saved = STATE.dual_levels
        STATE.set_modes(dual_levels=self.levels)

    def __exit__(self, *exc):
        STATE.set_modes(dual_levels=self.saved)
        return False


def _outside(level):
    """The active levels outside ``level`` (those entered before it)."""
    levels = STATE.dual_levels
    return levels[:levels.index(level)] if level in levels else levels


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` that carries ``tangent`` (same shape, float dtype) at ``level``
    (default: the innermost active level).

    The view keeps ``tensor``'s autograd history and its tangents at outer levels, so
    forward and reverse mode combine: forward-over-reverse (a backward with
    ``create_graph=True`` inside the level), reverse-over-forward (when ``tensor`` or
    ``tangent`` requires grad, the tangents computed from them are recorded and
    ``unpack_dual(y).tangent.backward()`` works) and forward-over-forward (nested levels).
    Raises RuntimeError outside a dual level, and for a tangent whose shape differs from
    the primal's or a non-float dtype.
    """
    level = _require_level("make_dual", level)
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
    dual = _view_at(tensor, level)
    if (isinstance(tangent, Tensor) and t.__class__ is data.__class__ and t.dtype == data.dtype
            and (data.__class__ is not np.ndarray or _same_layout(t, data))):
        # no copy needed: the dual carries the tangent tensor itself, and unpack_dual gives
        # that very tensor back (as in PyTorch's forward-AD tutorial)
        set_tangent(dual, tangent, level)
    elif data.__class__ is np.ndarray or getattr(data, "numpy_like", False):
        # a tangent laid out differently from the primal (transposed, a slice of a larger
        # array) is copied into a new array with the primal's layout, as PyTorch's: the
        # dual's tangent then no longer aliases the tensor passed in
        copy = np.empty_like(data)
        copy[...] = t
        set_tangent(dual, copy, level)
    else:  # on the primal's backend and device
        b = backend_of(data)
        if b.lazy and t.__class__ is np.ndarray:  # a NumPy tangent joins Dask lazily
            t = b.xp.asarray(t)
        if backend_of(t) is not b or b.device(t) != b.device(data):
            raise RuntimeError(f"make_dual: expected the tangent on the primal's device "
                               f"({b.device(data)}), got one on {backend_of(t).device(t)}; "
                               "move it with .to(primal.device)")
        set_tangent(dual, b.xp.astype(t, data.dtype, copy=True), level)
    if STATE.enabled and (tensor.requires_grad or (isinstance(tangent, Tensor)
                                                   and tangent.requires_grad)):
        STATE.dual_recorded = STATE.dual_recorded | {level}
    return dual


def _root(a):
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _same_layout(t, data):
    """PyTorch's has_same_meta for two NumPy arrays of one shape and dtype: the same strides
    (along the dims longer than one), offset into their base array and base array size."""
    if any(n > 1 and st != sd for n, st, sd in zip(data.shape, t.strides, data.strides)):
        return False
    rt, rd = _root(t), _root(data)
    if t.size == 0 or rt.nbytes != rd.nbytes:
        return t.size == 0 and data.size == 0
    return (t.__array_interface__["data"][0] - rt.__array_interface__["data"][0]
            == data.__array_interface__["data"][0] - rd.__array_interface__["data"][0])


def _view_at(tensor, level):
    """A view of ``tensor`` with its history and its tangents at the levels outside
    ``level``, none at ``level`` or inside it."""
    with _levels(_outside(level)):
        return tensor.view(tensor.shape)


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` at ``level`` (default: the innermost active
    level): a view without the tangent at that level (keeping those of outer levels), and
    the tangent as a Tensor (None when ``tensor`` carries none there). A tangent made by
    ``make_dual`` from a Tensor is that Tensor; one computed from inputs that require grad
    has a history (reverse-over-forward); one of a nested level carries the outer levels'
    tangents (forward-over-forward)."""
    if level is not None and level not in STATE.dual_levels:
        raise RuntimeError(f"unpack_dual: level {level} is not an active dual level")
    level = STATE.dual_level if level is None else level
    t = stored_tangent(tensor, level) if level else None
    primal = _view_at(tensor, level) if level else _view_at(tensor, None)
    if t is None:
        return UnpackedDualTensor(primal, None)
    return UnpackedDualTensor(primal, t if isinstance(t, Tensor) else wrap(t))


def _tangent(op, inputs, datas, attrs, out, result):
    """The dispatcher's hook in forward mode: the output tangent at each active level from
    the op's JVP rules, summed over the inputs that carry a tangent there.

    The outermost level computes on raw arrays, unless its tangents must be recorded
    (reverse-over-forward: :func:`make_dual` was given a tensor that requires grad); each
    nested level computes with the differentiable ops while only the levels outside it are
    active, so its tangent carries their tangents (forward-over-forward)."""
    levels = STATE.dual_levels
    if not levels:
        return
    if len(levels) == 1 and not STATE.dual_recorded:  # the common case, on raw arrays
        ts = _raw_tangent(op, inputs, datas, attrs, out, result, levels[0])
    else:
        for k, level in enumerate(levels):
            if k or (level in STATE.dual_recorded and _records(inputs, level)):
                _recorded_tangent(op, inputs, attrs, result, level, levels[:k])
            else:
                _raw_tangent(op, inputs, datas, attrs, out, result, level)
        ts = [tangent_of(x, levels[-1]) for x in inputs]
    if ts is None or all(t is None for t in ts):
        return
    outs = (result,) if op.nout == 1 else result
    # the node of the op: on its first differentiable output (slogdet's sign has none)
    node = next((r._grad_fn for r in outs if r._grad_fn is not None), None)
    if node is not None:
        NODE_TANGENTS[node] = (levels[-1], ts, [tangent_of(r, levels[-1]) for r in outs])


def _records(inputs, level):
    """Whether the tangents at ``level`` must be recorded: grad mode is on and an input or
    its tangent there requires grad."""
    if not STATE.enabled:
        return False
    for x in inputs:
        if isinstance(x, Tensor):
            if x._requires_grad:
                return True
            t = stored_tangent(x, level)
            if isinstance(t, Tensor) and t._requires_grad:
                return True
    return False


def _rule_args(params, pool, op):
    return [pool[op.pool.index(p)] for p in params]


def _raw_tangent(op, inputs, datas, attrs, out, result, level):
    """The output tangent at ``level`` from the rules run on raw arrays; returns the input
    tangents (None when no input has one)."""
    ts = [tangent_of(x, level) for x in inputs]
    if all(t is None for t in ts):
        return None
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
    shapes = [tuple(d.shape) if hasattr(d, 'shape') else () for d in datas]
    t_out = _sum_rules(op, F, ts, (datas, out, *attrs, shapes) if op.variadic
                       else (*datas, out, *attrs, *shapes))
    outs = (result,) if op.nout == 1 else result
    parts = (t_out,) if op.nout == 1 else (t_out or (None,) * op.nout)
    for r, o, part in zip(outs, (out,) if op.nout == 1 else out, parts):
        if part is None or dtype_kind(o.dtype) != "f":
            continue
        if is_batched and isinstance(part, batched):
            set_tangent(r, batched(part.rows(np.shape(o), o.dtype)), level)
        elif foreign:
            xp = backend_of(o).xp
            set_tangent(r, xp.astype(xp.broadcast_to(xp.asarray(part), o.shape), o.dtype,
                                     copy=True), level)
        else:
            set_tangent(r, np.array(np.broadcast_to(part, np.shape(o)), dtype=o.dtype), level)
    return ts


def _sum_rules(op, F, ts, pool):
    """``sum_i J_i t_i`` by the op's JVP rules (one rule for all inputs of a variadic op)."""
    if op.variadic:
        fn, params = _jvp_rule(op, 0)
        return fn(F, ts, *_rule_args(params, pool, op))
    t_out = None
    for i, t in enumerate(ts):
        if t is None:
            continue
        fn, params = _jvp_rule(op, i)
        part = fn(F, t, *_rule_args(params, pool, op))
        t_out = part if t_out is None else _add_tangents(t_out, part)
    return t_out


def _recorded_tangent(op, inputs, attrs, result, level, outer):
    """The output tangent at ``level`` from the rules run with the differentiable ops on
    the input Tensors, while only the ``outer`` levels are active: the tangent is a Tensor
    with a history (recorded when grad mode is on) and its own tangents at the outer
    levels."""
    stored = [stored_tangent(x, level) for x in inputs]
    if all(t is None for t in stored):
        return
    batched = _ns.BATCHING.batched
    if any(_data_of(t).__class__ is batched for t in stored if t is not None):
        raise NotImplementedError(f"forward-mode AD: {op.name} met a batch of tangents "
                                  "(jacfwd) inside a nested or recorded dual level")
    ts = [None if t is None else t if isinstance(t, Tensor) else wrap(t) for t in stored]
    outs = (result,) if op.nout == 1 else tuple(result)
    data = outs[0]._data
    b = backend_of(data)
    F = _ns.differentiable(b, None if b.lazy else getattr(data, "device", None))
    shapes = [tuple(x.shape) if hasattr(x, "shape") else () for x in inputs]
    with _levels(outer):
        t_out = _sum_rules(op, F, ts, (list(inputs), result, *attrs, shapes) if op.variadic
                           else (*inputs, result, *attrs, *shapes))
        parts = (t_out,) if op.nout == 1 else (t_out or (None,) * op.nout)
        for r, part in zip(outs, parts):
            if part is None or dtype_kind(r.dtype) != "f":
                continue
            if not isinstance(part, Tensor):
                part = wrap(b.xp.asarray(part))
            if tuple(part.shape) != tuple(r.shape):
                part = part.expand(r.shape)
            if part.dtype != r.dtype:
                part = part.to(r.dtype)
            set_tangent(r, part, level)


def _data_of(t):
    return t._data if isinstance(t, Tensor) else t


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
