"""Nested dual levels (forward-over-forward) and recorded tangents (reverse-over-forward)
through ``chainrule.autograd.forward_ad``, against derivatives worked out by hand and
against the Hessian from reverse mode."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule.autograd import Function
from chainrule.func import hessian, jacfwd, jacrev

try:
    import torch
except ImportError:  # CI has no torch: the comparison with it is skipped, the rest runs
    torch = None

X = np.array([0.5, 1.5, -0.7])
U = np.array([1.0, 2.0, 0.5])
V = np.array([3.0, -1.0, 2.0])


def f(x):  # sum x^2 sin x
    return (x.sin() * x ** 2).sum()


def f1(x):  # f'(x) elementwise
    return 2 * x * np.sin(x) + x ** 2 * np.cos(x)


def f2(x):  # f''(x) elementwise
    return 2 * np.sin(x) + 4 * x * np.cos(x) - x ** 2 * np.sin(x)


def test_nested_levels_give_the_mixed_second_derivative():
    with fwAD.dual_level() as outer:
        x1 = fwAD.make_dual(cr.tensor(X), cr.tensor(U))
        with fwAD.dual_level() as inner:
            assert inner != outer
            y = f(fwAD.make_dual(x1, cr.tensor(V)))
            primal, t_inner = fwAD.unpack_dual(y)
            # the outer tangent of y, read from inside by naming the level
            t_outer = fwAD.unpack_dual(y, level=outer).tangent
        # u^T f''(x) v: the outer tangent of the inner tangent
        mixed = fwAD.unpack_dual(t_inner).tangent
        # the primal keeps the outer tangent, without the inner one
        assert float(fwAD.unpack_dual(primal).tangent) == pytest.approx(float(t_outer))
    assert float(primal) == pytest.approx(float((X ** 2 * np.sin(X)).sum()))
    assert float(t_inner) == pytest.approx(float((f1(X) * V).sum()))
    assert float(t_outer) == pytest.approx(float((f1(X) * U).sum()))
    assert float(mixed) == pytest.approx(float((f2(X) * U * V).sum()))
    H = hessian(f)(cr.tensor(X)).numpy()  # reverse mode gives the same number
    assert float(mixed) == pytest.approx(U @ H @ V)


def test_three_levels_give_the_third_derivative():
    # f(x) = x^4 at x = 2: f''' = 24 x = 48, times the three tangents 1, 2, 3
    with fwAD.dual_level():
        a = fwAD.make_dual(cr.tensor(2.0), cr.tensor(1.0))
        with fwAD.dual_level():
            b = fwAD.make_dual(a, cr.tensor(2.0))
            with fwAD.dual_level():
                y = fwAD.make_dual(b, cr.tensor(3.0)) ** 4
                t3 = fwAD.unpack_dual(y).tangent  # 4 x^3 * 3
            t23 = fwAD.unpack_dual(t3).tangent  # 12 x^2 * 2 * 3
        t123 = fwAD.unpack_dual(t23).tangent  # 24 x * 1 * 2 * 3
    assert float(t3) == pytest.approx(96.0)
    assert float(t23) == pytest.approx(288.0)
    assert float(t123) == pytest.approx(288.0)


def test_backward_through_a_tangent_is_reverse_over_forward():
    x = cr.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        y = f(fwAD.make_dual(x, cr.tensor(V)))
        jvp = fwAD.unpack_dual(y).tangent
    assert jvp.requires_grad and jvp.grad_fn is not None
    jvp.backward()  # d/dx (f'(x) . v) = f''(x) v: a Hessian-vector product
    np.testing.assert_allclose(x.grad.numpy(), f2(X) * V)
    H = hessian(f)(cr.tensor(X)).numpy()
    np.testing.assert_allclose(x.grad.numpy(), H @ V)


def test_a_tangent_that_requires_grad_gets_the_transposed_jacobian():
    A = np.array([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]])
    t = cr.tensor(V, requires_grad=True)
    with fwAD.dual_level():
        y = cr.tensor(A) @ fwAD.make_dual(cr.tensor(X), t).tanh()
        jvp = fwAD.unpack_dual(y).tangent  # A diag(1 - tanh^2 x) t
    (g,) = cr.autograd.grad(jvp.sum(), t)
    np.testing.assert_allclose(g.numpy(), (1 - np.tanh(X) ** 2) * A.sum(0))


def test_without_grad_mode_tangents_are_plain():
    x = cr.tensor(X, requires_grad=True)
    with cr.no_grad(), fwAD.dual_level():
        jvp = fwAD.unpack_dual(f(fwAD.make_dual(x, cr.tensor(V)))).tangent
    assert not jvp.requires_grad
    np.testing.assert_allclose(jvp.numpy(), (f1(X) * V).sum())


class Sin(Function):
    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * x.cos()


def test_a_custom_function_at_nested_levels_and_reverse_over_forward():
    with fwAD.dual_level():
        x1 = fwAD.make_dual(cr.tensor(X), cr.tensor(U))
        with fwAD.dual_level():
            t_inner = fwAD.unpack_dual(Sin.apply(fwAD.make_dual(x1, cr.tensor(V)))).tangent
        mixed = fwAD.unpack_dual(t_inner).tangent
    np.testing.assert_allclose(t_inner.detach().numpy(), np.cos(X) * V)
    np.testing.assert_allclose(mixed.numpy(), -np.sin(X) * U * V)  # sin'' = -sin
    x = cr.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        jvp = fwAD.unpack_dual(Sin.apply(fwAD.make_dual(x, cr.tensor(V)))).tangent
    jvp.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(X) * V)


def test_levels_exit_innermost_first_and_unknown_levels_are_refused():
    outer = fwAD.enter_dual_level()
    inner = fwAD.enter_dual_level()
    try:
        with pytest.raises(RuntimeError, match="not the innermost"):
            fwAD.exit_dual_level(level=outer)
        with pytest.raises(RuntimeError, match="not an active dual level"):
            fwAD.make_dual(cr.tensor(X), cr.tensor(U), level=inner + 100)
    finally:
        fwAD.exit_dual_level(level=inner)
        fwAD.exit_dual_level(level=outer)
    with pytest.raises(RuntimeError, match="inside `with dual_level"):
        fwAD.make_dual(cr.tensor(X), cr.tensor(U))


def test_jacobian_transforms_nest_in_every_order():
    H = np.diag(f2(X))
    for make in (lambda: jacfwd(jacfwd(f)), lambda: jacfwd(jacrev(f)),
                 lambda: jacrev(jacfwd(f)), lambda: jacrev(jacrev(f))):
        np.testing.assert_allclose(make()(cr.tensor(X)).numpy(), H, atol=1e-12)


def test_threads_each_have_their_own_levels():
    errors, results = [], {}

    def work(k):
        try:
            for _ in range(20):
                with fwAD.dual_level():
                    y = f(fwAD.make_dual(cr.tensor(X), cr.tensor(V * k)))
                    results[k] = float(fwAD.unpack_dual(y).tangent)
                results[(k, "jacfwd")] = jacfwd(f)(cr.tensor(X)).numpy()
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for k in (1, 2, 3):
        assert results[k] == pytest.approx(k * float((f1(X) * V).sum()))
        np.testing.assert_allclose(results[(k, "jacfwd")], f1(X))


def test_against_torch_forward_ad_reverse_over_forward():
    # reverse over forward: d/dx of the tangent sum(f'(x) v) is f''(x) v
    ours = cr.tensor(X, requires_grad=True)
    with fwAD.dual_level():
        fwAD.unpack_dual(f(fwAD.make_dual(ours, cr.tensor(V)))).tangent.backward()
    np.testing.assert_allclose(ours.grad.numpy(), f2(X) * V)
    if torch is not None:
        import torch.autograd.forward_ad as tfw

        x = torch.tensor(X, requires_grad=True)
        with tfw.dual_level():
            tfw.unpack_dual(f(tfw.make_dual(x, torch.tensor(V)))).tangent.backward()
        np.testing.assert_allclose(ours.grad.numpy(), x.grad.numpy())


class BatchableSin(Sin):
    generate_vmap_rule = True


@pytest.mark.parametrize("cls", [Sin, BatchableSin])
def test_second_derivatives_through_a_custom_function_in_every_order(cls):
    def g(x):  # sum x sin x, second derivative 2 cos x - x sin x
        return (cls.apply(x) * x).sum()

    H = np.diag(2 * np.cos(X) - X * np.sin(X))
    for transform in (hessian(g), jacfwd(jacfwd(g)), jacfwd(jacrev(g)), jacrev(jacfwd(g))):
        np.testing.assert_allclose(transform(cr.tensor(X)).numpy(), H, atol=1e-12)


def test_forward_over_reverse_through_an_op_whose_first_output_has_no_gradient():
    # slogdet's sign has no grad_fn; the tangents of its node were once not kept, and the
    # Hessian of log|det A| by jacfwd(jacrev) came out as zeros. d^2 log|det A|[E, E] =
    # -tr(A^-1 E A^-1 E)
    A = np.array([[3.0, 1.0, 0.5], [0.2, 2.5, -0.4], [0.1, 0.3, 4.0]])
    E = np.array([[0.3, -1.0, 0.2], [0.5, 0.1, 0.0], [-0.2, 0.4, 1.0]])
    base, Et = cr.tensor(A), cr.tensor(E)

    def s(z):  # log|det(A + z E)|: the input of slogdet is computed, not a leaf
        return cr.linalg.slogdet(base + z * Et).logabsdet

    Ai = np.linalg.inv(A)
    expected = -np.trace(Ai @ E @ Ai @ E)
    for transform in (jacfwd(jacrev(s)), jacfwd(jacfwd(s)), jacrev(jacrev(s))):
        assert float(transform(cr.tensor(0.0))) == pytest.approx(expected)


def test_in_place_updates_of_a_dual_tensor_carry_its_tangent():
    # make_dual gives a view of the primal carrying the tangent; updating it in place must
    # update the tangent by the op's JVP (the primal itself has none, as in PyTorch):
    # y = 2 x: dy = 2 dx; y[0] *= 2 then clamp(min=0) at x = (.5, -.7, 1.5)
    with fwAD.dual_level():
        d = fwAD.make_dual(cr.tensor([0.5, -0.7, 1.5]), cr.tensor([1.0, 2.0, 3.0]))
        d.mul_(2)
        np.testing.assert_array_equal(fwAD.unpack_dual(d).tangent.numpy(), [2, 4, 6])
    with fwAD.dual_level():
        p = cr.tensor([0.5, -0.7, 1.5])
        d = fwAD.make_dual(p, cr.tensor([1.0, 2.0, 3.0]))
        d[0].mul_(2)
        v = d[1:]
        d.clamp_(min=0)
        np.testing.assert_array_equal(fwAD.unpack_dual(d).tangent.numpy(), [2, 0, 3])
        np.testing.assert_array_equal(fwAD.unpack_dual(v).tangent.numpy(), [0, 3])
        np.testing.assert_array_equal(p.numpy(), [1.0, 0.0, 1.5])  # a view: p changed too
        assert fwAD.unpack_dual(p).tangent is None
    out, tangent = cr.func.jvp(lambda a: a.mul_(2), (cr.tensor([1.0, 2.0]),),
                            (cr.tensor([1.0, 1.0]),))
    np.testing.assert_array_equal(tangent.numpy(), [2, 2])
