"""Check a NumPy forward/backward pair (``layer_forward(*x) -> (out, cache)``,
``layer_backward(dout, cache) -> dx``) against central differences, without porting it.

The pair is wrapped in a :class:`~chainrule.autograd.Function` and checked by
:func:`~chainrule.autograd.gradcheck`, so the report and its diagnosis (factor, sign,
transpose, swapped inputs, ...) are gradcheck's. One check is added before: a backward that
returns the same gradients for two different random ``dout`` does not depend on
``grad_output``, a mistake that checking with ``dout = ones`` would hide.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, wrap
from .diagnose import Finding
from .function import Function
from .gradcheck import GradcheckError, gradcheck


def _array(x):
    return np.asarray(x._data if isinstance(x, Tensor) else x)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _wrap_pair(forward, backward, n_inputs, checked, cache):
    """A Function running the pair; ``checked`` are the indices of the float inputs."""

    class Pair(Function):
        @staticmethod
        def forward(ctx, *xs):
            arrays = [_array(x) for x in xs]
            result = forward(*arrays)
            if cache:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise TypeError(f"{forward.__name__} must return (out, cache) (pass "
                                    "cache=False for a forward that returns only out)")
                out, ctx.cache = result
            else:
                out, ctx.cache = result, arrays
            ctx.several = isinstance(out, (tuple, list))
            outs = tuple(wrap(np.array(o, dtype=float)) for o in _as_tuple(out))
            return outs if ctx.several else outs[0]

        @staticmethod
        def backward(ctx, *grads):
            douts = [None if g is None else _array(g) for g in grads]
            dout = tuple(douts) if ctx.several else douts[0]
            result = backward(dout, ctx.cache) if cache else backward(dout, *ctx.cache)
            result = _as_tuple(result) if n_inputs > 1 else (result,)
            if len(result) != n_inputs:
                raise RuntimeError(f"{backward.__name__} returned {len(result)} gradients for "
                                   f"the {n_inputs} inputs of {forward.__name__}")
            return tuple(wrap(np.array(g, dtype=float)) if i in checked and g is not None
                         else None for i, g in enumerate(result))

    Pair.__name__ = f"{forward.__name__}/{backward.__name__}"
    return Pair


def _ignores_dout(pair, inputs, checked):
    """True when backward gives the same (nonzero) gradients for two random douts."""
    rng = np.random.default_rng(12345)
    results = []
    for _ in range(2):
        xs = [wrap(np.array(x._data), requires_grad=True) if i in checked else x
              for i, x in enumerate(inputs)]
        outs = _as_tuple(pair.apply(*xs))
        outs = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
        loss = sum((o * wrap(rng.standard_normal(o.shape))).sum() for o in outs)
        loss.backward()  # loss = sum_k <u_k, out_k>: each output receives dout = u_k
        results.append([np.zeros(1) if xs[i].grad is None else np.asarray(xs[i].grad._data)
                        for i in sorted(checked)])
    same = all(np.allclose(a, b) for a, b in zip(*results))
    nonzero = any(np.any(a != 0) for a in results[0])
    return same and nonzero


def gradcheck_pair(forward, backward, inputs, *, eps=None, atol=None, rtol=None,
                   raise_exception=True, cache=True, return_report=False):
    """Check a hand-written NumPy ``forward``/``backward`` pair against central differences.

    Parameters
    ----------
    forward : callable
        ``forward(*arrays) -> (out, cache)`` (``out`` an array or a tuple of arrays); with
        ``cache=False``, ``forward(*arrays) -> out``.
    backward : callable
        ``backward(dout, cache)`` (``cache=False``: ``backward(dout, *arrays)``) returning
        one gradient per input (a bare array for one input; ``None`` for an input that
        needs none). ``dout`` has ``out``'s shape (a tuple for several outputs).
    inputs : sequence of array_like or Tensor
        The point to check at. Float inputs are checked (in float64: float32 inputs are
        converted, so round-off is not reported as a bug); integer inputs (labels,
        indices) are passed as they are.
    eps, atol, rtol : float, optional
        gradcheck's step and tolerances (defaults 1e-6, 1e-5, 1e-3).
    raise_exception : bool
        Raise :class:`GradcheckError` on a mismatch (default), or return False.
    cache : bool
        Whether ``forward`` returns ``(out, cache)``.
    return_report : bool
        Return gradcheck's :class:`GradcheckReport` instead of a bool.

    Returns
    -------
    bool or GradcheckReport
        True when backward's vector-Jacobian products match the numerical Jacobian for
        every (output, input) pair (one-hot cotangents, so every entry of ``dout`` is used).

    Raises
    ------
    GradcheckError
        With gradcheck's report and diagnosis; "backward ignores grad_output" when backward
        returns the same gradients for two different random ``dout``.

    Examples
    --------
    >>> import numpy as np
    >>> from chainrule.autograd import gradcheck_pair
    >>> def matmul_forward(A, B):
    ...     return A @ B, (A, B)
    >>> def matmul_backward(dout, cache):
    ...     A, B = cache
    ...     return dout @ B.T, A.T @ dout
    >>> rng = np.random.default_rng(0)
    >>> gradcheck_pair(matmul_forward, matmul_backward, [rng.standard_normal((2, 3)),
    ...                                                  rng.standard_normal((3, 4))])
    True
    """
    arrays = [_array(x) for x in inputs]
    checked = {i for i, a in enumerate(arrays) if a.dtype.kind == "f"}
    if not checked:
        raise ValueError("gradcheck_pair: no float input to check (integer inputs are passed "
                         "to the pair as constants)")
    tensors = [wrap(a.astype(np.float64), requires_grad=True) if i in checked else a
               for i, a in enumerate(arrays)]
    pair = _wrap_pair(forward, backward, len(arrays), checked, cache)
    options = {k: v for k, v in (("eps", eps), ("atol", atol), ("rtol", rtol)) if v is not None}
    report = gradcheck(pair.apply, tuple(tensors), raise_exception=False, return_report=True,
                       **options)
    if not report.passed and _ignores_dout(pair, tensors, checked):
        report.findings.insert(0, (None, None, Finding(
            "backward ignores grad_output",
            f"{backward.__name__} returns the same gradients for two different random dout: "
            "the backward does not depend on grad_output. It must return the vector-Jacobian "
            "product dout^T J (e.g. dout @ B.T for A @ B), not the derivative of out itself "
            "(a check with dout = ones would hide this)")))
    if report.passed or not raise_exception:
        return report if return_report else report.passed
    error = GradcheckError(str(report))
    first = report.failing[0]
    error.output_index, error.input_index = first.output_index, first.input_index
    error.analytic, error.numerical = first.analytic, first.numerical
    error.report, error.diagnosis = report, report.diagnosis
    raise error
