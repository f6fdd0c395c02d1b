"""torch.special's orthogonal polynomials, Airy Ai and modified Bessel K functions: values
against SciPy and closed forms (without torch), PyTorch's definitions (truncated and negative
degrees, Hermite's degree limit, dtypes), derivatives against closed forms, and the values
against torch.special where torch is installed."""

from __future__ import annotations

import functools
import math
import time

import numpy as np
import pytest
import scipy.special as sc

import chainrule as cr
import chainrule.special as sp
from chainrule.autograd import grad

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

CHEB = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w"]
SHIFTED = ["shifted_" + n for n in CHEB]
POLYS = CHEB + SHIFTED + ["hermite_polynomial_h", "hermite_polynomial_he",
                          "laguerre_polynomial_l", "legendre_polynomial_p"]
UNARY = ["airy_ai", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1"]


def _closed(name, x, n):
    """Reference values for n >= 0 (float64, NumPy/SciPy only)."""
    if name.startswith("shifted_"):
        return _closed(name[len("shifted_"):], 2 * x - 1, n)
    u = sc.eval_chebyu
    if name == "chebyshev_polynomial_t":
        return sc.eval_chebyt(n, x)
    if name == "chebyshev_polynomial_u":
        return u(n, x)
    if name == "chebyshev_polynomial_v":
        return u(n, x) - (u(n - 1, x) if n else 0)
    if name == "chebyshev_polynomial_w":
        return u(n, x) + (u(n - 1, x) if n else 0)
    return {"hermite_polynomial_h": sc.eval_hermite, "hermite_polynomial_he": sc.eval_hermitenorm,
            "laguerre_polynomial_l": sc.eval_laguerre,
            "legendre_polynomial_p": sc.eval_legendre}[name](n, x)


X = np.array([-2.5, -1.0, -0.7, -0.2, 0.0, 0.35, 0.9, 1.0, 1.6])


@pytest.mark.parametrize("name", POLYS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 7, 9, 12, 20])
def test_values_match_scipy(name, n):
    got = getattr(sp, name)(cr.tensor(X), n).numpy()
    want = _closed(name, X, n)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_third_and_fourth_kinds_by_their_trigonometric_forms():
    x = np.linspace(-0.9, 0.9, 7)
    th = np.arccos(x)
    for n in (2, 5, 10):
        v = sp.chebyshev_polynomial_v(cr.tensor(x), n).numpy()
        w = sp.chebyshev_polynomial_w(cr.tensor(x), n).numpy()
        np.testing.assert_allclose(v, np.cos((n + .5) * th) / np.cos(th / 2), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(w, np.sin((n + .5) * th) / np.sin(th / 2), rtol=1e-12,
                                   atol=1e-12)


@pytest.mark.parametrize("name", POLYS)
def test_degree_is_truncated_and_negative_gives_zero(name):
    f = getattr(sp, name)
    x = cr.tensor(X)
    np.testing.assert_array_equal(f(x, 2.7).numpy(), f(x, 2).numpy())
    np.testing.assert_array_equal(f(x, -0.5).numpy(), f(x, 0).numpy())
    for n in (-1, -7, math.nan, math.inf, -math.inf, 1e19):
        np.testing.assert_array_equal(f(x, n).numpy(), np.zeros_like(X))
    n = cr.tensor([3.9, -2.0, math.nan, 0.0, 1.2, 2.0, 3.0, 5.5, 4.0])
    want = [f(x[i:i + 1], k).numpy()[0] for i, k in enumerate([3, -1, -1, 0, 1, 2, 3, 5, 4])]
    np.testing.assert_array_equal(f(x, n).numpy(), want)
    np.testing.assert_array_equal(f(x, cr.tensor([3, -2, -1, 0, 1, 2, 3, 5, 4])).numpy(), want)


def test_hermite_degree_limit_is_torchs():
    x64 = cr.tensor([0.3, -0.1], dtype=cr.float64)
    x32 = cr.tensor([0.3, -0.1], dtype=cr.float32)
    assert np.isfinite(sp.hermite_polynomial_he(x64, 200).numpy()).all()
    assert np.isnan(sp.hermite_polynomial_he(x64, 513).numpy()).all()
    assert np.isnan(sp.hermite_polynomial_h(x32, 129).numpy()).all()
    assert not np.isnan(sp.hermite_polynomial_h(x64, 129).numpy()).any()


def test_huge_degrees_are_fast():
    x = cr.tensor([0.3, -0.99, 1.0 + 1e-14, -1.0, 1.0, 3.0], dtype=cr.float64)
    t = time.perf_counter()
    for name in CHEB + SHIFTED:
        out = getattr(sp, name)(x, 10 ** 12).numpy()
        inside = out[:1] if name.startswith("shifted_") else out[:2]  # 2x - 1 in (-1, 1)
        assert np.isfinite(inside).all() and np.all(np.abs(inside) < 1e7)
    assert time.perf_counter() - t < 5
    np.testing.assert_allclose(sp.chebyshev_polynomial_t(x[:1], 10 ** 12).numpy(),
                               np.cos(10 ** 12 * np.arccos(0.3)), rtol=1e-12)


@pytest.mark.parametrize("name", CHEB)
def test_beyond_the_direct_degree_the_hyperbolic_forms_agree(name):
    x = cr.tensor([1.0 + 1e-9, -(1.0 + 1e-9)], dtype=cr.float64)
    n = 2 ** 16
    a, b = getattr(sp, name)(x, n).numpy(), getattr(sp, name)(x, n + 1).numpy()
    want_a, want_b = _closed(name, x.numpy(), n), _closed(name, x.numpy(), n + 1)
    np.testing.assert_allclose(a, want_a, rtol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-6)


def test_dtypes_follow_torch():
    """PyTorch's result dtype of (input, n); an integer or bool result is the default float
    dtype (chainrule's default is float64, PyTorch's float32)."""
    f = sp.chebyshev_polynomial_t
    f32, f64 = cr.float32, cr.float64
    default = cr.get_default_dtype()
    assert f(cr.ones(2, dtype=f32), 3).dtype == f32
    assert f(cr.ones(2, dtype=f32), 3.0).dtype == f32
    assert f(cr.ones(2, dtype=f64), 3).dtype == f64
    assert f(cr.tensor([1, 2]), 3).dtype == default
    assert f(cr.ones(2, dtype=f32), cr.tensor([3, 2])).dtype == f32
    assert f(cr.ones(2, dtype=f32), cr.tensor([3.0, 2.0], dtype=f64)).dtype == f64
    assert f(cr.ones(2, dtype=f32), cr.tensor(3.0, dtype=f64)).dtype == f32
    assert f(cr.tensor(0.5, dtype=f64), cr.tensor([3, 2])).dtype == f64
    assert f(cr.tensor(0.5, dtype=f64), cr.tensor([3.0, 2.0], dtype=f32)).dtype == f32
    assert f(0.5, cr.tensor([3, 2])).dtype == default
    assert f(0.5, cr.tensor([3.0, 2.0], dtype=f32)).dtype == f32
    assert f(cr.tensor([True, False]), 3).dtype == default
    for name in UNARY:
        assert getattr(sp, name)(cr.tensor([1, 2])).dtype == default
        assert getattr(sp, name)(cr.tensor([1.0, 2.0], dtype=f32)).dtype == f32
    with pytest.raises(TypeError):
        f(cr.ones(2), 1j)


def test_unary_values_match_scipy():
    x = np.array([1e-3, 0.5, 1.0, 2.5, 8.0, 30.0, 200.0, 800.0])
    np.testing.assert_allclose(sp.modified_bessel_k0(cr.tensor(x)).numpy(), sc.k0(x), rtol=1e-15)
    np.testing.assert_allclose(sp.modified_bessel_k1(cr.tensor(x)).numpy(), sc.k1(x), rtol=1e-15)
    np.testing.assert_allclose(sp.scaled_modified_bessel_k0(cr.tensor(x)).numpy(), sc.k0e(x),
                               rtol=1e-15)
    np.testing.assert_allclose(sp.scaled_modified_bessel_k1(cr.tensor(x)).numpy(), sc.k1e(x),
                               rtol=1e-15)
    assert sp.modified_bessel_k0(cr.tensor([0.0])).numpy()[0] == math.inf
    assert np.isnan(sp.modified_bessel_k1(cr.tensor([-1.0])).numpy()).all()
    xa = np.array([-50.0, -3.0, 0.0, 2.0, 100.0])
    np.testing.assert_allclose(sp.airy_ai(cr.tensor(xa)).numpy(), sc.airy(xa)[0], rtol=1e-14)


def test_airy_far_from_the_origin():
    # SciPy's airy is NaN beyond |x| = 2^20: Ai underflows to 0 for x > 0; for x < 0 the
    # asymptotic expansion agrees with SciPy just inside
    out = sp.airy_ai(cr.tensor([1e7, 1e300, math.inf, -math.inf])).numpy()
    np.testing.assert_array_equal(out[:2], [0.0, 0.0])
    assert np.isnan(out[2:]).all()  # as torch's
    z = -(2.0 ** 20) * 0.999
    from chainrule.ops.special_fns import _AIRY_FAR, _airy_pair
    assert abs(z) < _AIRY_FAR
    ai, aip = _airy_pair(np.array([z]))
    zz = -z
    zeta = 2 / 3 * zz ** 1.5
    ph = zeta - math.pi / 4
    approx = (math.cos(ph) + math.sin(ph) * 5 / 72 / zeta) / (math.sqrt(math.pi) * zz ** .25)
    np.testing.assert_allclose(ai, approx, rtol=1e-6, atol=1e-12)
    far = sp.airy_ai(cr.tensor([-2.0 ** 21])).numpy()
    assert np.isfinite(far).all() and abs(far[0]) < 2.0 ** -5


# --- derivatives -------------------------------------------------------------------------------


def _d(fn, x, order=1):
    x = cr.tensor(x, dtype=cr.float64, requires_grad=True)
    y = fn(x)
    for k in range(order):
        (y,) = grad(y.sum(), x, create_graph=k + 1 < order)
    return y.detach().numpy()


def _with_degree(fn, n, x):
    return fn(x, n)


def test_polynomial_derivatives_are_the_closed_forms():
    x = np.array([-1.0, -0.6, 0.1, 0.8, 1.0, 1.7])
    n = 6
    np.testing.assert_allclose(_d(lambda t: sp.chebyshev_polynomial_t(t, n), x),
                               n * sc.eval_chebyu(n - 1, x), rtol=1e-12)
    # U_n'(+-1) = (+-1)^(n+1) n (n+1) (n+2) / 3: finite (no division by x^2 - 1)
    du = _d(lambda t: sp.chebyshev_polynomial_u(t, n), x)
    np.testing.assert_allclose(du[[0, 4]], [-n * (n + 1) * (n + 2) / 3, n * (n + 1) * (n + 2) / 3])
    np.testing.assert_allclose(_d(lambda t: sp.hermite_polynomial_h(t, n), x),
                               2 * n * sc.eval_hermite(n - 1, x), rtol=1e-12)
    np.testing.assert_allclose(_d(lambda t: sp.hermite_polynomial_he(t, n), x),
                               n * sc.eval_hermitenorm(n - 1, x), rtol=1e-12)
    np.testing.assert_allclose(_d(lambda t: sp.laguerre_polynomial_l(t, n), x),
                               -sc.eval_genlaguerre(n - 1, 1.0, x), rtol=1e-12)
    # P_n' by the recurrence (x^2 - 1) P_n' = n (x P_n - P_(n-1)) (DLMF 18.9.8) inside
    xi = x[1:4]
    want = n * (xi * sc.eval_legendre(n, xi) - sc.eval_legendre(n - 1, xi)) / (xi ** 2 - 1)
    np.testing.assert_allclose(_d(lambda t: sp.legendre_polynomial_p(t, n), xi), want,
                               rtol=1e-12)
    # second derivative of T_n: the Chebyshev equation (1 - x^2) y'' = x y' - n^2 y
    d1 = _d(lambda t: sp.chebyshev_polynomial_t(t, n), xi)
    d2 = _d(lambda t: sp.chebyshev_polynomial_t(t, n), xi, order=2)
    np.testing.assert_allclose((1 - xi ** 2) * d2, xi * d1 - n * n * sc.eval_chebyt(n, xi),
                               rtol=1e-10, atol=1e-10)
    # shifted: 2 f'(2x - 1)
    np.testing.assert_allclose(
        _d(lambda t: sp.shifted_chebyshev_polynomial_w(t, n), (x + 1) / 2),
        2 * _d(lambda t: sp.chebyshev_polynomial_w(t, n), x), rtol=1e-12)
    for name in POLYS:  # degree 0 and negative degrees: zero derivative
        fn = getattr(sp, name)
        for k in (0, -3):
            assert not _d(functools.partial(_with_degree, fn, k), x).any()


def test_unary_derivatives_are_the_closed_forms():
    x = np.array([0.2, 1.0, 3.5, 9.0])
    np.testing.assert_allclose(_d(sp.modified_bessel_k0, x), -sc.k1(x), rtol=1e-14)
    np.testing.assert_allclose(_d(sp.modified_bessel_k1, x), -sc.kvp(1, x) * -1, rtol=1e-12)
    np.testing.assert_allclose(_d(sp.scaled_modified_bessel_k0, x),
                               np.exp(x) * (sc.kvp(0, x) + sc.k0(x)), rtol=1e-12)
    np.testing.assert_allclose(_d(sp.scaled_modified_bessel_k1, x),
                               np.exp(x) * (sc.kvp(1, x) + sc.k1(x)), rtol=1e-12)
    xa = np.array([-5.0, -1.0, 0.0, 2.0])
    np.testing.assert_allclose(_d(sp.airy_ai, xa), sc.airy(xa)[1], rtol=1e-13)
    np.testing.assert_allclose(_d(sp.airy_ai, xa, order=2), xa * sc.airy(xa)[0], rtol=1e-13,
                               atol=1e-15)


def test_degree_gets_no_gradient():
    x = cr.tensor([0.3, 0.5], dtype=cr.float64, requires_grad=True)
    n = cr.tensor([2.5, 3.5], dtype=cr.float64, requires_grad=True)
    y = sp.legendre_polynomial_p(x, n)
    (gx,) = grad(y.sum(), x)
    np.testing.assert_allclose(gx.numpy(), [3 * 0.3, (15 * 0.25 - 3) / 2], rtol=1e-14)


# --- wide grids: against SciPy, and against torch.special where installed ------------------------

NS = [-3, -1, 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 13, 25, 40, 2.5, -0.5]
XT = np.concatenate([np.linspace(-3, 3, 61), [-1.0, 1.0, 0.0, 0.5, 1e-3, 0.999, -0.999]])


def _reference(name, x, n):
    """PyTorch's definition for any degree: n truncated toward zero, zero for a negative
    degree, else the polynomial (SciPy, float64)."""
    k = math.trunc(n)
    return np.zeros_like(x) if k < 0 else _closed(name, x, k)


def _assert_near(got, want, tol, n, msg):
    ok = np.isfinite(want) & (np.abs(want) < 1e30)
    scale = np.maximum(np.abs(want), 1.0)  # absolute near the roots
    np.testing.assert_allclose(got[ok] / scale[ok], want[ok] / scale[ok], rtol=0,
                               atol=tol * (1 + abs(n)) ** 2, err_msg=msg)


@pytest.mark.parametrize("name", POLYS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_polynomials_on_a_grid_of_degrees(name, dtype):
    """Every degree (negative, fractional, up to 40) on a grid: against SciPy's value of
    PyTorch's definition in float64 (without torch), and against torch.special."""
    rtol = 1e-10 if dtype == "float64" else 2e-4
    x = XT.astype(dtype)
    for n in NS:
        got = getattr(sp, name)(cr.tensor(x), n).numpy()
        assert got.dtype == np.dtype(dtype)
        # the reference at the same (for float32: rounded) inputs, in float64
        _assert_near(got, _reference(name, x.astype(np.float64), n), rtol, n,
                     f"{name} n={n} (SciPy)")
        if torch is not None:
            want = getattr(torch.special, name)(torch.tensor(x), n).numpy()
            assert got.dtype == want.dtype
            _assert_near(got, want.astype(np.float64), rtol, n, f"{name} n={n} (torch)")
    # n as a tensor, broadcast: row i has degree ns[i]
    ns = np.array([[0], [3], [7], [-2]])
    got = getattr(sp, name)(cr.tensor(x), cr.tensor(ns)).numpy()
    want = np.stack([_reference(name, x.astype(np.float64), int(k)) for k in ns[:, 0]])
    np.testing.assert_allclose(got, want, rtol=rtol * 100, atol=rtol * 100)
    if torch is not None:
        want = getattr(torch.special, name)(torch.tensor(x), torch.tensor(ns)).numpy()
        np.testing.assert_allclose(got, want, rtol=rtol * 100, atol=rtol * 100)


_SCIPY_UNARY = {"airy_ai": lambda x: sc.airy(x)[0], "modified_bessel_k0": sc.k0,
                "modified_bessel_k1": sc.k1, "scaled_modified_bessel_k0": sc.k0e,
                "scaled_modified_bessel_k1": sc.k1e}


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_unary_on_a_wide_grid(name, dtype):
    """From -1e5 to 1e6: against SciPy in float64 at the same (rounded) inputs, and against
    torch.special."""
    x = np.concatenate([np.linspace(-20, 20, 81), [0.0, 1e-8, 100.0, 700.0, 1e6, -1e5]])
    x = x.astype(dtype)
    if name == "airy_ai" and dtype == "float32":  # torch's float32 phase at -1e5 is lost
        x = x[np.abs(x) <= 1e3]
    got = getattr(sp, name)(cr.tensor(x)).numpy()
    assert got.dtype == np.dtype(dtype)
    with np.errstate(all="ignore"):
        ref = _SCIPY_UNARY[name](x.astype(np.float64))
    # K0, K1 of x < 0 are NaN (SciPy's too); K0(0) = K1(0) = inf
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    rtol = {"float64": 1e-12, "float32": 2e-6}[dtype]
    np.testing.assert_allclose(got, ref.astype(dtype), rtol=rtol, atol=rtol * 1e-2)
    if torch is None:
        return
    want = getattr(torch.special, name)(torch.tensor(x)).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # torch's Airy function is the less accurate (2e-6 relative at x = -2.5 in float64)
    rtol = {"float64": 1e-5 if name == "airy_ai" else 1e-13, "float32": 2e-5}[dtype]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 1e-2)


def test_these_are_differentiable_here_and_not_in_torch():
    # here: the gradient of T_3(x) = 4x^3 - 3x is 12x^2 - 3, that of Ai is Ai' (SciPy);
    # PyTorch records no gradient for either
    x = cr.tensor([0.3], dtype=cr.float64, requires_grad=True)
    y = sp.chebyshev_polynomial_t(x, 3)
    assert y.requires_grad
    np.testing.assert_allclose(grad(y.sum(), x)[0].numpy(), [12 * 0.09 - 3], rtol=1e-14)
    y = sp.airy_ai(x)
    assert y.requires_grad
    np.testing.assert_allclose(grad(y.sum(), x)[0].numpy(), [sc.airy(0.3)[1]], rtol=1e-13)
    if torch is not None:
        xt = torch.tensor([0.3], requires_grad=True)
        assert not torch.special.chebyshev_polynomial_t(xt, 3).requires_grad
        assert not torch.special.airy_ai(xt).requires_grad
