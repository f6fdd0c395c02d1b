"""Regressions found by differential fuzzing of ``chainrule.func`` against ``torch.func``:
random small programs under random transform compositions (vmap with in_dims/out_dims,
nested vmap, vmap(grad), vmap(vjp), jacfwd(grad), hessian, chunk_size, ...).

Each test checks a value derived without torch (analytic, or a per-sample loop) and also
compares with torch when it is installed."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import func

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

RNG = np.random.default_rng(1234)
Y0 = RNG.standard_normal((3, 4))
W0 = np.arange(1.0, 5.0)

VIEWS = {
    "view": lambda v: v.view(-1),
    "reshape": lambda v: v.reshape(2, 2),
    "view_t": lambda v: v.view(2, 2).t(),
}


def _scaled_through_view(T, view):
    def f(y):
        v = y.clone()
        view(v).mul_(2)  # an in-place update through a reshaped view of a temporary
        return (v * T.tensor(W0)).sum()
    return f


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_vmap_grad_through_in_place_update_of_a_reshaped_view(name):
    # the gradient of sum(2 y * w) is 2 w for every sample; the batched evaluation lost the
    # update's factor 2 (the reshape of a batch was not taken for a view of it)
    f = _scaled_through_view(cr, VIEWS[name])
    got = func.vmap(func.grad(f))(cr.tensor(Y0)).numpy()
    np.testing.assert_allclose(got, np.broadcast_to(2 * W0, (3, 4)), rtol=1e-12)
    loop = np.stack([func.grad(f)(cr.tensor(y)).numpy() for y in Y0])
    np.testing.assert_allclose(got, loop, rtol=1e-12)
    if torch is not None:
        tf = _scaled_through_view(torch, VIEWS[name])
        ref = torch.func.vmap(torch.func.grad(tf))(torch.tensor(Y0)).numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_vmap_of_vjp_through_in_place_update_of_a_view():
    C0 = RNG.standard_normal((3, 4))

    def run(T):
        def f(y):
            v = y.clone()
            v.view(-1).mul_(2)
            return v * 1.0
        return func_of(T).vmap(lambda a, c: func_of(T).vjp(f, a)[1](c)[0])(T.tensor(Y0),
                                                                           T.tensor(C0))
    got = run(cr).numpy()
    np.testing.assert_allclose(got, 2 * C0, rtol=1e-12)
    if torch is not None:
        np.testing.assert_allclose(got, run(torch).numpy(), rtol=1e-12)


def func_of(T):
    return T.func


def test_vmap_in_place_update_of_a_diagonal_view():
    # NumPy's diagonal is read-only: the batched write raised ValueError
    A0 = RNG.standard_normal((2, 3, 3))

    def f(a):
        v = a.clone()
        v.diagonal().add_(1)
        return v

    want = A0 + np.eye(3)
    for kwargs in ({}, {"chunk_size": 1}):
        np.testing.assert_allclose(func.vmap(f, **kwargs)(cr.tensor(A0)).numpy(), want)
    # in_dims=1: the batch is not the leading axis of the data
    np.testing.assert_allclose(func.vmap(f, in_dims=1)(cr.tensor(A0.transpose(1, 0, 2))).numpy(),
                               want)
    g = func.vmap(func.grad(lambda a: (f(a) ** 2).sum()))(cr.tensor(A0)).numpy()
    np.testing.assert_allclose(g, 2 * want, rtol=1e-12)
    if torch is not None:
        ref = torch.func.vmap(f)(torch.tensor(A0)).numpy()
        np.testing.assert_allclose(func.vmap(f)(cr.tensor(A0)).numpy(), ref)


def test_hessian_of_eigenvectors_at_a_degenerate_matrix_raises_the_eigh_error():
    # jacfwd of a backward through eigh's eigenvectors at repeated eigenvalues: the nan
    # mask of the batched JVP was combined with the batch as a logical dim (ValueError
    # from NumPy); it now gives eigh's own error, as grad and jacrev do
    y0 = np.array([0.3, -1.2, 0.7])

    def fs(y):
        A = cr.triu(cr.outer(y, y), 1)  # eigh reads the lower triangle: the zero matrix
        return cr.sin(cr.linalg.eigh(A).eigenvectors.abs()).sum()
    for transform in (func.grad, func.hessian, lambda f: func.jacfwd(func.grad(f))):
        with pytest.raises(RuntimeError, match="linalg.eigh backward: eigenvalues"):
            transform(fs)(cr.tensor(y0))


def test_jacfwd_of_svd_factors_at_a_rank_deficient_matrix_matches_jvp_per_column():
    # the batched JVP's mask of undefined columns (nan) lines up with the tangents' batch
    B0 = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 0], [0, 0, 0]])

    def f(A):
        return cr.linalg.svd(A, full_matrices=False).U.abs()
    J = func.jacfwd(f)(cr.tensor(B0)).numpy()
    cols = np.stack([func.jvp(f, (cr.tensor(B0),), (cr.tensor(np.eye(12)[i].reshape(4, 3)),))[1]
                     .numpy() for i in range(12)], -1).reshape(4, 3, 4, 3)
    np.testing.assert_array_equal(np.isnan(J), np.isnan(cols))
    np.testing.assert_allclose(J, cols, rtol=1e-12, atol=1e-14)


def test_movedim_of_a_0d_tensor_and_under_transforms():
    y = cr.tensor([0.5, -1.0, 2.0])
    np.testing.assert_allclose(func.vmap(lambda a: a.movedim(0, -1).sin())(y).numpy(),
                               np.sin(y.numpy()))
    J = func.jacfwd(func.jacrev(lambda a: a.movedim(0, -1).sin().sum()))(cr.tensor(0.3))
    np.testing.assert_allclose(J.numpy(), -np.sin(0.3))
    assert cr.tensor(1.5).movedim(-1, 0).item() == 1.5
    if torch is not None:
        ref = torch.func.vmap(lambda a: a.movedim(0, -1).sin())(torch.tensor(y.numpy())).numpy()
        np.testing.assert_allclose(func.vmap(lambda a: a.movedim(0, -1).sin())(y).numpy(), ref)


def test_nested_vmap_writes_a_value_with_a_leading_size_one_dim():
    X0 = RNG.standard_normal((2, 3, 2))

    def run(T):
        def f(x):
            v = x.clone()
            v[0] = x.topk(1, -1).values  # shape (1,) into a 0-d entry, as NumPy allows
            return v
        return f

    f = run(cr)
    got = func.vmap(func.vmap(f))(cr.tensor(X0)).numpy()
    want = X0.copy()
    want[..., 0] = X0.max(-1)
    np.testing.assert_allclose(got, want)
    if torch is not None:
        ref = torch.func.vmap(torch.func.vmap(run(torch)))(torch.tensor(X0)).numpy()
        np.testing.assert_allclose(got, ref)


def test_vecdot_of_0d_tensors():
    a = cr.tensor(2.0)
    assert cr.linalg.vecdot(a, a).item() == 4.0
    np.testing.assert_allclose(func.vmap(lambda v: cr.linalg.vecdot(v.sum(), v.sum()))(
        cr.tensor(Y0)).numpy(), Y0.sum(1) ** 2)
    if torch is not None:
        assert torch.linalg.vecdot(torch.tensor(2.0), torch.tensor(2.0)).item() == 4.0


@pytest.mark.parametrize("where", ["slice", "row"])
def test_vmap_grad_of_a_multiplier_written_through_a_view_of_a_temporary(where):
    # y does not require grad, x does: the view of y's clone was made without recording,
    # and inside vmap it was not remembered as a view, so the update did not reach the
    # clone's history and the gradient with respect to x was 0
    Y = RNG.standard_normal((3, 2, 4))
    X = RNG.standard_normal((3, 2, 1))
    W = np.arange(8.0).reshape(2, 4)

    def make(T):
        def f(x, y):
            v = y.clone()
            if where == "slice":
                v[..., :1].mul_(x)
            else:
                v[0].mul_(x[0])
            return (v * T.tensor(W)).sum()
        return f

    got = func.vmap(func.grad(make(cr)))(cr.tensor(X), cr.tensor(Y)).numpy()
    want = np.zeros_like(X)
    if where == "slice":
        want[..., 0] = (Y[..., 0] * W[:, 0])
    else:
        want[:, 0, 0] = (Y[:, 0, :] * W[0]).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if torch is not None:
        ref = torch.func.vmap(torch.func.grad(make(torch)))(torch.tensor(X),
                                                             torch.tensor(Y)).numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-12)
