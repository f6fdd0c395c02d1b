"""``kl_divergence(p, q)`` and ``register_kl``, as ``torch.distributions.kl``."""

from __future__ import annotations

import math

import numpy as np

from .. import linalg as _linalg
from .. import ops as _ops
from .continuous import Beta, Dirichlet, Exponential, Gamma, Normal, Uniform
from .discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, softplus, sum_rightmost
from .multivariate import Independent, MultivariateNormal, batch_mahalanobis

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}
_INF = math.inf


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as ``KL(p || q)`` for ``p`` an instance of
    ``type_p`` and ``q`` of ``type_q``. Lookup takes the most specific registered pair (by
    the method resolution order of ``type(p)``, then of ``type(q)``).

    >>> @register_kl(Normal, Normal)  # doctest: +SKIP
    ... def kl_normal_normal(p, q): ...

    Raises TypeError when either type is not a Distribution subclass.
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    best = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, of shape ``batch_shape``, by the closed
    form registered for the pair of types (differentiable in both distributions'
    parameters).

    Raises NotImplementedError for a pair with no registered closed form.
    """
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fn = _KL_MEMOIZE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p of type "
                                  f"{type(p).__name__} and q of type {type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    # (log(s_q^2 / s_p^2) + (s_p^2 + (m_p - m_q)^2) / s_q^2 - 1) / 2
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - _ops.log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _ops.where(q.probs == 0, _INF, t1)
    t1 = _ops.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _ops.where(q.probs == 1, _INF, t2)
    t2 = _ops.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _ops.where(q.probs == 0, _INF, t)
    t = _ops.where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = _ops.log((q.high - q.low) / (p.high - p.low))
    return _ops.where((q.low > p.low) | (q.high < p.high), _INF, result)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    # (tr(S_q^-1 S_p) + |L_q^-1 (m_q - m_p)|^2 - n + log det S_q - log det S_p) / 2
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (_ops.log(_ops.diagonal(Lq, dim1=-2, dim2=-1)).sum(-1)
                  - _ops.log(_ops.diagonal(Lp, dim1=-2, dim2=-1)).sum(-1))
    n = p.event_shape[0]
    batch = tuple(np.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2])))
    Lq_full = _ops.broadcast_to(Lq, batch + (n, n))
    Lp_full = _ops.broadcast_to(Lp, batch + (n, n))
    term2 = (_linalg.solve_triangular(Lq_full, Lp_full, upper=False) ** 2).sum((-2, -1))
    term3 = batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - _ops.log(ratio)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * _ops.log(p.rate / q.rate)
    t2 = _ops.lgamma(q.concentration) - _ops.lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * _ops.digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return _ops.xlogy(p.rate, p.rate) - _ops.xlogy(p.rate, q.rate) - (p.rate - q.rate)


def _kl_dirichlet_terms(cp, cq):
    sp, sq = cp.sum(-1), cq.sum(-1)
    t1 = _ops.lgamma(sp) - _ops.lgamma(sq)
    t2 = (_ops.lgamma(cp) - _ops.lgamma(cq)).sum(-1)
    t4 = _ops.digamma(cp) - _ops.unsqueeze(_ops.digamma(sp), -1)
    return t1 - t2 + ((cp - cq) * t4).sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    return _kl_dirichlet_terms(p.concentration, q.concentration)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    cp = _ops.stack([p.concentration1, p.concentration0], -1)
    cq = _ops.stack([q.concentration1, q.concentration0], -1)
    cp, cq = _ops.broadcast_tensors(cp, cq)
    return _kl_dirichlet_terms(cp, cq)
