"""PyTorch's note "Extending torch.func with autograd.Function", rewritten: a sort computed
in NumPy whose backward is another NumPy Function (each with a hand-written vmap rule and
non-differentiable index outputs), and a cube that returns its own derivative as a second
output so that second derivatives work (with generate_vmap_rule). Every transform of them is
checked against values derived by hand; torch, when importable, runs the same code."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # the tests' own assertions do not need it
    torch = None

X = np.array([[0.3, -1.2, 0.7], [2.0, 0.1, -0.4]])
W = np.array([1.0, 2.0, 3.0])
LIBS = [cr] + ([torch] if torch is not None else [])


def functions(lib):
    """``(numpy_sort, my_cube)`` written against ``lib`` (chainrule or torch)."""

    def host(t):
        return t.detach().cpu().numpy()

    class Gather(lib.autograd.Function):  # y = take_along_axis(x, ind, dim), in NumPy
        @staticmethod
        def forward(x, ind, ind_inv, dim):
            return lib.tensor(np.take_along_axis(host(x), host(ind), dim), device=x.device)

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, ind, ind_inv, dim = inputs
            ctx.save_for_backward(ind, ind_inv)
            ctx.dim = dim

        @staticmethod
        def backward(ctx, g):  # the inverse permutation scatters g back: another Gather
            ind, ind_inv = ctx.saved_tensors
            return Gather.apply(g, ind_inv, ind, ctx.dim), None, None, None

        @staticmethod
        def vmap(info, in_dims, x, ind, ind_inv, dim):
            def batch_first(t, d):
                return t.expand(info.batch_size, *t.shape) if d is None else t.movedim(d, 0)

            x_dim, ind_dim, inv_dim, _ = in_dims
            dim = dim if dim >= 0 else dim + (x.dim() if x_dim is None else x.dim() - 1)
            return Gather.apply(batch_first(x, x_dim), batch_first(ind, ind_dim),
                                batch_first(ind_inv, inv_dim), dim + 1), 0

    class Sort(lib.autograd.Function):  # (sorted x, the order, its inverse), in NumPy
        @staticmethod
        def forward(x, dim):
            a = host(x)
            ind = np.argsort(a, axis=dim)
            return (lib.tensor(np.take_along_axis(a, ind, dim), device=x.device),
                    lib.tensor(ind, device=x.device),
                    lib.tensor(np.argsort(ind, axis=dim), device=x.device))

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, ind, ind_inv = output
            ctx.mark_non_differentiable(ind, ind_inv)
            ctx.save_for_backward(ind, ind_inv)
            ctx.dim = inputs[1]

        @staticmethod
        def backward(ctx, g, _ind, _inv):
            ind, ind_inv = ctx.saved_tensors
            return Gather.apply(g, ind_inv, ind, ctx.dim), None

        @staticmethod
        def vmap(info, in_dims, x, dim):
            x = x.movedim(in_dims[0], 0)
            dim = dim if dim >= 0 else dim + x.dim() - 1
            return Sort.apply(x, dim + 1), (0, 0, 0)

    class Cube(lib.autograd.Function):  # (x^3, 3 x^2): the derivative is an output too
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3, 3 * x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0], output[1])

        @staticmethod
        def backward(ctx, g, g_dx):  # dx's own cotangent: d(3x^2)/dx = 6x
            x, dx = ctx.saved_tensors
            return g * dx + g_dx * 6 * x

    def numpy_sort(x, dim=-1):
        return Sort.apply(x, dim)[0]

    def my_cube(x):
        return Cube.apply(x)[0]

    return numpy_sort, my_cube


def ranks(a):
    """Where each entry of ``a`` lands in its sorted row."""
    return np.argsort(np.argsort(a, -1), -1)


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_a_numpy_sort_through_every_transform(lib):
    numpy_sort, _ = functions(lib)
    f = lib.func
    x, w = lib.tensor(X), lib.tensor(W)
    # sum(sort(x)) = sum(x): gradient 1; sum(w * sort(x)): entry i gets w[rank(i)]
    np.testing.assert_array_equal(f.grad(lambda v: numpy_sort(v).sum())(x).numpy(), 1.0)
    np.testing.assert_array_equal(f.grad(lambda v: (numpy_sort(v) * w).sum())(x).numpy(),
                                  W[ranks(X)])
    # vmap through the hand-written rules, over rows and over columns (dim 0 of each column)
    np.testing.assert_array_equal(f.vmap(numpy_sort)(x).numpy(), np.sort(X, -1))
    np.testing.assert_array_equal(f.vmap(lambda c: numpy_sort(c, 0), in_dims=1)(x).numpy(),
                                  np.sort(X, 0).T)
    # the Jacobian of a sort is its permutation matrix: row j picks entry argsort[j]
    P = np.eye(3)[np.argsort(X[0])]
    np.testing.assert_array_equal(f.jacrev(numpy_sort)(x[0]).numpy(), P)
    # per-row gradients (vmap of grad: the backward's Gather runs batched)
    np.testing.assert_array_equal(
        f.vmap(f.grad(lambda r: (numpy_sort(r) * w).sum()))(x).numpy(), W[ranks(X)])
    # second order by reverse over reverse, through the backward written as another
    # Function: sum(w * sort(r)^2) has Hessian diag(2 w[rank])
    H = f.jacrev(f.jacrev(lambda r: (numpy_sort(r) ** 2 * w).sum()))(x[0]).numpy()
    np.testing.assert_array_equal(H, np.diag(2 * W[ranks(X[0])]))
    # no jvp staticmethod: forward mode (jacfwd, hessian's forward over reverse) says so
    # (NotImplementedError, as PyTorch)
    for call in (f.jacfwd(numpy_sort), f.hessian(lambda r: (numpy_sort(r) ** 2).sum())):
        with pytest.raises(NotImplementedError, match="jvp"):
            call(x[0])


@pytest.mark.parametrize("lib", LIBS, ids=lambda m: m.__name__)
def test_a_cube_that_returns_its_derivative(lib):
    _, my_cube = functions(lib)
    f = lib.func
    x = lib.tensor(X[0])
    # d/dx (3x^2) = 6x: the second derivative needs the dx output's backward term
    ggx = f.grad(f.grad(my_cube))(lib.tensor(0.7, dtype=lib.float64))
    np.testing.assert_allclose(ggx.item(), 6 * 0.7, rtol=1e-15)
    np.testing.assert_allclose(f.vmap(my_cube)(x).numpy(), X[0] ** 3, rtol=1e-15)
    np.testing.assert_allclose(f.jacrev(my_cube)(x).numpy(), np.diag(3 * X[0] ** 2),
                               rtol=1e-15)
    np.testing.assert_allclose(f.vmap(f.grad(my_cube))(x).numpy(), 3 * X[0] ** 2, rtol=1e-15)
    np.testing.assert_allclose(f.vmap(f.grad(f.grad(my_cube)))(x).numpy(), 6 * X[0],
                               rtol=1e-15)
