"""``chainrule.nn.utils``: gradient clipping and parameter vectors, as ``torch.nn.utils``;
``nn.utils.rnn``: padded and packed variable-length sequences.

These work on ``.grad`` and parameter data, outside the graph (under ``no_grad``), as
optimizers do.
"""

from __future__ import annotations

import math

import numpy as np

from ..._state import no_grad
from ..._tensor import Tensor, wrap
from ...ops import cat
from . import rnn  # noqa: F401  (nn.utils.rnn, as torch.nn.utils.rnn)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients in place so that their total ``norm_type``-norm (over all of
    them, as one vector) is at most ``max_norm``; returns that total norm (a 0-d tensor,
    before clipping), as ``torch.nn.utils.clip_grad_norm_``.

    Raises RuntimeError when the total norm is NaN or Inf and ``error_if_nonfinite``."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return wrap(np.array(0.0))
    arrays = [np.asarray(g.numpy(), dtype=float).ravel() for g in grads]
    if math.isinf(float(norm_type)):
        total = max(float(np.abs(a).max(initial=0.0)) for a in arrays)
    else:
        total = float(np.sum([np.sum(np.abs(a) ** norm_type) for a in arrays])
                      ) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} for "
                           "gradients from `parameters` is non-finite, so it cannot be "
                           "clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    coef = max_norm / (total + 1e-6)
    if coef < 1.0:
        with no_grad():
            for g in grads:
                g.mul_(coef)
    return wrap(np.array(total, dtype=np.dtype(grads[0].dtype)))


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient entry into ``[-clip_value, clip_value]`` in place, as
    ``torch.nn.utils.clip_grad_value_``."""
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one 1-D tensor (differentiable)."""

    return cat([p.reshape(-1) for p in _params(parameters)], 0)


def vector_to_parameters(vec, parameters):
    """Copy the consecutive slices of the 1-D ``vec`` into the parameters' data, in
    place, as ``torch.nn.utils.vector_to_parameters``."""
    params = _params(parameters)
    n = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.shape[0] != n:
        raise RuntimeError(f"vector_to_parameters: expected a 1-D vector of {n} entries, got "
                           f"shape {tuple(vec.shape)}")
    start = 0
    with no_grad():
        for p in params:
            k = p.numel()
            p.copy_(vec[start:start + k].reshape(p.shape))
            start += k
