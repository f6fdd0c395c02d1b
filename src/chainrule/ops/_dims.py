"""Dimension arguments, wrapped the way PyTorch wraps them (one place for every op).

A negative ``dim`` counts from the end; a 0-d tensor accepts ``dim`` 0 and -1 as if it had
one dim. Anything else raises PyTorch's IndexError, prefixed with the op's name.
"""

from __future__ import annotations

import numpy as np

from ..backend import dtype_kind


class DimensionError(IndexError, ValueError):
    """A dim argument a tensor does not have: an IndexError as in PyTorch, and a ValueError
    (a bad argument value)."""


def wrap_dim(dim, ndim, op, *, extra=0):
    """``dim`` as a non-negative int for a tensor with ``ndim`` dims (``extra=1`` for ops
    that insert a dim, such as ``unsqueeze`` and ``stack``).

    Raises IndexError "Dimension out of range (expected to be in range of [-n, n-1], but
    got d)" and TypeError for a non-integer dim.
    """
    if dim.__class__ is int:  # the common case, kept short: views and reductions call this
        n = ndim + extra or 1
        if -n <= dim < n:
            return dim % n
    if hasattr(dim, "_requires_grad") and dtype_kind(dim.dtype) in "iu" and dim.numel() == 1:
        dim = int(dim.item())  # a one-element integer tensor, as PyTorch's parser reads it
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__} {dim!r}")
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        raise DimensionError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def wrap_dims(dims, ndim, op):
    """A tuple of wrapped dims, each at most once (RuntimeError "dim d appears multiple
    times in the list of dims" as in PyTorch)."""
    out = []
    for d in dims:
        w = wrap_dim(d, ndim, op)
        if w in out:
            raise RuntimeError(f"{op}: dim {w} appears multiple times in the list of dims")
        out.append(w)
    return tuple(out)


def number_arg(value, op, name):
    """A number argument (``beta``, ``p``, ``dims``) given as a one-element tensor, as
    PyTorch's argument parser takes it: its value. Such an argument is not differentiated,
    so a tensor that requires grad raises RuntimeError rather than lose its gradient
    silently (PyTorch drops it)."""
    if not hasattr(value, "_requires_grad"):  # not a Tensor: as it is
        return value
    if value.numel() != 1:
        raise TypeError(f"{op}: {name} must be a number, got a tensor of shape "
                        f"{tuple(value.shape)}")
    if value.requires_grad:
        raise RuntimeError(f"{op}: {name} is a number that is not differentiated, and the "
                           f"tensor given for it requires grad (its gradient would be "
                           f"lost); pass {name}.detach() or a float")
    return value.item()
