"""``detect_anomaly``: find where a NaN or Inf is born, in the forward or the backward pass.

Inside ``with detect_anomaly():``

- forward (``check_forward=True``): the first op whose output contains NaN or Inf raises
  :class:`AnomalyError` naming the op, the shapes and dtypes of its inputs, which output,
  and the line of user code that called it;
- backward: every node remembers the user's source line that created it (captured only in
  this mode), and the first node whose VJP gives an input cotangent with NaN or Inf raises,
  naming the node, which input, the shapes and dtypes, and that forward line.

Checking costs a pass over every array, so it is for debugging, not for production runs.
"""

from __future__ import annotations

import os
import traceback
import weakref

import numpy as np

from .. import _dispatch, _engine
from .._state import STATE

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "AnomalyError"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# > 0 while the engine walks a graph in anomaly mode: an op then runs inside a backward pass
# (a custom Function's backward, or a create_graph rule)
IN_BACKWARD = [0]
# node -> (the user's source line that created it, its inputs' shapes and dtypes); filled
# only in anomaly mode
CREATED_AT = weakref.WeakKeyDictionary()


class AnomalyError(RuntimeError):
    """A NaN or Inf appeared. Attributes: ``op`` (node or op name), ``phase`` ("forward" or
    "backward"), ``where`` (the user's source line, as "file:line: code")."""


def is_anomaly_enabled():
    return bool(STATE.anomaly)


class detect_anomaly:
    """Context manager (and decorator) that turns on NaN/Inf provenance checks."""

    def __init__(self, check_forward=True):
        self.check_forward = check_forward

    def __enter__(self):
        self.prev = STATE.anomaly
        STATE.set_modes(anomaly="forward" if self.check_forward else "backward")
        return self

    def __exit__(self, *exc):
        STATE.set_modes(anomaly=self.prev)
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_forward):
                return fn(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        return wrapper


class set_detect_anomaly(detect_anomaly):
    """``set_detect_anomaly(mode, check_forward=True)``: on or off, for a ``with`` block."""

    def __init__(self, mode, check_forward=True):
        super().__init__(check_forward)
        self.mode = mode

    def __enter__(self):
        if self.mode:
            return super().__enter__()
        self.prev = STATE.anomaly
        STATE.set_modes(anomaly=False)
        return self


def user_frame():
    """The innermost stack frame outside chainrule, as "file:line: code"."""
    for frame in reversed(traceback.extract_stack()):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE):
            code = (frame.line or "").strip()
            return f"{frame.filename}:{frame.lineno}: {code}"
    return "<unknown>"


def _bad(value):
    a = np.asarray(value)
    return a.dtype.kind in "fc" and a.size and not np.isfinite(a).all()


def _describe(values, names):
    parts = []
    for name, v in zip(names, values):
        if hasattr(v, "dtype"):
            parts.append(f"{name}: shape {np.shape(v)} {np.asarray(v).dtype}")
        else:
            parts.append(f"{name}: {type(v).__name__} {v!r}")
    return ", ".join(parts)


def _what(value):
    a = np.asarray(value)
    n_nan, n_inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
    return f"{n_nan} NaN and {n_inf} Inf of {a.size} entries"


def _after_op(op, inputs, datas, attrs, out, result):
    """The dispatcher's hook: in anomaly mode, check each op's outputs."""
    if STATE.anomaly:
        first = result if op.nout == 1 else result[0]
        check_forward(op, datas, out, first._grad_fn)


def check_forward(op, datas, out, node):
    """Called after every op in anomaly mode."""
    where = user_frame()
    names = [f"{op.inputs[0]}[{k}]" for k in range(len(datas[0]))] if op.variadic \
        else op.inputs
    inputs = datas[0] if op.variadic else datas
    if node is not None:
        CREATED_AT[node] = (where, _describe(inputs, names))
    if STATE.anomaly != "forward":
        return
    outs = (out,) if op.nout == 1 else out
    phase = "backward" if IN_BACKWARD[0] else "forward"
    during = ("while computing the backward pass (in a custom Function's backward or a "
              "recorded derivative rule)" if IN_BACKWARD[0] else "in the forward pass")
    for i, o in enumerate(outs):
        if _bad(o):
            error = AnomalyError(
                f"{op.name} produced {_what(o)} in output {i} (shape {np.shape(o)}) "
                f"{during}.\n  inputs: {_describe(inputs, names)}\n  at {where}\n"
                "Hint: look at this op's inputs; e.g. log or sqrt of negative numbers, 0/0, "
                "exp overflow."
            )
            error.op, error.phase, error.where = op.name, phase, where
            raise error


def record_function_node(node, args):
    """A custom Function's node made in anomaly mode: remember the user's line (the
    ``apply`` call) and its inputs, for the backward message."""
    tensors = [(f"input {i}", a._data) for i, a in enumerate(args) if hasattr(a, "_data")]
    CREATED_AT[node] = (user_frame(), _describe([t for _, t in tensors],
                                                [n for n, _ in tensors]))


def check_backward(node, input_grads):
    """Called by the engine after every node's VJP in anomaly mode."""
    names = _input_names(node)
    for i, g in enumerate(input_grads or ()):
        if g is not None and _bad(getattr(g, "_data", g)):
            where, inputs = CREATED_AT.get(node, (
                "<not recorded: the node was created outside detect_anomaly()>",
                ", ".join(f"{n}: shape {s}" for n, s in zip(names, node.shapes))))
            error = AnomalyError(
                f"{node.name()} returned {_what(getattr(g, '_data', g))} in the cotangent of "
                f"its input {i} ({names[i]}) in the backward pass.\n  inputs: {inputs}\n"
                f"  the node was created at {where}\n"
                "Hint: the forward values were finite, so the derivative is infinite here; "
                "e.g. sqrt or log at 0, abs/norm at 0, division by a value that is 0."
            )
            error.op, error.phase, error.where = node.name(), "backward", where
            raise error


def _input_names(node):
    plan = getattr(node, "plan", None)
    if plan is None:
        return [f"input {i}" for i in range(len(node.next_functions))]
    op = plan.op
    if op.variadic:
        return [f"{op.inputs[0]}[{i}]" for i in range(len(node.next_functions))]
    return list(op.inputs)


class _InBackward:
    """The engine's hook around a backward pass: ops that run inside it belong to the
    backward pass (for the messages)."""

    def __enter__(self):
        IN_BACKWARD[0] += 1

    def __exit__(self, *exc):
        IN_BACKWARD[0] -= 1
        return False


_dispatch.AFTER_OP.append(_after_op)
_engine.HOOKS.check_node = check_backward
_engine.HOOKS.in_backward = _InBackward
