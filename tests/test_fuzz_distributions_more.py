"""Regressions from differential fuzzing of chainrule.distributions against torch.distributions
(drivers outside the repo). Each test checks values derived by hand, with SciPy, or by finite
differences, and additionally compares with torch.distributions when torch is installed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import chainrule as cr
import chainrule.distributions as D

try:
    import torch
    import torch.distributions as TD
except ImportError:
    torch = None
    TD = None


def a(x):
    return np.asarray(x.detach().numpy())


def C(x, requires_grad=False):
    return cr.tensor(np.asarray(x, dtype=np.float64), requires_grad=requires_grad)


def T(x, requires_grad=False):
    return torch.tensor(np.asarray(x, dtype=np.float64), requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# expand(): distributions built from others, and MultivariateNormal's unbroadcast factor


@pytest.mark.parametrize("name", ["HalfNormal", "HalfCauchy"])
def test_expand_half_distributions(name):
    s = 1.7
    d = getattr(D, name)(C([s])).expand((3,))
    assert tuple(d.sample().shape) == (3,)
    assert tuple(d.rsample((2,)).shape) == (2, 3)
    # entropy of |X|: H(N(0, s)) - log 2 and H(Cauchy(0, s)) - log 2 (SciPy's halfnorm /
    # halfcauchy with scale s)
    ref = (stats.halfnorm if name == "HalfNormal" else stats.halfcauchy)(scale=s).entropy()
    np.testing.assert_allclose(a(d.entropy()), np.full(3, ref), rtol=1e-12)
    if torch is not None:
        t = getattr(TD, name)(T([s])).expand((3,))
        assert tuple(t.sample().shape) == (3,)
        np.testing.assert_allclose(a(d.entropy()), t.entropy().numpy(), rtol=1e-12)


def test_expand_lognormal_and_onehot():
    d = D.LogNormal(C([0.3]), C([0.5])).expand((4, 1))
    assert tuple(d.sample((2,)).shape) == (2, 4, 1)
    # entropy of a log-normal: mu + 1/2 + log(sigma sqrt(2 pi))
    np.testing.assert_allclose(a(d.entropy()), np.full((4, 1), 0.3 + 0.5 + math.log(
        0.5 * math.sqrt(2 * math.pi))), rtol=1e-12)
    probs = np.array([0.2, 0.5, 0.3])
    oh = D.OneHotCategorical(probs=C(probs)).expand((2, 4))
    assert tuple(oh.sample().shape) == (2, 4, 3)
    np.testing.assert_allclose(a(oh.mean), np.broadcast_to(probs, (2, 4, 3)))
    np.testing.assert_allclose(a(oh.entropy()), np.full((2, 4), -(probs * np.log(probs)).sum()))
    if torch is not None:
        t = TD.OneHotCategorical(probs=T(probs)).expand((2, 4))
        np.testing.assert_allclose(a(oh.entropy()), t.entropy().numpy(), rtol=1e-12)
        assert tuple(t.sample().shape) == (2, 4, 3)


def test_expand_mvn_one_dimensional_event():
    # batch (1,), event (1,): the unbroadcast (1, 1) Cholesky factor must stay a matrix
    d = D.MultivariateNormal(C([[0.25]]), covariance_matrix=C([[0.5]])).expand((2, 1))
    x = np.array([[[0.1]], [[-0.7]]])
    lp = d.log_prob(C(x))
    assert tuple(lp.shape) == (2, 1)
    np.testing.assert_allclose(a(lp), stats.norm(0.25, math.sqrt(0.5)).logpdf(x[..., 0]),
                               rtol=1e-12)
    assert tuple(d.sample().shape) == (2, 1, 1)
    np.testing.assert_allclose(a(d.variance), np.full((2, 1, 1), 0.5), rtol=1e-12)
    if torch is not None:
        t = TD.MultivariateNormal(T([[0.25]]), covariance_matrix=T([[0.5]])).expand((2, 1))
        np.testing.assert_allclose(a(lp), t.log_prob(T(x)).numpy(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# StudentT.variance: no NaN gradient leaking through where() at df = 2


def test_studentt_variance_gradient_at_df_two():
    df, scale = C([2.0, 4.0, 0.5], True), C([1.5, 1.5, 1.5], True)
    v = D.StudentT(df, 0.0, scale).variance
    np.testing.assert_array_equal(a(v)[:1], [math.inf])
    assert math.isnan(a(v)[2])
    g_df, g_scale = cr.autograd.grad(v[1:2].sum(), [df, scale])
    # d/d scale (s^2 df / (df - 2)) = 2 s df / (df - 2); d/d df = -2 s^2 / (df - 2)^2
    np.testing.assert_allclose(a(g_scale), [0.0, 2 * 1.5 * 4 / 2, 0.0], rtol=1e-12)
    np.testing.assert_allclose(a(g_df), [0.0, -2 * 1.5 ** 2 / 4, 0.0], rtol=1e-12)
    sd = D.StudentT(df, 0.0, scale).stddev
    g = cr.autograd.grad(sd.sum(), [scale])[0]
    assert np.all(np.isfinite(a(g)[:1]))  # inf * (...) rows: gradient 0, not NaN
    if torch is not None:
        tdf, ts = T([2.0, 4.0, 0.5], True), T([1.5, 1.5, 1.5], True)
        tv = TD.StudentT(tdf, 0.0, ts).variance
        tg = torch.autograd.grad(tv[1:2].sum(), [tdf, ts])
        np.testing.assert_allclose(a(g_scale), tg[1].numpy(), rtol=1e-12)
        np.testing.assert_allclose(a(g_df), tg[0].numpy(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# modes


def test_beta_and_dirichlet_mode():
    c1 = np.array([3.0, 0.5, 2.0, 0.5, 1.0])
    c0 = np.array([2.0, 2.0, 0.5, 0.7, 1.0])
    m = a(D.Beta(C(c1), C(c0)).mode)
    # argmax of x^(a-1) (1-x)^(b-1): (a-1)/(a+b-2) for a, b > 1; the end where the density is
    # unbounded otherwise (0 for a < 1 <= b, 1 for b < 1 <= a); 1 (PyTorch's pick) for both
    # below 1; undefined (NaN) for the uniform a = b = 1
    np.testing.assert_allclose(m[:4], [2 / 3, 0.0, 1.0, 1.0], rtol=1e-12)
    assert math.isnan(m[4])
    x = np.linspace(1e-3, 1 - 1e-3, 9999)
    assert abs(x[np.argmax(stats.beta(3.0, 2.0).pdf(x))] - m[0]) < 1e-3
    alpha = C([[3.0, 2.0, 1.5], [0.5, 0.3, 0.9], [0.5, 2.0, 3.0]], True)
    dm = D.Dirichlet(alpha).mode
    np.testing.assert_allclose(a(dm), [[2 / 3.5, 1 / 3.5, 0.5 / 3.5], [1, 0, 0],
                                       [0, 1 / 3, 2 / 3]], rtol=1e-12)
    g = cr.autograd.grad((dm * C(np.arange(9.0).reshape(3, 3))).sum(), [alpha],
                         retain_graph=True)[0]
    assert np.all(np.isfinite(a(g)))
    # d m_0 / d alpha_0 of (alpha - 1) / sum(alpha - 1) at row 0: (S - (a0 - 1)) / S^2
    np.testing.assert_allclose(a(cr.autograd.grad(dm[0, 0], [alpha])[0])[0, 0],
                               (3.5 - 2) / 3.5 ** 2, rtol=1e-12)
    if torch is not None:
        np.testing.assert_allclose(m, TD.Beta(T(c1), T(c0)).mode.numpy(), rtol=1e-12)
        ta = T(a(alpha), True)
        tm = TD.Dirichlet(ta).mode
        np.testing.assert_allclose(a(dm), tm.detach().numpy(), rtol=1e-12)
        tg = torch.autograd.grad((tm * T(np.arange(9.0).reshape(3, 3))).sum(), [ta])[0]
        np.testing.assert_allclose(a(g), tg.numpy(), rtol=1e-12)


def test_uniform_and_exponential_mode():
    u = D.Uniform(C([0.0, 1.0]), C([1.0, 3.0])).mode
    assert tuple(u.shape) == (2,) and np.isnan(a(u)).all()
    e = D.Exponential(C([0.5, 2.0])).mode
    np.testing.assert_array_equal(a(e), [0.0, 0.0])  # the density rate e^(-rate x) peaks at 0
    if torch is not None:
        assert np.isnan(TD.Uniform(T([0.0, 1.0]), T([1.0, 3.0])).mode.numpy()).all()
        np.testing.assert_array_equal(a(e), TD.Exponential(T([0.5, 2.0])).mode.numpy())


# ---------------------------------------------------------------------------------------------
# argument validation


def test_geometric_rejects_zero_probability():
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.Geometric(probs=C([0.5, 0.0]), validate_args=True)
    # without validation p = 0 is computed through: log p(0) = log 0 = -inf
    d = D.Geometric(probs=C([0.0]), validate_args=False)
    assert a(d.log_prob(C([0.0])))[0] == -math.inf
    if torch is not None:
        with pytest.raises(ValueError, match="Expected parameter probs"):
            TD.Geometric(probs=T([0.5, 0.0]), validate_args=True)


def test_lognormal_cdf_at_zero():
    d = D.LogNormal(C(0.3), C(0.5), validate_args=True)
    np.testing.assert_allclose(a(d.cdf(C([0.0, 1.2]))),
                               stats.lognorm(s=0.5, scale=math.exp(0.3)).cdf([0.0, 1.2]),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="support"):
        d.cdf(C([-1.0]))
    if torch is not None:
        t = TD.LogNormal(T(0.3), T(0.5), validate_args=True)
        np.testing.assert_allclose(a(d.cdf(C([0.0, 1.2]))), t.cdf(T([0.0, 1.2])).numpy(),
                                   rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Independent


def test_independent_enumerate_support():
    base = D.Bernoulli(probs=C([0.2, 0.7]))
    ind0 = D.Independent(base, 0)
    assert ind0.has_enumerate_support
    np.testing.assert_array_equal(a(ind0.enumerate_support()), [[0, 0], [1, 1]])
    with pytest.raises(NotImplementedError, match="cartesian product"):
        D.Independent(base, 1).enumerate_support()
    if torch is not None:
        t = TD.Independent(TD.Bernoulli(probs=T([0.2, 0.7])), 0)
        np.testing.assert_array_equal(a(ind0.enumerate_support()),
                                      t.enumerate_support().numpy())


# ---------------------------------------------------------------------------------------------
# TransformedDistribution: shapes from the transforms, support, cdf with a Tensor sign


def test_transformed_broadcasts_base_to_transform_parameters():
    loc = np.array([0.5, -1.0, 2.0])
    d = D.TransformedDistribution(D.Normal(C(0.0), C(1.0)),
                                  [D.AffineTransform(C(loc), 2.0)])
    assert tuple(d.batch_shape) == (3,) and tuple(d.event_shape) == ()
    x = np.array([[0.1, 0.2, 0.3], [1.0, -2.0, 4.0]])
    # loc + 2 X with X ~ N(0, 1) is N(loc, 2)
    np.testing.assert_allclose(a(d.log_prob(C(x))), stats.norm(loc, 2.0).logpdf(x),
                               rtol=1e-12)
    assert tuple(d.sample((5,)).shape) == (5, 3)
    e = d.expand((2, 3))
    assert tuple(e.sample().shape) == (2, 3)
    if torch is not None:
        t = TD.TransformedDistribution(TD.Normal(T(0.0), T(1.0)),
                                       [TD.AffineTransform(T(loc), 2.0)])
        assert tuple(t.batch_shape) == tuple(d.batch_shape)
        np.testing.assert_allclose(a(d.log_prob(C(x))), t.log_prob(T(x)).numpy(), rtol=1e-12)


def test_transformed_validates_values_with_event_dims():
    # the base does not validate: the check must be the TransformedDistribution's own
    base = D.Independent(D.Normal(C(np.zeros(3)), C(np.ones(3)), validate_args=False), 1)
    d = D.TransformedDistribution(base, [D.ExpTransform()], validate_args=True)
    assert tuple(d.event_shape) == (3,)
    y = np.array([0.5, 1.0, 2.0])
    # log-normal entries: sum of N(log y; 0, 1) - log y
    np.testing.assert_allclose(a(d.log_prob(C(y))),
                               (stats.norm.logpdf(np.log(y)) - np.log(y)).sum(), rtol=1e-12)
    with pytest.raises(ValueError, match="support"):
        d.log_prob(C([0.5, -1.0, 2.0]))  # was a silent NaN
    if torch is not None:
        tb = TD.Independent(TD.Normal(T(np.zeros(3)), T(np.ones(3)), validate_args=False), 1)
        t = TD.TransformedDistribution(tb, [TD.ExpTransform()], validate_args=True)
        with pytest.raises(ValueError, match="support"):
            t.log_prob(T([0.5, -1.0, 2.0]))


def test_transformed_cdf_icdf_with_tensor_sign():
    scale = np.array([-1.0, 2.0])
    x = np.array([0.3, 0.3])
    d = D.TransformedDistribution(D.Normal(C(0.0), C(1.0)),
                                  [D.AffineTransform(0.0, C(scale))])
    # Y = s X: P(Y <= y) = Phi(y / s) for s > 0 and 1 - Phi(y / s) for s < 0
    expected = np.where(scale > 0, stats.norm.cdf(x / scale), 1 - stats.norm.cdf(x / scale))
    np.testing.assert_allclose(a(d.cdf(C(x))), expected, rtol=1e-12)
    q = np.array([0.2, 0.9])
    expected_q = np.where(scale > 0, scale * stats.norm.ppf(q), scale * stats.norm.ppf(1 - q))
    np.testing.assert_allclose(a(d.icdf(C(q))), expected_q, rtol=1e-12)
    if torch is not None:
        t = TD.TransformedDistribution(TD.Normal(T(0.0), T(1.0)),
                                       [TD.AffineTransform(0.0, T(scale))])
        np.testing.assert_allclose(a(d.cdf(C(x))), t.cdf(T(x)).numpy(), rtol=1e-12)
        np.testing.assert_allclose(a(d.icdf(C(q))), t.icdf(T(q)).numpy(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# transforms: caches, event dims, IndependentTransform, biject_to(independent)


@pytest.mark.parametrize("make", [
    lambda: D.AffineTransform(1.0, 2.0),
    lambda: D.PowerTransform(3.0),
    lambda: D.ComposeTransform([D.ExpTransform(), D.AffineTransform(1.0, 2.0)]),
    lambda: D.ExpTransform().inv,
])
def test_with_cache_returns_cached_inverse(make):
    t = make().with_cache(1)
    x = C([0.4, 1.3])
    y = t(x)
    assert t.inv(y) is x  # the cached pair, not a recomputation
    assert t.with_cache(1) is t


def test_affine_event_dim_domain_and_compose():
    t = D.AffineTransform(0.0, 2.0, event_dim=1)
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1
    c = D.ComposeTransform([t, D.ExpTransform()])
    assert c.domain.event_dim == 1 and c.codomain.event_dim == 1
    x = C([[0.1, 0.2, 0.3]])
    # log |det| of x -> exp(2 x) over 3 entries: 3 log 2 + sum 2 x
    np.testing.assert_allclose(a(c.log_abs_det_jacobian(x, c(x))), [3 * math.log(2) + 1.2],
                               rtol=1e-12)
    if torch is not None:
        tt = TD.ComposeTransform([TD.AffineTransform(0.0, 2.0, event_dim=1), TD.ExpTransform()])
        assert tt.domain.event_dim == c.domain.event_dim
        xt = T([[0.1, 0.2, 0.3]])
        np.testing.assert_allclose(a(c.log_abs_det_jacobian(x, c(x))),
                                   tt.log_abs_det_jacobian(xt, tt(xt)).numpy(), rtol=1e-12)


def test_biject_to_independent():
    con = D.constraints.independent(D.constraints.positive, 1)
    t = D.biject_to(con)
    u = C([[0.1, -0.4, 1.0], [2.0, 0.0, -1.0]], True)
    y = t(u)
    np.testing.assert_allclose(a(y), np.exp(a(u)), rtol=1e-12)
    # y = exp(u) entrywise: log |det J| summed over the reinterpreted dim is sum u
    np.testing.assert_allclose(a(t.log_abs_det_jacobian(u, y)), a(u).sum(-1), rtol=1e-12)
    assert t.domain.event_dim == 1 and t.codomain.event_dim == 1
    np.testing.assert_allclose(a(t.inv(y)), a(u), rtol=1e-12)
    assert D.transform_to(D.constraints.real_vector)(u) is u
    with pytest.raises(ValueError, match="Too few dimensions"):
        D.biject_to(D.constraints.independent(D.constraints.real, 2))(C([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"Expected value.dim\(\) >= 2"):
        D.constraints.independent(D.constraints.real, 2).check(C([1.0, 2.0]))
    if torch is not None:
        tt = TD.biject_to(TD.constraints.independent(TD.constraints.positive, 1))
        ut = T(a(u))
        np.testing.assert_allclose(a(t.log_abs_det_jacobian(u, y)),
                                   tt.log_abs_det_jacobian(ut, tt(ut)).numpy(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# KL divergences across families (were NotImplementedError; PyTorch computes them)


def _kl_quad(logp, logq, lo, hi):
    from scipy import integrate
    val, _ = integrate.quad(lambda x: math.exp(logp(x)) * (logp(x) - logq(x)), lo, hi,
                            limit=200)
    return val


@pytest.mark.parametrize("pair", ["laplace_laplace", "laplace_normal",
                                  "exponential_normal", "gamma_normal", "gumbel_gumbel",
                                  "normal_gumbel", "beta_gamma", "uniform_beta",
                                  "uniform_gumbel", "exponential_gumbel", "normal_laplace"])
def test_kl_cross_family_against_quadrature(pair):
    P = {"laplace": (lambda: D.Laplace(C(0.3), C(1.2)), stats.laplace(0.3, 1.2)),
         "normal": (lambda: D.Normal(C(-0.4), C(0.8)), stats.norm(-0.4, 0.8)),
         "exponential": (lambda: D.Exponential(C(1.5)), stats.expon(scale=1 / 1.5)),
         "gamma": (lambda: D.Gamma(C(2.5), C(1.7)), stats.gamma(2.5, scale=1 / 1.7)),
         "gumbel": (lambda: D.Gumbel(C(0.2), C(1.3)), stats.gumbel_r(0.2, 1.3)),
         "beta": (lambda: D.Beta(C(2.0), C(3.0)), stats.beta(2.0, 3.0)),
         "uniform": (lambda: D.Uniform(C(0.2), C(0.7)), stats.uniform(0.2, 0.5))}
    Q = {"laplace": (lambda: D.Laplace(C(-0.5), C(0.9)), stats.laplace(-0.5, 0.9)),
         "normal": (lambda: D.Normal(C(0.6), C(1.4)), stats.norm(0.6, 1.4)),
         "gamma": (lambda: D.Gamma(C(1.8), C(0.6)), stats.gamma(1.8, scale=1 / 0.6)),
         "gumbel": (lambda: D.Gumbel(C(-0.3), C(0.9)), stats.gumbel_r(-0.3, 0.9)),
         "beta": (lambda: D.Beta(C(1.5), C(2.5)), stats.beta(1.5, 2.5))}
    pn, qn = pair.split("_")
    (pc, ps), (qc, qs) = P[pn], Q[qn]
    lo, hi = ps.support()
    lo, hi = max(lo, ps.ppf(1e-13)), min(hi, ps.isf(1e-13))
    expected = _kl_quad(ps.logpdf, qs.logpdf, lo, hi)
    np.testing.assert_allclose(a(D.kl_divergence(pc(), qc())), expected, rtol=1e-6, atol=1e-9)
    if torch is not None:
        def tdist(name, d):
            cls = getattr(TD, type(d).__name__)
            params = {"Laplace": ("loc", "scale"), "Normal": ("loc", "scale"),
                      "Gumbel": ("loc", "scale"), "Exponential": ("rate",),
                      "Gamma": ("concentration", "rate"), "Uniform": ("low", "high"),
                      "Beta": ("concentration1", "concentration0")}[type(d).__name__]
            return cls(*[T(a(getattr(d, k))) for k in params])
        np.testing.assert_allclose(a(D.kl_divergence(pc(), qc())),
                                   TD.kl_divergence(tdist(pn, pc()), tdist(qn, qc())).numpy(),
                                   rtol=1e-10)


def test_kl_cross_family_gradient_and_infinite_pairs():
    from chainrule.autograd import gradcheck
    assert gradcheck(lambda m, s, mq, sq: D.kl_divergence(D.Laplace(m, s), D.Normal(mq, sq)),
                     (C(0.3, True), C(0.7, True), C(-0.2, True), C(1.1, True)))
    assert gradcheck(lambda c, r, m, s: D.kl_divergence(D.Gamma(c, r), D.Gumbel(m, s)),
                     (C(1.7, True), C(0.9, True), C(0.4, True), C(1.3, True)))
    # p with mass where q has none: infinite, shaped like p's parameter
    kl = D.kl_divergence(D.Normal(C([0.0, 1.0]), C(1.0)), D.Exponential(C(2.0)))
    np.testing.assert_array_equal(a(kl), [math.inf, math.inf])
    kl = D.kl_divergence(D.Uniform(C([-0.5, 0.5]), C(2.0)), D.Exponential(C(1.0)))
    # U(0.5, 2) || Exp(1): E[x] - log(width) = 1.25 - log 1.5; U(-0.5, 2) leaves the support
    np.testing.assert_allclose(a(kl), [math.inf, 1.25 - math.log(1.5)], rtol=1e-12)
