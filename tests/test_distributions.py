"""chainrule.distributions: densities, moments, cdf/icdf and KL divergences against closed
forms from SciPy / NumPy (always) and against torch.distributions (when torch is installed);
gradients of log_prob and of reparameterised draws by gradcheck; sample statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import chainrule as cr
import chainrule.distributions as D
from chainrule.autograd import gradcheck

try:
    import torch
    import torch.distributions as TD
except ImportError:
    torch = None
    TD = None


def a(x):
    return np.asarray(x.detach().numpy())


def T(x):
    return torch.tensor(np.asarray(x))


def C(x):
    return cr.tensor(np.asarray(x, dtype=np.float64))


L_TRIL = np.array([[1.2, 0.0, 0.0], [0.3, 0.8, 0.0], [-0.5, 0.2, 1.5]])
COV = L_TRIL @ L_TRIL.T
PROBS = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])

# name: (constructor of params, params, values, scipy frozen distribution of params)
CASES = {
    "Normal": (lambda p: D.Normal(p[0], p[1]), ([0.3, -1.2], [1.5, 0.4]), [0.1, -0.9],
               lambda p: stats.norm(p[0], p[1])),
    "Uniform": (lambda p: D.Uniform(p[0], p[1]), ([0.3, -1.2], [1.5, 0.4]), [0.7, 0.1],
                lambda p: stats.uniform(p[0], p[1] - p[0])),
    "Exponential": (lambda p: D.Exponential(p[0]), ([0.5, 2.0],), [0.7, 0.1],
                    lambda p: stats.expon(scale=1 / p[0])),
    "Laplace": (lambda p: D.Laplace(p[0], p[1]), ([0.3, -1.2], [1.5, 0.4]), [0.1, -0.9],
                lambda p: stats.laplace(p[0], p[1])),
    "LogNormal": (lambda p: D.LogNormal(p[0], p[1]), ([0.3, -1.2], [0.5, 0.4]), [0.7, 0.4],
                  lambda p: stats.lognorm(s=p[1], scale=np.exp(p[0]))),
    "Gamma": (lambda p: D.Gamma(p[0], p[1]), ([0.7, 3.0], [1.5, 0.4]), [0.6, 5.0],
              lambda p: stats.gamma(p[0], scale=1 / p[1])),
    "Beta": (lambda p: D.Beta(p[0], p[1]), ([0.7, 3.0], [1.5, 2.5]), [0.6, 0.3],
             lambda p: stats.beta(p[0], p[1])),
    "Poisson": (lambda p: D.Poisson(p[0]), ([0.7, 3.0],), [0.0, 4.0],
                lambda p: stats.poisson(p[0])),
    "Bernoulli": (lambda p: D.Bernoulli(probs=p[0]), ([0.3, 0.8],), [1.0, 0.0],
                  lambda p: stats.bernoulli(p[0])),
    "Binomial": (lambda p: D.Binomial(p[0], probs=p[1]), ([5.0, 5.0], [0.3, 0.8]),
                 [2.0, 5.0], lambda p: stats.binom(p[0].astype(int), p[1])),
}
CDF = ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal", "Gamma"]
ICDF = ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal"]
NO_ENTROPY = {"Poisson"}


def _case(name):
    make, params, value, ref = CASES[name]
    np_params = [np.asarray(p, dtype=np.float64) for p in params]
    return make([C(p) for p in np_params]), np_params, np.asarray(value), ref(np_params)


def _torch_twin(name, params):
    cls = getattr(TD, name)
    if name in ("Bernoulli",):
        return cls(probs=T(params[0]))
    if name == "Binomial":
        return cls(T(params[0]), probs=T(params[1]))
    return cls(*[T(p) for p in params])


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy_and_torch(name):
    d, params, value, ref = _case(name)
    logp = ref.logpmf(value) if hasattr(ref, "logpmf") else ref.logpdf(value)
    np.testing.assert_allclose(a(d.log_prob(C(value))), logp, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a(d.mean), ref.mean(), rtol=1e-10)
    np.testing.assert_allclose(a(d.variance), ref.var(), rtol=1e-10)
    np.testing.assert_allclose(a(d.stddev), ref.std(), rtol=1e-10)
    if name not in NO_ENTROPY:
        np.testing.assert_allclose(a(d.entropy()), ref.entropy(), rtol=1e-8, atol=1e-12)
    if name in CDF:
        np.testing.assert_allclose(a(d.cdf(C(value))), ref.cdf(value), rtol=1e-10)
    q = np.array([0.1, 0.85])
    if name in ICDF:
        np.testing.assert_allclose(a(d.icdf(C(q))), ref.ppf(q), rtol=1e-9)
    assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == ()
    if torch is None:
        return
    t = _torch_twin(name, params)
    np.testing.assert_allclose(a(d.log_prob(C(value))), t.log_prob(T(value)).numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a(d.mean), t.mean.numpy(), rtol=1e-12)
    np.testing.assert_allclose(a(d.variance), t.variance.numpy(), rtol=1e-12)
    if name not in NO_ENTROPY:
        np.testing.assert_allclose(a(d.entropy()), t.entropy().numpy(), rtol=1e-10)
    if name in CDF:
        np.testing.assert_allclose(a(d.cdf(C(value))), t.cdf(T(value)).numpy(), rtol=1e-10)
    if name in ICDF:
        np.testing.assert_allclose(a(d.icdf(C(q))), t.icdf(T(q)).numpy(), rtol=1e-10)


def _categoricals():
    logits = np.log(PROBS) + np.array([[0.3], [-1.0]])  # unnormalised on purpose
    return D.Categorical(probs=C(PROBS * 2)), D.Categorical(logits=C(logits))


def test_categorical_closed_forms():
    for d in _categoricals():
        value = np.array([[2, 0], [1, 1]])  # (sample, batch)
        expected = np.log(PROBS[np.arange(2), value])
        np.testing.assert_allclose(a(d.log_prob(cr.tensor(value))), expected, rtol=1e-12)
        np.testing.assert_allclose(a(d.entropy()), -(PROBS * np.log(PROBS)).sum(-1))
        np.testing.assert_allclose(a(d.probs), PROBS, rtol=1e-12)
        # the logits are normalised: log of the probabilities
        np.testing.assert_allclose(a(d.logits), np.log(PROBS), rtol=1e-12)
        assert np.isnan(a(d.mean)).all() and tuple(d.mean.shape) == (2,)
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == ()
        assert a(d.mode).tolist() == [1, 0]
    oh = D.OneHotCategorical(probs=C(PROBS))
    onehot = np.eye(3)[[2, 0]]
    np.testing.assert_allclose(a(oh.log_prob(C(onehot))), np.log([0.3, 0.6]), rtol=1e-12)
    np.testing.assert_allclose(a(oh.entropy()), -(PROBS * np.log(PROBS)).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(a(oh.variance), PROBS * (1 - PROBS), rtol=1e-12)
    assert tuple(oh.event_shape) == (3,) and tuple(oh.sample((4,)).shape) == (4, 2, 3)
    if torch is None:
        return
    for d, t in zip(_categoricals(), (TD.Categorical(probs=T(PROBS * 2)),
                                      TD.Categorical(logits=T(a(_categoricals()[1].logits))))):
        value = np.array([[2, 0], [1, 1]])
        np.testing.assert_allclose(a(d.log_prob(cr.tensor(value))),
                                   t.log_prob(torch.tensor(value)).numpy(), rtol=1e-12)
        np.testing.assert_allclose(a(d.entropy()), t.entropy().numpy(), rtol=1e-12)
        np.testing.assert_allclose(a(d.logits), t.logits.numpy(), rtol=1e-12)
    toh = TD.OneHotCategorical(probs=T(PROBS))
    np.testing.assert_allclose(a(oh.log_prob(C(onehot))), toh.log_prob(T(onehot)).numpy())
    np.testing.assert_allclose(a(oh.entropy()), toh.entropy().numpy())


def _mvns():
    loc = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]])
    return loc, [D.MultivariateNormal(C(loc), covariance_matrix=C(COV)),
                 D.MultivariateNormal(C(loc), scale_tril=C(L_TRIL)),
                 D.MultivariateNormal(C(loc), precision_matrix=C(np.linalg.inv(COV)))]


def test_multivariate_normal_closed_forms():
    loc, dists = _mvns()
    x = np.array([[0.1, 0.2, 0.3], [-1.0, 0.5, 1.5]])
    for d in dists:
        expected = [stats.multivariate_normal(loc[i], COV).logpdf(x[i]) for i in range(2)]
        np.testing.assert_allclose(a(d.log_prob(C(x))), expected, rtol=1e-10)
        np.testing.assert_allclose(a(d.entropy()),
                                   [stats.multivariate_normal(loc[0], COV).entropy()] * 2)
        np.testing.assert_allclose(a(d.covariance_matrix)[1], COV, atol=1e-12)
        np.testing.assert_allclose(a(d.precision_matrix)[0], np.linalg.inv(COV), atol=1e-10)
        np.testing.assert_allclose(a(d.scale_tril)[0], L_TRIL, atol=1e-12)
        np.testing.assert_allclose(a(d.variance), np.broadcast_to(np.diag(COV), (2, 3)))
        assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (3,)
        assert tuple(d.rsample((5,)).shape) == (5, 2, 3)
        assert tuple(d.log_prob(C(np.zeros((4, 1, 3)))).shape) == (4, 2)
    if torch is None:
        return
    t = TD.MultivariateNormal(T(loc), covariance_matrix=T(COV))
    for d in dists:
        np.testing.assert_allclose(a(d.log_prob(C(x))), t.log_prob(T(x)).numpy(), rtol=1e-10)
        np.testing.assert_allclose(a(d.entropy()), t.entropy().numpy(), rtol=1e-12)
        np.testing.assert_allclose(a(d.variance), t.variance.numpy(), rtol=1e-10)


def test_dirichlet_and_independent():
    alpha = np.array([[0.7, 2.0, 3.5], [1.0, 1.0, 1.0]])
    d = D.Dirichlet(C(alpha))
    x = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    for i in range(2):
        ref = stats.dirichlet(alpha[i])
        np.testing.assert_allclose(a(d.log_prob(C(x)))[i], ref.logpdf(x[i]), rtol=1e-10)
        np.testing.assert_allclose(a(d.entropy())[i], ref.entropy(), rtol=1e-10)
        np.testing.assert_allclose(a(d.mean)[i], ref.mean(), rtol=1e-12)
        np.testing.assert_allclose(a(d.variance)[i], ref.var(), rtol=1e-12)
    ind = D.Independent(D.Normal(C(np.zeros((2, 3))), C(np.ones((2, 3)))), 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(a(ind.log_prob(C(value))),
                               stats.norm.logpdf(value).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(a(ind.entropy()), [1.5 * (1 + math.log(2 * math.pi))] * 2)
    assert ind.has_rsample and tuple(ind.rsample((4,)).shape) == (4, 2, 3)
    if torch is not None:
        t = TD.Dirichlet(T(alpha))
        np.testing.assert_allclose(a(d.log_prob(C(x))), t.log_prob(T(x)).numpy(), rtol=1e-10)
        np.testing.assert_allclose(a(d.entropy()), t.entropy().numpy(), rtol=1e-10)


# --- KL divergence ---------------------------------------------------------------------

def _kl_pairs():
    p_mvn = D.MultivariateNormal(C([0.5, -1.0, 2.0]), covariance_matrix=C(COV))
    q_cov = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]])
    q_mvn = D.MultivariateNormal(C([0.0, 0.2, 1.0]), covariance_matrix=C(q_cov))
    return {
        "Normal": (D.Normal(C([0.3, -1.0]), C([1.5, 0.4])), D.Normal(C([0.0, 0.5]),
                                                                     C([1.0, 2.0]))),
        "Categorical": (D.Categorical(probs=C(PROBS)),
                        D.Categorical(probs=C([[0.1, 0.1, 0.8], [0.3, 0.3, 0.4]]))),
        "Bernoulli": (D.Bernoulli(probs=C([0.3, 0.9])), D.Bernoulli(probs=C([0.5, 0.2]))),
        "Uniform": (D.Uniform(C([0.0, 0.0]), C([1.0, 2.0])),
                    D.Uniform(C([-1.0, 0.5]), C([3.0, 2.5]))),
        "MultivariateNormal": (p_mvn, q_mvn),
    }


def _kl_reference(name, p, q):
    if name == "MultivariateNormal":
        mp, mq = a(p.loc), a(q.loc)
        Sp, Sq = a(p.covariance_matrix), a(q.covariance_matrix)
        iq = np.linalg.inv(Sq)
        return 0.5 * (np.trace(iq @ Sp) + (mq - mp) @ iq @ (mq - mp) - 3
                      + np.log(np.linalg.det(Sq) / np.linalg.det(Sp)))
    if name == "Normal":  # numerical integration of p log(p / q)
        out = []
        for i in range(2):
            fp = stats.norm(a(p.loc)[i], a(p.scale)[i])
            fq = stats.norm(a(q.loc)[i], a(q.scale)[i])
            out.append(integrate.quad(
                lambda x, fp=fp, fq=fq: fp.pdf(x) * (fp.logpdf(x) - fq.logpdf(x)),
                -30, 30, limit=200)[0])
        return np.array(out)
    if name in ("Categorical", "Bernoulli"):
        pp, qp = a(p.probs), a(q.probs)
        if name == "Bernoulli":
            pp, qp = np.stack([pp, 1 - pp], -1), np.stack([qp, 1 - qp], -1)
        return (pp * np.log(pp / qp)).sum(-1)
    # Uniform: log of the width ratio where p's support is inside q's, else inf
    inside = (a(q.low) <= a(p.low)) & (a(q.high) >= a(p.high))
    ratio = np.log((a(q.high) - a(q.low)) / (a(p.high) - a(p.low)))
    return np.where(inside, ratio, np.inf)


@pytest.mark.parametrize("name", sorted(_kl_pairs()))
def test_kl_closed_forms(name):
    p, q = _kl_pairs()[name]
    np.testing.assert_allclose(a(D.kl_divergence(p, q)), _kl_reference(name, p, q),
                               rtol=1e-8)
    np.testing.assert_allclose(a(D.kl_divergence(p, p)), 0.0, atol=1e-12)
    if torch is None:
        return

    def to_torch(d):
        if name == "MultivariateNormal":
            return TD.MultivariateNormal(T(a(d.loc)), covariance_matrix=T(a(d.covariance_matrix)))
        if name in ("Categorical", "Bernoulli"):
            return getattr(TD, name)(probs=T(a(d.probs)))
        if name == "Uniform":
            return TD.Uniform(T(a(d.low)), T(a(d.high)))
        return TD.Normal(T(a(d.loc)), T(a(d.scale)))

    expected = TD.kl_divergence(to_torch(p), to_torch(q)).numpy()
    np.testing.assert_allclose(a(D.kl_divergence(p, q)), expected, rtol=1e-10)


def test_kl_infinite_and_zero_probability_cases():
    p = D.Categorical(probs=C([0.5, 0.5, 0.0]))
    q = D.Categorical(probs=C([0.5, 0.0, 0.5]))
    assert a(D.kl_divergence(p, q)) == np.inf
    np.testing.assert_allclose(a(D.kl_divergence(q, D.Categorical(probs=C([0.25, 0.25, 0.5])))),
                               0.5 * math.log(2), rtol=1e-12)  # p = 0 terms contribute 0
    assert a(D.kl_divergence(D.Bernoulli(probs=C(0.5)), D.Bernoulli(probs=C(0.0)))) == np.inf


def test_register_kl_dispatch_and_errors():
    class MyNormal(D.Normal):
        pass

    p, q = MyNormal(C(0.0), C(1.0)), D.Normal(C(1.0), C(1.0))
    np.testing.assert_allclose(a(D.kl_divergence(p, q)), 0.5)  # inherits Normal-Normal

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return cr.tensor(42.0)

    assert float(D.kl_divergence(p, q)) == 42.0  # the more specific registration wins
    assert float(D.kl_divergence(q, q)) == 0.0
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(C(0.0), C(1.0)), D.Cauchy(C(0.0), C(1.0)))  # (torch's neither)
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


# --- gradients -------------------------------------------------------------------------

def _params(*arrays):
    return tuple(cr.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
                 for x in arrays)


LOG_PROB_GRAD = [
    ("Normal", lambda m, s: D.Normal(m, s), ([0.3, -1.0], [1.5, 0.4]), [0.1, -0.9]),
    ("Laplace", lambda m, s: D.Laplace(m, s), ([0.3, -1.0], [1.5, 0.4]), [0.1, -0.9]),
    ("LogNormal", lambda m, s: D.LogNormal(m, s), ([0.3, -1.0], [1.5, 0.4]), [0.5, 2.0]),
    ("Gamma", lambda c, r: D.Gamma(c, r), ([0.7, 3.0], [1.5, 0.4]), [0.6, 5.0]),
    ("Beta", lambda c1, c0: D.Beta(c1, c0), ([0.7, 3.0], [1.5, 2.5]), [0.6, 0.3]),
    ("Exponential", lambda r: D.Exponential(r), ([0.5, 2.0],), [0.7, 0.1]),
    ("Poisson", lambda r: D.Poisson(r), ([0.7, 3.0],), [0.0, 4.0]),
    ("Bernoulli", lambda logit: D.Bernoulli(logits=logit), ([0.3, -2.0],), [1.0, 0.0]),
    ("Binomial", lambda p: D.Binomial(6, probs=p), ([0.3, 0.8],), [2.0, 6.0]),
    ("Categorical", lambda logit: D.Categorical(logits=logit), (PROBS,), [2, 1]),
    ("Dirichlet", lambda c: D.Dirichlet(c), ([0.7, 2.0, 3.5],), [0.2, 0.3, 0.5]),
    ("Uniform", lambda lo, hi: D.Uniform(lo, hi), ([0.0, -1.0], [1.0, 2.0]), [0.5, 0.0]),
]


@pytest.mark.parametrize("case", LOG_PROB_GRAD, ids=[c[0] for c in LOG_PROB_GRAD])
def test_log_prob_and_entropy_gradcheck(case):
    name, make, params, value = case
    dtype = np.int64 if name == "Categorical" else np.float64
    v = cr.tensor(np.asarray(value, dtype=dtype))
    assert gradcheck(lambda *ps: make(*ps).log_prob(v), _params(*params))
    if name != "Poisson":
        assert gradcheck(lambda *ps: make(*ps).entropy(), _params(*params))


def test_multivariate_normal_gradcheck():
    x = C([[0.1, 0.2, 0.3], [-1.0, 0.5, 1.5]])

    def via_cov(loc, A):
        cov = A @ A.mT + cr.eye(3, dtype=cr.float64)
        return D.MultivariateNormal(loc, covariance_matrix=cov).log_prob(x)

    def via_tril(loc, A):
        return D.MultivariateNormal(loc, scale_tril=cr.tril(A)).log_prob(x)

    def via_precision(loc, A):
        P = A @ A.mT + cr.eye(3, dtype=cr.float64)
        return D.MultivariateNormal(loc, precision_matrix=P).entropy()

    for fn in (via_cov, via_tril, via_precision):
        assert gradcheck(fn, _params([0.5, -1.0, 2.0], L_TRIL + np.eye(3)))


def _kl_grad(loc, scale, logits, c):
    kl_n = D.kl_divergence(D.Normal(loc, scale), D.Normal(C([0.0, 1.0]), C([2.0, 0.5])))
    kl_c = D.kl_divergence(D.Categorical(logits=logits), D.Categorical(probs=C(PROBS)))
    q = D.MultivariateNormal(C([0.0, 0.0]), covariance_matrix=C([[2.0, 0.3], [0.3, 1.0]]))
    kl_m = D.kl_divergence(D.MultivariateNormal(loc, scale_tril=cr.tril(c)), q)
    return kl_n.sum() + kl_c.sum() + kl_m


def test_kl_gradcheck():
    assert gradcheck(_kl_grad, _params([0.3, -1.0], [1.5, 0.4], PROBS, [[1.0, 0.0], [0.2, 0.7]]))


RSAMPLE = [
    ("Normal", lambda m, s: D.Normal(m, s), ([0.3, -1.0], [1.5, 0.4])),
    ("Uniform", lambda lo, hi: D.Uniform(lo, hi), ([0.0, -1.0], [1.0, 2.0])),
    ("Exponential", lambda r: D.Exponential(r), ([0.5, 2.0],)),
    ("Laplace", lambda m, s: D.Laplace(m, s), ([0.3, -1.0], [1.5, 0.4])),
    ("LogNormal", lambda m, s: D.LogNormal(m, s), ([0.3, -1.0], [0.5, 0.4])),
    ("Gamma", lambda c, r: D.Gamma(c, r), ([0.7, 3.0], [1.5, 0.4])),
    ("Beta", lambda c1, c0: D.Beta(c1, c0), ([0.7, 3.0], [1.5, 2.5])),
    ("Dirichlet", lambda c: D.Dirichlet(c), ([0.7, 2.0, 3.5],)),
    ("MultivariateNormal", lambda m, A: D.MultivariateNormal(m, scale_tril=cr.tril(A)),
     ([0.5, -1.0], [[1.0, 0.0], [0.3, 0.8]])),
]


@pytest.mark.parametrize("case", RSAMPLE, ids=[c[0] for c in RSAMPLE])
def test_rsample_gradcheck(case):
    """The draw as a function of the parameters for fixed noise (reseeded on each call)."""
    name, make, params = case

    def draw(*ps):
        cr.manual_seed(3)
        return make(*ps).rsample((3,))

    assert make(*_params(*params)).has_rsample
    assert gradcheck(draw, _params(*params), atol=1e-5, rtol=1e-3)


def test_rsample_expectation_gradients():
    """Monte Carlo gradients of E[f(x)] through rsample match the closed forms."""
    cr.manual_seed(0)
    n = 20000
    mu, sigma = _params(0.7, 1.3)
    (D.Normal(mu, sigma).rsample((n,)) ** 2).mean().backward()  # E x^2 = mu^2 + sigma^2
    np.testing.assert_allclose([float(mu.grad), float(sigma.grad)], [1.4, 2.6], rtol=0.05)
    alpha, rate = _params(2.5, 1.5)
    D.Gamma(alpha, rate).rsample((n,)).mean().backward()  # E x = alpha / rate
    np.testing.assert_allclose([float(alpha.grad), float(rate.grad)],
                               [1 / 1.5, -2.5 / 1.5 ** 2], rtol=0.03)
    c1, c0 = _params(2.0, 3.0)
    D.Beta(c1, c0).rsample((n,)).mean().backward()  # E x = c1 / (c1 + c0)
    np.testing.assert_allclose([float(c1.grad), float(c0.grad)], [3 / 25, -2 / 25], rtol=0.05)


# --- samples ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_statistics(name):
    cr.manual_seed(1)
    d, _, _, ref = _case(name)
    x = a(d.sample((20000,)))
    assert x.shape == (20000, 2) and x.dtype == np.float64
    se_mean = np.sqrt(ref.var() / 20000)
    np.testing.assert_array_less(np.abs(x.mean(0) - ref.mean()), 5 * se_mean + 1e-12)
    np.testing.assert_allclose(x.var(0), ref.var(), rtol=0.1)


def test_sample_statistics_multivariate():
    cr.manual_seed(2)
    _, dists = _mvns()
    x = a(dists[2].sample((20000,)))
    np.testing.assert_allclose(x.mean(0), a(dists[2].loc), atol=0.06)
    np.testing.assert_allclose(np.cov(x[:, 0].T), COV, atol=0.1)
    counts = np.bincount(a(_categoricals()[0].sample((20000,)))[:, 1], minlength=3) / 20000
    np.testing.assert_allclose(counts, PROBS[1], atol=0.015)
    alpha = np.array([0.7, 2.0, 3.5])
    y = a(D.Dirichlet(C(alpha)).sample((20000,)))
    np.testing.assert_allclose(y.sum(-1), 1.0)
    np.testing.assert_allclose(y.mean(0), stats.dirichlet(alpha).mean(), atol=0.01)
    oh = a(D.OneHotCategorical(probs=C(PROBS)).sample((20000,)))
    np.testing.assert_allclose(oh.mean(0), PROBS, atol=0.015)


def test_seeding_reproduces_draws():
    d = D.Normal(C([0.0, 1.0]), C([1.0, 2.0]))
    cr.manual_seed(7)
    first = a(d.sample((3,)))
    cr.manual_seed(7)
    np.testing.assert_array_equal(a(d.sample((3,))), first)
    assert not d.sample().requires_grad


# --- shapes, dtypes, validation --------------------------------------------------------

def test_broadcasting_and_dtype():
    d = D.Normal(cr.zeros(2, 1, dtype=cr.float32), 1.0)
    assert d.loc.dtype == cr.float32 and d.scale.dtype == cr.float32
    assert d.sample((5,)).dtype == cr.float32 and d.log_prob(0.5).dtype == cr.float32
    assert tuple(D.Normal(cr.zeros(2, 1), cr.ones(3)).batch_shape) == (2, 3)
    scalar = D.Normal(0.0, 1.0)
    assert scalar.loc.dtype == cr.float64 and tuple(scalar.batch_shape) == ()
    assert tuple(scalar.rsample((4, 2)).shape) == (4, 2)
    assert tuple(D.Gamma(cr.ones(3), 2.0).sample((2,)).shape) == (2, 3)
    mvn = D.MultivariateNormal(cr.zeros(4, 1, 2), scale_tril=cr.eye(2).expand(3, 2, 2))
    assert tuple(mvn.batch_shape) == (4, 3) and tuple(mvn.event_shape) == (2,)
    assert tuple(mvn.entropy().shape) == (4, 3)
    cat = D.Categorical(logits=cr.zeros(3, 4))
    assert tuple(cat.sample((5,)).shape) == (5, 3) and cat.sample().dtype == cr.int64
    assert tuple(cat.log_prob(cr.tensor([0, 1, 2])).shape) == (3,)
    assert tuple(cat.log_prob(cr.tensor([[0], [3]])).shape) == (2, 3)
    assert tuple(cat.enumerate_support().shape) == (4, 3)
    assert tuple(D.Binomial(4, probs=cr.tensor([0.2, 0.5])).enumerate_support().shape) == (5, 2)


def test_binomial_entropy_and_bernoulli_logits():
    d = D.Binomial(4, probs=C([0.2, 0.5]))
    np.testing.assert_allclose(a(d.entropy()), stats.binom(4, [0.2, 0.5]).entropy())
    with pytest.raises(NotImplementedError):
        D.Binomial(C([3.0, 4.0]), probs=C([0.2, 0.5])).entropy()
    b = D.Bernoulli(logits=C([0.0, 2.0]))
    np.testing.assert_allclose(a(b.probs), 1 / (1 + np.exp(-np.array([0.0, 2.0]))))
    np.testing.assert_allclose(a(b.log_prob(C([1.0, 0.0]))),
                               [math.log(0.5), -math.log1p(math.exp(2.0))], rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda: D.Normal(0.0, 0.0),
    lambda: D.Normal(cr.tensor([0.0, float("nan")]), 1.0),
    lambda: D.Uniform(1.0, 1.0),
    lambda: D.Exponential(-1.0),
    lambda: D.Gamma(1.0, -2.0),
    lambda: D.Beta(0.0, 1.0),
    lambda: D.Bernoulli(probs=1.5),
    lambda: D.Bernoulli(probs=0.5, logits=0.0),
    lambda: D.Bernoulli(),
    lambda: D.Categorical(probs=cr.tensor([0.5, -0.1])),
    lambda: D.Categorical(probs=cr.tensor(1.0)),
    lambda: D.Binomial(2.5, probs=0.5),
    lambda: D.Poisson(-1.0),
    lambda: D.Dirichlet(cr.tensor(1.0)),
    lambda: D.MultivariateNormal(cr.zeros(2), covariance_matrix=cr.tensor([[1.0, 2], [2, 1]])),
    lambda: D.MultivariateNormal(cr.zeros(2), scale_tril=cr.tensor([[1.0, 1], [0, 1]])),
    lambda: D.MultivariateNormal(cr.zeros(2), cr.eye(2), scale_tril=cr.eye(2)),
    lambda: D.MultivariateNormal(cr.tensor(0.0), cr.eye(2)),
    lambda: D.Independent(D.Normal(cr.zeros(3), 1.0), 2),
])
def test_invalid_parameters_raise(make):
    with pytest.raises(ValueError):
        make()


def test_values_outside_the_support_raise_unless_validation_is_off():
    with pytest.raises(ValueError, match="support"):
        D.Exponential(1.0).log_prob(cr.tensor(-1.0))
    with pytest.raises(ValueError, match="support"):
        D.Bernoulli(probs=0.3).log_prob(cr.tensor(0.5))
    with pytest.raises(ValueError, match="support"):
        D.Categorical(probs=cr.ones(3)).log_prob(cr.tensor(3))
    with pytest.raises(ValueError):
        D.Normal(cr.zeros(3), 1.0).log_prob(cr.zeros(2))
    d = D.Uniform(0.0, 1.0, validate_args=False)
    assert float(d.log_prob(cr.tensor(2.0))) == -math.inf
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0


def test_docstrings_and_exports():
    for name in D.__all__:
        obj = getattr(D, name)
        assert obj.__doc__ and len(obj.__doc__) > 40, name


def test_gamma_rsample_second_derivative_raises_rather_than_being_wrong():
    # the implicit-reparameterisation derivative is a finite difference, not a graph: a
    # second derivative in the concentration would be silently 0, so it raises
    a = cr.tensor([2.0, 0.5], requires_grad=True)
    cr.manual_seed(0)
    x = D.Gamma(a, 1.0).rsample()
    (g,) = cr.autograd.grad(x.sum(), a, create_graph=True)
    assert np.all(np.isfinite(g.detach().numpy()))
    with pytest.raises(RuntimeError, match="once_differentiable"):
        cr.autograd.grad(g.sum(), a)
