"""Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD, as ``torch.optim`` (its single-tensor
implementations: the same formulas in the same order of floating-point operations).

Each takes PyTorch's arguments with its defaults and validation messages. ``foreach`` and
``capturable`` are accepted and recorded in the parameter groups (they choose an
implementation in PyTorch, not a result); ``differentiable=True`` is not supported.
"""

from __future__ import annotations

import numpy as np

from .._tensor import wrap
from ..backend import backend_of
from .optimizer import Optimizer, _call, _check, _lerp, _num, _scalar, _tick, _zeros

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"]


def _validate(lr, eps=None, weight_decay=None, betas=None):
    """PyTorch's checks and messages (``ValueError``)."""
    _check(None, lr, "learning rate")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if betas is not None:
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
    if weight_decay is not None and not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _impl(defaults, foreach, capturable, differentiable, **more):
    """``defaults`` with the implementation flags PyTorch records in each parameter group
    (``foreach``, ``capturable`` unless None, ``differentiable``, and ``more``, e.g.
    ``fused``). Raises NotImplementedError for ``differentiable=True``, RuntimeError for
    ``fused=True`` with ``foreach=True`` (PyTorch's message)."""
    if differentiable:
        raise NotImplementedError("chainrule.optim: differentiable=True is not supported (the "
                                  "step is not recorded for autograd)")
    if more.get("fused") and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    defaults["foreach"] = foreach
    if capturable is not None:
        defaults["capturable"] = capturable
    defaults["differentiable"] = differentiable
    defaults.update(more)
    return defaults


