"""The checks PyTorch's gradcheck offers beyond comparing Jacobians: reentrancy
(``nondet_tol``: backward run twice gives the same values), undefined output gradients
(``check_undefined_grad``: a custom Function's backward given no cotangent returns zeros or
None), and batched gradients (``check_batched_grad`` / ``check_batched_forward_grad``: one
pass for a batch of cotangents or tangents agrees with one pass each), and gradient dtypes
(``check_grad_dtypes``). Each returns None,
or the text of its failure."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, wrap
from ..backend import dtype_kind
from . import diagnose as _diag
from ._gradcheck_numerics import _outputs, analytic_jacobian, forward_jacobian
from .batched import jvp_columns, vjp_rows


def reentrant(fn, inputs, diff, nondet_tol):
    """Backward twice on one graph: the Jacobians must agree within ``nondet_tol``."""
    outputs = _outputs(fn, inputs)
    first = analytic_jacobian(outputs, inputs, diff)
    second = analytic_jacobian(outputs, inputs, diff)
    for (j, i), a in first.items():
        diff_max = float(np.max(np.abs(a - second[(j, i)]), initial=0.0))
        if diff_max > nondet_tol:
            return (f"Backward is not reentrant, i.e., running backward with same input and "
                    f"grad_output multiple times gives different values, although analytical "
                    f"gradient matches numerical gradient (output {j}, input {i}: they differ "
                    f"by up to {diff_max:.3g}). The tolerance for nondeterminism was "
                    f"{nondet_tol}.")
    return None


def undefined_grad(fn, inputs):
    """Each output's grad_fn called with no cotangent (None for every output) must give
    None or zeros: PyTorch's "undefined output gradients" (a custom Function with
    ``set_materialize_grads(False)`` gets None and must treat it as zero)."""
    for j, y in enumerate(_outputs(fn, inputs)):
        node = y.grad_fn if isinstance(y, Tensor) else None
        if node is None:
            continue
        try:
            grads = node(*[None] * node.nout)
        except Exception as err:  # the user's backward: report what it raised
            return (f"Expected backward function to handle undefined output grads: "
                    f"{node.name()} (of output {j}) given None for every output gradient "
                    f"raised {type(err).__name__}: {err}")
        for i, g in enumerate(grads):
            if g is not None and np.any(np.asarray(g._data) != 0):
                return (f"Expected backward function to handle undefined output grads: "
                        f"{node.name()} (of output {j}) given None for every output gradient "
                        f"returned a nonzero gradient for input {i}; an undefined gradient "
                        "means zero")
    return None


def grad_dtypes(fn, inputs, diff):
    """Every gradient has its input's dtype."""
    from ._grad import grad

    outputs = [y for y in _outputs(fn, inputs) if isinstance(y, Tensor) and y._requires_grad]
    seeds = [wrap(np.ones(y.shape, dtype=y.dtype)) for y in outputs]
    grads = grad(outputs, [inputs[i] for i in diff], seeds, allow_unused=True)
    for i, g in zip(diff, grads):
        if g is not None and g.dtype != inputs[i].dtype:
            return (f"Gradient has dtype mismatch: the gradient of input {i} has dtype "
                    f"{g.dtype}, the input {inputs[i].dtype}")
    return None


def batched(fn, inputs, diff, atol, rtol, forward):
    """The Jacobian from one batched pass (every one-hot cotangent, or tangent, at once)
    against one pass per row (column)."""
    outputs = _outputs(fn, inputs)
    if forward:
        single = forward_jacobian(fn, inputs, diff)
        for i in diff:
            x = inputs[i]
            n = x._data.size
            tangents = [np.eye(n, dtype=x.dtype).reshape((n,) + tuple(x.shape)) if k == i
                        else np.zeros((n,) + tuple(t.shape), dtype=t.dtype)
                        for k, t in enumerate(inputs) if isinstance(t, Tensor)]
            primals = [t.detach() for t in inputs if isinstance(t, Tensor)]
            _, cols = jvp_columns(lambda *p: fn(*p), primals, tangents)
            for j, c in enumerate(cols):
                if (j, i) in single:
                    got = np.asarray(c, dtype=np.float64).reshape(n, -1).T
                    bad = _mismatch(got, single[(j, i)], atol, rtol, j, i, "forward", "tangents")
                    if bad:
                        return bad
        return None
    single = analytic_jacobian(outputs, inputs, diff)
    for j, y in enumerate(outputs):
        if not isinstance(y, Tensor) or not y._requires_grad or dtype_kind(y.dtype) != "f":
            continue
        m = y._data.size
        rows = vjp_rows([y], [inputs[i] for i in diff],
                        [np.eye(m, dtype=y.dtype).reshape((m,) + tuple(y.shape))])
        for i, r in zip(diff, rows):
            got = np.asarray(r, dtype=np.float64).reshape(m, -1)
            bad = _mismatch(got, single[(j, i)], atol, rtol, j, i, "backward", "cotangents")
            if bad:
                return bad
    return None


def _mismatch(batched_jac, single, atol, rtol, j, i, mode, what):
    ok = _diag.agree(batched_jac, single, atol, rtol)
    if ok.all():
        return None
    err = float(np.nanmax(np.abs(batched_jac - single)))
    return (f"Batched {mode} gradients mismatch for output {j} with respect to input {i}: "
            f"one {mode} pass for a batch of {what} differs from one pass each by up to "
            f"{err:.3g}")
