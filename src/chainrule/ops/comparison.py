"""Comparisons of whole tensors: isclose, allclose, equal (no gradient), and dist (the
differentiable p-norm of a difference, composed of primitives)."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, wrap
from .reduction import vector_norm

__all__ = ["isclose", "allclose", "equal", "dist"]


def _data(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol |other|`` elementwise (broadcasting); a bool tensor
    without grad."""
    return wrap(np.asarray(np.isclose(_data(input), _data(other), rtol=rtol, atol=atol,
                                      equal_nan=equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when :func:`isclose` holds everywhere (a Python bool, as in PyTorch)."""
    return bool(np.allclose(_data(input), _data(other), rtol=rtol, atol=atol,
                            equal_nan=equal_nan))


def equal(input, other):
    """True when both have the same shape and the same entries (a Python bool)."""
    a, b = _data(input), _data(other)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def dist(input, other, p=2):
    """``vector_norm(input - other, p)`` over all entries (broadcasting), differentiable:
    recorded as ``sub`` and ``linalg_vector_norm``."""
    return vector_norm(input - other, p)
