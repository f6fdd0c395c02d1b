"""Constructors: tensor, as_tensor, from_numpy, zeros, ones, full, empty, eye, arange,
linspace, *_like, rand, randn, randint, manual_seed.

Dtypes follow NumPy: a Python float (or list of floats) gives float64, ints give int64;
every constructor takes ``dtype=`` and ``requires_grad=`` (float dtypes only).
"""

from __future__ import annotations

import numpy as np

from ._tensor import Tensor, wrap

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "arange", "linspace", "zeros_like", "ones_like", "full_like", "empty_like", "rand",
           "randn", "randint", "rand_like", "randn_like", "manual_seed", "default_generator"]

default_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seed the generator behind rand, randn and randint (NumPy's PCG64)."""
    global default_generator
    default_generator = np.random.default_rng(seed)
    return default_generator


def _make(data, requires_grad):
    t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def tensor(data, dtype=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (array_like or Tensor)."""
    if isinstance(data, Tensor):
        data = data._data
    return _make(np.array(data, dtype=dtype), requires_grad)


def as_tensor(data, dtype=None):
    """Share memory with ``data`` when it already is an ndarray of ``dtype``; a Tensor is
    returned as is (converted if ``dtype`` differs)."""
    if isinstance(data, Tensor):
        if dtype is None or data.dtype == np.dtype(dtype):
            return data
        return data.to(dtype)
    return wrap(np.asarray(data, dtype=dtype))


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to either show in the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy expects an np.ndarray, got {type(ndarray).__name__}")
    return wrap(ndarray)


def zeros(*size, dtype=None, requires_grad=False):
    """A tensor of zeros of shape ``size`` (float64 by default)."""
    return _make(np.zeros(_shape(size), dtype=dtype), requires_grad)


def ones(*size, dtype=None, requires_grad=False):
    """A tensor of ones of shape ``size`` (float64 by default)."""
    return _make(np.ones(_shape(size), dtype=dtype), requires_grad)


def empty(*size, dtype=None, requires_grad=False):
    """An uninitialized tensor of shape ``size``."""
    return _make(np.empty(_shape(size), dtype=dtype), requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype as NumPy infers it)."""
    return _make(np.full(tuple(size), fill_value, dtype=dtype), requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False):
    """The ``n x m`` identity (``m = n`` by default)."""
    return _make(np.eye(n, m, dtype=dtype), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """Values in ``[start, end)`` spaced by ``step`` (``arange(n)`` counts from 0)."""
    if end is None:
        start, end = 0, start
    return _make(np.arange(start, end, step, dtype=dtype), requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    return _make(np.linspace(start, end, steps, dtype=dtype), requires_grad)


def _like(fn):
    def like(input, dtype=None, requires_grad=False):
        data = input._data if isinstance(input, Tensor) else np.asarray(input)
        return _make(fn(data, dtype=dtype), requires_grad)

    like.__name__ = fn.__name__
    like.__doc__ = f"``numpy.{fn.__name__}`` of ``input``'s shape and dtype."
    return like


zeros_like = _like(np.zeros_like)
ones_like = _like(np.ones_like)
empty_like = _like(np.empty_like)


def full_like(input, fill_value, dtype=None, requires_grad=False):
    """A tensor of ``input``'s shape (and dtype) filled with ``fill_value``."""
    data = input._data if isinstance(input, Tensor) else np.asarray(input)
    return _make(np.full_like(data, fill_value, dtype=dtype), requires_grad)


def rand(*size, dtype=None, requires_grad=False):
    """Uniform samples in [0, 1) of shape ``size`` (float64 unless ``dtype``)."""
    data = default_generator.random(_shape(size))
    return _make(data if dtype is None else data.astype(dtype), requires_grad)


def randn(*size, dtype=None, requires_grad=False):
    """Standard normal samples of shape ``size`` (float64 unless ``dtype``)."""
    data = default_generator.standard_normal(_shape(size))
    return _make(data if dtype is None else data.astype(dtype), requires_grad)


def randint(low, high=None, size=(), dtype=None):
    """Random integers in ``[low, high)`` (``[0, low)`` when ``high`` is omitted)."""
    if high is None:
        low, high = 0, low
    return wrap(default_generator.integers(low, high, size=tuple(size), dtype=dtype or np.int64))


def rand_like(input, dtype=None, requires_grad=False):
    """Uniform samples of ``input``'s shape and dtype."""
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, dtype=None, requires_grad=False):
    """Standard normal samples of ``input``'s shape and dtype."""
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)
