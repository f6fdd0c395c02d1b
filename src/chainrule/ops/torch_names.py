"""PyTorch's top-level names that ported code calls and the table has no primitive for:
``gcd``/``lcm`` (integer tensors, no gradient), ``unravel_index``, ``binomial``, the window
functions (``hann_window`` and kin), the deprecated ``range`` (end inclusive), and the
JIT-era norms ``frobenius_norm``/``nuclear_norm``. Each matches ``torch``'s signature,
dtypes, warnings and error texts.
"""

from __future__ import annotations

import builtins
import itertools
import math
import operator
import warnings

import numpy as np

from .._dispatch import IN_PLACE, name_errors
from .._tensor import Tensor, wrap
from ..backend import beside, dtype_kind, numpy_dtype
from .reduction import vector_norm
from .torch_more import _TORCH_DTYPE

# and range, which chainrule/__init__.py imports by name; nuclear_norm (a matrix norm) is in
# chainrule.linalg.torch_functions
__all__ = ["gcd", "lcm", "unravel_index", "binomial", "hann_window", "hamming_window",
           "blackman_window", "bartlett_window", "kaiser_window", "frobenius_norm"]

# PyTorch's short names of dtypes, as its "not implemented for 'Float'" errors spell them
_SCALAR_NAME = {**_TORCH_DTYPE, "float32": "Float", "float64": "Double", "float16": "Half",
                "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _integer_pair(name, input, other):
    for arg, what in ((input, "input"), (other, "other")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"{name}: argument '{what}' (position "
                            f"{1 if what == 'input' else 2}) must be Tensor, not "
                            f"{type(arg).__name__}")
        if dtype_kind(arg.dtype) not in "iu":
            scalar = _SCALAR_NAME.get(np.dtype(numpy_dtype(arg.dtype)).name, str(arg.dtype))
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{scalar}\'')
    a, b = input._data, other._data
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        raise RuntimeError(f"{name}: only for CPU (NumPy) tensors")
    return a, b


def gcd(input, other):
    """The elementwise greatest common divisor of two integer tensors (non-negative;
    ``gcd(0, 0) = 0``), in their promoted dtype; no gradient. NotImplementedError for
    float or bool tensors, as PyTorch's."""
    a, b = _integer_pair("gcd", input, other)
    return wrap(np.asarray(np.gcd(a, b)))


def lcm(input, other):
    """The elementwise least common multiple of two integer tensors (non-negative; 0 where
    either is 0), in their promoted dtype; no gradient."""
    a, b = _integer_pair("lcm", input, other)
    return wrap(np.asarray(np.lcm(a, b)))


@name_errors
def unravel_index(indices, shape):
    """The coordinates in a tensor of ``shape`` of the flat ``indices`` (an integer
    tensor): a tuple of int64 tensors of ``indices``' shape, one per dim. As PyTorch's, an
    index outside ``[0, prod(shape))`` wraps around (floor division and remainder)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index: indices must be a Tensor, not {type(indices).__name__}")
    if dtype_kind(indices.dtype) not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got "
                        f"torch.{np.dtype(numpy_dtype(indices.dtype)).name}")
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (int(shape),)
    elif isinstance(shape, (list, tuple)):
        for dim in shape:
            if not isinstance(dim, (int, np.integer)):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{type(dim)}")
        shape = tuple(int(d) for d in shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    if any(d < 0 for d in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    coefs = list(reversed(list(itertools.accumulate(reversed(shape[1:] + (1,)),
                                                    func=operator.mul))))
    flat = np.asarray(indices._data).astype(np.int64)[..., None]
    with np.errstate(divide="ignore"):
        coords = np.floor_divide(flat, np.array(coefs, dtype=np.int64)) % \
            np.array(shape, dtype=np.int64)
    return tuple(wrap(beside(np.array(coords[..., i]), indices._data))
                 for i in builtins.range(len(shape)))


@name_errors
def binomial(count, prob, generator=None):
    """Binomial samples: successes in ``count`` trials of probability ``prob`` (float
    tensors, broadcast), in ``count``'s dtype, from chainrule's generator
    (``manual_seed``) or ``generator`` (a NumPy Generator). No gradient (PyTorch's
    backward raises). ValueError for an integer ``count``, as PyTorch's."""
    from .. import _creation

    for arg, what in ((count, "count"), (prob, "prob")):
        if not isinstance(arg, Tensor):
            raise TypeError(f"binomial: argument '{what}' must be Tensor, not "
                            f"{type(arg).__name__}")
    if dtype_kind(count.dtype) != "f":
        name = _SCALAR_NAME.get(np.dtype(numpy_dtype(count.dtype)).name, str(count.dtype))
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: {name}")
    n = np.asarray(count.detach().cpu().numpy())
    p = np.asarray(prob.detach().cpu().numpy())
    rng = _creation.default_generator if generator is None else generator
    draw = rng.binomial(n.astype(np.int64), np.clip(p, 0.0, 1.0))
    return wrap(beside(np.asarray(draw).astype(numpy_dtype(count.dtype)), count._data))


