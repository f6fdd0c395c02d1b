"""Adafactor and Muon, as ``torch.optim.Adafactor`` (torch/optim/_adafactor.py) and
``torch.optim.Muon`` (torch/optim/_muon.py) of PyTorch 2.13: their single-tensor
implementations, the same formulas in the same order of floating-point operations."""

from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor, wrap
from ..backend import backend_of
from .optimizer import Optimizer, _call, _lerp, _num, _scalar, _tick, _zeros

__all__ = ["Adafactor", "Muon"]


def _is_complex(p):
    return np.dtype(p.dtype).kind == "c"


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018, "Adafactor: Adaptive Learning Rates with
    Sublinear Memory Cost", arXiv:1804.04235), as ``torch.optim.Adafactor``.

    At step ``t`` of a parameter ``p`` (gradient ``g``, negated when ``maximize``):

    - ``beta2c = t ** beta2_decay`` (the weight of the new second moment),
      ``rho = min(lr, 1 / sqrt(t))``, ``alpha = max(eps2, ||p|| / sqrt(numel)) * rho``
      (``||p||`` taken before the weight decay);
    - ``p *= 1 - lr * weight_decay``;
    - ``p`` with 2 or more dims (factored over its last two dims, shape ``(..., m, n)``):
      ``R = lerp(R, mean(g^2, -1), beta2c)`` (shape ``(..., m, 1)``),
      ``C = lerp(C, mean(g^2, -2), beta2c)`` (shape ``(..., 1, n)``),
      ``V = R @ C / max(mean(R, -2), eps1)``; a vector or scalar:
      ``V = lerp(V, g^2, beta2c)``;
    - ``u = g / sqrt(max(V, eps1^2))``,
      ``p -= alpha / max(1, ||u|| / (sqrt(numel) d)) * u``.

    ``eps1`` None is the machine epsilon of the first parameter's dtype in the group (as
    PyTorch's loop, which keeps it for the following parameters).

    State per parameter: ``step`` (0-d), and ``row_var`` (R) and ``col_var`` (C) for 2 or
    more dims, else ``variance`` (V).

    Parameters
    ----------
    params : iterable of Tensor or of dict
    lr : float or Tensor
        Default ``1e-2``.
    beta2_decay : float
        Default ``-0.8`` (must be <= 0).
    eps : tuple (float or None, float)
        ``(eps1, eps2)``; default ``(None, 1e-3)``.
    d : float
        The update clipping threshold (>= 1); default 1.
    weight_decay : float
        Decoupled weight decay; default 0.
    foreach : bool or None
        Recorded (chooses an implementation in PyTorch, not a result).
    maximize : bool

    Raises
    ------
    ValueError
        ``lr < 0``, ``beta2_decay > 0``, a negative eps, ``d < 1`` or ``weight_decay < 0``
        (PyTorch's messages); a Tensor ``lr`` with more than one element.
    RuntimeError
        At ``step``, for a complex parameter.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first when
        given, and its loss returned. Raises RuntimeError for a complex parameter."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, beta2_decay, d, wd = (_num(group["lr"]), group["beta2_decay"], group["d"],
                                      group["weight_decay"])
            eps1, eps2 = group["eps"]
            for p, g in self._grads(group):
                if _is_complex(p):
                    raise RuntimeError("Adafactor does not support complex parameters")
                xp = backend_of(p._data).xp
                st = self.state.setdefault(p, {})
                if not st:
                    st["step"] = _scalar(0.0)
                    if g.ndim > 1:
                        st["row_var"] = _zeros_shaped(xp, g.shape[:-1] + (1,), g.dtype)
                        st["col_var"] = _zeros_shaped(xp, g.shape[:-2] + (1,) + g.shape[-1:],
                                                      g.dtype)
                    else:
                        st["variance"] = _zeros(p)
                if eps1 is None:
                    eps1 = float(np.finfo(p.dtype).eps)
                t = _tick(st["step"])
                one_minus_beta2_t = t ** beta2_decay
                rho_t = min(lr, 1 / (t ** 0.5))
                numel = max(int(np.prod(p.shape)), 0)
                pnorm = float(xp.sqrt(xp.sum(p._data * p._data)))
                alpha = max(eps2, pnorm / (numel ** 0.5)) * rho_t
                if wd != 0:
                    self._set(p, p._data * (1 - lr * wd))
                if g.ndim > 1:
                    r_t, c_t = st["row_var"], st["col_var"]
                    # PyTorch's norm(g, dim).square_() / size: (g * g).mean(dim) via the norm
                    row_norm = xp.sqrt(xp.sum(g * g, axis=-1, keepdims=True))
                    row_mean = row_norm * row_norm / g.shape[-1]
                    r_t._data = _lerp(r_t._data, row_mean, one_minus_beta2_t)
                    col_norm = xp.sqrt(xp.sum(g * g, axis=-2, keepdims=True))
                    col_mean = col_norm * col_norm / g.shape[-2]
                    c_t._data = _lerp(c_t._data, col_mean, one_minus_beta2_t)
                    var = r_t._data @ c_t._data
                    var = var / xp.maximum(xp.mean(r_t._data, axis=-2, keepdims=True), eps1)
                else:
                    v_t = st["variance"]
                    v_t._data = _lerp(v_t._data, g * g, one_minus_beta2_t)
                    var = v_t._data
                update = 1 / xp.sqrt(xp.maximum(var, eps1 * eps1)) * g
                unorm = float(xp.sqrt(xp.sum(update * update)))
                denom = max(1.0, unorm / ((update.size ** 0.5) * d))
                self._update(p, (alpha / denom) * update)
        self._persist()
        return loss


