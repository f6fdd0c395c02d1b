"""``chainrule.autograd.functional``, as ``torch.autograd.functional``: jacobian, hessian,
vjp, jvp, hvp, vhp over a function of a tensor or a tuple of tensors.

These are thin layers over :mod:`chainrule.func` with PyTorch's calling conventions
(``inputs`` a tensor or tuple, ``v`` the vector, results as tuples when inputs are tuples).
"""

from __future__ import annotations

from .. import func as _func
from .._tensor import Tensor

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _inputs(inputs):
    if isinstance(inputs, tuple):
        return inputs, False
    return (inputs,), True


def _single(values, single):
    return values[0] if single else values


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output shape ``O`` and input shape ``I``,
    shape ``O + I`` (a tuple per input, and per output, when they are tuples).
    ``strategy="forward-mode"`` uses jacfwd. ``create_graph``, ``strict`` and
    ``vectorize`` are accepted for compatibility (rows are always computed in one batched
    pass)."""
    xs, single = _inputs(inputs)
    transform = _func.jacfwd if strategy == "forward-mode" else _func.jacrev
    jac = transform(func, argnums=tuple(range(len(xs))))(*xs)
    if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):
        return tuple(_single(j, single) for j in jac)
    return _single(jac, single)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="forward-mode"):
    """The Hessian of a scalar ``func``: shape ``I + I`` (blocks ``(Ii, Ij)`` for tuples)."""
    xs, single = _inputs(inputs)
    h = _func.hessian(func, argnums=tuple(range(len(xs))))(*xs)
    if single:
        return h[0][0]
    return tuple(tuple(row) for row in h)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a scalar output."""
    xs, single = _inputs(inputs)
    out, vjp_fn = _func.vjp(func, *xs)
    if v is None:
        from .._creation import ones_like

        v = tuple(ones_like(o) for o in out) if isinstance(out, tuple) else ones_like(out)
    return out, _single(vjp_fn(v), single)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by forward mode."""
    xs, single = _inputs(inputs)
    vs = (v,) if single else tuple(v)
    return _func.jvp(func, xs, vs)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func`` (forward-over-reverse)."""
    xs, single = _inputs(inputs)
    vs = (v,) if single else tuple(v)
    value = func(*[x.detach() if isinstance(x, Tensor) else x for x in xs])
    _, hv = _func.hvp(func, xs, vs)
    return value.detach(), _single(hv, single)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``; equal to ``hvp`` since H is symmetric."""
    return hvp(func, inputs, v, create_graph, strict)
