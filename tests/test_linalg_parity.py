"""Parity of chainrule.linalg and chainrule.special with PyTorch, from a differential fuzzer.

Every test asserts something derived without PyTorch (central finite differences in float64,
a closed form, an identity such as A pinv(A) A = A, or a hand-derived value); where torch is
importable, some also compare with it. Each test names the mismatch the fuzzer found.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrule as cr
import chainrule.linalg as L
from chainrule import special as S

try:
    import torch
except ImportError:  # the tests still run their torch-free checks
    torch = None


def _rng(seed=0):
    return np.random.default_rng(seed)


def _grad(f, A, create_graph=False):
    X = cr.tensor(A, requires_grad=True)
    (g,) = cr.autograd.grad(f(X), X, create_graph=create_graph)
    return X, g


def _fd(f, A, D, h=1e-6):
    """Central difference of the scalar f (on Tensors) at A along D, in float64."""
    with cr.no_grad():
        return (f(cr.tensor(A + h * D)).item() - f(cr.tensor(A - h * D)).item()) / (2 * h)


# --- det / logdet -----------------------------------------------------------------------


def test_det_second_derivative_of_empty_matrices():
    # det(0x0) = 1; its Hessian (the cofactor's VJP) used to fail on reshape(-1, 0, 0)
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        X = cr.tensor(np.zeros(shape), requires_grad=True)
        (g,) = cr.autograd.grad(L.det(X.mT).sum(), X, create_graph=True)
        (h,) = cr.autograd.grad((g * 2.0).sum(), X, allow_unused=True)
        assert tuple(g.shape) == shape and (h is None or tuple(h.shape) == shape)


def test_det_jvp_at_a_singular_matrix_matches_finite_differences():
    # PyTorch 2.13's forward mode gives 0 here (its jvp divides by det); the directional
    # derivative of det at a rank n-1 matrix is <cof(A), T>, nonzero
    A = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 1.0], [1.0, 2.0, 0.0]])
    T = _rng(1).standard_normal((3, 3))
    _, jvp = cr.func.jvp(L.det, (cr.tensor(A),), (cr.tensor(T),))
    numerical = _fd(L.det, A, T)
    assert abs(numerical) > 1.0
    assert np.isclose(jvp.item(), numerical, rtol=1e-6)


def test_logdet_of_complex_matrices_is_complex_log_det():
    A = _rng(2).standard_normal((2, 3, 3)) + 1j * _rng(3).standard_normal((2, 3, 3))
    out = L.logdet(cr.tensor(A))
    assert np.iscomplexobj(out.numpy())
    np.testing.assert_allclose(np.exp(out.numpy()), np.linalg.det(A), rtol=1e-12)
    np.testing.assert_allclose(cr.logdet(cr.tensor(A)).numpy(), out.numpy())
    if torch is not None:
        np.testing.assert_allclose(out.numpy(), torch.logdet(torch.tensor(A)).numpy(),
                                   rtol=1e-12)


# --- eigh / svd at repeated values: nan, never a finite wrong gradient ------------------


def _spectral_eigh(X, G):
    w, V = L.eigh(X)
    f = w * w + cr.sin(w)  # f(0) = 0, f'(0) = 1: the eigenvector cotangent vanishes at w = 0
    return ((V * f.unsqueeze(-2)) @ V.mT * cr.tensor(G)).sum()


def test_eigh_spectral_function_at_a_repeated_zero_eigenvalue_is_nan_not_finite():
    # L(A) = <G, f(A)>, f(A) = V f(w) V^T; at A = diag(0, 0, 5) the eigenvector cotangent is
    # exactly 0 on the repeated pair (f(0) = 0), but the derivative there is the divided
    # difference f'(0) = 1 on the pair, not the 0 of the chain rule's 0/0 (it was finite
    # and wrong: -11.8 against -10.38 from finite differences along a symmetric D)
    rng = _rng(4)
    G = rng.standard_normal((3, 3))
    A = np.diag([0.0, 0.0, 5.0])
    _, g = _grad(lambda X: _spectral_eigh(X, G), A)
    assert np.isnan(g.numpy()).any()
    # distinct eigenvalues: exact, against finite differences along a symmetric direction
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    A = (Q * np.array([1.0, 2.0, 5.0])) @ Q.T
    D = rng.standard_normal((3, 3))
    D = D + D.T
    _, g = _grad(lambda X: _spectral_eigh(X, G), A)
    assert np.isclose(np.sum(g.numpy() * D), _fd(lambda X: _spectral_eigh(X, G), A, D),
                      rtol=1e-6)


def test_eigh_eigenvector_of_a_simple_eigenvalue_stays_exact_next_to_a_repeated_pair():
    # the nan above needs an eigenvalue cotangent on the pair: an eigenvector-only loss
    # on the simple eigenvalue keeps its exact gradient
    rng = _rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    A = (Q * np.array([1.0, 1.0, 5.0])) @ Q.T
    W = rng.standard_normal((3, 3))

    def f(X):
        v = L.eigh(X).eigenvectors[..., :, 2:3]
        return (v @ v.mT * cr.tensor(W)).sum()

    D = rng.standard_normal((3, 3))
    D = D + D.T
    _, g = _grad(f, A)
    assert np.isfinite(g.numpy()).all()
    assert np.isclose(np.sum(g.numpy() * D), _fd(f, A, D), rtol=1e-6, atol=1e-9)


def _spectral_svd(X, G):
    U, s, Vh = L.svd(X)
    return ((U * ((s - 1) * s).unsqueeze(-2)) @ Vh * cr.tensor(G)).sum()


@pytest.mark.parametrize("values", [[1.0, 1.0, 5.0], [0.0, 0.0, 5.0]])
def test_svd_spectral_function_at_repeated_singular_values_is_nan_not_finite(values):
    # f(s) = (s - 1) s vanishes at the repeated value (1, or 0): the singular-vector
    # cotangents vanish on the pair; the chain rule gave a finite wrong gradient (-7.25
    # against -7.66 from finite differences at values (1, 1, 5))
    rng = _rng(6)
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    P, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    G = rng.standard_normal((3, 3))
    _, g = _grad(lambda X: _spectral_svd(X, G), (Q * np.array(values)) @ P.T)
    assert np.isnan(g.numpy()).any()
    A = (Q * np.array([1.0, 2.0, 5.0])) @ P.T  # distinct: exact
    D = rng.standard_normal((3, 3))
    _, g = _grad(lambda X: _spectral_svd(X, G), A)
    assert np.isclose(np.sum(g.numpy() * D), _fd(lambda X: _spectral_svd(X, G), A, D),
                      rtol=1e-6)


# --- pinv, vecdot: complex ----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (3, 5)])
def test_pinv_of_complex_matrices_is_the_moore_penrose_inverse(shape):
    rng = _rng(7)
    A = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    P = L.pinv(cr.tensor(A)).numpy()
    H = lambda M: np.conj(np.swapaxes(M, -1, -2))  # noqa: E731
    np.testing.assert_allclose(A @ P @ A, A, atol=1e-12)
    np.testing.assert_allclose(P @ A @ P, P, atol=1e-12)
    np.testing.assert_allclose(H(A @ P), A @ P, atol=1e-12)
    np.testing.assert_allclose(H(P @ A), P @ A, atol=1e-12)
    if torch is not None:
        np.testing.assert_allclose(P, torch.linalg.pinv(torch.tensor(A)).numpy(), atol=1e-12)


def test_pinv_hermitian_of_a_complex_hermitian_matrix_is_its_inverse():
    rng = _rng(8)
    A = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    A = A + np.conj(A.T)
    np.testing.assert_allclose(L.pinv(cr.tensor(A), hermitian=True).numpy(),
                               np.linalg.inv(A), atol=1e-12)


def test_vecdot_conjugates_its_first_complex_argument():
    rng = _rng(9)
    x = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    y = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    out = L.vecdot(cr.tensor(x), cr.tensor(y)).numpy()
    np.testing.assert_allclose(out, np.sum(np.conj(x) * y, -1), rtol=1e-14)
    np.testing.assert_allclose(L.vecdot(cr.tensor(x), cr.tensor(x)).numpy().imag, 0,
                               atol=1e-14)
    if torch is not None:
        np.testing.assert_allclose(out, torch.linalg.vecdot(torch.tensor(x),
                                                            torch.tensor(y)).numpy())


# --- cond, matrix_norm: singular and empty ---------------------------------------------------


@pytest.mark.parametrize("p", [1, -1, math.inf, -math.inf, "fro", "nuc"])
def test_cond_of_a_singular_matrix_is_inf_and_of_empty_matrices_zero(p):
    A = _rng(10).standard_normal((2, 3, 3))
    A[0, 2] = A[0, 0]  # exactly singular: a repeated row
    out = L.cond(cr.tensor(A), p=p).numpy()
    assert out[0] == math.inf
    assert np.isclose(out[1], np.linalg.cond(A[1], p=p), rtol=1e-10)
    np.testing.assert_array_equal(L.cond(cr.zeros(2, 0, 0), p=p).numpy(), [0.0, 0.0])
    for q in (None, 2, -2):  # no singular values at all: 0 too
        np.testing.assert_array_equal(L.cond(cr.zeros(2, 3, 0), p=q).numpy(), [0.0, 0.0])
        np.testing.assert_array_equal(L.cond(cr.zeros(0, 0), p=q).numpy(), 0.0)
    assert tuple(L.cond(cr.zeros(0, 3, 3), p=p).shape) == (0,)
    # the regular matrix's gradient: PyTorch 2.13's backward of cond for these p raises
    # (an in-place masked_fill_ on a saved tensor); finite differences decide
    D = _rng(11).standard_normal((3, 3))
    _, g = _grad(lambda X: L.cond(X, p=p), A[1])
    assert np.isclose(np.sum(g.numpy() * D), _fd(lambda X: L.cond(X, p=p), A[1], D),
                      rtol=1e-5)


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 3), (3, 0)])
def test_matrix_norm_of_no_entries(shape):
    for ord in (1, 2, math.inf, "nuc", "fro"):  # a largest column/row sum of nothing: 0
        out = L.matrix_norm(cr.zeros(*shape), ord=ord).numpy()
        np.testing.assert_array_equal(out, np.zeros(shape[:-2]))
    if shape[-1] == 0 and shape[-2] == 0:
        for ord in (-1, -2, -math.inf):  # a minimum over nothing has no identity
            with pytest.raises(ValueError):
                L.matrix_norm(cr.zeros(*shape), ord=ord)


# --- lu family, solve_ex ---------------------------------------------------------------------


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def test_lu_factor_raises_on_a_singular_matrix_and_lu_factor_ex_reports_info():
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        L.lu_factor(cr.tensor(SINGULAR))
    LU, piv, info = L.lu_factor_ex(cr.tensor(np.stack([np.eye(2), SINGULAR])))
    np.testing.assert_array_equal(info.numpy(), [0, 2])
    # the packed factors still reproduce A = P L U
    P, Lo, U = cr.lu_unpack(LU, piv)
    np.testing.assert_allclose((P @ Lo @ U).numpy()[1], SINGULAR, atol=1e-15)
    np.testing.assert_array_equal(L.lu_factor_ex(cr.zeros(2, 3, 3)).info.numpy(), [1, 1])
    wide = cr.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]])  # U[2,2] = 0 though rank 2
    assert L.lu_factor_ex(wide).info.item() == 2
    with pytest.raises(RuntimeError, match="Batch element 1"):
        L.lu_factor_ex(cr.tensor(np.stack([np.eye(2), SINGULAR])), check_errors=True)
    if torch is not None:
        t = torch.linalg.lu_factor_ex(torch.tensor(np.stack([np.eye(2), SINGULAR])))
        np.testing.assert_array_equal(t.info.numpy(), [0, 2])


def test_lu_of_empty_batches_and_empty_matrices():
    P, Lo, U = L.lu(cr.zeros(0, 3, 2))
    assert tuple(P.shape) == (0, 3, 3) and tuple(Lo.shape) == (0, 3, 2)
    assert tuple(L.lu_factor(cr.zeros(0, 3, 3)).pivots.shape) == (0, 3)
    assert tuple(L.lu_factor(cr.zeros(2, 0, 0)).pivots.shape) == (2, 0)
    x = L.lu_solve(*L.lu_factor(cr.zeros(0, 0)), cr.zeros(0, 2))
    assert tuple(x.shape) == (0, 2)
    assert tuple(cr.lu_unpack(*L.lu_factor(cr.zeros(2, 3, 0)))[0].shape) == (2, 3, 3)


def test_solve_ex_of_a_singular_matrix_gives_nan_and_info_not_an_error():
    rng = _rng(12)
    A = np.stack([2 * np.eye(2) + 0.1 * rng.standard_normal((2, 2)), SINGULAR])
    B = rng.standard_normal((2, 2, 3))
    x, info = L.solve_ex(cr.tensor(A), cr.tensor(B))
    np.testing.assert_array_equal(info.numpy(), [0, 2])
    np.testing.assert_allclose(A[0] @ x.numpy()[0], B[0], atol=1e-12)
    assert np.isnan(x.numpy()[1]).all()
    xv, _ = L.solve_ex(cr.tensor(A), cr.tensor(B[..., 0]))  # a batch of vectors
    np.testing.assert_allclose(A[0] @ xv.numpy()[0], B[0, :, 0], atol=1e-12)
    assert np.isnan(xv.numpy()[1]).all()
    xl, _ = L.solve_ex(cr.tensor(A), cr.tensor(B.swapaxes(-1, -2)), left=False)
    np.testing.assert_allclose(xl.numpy()[0] @ A[0], B[0].T, atol=1e-12)
    with pytest.raises(L.LinAlgError):
        L.solve_ex(cr.tensor(A), cr.tensor(B), check_errors=True)
    # a regular batch: info 0 and a differentiable solution
    x, info = L.solve_ex(cr.tensor(A[:1]), cr.tensor(B[:1]))
    assert info.numpy().tolist() == [0]


# --- householder_product, vander, ldl ---------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 2, 0), (0, 2, 0), (2, 0, 0), (3, 0)])
def test_householder_product_without_reflectors_keeps_the_batch(shape):
    A = cr.tensor(np.zeros(shape), requires_grad=True)
    Q = L.householder_product(A, cr.zeros(*shape[:-2], 0))
    assert tuple(Q.shape) == shape
    (g,) = cr.autograd.grad(Q.sum(), A, allow_unused=True)
    assert g is None or not g.numpy().any()


def test_householder_product_matches_the_product_of_reflectors():
    rng = _rng(13)
    A, tau = rng.standard_normal((4, 3)), rng.standard_normal(2)
    H = np.eye(4)
    for i in range(2):
        v = np.zeros(4)
        v[i], v[i + 1:] = 1.0, A[i + 1:, i]
        H = H @ (np.eye(4) - tau[i] * np.outer(v, v))
    np.testing.assert_allclose(L.householder_product(cr.tensor(A), cr.tensor(tau)).numpy(),
                               H[:, :3], atol=1e-14)


def test_vander_refuses_a_single_column_as_torch():
    for x, N in [([1.0, 2.0], 1), ([3.0], None)]:
        with pytest.raises(ValueError, match="greater than 1"):
            L.vander(cr.tensor(x), N=N)
    np.testing.assert_array_equal(L.vander(cr.tensor([2.0, 3.0])).numpy(),
                                  [[1.0, 2.0], [1.0, 3.0]])


def test_ldl_keeps_float32_and_handles_empty_matrices():
    rng = _rng(14)
    A = rng.standard_normal((2, 3, 3)).astype(np.float32)
    A = A + A.swapaxes(-1, -2)
    B = rng.standard_normal((2, 3, 2)).astype(np.float32)
    LD, piv = L.ldl_factor(cr.tensor(A))
    x = L.ldl_solve(LD, piv, cr.tensor(B))
    assert LD.dtype == cr.float32 and x.dtype == cr.float32
    np.testing.assert_allclose(A @ x.numpy(), B, atol=1e-4)
    for shape, bshape in [((0, 0), (0, 2)), ((0, 3, 3), (0, 3, 2))]:
        LD, piv = L.ldl_factor(cr.zeros(*shape))
        assert tuple(LD.shape) == shape and tuple(piv.shape) == shape[:-1]
        assert tuple(L.ldl_solve(LD, piv, cr.zeros(*bshape)).shape) == bshape
    assert tuple(L.ldl_factor_ex(cr.zeros(2, 0, 0)).info.shape) == (2,)


# --- special: logit, erfcx ---------------------------------------------------------------------


def test_logit_outside_the_unit_interval_has_nan_value_and_derivatives():
    for dtype in (np.float64, np.float32):
        x = cr.tensor(np.array([-1.0, 2.0, 0.25, 0.5], dtype=dtype), requires_grad=True)
        y = S.logit(x)
        (g,) = cr.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = cr.autograd.grad(g.sum(), x)
        y, g = y.detach(), g.detach()
        assert np.isnan(y.numpy()[:2]).all() and np.isnan(g.numpy()[:2]).all()
        assert np.isnan(h.numpy()[:2]).all()  # log's rules gave finite numbers here
        p = np.array([0.25, 0.5])
        np.testing.assert_allclose(g.numpy()[2:], 1 / (p * (1 - p)), rtol=1e-6)
        np.testing.assert_allclose(h.numpy()[2:], (2 * p - 1) / (p * (1 - p)) ** 2,
                                   atol=1e-5)
    # with eps the gradient is 0 outside [eps, 1 - eps] (clamped), not nan
    x = cr.tensor([-1.0, 0.5], requires_grad=True)
    (g,) = cr.autograd.grad(S.logit(x, eps=1e-6).sum(), x)
    np.testing.assert_allclose(g.numpy(), [0.0, 4.0])
    if torch is not None:
        t = torch.tensor([-1.0, 2.0, 0.25], dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad(torch.special.logit(t).sum(), t)
        assert np.isnan(tg.numpy()[:2]).all()


# erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi) and erfcx''(x) = 2 erfcx(x) + 2 x erfcx'(x), from
# 50-digit arithmetic (mpmath)
_ERFCX_D = {
    5.0: (-0.02133278976482631, 0.008081377817874151),
    10.0: (-0.0055593122190608565, 0.0010957411064280369),
    30.0: (-0.0006258354105074841, 4.165309238445888e-05),
    100.0: (-5.6410497625993184e-05, 1.1280407802288335e-06),
    1e4: (-5.641895750849127e-09, 1.1283791332441388e-12),
}


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_erfcx_first_and_second_derivatives_for_large_x(dtype, rtol):
    # 2 x erfcx(x) - 2/sqrt(pi) cancels for large x: in float32 the second derivative at
    # x = 100 came out -1.8e-5 (true 1.13e-6) and at 1e30 -2.4e23 (true 1.1e-90)
    xs = np.array(list(_ERFCX_D), dtype=dtype)
    x = cr.tensor(xs, requires_grad=True)
    (g,) = cr.autograd.grad(S.erfcx(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    d1 = np.array([v[0] for v in _ERFCX_D.values()])
    d2 = np.array([v[1] for v in _ERFCX_D.values()])
    np.testing.assert_allclose(g.detach().numpy(), d1, rtol=rtol)
    np.testing.assert_allclose(h.numpy(), d2, rtol=rtol if dtype == np.float64 else 2e-4)
    # far out: -1/(sqrt(pi) x^2) and 2/(sqrt(pi) x^3), and no nan at inf
    x = cr.tensor([1e30, math.inf], requires_grad=True)
    (g,) = cr.autograd.grad(S.erfcx(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), [-1 / math.sqrt(math.pi) * 1e-60, 0.0],
                               rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), [2 / math.sqrt(math.pi) * 1e-90, 0.0], rtol=1e-12)


def test_erfcx_derivative_is_continuous_where_the_series_takes_over():
    for start in (10.0,):
        x = cr.tensor([start - 1e-9, start + 1e-9], requires_grad=True)
        (g,) = cr.autograd.grad(S.erfcx(x).sum(), x)
        assert abs(g.numpy()[0] - g.numpy()[1]) < 1e-11  # f'' * 2e-9 = 2.2e-12
    # and the derivative agrees with central differences of the value on both sides
    for x0 in (9.5, 12.0):
        _, g = _grad(lambda X: S.erfcx(X).sum(), np.array([x0]))
        assert np.isclose(g.numpy()[0], _fd(lambda X: S.erfcx(X).sum(), np.array([x0]),
                                            np.ones(1), h=1e-5), rtol=1e-7)


# d/dx log_ndtr(x) = pdf(x) / ndtr(x) and its derivative -r (x + r), r = pdf / ndtr, from
# 40-digit arithmetic (mpmath)
_LOG_NDTR_D = {
    -700.0: (700.0014285655977, -0.9999979592086626),
    -40.0: (40.02496884720726, -0.9993773316214086),
    -5.0: (5.186503967125842, -0.9673035653828878),
    0.0: (0.7978845608028654, -0.6366197723675814),
    5.0: (1.4867199409049056e-06, -7.433601914860711e-06),
    10.0: (7.694598626706419e-23, -7.694598626706419e-22),
}


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 2e-6)])
def test_log_ndtr_first_and_second_derivatives_in_the_far_tails(dtype, rtol):
    # exp(-x^2/2 - log_ndtr(x)) cancels for x << 0: float32 gave 699.11 at x = -700
    # (true 700.0014; PyTorch 2.13: 688.27, and a second derivative of 8071 for -1)
    xs = np.array(list(_LOG_NDTR_D), dtype=dtype)
    x = cr.tensor(xs, requires_grad=True)
    (g,) = cr.autograd.grad(S.log_ndtr(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    d1 = np.array([v[0] for v in _LOG_NDTR_D.values()])
    d2 = np.array([v[1] for v in _LOG_NDTR_D.values()])
    np.testing.assert_allclose(g.detach().numpy(), d1, rtol=rtol)
    np.testing.assert_allclose(h.numpy(), d2, rtol=rtol if dtype == np.float64 else 2e-5)
    # the identity r' = -r (x + r) with r the first derivative, at x = -3
    x = cr.tensor([-3.0], requires_grad=True)
    (g,) = cr.autograd.grad(S.log_ndtr(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    r = g.detach().numpy()[0]
    assert np.isclose(h.numpy()[0], -r * (-3.0 + r), rtol=1e-13)
    x = cr.tensor([40.0, -math.inf], requires_grad=True)  # no nan from an overflowing erfcx
    (g,) = cr.autograd.grad(S.log_ndtr(x).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [0.0, math.inf])
    (h,) = cr.autograd.grad(g[:1].sum(), x)
    assert h.numpy()[0] == 0.0


# --- eig at a defective matrix ------------------------------------------------------------------


def test_eigvals_gradient_at_a_defective_matrix_is_nan_not_finite():
    # at a Jordan block the eigenvalues move like sqrt(dA): not differentiable. The rule's
    # V^-T diag(g) V^T used rounding noise for V^-1 and gave a finite wrong gradient of
    # sum(w^2) (its true gradient, of trace(A^2), is 2 A^T; PyTorch 2.13 gives the same
    # wrong finite matrix as chainrule did)
    J = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    diag = np.diag([1.0, 1.0, 3.0])  # repeated but diagonalizable: exact
    tri = np.array([[1.0, 2.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 5.0]])
    X = cr.tensor(np.stack([J, diag, tri]), requires_grad=True)
    (g,) = cr.autograd.grad((L.eigvals(X) ** 2).sum(), X)
    g = g.numpy()
    assert np.isnan(g[0]).all()
    np.testing.assert_allclose(g[1], 2 * diag.T, atol=1e-12)
    np.testing.assert_allclose(g[2], 2 * tri.T, atol=1e-12)  # d trace(A^2) = 2 A^T
    _, t = cr.func.jvp(L.eigvals, (cr.tensor(J),), (cr.tensor(np.ones((3, 3))),))
    assert np.isnan(t.numpy()).all()
    D = _rng(15).standard_normal((3, 3))
    _, t = cr.func.jvp(L.eigvals, (cr.tensor(tri),), (cr.tensor(D),))
    assert np.isclose(t.numpy().sum(), np.trace(D), rtol=1e-12)  # d trace = trace(dA)


def test_torch_special_bessel_names():
    x = np.array([0.0, 0.5, -2.0, 10.0, math.inf])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(S.spherical_bessel_j0(cr.tensor(x)).numpy(),
                                      [1.0, math.sin(0.5) / 0.5, math.sin(-2.0) / -2.0,
                                       math.sin(10.0) / 10.0, 0.0])
    X = cr.tensor([0.0, 0.5, 2.0], requires_grad=True)
    (g,) = cr.autograd.grad(S.spherical_bessel_j0(X).sum(), X)
    v = np.array([0.5, 2.0])
    np.testing.assert_allclose(g.numpy(), [0.0, *(np.cos(v) / v - np.sin(v) / v ** 2)],
                               rtol=1e-12, atol=1e-15)
    # J0(x) + J2(x) = 2 J1(x) / x (A&S 9.1.27) and the aliases are the SciPy-named functions
    x = cr.tensor([0.5, 3.0, 7.5])
    np.testing.assert_allclose((S.bessel_j0(x) + S.jn(2, x)).numpy(),
                               (2 * S.bessel_j1(x) / x).numpy(), rtol=1e-12)
    assert S.bessel_y0 is S.y0 and S.modified_bessel_i1 is S.i1
    if torch is not None:
        t = torch.tensor([0.5, 3.0, 7.5], dtype=torch.float64)
        np.testing.assert_allclose(S.modified_bessel_i0(x).numpy(),
                                   torch.special.modified_bessel_i0(t).numpy(), rtol=1e-12)
