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


def _check_strict(func, xs, strict, what="output"):
    """``strict=True`` (as torch.autograd.functional): an input that no output depends on
    raises, instead of getting a zero derivative."""
    if not strict:
        return
    from .._state import enable_grad
    from ._grad import grad

    leaves = [x.detach().requires_grad_(True) if isinstance(x, Tensor) else x for x in xs]
    with enable_grad():
        out = func(*leaves)
    outs = [o for o in (out if isinstance(out, tuple) else (out,))
            if isinstance(o, Tensor) and o.requires_grad]
    diff = [x for x in leaves if isinstance(x, Tensor)]
    got = grad(outs, diff, [o.detach() * 0 + 1 for o in outs], allow_unused=True) \
        if outs else [None] * len(diff)
    for i, g in enumerate(got):
        if g is None:
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output shape ``O`` and input shape ``I``,
    shape ``O + I`` (a tuple per input, and per output, when they are tuples).
    ``strategy="forward-mode"`` uses jacfwd. ``strict=True`` raises for an input no output
    depends on. ``create_graph`` and ``vectorize`` are accepted for compatibility (rows are
    always computed in one batched pass)."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    transform = _func.jacfwd if strategy == "forward-mode" else _func.jacrev
    jac = transform(func, argnums=tuple(range(len(xs))))(*xs)
    if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):
        return tuple(_single(j, single) for j in jac)
    return _single(jac, single)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="forward-mode"):
    """The Hessian of a scalar ``func``: shape ``I + I`` (blocks ``(Ii, Ij)`` for tuples)."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    h = _func.hessian(func, argnums=tuple(range(len(xs))))(*xs)
    if single:
        return h[0][0]
    return tuple(tuple(row) for row in h)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a scalar output."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    out, vjp_fn = _func.vjp(func, *xs)
    if v is None:
        from .._creation import ones_like

        v = tuple(ones_like(o) for o in out) if isinstance(out, tuple) else ones_like(out)
    return out, _single(vjp_fn(v), single)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by forward mode."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    vs = (v,) if single else tuple(v)
    return _func.jvp(func, xs, vs)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func`` (forward-over-reverse)."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    vs = (v,) if single else tuple(v)
    value = func(*[x.detach() if isinstance(x, Tensor) else x for x in xs])
    _, hv = _func.hvp(func, xs, vs)
    return value.detach(), _single(hv, single)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``; equal to ``hvp`` since H is symmetric."""
    return hvp(func, inputs, v, create_graph, strict)
