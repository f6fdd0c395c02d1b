"""``chainrule.nn.utils``: gradient clipping and parameter vectors, as ``torch.nn.utils``;
weight and spectral norm hooks, ``skip_init``, conv/linear + batchnorm fusion;
``nn.utils.rnn``: padded and packed variable-length sequences; ``nn.utils.prune``:
pruning by masks.

These work on ``.grad`` and parameter data, outside the graph (under ``no_grad``), as
optimizers do.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..._state import no_grad
from ..._tensor import Tensor, wrap
from ...backend import backend_of, beside
from ...ops import cat
from . import (
    parametrizations,  # noqa: F401  (weight_norm, spectral_norm as parametrisations)
    parametrize,  # noqa: F401  (register_parametrization, ...)
    prune,  # noqa: F401  (nn.utils.prune: l1_unstructured, global_unstructured, ...)
    rnn,  # noqa: F401  (nn.utils.rnn, as torch.nn.utils.rnn)
    stateless,  # noqa: F401  (nn.utils.stateless.functional_call)
)
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grads_with_norm_", "get_total_norm",
           "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "stateless",
           "weight_norm", "remove_weight_norm", "parametrize", "parametrizations", "prune",
           "spectral_norm", "remove_spectral_norm", "skip_init", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _host(t):
    """A Tensor's data as a NumPy array (copied from a GPU or computed from Dask)."""
    d = t._data
    return d if d.__class__ is np.ndarray else np.asarray(backend_of(d).to_numpy(d))


def _vector_norm(a, norm_type):
    """``torch.linalg.vector_norm(a, norm_type)`` of a NumPy array, in its (real) dtype:
    ``inf``/``-inf`` the largest/smallest ``|a_i|``, ``0`` the count of nonzero entries,
    else ``sum |a_i|^p ^ (1/p)`` (a zero entry makes a negative ``p``'s norm 0).

    Raises RuntimeError for the ``inf`` or a negative order's norm of an empty tensor
    (PyTorch's message)."""
    a = np.abs(np.ravel(a))
    if a.size == 0 and norm_type < 0 or math.isinf(norm_type):
        if a.size == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {norm_type:g} norm on "
                               "an empty tensor because the operation does not have an "
                               "identity")
        return a.max() if norm_type > 0 else a.min()
    if norm_type == 0:
        return np.asarray(np.count_nonzero(a), dtype=a.dtype)[()]
    with np.errstate(divide="ignore", over="ignore"):
        if norm_type == 1:
            return a.sum()
        if norm_type == 2:
            return np.sqrt(np.sum(a * a))
        return np.sum(a ** a.dtype.type(norm_type)) ** a.dtype.type(1.0 / norm_type)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of ``tensors`` (a Tensor or an iterable of them; None entries
    skipped), as ``torch.nn.utils.get_total_norm``: the norm of the vector of each tensor's
    own norm (for ``norm_type > 0`` and ``inf`` that is the norm of all the entries taken
    as one vector; for ``0``, ``-inf`` and negative orders it is PyTorch's norm of norms).
    A real or complex tensor's norm is taken in its real dtype, the total in the promoted
    dtype of those (0-d; ``tensor(0.)`` for no tensors). ``norm_type`` is a float, ``inf``
    or ``"inf"``. Computed without gradient, on the first tensor's device.

    Raises RuntimeError when the norm is NaN or Inf and ``error_if_nonfinite``, or for
    the ``inf`` or a negative order's norm of an empty tensor."""
    tensors = [t for t in _params(tensors) if t is not None]
    if not tensors:
        return wrap(np.array(0.0))
    norm_type = float(norm_type)
    norms = [_vector_norm(_host(t), norm_type) for t in tensors]
    dtype = np.result_type(*[n.dtype for n in norms])
    total = _vector_norm(np.array(norms, dtype=dtype), norm_type)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    # on the first tensor's device, as PyTorch's (the norms themselves are taken on the host)
    return wrap(beside(np.array(total, dtype=dtype), tensors[0]._data))


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Multiply the parameters' gradients in place by ``min(max_norm / (total_norm +
    1e-6), 1)``, computed in ``total_norm``'s dtype, given their precomputed ``total_norm``
    (see :func:`get_total_norm`), as ``torch.nn.utils.clip_grads_with_norm_``: every
    gradient is multiplied (by 1 when the norm is small, by NaN when it is NaN)."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    tn = np.asarray(_host(total_norm) if isinstance(total_norm, Tensor) else total_norm)
    if tn.dtype.kind != "f":
        tn = tn.astype(np.float64)
    dt = tn.dtype.type
    coef = dt(max_norm) / (tn + dt(1e-6))
    coef = float(np.minimum(coef, dt(1.0)))  # torch.clamp(max=1): a NaN stays NaN
    with no_grad():
        for g in grads:
            g.mul_(coef)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients in place so that their total ``norm_type``-norm (over all of
    them, as one vector) is at most ``max_norm``; returns that total norm (a 0-d tensor,
    before clipping), as ``torch.nn.utils.clip_grad_norm_``
    (:func:`get_total_norm` then :func:`clip_grads_with_norm_`: the total is the norm of
    the per-gradient norms, and a NaN total makes every gradient NaN).

    Raises RuntimeError when the total norm is NaN or Inf and ``error_if_nonfinite``, or
    for the ``inf`` or a negative order's norm of an empty gradient."""
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
