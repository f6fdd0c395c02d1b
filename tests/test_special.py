"""chainrule.special (torch.special's names): values against SciPy, first and second
derivatives against their closed forms (evaluated with SciPy), the points where a formula
needs its limit, and (where torch is installed) values and gradients against torch.special.

Gradchecks (first and second order, JVP, float32) of every primitive are in test_table.py
(tests/samples_elementwise.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special as ss

import chainrule as cr
from chainrule import special as sp

try:
    import torch
except ImportError:  # the comparisons with torch run where it is installed
    torch = None

RNG = np.random.default_rng(53)
SQRT_2PI = math.sqrt(2 * math.pi)


def _grads(fn, x, order=1):
    """fn(x), and its first (and second) elementwise derivatives by autograd."""
    t = cr.tensor(x, requires_grad=True)
    y = fn(t)
    (d1,) = cr.autograd.grad(y.sum(), t, create_graph=order > 1)
    if order == 1:
        return y.detach().numpy(), d1.numpy()
    (d2,) = cr.autograd.grad(d1.sum(), t)
    return y.detach().numpy(), d1.detach().numpy(), d2.numpy()


def _same_as_torch(fn, torch_fn, x):
    value, d1 = _grads(fn, x)
    t = torch.tensor(x, requires_grad=True)
    y = torch_fn(t)
    (g,) = torch.autograd.grad(y.sum(), t)
    np.testing.assert_allclose(value, y.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(d1, g.numpy(), rtol=1e-9, atol=1e-12)


# (name, chainrule function, SciPy function, derivative, second derivative, inputs, torch)
UNARY = [
    ("erf", sp.erf, ss.erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x),
     lambda x: -4 * x / np.sqrt(np.pi) * np.exp(-x * x), lambda: RNG.standard_normal(8), "erf"),
    ("erfc", sp.erfc, ss.erfc, lambda x: -2 / np.sqrt(np.pi) * np.exp(-x * x),
     lambda x: 4 * x / np.sqrt(np.pi) * np.exp(-x * x), lambda: RNG.standard_normal(8), "erfc"),
    ("erfcx", sp.erfcx, ss.erfcx, lambda x: 2 * x * ss.erfcx(x) - 2 / np.sqrt(np.pi),
     lambda x: 2 * ss.erfcx(x) + 2 * x * (2 * x * ss.erfcx(x) - 2 / np.sqrt(np.pi)),
     lambda: RNG.standard_normal(8) * 2, "erfcx"),
    ("erfinv", sp.erfinv, ss.erfinv, lambda x: np.sqrt(np.pi) / 2 * np.exp(ss.erfinv(x) ** 2),
     lambda x: np.pi / 2 * ss.erfinv(x) * np.exp(2 * ss.erfinv(x) ** 2),
     lambda: RNG.uniform(-0.95, 0.95, 8), "erfinv"),
    ("gammaln", sp.gammaln, ss.gammaln, ss.digamma, lambda x: ss.polygamma(1, x),
     lambda: np.r_[RNG.uniform(0.2, 6.0, 6), -0.5, -2.3], "gammaln"),
    ("digamma", sp.digamma, ss.digamma, lambda x: ss.polygamma(1, x),
     lambda x: ss.polygamma(2, x), lambda: RNG.uniform(0.2, 6.0, 8), "digamma"),
    ("polygamma3", lambda x: sp.polygamma(3, x), lambda x: ss.polygamma(3, x),
     lambda x: ss.polygamma(4, x), lambda x: ss.polygamma(5, x),
     lambda: RNG.uniform(0.5, 6.0, 8), lambda x: torch.special.polygamma(3, x)),
    ("ndtr", sp.ndtr, ss.ndtr, lambda x: np.exp(-x * x / 2) / SQRT_2PI,
     lambda x: -x * np.exp(-x * x / 2) / SQRT_2PI, lambda: RNG.standard_normal(8) * 3, "ndtr"),
    ("ndtri", sp.ndtri, ss.ndtri, lambda x: SQRT_2PI * np.exp(ss.ndtri(x) ** 2 / 2),
     lambda x: 2 * np.pi * ss.ndtri(x) * np.exp(ss.ndtri(x) ** 2),
     lambda: RNG.uniform(0.02, 0.98, 8), "ndtri"),
    ("log_ndtr", sp.log_ndtr, ss.log_ndtr,
     lambda x: np.exp(-x * x / 2) / SQRT_2PI / ss.ndtr(x), None,
     lambda: np.r_[RNG.standard_normal(6) * 3, -20.0, 8.0], "log_ndtr"),
    ("i0", sp.i0, ss.i0, ss.i1, lambda x: ss.i0(x) - ss.i1(x) / x,
     lambda: RNG.standard_normal(8) * 2, "i0"),
    ("i0e", sp.i0e, ss.i0e, lambda x: ss.i1e(x) - np.sign(x) * ss.i0e(x), None,
     lambda: RNG.standard_normal(8) * 2, "i0e"),
    ("i1", sp.i1, ss.i1, lambda x: ss.i0(x) - ss.i1(x) / x, None,
     lambda: RNG.standard_normal(8) * 2, "i1"),
    ("i1e", sp.i1e, ss.i1e, lambda x: ss.i0e(x) - ss.i1e(x) * (np.sign(x) + 1 / x), None,
     lambda: RNG.standard_normal(8) * 2, "i1e"),
    ("entr", sp.entr, ss.entr, lambda x: -(np.log(x) + 1), lambda x: -1 / x,
     lambda: RNG.uniform(0.1, 3.0, 8), "entr"),
    ("expit", sp.expit, ss.expit, lambda x: ss.expit(x) * (1 - ss.expit(x)), None,
     lambda: RNG.standard_normal(8), "expit"),
    ("logit", sp.logit, ss.logit, lambda x: 1 / (x * (1 - x)), None,
     lambda: RNG.uniform(0.05, 0.95, 8), "logit"),
    ("sinc", sp.sinc, np.sinc, lambda x: (np.cos(np.pi * x) - np.sinc(x)) / x, None,
     lambda: RNG.uniform(0.2, 3.0, 8), "sinc"),
    ("exp2", sp.exp2, np.exp2, lambda x: np.exp2(x) * np.log(2), None,
     lambda: RNG.standard_normal(8), "exp2"),
]


@pytest.mark.parametrize("name,fn,ref,d1,d2,make,torch_name", UNARY, ids=[u[0] for u in UNARY])
def test_values_and_derivatives(name, fn, ref, d1, d2, make, torch_name):
    x = make()
    if d2 is None:
        value, g = _grads(fn, x)
    else:
        value, g, h = _grads(fn, x, order=2)
        np.testing.assert_allclose(h, d2(x), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(value, ref(x), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(g, d1(x), rtol=1e-9, atol=1e-12)
    if torch is not None:
        tfn = getattr(torch.special, torch_name) if isinstance(torch_name, str) else torch_name
        _same_as_torch(fn, tfn, x)


def test_top_level_names_are_the_special_ones():
    assert cr.lgamma is sp.gammaln and cr.digamma is sp.digamma is sp.psi
    assert cr.erfc is sp.erfc and cr.erfinv is sp.erfinv and cr.i0 is sp.i0
    assert cr.polygamma is sp.polygamma and cr.xlogy is sp.xlogy and cr.sinc is sp.sinc
    assert sp.expit is cr.sigmoid and sp.erf is cr.erf and sp.logsumexp is cr.logsumexp
    assert cr.mvlgamma is sp.multigammaln and cr.logit is sp.logit
    x = cr.tensor([0.7, 2.5], requires_grad=True)
    np.testing.assert_array_equal(x.lgamma().detach().numpy(), sp.gammaln(x).detach().numpy())
    np.testing.assert_array_equal(x.digamma().detach().numpy(), sp.psi(x).detach().numpy())
    np.testing.assert_array_equal(x.polygamma(2).detach().numpy(),
                                  sp.polygamma(2, x).detach().numpy())
    np.testing.assert_allclose(sp.gammaln(x).detach().numpy(), ss.gammaln([0.7, 2.5]))


def test_polygamma_zero_is_digamma_and_n_is_checked():
    x = RNG.uniform(0.5, 4.0, 6)
    np.testing.assert_array_equal(sp.polygamma(0, cr.tensor(x)).numpy(), ss.digamma(x))
    for n in (1, 2, 5):
        np.testing.assert_allclose(sp.polygamma(n, cr.tensor(x)).numpy(), ss.polygamma(n, x),
                                   rtol=1e-12)
    with pytest.raises(ValueError, match="polygamma: n must be a non-negative int"):
        sp.polygamma(-1, cr.tensor(x))
    with pytest.raises(ValueError, match="polygamma"):
        sp.polygamma(1.5, cr.tensor(x))


def test_third_derivative_of_lgamma_goes_through_polygamma():
    x = cr.tensor([0.8, 3.0], requires_grad=True)
    (d1,) = cr.autograd.grad(sp.gammaln(x).sum(), x, create_graph=True)
    (d2,) = cr.autograd.grad(d1.sum(), x, create_graph=True)
    (d3,) = cr.autograd.grad(d2.sum(), x)
    np.testing.assert_allclose(d3.numpy(), ss.polygamma(2, [0.8, 3.0]), rtol=1e-12)


def test_bessel_derivatives_take_their_limits_at_zero():
    x = cr.tensor([0.0, 0.0], requires_grad=True)
    for fn, expected in ((sp.i1, 0.5), (sp.i1e, 0.5), (sp.i0, 0.0)):
        (g,) = cr.autograd.grad(fn(x).sum(), x)
        np.testing.assert_array_equal(g.numpy(), [expected, expected])
    if torch is not None:
        for name in ("i1", "i1e", "i0"):
            t = torch.zeros(2, dtype=torch.float64, requires_grad=True)
            (tg,) = torch.autograd.grad(getattr(torch.special, name)(t).sum(), t)
            (g,) = cr.autograd.grad(getattr(sp, name)(x).sum(), x)
            np.testing.assert_array_equal(g.numpy(), tg.numpy())


def test_log_ndtr_gradient_is_finite_far_in_the_lower_tail():
    x = np.array([-40.0, -20.0, 30.0])
    value, g = _grads(sp.log_ndtr, x)
    np.testing.assert_allclose(value, ss.log_ndtr(x), rtol=1e-12)
    assert np.all(np.isfinite(g))
    # pdf / cdf ~ -x - 1/x + 2/x^3 for x -> -inf (Mills ratio), and ~0 for large x
    lower = x[:2]
    np.testing.assert_allclose(g[:2], -lower - 1 / lower + 2 / lower ** 3, rtol=1e-6)
    assert 0 <= g[2] < 1e-100


def test_zeta_is_differentiable_in_q_only():
    q = RNG.uniform(0.5, 3.0, 5)
    t = cr.tensor(q, requires_grad=True)
    out = sp.zeta(3.0, t)
    np.testing.assert_allclose(out.detach().numpy(), ss.zeta(3.0, q), rtol=1e-13)
    (g,) = cr.autograd.grad(out.sum(), t)
    np.testing.assert_allclose(g.numpy(), -3.0 * ss.zeta(4.0, q), rtol=1e-12)
    x = cr.tensor(np.full(5, 3.0), requires_grad=True)
    with pytest.raises(NotImplementedError, match="zeta: the derivative with respect to x"):
        sp.zeta(x, t).sum().backward()
    if torch is not None:
        tq = torch.tensor(q, requires_grad=True)
        y = torch.special.zeta(torch.tensor(3.0, dtype=torch.float64), tq)
        (tg,) = torch.autograd.grad(y.sum(), tq)
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-10)


def test_xlogy_and_xlog1py_at_zero():
    x = cr.tensor([0.0, 0.0, 1.5], requires_grad=True)
    y = cr.tensor([-1.0, 2.0, 0.5], requires_grad=True)
    np.testing.assert_array_equal(sp.xlog1py(x, y).detach().numpy()[:2], [0.0, 0.0])
    np.testing.assert_allclose(sp.xlog1py(x, y).detach().numpy(),
                               ss.xlog1py([0.0, 0.0, 1.5], [-1.0, 2.0, 0.5]))
    y2 = cr.tensor([-0.5, 2.0, 0.5], requires_grad=True)  # x / (1 + y): 0 / 0 at y = -1
    gx, gy = cr.autograd.grad(sp.xlog1py(x, y2).sum(), (x, y2))
    np.testing.assert_allclose(gx.numpy(), np.log1p([-0.5, 2.0, 0.5]))  # log1p(y), as torch
    with np.errstate(invalid="ignore"):  # y's gradient x / (1 + y) is 0 / 0 at y = -1
        (gx,) = cr.autograd.grad(sp.xlog1py(x, y).sum(), x)
    np.testing.assert_array_equal(gx.numpy()[0], 0.0)  # x = 0 and y <= -1: 0, not -inf
    np.testing.assert_allclose(gy.numpy(), [0.0, 0.0, 1.5 / 1.5])
    np.testing.assert_allclose(sp.xlogy(x, y + 2).detach().numpy(),
                               ss.xlogy([0.0, 0.0, 1.5], [1.0, 4.0, 2.5]))
    if torch is not None:
        a, b = np.array([0.0, 1.5, -0.5]), np.array([2.0, 0.5, 3.0])
        _same_as_torch(lambda t: sp.xlog1py(t, cr.tensor(b)),
                       lambda t: torch.special.xlog1py(t, torch.tensor(b)), a)
        _same_as_torch(lambda t: sp.xlog1py(cr.tensor(a), t),
                       lambda t: torch.special.xlog1py(torch.tensor(a), t), b)


def test_entr_at_zero_and_below():
    x = np.array([0.0, -1.0, 0.5])
    np.testing.assert_array_equal(sp.entr(cr.tensor(x)).numpy(), ss.entr(x))
    np.testing.assert_array_equal(sp.entr(cr.tensor(x)).numpy()[:2], [0.0, -np.inf])


def test_logit_eps_clamps_and_zeroes_the_gradient_outside():
    x = np.array([0.05, 0.3, 0.5, 0.95])
    t = cr.tensor(x, requires_grad=True)
    out = sp.logit(t, eps=0.1)
    p = np.clip(x, 0.1, 0.9)
    np.testing.assert_allclose(out.detach().numpy(), np.log(p / (1 - p)), rtol=1e-13)
    (g,) = cr.autograd.grad(out.sum(), t)
    np.testing.assert_allclose(g.numpy(), [0.0, 1 / (0.3 * 0.7), 4.0, 0.0], rtol=1e-13)
    np.testing.assert_allclose(t.logit().detach().numpy(), ss.logit(x), rtol=1e-13)
    if torch is not None:
        _same_as_torch(lambda s: sp.logit(s, eps=0.1), lambda s: torch.special.logit(s, eps=0.1),
                       x)


def test_multigammaln_and_betaln():
    a = RNG.uniform(2.0, 5.0, 6)
    b = RNG.uniform(0.5, 3.0, 6)
    np.testing.assert_allclose(sp.multigammaln(cr.tensor(a), 3).numpy(),
                               [ss.multigammaln(v, 3) for v in a], rtol=1e-12)
    np.testing.assert_allclose(sp.betaln(cr.tensor(a), cr.tensor(b)).numpy(), ss.betaln(a, b),
                               rtol=1e-12)
    value, g = _grads(lambda t: sp.multigammaln(t, 3), a)
    np.testing.assert_allclose(g, sum(ss.digamma(a - i / 2) for i in range(3)), rtol=1e-12)
    with pytest.raises(ValueError, match="mvlgamma: p must be a positive int"):
        sp.multigammaln(cr.tensor(a), 0)
    if torch is not None:
        _same_as_torch(lambda t: sp.multigammaln(t, 3),
                       lambda t: torch.special.multigammaln(t, 3), a)


def test_softmax_family_with_dtype():
    x = RNG.standard_normal((3, 4))
    t = cr.tensor(x.astype(np.float32))
    s = sp.softmax(t, 1, dtype=cr.float64)
    assert s.dtype == np.float64
    np.testing.assert_allclose(s.numpy(), ss.softmax(x.astype(np.float32).astype(np.float64),
                                                     axis=1), rtol=1e-12)
    np.testing.assert_allclose(sp.log_softmax(cr.tensor(x), 0).numpy(),
                               ss.log_softmax(x, axis=0), rtol=1e-12)
    np.testing.assert_allclose(sp.logsumexp(cr.tensor(x), 1).numpy(), ss.logsumexp(x, axis=1),
                               rtol=1e-12)
    assert sp.softmax(t, 0).dtype == np.float32


def test_special_functions_keep_float32():
    x = cr.tensor(np.array([0.3, 0.6], dtype=np.float32), requires_grad=True)
    for fn in (sp.gammaln, sp.digamma, lambda t: sp.polygamma(2, t), sp.erfc, sp.erfinv,
               sp.erfcx, sp.ndtri, sp.log_ndtr, sp.ndtr, sp.i0, sp.i0e, sp.i1, sp.i1e, sp.entr,
               lambda t: sp.zeta(2.0, t), lambda t: sp.xlog1py(t, t)):
        y = fn(x)
        (g,) = cr.autograd.grad(y.sum(), x)
        assert y.dtype == np.float32 and g.dtype == np.float32


def test_special_functions_name_the_backend_that_lacks_them():
    xps = pytest.importorskip("array_api_strict")
    t = cr.tensor(xps.asarray([0.5, 1.5], device=xps.Device("device1")))
    with pytest.raises(NotImplementedError, match="gammaln is not available on the "
                                                  "array_api_strict backend"):
        sp.gammaln(t)
    # the ones written with the standard's functions run there
    np.testing.assert_allclose(sp.entr(t).numpy(), ss.entr([0.5, 1.5]), rtol=1e-14)
    np.testing.assert_allclose(sp.xlogy(t, t).numpy(), ss.xlogy([0.5, 1.5], [0.5, 1.5]))
    np.testing.assert_allclose(sp.sinc(t).numpy(), np.sinc([0.5, 1.5]), rtol=1e-14)
