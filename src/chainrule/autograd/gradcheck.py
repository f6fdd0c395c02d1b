"""``gradcheck``: compare the analytic Jacobian (from VJPs) with central differences.

For ``y = fn(*inputs)`` and every pair (output ``j``, differentiable input ``i``):

- numerical: column ``k`` of ``J_ji`` is ``(y_j(x_i + eps e_k) - y_j(x_i - eps e_k)) / 2 eps``;
- analytic: row ``r`` of ``J_ji`` is the VJP of the one-hot cotangent ``e_r`` of ``y_j``.

They agree when ``|analytic - numerical| <= atol + rtol |numerical|`` entrywise.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _mode
from .._tensor import Tensor, wrap


class GradcheckError(RuntimeError):
    """Raised by gradcheck when an analytic Jacobian disagrees with the numerical one.

    Attributes: ``output_index``, ``input_index``, ``analytic``, ``numerical`` (the
    Jacobians, shape (output size, input size)) and ``worst`` ((output index, input index,
    analytic, numerical) of the largest error).
    """


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(fn, inputs):
    return tuple(o for o in _tuple(fn(*inputs)))


def numerical_jacobian(fn, inputs, i, eps):
    """Central-difference Jacobians of every output with respect to input ``i``.

    Returns a list, per output, of arrays of shape (output size, input size). The user's
    arrays are never modified: each evaluation gets a perturbed copy.
    """
    x = inputs[i]
    base = np.array(x._data, dtype=x.dtype)
    flat = base.reshape(-1)
    columns = None
    with _mode.no_grad():
        for k in range(flat.size):
            vals = []
            for step in (eps, -eps):
                pert = flat.copy()
                pert[k] += step
                args = list(inputs)
                args[i] = wrap(pert.reshape(base.shape))
                vals.append([np.asarray(o._data, dtype=np.float64).reshape(-1) if
                             isinstance(o, Tensor) else None for o in _outputs(fn, args)])
            if columns is None:
                columns = [None if v is None else np.zeros((v.size, flat.size))
                           for v in vals[0]]
            for j, (plus, minus) in enumerate(zip(*vals)):
                if plus is not None:
                    columns[j][:, k] = (plus - minus) / (2 * eps)
    return columns


def analytic_jacobian(outputs, inputs, diff_inputs):
    """Jacobians from VJPs: one backward pass per output entry."""
    from . import grad

    result = {}
    for j, y in enumerate(outputs):
        if not isinstance(y, Tensor) or not y._requires_grad:
            continue
        rows = {i: np.zeros((y._data.size, inputs[i]._data.size)) for i in diff_inputs}
        for r in range(y._data.size):
            seed = np.zeros(y._data.size, dtype=y.dtype)
            seed[r] = 1
            grads = grad(y, [inputs[i] for i in diff_inputs], seed.reshape(y.shape),
                         retain_graph=True, allow_unused=True)
            for i, g in zip(diff_inputs, grads):
                if g is not None:
                    rows[i][r] = np.asarray(g._data, dtype=np.float64).reshape(-1)
        for i in diff_inputs:
            result[(j, i)] = rows[i]
    return result


def _describe(j, i, analytic, numerical, atol, rtol, out_shape, in_shape):
    err = np.abs(analytic - numerical)
    tol = atol + rtol * np.abs(numerical)
    r, c = np.unravel_index(np.argmax(err - tol), err.shape)
    out_idx = np.unravel_index(r, out_shape) if out_shape else ()
    in_idx = np.unravel_index(c, in_shape) if in_shape else ()
    lines = [
        f"Jacobian mismatch for output {j} with respect to input {i}:",
        f"  largest error {err[r, c]:.3g} at output index {tuple(int(v) for v in out_idx)}, "
        f"input index {tuple(int(v) for v in in_idx)}: analytic {analytic[r, c]:.6g}, "
        f"numerical {numerical[r, c]:.6g}",
        f"  {int(np.sum(err > tol))} of {err.size} entries exceed atol={atol:g} + "
        f"rtol={rtol:g} * |numerical|",
    ]
    if analytic.size <= 100:
        with np.printoptions(precision=4, suppress=True, linewidth=100):
            lines += ["  analytic (rows: output entries, columns: input entries):",
                      "  " + str(analytic + 0.0).replace("\n", "\n  "),  # + 0.0: no "-0."
                      "  numerical:", "  " + str(numerical + 0.0).replace("\n", "\n  ")]
    worst = (tuple(int(v) for v in out_idx), tuple(int(v) for v in in_idx),
             float(analytic[r, c]), float(numerical[r, c]))
    return "\n".join(lines), worst


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Check the gradients of ``fn`` at ``inputs`` against central finite differences.

    Parameters
    ----------
    fn : callable
        ``fn(*inputs) -> Tensor or tuple of Tensors``.
    inputs : Tensor or tuple
        Inputs; those with ``requires_grad=True`` are checked (use float64: float32 has too
        little precision for finite differences, and a warning says so).
    eps, atol, rtol : float
        Step of the central difference and the tolerances of the comparison.
    raise_exception : bool
        On failure raise :class:`GradcheckError` (default) or return False.

    Returns
    -------
    bool
        True when every analytic Jacobian matches.

    Raises
    ------
    GradcheckError
        Naming the output and input, the largest error and where it is (as indices into the
        output and the input), and both Jacobians when they are small.
    """
    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    if not diff:
        raise ValueError("gradcheck: no input requires grad; set requires_grad=True on the "
                         "inputs to check")
    for i in diff:
        if inputs[i].dtype != np.float64:
            warnings.warn(
                f"gradcheck: input {i} has dtype {inputs[i].dtype}; finite differences need "
                "float64 to be accurate (use x.double())", stacklevel=2)
    outputs = _outputs(fn, inputs)
    analytic = analytic_jacobian(outputs, inputs, diff)
    for i in diff:
        numerical = numerical_jacobian(fn, inputs, i, eps)
        for j, y in enumerate(outputs):
            if (j, i) not in analytic:
                continue
            a, n = analytic[(j, i)], numerical[j]
            if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=False):
                message, worst = _describe(j, i, a, n, atol, rtol, y.shape, inputs[i].shape)
                if not raise_exception:
                    return False
                error = GradcheckError(message)
                error.output_index, error.input_index = j, i
                error.analytic, error.numerical, error.worst = a, n, worst
                raise error
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """Check second derivatives: gradcheck of the map (inputs, u) -> VJP(u) of ``fn``.

    The VJP is computed with ``create_graph=True``, so its analytic Jacobian comes from
    differentiating the backward pass itself, and is compared with central differences of
    the VJP. ``grad_outputs`` (one per output, default random normal) are the cotangents
    ``u``; they are checked as inputs too (the VJP is linear in them).

    Returns True, or raises :class:`GradcheckError` (returns False with
    ``raise_exception=False``) naming the failing pair as gradcheck does; the input indices
    count the original inputs first, then the grad_outputs.
    """
    from . import grad

    inputs = _tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._requires_grad]
    outputs = [o for o in _outputs(fn, inputs) if isinstance(o, Tensor) and o._requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = [wrap(rng.standard_normal(o.shape).astype(o.dtype)) for o in outputs]
    cotangents = [wrap(np.array(u._data if isinstance(u, Tensor) else u, dtype=np.float64))
                  for u in _tuple(grad_outputs)]
    for u in cotangents:
        u.requires_grad_(True)
    n = len(inputs)

    def vjp(*args):
        # The numerical Jacobian calls this under no_grad with perturbed copies: make them
        # leaves that require grad, so the inner VJP exists.
        with _mode.enable_grad():
            xs = [x.detach().requires_grad_(True) if i in diff and not x._requires_grad else x
                  for i, x in enumerate(args[:n])]
            us = args[n:]
            ys = [o for o in _outputs(fn, xs) if isinstance(o, Tensor) and o._requires_grad]
            gs = grad(ys, [xs[i] for i in diff], us, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(vjp, tuple(inputs) + tuple(cotangents), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
