"""Chi2, Pareto, Weibull, InverseGamma, Kumaraswamy, VonMises, ContinuousBernoulli,
FisherSnedecor and GeneralizedPareto, as ``torch.distributions`` (formulas of its chi2.py,
pareto.py, weibull.py, inverse_gamma.py, kumaraswamy.py, von_mises.py,
continuous_bernoulli.py, fishersnedecor.py, generalized_pareto.py), composed of
differentiable chainrule ops. Pareto, Weibull, InverseGamma and Kumaraswamy are
TransformedDistributions of an Exponential, Gamma or Uniform, as in PyTorch. Draws come from
chainrule's generator, not PyTorch's."""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np
import scipy.stats as _stats

from .. import _creation
from .. import ops as _ops
from ..backend import numpy_dtype
from . import constraints
from .compound import TransformedDistribution
from .continuous import Exponential, Gamma, Uniform, _uniform
from .discrete import _one_of
from .distribution import (
    Distribution,
    _draw,
    as_float,
    broadcast_all,
    clamp_probs,
    logits_to_probs,
    probs_to_logits,
    softplus,
    values_of,
)
from .exp_family import ExponentialFamily
from .transforms import AffineTransform, ExpTransform, PowerTransform

__all__ = ["Chi2", "Pareto", "Weibull", "InverseGamma", "Kumaraswamy", "VonMises",
           "ContinuousBernoulli", "FisherSnedecor", "GeneralizedPareto"]

_EULER_GAMMA = 0.57721566490153286060


def _nan_where(mask, x):
    """``x`` with NaN where ``mask``."""
    return _ops.where(mask, math.nan, x)


