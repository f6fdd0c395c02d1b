"""The KL pairs ``torch.distributions.kl`` registers for ExponentialFamily (the Bregman
divergence), ContinuousBernoulli, Pareto and LowRankMultivariateNormal, with differentiable
chainrule ops. Masked assignments of PyTorch are ``where`` here (broadcastable batch shapes
work). ContinuousBernoulli || Uniform and Uniform || ContinuousBernoulli are infinite only
where the supports really disagree (PyTorch's ``ge``/``le`` tests also make the touching
cases ``Uniform(0, 1)`` infinite, which the closed form is not)."""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .. import linalg as _linalg
from .. import ops as _ops
from ..linalg.torch_functions import diag_embed as _diag_embed
from .continuous import Beta, Exponential, Gamma, Laplace, Normal, Uniform
from .distribution import sum_rightmost
from .exp_family import ExponentialFamily, _grad_ready, _log_normalizer_grads
from .kl import register_kl
from .matrix import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
    _batch_trace_XXT,
)
from .more import Gumbel
from .multivariate import MultivariateNormal, batch_mahalanobis
from .univariate import ContinuousBernoulli, Pareto

__all__: list = []

_INF = math.inf


def _infinite_like(t):
    return _creation.full_like(t, _INF)


def _x_log_x(t):
    return _ops.xlogy(t, t)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence ``F(theta_q) - F(theta_p) - <theta_q - theta_p, grad
    F(theta_p)>`` of the log-normaliser, of shape the broadcast batch shape. Raises
    NotImplementedError for two different families."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams = _grad_ready(p._natural_params)
    q_nparams = q._natural_params
    lg_normal, gradients = _log_normalizer_grads(p, p_nparams)
    result = q._log_normalizer(*q_nparams) - lg_normal
    batch = len(np.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    for pnp, qnp, g in zip(p_nparams, q_nparams, gradients):
        # each term summed over its own non-batch dims (PyTorch sums the rightmost
        # len(event_shape) dims of every term, which for Wishart's scalar df term sums
        # across the batch)
        term = (qnp - pnp) * g
        result = result - sum_rightmost(term, max(term.dim() - batch, 0))
    return result


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + _ops.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - _ops.log1p(-q.probs)
    return t1 + t2 + t3


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * _ops.log(scale_ratio) - _ops.log(alpha_ratio) + alpha_ratio - 1
    return _ops.where(p.scale < q.scale, _INF, result)


def _cross_ws(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    qWt_qDinv = (_ops.transpose(q._unbroadcasted_cov_factor, -1, -2)
                 / _ops.unsqueeze(q._unbroadcasted_cov_diag, -2))
    return _linalg.solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


def _lowrank_terms(q, p_loc):
    logdet = _batch_lowrank_logdet(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                   q._capacitance_tril)
    maha = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                      q.loc - p_loc, q._capacitance_tril)
    return logdet, maha


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Low Rank Multivariate Normals with "
                         "different event shapes cannot be computed")
    A = _cross_ws(p, q)
    q_logdet, term3 = _lowrank_terms(q, p.loc)
    p_logdet, _ = _lowrank_terms(p, p.loc)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = _batch_trace_XXT(p._unbroadcasted_cov_factor
                              * _ops.unsqueeze(_ops.rsqrt(q._unbroadcasted_cov_diag), -1))
    term23 = _batch_trace_XXT(A * _ops.unsqueeze(_ops.sqrt(p._unbroadcasted_cov_diag), -2))
    term24 = _batch_trace_XXT(_ops.matmul(A, p._unbroadcasted_cov_factor))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (q_logdet - p_logdet + term2 + term3 - p.event_shape[0])


