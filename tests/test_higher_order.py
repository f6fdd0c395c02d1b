"""Higher-order derivatives: create_graph=True through primitives and custom Functions."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import Function, grad, gradgradcheck, once_differentiable


def _x(*values):
    return cr.tensor(np.array(values, dtype=float), requires_grad=True)


def test_second_derivative_of_tanh_times_x_matches_the_formula():
    x = _x(0.3, -1.2, 2.0)
    (g,) = grad((x.tanh() * x).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    t, xs = np.tanh(x.detach().numpy()), x.detach().numpy()
    # d/dx [x tanh x] = tanh x + x (1 - t^2);  d2/dx2 = 2 (1 - t^2) - 2 x t (1 - t^2)
    assert np.allclose(h.numpy(), 2 * (1 - t**2) - 2 * xs * t * (1 - t**2))


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((4, 4))
    x = cr.tensor(rng.standard_normal(4), requires_grad=True)
    (g,) = grad(x @ (cr.tensor(A) @ x), x, create_graph=True)
    rows = [grad(g[i], x, retain_graph=True)[0].numpy() for i in range(4)]
    assert np.allclose(np.stack(rows), A + A.T)


def test_third_derivative_of_exp():
    x = _x(0.5, -1.0)
    y = x.exp().sum()
    (g1,) = grad(y, x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    assert np.allclose(g3.numpy(), np.exp(x.detach().numpy()))


def test_backward_create_graph_makes_a_differentiable_grad():
    x = _x(1.0, 2.0)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (h,) = grad(x.grad.sum(), x)
    assert np.allclose(h.numpy(), 6 * x.detach().numpy())


def test_gradient_penalty_through_a_matmul():
    rng = np.random.default_rng(1)
    W = cr.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    x = cr.tensor(rng.standard_normal(3), requires_grad=True)
    (gx,) = grad((W @ x).tanh().sum(), x, create_graph=True)
    assert gradgradcheck(lambda W, x: (W @ x).tanh().sum(), (W, x))
    penalty = (gx * gx).sum()
    penalty.backward()
    assert W.grad.shape == (3, 3) and np.isfinite(W.grad.numpy()).all()


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g  # written with chainrule ops: differentiable again


class CubeOnce(Cube):
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


class CubeNumpy(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return cr.tensor(3 * x.detach().numpy() ** 2 * g.detach().numpy())  # leaves chainrule


def test_custom_function_with_chainrule_backward_differentiates_twice():
    x = _x(0.5, -2.0)
    (g,) = grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    assert np.allclose(h.numpy(), 6 * x.detach().numpy())
    assert gradgradcheck(Cube.apply, (x,))


@pytest.mark.parametrize("fn, why", [(CubeOnce, "once_differentiable"),
                                     (CubeNumpy, "does not depend on its inputs")])
def test_non_differentiable_backward_raises_when_differentiated_twice(fn, why):
    x = _x(0.5, -2.0)
    (g,) = grad(fn.apply(x).sum(), x, create_graph=True)
    assert np.allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)  # first order right
    with pytest.raises(RuntimeError, match=why):
        grad(g.sum(), x)


def test_first_order_of_once_differentiable_is_unaffected():
    x = _x(0.5, -2.0)
    CubeOnce.apply(x).sum().backward()
    assert np.allclose(x.grad.numpy(), 3 * x.detach().numpy() ** 2)
