"""PyTorch's functions whose results are indices, counts or truth values: nonzero,
argwhere, unique, unique_consecutive, bincount, histc, searchsorted, bucketize, isin,
tril_indices, triu_indices, logical_and/or/xor, signbit, heaviside, scalar_tensor.

None of them has a gradient. Those whose result is a float computed from an input that
requires grad (``unique``'s values, ``bincount`` with weights, ``heaviside``) give a
tensor whose backward raises "the derivative for ... is not implemented", as PyTorch's
does, so a gradient is never silently zero.
"""

from __future__ import annotations

import collections

import numpy as np

from .._creation import get_default_dtype
from .._dispatch import edge, name_errors
from .._node import DelayedError
from .._tensor import Tensor, _fill, wrap
from ..backend import backend_of

__all__ = ["nonzero", "argwhere", "unique", "unique_consecutive", "bincount", "histc",
           "searchsorted", "bucketize", "isin", "tril_indices", "triu_indices", "logical_and",
           "logical_or", "logical_xor", "signbit", "heaviside", "scalar_tensor"]

UniqueResult = collections.namedtuple("unique", ["values", "inverse_indices", "counts"])


def _host(x, op):
    """``x``'s data as a NumPy array (NumPy tensors, numbers and lists only: these results
    have data-dependent shapes, which a lazy backend cannot give without computing)."""
    a = x._data if isinstance(x, Tensor) else x
    if isinstance(a, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return np.asarray(a)
    raise NotImplementedError(f"{op}: runs on NumPy data only, got a {backend_of(a).name} "
                              "array")


def _no_derivative(data, op, *inputs):
    """``data`` as a tensor; when an input requires grad, one whose backward raises."""
    grad_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not grad_inputs:
        return wrap(data)
    node = DelayedError(f"the derivative for '{op}' is not implemented.",
                        tuple(edge(x) for x in grad_inputs))
    return _fill(object.__new__(Tensor), data, node, 0)


@name_errors
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero entries: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-D tensor per dim (there, a 0-d input counts as 1-D)."""
    a = _host(input, "nonzero")
    idx = np.nonzero(np.atleast_1d(a))
    if as_tuple:
        return tuple(wrap(i.astype(np.int64)) for i in idx)
    if a.ndim == 0:  # (1, 0) or (0, 0): one or no entry, no coordinates
        return wrap(np.zeros((int(a != 0), 0), dtype=np.int64))
    return wrap(np.stack(idx, axis=-1).astype(np.int64))


@name_errors
def argwhere(input):
    """``nonzero(input)``: an (n, ndim) int64 tensor of the indices of non-zero entries."""
    a = _host(input, "argwhere")
    return wrap(np.argwhere(a).astype(np.int64))


@name_errors
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), and optionally the index of each entry's value and
    each value's count; along ``dim`` the distinct slices. No gradient (backward raises)."""
    a = _host(input, "unique")
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    inverse = inverse.reshape(a.shape if dim is None else (a.shape[dim],))
    out = [_no_derivative(values, "unique", input)]
    if return_inverse:
        out.append(wrap(inverse.astype(np.int64)))
    if return_counts:
        out.append(wrap(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@name_errors
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (of slices along ``dim``); optionally the
    run index of each entry and each run's length. No gradient (backward raises)."""
    a = _host(input, "unique_consecutive")
    axis = 0 if dim is None else dim % a.ndim
    flat = a.reshape(-1) if dim is None else np.moveaxis(a, axis, 0)
    n = flat.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        change = np.any((flat[1:] != flat[:-1]).reshape(n - 1, -1), axis=1)
        starts = np.concatenate([[0], np.nonzero(change)[0] + 1])
    values = flat[starts] if dim is None else np.moveaxis(flat[starts], 0, axis)
    out = [_no_derivative(values, "unique_consecutive", input)]
    if return_inverse:
        inv = np.cumsum(np.isin(np.arange(n), starts)) - 1
        out.append(wrap(inv.reshape(a.shape if dim is None else (n,)).astype(np.int64)))
    if return_counts:
        out.append(wrap(np.diff(np.append(starts, n)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@name_errors
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-D non-negative integer tensor (sums of ``weights`` per
    value when given). No gradient (backward raises when the weights require grad)."""
    a = _host(input, "bincount")
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise RuntimeError(f"bincount: expected a 1-D integer tensor, got {a.ndim}-D "
                           f"{a.dtype}")
    if weights is None:
        return wrap(np.bincount(a, minlength=minlength).astype(np.int64))
    w = _host(weights, "bincount")
    return _no_derivative(np.bincount(a, w, minlength=minlength).astype(w.dtype), "bincount",
                          weights)


@name_errors
def histc(input, bins=100, min=0, max=0):
    """Histogram of ``bins`` equal bins over [min, max] (the data's range when both are 0);
    entries outside are ignored. Same dtype as the input; no gradient."""
    a = _host(input, "histc")
    lo, hi = float(min), float(max)
    if lo == hi == 0 and a.size:
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    counts, _ = np.histogram(a, bins=bins, range=(lo, hi))
    return wrap(counts.astype(a.dtype))


@name_errors
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value of ``input`` would be inserted in ``sorted_sequence`` (its last
    dim, batched over the leading ones) to keep it sorted; ``right``/``side="right"`` puts
    it after equal values. int64 (int32 with ``out_int32``)."""
    seq = _host(sorted_sequence, "searchsorted")
    vals = _host(input, "searchsorted")
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter, "searchsorted"), -1)
    if seq.ndim <= 1:
        out = np.searchsorted(seq, vals, side=side)
    else:
        lead = seq.shape[:-1]
        if vals.shape[:-1] != lead:
            raise RuntimeError(f"searchsorted: boundaries {seq.shape} and input {vals.shape} "
                               "must have the same leading dims")
        s2, v2 = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(s2, v2)]).reshape(
            vals.shape)
    return wrap(np.asarray(out).astype(np.int32 if out_int32 else np.int64))


@name_errors
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each entry for 1-D ``boundaries``: ``searchsorted(boundaries,
    input)`` (``right=True``: boundaries[i-1] <= x < boundaries[i])."""
    b = _host(boundaries, "bucketize")
    if b.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim "
                           f"{b.ndim}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


@name_errors
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each entry of ``elements`` is among ``test_elements`` (a bool tensor)."""
    return wrap(np.isin(_host(elements, "isin"), _host(test_elements, "isin"),
                        assume_unique=assume_unique, invert=invert))


def _tri_indices(fn, row, col, offset, dtype):
    r, c = fn(row, offset, col)
    return wrap(np.stack([r, c]).astype(dtype or np.int64))


@name_errors
def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) coordinates of the lower triangle of a ``row x col`` matrix."""
    return _tri_indices(np.tril_indices, row, col, offset, dtype)


@name_errors
def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) coordinates of the upper triangle of a ``row x col`` matrix."""
    return _tri_indices(np.triu_indices, row, col, offset, dtype)


def _logical(name):
    def fn(input, other):
        a, b = (x._data if isinstance(x, Tensor) else x for x in (input, other))
        if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
            return wrap(np.asarray(getattr(np, name)(a, b)))
        return wrap(getattr(backend_of(a).xp, name)(a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name.split('_')[1]}`` of the truth values (a bool tensor)."
    return name_errors(fn)


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


@name_errors
def signbit(input):
    """Whether the sign bit is set (True for -0.0): a bool tensor."""
    a = input._data if isinstance(input, Tensor) else np.asarray(input)
    if a.__class__ is np.ndarray:
        return wrap(np.asarray(np.signbit(a)))
    return wrap(backend_of(a).xp.signbit(a))


@name_errors
def heaviside(input, values):
    """0 where x < 0, ``values`` where x == 0, 1 where x > 0. No gradient: backward raises
    (as PyTorch: the step's derivative is not implemented)."""
    a, v = _host(input, "heaviside"), _host(values, "heaviside")
    return _no_derivative(np.asarray(np.heaviside(a, v)).astype(np.result_type(a, v)),
                          "heaviside", input, values)


@name_errors
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype``)."""
    t = wrap(np.asarray(s, dtype=dtype or get_default_dtype()))
    return t.requires_grad_(True) if requires_grad else t
