"""More closed-form KL divergences, registered with :func:`register_kl` as in
``torch.distributions.kl``: Cauchy, Geometric, HalfNormal, LogNormal, Binomial and
TransformedDistribution pairs, Exponential/Gamma across families, Uniform || Normal."""

from __future__ import annotations

import math

from .. import _creation
from .. import ops as _ops
from .compound import TransformedDistribution
from .continuous import Exponential, Gamma, LogNormal, Normal, Uniform
from .discrete import Binomial
from .kl import _kl_normal_normal, kl_divergence, register_kl
from .more import Cauchy, Geometric, HalfNormal

__all__: list = []

_EULER_GAMMA = 0.57721566490153286060


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = _ops.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2)
    return t1 - _ops.log(4 * p.scale * q.scale)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - _ops.log1p(-q.probs) / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p._base, q._base)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    """Raises NotImplementedError where ``p.total_count < q.total_count`` (as PyTorch);
    infinite where it is larger."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + _ops.log1p(-p.probs)
                          - _ops.log1p(-q.probs))
    inf = _creation.full(tuple(kl.shape), math.inf, dtype=kl.dtype, device=kl.device)
    return _ops.where(p.total_count > q.total_count, inf, kl)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    """KL of the bases, for equal transforms and event shapes (NotImplementedError
    otherwise)."""
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * _ops.log(ratio)
    return (t1 + ratio + _ops.lgamma(q.concentration) + q.concentration * _EULER_GAMMA
            - (1 + _EULER_GAMMA))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.concentration / p.rate


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    width = p.high - p.low
    t1 = _ops.log(math.sqrt(math.pi * 2) * q.scale / width)
    t2 = width ** 2 / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2) ** 2
    return t1 + 0.5 * (t2 + t3) / q.scale ** 2
