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


def test_forward_mode_through_a_function_without_jvp_raises_clearly():
    import chainrule.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        x = fwAD.make_dual(cr.tensor([1.0, 2.0]), cr.tensor([1.0, 0.0]))
        with pytest.raises(RuntimeError, match="Cube needs a static method jvp"):
            Cube.apply(x)


class CubeWithJvp(Cube):
    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x * x * t


def test_forward_mode_through_a_function_with_jvp():
    import chainrule.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        x = fwAD.make_dual(cr.tensor([1.0, 2.0]), cr.tensor([1.0, 0.5]))
        tangent = fwAD.unpack_dual(CubeWithJvp.apply(x)).tangent
    assert np.allclose(tangent.numpy(), 3 * np.array([1.0, 4.0]) * np.array([1.0, 0.5]))


def test_functional_vhp_equals_hvp_for_a_symmetric_hessian():
    from chainrule.autograd import functional

    A = np.array([[2.0, 1.0], [1.0, 3.0]])
    f = lambda x: 0.5 * x @ (cr.tensor(A) @ x) + x.exp().sum()  # noqa: E731
    x, v = cr.tensor([0.1, -0.3]), cr.tensor([1.0, 2.0])
    H = A + np.diag(np.exp(x.numpy()))
    value, vh = functional.vhp(f, x, v)
    _, hv = functional.hvp(f, x, v)
    assert np.allclose(vh.numpy(), H @ v.numpy()) and np.allclose(hv.numpy(), vh.numpy())
    assert np.isclose(value.item(), f(x).item())


@pytest.mark.parametrize("fn, second", [
    (lambda x: x.relu().sum(), [0.0, 0.0, 0.0]),            # relu'' = 0 (VJP only selects)
    (lambda x: (x.relu() * x).sum(), [2.0, 0.0, 2.0]),      # d2/dx2 (x relu(x)) = 2 [x > 0]
    (lambda x: x.abs().sum(), [0.0, 0.0, 0.0]),
    (lambda x: x.clamp(-2.5, 2.5).sum(), [0.0, 0.0, 0.0]),
])
def test_create_graph_gradient_of_a_piecewise_linear_function_requires_grad(fn, second):
    # PyTorch: a recorded backward's result requires grad when it read a tensor that does,
    # so grad of grad is zeros (not "element 0 of tensors does not require grad")
    x = cr.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (g,) = cr.autograd.grad(fn(x), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    (h,) = cr.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(h.numpy(), second)
