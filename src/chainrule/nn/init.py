"""``chainrule.nn.init``: in-place initialisers, as ``torch.nn.init``.

Each fills ``tensor``'s data in place (without gradient, bumping its version counter) from
chainrule's generator (``chainrule.manual_seed`` makes it reproducible) and returns the
tensor. Fan-in and fan-out follow PyTorch: for a weight of shape (out, in, \\*k),
``fan_in = in * prod(k)`` and ``fan_out = out * prod(k)``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _creation
from ..backend import beside, numpy_dtype

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "trunc_normal_", "dirac_", "sparse_"]


def _rng():
    return _creation.default_generator


def _fill(tensor, values):
    data = tensor._data  # values drawn on the host, then copied onto the tensor's device
    data[...] = beside(np.asarray(values, dtype=numpy_dtype(data.dtype)), data)
    tensor._vc[0] += 1
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, ``sqrt(2 / (1 + slope^2))`` for leaky_relu (slope ``param``, default
    0.01), 3/4 for selu.

    Raises ValueError for an unknown nonlinearity or a non-number ``param``."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dims = tensor.ndim
    if dims < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (shape {tuple(tensor.shape)})")
    receptive = math.prod(tensor.shape[2:]) if dims > 2 else 1
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with U(a, b)."""
    return _fill(tensor, (generator or _rng()).uniform(a, b, tuple(tensor.shape)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with N(mean, std^2)."""
    return _fill(tensor, (generator or _rng()).normal(mean, std, tuple(tensor.shape)))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (redrawing the samples outside)."""
    g = generator or _rng()
    out = g.normal(mean, std, tuple(tensor.shape))
    bad = (out < a) | (out > b)
    while bad.any():
        out[bad] = g.normal(mean, std, int(bad.sum()))
        bad = (out < a) | (out > b)
    return _fill(tensor, out)


def constant_(tensor, val):
    """Fill with ``val``."""
    return _fill(tensor, val)


def ones_(tensor):
    """Fill with 1."""
    return _fill(tensor, 1.0)


def zeros_(tensor):
    """Fill with 0."""
    return _fill(tensor, 0.0)


def eye_(tensor):
    """Fill a 2-D tensor with the identity. Raises ValueError otherwise."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D convolution weight (out, in, k...) with the Dirac delta: for
    each of the ``groups`` blocks of ``out / groups`` output channels, channel ``d`` of the
    block takes input channel ``d`` at the kernel's centre (for ``d < min(out / groups,
    in)``); zeros elsewhere, so the convolution copies its input channels.

    Raises ValueError for another number of dims, or ``out`` not divisible by ``groups``."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(k // 2 for k in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            values[(g * per_group + d, d) + centre] = 1
    return _fill(tensor, values)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor from N(0, std^2), then zero ``ceil(sparsity * rows)`` randomly
    chosen entries of each column (Martens, 2010). Raises ValueError for a tensor that is
    not 2-D."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    rng = generator or _rng()
    values = rng.standard_normal((rows, cols)) * std
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return _fill(tensor, values)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a), ``a = gain sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2), ``std = gain sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b), ``b = gain sqrt(3 / fan)`` (gain of ``nonlinearity`` with
    slope ``a``). Raises ValueError for a bad ``mode`` or a tensor below 2-D."""
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2), ``std = gain / sqrt(fan)``."""
    if 0 in tuple(tensor.shape):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (the tensor flattened to (rows, -1)) from the QR of a
    Gaussian matrix with the signs of R's diagonal folded in, times ``gain``.

    Raises ValueError for a tensor below 2-D."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = (generator or _rng()).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


def _make_deprecate(meth):
    """PyTorch's deprecated spelling without the underscore (``nn.init.normal``), with its
    FutureWarning."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated: :func:`{new_name}` (with a FutureWarning)."
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
