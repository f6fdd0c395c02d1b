"""Batched Jacobian rows and columns: the engine of ``jacrev``, ``jacfwd`` and
``grad(is_grads_batched=True)``.

- :func:`vjp_rows`: rows ``u_b^T J`` for a batch of cotangents, in one backward pass whose
  rules run on the batched namespace (:mod:`chainrule._batched`).
- :func:`jvp_columns`: columns ``J v_b`` for a batch of tangents, in one forward-mode pass.

Where a node cannot take a batch (a custom Function, a hook) the pass raises
:class:`chainrule._engine.Unbatchable`, which names it; only then are the rows (columns)
computed one pass each. Any other error is raised as it is.
"""

from __future__ import annotations

import numpy as np

from .. import _dual
from .._batched import Batched, NotBatchable, in_vmap_evaluation, namespace
from .._dispatch import edge, refresh_view
from .._engine import Unbatchable, run_backward
from .._state import STATE
from .._tensor import Tensor, wrap
from ..backend import dtype_kind
from . import _grad
from . import forward_ad as fwAD
from ._grad import grad

__all__ = ["vjp_rows", "jvp_columns"]


# --- reverse mode: rows of u^T J ------------------------------------------------------------


def _not_inside_vmap():
    """A batch of cotangents (tangents) must not meet vmap's batch of values: inside vmap's
    batched evaluation, vmap goes back to one evaluation per sample instead."""
    if in_vmap_evaluation():
        raise NotBatchable("vmap: a batched Jacobian pass (jacrev, jacfwd) inside vmap's "
                           "batched evaluation")


def _check_batch(arrays, shapes, what):
    B = None
    for i, (a, shape) in enumerate(zip(arrays, shapes)):
        if isinstance(a, Batched):
            rows, logical = a.batch_size, tuple(a.shape)
        else:
            rows, logical = (a.shape[0] if a.ndim else None), tuple(a.shape[1:])
        if rows is None or logical != tuple(shape):
            raise ValueError(f"{what} {i} has shape {np.shape(a)}; expected "
                             f"(B, *{tuple(shape)})")
        if B is None:
            B = rows
        elif rows != B:
            raise ValueError(f"{what}s have different batch sizes ({B} and {rows})")
    return 0 if B is None else B


def _as_rows(value, B, x):
    """A fresh array (B, *x.shape) of x's dtype from a captured cotangent (or None)."""
    shape = tuple(x.shape)
    if value is None:
        return np.zeros((B,) + shape, dtype=x.dtype)
    if isinstance(value, Batched):
        return value.rows(shape, x.dtype)
    return np.array(np.broadcast_to(value, (B,) + shape), dtype=x.dtype)


def vjp_rows(outputs, inputs, cotangents):
    """Rows ``u_b^T J`` for a batch of cotangents, in one backward pass.

    Parameters
    ----------
    outputs : list of Tensor
        Outputs that require grad.
    inputs : list of Tensor
        Tensors requiring grad (leaves or not) to differentiate with respect to.
    cotangents : list of array
        One per output, shape ``(B, *output.shape)``: row ``b`` is the cotangent ``u_b``.

    Returns
    -------
    list of ndarray
        One per input, shape ``(B, *input.shape)`` (zeros where the input is unused).

    The graph is kept (``retain_graph=True``). Where the batched pass cannot run (a custom
    Function or a hook in the graph), or fails, the rows are computed one backward pass
    each, so the result (or the error) is exactly that of ``B`` calls of
    ``chainrule.autograd.grad``.
    """
    _not_inside_vmap()
    outputs, inputs = list(outputs), list(inputs)
    if len(cotangents) != len(outputs):
        raise ValueError(f"vjp_rows: {len(cotangents)} cotangents for {len(outputs)} outputs")
    seeds = [c if isinstance(c, Batched) else None for c in cotangents]
    cots = [np.asarray(c._data if isinstance(c, Tensor) else c, dtype=o.dtype)
            if s is None else s for c, s, o in zip(cotangents, seeds, outputs)]
    B = _check_batch(cots, [o.shape for o in outputs], "cotangent")
    roots = []
    for i, out in enumerate(outputs):
        if not isinstance(out, Tensor) or not out._requires_grad:
            raise RuntimeError(f"vjp_rows: output {i} does not require grad")
        if out._extra is not None:
            refresh_view(out)
        roots.append(edge(out))
    capture, keys = {}, []
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not "
                               "require grad")
        key = edge(t)
        capture.setdefault(key, len(capture))
        keys.append(key)
    if B == 0 or not outputs:
        return [np.zeros((B,) + tuple(t.shape), dtype=t.dtype) for t in inputs]
    try:
        captured = run_backward(roots, [c if isinstance(c, Batched) else Batched(c)
                                        for c in cots], namespace(), retain_graph=True,
                                accumulate=False, capture=capture, batched=True)
    except Unbatchable as exc:  # a custom Function or a hook, which take one cotangent at
        # a time (the error says which): one row a pass gives the answer
        cause = exc
    else:
        return [_as_rows(captured[capture[key]], B, t) for key, t in zip(keys, inputs)]
    return _vjp_rows_one_by_one(outputs, inputs, [np.asarray(c) for c in cots], cause)


def _vjp_rows_one_by_one(outputs, inputs, cots, cause=None):
    """B backward passes; ``cause`` is why the batched pass did not run (for debugging)."""
    rows = [[] for _ in inputs]
    for b in range(cots[0].shape[0]):
        grads = grad(outputs, inputs, [c[b] for c in cots], retain_graph=True,
                     allow_unused=True)
        for acc, g, t in zip(rows, grads, inputs):
            acc.append(np.zeros(t.shape, dtype=t.dtype) if g is None else g._data)
    return [np.stack(acc) for acc in rows]