def _zeros_shaped(xp, shape, dtype):
    """A state buffer of zeros of ``shape`` (the gradient's dtype and backend)."""
    return wrap(xp.zeros(shape, dtype=dtype))


# --- Muon --------------------------------------------------------------------------------

_NS = (3.4445, -4.7750, 2.0315)


def _bf16(a):
    """``a`` (float32) rounded to the nearest bfloat16 (ties to even), kept as float32:
    PyTorch's rounding of a float32 result into a bfloat16 tensor."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out)


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """The Newton-Schulz orthogonalisation of the 2-D NumPy array ``grad`` in emulated
    bfloat16 (each op's float32 result rounded to bfloat16, as PyTorch's bfloat16 CPU
    kernels): ``X = G / max(||G||, eps)`` (transposed when tall), then ``ns_steps`` times
    ``A = X X^T``, ``B = b A + c A A``, ``X = a X + B X``."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = (np.float32(x) for x in ns_coefficients)
    x = _bf16(grad.astype(np.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16(np.sqrt(np.sum(x * x, dtype=np.float32)))
    x = _bf16(x / _bf16(np.maximum(norm, np.float32(eps))))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        upd = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + upd @ x)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon, momentum orthogonalised by Newton-Schulz (K. Jordan, 2024, "Muon: An optimizer
    for hidden layers in neural networks"; J. Liu et al., 2025, "Muon is Scalable for LLM
    Training", arXiv:2502.16982), as ``torch.optim.Muon``, for 2-D parameters.

    With ``B = lerp(B, g, 1 - momentum)`` (the momentum buffer) and
    ``U = lerp(g, B, momentum)`` (nesterov) or ``U = B``:
    ``O = NS_k(U)`` (``k = ns_steps`` quintic Newton-Schulz iterations with coefficients
    ``(a, b, c)``, computed in bfloat16 as PyTorch does), ``p *= 1 - lr wd``,
    ``p -= lr' O`` with ``lr' = lr sqrt(max(1, A / B))`` (``adjust_lr_fn`` None or
    ``"original"``) or ``0.2 lr sqrt(max(A, B))`` (``"match_rms_adamw"``), ``(A, B)`` the
    parameter's shape.

    PyTorch's bfloat16 matrix products are emulated on NumPy (float32 accumulation, one
    rounding per op); the summation order can differ from PyTorch's, so an update can
    differ by a bfloat16 rounding (relative ``2^-8``) in a few entries. Parameters are
    moved to the host for the iteration and back.

    State per parameter: ``momentum_buffer``.

    Raises
    ------
    ValueError
        ``lr``, ``momentum`` or ``weight_decay`` negative, an unknown ``adjust_lr_fn``, a
        parameter that is not 2-D (PyTorch's messages); a Tensor ``lr`` with more than one
        element; at ``step``, ``ns_steps >= 100`` or ``ns_coefficients`` not 3 values.
    RuntimeError
        At ``step``, for a complex parameter.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS, eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        """One update (``closure`` as :meth:`Adafactor.step`)."""
        loss = _call(closure)
        for group in self.param_groups:
            lr, wd, mom = _num(group["lr"]), group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if _is_complex(p):
                    raise RuntimeError("Muon does not support complex parameters")
                g = p.grad._data
                b = backend_of(p._data)
                st = self.state.setdefault(p, {})
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = _zeros(p)
                buf = st["momentum_buffer"]
                buf._data = _lerp(buf._data, g, 1 - mom)
                upd = _lerp(g, buf._data, mom) if group["nesterov"] else buf._data
                host = upd if upd.__class__ is np.ndarray else np.asarray(b.to_numpy(upd))
                o = _zeropower_via_newtonschulz(host, group["ns_coefficients"],
                                                group["ns_steps"], group["eps"])
                o = o.astype(p._data.dtype) if upd.__class__ is np.ndarray else \
                    b.xp.asarray(o.astype(np.dtype(p.dtype)))
                adjusted = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                self._set(p, p._data * (1 - lr * wd))
                self._update(p, adjusted * o)
        self._persist()
        return loss
