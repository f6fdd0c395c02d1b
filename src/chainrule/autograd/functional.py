"""``chainrule.autograd.functional``, as ``torch.autograd.functional``: jacobian, hessian,
vjp, jvp, hvp, vhp over a function of a tensor or a tuple of tensors.

These are thin layers over :mod:`chainrule.func` with PyTorch's calling conventions
(``inputs`` a tensor or tuple, ``v`` the vector, results as tuples when inputs are tuples).
"""

from __future__ import annotations

from .. import func as _func
from .._creation import ones_like
from .._state import enable_grad
from .._tensor import Tensor
from ._grad import grad

__all__ = ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]


def _inputs(inputs):
    if isinstance(inputs, tuple):
        return inputs, False
    return (inputs,), True


def _default_v(xs, v, single, name):
    """``v``, or ones beside a single one-element input (PyTorch's default for jvp, hvp,
    vhp); RuntimeError otherwise (None would reach the transforms as a NaN tangent)."""
    if v is not None:
        return v
    if len(xs) != 1 or not isinstance(xs[0], Tensor) or xs[0].numel() != 1:
        raise RuntimeError(f"{name}: the vector v can only be None if the input to the user-"
                           "provided function is a single Tensor with a single element")
    return ones_like(xs[0]) if single else (ones_like(xs[0]),)


def _single(values, single):
    return values[0] if single else values


def _graph_inputs(xs, create_graph):
    """The inputs as the transforms should see them, as PyTorch's ``_grad_preprocess``:
    with ``create_graph`` each requires grad (an input that did not becomes a new leaf, so
    the results have a graph); without it, detached (the results have none)."""
    out = []
    for x in xs:
        if not isinstance(x, Tensor):
            out.append(x)
        elif create_graph:
            out.append(x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True))
        else:
            out.append(x.detach())
    return tuple(out)


def _results(values, create_graph):
    """Without ``create_graph`` the results are detached, also from tensors ``func`` closed
    over (PyTorch's ``_grad_postprocess``)."""
    if create_graph:
        return values
    if isinstance(values, Tensor):
        return values.detach()
    if isinstance(values, (tuple, list)):
        return type(values)(_results(v, False) for v in values)
    return values


def _check_strict(func, xs, strict, what="output"):
    """``strict=True`` (as torch.autograd.functional): an input that no output depends on
    raises, instead of getting a zero derivative."""
    if not strict:
        return

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


def _strict_leaves(func, xs):
    """``(leaves, outputs)``: ``func`` evaluated on fresh leaves requiring grad, each output
    checked to require grad (as torch.autograd.functional's strict mode)."""
    leaves = [x.detach().requires_grad_(True) if isinstance(x, Tensor) else x for x in xs]
    with enable_grad():
        out = func(*leaves)
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        if not (isinstance(o, Tensor) and o.requires_grad):
            raise RuntimeError(f"Output {i} of the user-provided function does not require "
                               "gradients. The outputs must be computed in a differentiable "
                               "manner from the input when running in strict mode.")
    return leaves, outs


def _strict_blocks(outs, leaves, create_graph):
    """Strict mode's check of every (output, input) block of a Jacobian, as PyTorch's
    reverse-mode ``jacobian``: an output independent of an input raises; with
    ``create_graph`` so does a block that does not depend on the inputs (a linear map)."""
    diff = [x for x in leaves if isinstance(x, Tensor)]
    with enable_grad():
        for i, o in enumerate(outs):
            got = grad(o, diff, ones_like(o), retain_graph=True, create_graph=create_graph,
                       allow_unused=True)
            for j, g in enumerate(got):
                if g is None:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {j}. This is not allowed in "
                                       "strict mode.")
                if create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is "
                                       f"independent of input {i}. This is not allowed in "
                                       "strict mode when create_graph=True.")


def _check_strict_jacobian(func, xs, strict, create_graph, vectorize, strategy):
    """PyTorch's errors of ``jacobian(..., strict=True)`` (and of the combinations it does
    not support), raised before any work."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either '
                'set `strict=False` or `strategy="reverse-mode"`.')
    if not strict:
        return
    leaves, outs = _strict_leaves(func, xs)
    if vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    _strict_blocks(outs, leaves, create_graph)


def _check_strict_hessian(func, xs, strict, create_graph, vectorize, strategy):
    """PyTorch's errors of ``hessian(..., strict=True)``: the gradient must depend on every
    input (a function linear in an input raises), then the Jacobian of the gradient is
    checked as ``jacobian``'s strict mode does."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`create_graph=False` or `strategy="reverse-mode"`.')
    if not strict:
        return
    leaves, outs = _strict_leaves(func, xs)
    diff = [x for x in leaves if isinstance(x, Tensor)]
    with enable_grad():
        g = grad(outs[0], diff, create_graph=True, allow_unused=True)
    for i, gi in enumerate(g):
        if gi is None or not gi.requires_grad:
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
    if vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                           "`vectorized=True` are not supported together. Please either set "
                           "`strict=False` or `vectorize=False`.")
    if strategy == "forward-mode":
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.')
    _strict_blocks(tuple(g), leaves, create_graph)


