"""Relaxed (Concrete / Gumbel-softmax) distributions, OneHotCategoricalStraightThrough and
LogisticNormal, as ``torch.distributions`` (relaxed_bernoulli.py, relaxed_categorical.py,
one_hot_categorical.py, logistic_normal.py): reparameterised draws of differentiable
chainrule ops."""

from __future__ import annotations

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._tensor import Tensor
from ..backend import numpy_dtype
from . import constraints
from .compound import TransformedDistribution
from .continuous import Normal, _uniform
from .discrete import (
    Categorical,
    OneHotCategoricalStraightThrough,
    _CategoricalParams,
    _one_of,
    _ProbsOrLogits,
)
from .distribution import Distribution, broadcast_all, clamp_probs
from .transforms import ExpTransform, SigmoidTransform
from .transforms_more import StickBreakingTransform

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical", "OneHotCategoricalStraightThrough", "LogisticNormal"]


def _as_temperature(temperature, like):
    """The temperature as a Tensor of ``like``'s dtype (PyTorch needs a Tensor there;
    numbers are accepted here and wrapped)."""
    if isinstance(temperature, Tensor):
        return temperature
    return _creation.tensor(np.asarray(temperature, dtype=numpy_dtype(like.dtype)),
                            device=like.device)


class LogitRelaxedBernoulli(_ProbsOrLogits, Distribution):
    """The logit of a RelaxedBernoulli draw: ``(logit(u) + logits) / temperature`` for a
    uniform ``u``, as ``torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli``
    (Maddison et al. 2017). ``log_prob(x) = log t + d - 2 log1p(e^d)`` with ``d = logits - t
    x``.

    Raises ValueError when both or neither of ``probs``/``logits`` is given and (when
    validating) for invalid parameters."""

    _binary = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    _expand_skip = ("temperature",)

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self.temperature = _as_temperature(temperature, self._param)
        super().__init__(self._param.shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(_ops.broadcast_to(self.probs, shape))
        uniforms = clamp_probs(_uniform(shape, probs.dtype, probs))
        return (_ops.log(uniforms) - _ops.log1p(-uniforms) + _ops.log(probs)
                - _ops.log1p(-probs)) / self.temperature

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return _ops.log(self.temperature) + diff - 2 * _ops.log1p(_ops.exp(diff))


class _BaseParams:
    """``temperature``, ``logits`` and ``probs`` read from ``base_dist``."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs


class RelaxedBernoulli(_BaseParams, TransformedDistribution):
    """Relaxed Bernoulli (binary Concrete) distribution on ``(0, 1)``: ``sigmoid`` of a
    LogitRelaxedBernoulli draw, as ``torch.distributions.RelaxedBernoulli``; reparameterised.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)


class ExpRelaxedCategorical(_CategoricalParams, Distribution):
    """The log of a RelaxedOneHotCategorical draw: ``log_softmax((logits + g) / t)`` for
    Gumbel noise ``g``, as ``torch.distributions.relaxed_categorical.ExpRelaxedCategorical``;
    event shape ``(K,)``."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True
    _expand_skip = ("temperature",)

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = _as_temperature(temperature, self._categorical._param)
        batch_shape = self._categorical.batch_shape
        event_shape = tuple(self._categorical.param_shape)[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        uniforms = clamp_probs(_uniform(shape, self.logits.dtype, self.logits))
        gumbels = -_ops.log(-_ops.log(uniforms))
        scores = (self.logits + gumbels) / self.temperature
        return scores - _ops.logsumexp(scores, dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        value = self._value(value, self.logits.dtype)
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature
        log_scale = _ops.lgamma(_creation.full_like(t, float(k))) + (k - 1) * _ops.log(t)
        score = logits - value * t
        score = (score - _ops.logsumexp(score, dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_BaseParams, TransformedDistribution):
    """Relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution on the simplex:
    ``exp`` of an ExpRelaxedCategorical draw, as
    ``torch.distributions.RelaxedOneHotCategorical``; reparameterised."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits,
                                          validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)


class LogisticNormal(TransformedDistribution):
    """Logistic-normal distribution on the ``K + 1`` simplex: StickBreakingTransform of
    ``Normal(loc, scale)`` vectors of length ``K``, as
    ``torch.distributions.LogisticNormal``; reparameterised. A 0-d Normal is expanded to
    shape ``(1,)`` first (a draw on the 2-simplex)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
