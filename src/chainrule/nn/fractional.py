"""Fractional max pooling (Graham, 2014): ``F.fractional_max_pool2d/3d`` (and their
``_with_indices`` forms), ``nn.FractionalMaxPool2d/3d``, as PyTorch's.

Each (sample, channel) plane is pooled over windows of ``kernel_size`` whose starts follow
a pseudo-random sequence drawn from one number u in [0, 1) per plane and spatial dim
(``_random_samples``, shape (N, C, 2) or (N, C, 3); drawn with ``chainrule.rand`` when not
given). As PyTorch's kernel, for an input size ``n``, output size ``m`` and pool size ``k``,
with ``alpha = (n - k) / (m - 1)`` computed in the input's dtype, output ``i < m - 1``
starts at ``int((i + u) * alpha) - int(u * alpha)`` and the last one at ``n - k``; u's
entries are (W, H) in 2-d and (T, H, W) in 3-d. Each output is the window's first maximum
in row-major order (its last NaN when it holds one), and the returned index is that
entry's flat position within its plane.

The selection is computed from the values with NumPy; the output is then one gather of the
input at the selected positions, so gradients (of any order, and forward mode) flow to the
selected maxima only.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .._tensor import wrap
from ..backend import numpy_dtype
from . import functional as F
from ._module import Module
from .functional import _t

__all__ = ["FractionalMaxPool2d", "FractionalMaxPool3d"]
FUNCTIONAL = ["fractional_max_pool2d", "fractional_max_pool3d",
              "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


def _tuple(value, n):
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,) * n


def _intervals(samples, in_size, out_size, pool, dtype):
    """The window starts, (..., out_size) int64, from samples (...) as PyTorch's
    ``generate_intervals`` (arithmetic in ``dtype``, truncation to int)."""
    starts = np.empty(samples.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = dtype.type(in_size - pool) / dtype.type(out_size - 1)
        u = samples[..., None]
        i = np.arange(out_size - 1).astype(dtype)
        starts[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    if out_size > 0:
        starts[..., -1] = in_size - pool
    return starts


def _check_samples(samples, x, n, batch):
    if samples.dtype != x.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[-n - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got "
                           f"{samples.shape[2]}.")


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, n):
    """``(values, indices)`` of fractional max pooling over the last ``n`` dims."""
    name = f"fractional_max_pool{n}d"
    x = _t(input)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        if n == 2 and len(output_ratio) > 2:  # (a number: TypeError, as PyTorch's len())
            raise ValueError(f"{name} requires output_ratio to either be a single Int or "
                             "tuple of Ints.")
        ratio = _tuple(output_ratio, n)
        output_size = [int(x.size(i - n) * ratio[i]) for i in range(n)]
    if samples is None:
        batch = 1 if x.ndim == n + 1 else x.size(0)
        samples = _creation.rand(batch, x.size(-n - 1), n, dtype=x.dtype, device=x.device)
    # PyTorch's kernel checks, in its order and words
    where = name + ("()" if n == 2 else "_out()")
    kernel, out = _tuple(kernel_size, n), _tuple(output_size, n)
    which = "Ints" if n == 2 else "three Ints"
    if len(kernel) != n:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or tuple of "
                           f"{which}")
    if len(out) != n:
        raise RuntimeError(f"{name}: output_size must either be a single Int or tuple of "
                           f"{which}")
    if x.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{where}: Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(x.shape)}")
    for i in range(1, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(x.shape)} with dimension {i} being "
                               "empty.")
    sizes = tuple(x.shape[-n:])
    # (PyTorch's 3-d kernel checks time, width, height, and wants a strictly smaller size)
    words = ("height", "width") if n == 2 else ("time", "height", "width")
    for d in (0, 1) if n == 2 else (0, 2, 1):
        last = out[d] + kernel[d] - 1
        if last > sizes[d] or (n == 3 and last == sizes[d]):
            raise RuntimeError(f"{where}: pool {words[d]} {kernel[d]} too large relative to "
                               f"input {words[d]} {sizes[d]}")
    samples = _t(samples)
    unbatched = x.ndim == n + 1
    batch = 1 if unbatched else x.shape[0]
    _check_samples(samples, x, n, batch)
    dtype = np.dtype(numpy_dtype(x.dtype))
    u = np.asarray(samples.detach()._host())[:batch].astype(dtype, copy=False)
    order = (1, 0) if n == 2 else (0, 1, 2)  # which sample each spatial dim uses
    xb = x.unsqueeze(0) if unbatched else x
    channels = xb.shape[1]
    # the flat position of every window entry: (N, C, *out, *kernel)
    strides = [math.prod(sizes[d + 1:]) for d in range(n)]
    flat = np.zeros((batch, channels) + out + kernel, dtype=np.int64)
    for d in range(n):
        starts = _intervals(u[..., order[d]], sizes[d], out[d], kernel[d], dtype)
        shape = [batch, channels] + [1] * (2 * n)
        shape[2 + d] = out[d]
        flat = flat + starts.reshape(shape) * strides[d]
        shape = [1, 1] + [1] * (2 * n)
        shape[2 + n + d] = kernel[d]
        flat = flat + np.arange(kernel[d]).reshape(shape) * strides[d]
    windows = flat.reshape(batch, channels, math.prod(out), math.prod(kernel))
    plane = np.asarray(xb.detach()._host()).reshape(batch, channels, math.prod(sizes))
    if windows.shape[-1] == 0:  # (empty windows: -inf at the window's start, as PyTorch)
        first = sum(_intervals(u[..., order[d]], sizes[d], out[d], kernel[d], dtype)
                    .reshape([batch, channels] + [out[e] if e == d else 1 for e in range(n)])
                    * strides[d] for d in range(n))
        indices = np.broadcast_to(first, (batch, channels) + out)
        values = wrap(np.full(indices.shape, -np.inf, dtype=dtype))
    else:
        vals = np.take_along_axis(plane, windows.reshape(batch, channels, windows[0, 0].size),
                                  axis=2).reshape(windows.shape) if windows.size else \
            np.zeros(windows.shape, dtype=dtype)
        nan = np.isnan(vals) if dtype.kind in "fc" else np.zeros(vals.shape, dtype=bool)
        last_nan = vals.shape[-1] - 1 - np.argmax(nan[..., ::-1], axis=-1)
        pick = np.where(nan.any(-1), last_nan, np.argmax(vals, axis=-1))
        indices = np.take_along_axis(windows, pick[..., None], axis=-1)[..., 0]
        index = _creation.tensor(indices, device=x.device)
        values = xb.reshape(batch, channels, math.prod(sizes)).gather(2, index)
    shape = (batch, channels) + out
    values = values.reshape(shape)
    indices = _creation.tensor(np.ascontiguousarray(indices).reshape(shape), device=x.device)
    if unbatched:
        return values[0], indices[0]
    return values, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """``(output, indices)`` of 2-d fractional max pooling of ``input`` (N, C, H, W) or
    (C, H, W): windows of ``kernel_size`` at pseudo-random starts (see
    :mod:`chainrule.nn.fractional`), ``output_size`` (oH, oW) or
    ``output_ratio`` (the output size is ``int(H * ratio)``, ``int(W * ratio)``).
    ``indices``: each maximum's flat position ``h * W + w`` in its plane (int64).
    ``_random_samples``: (N, C, 2) numbers in [0, 1) of the input's dtype (W's, then H's).

    Raises ValueError when neither size nor ratio is given, or a ratio of more than two
    entries; RuntimeError (PyTorch's messages) for an input that is not 3-D or 4-D or is
    empty past the batch dim, a pool too large for the output size, or samples of another
    dtype or shape."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio,
                                _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """``(output, indices)`` of 3-d fractional max pooling of ``input`` (N, C, T, H, W) or
    (C, T, H, W), as :func:`fractional_max_pool2d_with_indices` over three dims;
    ``_random_samples`` (N, C, 3) (T's, H's, W's); indices ``t * H * W + h * W + w``."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio,
                                _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2-d fractional max pooling: the output of :func:`fractional_max_pool2d_with_indices`,
    or ``(output, indices)`` with ``return_indices``."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3-d fractional max pooling: the output of :func:`fractional_max_pool3d_with_indices`,
    or ``(output, indices)`` with ``return_indices``."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


class _FractionalMaxPoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices=False, _random_samples=None):
        super().__init__()
        n, name = self._n, type(self).__name__
        if n == 3 and ((isinstance(kernel_size, int) and kernel_size <= 0) or (
                isinstance(kernel_size, (tuple, list)) and not all(k > 0 for k in kernel_size))):
            raise ValueError(f"kernel_size must be greater than 0, but got {kernel_size}")
        self.kernel_size = _tuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             "pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        fn = fractional_max_pool2d if self._n == 2 else fractional_max_pool3d
        return fn(input, self.kernel_size, self.output_size, self.output_ratio,
                  self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling, :func:`~chainrule.nn.functional.fractional_max_pool2d`:
    ``(kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None)``; exactly one of ``output_size`` and ``output_ratio`` (each
    entry in (0, 1)). ``_random_samples`` (N, C, 2) is a buffer (None: fresh samples each
    call).

    Raises ValueError for neither or both of size and ratio, or a ratio outside (0, 1).
    """
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling, :func:`~chainrule.nn.functional.fractional_max_pool3d`,
    arguments as :class:`FractionalMaxPool2d`'s (``_random_samples`` (N, C, 3)).

    Raises ValueError for a kernel size that is not positive, neither or both of size and
    ratio, or a ratio outside (0, 1).
    """
    _n = 3


for _name in FUNCTIONAL:  # an error preparing the arguments names the function
    globals()[_name] = F._tensor_args("input", fname=_name)(globals()[_name])
del _name
