"""Softmax, log-softmax and cross-entropy over a class dim.

``cross_entropy`` is one primitive rather than ``-log_softmax(x)[target]``: its VJP is the
famous ``softmax(x) - onehot(target)``, which costs one softmax and no scatter.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _ns
from .._dispatch import ShapeError, apply
from .._table import defop, documented
from .._tensor import Tensor, wrap
from ..backend import backend_of, dtype_kind, numpy_dtype, on_device_of, row_major, xp_kernel
from ._dims import wrap_dim

__all__ = ["softmax", "log_softmax", "cross_entropy"]


@xp_kernel
def _softmax(xp, x, dim):
    if x.size == 0:  # max has no identity; an empty softmax is empty
        return x * 1
    e = xp.exp(x - xp.max(x, axis=dim, keepdims=True))
    return row_major(e / xp.sum(e, axis=dim, keepdims=True))


@xp_kernel
def _log_softmax(xp, x, dim):
    if x.size == 0:
        return x * 1
    z = x - xp.max(x, axis=dim, keepdims=True)
    return row_major(z - xp.log(xp.sum(xp.exp(z), axis=dim, keepdims=True)))


def softmax_array(x, dim):
    """softmax of a NumPy array along ``dim``."""
    return _softmax(np, x, dim)


def log_softmax_array(x, dim):
    """log_softmax of a NumPy array along ``dim``."""
    return _log_softmax(np, x, dim)


_ns.register("softmax", softmax_array, lambda x, dim: softmax(x, dim),
             lambda xp, dev, lazy: lambda x, dim: _softmax(xp, x, dim))
_ns.register("log_softmax", log_softmax_array, lambda x, dim: log_softmax(x, dim),
             lambda xp, dev, lazy: lambda x, dim: _log_softmax(xp, x, dim))

SOFTMAX = defop(
    "softmax", _softmax, ("self",), attrs=("dim",),
    vjp={"self": lambda F, g, out, dim: out * (g - F.sum(g * out, (dim,), True))},
    jvp={"self": lambda F, t, out, dim: out * (t - F.sum(t * out, (dim,), True))},
    math={"self": "grad_x = y * (grad - sum(grad * y, dim))", "out": "dy = y * (dx - sum(y dx))"},
    source="Jacobian of softmax is diag(y) - y y^T (Bishop, Pattern Recognition and Machine "
           "Learning (2006), eq. 4.106)",
)
LOG_SOFTMAX = defop(
    "log_softmax", _log_softmax, ("self",), attrs=("dim",),
    vjp={"self": lambda F, g, out, dim: g - F.exp(out) * F.sum(g, (dim,), True)},
    jvp={"self": lambda F, t, out, dim: t - F.sum(F.exp(out) * t, (dim,), True)},
    math={"self": "grad_x = grad - softmax(x) * sum(grad, dim)",
          "out": "dy = dx - sum(softmax(x) dx)"},
    source="Jacobian of log-softmax is I - 1 softmax(x)^T",
)


def _class_dim(ndim):
    return 0 if ndim == 1 else 1


@xp_kernel
def _ce_forward(xp, x, target, reduction, cdim):
    logp = _log_softmax(xp, x, cdim)
    if dtype_kind(target.dtype) not in "iu":
        nll = -xp.sum(target * logp, axis=cdim)
    elif "take_along_axis" in vars(xp):
        index = xp.expand_dims(target, axis=cdim)
        nll = -xp.squeeze(xp.take_along_axis(logp, index, axis=cdim), axis=cdim)
    else:  # a library without gathers: the picked entries by a one-hot mask
        onehot = _ns.make_onehot(xp, on_device_of(target))
        nll = -xp.sum(logp * onehot(target, logp.shape[cdim], cdim, logp.dtype), axis=cdim)
    if reduction == "mean":
        return xp.mean(nll)
    return xp.sum(nll) if reduction == "sum" else nll


def _ce_dlogits(F, self, target, cdim):
    """d loss_n / d logits for each sample (before reduction)."""
    p = F.softmax(self, cdim)
    if dtype_kind(target.dtype) in "iu":
        return p - F.onehot(target, self.shape[cdim], cdim, p.dtype)
    return p * F.sum(target, (cdim,), True) - target


def _ce_scale(F, g, self, reduction, cdim):
    if reduction == "none":
        return F.unsqueeze(g, cdim)
    if reduction == "mean":
        return g / (math.prod(self.shape) // self.shape[cdim])
    return g


CROSS_ENTROPY = defop(
    "cross_entropy", _ce_forward, ("self", "target"), attrs=("reduction", "cdim"),
    vjp={"self": lambda F, g, self, target, reduction, cdim:
         _ce_scale(F, g, self, reduction, cdim) * _ce_dlogits(F, self, target, cdim),
         "target": lambda F, g, self, reduction, cdim:
         -_ce_scale(F, g, self, reduction, cdim) * F.log_softmax(self, cdim)},
    jvp={"self": lambda F, t, self, target, reduction, cdim: _ce_reduce(
        F, F.sum(t * _ce_dlogits(F, self, target, cdim), (cdim,), False), reduction),
        "target": lambda F, t, self, reduction, cdim: _ce_reduce(
        F, -F.sum(t * F.log_softmax(self, cdim), (cdim,), False), reduction)},
    math={"self": "grad_x = grad * (softmax(x) - onehot(target)) / N  (reduction='mean'; "
                  "probability targets: softmax(x) * sum(t) - t)",
          "target": "grad_t = -grad * log_softmax(x) / N  (probability targets only; "
                    "class indices have no gradient)",
          "out": "dy = mean_n sum_c [(softmax(x) - onehot(target))_nc dx_nc "
                 "- log_softmax(x)_nc dt_nc]"},
    source="Bishop, Pattern Recognition and Machine Learning (2006), eq. 4.109 (softmax with "
           "cross-entropy); loss = -sum_c t_c log_softmax(x)_c is linear in t",
    promote=False,  # a 0-d class index keeps its integer dtype beside 1-D logits
)


def _ce_reduce(F, per_sample, reduction):
    if reduction == "mean":
        return F.mean(per_sample, None, False)
    return F.sum(per_sample, None, False) if reduction == "sum" else per_sample


def _dim(dim, x, op):
    return wrap_dim(dim, x.ndim if isinstance(x, Tensor) else np.ndim(x), op)


@documented(SOFTMAX)
def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x), dim)``, computed stably (a 0-d input is one value: 1);
    ``dtype``: the input is first cast to it (as PyTorch's)."""
    if dtype is not None:
        input = _cast_first(input, dtype)
    return _on_1d(SOFTMAX, input, _dim(dim, input, "softmax"))


