"""``apply(op, inputs, attrs)``: the one hot path that runs a primitive and records its node.

When no input requires grad, or grad mode is off, it only runs the forward kernel and wraps
the result: no node is built and nothing is saved.
"""

from __future__ import annotations

import numpy as np

from . import _mode
from ._node import OpNode, accumulator
from ._tensor import Tensor

_STATE = _mode.STATE
_new = object.__new__


def _shape_of(x):
    return tuple(x.shape) if isinstance(x, (Tensor, np.ndarray)) else type(x).__name__


def _forward_error(op, inputs, error):
    if op.variadic:
        inputs = inputs[0] if len(inputs) == 1 else inputs
    shapes = ", ".join(f"{n}={_shape_of(x)}" for n, x in zip(_arg_names(op, inputs), inputs))
    return type(error)(f"{op.name}: {error} (got {shapes})")


def _arg_names(op, inputs):
    if op.variadic:
        return [f"{op.inputs[0]}[{i}]" for i in range(len(inputs))]
    return op.inputs


def apply(op, inputs, attrs=()):
    """Run ``op`` on ``inputs`` (Tensors or constants) with non-tensor ``attrs``.

    Returns a Tensor (a tuple of Tensors when the op has several outputs). Raises the
    forward kernel's ValueError/IndexError re-worded to name the op and the input shapes.
    """
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
    try:
        out = op.forward(datas, *attrs) if op.variadic else op.forward(*datas, *attrs)
    except (ValueError, IndexError, TypeError) as e:
        raise _forward_error(op, inputs, e) from None
    if mask and _STATE.enabled:
        return _record(op, inputs, datas, attrs, out, mask)
    if op.nout == 1:
        t = _new(Tensor)
        t._data = out
        t._requires_grad = False
        t._grad_fn = None
        t._grad = None
        t._vc = inputs[0]._vc if op.view else [0]
        t._output_nr = 0
        t._acc = None
        t._extra = None
        return t
    return tuple(_output(o, None, i) for i, o in enumerate(out))


def _output(data, node, nr, vc=None):
    t = _new(Tensor)
    t._data = data
    t._requires_grad = node is not None
    t._grad_fn = node
    t._grad = None
    t._vc = [0] if vc is None else vc
    t._output_nr = nr
    t._acc = None
    t._extra = None
    return t


def _record(op, inputs, datas, attrs, out, mask):
    plan = op.plans.get(mask) or op.plan(mask)
    node = _new(OpNode)
    node.op = op
    node.plan = plan
    node.pre_hooks = None
    edges = []
    shapes = []
    for x, d in zip(inputs, datas):
        if isinstance(x, Tensor) and x._requires_grad:
            edges.append((x._grad_fn or accumulator(x), x._output_nr))
            shapes.append(d.shape)
        else:
            edges.append((None, 0))
            shapes.append(None)
    node.next_functions = tuple(edges)
    node.shapes = shapes
    if op.nout == 1:
        result = _output(out, node, 0, inputs[0]._vc if op.view else None)
        if op.view:
            result._extra = {"view_of": inputs[0]}
    else:
        result = tuple(
            _output(o, node if i in op.out_diff else None, i) for i, o in enumerate(out)
        )
    if plan.needs_saved:
        if op.variadic:
            pool = (datas, out, *attrs, shapes)
        else:
            pool = (*datas, out, *attrs, *shapes)
        node.saved = plan.keep(pool)
        node.checks = _checks(plan, op, inputs, result) if plan.tensor_slots else None
    else:
        node.saved = ()
        node.checks = None
    return result


def _checks(plan, op, inputs, result):
    """(saved index, version counter, version now) for each saved tensor input or output."""
    n = len(op.inputs)
    checks = []
    for k, slot in plan.tensor_slots:
        src = inputs[slot] if slot < n else (result if op.nout == 1 else None)
        if isinstance(src, Tensor):
            checks.append((k, src._vc, src._vc[0]))
    return checks
