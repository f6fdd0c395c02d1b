"""StudentT, Cauchy, HalfNormal, HalfCauchy, Gumbel and Geometric, as
``torch.distributions`` (formulas of its studentT.py, cauchy.py, half_normal.py,
half_cauchy.py, gumbel.py, geometric.py), composed of differentiable chainrule ops. Draws
come from chainrule's generator, not PyTorch's."""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .. import ops as _ops
from ..backend import numpy_dtype
from . import constraints
from .continuous import Normal, _LocationScale, _standard_normal, _uniform, standard_gamma_rsample
from .discrete import _as_tensor, _one_of, _ProbsOrLogits
from .distribution import Distribution, as_float, beside_of, broadcast_all, softplus, values_of

__all__ = ["StudentT", "Cauchy", "HalfNormal", "HalfCauchy", "Gumbel", "Geometric"]

_EULER_GAMMA = 0.57721566490153286060


def _nan_like(x):
    return _creation.full(tuple(x.shape), float("nan"), dtype=x.dtype, device=x.device)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, ``loc`` and ``scale``, as
    ``torch.distributions.StudentT``. ``log_prob = -(df + 1)/2 log1p(y^2 / df) - log scale -
    log(df pi)/2 - lgamma(df/2) + lgamma((df + 1)/2)`` with ``y = (x - loc) / scale``;
    ``mean = loc`` (NaN for ``df <= 1``), ``variance = scale^2 df / (df - 2)`` (inf for
    ``1 < df <= 2``, NaN for ``df <= 1``). ``rsample = loc + scale X / sqrt(Z / df)`` with
    ``X ~ N(0, 1)``, ``Z ~ Chi2(df)`` (differentiable in ``df`` by implicit
    reparameterisation of the Gamma draw).

    Raises ValueError (when validating) for non-positive ``df`` or ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self):
        return _ops.where(self.df > 1, self.loc, _nan_like(self.loc))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """``scale^2 df / (df - 2)`` for ``df > 2``, inf for ``1 < df <= 2``, NaN for ``df <=
        1`` (shape ``batch_shape``). The formula is evaluated at a stand-in ``df = 3`` where
        ``df <= 2``, so its gradient there is 0 (as PyTorch's masked assignment) rather than
        ``0 * inf = NaN`` leaking through ``where``."""
        df = self.df
        above = df > 2
        safe_df = _ops.where(above, df, _creation.full_like(df, 3.0))
        v = self.scale ** 2 * safe_df / (safe_df - 2)
        v = _ops.where(above, v, _creation.full(tuple(df.shape), math.inf, dtype=df.dtype,
                                                device=df.device))
        return _ops.where(df > 1, v, _nan_like(df))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_normal(shape, self.df.dtype, self.df)
        z = 2 * standard_gamma_rsample(_ops.broadcast_to(0.5 * self.df, shape))  # Chi2(df)
        return self.loc + self.scale * x * _ops.rsqrt(z / self.df)

    def log_prob(self, value):
        value = self._value(value, self.df.dtype)
        y = (value - self.loc) / self.scale
        z = (_ops.log(self.scale) + 0.5 * _ops.log(self.df) + 0.5 * math.log(math.pi)
             + _ops.lgamma(0.5 * self.df) - _ops.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * _ops.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        df = self.df
        lbeta = _ops.lgamma(0.5 * df) + math.lgamma(0.5) - _ops.lgamma(0.5 * (df + 1))
        return (_ops.log(self.scale) + 0.5 * (df + 1) * (_ops.digamma(0.5 * (df + 1))
                                                         - _ops.digamma(0.5 * df))
                + 0.5 * _ops.log(df) + lbeta)


class Cauchy(_LocationScale):
    """Cauchy (Lorentz) distribution with ``loc`` and ``scale``, as
    ``torch.distributions.Cauchy``: ``log_prob = -log(pi scale) - log1p(((x - loc) /
    scale)^2)``, ``cdf = atan((x - loc) / scale) / pi + 1/2``, ``icdf = loc + scale tan(pi (p
    - 1/2))``, ``entropy = log(4 pi scale)``; mean NaN, variance inf. ``rsample = loc +
    scale tan(pi (u - 1/2))``.

    Raises ValueError (when validating) for ``scale <= 0``."""

    @property
    def mean(self):
        return _nan_like(self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return _creation.full(tuple(self.loc.shape), math.inf, dtype=self.loc.dtype,
                              device=self.loc.device)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps = _ops.tan(math.pi * (_uniform(shape, self.loc.dtype, self.loc) - 0.5))
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        return (-math.log(math.pi) - _ops.log(self.scale)
                - _ops.log1p(((value - self.loc) / self.scale) ** 2))

    def cdf(self, value):
        value = self._value(value, self.loc.dtype)
        return _ops.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        return _ops.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + _ops.log(self.scale)


class _Half(Distribution):
    """``|X|`` for a symmetric ``X`` about 0 (``self._base``): density doubled on
    ``x >= 0``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (self.scale,) = broadcast_all(scale)
        self._base = self._base_cls(_creation.zeros_like(self.scale), self.scale,
                                    validate_args=False)
        super().__init__(self.scale.shape, validate_args=validate_args)

    @property
    def mode(self):
        return _creation.zeros_like(self.scale)

    def rsample(self, sample_shape=()):
        return _ops.abs(self._base.rsample(sample_shape))

    def log_prob(self, value):
        value = self._value(value, self.scale.dtype)
        lp = self._base.log_prob(value) + math.log(2)
        return _ops.where(value >= 0, lp, -math.inf)

    def cdf(self, value):
        value = self._value(value, self.scale.dtype)
        return 2 * self._base.cdf(value) - 1

    def icdf(self, prob):
        return self._base.icdf((as_float(prob, numpy_dtype(self.scale.dtype), self.scale) + 1) / 2)

    def entropy(self):
        return self._base.entropy() - math.log(2)


class HalfNormal(_Half):
    """``|X|`` for ``X ~ N(0, scale^2)``, as ``torch.distributions.HalfNormal``:
    ``log_prob = log N(x; 0, scale) + log 2`` on ``x >= 0`` (``-inf`` below), ``mean =
    scale sqrt(2 / pi)``, ``variance = scale^2 (1 - 2 / pi)``, ``cdf = 2 Phi(x / scale) -
    1``, ``entropy = H(N) - log 2``.

    Raises ValueError (when validating) for ``scale <= 0`` and negative values."""

    _base_cls = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale ** 2 * (1 - 2 / math.pi)


class HalfCauchy(_Half):
    """``|X|`` for ``X ~ Cauchy(0, scale)``, as ``torch.distributions.HalfCauchy``:
    ``log_prob = log Cauchy(x; 0, scale) + log 2`` on ``x >= 0``; mean and variance inf.

    Raises ValueError (when validating) for ``scale <= 0`` and negative values."""

    _base_cls = Cauchy

    @property
    def mean(self):
        return _creation.full(tuple(self.scale.shape), math.inf, dtype=self.scale.dtype,
                              device=self.scale.device)

    @property
    def variance(self):
        return self.mean


class Gumbel(_LocationScale):
    """Gumbel (type-I extreme value) distribution with ``loc`` and ``scale``, as
    ``torch.distributions.Gumbel``: ``log_prob = (y - e^y) - log scale`` with ``y = (loc -
    x) / scale``, ``cdf = exp(-exp(-(x - loc) / scale))``, ``mean = loc + scale gamma``
    (Euler's constant), ``variance = (pi scale)^2 / 6``, ``entropy = log scale + 1 +
    gamma``. ``rsample = loc - scale log(-log u)``.

    Raises ValueError (when validating) for ``scale <= 0``."""

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev ** 2

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        finfo = np.finfo(numpy_dtype(self.loc.dtype))
        u = _ops.clamp(_uniform(shape, self.loc.dtype, self.loc), float(finfo.tiny),
                       1 - float(finfo.eps))
        return self.loc - self.scale * _ops.log(-_ops.log(u))

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        y = (self.loc - value) / self.scale
        return (y - _ops.exp(y)) - _ops.log(self.scale)

    def cdf(self, value):
        value = self._value(value, self.loc.dtype)
        return _ops.exp(-_ops.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        value = as_float(value, numpy_dtype(self.loc.dtype), self.loc)
        return self.loc - self.scale * _ops.log(-_ops.log(value))

    def entropy(self):
        return _ops.log(self.scale) + (1 + _EULER_GAMMA)


class Geometric(_ProbsOrLogits, Distribution):
    """The number of failures before the first success in Bernoulli(``probs``) trials
    (``probs`` or ``logits``, exactly one), as ``torch.distributions.Geometric``:
    ``log_prob(k) = k log1p(-p) + log p``, ``mean = 1/p - 1``, ``variance = (1/p - 1) / p``,
    ``entropy = BCE(logits, p) / p``. Draws ``floor(log u / log1p(-p))``.

    Raises ValueError when both or neither parameter is given, and (when validating) for
    ``probs`` outside ``(0, 1]`` (``probs = 0`` included, as PyTorch's extra check) or
    negative / non-integer values."""

    _binary = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(_as_tensor(probs))
            param = self.probs
        else:
            (self.logits,) = broadcast_all(_as_tensor(logits))
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:  # p = 0 has no distribution
            valid = values_of(self.probs) > 0
            if not valid.all():
                raise ValueError(
                    f"Expected parameter probs (Tensor of shape {tuple(self.probs.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint "
                    f"{constraints.interval(0.0, 1.0)!r}, but found invalid values:\n"
                    f"{values_of(self.probs)[~valid]}")

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return _creation.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        dt = numpy_dtype(self._param.dtype)
        tiny = np.finfo(dt).tiny
        u = np.clip(_creation.default_generator.random(shape), tiny, 1.0)
        p = np.broadcast_to(values_of(self.probs), shape)
        with np.errstate(divide="ignore"):
            draws = np.floor(np.log(u) / np.log1p(-p))
        return beside_of(self._param, draws.astype(dt))

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        value, probs = broadcast_all(value, self.probs)
        # k log1p(-p) with 0 log 0 = 0 (p == 1 at k == 0)
        edge = (probs == 1) & (value == 0)
        safe = _ops.where(edge, _creation.zeros_like(probs), probs)
        return value * _ops.log1p(-safe) + _ops.log(self.probs)

    def entropy(self):
        logits, p = self.logits, self.probs
        bce = softplus(logits) - p * logits
        return bce / p
