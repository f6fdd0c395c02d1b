"""Continuous distributions: Normal, Uniform, Exponential, Laplace, LogNormal, Gamma, Beta,
Dirichlet. Every density, moment and draw is a composition of differentiable chainrule ops;
formulas follow ``torch.distributions`` 2.x (sources named in each docstring)."""

from __future__ import annotations

import math

import numpy as np
import scipy.special as _sc

from .. import _creation
from .. import ops as _ops
from .. import special as _special
from .._state import STATE
from .._tensor import Tensor
from ..autograd import Function, once_differentiable
from ..backend import numpy_dtype
from . import constraints
from .distribution import Distribution, _draw, as_float, beside_of, broadcast_all, values_of
from .exp_family import ExponentialFamily

__all__ = ["Normal", "Uniform", "Exponential", "Laplace", "LogNormal", "Gamma", "Beta",
           "Dirichlet"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_SQRT2 = math.sqrt(2.0)


def _standard_normal(shape, dtype, like=None):
    return _draw(lambda g, s: g.standard_normal(s), shape, dtype, like)


def _uniform(shape, dtype, like=None):
    return _draw(lambda g, s: g.random(s), shape, dtype, like)


def _implicit_gamma_derivative(a, x):
    """``dx/dalpha = -(dP/dalpha)(x; alpha) / p(x; alpha)`` (see standard_gamma_rsample)."""
    with np.errstate(all="ignore"):
        h = np.minimum(1e-6 * np.maximum(a, 1.0), a / 2)
        dp = (_sc.gammainc(a + h, x) - _sc.gammainc(a - h, x)) / (2 * h)
        log_pdf = (a - 1) * np.log(x) - x - _sc.gammaln(a)
        return -dp * np.exp(-log_pdf)


class _GammaDraw(Function):
    """Gamma(alpha, 1) draws with the implicit-reparameterisation derivative; its backward
    is ``once_differentiable``: a second derivative in alpha raises rather than being
    silently wrong (the derivative is a finite difference, not a graph)."""

    @staticmethod
    def forward(ctx, alpha, u):
        a = values_of(alpha).astype(np.float64)
        with np.errstate(all="ignore"):
            x = np.maximum(_sc.gammaincinv(a, u), np.finfo(numpy_dtype(alpha.dtype)).tiny)
        dt = numpy_dtype(alpha.dtype)  # computed on the host, returned beside alpha
        ctx.dx = beside_of(alpha, _implicit_gamma_derivative(a, x).astype(dt))
        return beside_of(alpha, x.astype(dt))

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g * ctx.dx, None

    @staticmethod
    def jvp(ctx, t, _):
        return t * ctx.dx


def standard_gamma_rsample(alpha):
    """Gamma(alpha, 1) draws of ``alpha``'s shape, differentiable in ``alpha`` by implicit
    reparameterisation (Figurnov, Mohamed & Mnih 2018, "Implicit Reparameterization
    Gradients"): ``x = P^-1(u; alpha)`` for a uniform ``u`` (SciPy's ``gammaincinv``), and
    ``dx/dalpha = -(dP/dalpha)(x; alpha) / p(x; alpha)`` with ``P`` the regularised lower
    incomplete gamma function, ``dP/dalpha`` by a central difference of ``gammainc`` and ``p``
    the Gamma(alpha, 1) density. First derivatives are exact up to the difference's ~1e-9;
    a second derivative in ``alpha`` raises (the backward is once_differentiable)."""
    u = _creation.default_generator.random(tuple(alpha.shape))
    if not (alpha.requires_grad or STATE.dual_level):  # no derivative wanted
        return _GammaDraw.forward(_Ctx(), alpha, u)
    return _GammaDraw.apply(alpha, u)


class _Ctx:
    """A bare context for a draw that needs no gradient."""


class _LocationScale(Distribution):
    """A reparameterised distribution of ``loc + scale z`` on the real line (Normal, Laplace,
    Cauchy, Gumbel): ``loc`` real and ``scale`` positive, broadcast together; the batch
    shape is theirs."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)


class Normal(_LocationScale, ExponentialFamily):
    """Normal (Gaussian) distribution ``N(loc, scale^2)``, as ``torch.distributions.Normal``.

    ``loc`` and ``scale`` (numbers or Tensors) broadcast to ``batch_shape``; event shape
    ``()``. ``rsample`` is ``loc + scale * eps`` with ``eps ~ N(0, 1)``. ``log_prob``,
    ``cdf = (1 + erf((x - loc) / (scale sqrt 2))) / 2``, ``icdf`` and ``entropy =
    1/2 + log(sqrt(2 pi) scale)`` are the textbook closed forms (PyTorch's normal.py).

    Raises ValueError (when validating) for ``scale <= 0`` or a NaN ``loc``.
    """

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc + _standard_normal(shape, self.loc.dtype, self.loc) * self.scale

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        return (-((value - self.loc) ** 2) / (2 * self.scale ** 2) - _ops.log(self.scale)
                - _LOG_SQRT_2PI)

    def cdf(self, value):
        value = self._value(value, self.loc.dtype)
        return 0.5 * (1 + _ops.erf((value - self.loc) / (self.scale * _SQRT2)))

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        return self.loc + self.scale * _ops.erfinv(2 * value - 1) * _SQRT2

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + _ops.log(self.scale)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.loc / self.scale ** 2, -0.5 / self.scale ** 2)

    def _log_normalizer(self, x, y):
        return -0.25 * x ** 2 / y + 0.5 * _ops.log(-math.pi / y)


class Uniform(Distribution):
    """Uniform distribution on ``[low, high)``, as ``torch.distributions.Uniform``.

    ``low`` and ``high`` broadcast to ``batch_shape``. ``rsample`` is ``low + u (high - low)``
    with ``u ~ U[0, 1)``; ``log_prob = -log(high - low)`` inside (``-inf`` outside when not
    validating), ``cdf`` clamps ``(x - low) / (high - low)`` to ``[0, 1]``, ``entropy =
    log(high - low)`` (PyTorch's uniform.py).

    Raises ValueError (when validating) unless ``low < high`` everywhere, and for values
    outside ``[low, high]``.
    """

    has_rsample = True

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        """NaN of shape ``batch_shape`` (every point of the interval is a mode), as PyTorch's
        ``nan * high``."""
        return math.nan * self.high

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        u = _uniform(self._extended_shape(sample_shape), self.low.dtype, self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = self._value(value, self.low.dtype)
        inside = _ops.to_dtype((self.low <= value) & (self.high > value), self.low.dtype)
        with np.errstate(divide="ignore"):  # log 0 = -inf outside, as in PyTorch
            return _ops.log(inside) - _ops.log(self.high - self.low)

    def cdf(self, value):
        value = self._value(value, self.low.dtype)
        return _ops.clamp((value - self.low) / (self.high - self.low), 0, 1)

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.low.dtype), self.low)
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return _ops.log(self.high - self.low)


class Exponential(ExponentialFamily):
    """Exponential distribution with ``rate``, density ``rate e^(-rate x)`` on ``x >= 0``, as
    ``torch.distributions.Exponential``.

    ``rsample`` is ``E / rate`` with a standard exponential ``E``; ``cdf = 1 - e^(-rate x)``,
    ``icdf = -log1p(-p) / rate``, ``entropy = 1 - log(rate)`` (PyTorch's exponential.py).

    Raises ValueError (when validating) for ``rate <= 0`` and for negative values.
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return 1 / self.rate

    @property
    def mode(self):
        """Zeros of shape ``batch_shape`` (the density ``rate e^(-rate x)`` peaks at 0)."""
        return _creation.zeros_like(self.rate)

    @property
    def stddev(self):
        return 1 / self.rate

    @property
    def variance(self):
        return self.rate ** -2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _draw(lambda g, s: g.standard_exponential(s), shape, self.rate.dtype,
                     self.rate) / self.rate

    def log_prob(self, value):
        value = self._value(value, self.rate.dtype)
        return _ops.log(self.rate) - self.rate * value

    def cdf(self, value):
        value = self._value(value, self.rate.dtype)
        return 1 - _ops.exp(-self.rate * value)

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.rate.dtype), self.rate)
        return -_ops.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - _ops.log(self.rate)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -_ops.log(-x)


class Laplace(_LocationScale):
    """Laplace distribution, density ``exp(-|x - loc| / scale) / (2 scale)``, as
    ``torch.distributions.Laplace``.

    ``rsample`` is ``loc - scale sign(u) log1p(-|u|)`` with ``u ~ U[eps - 1, 1)``; ``cdf``,
    ``icdf`` and ``entropy = 1 + log(2 scale)`` as PyTorch's laplace.py.

    Raises ValueError (when validating) for ``scale <= 0``.
    """

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return _SQRT2 * self.scale

    @property
    def variance(self):
        return 2 * self.scale ** 2

    def rsample(self, sample_shape=()):
        dtype = numpy_dtype(self.loc.dtype)
        eps = float(np.finfo(dtype).eps)
        u = _uniform(self._extended_shape(sample_shape), dtype, self.loc) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * _ops.sign(u) * _ops.log1p(-_ops.abs(u))

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        return -_ops.log(2 * self.scale) - _ops.abs(value - self.loc) / self.scale

    def cdf(self, value):
        value = self._value(value, self.loc.dtype)
        z = value - self.loc
        return 0.5 - 0.5 * _ops.sign(z) * _ops.expm1(-_ops.abs(z) / self.scale)

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        term = value - 0.5
        return self.loc - self.scale * _ops.sign(term) * _ops.log1p(-2 * _ops.abs(term))

    def entropy(self):
        return 1 + _ops.log(2 * self.scale)


class LogNormal(Distribution):
    """Log-normal distribution: ``exp(X)`` for ``X ~ Normal(loc, scale)``, as
    ``torch.distributions.LogNormal`` (there a TransformedDistribution; here written out).

    ``log_prob(x) = Normal.log_prob(log x) - log x``; ``mean = exp(loc + scale^2 / 2)``,
    ``variance = (exp(scale^2) - 1) exp(2 loc + scale^2)``, ``entropy = Normal.entropy() +
    loc``, ``cdf(x) = Normal.cdf(log x)``, ``icdf = exp(Normal.icdf)``. ``base_dist`` is the
    Normal.

    Raises ValueError (when validating) for ``scale <= 0`` and for non-positive values.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        self.loc, self.scale = self.base_dist.loc, self.base_dist.scale
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self):
        return _ops.exp(self.loc + self.scale ** 2 / 2)

    @property
    def mode(self):
        return _ops.exp(self.loc - self.scale ** 2)

    @property
    def variance(self):
        s2 = self.scale ** 2
        return _ops.expm1(s2) * _ops.exp(2 * self.loc + s2)

    def rsample(self, sample_shape=()):
        return _ops.exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        y = _ops.log(value)
        return (-((y - self.loc) ** 2) / (2 * self.scale ** 2) - _ops.log(self.scale)
                - _LOG_SQRT_2PI - y)

    def cdf(self, value):
        """``Normal.cdf(log x)``; as PyTorch's (a TransformedDistribution), the check when
        validating is of ``log x`` against the Normal's support, so ``cdf(0) = 0`` and only
        negative or NaN values raise ValueError."""
        if not isinstance(value, Tensor):
            value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.base_dist.cdf(_ops.log(value))

    def icdf(self, value):
        return _ops.exp(self.base_dist.icdf(value))

    def entropy(self):
        return self.base_dist.entropy() + self.loc


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` (alpha) and ``rate`` (beta), density
    ``beta^alpha x^(alpha - 1) e^(-beta x) / Gamma(alpha)``, as ``torch.distributions.Gamma``.

    ``log_prob``, ``entropy = alpha - log beta + lgamma(alpha) + (1 - alpha) digamma(alpha)``
    and ``cdf = gammainc(alpha, beta x)`` as PyTorch's gamma.py (``cdf`` is differentiable in
    ``x`` and ``rate`` only, as chainrule's ``special.gammainc``). ``rsample`` draws by the
    inverse CDF and is differentiable in both parameters: in ``rate`` exactly (``x / rate``),
    in ``concentration`` by implicit reparameterisation (first derivatives only, see
    :func:`standard_gamma_rsample`).

    Raises ValueError (when validating) for non-positive parameters and negative values.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return _ops.clamp((self.concentration - 1) / self.rate, min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        alpha = _ops.broadcast_to(self.concentration, shape)
        return standard_gamma_rsample(alpha) / _ops.broadcast_to(self.rate, shape)

    def log_prob(self, value):
        value = self._value(value, self.rate.dtype)
        a, b = self.concentration, self.rate
        return _ops.xlogy(a, b) + _ops.xlogy(a - 1, value) - b * value - _ops.lgamma(a)

    def cdf(self, value):
        value = self._value(value, self.rate.dtype)
        return _special.gammainc(self.concentration, self.rate * value)

    def entropy(self):
        a = self.concentration
        return a - _ops.log(self.rate) + _ops.lgamma(a) + (1.0 - a) * _ops.digamma(a)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return _ops.lgamma(x + 1) + (x + 1) * _ops.log(-1 / y)


class Beta(ExponentialFamily):
    """Beta distribution, density ``x^(a - 1) (1 - x)^(b - 1) / B(a, b)`` on ``[0, 1]`` with
    ``a = concentration1``, ``b = concentration0``, as ``torch.distributions.Beta``.

    ``log_prob = xlogy(a - 1, x) + xlogy(b - 1, 1 - x) - lbeta(a, b)``, ``entropy = lbeta(a,
    b) - (a - 1) digamma(a) - (b - 1) digamma(b) + (a + b - 2) digamma(a + b)``, mean and
    variance as in PyTorch's beta.py / dirichlet.py. ``rsample`` is ``G_a / (G_a + G_b)`` of
    two Gamma draws with implicit reparameterisation (first derivatives only).

    Raises ValueError (when validating) for non-positive concentrations and values outside
    ``[0, 1]``.
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        """The mode of shape ``batch_shape``, as PyTorch's (the first coordinate of the
        Dirichlet mode of ``(a, b)``): ``(a - 1) / (a + b - 2)`` for ``a, b >= 1`` (NaN for
        ``a = b = 1``), 0 when only ``a < 1``, 1 when only ``b < 1`` (the density is unbounded
        at that end) and 1 when both are below 1 (see :attr:`Dirichlet.mode`)."""
        c = _ops.stack([self.concentration1, self.concentration0], -1)
        return _dirichlet_mode(c)[..., 0]

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        ga = standard_gamma_rsample(_ops.broadcast_to(self.concentration1, shape))
        gb = standard_gamma_rsample(_ops.broadcast_to(self.concentration0, shape))
        return ga / (ga + gb)

    def log_prob(self, value):
        value = self._value(value, self.concentration1.dtype)
        a, b = self.concentration1, self.concentration0
        return (_ops.xlogy(a - 1, value) + _ops.xlogy(b - 1, 1 - value)
                + _ops.lgamma(a + b) - _ops.lgamma(a) - _ops.lgamma(b))

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (_ops.lgamma(a) + _ops.lgamma(b) - _ops.lgamma(total)
                - (a - 1) * _ops.digamma(a) - (b - 1) * _ops.digamma(b)
                + (total - 2) * _ops.digamma(total))

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return _ops.lgamma(x) + _ops.lgamma(y) - _ops.lgamma(x + y)


def _dirichlet_mode(c):
    """The Dirichlet mode of concentrations ``c`` (last dim K); see :attr:`Dirichlet.mode`.
    Where every entry is below 1 the denominator is replaced by 1 before dividing, so no
    ``0 / 0`` reaches the gradient of the rows that are then replaced by ``e_0``."""
    cm1 = _ops.clamp(c - 1, min=0.0)
    total = cm1.sum(-1, keepdim=True)
    corner = (c < 1).all(-1, keepdim=True)
    mode = cm1 / _ops.where(corner, _creation.ones_like(total), total)
    k = c.shape[-1]
    e0 = beside_of(c, np.eye(1, k, dtype=numpy_dtype(c.dtype))[0])
    return _ops.where(corner, e0, mode)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex with ``concentration`` of shape
    ``batch_shape + (K,)``; event shape ``(K,)``, as ``torch.distributions.Dirichlet``.

    ``log_prob = sum xlogy(alpha - 1, x) + lgamma(sum alpha) - sum lgamma(alpha)``; mean
    ``alpha / alpha_0``, variance ``alpha (alpha_0 - alpha) / (alpha_0^2 (alpha_0 + 1))``,
    entropy as PyTorch's dirichlet.py. ``rsample`` normalises K Gamma draws (implicit
    reparameterisation, first derivatives only).

    Raises ValueError for a 0-d ``concentration`` and (when validating) non-positive entries
    or values off the simplex.
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        (concentration,) = broadcast_all(concentration)
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = tuple(concentration.shape)
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        """The mode, of shape ``batch_shape + (K,)``, as PyTorch's dirichlet.py: ``m = max(alpha
        - 1, 0) / sum max(alpha - 1, 0)`` (NaN when every ``alpha <= 1`` with one equal to 1),
        and where every ``alpha < 1`` (density unbounded at each vertex) the first vertex
        ``e_0`` (PyTorch's ``one_hot(argmax)`` of an all-NaN row)."""
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0 ** 2 * (a0 + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        g = standard_gamma_rsample(_ops.broadcast_to(self.concentration, shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        value = self._value(value, self.concentration.dtype)
        a = self.concentration
        return (_ops.xlogy(a - 1.0, value).sum(-1) + _ops.lgamma(a.sum(-1))
                - _ops.lgamma(a).sum(-1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (_ops.lgamma(a).sum(-1) - _ops.lgamma(a0) - (k - a0) * _ops.digamma(a0)
                - ((a - 1.0) * _ops.digamma(a)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return _ops.lgamma(x).sum(-1) - _ops.lgamma(x.sum(-1))
