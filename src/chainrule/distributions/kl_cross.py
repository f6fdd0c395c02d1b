"""Closed-form KL divergences across families (and Laplace/Gumbel pairs), registered with
:func:`register_kl`; the formulas are those of ``torch.distributions.kl`` (2.x), written with
differentiable chainrule ops, so their gradients are those of the ops.

Pairs where ``p`` puts mass outside ``q``'s support are infinite: a Tensor of ``inf`` shaped
like ``p``'s parameter (as PyTorch's ``_infinite_like``), or ``inf`` where the supports
disagree for the pairs that depend on parameters (Beta || Uniform, Uniform || Beta, Uniform ||
Exponential, Uniform || Gamma); those use ``where`` rather than PyTorch's masked assignment,
so ``p`` and ``q`` with broadcastable (not equal) batch shapes work.
"""

from __future__ import annotations

import math

from .. import _creation
from .. import ops as _ops
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Poisson
from .kl import register_kl
from .more import Gumbel

__all__: list = []

_EULER_GAMMA = 0.57721566490153286060
_INF = math.inf


def _infinite_like(t):
    return _creation.full_like(t, _INF)


def _x_log_x(t):
    return _ops.xlogy(t, t)  # 0 log 0 = 0


def _inf_where(mask, result):
    return _ops.where(mask, _INF, result)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = _ops.abs(p.loc - q.loc)
    t1 = -_ops.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * _ops.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -_ops.log(ct1) - ct2 + ct3
    t2 = ct1 * _EULER_GAMMA
    t3 = _ops.exp(ct2 + _ops.lgamma(1 + ct1) - ct3)
    return t1 + t2 + t3 - (1 + _EULER_GAMMA)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    return -p.entropy() - (p.probs * _ops.log(q.rate) - q.rate)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    a, b = p.concentration1, p.concentration0
    return -p.entropy() - _ops.log(q.rate) + q.rate * (a / (a + b))


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    a, b = p.concentration1, p.concentration0
    t1 = -p.entropy()
    t2 = _ops.lgamma(q.concentration) - q.concentration * _ops.log(q.rate)
    t3 = (q.concentration - 1) * (_ops.digamma(a) - _ops.digamma(a + b))
    t4 = q.rate * a / (a + b)
    return t1 + t2 - t3 + t4


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    a, b = p.concentration1, p.concentration0
    e_beta = a / (a + b)
    var_normal = q.scale ** 2
    t1 = -p.entropy()
    t2 = 0.5 * _ops.log(var_normal * 2 * math.pi)
    t3 = (e_beta * (1 - e_beta) / (a + b + 1) + e_beta ** 2) * 0.5
    t4 = q.loc * e_beta
    t5 = q.loc ** 2 * 0.5
    return t1 + t2 + (t3 - t4 + t5) / var_normal


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    result = -p.entropy() + _ops.log(q.high - q.low)
    return _inf_where((q.low > 0.0) | (q.high < 1.0), result)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    scale_rate_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = _ops.log(scale_rate_prod) - 1
    t2 = _ops.exp(loc_scale_ratio) * scale_rate_prod / (scale_rate_prod + 1)
    t3 = 1 / scale_rate_prod
    return t1 - loc_scale_ratio + t2 + t3


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    var_normal = q.scale ** 2
    rate_sqr = p.rate ** 2
    t1 = 0.5 * _ops.log(rate_sqr * var_normal * 2 * math.pi)
    t2 = 1 / rate_sqr
    t3 = q.loc / p.rate
    t4 = q.loc ** 2 * 0.5
    return t1 - 1 + (t2 - t3 + t4) / var_normal


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    c = p.concentration
    beta_scale_prod = p.rate * q.scale
    loc_scale_ratio = q.loc / q.scale
    t1 = (c - 1) * _ops.digamma(c) - _ops.lgamma(c) - c
    t2 = _ops.log(beta_scale_prod) + c / beta_scale_prod
    t3 = _ops.exp(loc_scale_ratio) * (1 + 1 / beta_scale_prod) ** (-c) - loc_scale_ratio
    return t1 + t2 + t3


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    c = p.concentration
    var_normal = q.scale ** 2
    beta_sqr = p.rate ** 2
    t1 = 0.5 * _ops.log(beta_sqr * var_normal * 2 * math.pi) - c - _ops.lgamma(c)
    t2 = 0.5 * (c ** 2 + c) / beta_sqr
    t3 = q.loc * c / p.rate
    t4 = 0.5 * q.loc ** 2
    return t1 + (c - 1) * _ops.digamma(c) + (t2 - t3 + t4) / var_normal


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    param_ratio = p.scale / q.scale
    t1 = _ops.log(param_ratio / math.sqrt(2 * math.pi))
    t2 = (math.pi * param_ratio * 0.5) ** 2 / 3
    t3 = ((p.loc + p.scale * _EULER_GAMMA - q.loc) / q.scale) ** 2 * 0.5
    return -t1 + t2 + t3 - (_EULER_GAMMA + 1)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    """``KL(N(mu, s) || Laplace(m, b)) = log(b / s) + E|x - m| / b - (1 + log(pi / 2)) / 2``
    with ``E|x - m| = s sqrt(2 / pi) exp(-d^2 / (2 s^2)) + d erf(d / (s sqrt 2))``, ``d = mu - m``
    (the folded normal's mean; PyTorch's ``_kl_normal_laplace``)."""
    loc_diff = p.loc - q.loc
    ratio = loc_diff / p.scale
    t2 = math.sqrt(2 / math.pi) * p.scale * _ops.exp(-0.5 * ratio ** 2)
    t3 = loc_diff * _ops.erf(math.sqrt(0.5) * ratio)
    return -_ops.log(p.scale / q.scale) + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    var_normal = q.scale ** 2
    scale_sqr_var_ratio = p.scale ** 2 / var_normal
    t1 = 0.5 * _ops.log(2 * scale_sqr_var_ratio / math.pi)
    t2 = 0.5 * p.loc ** 2
    t3 = p.loc * q.loc
    t4 = 0.5 * q.loc ** 2
    return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    mean_scale_ratio = p.loc / q.scale
    var_scale_sqr_ratio = (p.scale / q.scale) ** 2
    loc_scale_ratio = q.loc / q.scale
    t1 = _ops.log(var_scale_sqr_ratio) * 0.5
    t2 = mean_scale_ratio - loc_scale_ratio
    t3 = _ops.exp(-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio)
    return -t1 + t2 + t3 - (0.5 * (1 + math.log(2 * math.pi)))


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    width = p.high - p.low
    t1 = _ops.log(width)
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = ((q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width)
          / width)
    t4 = (_ops.lgamma(q.concentration1) + _ops.lgamma(q.concentration0)
          - _ops.lgamma(q.concentration1 + q.concentration0))
    result = t3 + t4 - t1 - t2
    return _inf_where((p.high > 1.0) | (p.low < 0.0), result)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = q.rate * (p.high + p.low) / 2 - _ops.log((p.high - p.low) * q.rate)
    return _inf_where(p.low < 0.0, result)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    width = p.high - p.low
    t1 = _ops.log(width)
    t2 = _ops.lgamma(q.concentration) - q.concentration * _ops.log(q.rate)
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    result = -t1 + t2 + t3 + t4
    return _inf_where(p.low < 0.0, result)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    common = q.scale / (p.high - p.low)
    high_loc_diff = (p.high - q.loc) / q.scale
    low_loc_diff = (p.low - q.loc) / q.scale
    t1 = _ops.log(common) + 0.5 * (high_loc_diff + low_loc_diff)
    t2 = common * (_ops.exp(-high_loc_diff) - _ops.exp(-low_loc_diff))
    return t1 - t2


def _kl_infinite(p, q):
    """``p`` has mass where ``q`` has none (a support that is not inside q's): the KL
    divergence is infinite, shaped like p's batch (PyTorch's ``_kl_*_infinity``)."""
    return _infinite_like(p.mean)


for _p, _q in ((Exponential, Beta), (Exponential, Uniform), (Gamma, Beta), (Gamma, Uniform),
               (Gumbel, Beta), (Gumbel, Exponential), (Gumbel, Gamma), (Gumbel, Uniform),
               (Laplace, Beta), (Laplace, Exponential), (Laplace, Gamma), (Laplace, Uniform),
               (Normal, Beta), (Normal, Exponential), (Normal, Gamma), (Normal, Uniform),
               (Poisson, Bernoulli), (Poisson, Binomial)):
    register_kl(_p, _q)(_kl_infinite)
