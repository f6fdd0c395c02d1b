"""Multinomial and NegativeBinomial, as ``torch.distributions`` (multinomial.py,
negative_binomial.py): densities of differentiable chainrule ops, draws (no gradient) from
NumPy's samplers on chainrule's generator."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import ops as _ops
from ..backend import numpy_dtype
from . import constraints
from .continuous import Gamma
from .discrete import Binomial, Categorical, _CategoricalParams, _one_of, _ProbsOrLogits
from .distribution import Distribution, _draw, as_shape, broadcast_all, softplus, values_of

__all__ = ["Multinomial", "NegativeBinomial"]


def _logsigmoid(x):
    return -softplus(-x)


class Multinomial(_CategoricalParams, Distribution):
    """Counts of ``total_count`` draws from a Categorical over ``K`` outcomes (``probs`` or
    ``logits``, exactly one, shape ``batch_shape + (K,)``), as
    ``torch.distributions.Multinomial``: event shape ``(K,)``.

    ``log_prob(x) = lgamma(sum x + 1) - sum lgamma(x + 1) + sum x logits`` (``0 * -inf = 0``);
    ``mean = n p``, ``variance = n p (1 - p)``; ``entropy`` as PyTorch's (the Categorical
    entropy times ``n`` corrected by the Binomial marginals). ``total_count`` is one int for
    the whole batch (it may be 0 when only ``log_prob`` is needed). No rsample.

    Raises NotImplementedError for a ``total_count`` that is not an int, ValueError when
    both or neither of ``probs``/``logits`` is given and (when validating) for invalid
    parameters or counts that are negative or sum above ``total_count``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = tuple(self._categorical.param_shape)[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(as_shape(sample_shape)))
        p = values_of(self.probs).astype(np.float64)
        p = np.broadcast_to(p / p.sum(-1, keepdims=True), shape)
        return _draw(lambda g, s: g.multinomial(self.total_count, p), shape,
                     numpy_dtype(self.probs.dtype), self.probs)

    def entropy(self):
        n = float(self.total_count)
        term1 = n * self._categorical.entropy() - float(np.log(np.arange(1, n + 1)).sum())
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = _ops.exp(self._binomial.log_prob(support))
        weights = _ops.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum((0, -1))
        return term1 + term2

    def log_prob(self, value):
        value = self._value(value, self.probs.dtype)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = _ops.lgamma(value.sum(-1) + 1)
        log_factorial_xs = _ops.lgamma(value + 1).sum(-1)
        logits = _ops.where((value == 0) & (logits == -np.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)


class NegativeBinomial(_ProbsOrLogits, Distribution):
    """Number of successes before ``total_count`` failures in Bernoulli trials of success
    probability ``probs`` (or ``logits``; exactly one), as
    ``torch.distributions.NegativeBinomial``.

    ``log_prob(k) = r logsigmoid(-logits) + k logsigmoid(logits) + lgamma(r + k) -
    lgamma(k + 1) - lgamma(r)`` (the normaliser 0 where ``r + k = 0``); ``mean = r
    e^logits``, ``variance = mean / sigmoid(-logits)``, ``mode = floor((r - 1) e^logits)``
    clamped at 0. Draws (float, no gradient) are Poisson of Gamma(r, e^-logits) draws. No
    entropy, as in PyTorch.

    Raises ValueError when both or neither parameter is given and (when validating) for a
    negative ``total_count``, ``probs`` outside ``[0, 1)``, NaN logits, or values that are
    not non-negative integers."""

    _binary = True
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self._param = self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * _ops.exp(self.logits)

    @property
    def mode(self):
        return _ops.clamp(_ops.floor((self.total_count - 1) * _ops.exp(self.logits)), min=0.0)

    @property
    def variance(self):
        return self.mean / _ops.sigmoid(-self.logits)

    @cached_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=_ops.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        r = np.broadcast_to(values_of(self.total_count).astype(np.float64), shape)
        scale = np.broadcast_to(np.exp(values_of(self.logits).astype(np.float64)), shape)

        def draw(g, s):
            with np.errstate(all="ignore"):
                rate = np.where(r > 0, g.gamma(np.where(r > 0, r, 1.0), scale, s), 0.0)
            return g.poisson(rate, s)

        return _draw(draw, shape, numpy_dtype(self._param.dtype), self._param)

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        r = self.total_count
        log_unnormalized_prob = r * _logsigmoid(-self.logits) + value * _logsigmoid(self.logits)
        log_normalization = -_ops.lgamma(r + value) + _ops.lgamma(1.0 + value) + _ops.lgamma(r)
        log_normalization = _ops.where(r + value == 0.0, 0.0, log_normalization)
        return log_unnormalized_prob - log_normalization