def _safe(mask, x, stand_in):
    """``x`` with ``stand_in`` where ``mask`` (so formulas evaluated there and then
    replaced send no NaN or inf into the gradient)."""
    return _ops.where(mask, _creation.full_like(x, stand_in), x)


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``, as
    ``torch.distributions.Chi2`` (all of Gamma's methods; ``df = 2 concentration``).

    Raises ValueError (when validating) for ``df <= 0``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Pareto(TransformedDistribution):
    """Pareto (type I) distribution with ``scale`` (the minimum) and tail index ``alpha``:
    ``scale exp(E)`` for ``E ~ Exponential(alpha)``, as ``torch.distributions.Pareto``.

    ``mean = alpha scale / (alpha - 1)`` (inf for ``alpha <= 1``), ``variance = scale^2
    alpha / ((alpha - 1)^2 (alpha - 2))`` (inf for ``alpha <= 2``), ``entropy = log(scale /
    alpha) + 1 + 1 / alpha``; support ``[scale, inf)``.

    Raises ValueError (when validating) for non-positive parameters or values below
    ``scale``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    @property
    def mean(self):
        a = _ops.clamp(self.alpha, min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = _ops.clamp(self.alpha, min=2)
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return _ops.log(self.scale / self.alpha) + (1 + 1 / self.alpha)


class Weibull(TransformedDistribution):
    """Weibull distribution with ``scale`` and shape ``concentration`` k: ``scale E^(1/k)``
    for ``E ~ Exponential(1)``, as ``torch.distributions.Weibull``.

    ``mean = scale Gamma(1 + 1/k)``, ``variance = scale^2 (Gamma(1 + 2/k) - Gamma(1 +
    1/k)^2)``, ``mode = scale ((k - 1) / k)^(1/k)``, ``entropy = gamma_E (1 - 1/k) +
    log(scale / k) + 1``.

    Raises ValueError (when validating) for non-positive parameters or values."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = 1 / self.concentration
        base_dist = Exponential(_creation.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * _ops.exp(_ops.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** (1 / k)

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale ** 2 * (_ops.exp(_ops.lgamma(1 + 2 * r))
                                  - _ops.exp(2 * _ops.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - r) + _ops.log(self.scale * r) + 1


class InverseGamma(TransformedDistribution):
    """Inverse-gamma distribution: ``1 / X`` for ``X ~ Gamma(concentration, rate)``, as
    ``torch.distributions.InverseGamma``.

    ``mean = rate / (concentration - 1)`` (inf for ``concentration <= 1``), ``variance =
    rate^2 / ((concentration - 1)^2 (concentration - 2))`` (inf for ``concentration <= 2``),
    ``mode = rate / (concentration + 1)``, ``entropy = a + log(rate) + lgamma(a) - (1 + a)
    digamma(a)``. ``rsample`` is reparameterised through the Gamma draw.

    Raises ValueError (when validating) for non-positive parameters or values."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -_creation.ones((), dtype=base_dist.rate.dtype, device=base_dist.rate.device)
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        a = self.concentration
        above = a > 1
        result = self.rate / (_safe(~above, a, 2.0) - 1)
        return _ops.where(above, result, math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        a = self.concentration
        above = a > 2
        safe = _safe(~above, a, 3.0)
        result = self.rate ** 2 / ((safe - 1) ** 2 * (safe - 2))
        return _ops.where(above, result, math.inf)

    def entropy(self):
        a = self.concentration
        return a + _ops.log(self.rate) + _ops.lgamma(a) - (1 + a) * _ops.digamma(a)


def _kumaraswamy_moment(a, b, n):
    arg1 = 1 + n / a
    return b * _ops.exp(_ops.lgamma(arg1) + _ops.lgamma(b) - _ops.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on ``[0, 1]``, density ``a b x^(a-1) (1 - x^a)^(b-1)`` with
    ``a = concentration1``, ``b = concentration0``: ``(1 - U^(1/b))^(1/a)`` for ``U ~
    Uniform(0, 1)``, as ``torch.distributions.Kumaraswamy``.

    ``E[X^n] = b B(1 + n/a, b)``; ``mode = ((a - 1) / (a b - 1))^(1/a)`` (NaN when ``a < 1``
    or ``b < 1``; PyTorch 2.13's ``log1p(-b) / b - log1p(-a b)`` is NaN for every ``b >
    1``); ``entropy = (1 - 1/b) + (1 - 1/a) H_b - log(a b)`` with ``H_b = digamma(b + 1) +
    gamma_E``.

    Raises ValueError (when validating) for non-positive concentrations or values outside
    ``[0, 1]``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        c0 = self.concentration0
        base_dist = Uniform(_creation.full_like(c0, 0), _creation.full_like(c0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=1 / c0), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=1 / self.concentration1)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        bad = (b < 1) | (a < 1)
        a, b = _safe(bad, a, 2.0), _safe(bad, b, 2.0)
        log_mode = (_ops.log(a - 1) - _ops.log(a * b - 1)) / a
        return _nan_where(bad, _ops.exp(log_mode))

    @property
    def variance(self):
        return (_kumaraswamy_moment(self.concentration1, self.concentration0, 2)
                - self.mean ** 2)

    def entropy(self):
        t1 = 1 - 1 / self.concentration1
        t0 = 1 - 1 / self.concentration0
        h0 = _ops.digamma(self.concentration0 + 1) + _EULER_GAMMA
        return t0 + t1 * h0 - _ops.log(self.concentration1) - _ops.log(self.concentration0)


# Abramowitz & Stegun 9.8.1-9.8.4: PyTorch's VonMises normaliser (relative error ~1e-7)
_I0_COEF_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_COEF_LARGE = [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706,
                  0.02635537, -0.01647633, 0.00392377]
_I1_COEF_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411]
_I1_COEF_LARGE = [0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967,
                  -0.02895312, 0.01787654, -0.00420059]


def _eval_poly(y, coef):
    coef = list(coef)
    result = coef.pop()
    while coef:
        result = coef.pop() + y * result
    return result


def _log_modified_bessel_fn(x, order=0):
    """``log I_order(x)`` for ``x > 0``, order 0 or 1, by PyTorch's polynomial
    approximations (so VonMises densities match PyTorch's to rounding)."""
    small_coef, large_coef = ((_I0_COEF_SMALL, _I0_COEF_LARGE) if order == 0
                              else (_I1_COEF_SMALL, _I1_COEF_LARGE))
    is_small = x < 3.75
    xs = _safe(~is_small, x, 1.0)  # each branch at its own valid arguments
    xl = _safe(is_small, x, 4.0)
    y = (xs / 3.75) ** 2
    small = _eval_poly(y, small_coef)
    if order == 1:
        small = _ops.abs(xs) * small
    small = _ops.log(small)
    large = xl - 0.5 * _ops.log(xl) + _ops.log(_eval_poly(3.75 / xl, large_coef))
    return _ops.where(is_small, small, large)


class VonMises(Distribution):
    """Von Mises (circular normal) distribution with ``loc`` and ``concentration`` kappa,
    density ``exp(kappa cos(x - loc)) / (2 pi I_0(kappa))``, as
    ``torch.distributions.VonMises``: ``log I_0`` by PyTorch's polynomial approximation,
    ``mean = mode = loc``, ``variance = 1 - I_1(kappa) / I_0(kappa)`` (circular variance).
    Draws (no rsample, as PyTorch) come from SciPy's von Mises sampler on chainrule's
    generator, wrapped into ``[-pi, pi)`` around ``loc`` (PyTorch uses its own rejection
    sampler; the law is the same).

    Raises ValueError (when validating) for ``concentration <= 0``."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args=validate_args)

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        log_prob = self.concentration * _ops.cos(value - self.loc)
        return (log_prob - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        kappa = np.broadcast_to(values_of(self.concentration).astype(np.float64), shape)
        loc = np.broadcast_to(values_of(self.loc).astype(np.float64), shape)

        def draw(g, s):
            x = _stats.vonmises.rvs(kappa, size=s, random_state=g) if s else \
                np.asarray(_stats.vonmises.rvs(kappa, random_state=g))
            return np.mod(x + math.pi + loc, 2 * math.pi) - math.pi

        return _draw(draw, shape, numpy_dtype(self.loc.dtype), self.loc)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - _ops.exp(_log_modified_bessel_fn(k, order=1)
                            - _log_modified_bessel_fn(k, order=0))


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli distribution on ``[0, 1]`` (Loaiza-Ganem & Cunningham 2019),
    density ``C(p) p^x (1 - p)^(1 - x)``, given ``probs`` or ``logits`` (exactly one), as
    ``torch.distributions.ContinuousBernoulli``: where ``probs`` lies in ``lims`` (default
    ``(0.499, 0.501)``) the log-normaliser, mean and variance are PyTorch's Taylor
    expansions about ``1/2``. ``rsample`` is the inverse CDF of a uniform draw.

    Raises ValueError when both or neither parameter is given and (when validating)
    for probabilities outside ``[0, 1]`` (probabilities are clamped to ``[eps, 1 - eps]``
    first, as PyTorch; with ``validate_args`` given explicitly the unclamped ones are
    checked), NaN logits, or values outside ``[0, 1]``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (probs,) = broadcast_all(probs)
            if validate_args is not None and \
                    not values_of(self.arg_constraints["probs"].check(probs)).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    @cached_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @cached_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return _ops.where(self._outside_unstable_region(), self.probs,
                          self._lims[0] * _creation.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        below = _ops.where(cut <= 0.5, cut, _creation.zeros_like(cut))
        above = _ops.where(cut >= 0.5, cut, _creation.ones_like(cut))
        log_norm = (_ops.log(_ops.abs(_ops.log1p(-cut) - _ops.log(cut)))
                    - _ops.where(cut <= 0.5, _ops.log1p(-2.0 * below),
                                 _ops.log(2.0 * above - 1.0)))
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return _ops.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (_ops.log1p(-cut) - _ops.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return _ops.where(self._outside_unstable_region(), mus, taylor)

    @property
    def variance(self):
        cut = self._cut_probs()
        v = (cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2
             + 1.0 / (_ops.log1p(-cut) - _ops.log(cut)) ** 2)
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _ops.where(self._outside_unstable_region(), v, taylor)

    @property
    def stddev(self):
        return _ops.sqrt(self.variance)

    def sample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype, self.probs)
        return self.icdf(u).detach()

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.probs.dtype, self.probs)
        return self.icdf(u)

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        logits, value = broadcast_all(self.logits, value)
        return value * logits - softplus(logits) + self._cont_bern_log_norm()

    def cdf(self, value):
        value = self._value(value, self._param.dtype)
        cut = self._cut_probs()
        cdfs = ((cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0)
                / (2.0 * cut - 1.0))
        unbounded = _ops.where(self._outside_unstable_region(), cdfs, value)
        return _ops.where(value <= 0.0, _creation.zeros_like(value),
                          _ops.where(value >= 1.0, _creation.ones_like(value), unbounded))

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self._param.dtype), self._param)
        cut = self._cut_probs()
        inside = ((_ops.log1p(-cut + value * (2.0 * cut - 1.0)) - _ops.log1p(-cut))
                  / (_ops.log(cut) - _ops.log1p(-cut)))
        return _ops.where(self._outside_unstable_region(), inside, value)

    def entropy(self):
        log_probs0 = _ops.log1p(-self.probs)
        log_probs1 = _ops.log(self.probs)
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = _ops.where(outside, x, (self._lims[0] - 0.5) * _creation.ones_like(x))
        log_norm = _ops.log(_ops.abs(_ops.expm1(cut))) - _ops.log(_ops.abs(cut))
        taylor = 0.5 * x + x ** 2 / 24.0 - x ** 4 / 2880.0
        return _ops.where(outside, log_norm, taylor)


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom, as
    ``torch.distributions.FisherSnedecor``: ``log_prob`` as PyTorch's fishersnedecor.py,
    ``mean = df2 / (df2 - 2)`` (NaN for ``df2 <= 2``), ``mode = (df1 - 2) / df1 df2 / (df2 +
    2)`` (NaN for ``df1 <= 2``), ``variance`` (NaN for ``df2 <= 4``). ``rsample`` is the
    ratio of two Gamma draws (implicit reparameterisation, first derivatives only). No
    entropy, as in PyTorch.

    Raises ValueError (when validating) for non-positive degrees of freedom or values."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1, validate_args=False)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2, validate_args=False)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self):
        bad = self.df2 <= 2
        df2 = _safe(bad, self.df2, 3.0)
        return _nan_where(bad, df2 / (df2 - 2))

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return _nan_where(self.df1 <= 2, mode)

    @property
    def variance(self):
        bad = self.df2 <= 4
        df2 = _safe(bad, self.df2, 5.0)
        v = 2 * df2 ** 2 * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2) ** 2 * (df2 - 4))
        return _nan_where(bad, v)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x1 = self._gamma1.rsample(sample_shape).reshape(shape)
        x2 = self._gamma2.rsample(sample_shape).reshape(shape)
        tiny = float(np.finfo(numpy_dtype(x2.dtype)).tiny)
        return _ops.clamp(x1 / _ops.clamp(x2, min=tiny), min=tiny)

    def log_prob(self, value):
        value = self._value(value, self.df1.dtype)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = _ops.lgamma(ct1 + ct2) - _ops.lgamma(ct1) - _ops.lgamma(ct2)
        t2 = ct1 * _ops.log(ct3) + (ct1 - 1) * _ops.log(value)
        t3 = (ct1 + ct2) * _ops.log1p(ct3 * value)
        return t1 + t2 - t3


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution with ``loc``, ``scale`` and ``concentration`` xi, as
    ``torch.distributions.GeneralizedPareto``: survival function ``(1 + xi z)^(-1/xi)``
    (``exp(-z)`` for ``xi = 0``, taken where ``isclose(xi, 0)``), ``z = (x - loc) /
    scale``; support ``[loc, loc - scale / xi]`` for ``xi < 0``, ``[loc, inf)`` otherwise.
    ``mean`` (NaN for ``xi >= 1``), ``variance`` (NaN for ``xi >= 1/2``), ``entropy =
    log(scale) + xi + 1``, ``cdf``/``icdf``/``log_cdf``/``log_survival_function``;
    ``rsample = icdf(u)``.

    Raises ValueError (when validating) for ``scale <= 0`` or values outside the support."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.loc.dtype, self.loc)
        return self.icdf(u)

    def _eq_zero_and_safe(self):
        c = self.concentration
        eq_zero = _ops.isclose(c, _creation.zeros_like(c))
        return eq_zero, _ops.where(eq_zero, _creation.ones_like(c), c)

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        z = self._z(value)
        eq_zero, safe_conc = self._eq_zero_and_safe()
        y = 1 / safe_conc + _creation.ones_like(z)
        where_nonzero = _ops.where(y == 0, y, y * _ops.log1p(safe_conc * z))
        return -_ops.log(self.scale) - _ops.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        value = self._value(value, self.loc.dtype)
        z = self._z(value)
        eq_zero, safe_conc = self._eq_zero_and_safe()
        where_nonzero = -_ops.log1p(safe_conc * z) / safe_conc
        return _ops.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return _ops.log1p(-_ops.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return _ops.exp(self.log_cdf(value))

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        eq_zero, safe_conc = self._eq_zero_and_safe()
        logu = _ops.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * _ops.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return _ops.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        c = self.concentration
        valid = c < 1
        safe_conc = _ops.where(valid, c, 0.5)
        return _ops.where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        c = self.concentration
        valid = c < 0.5
        safe_conc = _ops.where(valid, c, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return _ops.where(valid, result, math.nan)

    def entropy(self):
        ans = _ops.log(self.scale) + self.concentration + 1
        return _ops.broadcast_to(ans, tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        c = self.concentration
        safe_conc = _safe(c >= 0, c, -1.0)
        upper = _ops.where(c < 0, lower - self.scale / safe_conc, math.inf)
        return constraints.interval(lower, upper)
