"""Discrete distributions: Bernoulli, Categorical, OneHotCategorical, Poisson, Binomial.
Probabilities and log-probabilities are compositions of differentiable chainrule ops
(``softplus``, ``log_softmax``-style normalisation, ``take_along_dim``, ``lgamma``, ``xlogy``);
draws carry no gradient, as in PyTorch. Formulas follow ``torch.distributions`` 2.x."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import _creation
from .. import ops as _ops
from .. import special as _special
from .._tensor import Tensor
from ..backend import numpy_dtype
from . import constraints
from .distribution import (
    Distribution,
    _draw,
    as_float,
    as_shape,
    beside_of,
    broadcast_all,
    logits_to_probs,
    probs_to_logits,
    softplus,
    values_of,
)
from .exp_family import ExponentialFamily

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Poisson", "Binomial"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _as_tensor(x):
    if isinstance(x, Tensor):
        if numpy_dtype(x.dtype).kind == "f":
            return x
        return _ops.to_dtype(x, _creation.get_default_dtype())
    return as_float(x, numpy_dtype(_creation.get_default_dtype()))


class _ProbsOrLogits:
    """``probs`` from ``logits`` or the other way round (whichever was not given, computed
    once), and ``param_shape``, the given one's shape; ``_binary`` for a Bernoulli-type
    parameter (one probability per entry) rather than a categorical one (a simplex along the
    last dim)."""

    _binary = False

    @cached_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=self._binary)

    @cached_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def param_shape(self):
        return self._param.shape


class Bernoulli(_ProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution on ``{0, 1}`` given ``probs`` or ``logits`` (exactly one), as
    ``torch.distributions.Bernoulli``; the other parameterisation is computed on first use
    (``logits = log p - log1p(-p)`` of ``p`` clamped to ``[eps, 1 - eps]``, ``probs =
    sigmoid(logits)``).

    ``log_prob(x) = x logits - softplus(logits)`` (minus binary cross-entropy with logits, as
    PyTorch's bernoulli.py), ``entropy = softplus(logits) - probs logits``. No ``rsample``.

    Raises ValueError when both or neither parameter is given and (when validating) for
    probabilities outside ``[0, 1]``, NaN logits, or values other than 0 and 1.
    """

    _binary = True
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = _ops.to_dtype(self.probs >= 0.5, self._param.dtype)
        return _ops.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        p = np.broadcast_to(values_of(self.probs), shape)
        draws = _creation.default_generator.random(shape) < p
        return beside_of(self._param, draws.astype(numpy_dtype(self._param.dtype)))

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        return value * self.logits - softplus(self.logits)

    def entropy(self):
        return softplus(self.logits) - self.probs * self.logits

    _mean_carrier_measure = 0

    @property
    def _natural_params(self):
        return (_special.logit(self.probs),)

    def _log_normalizer(self, x):
        return _ops.log1p(_ops.exp(x))

    def enumerate_support(self, expand=True):
        """``[0, 1]`` shaped ``(2,) + (1,) * len(batch_shape)`` (expanded to the batch)."""
        batch = tuple(self._batch_shape)
        values = _creation.arange(2, dtype=self._param.dtype, device=self._param.device).reshape(
            (2,) + (1,) * len(batch))
        return values.expand((2,) + batch) if expand else values


