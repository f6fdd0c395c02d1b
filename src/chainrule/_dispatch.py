"""``apply(op, inputs, attrs)``: the one hot path that runs a primitive and records its node.

When no input requires grad, or grad mode is off, it only runs the forward kernel and wraps
the result: no node is built and nothing is saved. Unary and binary ops (nearly all calls)
take unrolled paths; the per-op work is a handful of attribute reads and one tuple each for
the edges and the input shapes.
"""

from __future__ import annotations

import numpy as np

from . import _mode
from ._node import MultiOpNode, OpNode, accumulator
from ._tensor import Tensor

_STATE = _mode.STATE
_new = object.__new__
_NO_EDGE = (None, 0)
_ndarray = np.ndarray
_asarray = np.asarray


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else type(x).__name__


def _forward_error(op, inputs, error):
    if op.variadic:
        names = [f"{op.inputs[0]}[{i}]" for i in range(len(inputs))]
    else:
        names = op.inputs
    shapes = ", ".join(f"{n}={_shape_of(x)}" for n, x in zip(names, inputs))
    return type(error)(f"{op.name}: {error} (got {shapes})")


def _output(data, node, nr, vc):
    if data.__class__ is not _ndarray:  # NumPy returns scalars for 0-d results: keep arrays
        data = _asarray(data)
    t = _new(Tensor)
    t._data = data
    t._requires_grad = node is not None
    t._grad_fn = node
    t._grad = None
    t._vc = vc
    t._output_nr = nr
    t._acc = None
    t._extra = None
    return t


def apply(op, inputs, attrs=()):
    """Run ``op`` on ``inputs`` (Tensors or constants) with non-tensor ``attrs``.

    Returns a Tensor (a tuple of Tensors when the op has several outputs). Raises the
    forward kernel's ValueError/IndexError/TypeError re-worded to name the op and the input
    shapes.
    """
    arity = op.arity
    try:
        if arity == 1:
            x = inputs[0]
            if isinstance(x, Tensor):
                d = x._data
                mask = x._requires_grad
            else:
                d, mask = x, 0
            datas = (d,)
            out = op.forward(d, *attrs)
        elif arity == 2:
            a, b = inputs
            mask = 0
            if isinstance(a, Tensor):
                da = a._data
                if a._requires_grad:
                    mask = 1
            else:
                da = a
            if isinstance(b, Tensor):
                db = b._data
                if b._requires_grad:
                    mask |= 2
            else:
                db = b
            datas = (da, db)
            out = op.forward(da, db, *attrs)
        else:
            datas = []
            mask = 0
            bit = 1
            for x in inputs:
                if isinstance(x, Tensor):
                    datas.append(x._data)
                    if x._requires_grad:
                        mask |= bit
                else:
                    datas.append(x)
                bit <<= 1
            out = op.forward(datas, *attrs) if op.variadic else op.forward(*datas, *attrs)
    except (ValueError, IndexError, TypeError) as e:
        raise _forward_error(op, inputs, e) from None
    if mask and _STATE.enabled:
        return _record(op, inputs, datas, attrs, out, int(mask))
    if op.nout == 1:
        return _output(out, None, 0, inputs[0]._vc if op.view else [0])
    return tuple(_output(o, None, i, [0]) for i, o in enumerate(out))


def _edge(x):
    return (x._grad_fn or accumulator(x), x._output_nr)


def _record(op, inputs, datas, attrs, out, mask):
    plan = op.plans.get(mask) or op.plan(mask)
    arity = op.arity
    if arity == 1:
        x = inputs[0]
        if x._extra is not None:
            refresh_view(x)
        edges = ((x._grad_fn or accumulator(x), x._output_nr),)
        shapes = (datas[0].shape,)
    elif arity == 2:
        a, b = inputs
        if mask & 1 and a._extra is not None:
            refresh_view(a)
        if mask & 2 and b._extra is not None:
            refresh_view(b)
        if mask == 3:
            edges = (_edge(a), _edge(b))
            shapes = (datas[0].shape, datas[1].shape)
        elif mask == 1:
            edges = (_edge(a), _NO_EDGE)
            shapes = (datas[0].shape, None)
        else:
            edges = (_NO_EDGE, _edge(b))
            shapes = (None, datas[1].shape)
    else:
        for x in inputs:
            if isinstance(x, Tensor) and x._extra is not None:
                refresh_view(x)
        edges = tuple(_edge(x) if isinstance(x, Tensor) and x._requires_grad else _NO_EDGE
                      for x in inputs)
        shapes = tuple(np.shape(d) if e[0] is not None else None for d, e in zip(datas, edges))
    if op.nout == 1:
        node = _new(OpNode)
        result = _output(out, node, 0, inputs[0]._vc if op.view else [0])
        if op.view:
            _mark_view(result, inputs[0], op, attrs)
    else:
        node = _new(MultiOpNode)
        node.nout = op.nout
        result = tuple(_output(o, node if i in op.out_diff else None, i, [0])
                       for i, o in enumerate(out))
    node.op = op
    node.plan = plan
    node.next_functions = edges
    node.shapes = shapes
    node.pre_hooks = None
    keep = plan.keep
    if keep is None:
        node.saved = ()
        node.checks = None
    else:
        node.saved = keep(datas, out, attrs, shapes)
        node.checks = _checks(plan.checks, inputs, result) if plan.checks else None
    return result


def _checks(slots, inputs, result):
    """(saved index, version counter, version now) for each saved tensor input or output."""
    checks = []
    for k, i in slots:
        src = result if i < 0 else inputs[i]
        if isinstance(src, Tensor):
            checks.append((k, src._vc, src._vc[0]))
    return checks


def _mark_view(view, base, op, attrs):
    """Remember how ``view`` was made from its root tensor, so its history can be rebuilt
    when the root's history is rewritten by an in-place update (see refresh_view)."""
    ex = base._extra
    if ex is not None and "view_of" in ex:
        root, path = ex["view_of"], ex["path"] + ((op, attrs),)
    else:
        root, path = base, ((op, attrs),)
    view._extra = {"view_of": root, "root_fn": root._grad_fn, "path": path}


def refresh_view(x):
    """Rebuild the history of a view whose root was changed in place after it was made.

    The view's data already shows the new values (it shares memory with the root); its
    grad_fn still points into the root's old history. Replaying the view ops on the root
    gives the history PyTorch would give it.
    """
    ex = x._extra
    root = ex.get("view_of")
    if root is None or root._grad_fn is ex["root_fn"]:
        return
    t = root
    for op, attrs in ex["path"]:
        t = apply(op, (t,), attrs)
    x._grad_fn, x._output_nr, x._requires_grad = t._grad_fn, t._output_nr, t._requires_grad
    ex["root_fn"] = root._grad_fn
