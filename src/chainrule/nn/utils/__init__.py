"""``chainrule.nn.utils``: gradient clipping and parameter vectors, as ``torch.nn.utils``;
``nn.utils.rnn``: padded and packed variable-length sequences.

These work on ``.grad`` and parameter data, outside the graph (under ``no_grad``), as
optimizers do.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._state import no_grad
from ..._tensor import Tensor, wrap
from ...backend import beside, numpy_dtype
from ...ops import cat
from . import (
    parametrizations,  # noqa: F401  (weight_norm, spectral_norm as parametrisations)
    parametrize,  # noqa: F401  (register_parametrization, ...)
    rnn,  # noqa: F401  (nn.utils.rnn, as torch.nn.utils.rnn)
    stateless,  # noqa: F401  (nn.utils.stateless.functional_call)
)
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grads_with_norm_", "get_total_norm",
           "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "stateless",
           "weight_norm", "remove_weight_norm", "parametrize", "parametrizations"]


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of ``tensors`` (a Tensor or an iterable of them; None entries
    skipped) taken together as one vector, as ``torch.nn.utils.get_total_norm``: a 0-d
    tensor of the first tensor's dtype (0.0 for none). ``norm_type`` may be ``inf`` (or
    ``"inf"``). Computed without gradient.

    Raises RuntimeError when the norm is NaN or Inf and ``error_if_nonfinite``."""
    tensors = [t for t in _params(tensors) if t is not None]
    if not tensors:
        return wrap(np.array(0.0))
    norm_type = float(norm_type)
    arrays = [np.asarray(t.detach().numpy(), dtype=float).ravel() for t in tensors]
    if math.isinf(norm_type):
        total = max(float(np.abs(a).max(initial=0.0)) for a in arrays)
    else:
        total = float(np.sum([np.sum(np.abs(a) ** norm_type) for a in arrays])
                      ) ** (1.0 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    # on the first tensor's device, as PyTorch's (the sum itself is taken on the host)
    return wrap(beside(np.array(total, dtype=numpy_dtype(tensors[0].dtype)),
                       tensors[0]._data))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the parameters' gradients in place by ``min(1, max_norm / (total_norm +
    1e-6))``, given their precomputed ``total_norm`` (see :func:`get_total_norm`), as
    ``torch.nn.utils.clip_grads_with_norm_``."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    coef = max_norm / (float(total_norm) + 1e-6)
    if grads and coef < 1.0:
        with no_grad():
            for g in grads:
                g.mul_(coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients in place so that their total ``norm_type``-norm (over all of
    them, as one vector) is at most ``max_norm``; returns that total norm (a 0-d tensor,
    before clipping), as ``torch.nn.utils.clip_grad_norm_``
    (:func:`get_total_norm` then :func:`clip_grads_with_norm_`).

    Raises RuntimeError when the total norm is NaN or Inf and ``error_if_nonfinite``."""
    params = _params(parameters)
    total = get_total_norm([p.grad for p in params], norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                   foreach=None):
    """PyTorch's deprecated name of :func:`clip_grad_norm_` (warns FutureWarning)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


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
