"""The inputs and Jacobians validate works with: fresh copies of the example inputs (float
tensors in the checked dtype, and which of them are differentiated), the names of forward's
parameters, the central-difference Jacobians of ``apply``, the Jacobians built from backward
(one one-hot cotangent per output entry, by gradcheck's ``analytic_jacobian``) and a single
vector-Jacobian product through the engine. Arrays in, arrays out; no checks and no text."""

from __future__ import annotations

import inspect

import numpy as np

from .. import _state
from .._tensor import Tensor, wrap
from ._gradcheck_numerics import analytic_jacobian
from .function import Function

#: Jacobians are formed (for the worst error, the summary and teaching) only up to this
#: many input entries and output entries in all.
MAX_JACOBIAN_SIZE = 1000


def _input_names(cls, n):
    try:
        params = list(inspect.signature(cls.forward).parameters.values())
        if cls.setup_context is Function.setup_context:
            params = params[1:]  # forward(ctx, *args); with setup_context, forward(*args)
    except (TypeError, ValueError):
        params = []
    names = []
    for k in range(n):
        p = params[k] if k < len(params) else None
        if p is None or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            names.append(f"input {k}")
        else:
            names.append(p.name)
    return names


def _prepare(example_inputs, dtype):
    """Fresh copies: float tensors (and float arrays) in ``dtype``; which need a grad."""
    raw = []
    for x in example_inputs:
        if isinstance(x, np.ndarray) and x.dtype.kind == "f":
            x = wrap(x)
        raw.append(x)
    floats = [i for i, x in enumerate(raw) if isinstance(x, Tensor) and x.dtype.kind == "f"]
    marked = [i for i in floats if raw[i]._requires_grad]
    diff = marked or floats  # the inputs marked requires_grad, or every float tensor

    def make(requires_grad=True):
        out = []
        for i, x in enumerate(raw):
            if isinstance(x, Tensor):
                t = wrap(np.array(x._data, dtype=dtype if i in floats else x.dtype))
                if i in diff and requires_grad:
                    t.requires_grad_(True)
                out.append(t)
            else:
                out.append(x)
        return tuple(out)

    return make, diff


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _diff_outputs(outputs):
    return [j for j, o in enumerate(outputs) if isinstance(o, Tensor) and o._requires_grad]


def _numerical(cls, inputs, diff, eps):
    """Central-difference Jacobians ``{(j, i): (out size, in size)}`` of ``cls.apply``."""
    result = {}
    with _state.no_grad():
        for i in diff:
            base = np.array(inputs[i]._data, dtype=np.float64)
            flat = base.reshape(-1)
            cols = {}
            for k in range(flat.size):
                vals = []
                for step in (eps, -eps):
                    pert = flat.copy()
                    pert[k] += step
                    args = list(inputs)
                    args[i] = wrap(pert.reshape(base.shape).astype(inputs[i].dtype))
                    vals.append(_as_tuple(cls.apply(*args)))
                for j, (plus, minus) in enumerate(zip(*vals)):
                    if isinstance(plus, Tensor) and plus.dtype.kind == "f":
                        col = (np.asarray(plus._data, dtype=np.float64).reshape(-1)
                               - np.asarray(minus._data, dtype=np.float64).reshape(-1))
                        cols.setdefault(j, np.zeros((col.size, flat.size)))[:, k] = col / (2 * eps)
            for j, J in cols.items():
                result[(j, i)] = J
    return result


def _vjp(cls, make, diff, cotangents):
    """``u^T J`` for each input in ``diff`` through the engine (fresh forward)."""
    from ._grad import grad

    xs = make()
    outs = _as_tuple(cls.apply(*xs))
    js = _diff_outputs(outs)
    gs = grad([outs[j] for j in js], [xs[i] for i in diff], [wrap(cotangents[j]) for j in js],
              allow_unused=True)
    return {i: (np.zeros(xs[i].shape) if g is None else np.asarray(g._data, dtype=np.float64))
            for i, g in zip(diff, gs)}


def _analytic(cls, make, diff):
    """Jacobians from backward, one row per output entry (one-hot cotangents)."""
    xs = make()
    return analytic_jacobian(_as_tuple(cls.apply(*xs)), xs, diff)
