"""``chainrule.masked``: reductions and normalizations over the entries a boolean ``mask``
selects, as ``torch.masked`` on plain tensors. Each is a composition: the masked-out entries
are replaced by the operation's identity (0 for sums, 1 for products, -inf for maxima and
soft maxima) with ``where``, so their gradient is 0 and the rest is the op's own. A slice
with no selected entry gives what PyTorch gives: ``nan`` for means, variances, medians and
softmax, the identity for sums, products, maxima and ``logsumexp``.

>>> import chainrule as cr
>>> x = cr.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
>>> m = cr.tensor([[True, False, True], [False, False, False]])
>>> cr.masked.sum(x, 1, mask=m)
tensor([4., 0.])
"""

from __future__ import annotations

import math

import numpy as np

from . import _creation
from . import ops as _ops
from ._dispatch import name_errors
from ._tensor import Tensor, wrap
from .backend import numpy_dtype

__all__ = ["sum", "mean", "amax", "amin", "prod", "cumsum", "cumprod", "softmax",
           "log_softmax", "softmin", "logsumexp", "logaddexp", "norm", "normalize", "var",
           "std", "median"]


def _t(x):
    return x if isinstance(x, Tensor) else wrap(np.asarray(x))


def _mask(input, mask, name="mask"):
    """The mask as a bool tensor of ``input``'s shape (None: every entry)."""
    if mask is None:
        return None
    m = mask if isinstance(mask, Tensor) else wrap(np.asarray(mask))
    if numpy_dtype(m.dtype) != np.bool_:
        raise TypeError(f"{name} must be a bool tensor, got dtype {m.dtype}")
    return _ops.broadcast_to(m, tuple(input.shape)) if tuple(m.shape) != tuple(input.shape) \
        else m


def _fill(x, m, value):
    return x if m is None else _ops.where(m, x, value)


def _cast(x, dtype):
    return x if dtype is None else _ops.to_dtype(x, dtype)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The sum of the selected entries (0 where none is)."""
    x = _cast(_t(input), dtype)
    return _ops.sum(_fill(x, _mask(x, mask), 0.0), dim, keepdim)


def _count(x, m, dim, keepdim):
    """How many entries each slice selects (a tensor shaped like the reduction)."""
    if m is None:
        m = _creation.ones_like(x)
    return _ops.sum(_ops.to_dtype(m, x.dtype), dim, keepdim)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The mean of the selected entries (``nan`` where none is)."""
    x = _cast(_t(input), dtype)
    m = _mask(x, mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _ops.sum(_fill(x, m, 0.0), dim, keepdim) / _count(x, m, dim, keepdim)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The largest selected entry (``-inf`` where none is)."""
    x = _cast(_t(input), dtype)
    return _ops.amax(_fill(x, _mask(x, mask), -math.inf), () if dim is None else dim, keepdim)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The smallest selected entry (``inf`` where none is)."""
    x = _cast(_t(input), dtype)
    return _ops.amin(_fill(x, _mask(x, mask), math.inf), () if dim is None else dim, keepdim)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The product of the selected entries (1 where none is)."""
    x = _cast(_t(input), dtype)
    return _ops.prod(_fill(x, _mask(x, mask), 1.0), dim, keepdim)


def cumsum(input, dim, *, dtype=None, mask=None):
    """The running sum along ``dim`` of the selected entries (a masked-out entry adds 0)."""
    x = _cast(_t(input), dtype)
    return _ops.cumsum(_fill(x, _mask(x, mask), 0.0), dim)


def cumprod(input, dim, *, dtype=None, mask=None):
    """The running product along ``dim`` of the selected entries (a masked-out entry
    multiplies by 1)."""
    x = _cast(_t(input), dtype)
    return _ops.cumprod(_fill(x, _mask(x, mask), 1.0), dim)


def softmax(input, dim, *, dtype=None, mask=None):
    """softmax over the selected entries along ``dim``: 0 at the masked-out ones, ``nan`` in
    a slice with none selected."""
    x = _cast(_t(input), dtype)
    with np.errstate(invalid="ignore"):
        return _ops.softmax(_fill(x, _mask(x, mask), -math.inf), dim)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """log_softmax over the selected entries: ``-inf`` at the masked-out ones."""
    x = _cast(_t(input), dtype)
    with np.errstate(invalid="ignore"):
        return _ops.log_softmax(_fill(x, _mask(x, mask), -math.inf), dim)


def softmin(input, dim, *, dtype=None, mask=None):
    """softmax of ``-input`` over the selected entries."""
    x = _cast(_t(input), dtype)
    with np.errstate(invalid="ignore"):
        return _ops.softmax(_fill(-x, _mask(x, mask), -math.inf), dim)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """log(sum(exp)) of the selected entries (``-inf`` where none is)."""
    x = _cast(_t(input), dtype)
    dims = tuple(range(x.ndim)) if dim is None else dim
    return _ops.logsumexp(_fill(x, _mask(x, mask), -math.inf), dims, keepdim)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """``log(exp(input) + exp(other))``, each term taken only where its mask selects it."""
    x, y = _cast(_t(input), dtype), _cast(_t(other), dtype)
    return _ops.logaddexp(_fill(x, _mask(x, input_mask, "input_mask"), -math.inf),
                          _fill(y, _mask(y, other_mask, "other_mask"), -math.inf))


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """The ``ord``-norm of the selected entries (masked-out entries count as 0)."""
    x = _cast(_t(input), dtype)
    return _ops.vector_norm(_fill(x, _mask(x, mask), 0.0), ord, dim, keepdim)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """``input / max(norm, eps)`` with the masked norm along ``dim``; 0 at masked-out
    entries."""
    x = _fill(_cast(_t(input), dtype), _mask(_t(input), mask), 0.0)
    n = _ops.vector_norm(x, ord, dim, True)
    return x / _ops.clamp(n, min=eps)


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """The variance of the selected entries, with ``correction`` (or ``unbiased``; default
    1) subtracted from their count; ``nan`` where too few are selected."""
    x = _cast(_t(input), dtype)
    m = _mask(x, mask)
    ddof = correction if correction is not None else (1 if unbiased in (None, True) else 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = _count(x, m, dim, True)
        mu = _ops.sum(_fill(x, m, 0.0), dim, True) / n
        dev = _fill((x - mu) * (x - mu), m, 0.0)
        dof = n - ddof
        out = _ops.where(dof > 0, _ops.sum(dev, dim, True) / dof, math.nan)  # too few: nan
    if not keepdim:
        dims = range(x.ndim) if dim is None else ((dim,) if isinstance(dim, int) else dim)
        out = _ops.squeeze(out, tuple(d % x.ndim for d in dims)) if x.ndim else out
    return out


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """The square root of :func:`var`."""
    with np.errstate(invalid="ignore"):
        return _ops.sqrt(var(input, dim, unbiased, correction=correction, keepdim=keepdim,
                             dtype=dtype, mask=mask))


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """The (lower) median of the selected entries along ``dim`` (values only; ``nan``
    where none is selected)."""
    x = _cast(_t(input), dtype)
    return _ops.nanmedian(_fill(x, _mask(x, mask), math.nan), dim, keepdim).values


for _name in __all__:
    globals()[_name] = name_errors(globals()[_name], f"masked.{_name}")
del _name