def _cast_first(input, dtype):
    from .elementwise import to_dtype

    return to_dtype(input, dtype)


def _on_1d(op, input, dim):
    """``op`` along ``dim``; a 0-d input goes through as one entry of a 1-D tensor."""
    if (input.ndim if isinstance(input, Tensor) else np.ndim(input)) == 0:
        from .shape import reshape

        return reshape(apply(op, (reshape(input, (1,)),), (0,)), ())
    return apply(op, (input,), (dim,))


@documented(LOG_SOFTMAX)
def log_softmax(input, dim, dtype=None):
    """``x - logsumexp(x, dim)``, computed stably (a 0-d input is one value: 0);
    ``dtype``: the input is first cast to it (as PyTorch's)."""
    if dtype is not None:
        input = _cast_first(input, dtype)
    return _on_1d(LOG_SOFTMAX, input, _dim(dim, input, "log_softmax"))


@documented(CROSS_ENTROPY)
def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy of logits ``input`` against ``target``.

    Parameters
    ----------
    input : Tensor, shape (N, C) or (C,) (or (N, C, d1, ...)), float
        Unnormalized logits; classes along dim 1 (dim 0 for a 1-D input).
    target : Tensor or array
        Class indices (integer, shape of ``input`` without the class dim, values in
        ``[0, C)``) or class probabilities (float, same shape as ``input``; cast to
        ``input``'s dtype). Probability targets that require grad receive
        ``-grad * log_softmax(input)``, as in PyTorch.
    reduction : {"mean", "sum", "none"}

    Raises
    ------
    ValueError
        Wrong target shape or an unknown reduction. IndexError: a class index out of range.
    """
    x = input._data if isinstance(input, Tensor) else np.asarray(input)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    cdim = _class_dim(x.ndim)
    if reduction not in ("mean", "sum", "none"):
        raise ShapeError(f"cross_entropy: unknown reduction {reduction!r}")
    if dtype_kind(t.dtype) in "iu":
        expected = x.shape[:cdim] + x.shape[cdim + 1:]
        if t.shape != expected:
            raise ShapeError(f"cross_entropy: class-index target of shape {t.shape} does not "
                             f"match input of shape {x.shape} (expected {expected})")
        b = backend_of(t)
        if t.size and not b.lazy:  # a lazy target is not computed to be checked
            lo, hi = int(b.xp.min(t)), int(b.xp.max(t))
            if lo < 0 or hi >= x.shape[cdim]:
                raise IndexError(f"cross_entropy: target values must be in "
                                 f"[0, {x.shape[cdim]}), got range [{lo}, {hi}]")
        # the class indices as a tensor: a rule run differentiably (reverse over forward,
        # nested forward levels) takes tensors, and its onehot reads ``index._data``
        return apply(CROSS_ENTROPY, (input, target if isinstance(target, Tensor) else wrap(t)),
                     (reduction, cdim))
    if t.shape != x.shape:
        raise ShapeError(f"cross_entropy: probability target of shape {t.shape} does not match "
                         f"input of shape {x.shape}")
    if numpy_dtype(t.dtype) != numpy_dtype(x.dtype) and dtype_kind(x.dtype) == "f":
        target = target.to(x.dtype) if isinstance(target, Tensor) else t.astype(
            numpy_dtype(x.dtype))
    return apply(CROSS_ENTROPY, (input, target), (reduction, cdim))




# --- binary cross-entropy ---------------------------------------------------------------

_BCE_EPS = float(np.float32(1e-12))  # PyTorch's EPSILON in its backward (a C float)


@xp_kernel
def _bce_forward(xp, x, t):
    # -(t log x + (1 - t) log(1 - x)), each log clamped at -100 (PyTorch's), so p = 0 with
    # t = 1 costs 100, not inf
    log_x = xp.maximum(xp.log(x), -100.0)
    log_1mx = xp.maximum(xp.log1p(-x), -100.0)  # log1p: exact for tiny x in float32
    return -(t * log_x + (1.0 - t) * log_1mx)


def _bce_dx(F, self, target):
    # (x - t) / (x (1 - x)), the denominator kept >= 1e-12: finite at x = 0 or 1 (0 there
    # when t = x, the saturated prediction that is right)
    d = self * (1.0 - self)
    return (self - target) / F.where(d < _BCE_EPS, _BCE_EPS, d)


def _bce_dt(F, self):
    # -logit(x) = log(1 - x) - log(x), unclamped (+-inf at x = 0 or 1), as PyTorch's
    return F.log(1.0 - self) - F.log(self)


BINARY_CROSS_ENTROPY = defop(
    "binary_cross_entropy", _bce_forward, ("self", "target"),
    vjp={"self": lambda F, g, self, target: g * _bce_dx(F, self, target),
         "target": lambda F, g, self: g * _bce_dt(F, self)},
    jvp={"self": lambda F, t, self, target: t * _bce_dx(F, self, target),
         "target": lambda F, t, self: t * _bce_dt(F, self)},
    math={"self": "grad_x = grad * (x - t) / max(x (1 - x), 1e-12)",
          "target": "grad_t = grad * (log(1 - x) - log(x)) = -grad * logit(x)",
          "out": "dy = (x - t) / (x (1 - x)) dx + (log(1 - x) - log(x)) dt"},
    source="d/dx of -(t log x + (1 - t) log(1 - x)); PyTorch's binary_cross_entropy_backward "
           "(the 1e-12 floor) and binary_cross_entropy_target_backward",
)


@documented(BINARY_CROSS_ENTROPY)
def binary_cross_entropy_terms(input, target):
    """``-(t log x + (1 - t) log(1 - x))`` entry by entry (no reduction, no weight), for
    probabilities ``input`` in [0, 1]; ``nn.functional.binary_cross_entropy`` reduces it."""
    return apply(BINARY_CROSS_ENTROPY, (input, target))
