"""Comparisons of whole tensors: isclose, allclose, equal (no gradient), and dist (the
differentiable p-norm of a difference, composed of primitives)."""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, wrap
from ..backend import backend_of, beside, dtype_kind
from .reduction import vector_norm

__all__ = ["isclose", "allclose", "equal", "dist"]


def _data(x):
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def _off_host(a, b):
    """The backend of whichever of ``a``, ``b`` lives off NumPy (a GPU's, an Array API
    library's), with both as its arrays; None when both are NumPy's."""
    for x, y in ((a, b), (b, a)):
        if x.__class__ is not np.ndarray:
            return backend_of(x), (beside(a, x) if a is y else a), (beside(b, x) if b is y
                                                                     else b)
    return None


def _isclose_xp(xp, a, b, rtol, atol, equal_nan):
    """NumPy's isclose with the array namespace's functions (on the arrays' device)."""
    if dtype_kind(a.dtype) not in "fc" or dtype_kind(b.dtype) not in "fc":
        a, b = xp.astype(a, xp.float64), xp.astype(b, xp.float64)
    finite = xp.isfinite(a) & xp.isfinite(b)
    close = xp.where(finite, xp.abs(a - b) <= atol + rtol * xp.abs(b), a == b)
    return close | (xp.isnan(a) & xp.isnan(b)) if equal_nan else close


def _host_bool(b, x):
    """A 0-d bool array of backend ``b`` as a Python bool (an explicit host copy)."""
    return bool(np.asarray(b.to_numpy(x)))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input - other| <= atol + rtol |other|`` elementwise (broadcasting); a bool tensor
    without grad."""
    a, b = _data(input), _data(other)
    off = _off_host(a, b)
    if off is not None:  # on the data's device
        be, a, b = off
        return wrap(_isclose_xp(be.xp, a, b, rtol, atol, equal_nan))
    return wrap(np.asarray(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when :func:`isclose` holds everywhere (a Python bool, as in PyTorch)."""
    a, b = _data(input), _data(other)
    off = _off_host(a, b)
    if off is not None:
        be, a, b = off
        return _host_bool(be, be.xp.all(_isclose_xp(be.xp, a, b, rtol, atol, equal_nan)))
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    """True when both have the same shape and the same entries (a Python bool)."""
    a, b = _data(input), _data(other)
    if tuple(a.shape) != tuple(b.shape):
        return False
    off = _off_host(a, b)
    if off is not None:  # (np.array_equal answers False for arrays it cannot convert)
        be, a, b = off
        return _host_bool(be, be.xp.all(a == b))
    return bool(np.array_equal(a, b))


def dist(input, other, p=2):
    """``vector_norm(input - other, p)`` over all entries (broadcasting), differentiable:
    recorded as ``sub`` and ``linalg_vector_norm``."""
    return vector_norm(input - other, p)