def _half_log_det_tril(L):
    return _ops.log(_ops.diagonal(L, 0, -2, -1)).sum(-1)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    A = _cross_ws(p, q)
    q_logdet, term3 = _lowrank_terms(q, p.loc)
    term1 = q_logdet - 2 * _half_log_det_tril(p._unbroadcasted_scale_tril)
    term21 = _batch_trace_XXT(p._unbroadcasted_scale_tril
                              * _ops.unsqueeze(_ops.rsqrt(q._unbroadcasted_cov_diag), -1))
    term22 = _batch_trace_XXT(_ops.matmul(A, p._unbroadcasted_scale_tril))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    p_logdet, _ = _lowrank_terms(p, p.loc)
    term1 = 2 * _half_log_det_tril(q._unbroadcasted_scale_tril) - p_logdet
    term3 = batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    n = p.event_shape[0]
    batch = tuple(np.broadcast_shapes(tuple(q._unbroadcasted_scale_tril.shape[:-2]),
                                      tuple(p._unbroadcasted_cov_factor.shape[:-2])))
    q_tril = _ops.broadcast_to(q._unbroadcasted_scale_tril, batch + (n, n))
    p_w = _ops.broadcast_to(p._unbroadcasted_cov_factor,
                            batch + (n, p.cov_factor.shape[-1]))
    p_d = _ops.broadcast_to(_diag_embed(_ops.sqrt(p._unbroadcasted_cov_diag)),
                            batch + (n, n))
    term21 = _batch_trace_XXT(_linalg.solve_triangular(q_tril, p_w, upper=False))
    term22 = _batch_trace_XXT(_linalg.solve_triangular(q_tril, p_d, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - n)


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() - p.mean * q.logits - _ops.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - _ops.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale) ** 2) + _ops.log(q.scale)
    t3 = (p.variance + p.mean ** 2 - 2.0 * q.loc * p.mean) / (2.0 * q.scale ** 2)
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    result = -p.entropy() + _ops.log(q.high - q.low)
    return _ops.where((q.low > 0.0) | (q.high < 1.0), _INF, result)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    result = (-p.entropy() - p.mean * q.logits - _ops.log1p(-q.probs)
              - q._cont_bern_log_norm())
    return _ops.where((p.high > 1.0) | (p.low < 0.0), _INF, result)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    bad = p.alpha <= 1
    alpha = _ops.where(bad, _creation.full_like(p.alpha, 2.0), p.alpha)
    scale_rate_prod = p.scale * q.rate
    t1 = _ops.log(alpha / scale_rate_prod)
    t2 = 1 / alpha
    t3 = alpha * scale_rate_prod / (alpha - 1)
    return _ops.where(bad, _INF, t1 - t2 + t3 - 1)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    bad = p.alpha <= 1
    alpha = _ops.where(bad, _creation.full_like(p.alpha, 2.0), p.alpha)
    common_term = _ops.log(p.scale) + 1 / alpha
    t1 = _ops.log(alpha) - common_term
    t2 = _ops.lgamma(q.concentration) - q.concentration * _ops.log(q.rate)
    t3 = (1 - q.concentration) * common_term
    t4 = q.rate * alpha * p.scale / (alpha - 1)
    return _ops.where(bad, _INF, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    bad = p.alpha <= 2
    alpha = _ops.where(bad, _creation.full_like(p.alpha, 3.0), p.alpha)
    var_normal = 2 * q.scale ** 2
    common_term = p.scale / (alpha - 1)
    t1 = _ops.log(math.sqrt(2 * math.pi) * q.scale * alpha / p.scale)
    t2 = 1 / alpha
    t3 = alpha * common_term ** 2 / (alpha - 2)
    t4 = (alpha * common_term - q.loc) ** 2
    return _ops.where(bad, _INF, t1 - t2 + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    support_uniform = p.high - p.low
    t1 = _ops.log(q.alpha * q.scale ** q.alpha * support_uniform)
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - support_uniform) / support_uniform
    result = t2 * (q.alpha + 1) - t1
    return _ops.where(p.low < q.scale, _INF, result)


def _kl_infinite_p(attr):
    def fn(p, q):
        """Infinite: ``p`` has mass where ``q`` has none (PyTorch's ``_kl_*_infinity``)."""
        return _infinite_like(getattr(p, attr))
    return fn


for _p, _q, _attr in ((Beta, Pareto, "concentration1"), (ContinuousBernoulli, Pareto, "probs"),
                      (Exponential, ContinuousBernoulli, "rate"), (Exponential, Pareto, "rate"),
                      (Gamma, ContinuousBernoulli, "concentration"),
                      (Gamma, Pareto, "concentration"), (Gumbel, ContinuousBernoulli, "loc"),
                      (Gumbel, Pareto, "loc"), (Laplace, ContinuousBernoulli, "loc"),
                      (Laplace, Pareto, "loc"), (Normal, ContinuousBernoulli, "loc"),
                      (Normal, Pareto, "loc"), (Pareto, Beta, "scale"),
                      (Pareto, ContinuousBernoulli, "scale"), (Pareto, Uniform, "scale")):
    register_kl(_p, _q)(_kl_infinite_p(_attr))