def _scalar(func, name, squeeze=False):
    """``func`` checked to return one Tensor of one element (PyTorch's rule for hessian,
    hvp and vhp; a Jacobian of the Jacobian is ``chainrule.func.hessian``'s); with
    ``squeeze`` that element as a 0-d tensor (hessian's shape is then ``I + I``)."""
    def checked(*args):
        out = func(*args)
        if not isinstance(out, Tensor):
            raise RuntimeError(f"The function given to {name} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {name} should "
                               f"contain a single element (got shape {tuple(out.shape)})")
        return out.reshape(()) if squeeze else out
    return checked


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output shape ``O`` and input shape ``I``,
    shape ``O + I`` (a tuple per input, and per output, when they are tuples).
    ``strategy="forward-mode"`` uses jacfwd. ``strict=True`` raises for an input no output
    depends on. ``create_graph=True`` gives a Jacobian that can be differentiated again;
    ``vectorize`` is accepted for compatibility (rows are always computed in one batched
    pass)."""
    xs, single = _inputs(inputs)
    _check_strict_jacobian(func, xs, strict, create_graph, vectorize, strategy)
    xs = _graph_inputs(xs, create_graph)
    transform = _func.jacfwd if strategy == "forward-mode" else _func.jacrev
    jac = _results(transform(func, argnums=tuple(range(len(xs))))(*xs), create_graph)
    if isinstance(jac, tuple) and jac and isinstance(jac[0], tuple):
        return tuple(_single(j, single) for j in jac)
    return _single(jac, single)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func``: shape ``I + I`` (blocks ``(Ii, Ij)`` for tuples).
    ``strict=True`` raises as PyTorch's: for a gradient independent of the inputs, or a
    zero block ``(Ii, Ij)`` of the Hessian."""
    xs, single = _inputs(inputs)
    _check_strict_hessian(func, xs, strict, create_graph, vectorize, outer_jacobian_strategy)
    xs = _graph_inputs(xs, create_graph)
    nums = tuple(range(len(xs)))
    # the outer Jacobian as PyTorch's strategy says: reverse mode (the default, by double
    # backward: no jvp rule needed, as a custom Function without one) or forward mode
    outer = _func.jacrev if outer_jacobian_strategy == "reverse-mode" else _func.jacfwd
    gradient = _func.jacrev(_scalar(func, "hessian", squeeze=True), argnums=nums)
    h = _results(outer(gradient, argnums=nums)(*xs), create_graph)
    if single:
        return h[0][0]
    return tuple(tuple(row) for row in h)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``; ``v`` may be omitted for a scalar output."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    out, vjp_fn = _func.vjp(func, *_graph_inputs(xs, create_graph))
    if v is None:  # a sum of the outputs' VJPs would hide a forgotten v
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        v = ones_like(out)
    return _results(out, create_graph), _results(_single(vjp_fn(v), single), create_graph)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)`` by forward mode."""
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    v = _default_v(xs, v, single, "jvp")
    vs = (v,) if single else tuple(v)
    return _results(_func.jvp(func, _graph_inputs(xs, create_graph), vs), create_graph)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a scalar ``func`` (reverse-over-reverse, as PyTorch's
    double-backward trick); RuntimeError for a ``func`` that does not return one element."""
    return _hvp(func, inputs, v, create_graph, strict, "hvp")


def _hvp(func, inputs, v, create_graph, strict, name):
    xs, single = _inputs(inputs)
    _check_strict(func, xs, strict)
    v = _default_v(xs, v, single, name)
    vs = (v,) if single else tuple(v)
    xs = _graph_inputs(xs, create_graph)
    value = _scalar(func, name)(*xs)
    # H v = (v^T H)^T by double backward, as PyTorch's (no jvp rule needed)
    _, vjp_fn = _func.vjp(_func.grad(func, argnums=tuple(range(len(xs)))), *xs)
    hv = vjp_fn(tuple(vs))
    return _results(value, create_graph), _results(_single(hv, single), create_graph)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)``; equal to ``hvp`` since H is symmetric."""
    return _hvp(func, inputs, v, create_graph, strict, "vhp")