# --- forward mode: columns of J v -----------------------------------------------------------


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _tangent_rows(o, t, B):
    """(B, *o.shape) array of the tangent ``t`` (Batched, plain or None) of output ``o``."""
    if not isinstance(o, Tensor):
        o = np.asarray(o)
    shape = tuple(o.shape)
    dtype = o.dtype if dtype_kind(o.dtype) == "f" else np.float64
    if t is None:
        return np.zeros((B,) + shape, dtype=dtype)
    if isinstance(t, Batched):
        if t.shape != shape or t.batch_size != B:
            raise ValueError(f"batched tangent of shape {t.data.shape} for an output of shape "
                             f"{shape}")
        return np.array(t.data, dtype=dtype)
    t = np.asarray(t)
    if t.shape != shape:
        raise ValueError(f"tangent of shape {t.shape} for an output of shape {shape}")
    return np.array(np.broadcast_to(t, (B,) + shape), dtype=dtype)


def jvp_columns(fn, primals, tangents):
    """Columns ``J v_b`` for a batch of tangents, in one forward pass.

    Parameters
    ----------
    fn : callable
        ``fn(*primals)`` returning a Tensor or a list/tuple of them (other values have a
        zero tangent).
    primals : list of Tensor or array (float)
    tangents : list of array
        One per primal, shape ``(B, *primal.shape)``: row ``b`` is the tangent ``v_b``.

    Returns
    -------
    (outputs, output_tangents)
        ``outputs`` as ``fn`` returned them (a list; Tensors without their tangent), and a
        list with one array ``(B, *output.shape)`` per output.

    Raises RuntimeError inside an active dual level (nested forward transforms). Where the
    batched pass cannot run (a custom Function), or fails, ``fn`` runs once per column.
    """
    _not_inside_vmap()
    primals = [p if isinstance(p, Tensor) else wrap(np.asarray(p)) for p in primals]
    if len(tangents) != len(primals):
        raise ValueError(f"jvp_columns: {len(tangents)} tangents for {len(primals)} primals")
    tans = [t if isinstance(t, Batched) else
            np.asarray(t._data if isinstance(t, Tensor) else t, dtype=p.dtype)
            for t, p in zip(tangents, primals)]
    B = _check_batch(tans, [p.shape for p in primals], "tangent")
    if STATE.dual_level:
        raise RuntimeError("jvp_columns: a forward-mode dual level is already active; nested "
                           "forward-mode transforms are not supported")
    if B == 0 or not primals:
        outs = _as_list(fn(*primals))
        return outs, [_tangent_rows(o, None, B) for o in outs]
    try:
        with fwAD.dual_level():
            duals = []
            for p, t in zip(primals, tans):
                dual = fwAD.make_dual(p, np.broadcast_to(np.zeros((), p.dtype), p.shape))
                _dual.set_tangent(dual, t if isinstance(t, Batched) else Batched(t))
                duals.append(dual)
            outs = _as_list(fn(*duals))
            rows = [_tangent_rows(o, _dual.tangent_of(o), B) for o in outs]
            outs = [fwAD.unpack_dual(o).primal if isinstance(o, Tensor) else o for o in outs]
    except Unbatchable as exc:  # a custom Function's jvp takes one tangent at a time
        cause = exc
    else:
        return outs, rows
    return _jvp_columns_one_by_one(fn, primals, [np.asarray(t) for t in tans], cause)


def _jvp_columns_one_by_one(fn, primals, tans, cause=None):
    """B forward passes; ``cause`` is why the batched pass did not run (for debugging)."""
    first, columns = None, []
    for b in range(tans[0].shape[0]):
        with fwAD.dual_level():
            outs = _as_list(fn(*(fwAD.make_dual(p, t[b]) for p, t in zip(primals, tans))))
            columns.append([_tangent_rows(o, _dual.tangent_of(o), 1)[0] for o in outs])
            if first is None:
                first = [fwAD.unpack_dual(o).primal if isinstance(o, Tensor) else o
                         for o in outs]
    return first, [np.stack(col) for col in zip(*columns)]


def _batched_grad(outputs, inputs, grads, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: all rows in one batched backward pass."""
    _not_inside_vmap()
    if create_graph:
        raise NotImplementedError("grad(is_grads_batched=True) with create_graph=True is not "
                                  "supported; call grad once per row to differentiate again")
    if any(g is None for g in grads):
        raise RuntimeError("grad(is_grads_batched=True): every grad_outputs entry must be "
                           "given, with a leading batch dimension")
    for i, (out, g) in enumerate(zip(outputs, grads)):
        shape = tuple(np.shape(g._data if isinstance(g, Tensor) else g))
        if shape[1:] != tuple(out.shape):
            raise RuntimeError(
                f"grad(is_grads_batched=True): grad_outputs[{i}] has shape {shape}, but "
                f"output {i} has shape {tuple(out.shape)}: expected (B, *output.shape)")
    rows = vjp_rows(outputs, inputs, list(grads))
    result = []
    for i, (t, r) in enumerate(zip(inputs, rows)):
        used = _reaches(outputs, t)
        if not used and not materialize_grads:
            if not allow_unused:
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) "
                    "appears to not have been used in the graph. Set allow_unused=True if "
                    "this is the desired behavior.")
            result.append(None)
            continue
        result.append(wrap(np.asarray(r, dtype=t.dtype)))
    return tuple(result)


def _reaches(outputs, t):
    """True when ``t``'s node is reachable from the outputs' graph."""
    target = edge(t)[0]
    stack = [edge(o)[0] for o in outputs]
    seen = set()
    while stack:
        node = stack.pop()
        if node is target:
            return True
        if node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return False


_grad.BATCHED.grad = _batched_grad