class Categorical(_ProbsOrLogits, Distribution):
    """Categorical distribution over ``{0, ..., K - 1}`` given ``probs`` (non-negative,
    normalised along the last dim) or ``logits`` (normalised by ``logsumexp``), exactly one,
    of shape ``batch_shape + (K,)``; event shape ``()``, as ``torch.distributions.
    Categorical``.

    ``log_prob(k)`` picks ``logits[..., k]`` (values broadcast with the batch), ``entropy =
    -sum probs logits``; ``mean`` and ``variance`` are NaN, as in PyTorch. Draws are int64.

    Raises ValueError when both or neither parameter is given, for a 0-d parameter, and (when
    validating) for negative probabilities, NaN logits, or values outside ``{0, ..., K-1}``.
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            probs = _as_tensor(probs)
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            logits = _as_tensor(logits)
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - _ops.logsumexp(logits, dim=-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(tuple(param.shape)[:-1], validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return _creation.full(tuple(self._extended_shape()), float("nan"),
                              dtype=self._param.dtype, device=self._param.device)

    @property
    def mode(self):
        return _ops.argmax(self.probs, -1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=()):
        sample_shape = as_shape(sample_shape)
        k = self._num_events
        p = values_of(self.probs).astype(np.float64).reshape(-1, k)
        cdf = np.cumsum(p, -1)
        cdf /= cdf[:, -1:]
        n = int(np.prod(sample_shape, dtype=np.int64))
        u = _creation.default_generator.random((n, p.shape[0]))
        out = np.empty((n, p.shape[0]), dtype=np.int64)
        for b in range(p.shape[0]):
            out[:, b] = np.searchsorted(cdf[b], u[:, b], side="right")
        out = np.minimum(out, k - 1)
        return beside_of(self._param, out.reshape(tuple(sample_shape) + tuple(self._batch_shape)))

    def log_prob(self, value):
        value = self._value(value, np.int64)
        index = _ops.to_dtype(value, np.int64) if numpy_dtype(value.dtype).kind != "i" else value
        shape = np.broadcast_shapes(tuple(index.shape) + (1,), tuple(self.logits.shape))
        index = _ops.broadcast_to(_ops.unsqueeze(index, -1), shape[:-1] + (1,))
        logits = _ops.broadcast_to(self.logits, shape)
        return _ops.squeeze(_ops.take_along_dim(logits, index, dim=-1), -1)

    def entropy(self):
        min_real = float(np.finfo(numpy_dtype(self.logits.dtype)).min)
        logits = _ops.clamp(self.logits, min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        """``0, ..., K - 1`` shaped ``(K,) + (1,) * len(batch_shape)`` (expanded to the
        batch)."""
        k, batch = self._num_events, tuple(self._batch_shape)
        values = _creation.arange(k, dtype=np.int64, device=self._param.device).reshape(
            (k,) + (1,) * len(batch))
        return values.expand((k,) + batch) if expand else values


class _CategoricalParams:
    """``probs``, ``logits`` and ``param_shape`` read from ``self._categorical``."""

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class OneHotCategorical(_CategoricalParams, Distribution):
    """A Categorical draw as a one-hot vector: event shape ``(K,)``, batch shape that of the
    Categorical, as ``torch.distributions.OneHotCategorical``. ``probs``/``logits`` as for
    :class:`Categorical`; ``mean = probs``, ``variance = probs (1 - probs)``, ``log_prob(x) =
    Categorical.log_prob(argmax x)``, same entropy. Draws are in the parameters' float dtype.

    Raises what :class:`Categorical` raises; (when validating) ValueError for values that
    are not one-hot.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical._param
        super().__init__(tuple(param.shape)[:-1], tuple(param.shape)[-1:],
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return self._one_hot(self._categorical.mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def _one_hot(self, index):
        k = self._event_shape[0]
        eye = np.eye(k, dtype=numpy_dtype(self._categorical._param.dtype))
        return beside_of(index, eye[values_of(index)])

    def sample(self, sample_shape=()):
        return self._one_hot(self._categorical.sample(sample_shape))

    def log_prob(self, value):
        value = self._value(value, self._categorical._param.dtype)
        return self._categorical.log_prob(_ops.argmax(value, -1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        """The K one-hot vectors, shaped ``(K,) + (1,) * len(batch_shape) + (K,)``."""
        k, batch = self._event_shape[0], tuple(self._batch_shape)
        eye = _creation.eye(k, dtype=self._categorical._param.dtype,
                            device=self._categorical._param.device)
        values = eye.reshape((k,) + (1,) * len(batch) + (k,))
        return values.expand((k,) + batch + (k,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical with the straight-through gradient estimator (Bengio et al.
    2013), as ``torch.distributions.OneHotCategoricalStraightThrough``: ``rsample`` is a
    one-hot draw plus ``probs - probs.detach()`` (the draw's value, the gradient of
    ``probs``)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class Poisson(ExponentialFamily):
    """Poisson distribution with ``rate``, ``P(k) = rate^k e^-rate / k!``, as
    ``torch.distributions.Poisson``.

    ``log_prob(k) = xlogy(k, rate) - rate - lgamma(k + 1)`` (PyTorch's poisson.py); mean and
    variance ``rate``. Draws (float, no gradient) from NumPy's Poisson sampler on chainrule's
    generator. No entropy, as in PyTorch.

    Raises ValueError (when validating) for a negative rate or non-integer / negative values.
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return _ops.floor(self.rate)

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        lam = np.broadcast_to(values_of(self.rate), shape)
        return _draw(lambda g, s: g.poisson(lam, s), shape, numpy_dtype(self.rate.dtype),
                     self.rate)

    def log_prob(self, value):
        value = self._value(value, self.rate.dtype)
        return _ops.xlogy(value, self.rate) - self.rate - _ops.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (_ops.log(self.rate),)

    def _log_normalizer(self, x):
        return _ops.exp(x)


class Binomial(_ProbsOrLogits, Distribution):
    """Binomial distribution: successes in ``total_count`` trials of probability ``probs``
    (or ``logits``; exactly one), as ``torch.distributions.Binomial``.

    ``log_prob(k) = k logits - n softplus(logits) + lgamma(n + 1) - lgamma(k + 1) -
    lgamma(n - k + 1)`` (PyTorch's binomial.py, with ``n log(1 + e^logits)`` written as one
    softplus); mean ``n p``, variance ``n p (1 - p)``; ``entropy`` sums ``-P log P`` over the
    support (needs one ``total_count`` for the whole batch, as in PyTorch). Draws (float, no
    gradient) from NumPy's binomial sampler.

    Raises ValueError when both or neither of ``probs``/``logits`` is given and (when
    validating) for a negative or non-integer ``total_count``, probabilities outside
    ``[0, 1]``, or values outside ``{0, ..., total_count}``; NotImplementedError from
    ``entropy`` for an inhomogeneous ``total_count``.
    """

    _binary = True
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return _ops.clamp(_ops.floor((self.total_count + 1) * self.probs),
                          max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(values_of(self.total_count).astype(np.int64), shape)
        p = np.broadcast_to(values_of(self.probs), shape)
        return _draw(lambda g, s: g.binomial(n, p, s), shape, numpy_dtype(self._param.dtype),
                     self._param)

    def log_prob(self, value):
        value = self._value(value, self._param.dtype)
        n, logits = self.total_count, self.logits
        return (value * logits - n * softplus(logits) + _ops.lgamma(n + 1)
                - _ops.lgamma(value + 1) - _ops.lgamma(n - value + 1))

    def entropy(self):
        counts = values_of(self.total_count)
        total = int(counts.max()) if counts.size else 0
        if counts.size and counts.min() != total:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(_ops.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        """``0, ..., total_count`` shaped ``(n + 1,) + (1,) * len(batch_shape)`` (expanded to
        the batch); needs one ``total_count`` for the whole batch."""
        counts = values_of(self.total_count)
        total = int(counts.max()) if counts.size else 0
        if counts.size and counts.min() != total:
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        batch = tuple(self._batch_shape)
        values = _creation.arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((1 + total,) + (1,) * len(batch))
        return values.expand((1 + total,) + batch) if expand else values