class Adadelta(Optimizer):
    """Adadelta (Zeiler, 2012, "ADADELTA: An Adaptive Learning Rate Method",
    arXiv:1212.5701), as ``torch.optim.Adadelta``. With ``g = grad + wd p``:
    ``v = rho v + (1 - rho) g^2``, ``delta = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho u + (1 - rho) delta^2``, ``p -= lr delta``.

    State per parameter: ``step``, ``square_avg`` (v), ``acc_delta`` (u).

    Raises ValueError for a negative lr, eps or weight decay, or rho outside [0, 1]."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check(None, lr, "learning rate")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _validate(lr, eps, weight_decay)
        super().__init__(params, _impl(dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                            maximize=maximize), foreach, capturable,
                                       differentiable))

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first when
        given, and its loss returned."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = _num(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["square_avg"] = _zeros(p)
                    st["acc_delta"] = _zeros(p)
                _tick(st["step"])
                if wd != 0:
                    g = g + wd * p._data
                v_t, u_t = st["square_avg"], st["acc_delta"]
                v = v_t._data * rho + (1 - rho) * g * g
                v_t._data = v
                std = xp.sqrt(v + eps)
                delta = xp.sqrt(u_t._data + eps) / std * g
                u_t._data = u_t._data * rho + (1 - rho) * delta * delta
                self._update(p, lr * delta)
        self._persist()
        return loss


class Adamax(Optimizer):
    """Adamax, Adam with the infinity norm (Kingma and Ba, 2015, "Adam: A Method for
    Stochastic Optimization", section 7.1), as ``torch.optim.Adamax``. With
    ``g = grad + wd p``: ``m = b1 m + (1 - b1) g``, ``u = max(b2 u, |g| + eps)``,
    ``p -= lr / (1 - b1^t) * m / u``; ``t`` counts the parameter's steps.

    State per parameter: ``step``, ``exp_avg`` (m), ``exp_inf`` (u).

    Raises ValueError for a negative lr, eps or weight decay, or betas outside [0, 1)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _validate(lr, eps, weight_decay, betas)
        super().__init__(params, _impl(dict(lr=lr, betas=betas, eps=eps,
                                            weight_decay=weight_decay, maximize=maximize),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adadelta.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = (_num(group["lr"]), _num(group["betas"]), group["eps"],
                                     group["weight_decay"])
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["exp_avg"] = _zeros(p)
                    st["exp_inf"] = _zeros(p)
                t = _tick(st["step"])
                if wd != 0:
                    g = g + wd * p._data
                m_t, u_t = st["exp_avg"], st["exp_inf"]
                m = _lerp(m_t._data, g, 1 - b1)
                m_t._data = m
                u = xp.maximum(u_t._data * b2, xp.abs(g) + eps)
                u_t._data = u
                clr = lr / (1 - b1 ** t)
                self._update(p, clr * m / u)
        self._persist()
        return loss


class NAdam(Optimizer):
    """NAdam, Adam with Nesterov momentum (Dozat, 2016, "Incorporating Nesterov Momentum
    into Adam"), with the momentum schedule of ``torch.optim.NAdam``. With
    ``g = grad + wd p`` (``decoupled_weight_decay``: ``p *= 1 - lr wd`` instead, as NAdamW):
    ``mu_t = b1 (1 - 0.96^(t psi) / 2)`` (``psi = momentum_decay``),
    ``mu_product *= mu_t``, ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``denom = sqrt(v / (1 - b2^t)) + eps``, and
    ``p -= lr (1 - mu_t) / (1 - mu_product) g / denom
    + lr mu_{t+1} / (1 - mu_product mu_{t+1}) m / denom``.

    State per parameter: ``step``, ``mu_product``, ``exp_avg`` (m), ``exp_avg_sq`` (v).

    Raises ValueError for a negative lr, eps, weight decay or momentum_decay, or betas
    outside [0, 1)."""

    _other_scalars = ("mu_product",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _validate(lr, eps, weight_decay, betas)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, _impl(dict(lr=lr, betas=betas, eps=eps,
                                            weight_decay=weight_decay,
                                            momentum_decay=momentum_decay,
                                            decoupled_weight_decay=decoupled_weight_decay,
                                            maximize=maximize),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adadelta.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = (_num(group["lr"]), _num(group["betas"]), group["eps"],
                                     group["weight_decay"])
            psi = group["momentum_decay"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["mu_product"] = _scalar(1.0)
                    st["exp_avg"] = _zeros(p)
                    st["exp_avg_sq"] = _zeros(p)
                t = _tick(st["step"])
                bias_correction2 = 1 - b2 ** t
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        self._set(p, p._data * (1 - lr * wd))
                    else:
                        g = g + wd * p._data
                mu = b1 * (1.0 - 0.5 * (0.96 ** (t * psi)))
                mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((t + 1) * psi)))
                mp = st["mu_product"]
                mp._data = np.asarray(mp._data * mu, dtype=mp._data.dtype)
                mu_product = float(mp._data)
                m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
                m = _lerp(m_t._data, g, 1 - b1)
                v = v_t._data * b2 + (1 - b2) * g * g
                m_t._data, v_t._data = m, v
                denom = xp.sqrt(v / bias_correction2) + eps
                mu_product_next = mu_product * mu_next
                c_grad = -lr * (1.0 - mu) / (1.0 - mu_product)
                c_avg = (-lr * mu_next) / (1.0 - mu_product_next)
                self._set(p, p._data + c_grad * g / denom + c_avg * m / denom)
        self._persist()
        return loss


class RAdam(Optimizer):
    """RAdam, rectified Adam (Liu et al., 2020, "On the Variance of the Adaptive Learning
    Rate and Beyond", ICLR), as ``torch.optim.RAdam``. With ``g = grad + wd p``
    (``decoupled_weight_decay``: ``p *= 1 - lr wd`` instead): ``m = b1 m + (1 - b1) g``,
    ``v = b2 v + (1 - b2) g^2``, ``rho_inf = 2 / (1 - b2) - 1``,
    ``rho_t = rho_inf - 2 t b2^t / (1 - b2^t)``; when ``rho_t > 5``,
    ``r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))`` and
    ``p -= lr m / (1 - b1^t) * sqrt(1 - b2^t) / (sqrt(v) + eps) * r``, else
    ``p -= lr m / (1 - b1^t)``.

    State per parameter: ``step``, ``exp_avg`` (m), ``exp_avg_sq`` (v).

    Raises ValueError for a negative lr, eps or weight decay, or betas outside [0, 1)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _validate(lr, eps, weight_decay, betas)
        super().__init__(params, _impl(dict(lr=lr, betas=betas, eps=eps,
                                            weight_decay=weight_decay, maximize=maximize,
                                            decoupled_weight_decay=decoupled_weight_decay),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adadelta.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = (_num(group["lr"]), _num(group["betas"]), group["eps"],
                                     group["weight_decay"])
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["exp_avg"] = _zeros(p)
                    st["exp_avg_sq"] = _zeros(p)
                t = _tick(st["step"])
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        self._set(p, p._data * (1 - lr * wd))
                    else:
                        g = g + wd * p._data
                m_t, v_t = st["exp_avg"], st["exp_avg_sq"]
                m = _lerp(m_t._data, g, 1 - b1)
                v = v_t._data * b2 + (1 - b2) * g * g
                m_t._data, v_t._data = m, v
                bias_correction1 = 1 - b1 ** t
                bias_correction2 = 1 - b2 ** t
                corrected = m / bias_correction1
                rho_inf = 2 / (1 - b2) - 1
                rho_t = rho_inf - 2 * t * (b2 ** t) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = (bias_correction2 ** 0.5) / (xp.sqrt(v) + eps)
                    self._update(p, corrected * lr * adaptive * rect)
                else:
                    self._update(p, corrected * lr)
        self._persist()
        return loss


class Rprop(Optimizer):
    """Rprop, resilient backpropagation (Riedmiller and Braun, 1993, "A Direct Adaptive
    Method for Faster Backpropagation Learning: The RPROP Algorithm"), as
    ``torch.optim.Rprop``: each entry's step size (starting at ``lr``) is multiplied by
    ``etaplus`` when ``g * g_prev > 0``, by ``etaminus`` when ``< 0`` (and that entry's
    gradient is then taken as 0, also for the next comparison), by 1 when ``= 0``, and
    clipped to ``step_sizes = (min, max)``; ``p -= sign(g) * step_size``.

    State per parameter: ``step``, ``prev`` (the gradient kept for the next step),
    ``step_size``.

    Raises ValueError for a negative lr or unless ``0 < etaminus < 1 < etaplus``."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check(None, lr, "learning rate")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, _impl(dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                            maximize=maximize),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adadelta.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            for p, g in self._grads(group):
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["prev"] = _zeros(p)
                    st["step_size"] = wrap(xp.full_like(p._data, _num(group["lr"])))
                _tick(st["step"])
                s = xp.sign(g * st["prev"]._data)
                # torch: sign[sign > 0] = etaplus; [sign < 0] = etaminus; [sign == 0] = 1
                # (in the gradient's dtype; a NaN stays NaN)
                dt = s.dtype
                s = xp.where(s > 0, xp.asarray(etaplus, dtype=dt),
                             xp.where(s < 0, xp.asarray(etaminus, dtype=dt),
                                      xp.where(s == 0, xp.asarray(1, dtype=dt), s)))
                size_t = st["step_size"]
                size = xp.clip(size_t._data * s, lo, hi).astype(dt, copy=False)
                size_t._data = size
                g = xp.where(s == xp.asarray(etaminus, dtype=dt), xp.zeros_like(g), g)
                self._update(p, xp.sign(g) * size)
                st["prev"]._data = g
        self._persist()
        return loss


class ASGD(Optimizer):
    """ASGD, averaged stochastic gradient descent (Polyak and Juditsky, 1992, "Acceleration
    of Stochastic Approximation by Averaging"), as ``torch.optim.ASGD``. With
    ``g = grad + wd p``: ``p = p (1 - lambd eta) - eta g``; the average
    ``ax = ax + mu (p - ax)`` (``ax = p`` while ``mu = 1``); then
    ``eta = lr / (1 + lambd lr t)^alpha`` and ``mu = 1 / max(1, t - t0)``.

    State per parameter: ``step``, ``eta``, ``mu``, ``ax`` (the averaged parameters).

    Raises ValueError for a negative lr or weight decay."""

    _other_scalars = ("eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _validate(lr, None, weight_decay)
        super().__init__(params, _impl(dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                            weight_decay=weight_decay, maximize=maximize),
                                       foreach, capturable, differentiable))

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adadelta.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0, wd = (_num(group[k]) for k in ("lr", "lambd", "alpha", "t0",
                                                                 "weight_decay"))
            for p, g in self._grads(group):
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    st["eta"] = _scalar(_num(lr))
                    st["mu"] = _scalar(1.0)
                    st["ax"] = _zeros(p)
                t = _tick(st["step"])
                if wd != 0:
                    g = g + wd * p._data
                eta = float(st["eta"]._data)
                self._set(p, p._data * (1 - lambd * eta) + (-eta) * g)
                ax_t, mu = st["ax"], float(st["mu"]._data)
                if mu != 1:
                    ax_t._data = ax_t._data + (p._data - ax_t._data) * mu
                else:
                    ax_t._data = p._data.copy()
                st["eta"]._data[...] = lr / ((1 + lambd * lr * t) ** alpha)
                st["mu"]._data[...] = 1 / max(1, t - t0)
        self._persist()
        return loss
