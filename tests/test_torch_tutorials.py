"""PyTorch's custom-Function documentation and its double-backward and forward-mode
tutorials, rewritten in our own words and run on chainrule, each compared with values
derived by hand (and with torch where it is installed)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import Function, gradcheck, gradgradcheck
from chainrule.autograd import forward_ad as fwAD

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None

RNG = np.random.default_rng(11)


def leaf(a):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


# --- "Extending torch.autograd": a linear layer as a Function -----------------------------


class Linear(Function):
    """y = x W^T + b, forward without ctx and setup_context, as in the extending notes."""

    @staticmethod
    def forward(x, weight, bias=None):
        out = x @ weight.t()
        return out if bias is None else out + bias

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, weight, bias = inputs
        ctx.save_for_backward(x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        x, weight, bias = ctx.saved_tensors
        gx = g @ weight if ctx.needs_input_grad[0] else None
        gw = g.t() @ x if ctx.needs_input_grad[1] else None
        gb = g.sum(0) if bias is not None and ctx.needs_input_grad[2] else None
        return gx, gw, gb


def test_linear_function_of_the_extending_notes():
    X, W, b = RNG.standard_normal((5, 3)), RNG.standard_normal((4, 3)), RNG.standard_normal(4)
    x, w, bias = leaf(X), leaf(W), leaf(b)
    G = RNG.standard_normal((5, 4))
    Linear.apply(x, w, bias).backward(cr.tensor(G))
    # y = X W^T + b: grad_X = G W, grad_W = G^T X, grad_b = sum over rows of G
    np.testing.assert_allclose(x.grad.numpy(), G @ W)
    np.testing.assert_allclose(w.grad.numpy(), G.T @ X)
    np.testing.assert_allclose(bias.grad.numpy(), G.sum(0))
    assert gradcheck(Linear.apply, (leaf(X), leaf(W), leaf(b)))
    assert gradgradcheck(Linear.apply, (leaf(X), leaf(W), leaf(b)))
    x2 = leaf(X)  # a weight that needs no grad gets none
    Linear.apply(x2, cr.tensor(W), None).sum().backward()
    np.testing.assert_allclose(x2.grad.numpy(), np.ones((5, 4)) @ W)


# --- "Double backward with custom functions" ----------------------------------------------


class Cube(Function):
    """x^3 with a backward written in chainrule ops, so it can be differentiated again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


class ExpOut(Function):
    """exp(x), saving its output: backward returns g * out, and out's history makes the
    second derivative right."""

    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


class SinhWithIntermediates(Function):
    """sinh(x) = (e^x - e^-x) / 2, returning e^x and e^-x as outputs too, so that a
    backward using them can be differentiated again (the tutorial's pattern)."""

    @staticmethod
    def forward(ctx, x):
        ex, enx = x.exp(), (-x).exp()
        ctx.save_for_backward(ex, enx)
        return (ex - enx) / 2, ex, enx

    @staticmethod
    def backward(ctx, g, g_ex, g_enx):
        ex, enx = ctx.saved_tensors
        return g * (ex + enx) / 2 + g_ex * ex - g_enx * enx


def sinh(x):
    out, _, _ = SinhWithIntermediates.apply(x)
    return out


@pytest.mark.parametrize("fn, d1, d2, torch_fn", [
    (Cube.apply, lambda a: 3 * a ** 2, lambda a: 6 * a, lambda t: t ** 3),
    (ExpOut.apply, np.exp, np.exp, lambda t: t.exp()),
    (sinh, np.cosh, np.sinh, lambda t: t.sinh()),
], ids=["cube", "exp_saved_output", "sinh_intermediates"])
def test_double_backward_of_the_tutorial_functions(fn, d1, d2, torch_fn):
    a = np.array([0.3, -1.1, 2.0])
    x = leaf(a)
    (g,) = cr.autograd.grad(fn(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), d1(a))
    (h,) = cr.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), d2(a))
    assert gradcheck(fn, (leaf(a),)) and gradgradcheck(fn, (leaf(a),))
    if torch is not None:  # torch's built-in function, differentiated twice
        tx = torch.tensor(a, requires_grad=True)
        (tg,) = torch.autograd.grad(torch_fn(tx).sum(), tx, create_graph=True)
        (th,) = torch.autograd.grad(tg.sum(), tx)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())
        np.testing.assert_allclose(h.numpy(), th.numpy())


# --- "Forward-mode automatic differentiation" ---------------------------------------------


def test_forward_mode_tutorial_basics():
    primal, tangent = RNG.standard_normal(10), RNG.standard_normal(10)

    def fn(x, y):
        return x ** 2 + y ** 2

    with fwAD.dual_level():
        t = cr.tensor(tangent)
        dual = fwAD.make_dual(cr.tensor(primal), t)
        assert fwAD.unpack_dual(dual).tangent is t  # no copy was needed
        out = fn(dual, cr.tensor(primal))  # a plain tensor has a zero tangent
        jvp = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(jvp.numpy(), 2 * primal * tangent)  # d(x^2) = 2x dx


class ExpJvp(Function):
    """The tutorial's Function with forward mode: jvp reads what save_for_forward kept."""

    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        ctx.save_for_forward(result)
        return result

    @staticmethod
    def backward(ctx, g):
        (result,) = ctx.saved_tensors
        return g * result

    @staticmethod
    def jvp(ctx, t):
        (result,) = ctx.saved_tensors
        return t * result


def test_forward_mode_through_a_custom_function():
    a, v = RNG.standard_normal(4), RNG.standard_normal(4)
    with fwAD.dual_level():
        out = ExpJvp.apply(fwAD.make_dual(cr.tensor(a), cr.tensor(v)))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(), np.exp(a) * v)
    assert gradcheck(ExpJvp.apply, (leaf(a),), check_forward_ad=True, check_backward_ad=False,
                     check_undefined_grad=False, check_batched_grad=False)
    assert gradcheck(ExpJvp.apply, (leaf(a),), check_forward_ad=True)