# --- windows -----------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, values):
    """The window of ``window_length`` points made by ``values(n)`` (the symmetric window of
    ``n`` points, float64), PyTorch's way: a periodic window is the symmetric one of
    ``window_length + 1`` points without its last; lengths 0 and 1 give ``[]`` and ``[1]``."""
    from .. import _creation

    if not isinstance(window_length, (int, np.integer)) or isinstance(window_length, bool):
        raise TypeError(f"{name}: argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = np.dtype(_creation.get_default_dtype() if dtype is None else numpy_dtype(dtype))
    if dt.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt.name}")
    if window_length <= 1:
        data = np.ones(window_length)
    else:
        data = values(window_length + 1)[:-1] if periodic else values(window_length)
    return _creation._make(np.ascontiguousarray(data, dtype=dt), requires_grad, device)


def _cosine_sum(*coefficients):
    """The generalised cosine window ``sum_k (-1)^k a_k cos(2 pi k i / (n - 1))``."""
    def values(n):
        phase = 2.0 * np.pi * np.arange(n) / (n - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi i / (N - 1))`` (periodic: of ``N + 1`` points
    without the last), in the default float dtype unless ``dtype``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.5, 0.5))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """The Hamming window ``alpha - beta cos(2 pi i / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(alpha, beta))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi i / (N - 1)) + 0.08 cos(4 pi i / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """The triangular Bartlett window ``1 - |2 i / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: 1.0 - np.abs(2.0 * np.arange(n) / (n - 1) - 1.0))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2 i / (N - 1) - 1)^2)) / I0(beta)``."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n: np.kaiser(n, beta))


# --- deprecated names ----------------------------------------------------------------------

RANGE_DEPRECATED = (
    "torch.range is deprecated and will be removed in a future release because its behavior "
    "is inconsistent with Python's range builtin. Instead, use torch.arange, which produces "
    "values in [start, end).")


@name_errors
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,  # noqa: A001
          requires_grad=False):
    """``start, start + step, ...`` up to ``end`` *inclusive* (PyTorch's deprecated
    ``torch.range``, with its warning), in the default float dtype unless ``dtype``; use
    :func:`arange`."""
    from .. import _creation

    warnings.warn(RANGE_DEPRECATED, UserWarning, stacklevel=3)
    if end is None:
        raise TypeError("range() missing 1 required positional argument: 'end'")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    dt = np.dtype(_creation.get_default_dtype() if dtype is None else numpy_dtype(dtype))
    data = (start + np.arange(n, dtype=np.float64) * step).astype(dt)
    result = _creation._make(data, requires_grad, device)
    if out is not None:
        return IN_PLACE.write_out(out, result, "range")
    return result


FROBENIUS_DEPRECATED = (
    "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be "
    "removed in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, "
    "keepdim)` instead")
@name_errors
def frobenius_norm(input, dim, keepdim=False):
    """``vector_norm(input, 2, dim, keepdim)`` (all dims for ``dim=()``), with PyTorch's
    deprecation warning."""
    warnings.warn(FROBENIUS_DEPRECATED, UserWarning, stacklevel=3)
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    return vector_norm(input, 2, dim if dim else None, keepdim)
