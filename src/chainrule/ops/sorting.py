"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian,
quantile and nanquantile.

The value-selecting ops (sort, topk, kthvalue, median / nanmedian along a dim) return
``(values, indices)`` named tuples as PyTorch does; each is a primitive whose values are the
input gathered at the indices along ``dim``, so all of them share one pair of rules: the VJP
scatters the cotangent back to the selected positions (``F.scatter_along``, adding where an
index repeats), the JVP gathers the tangent (``F.take_along``). ``median()`` and
``nanmedian()`` over all entries share the gradient evenly among the entries equal to the
result, as PyTorch's ``evenly_distribute_backward``. ``quantile`` / ``nanquantile`` are
compositions (sort, a gather, and a linear interpolation), as in PyTorch.

Order conventions follow PyTorch: NaN sorts as the largest value (last in ascending order,
first in descending order); sorts are stable (ties keep their order); ``median`` of a slice
with a NaN is NaN (at the first NaN), ``nanmedian`` ignores NaNs.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from .._dispatch import IndexBoundsError, apply, name_errors
from .._state import STATE
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import beside, dtype_kind, on_device_of, row_major, xp_kernel
from ._dims import wrap_dim
from .elementwise import keep
from .scans import _data, _take_along

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "quantile",
           "nanquantile"]

sort_return = collections.namedtuple("sort", ["values", "indices"])
topk_return = collections.namedtuple("topk", ["values", "indices"])
kthvalue_return = collections.namedtuple("kthvalue", ["values", "indices"])
median_return = collections.namedtuple("median", ["values", "indices"])
nanmedian_return = collections.namedtuple("nanmedian", ["values", "indices"])


# --- kernels ---------------------------------------------------------------------------


def _gather(xp, x, idx, axis):
    return _take_along(xp, x, idx, axis)


def _isnan(xp, x):
    return xp.isnan(x) if _is_float(x) else xp.zeros(x.shape, dtype=xp.bool, **on_device_of(x))


def _is_float(x):
    return dtype_kind(x.dtype) in "fc"


def _argsort(xp, x, dim, descending):
    """Stable argsort along ``dim``; NaN is the largest value (PyTorch's order)."""
    if not descending:
        return xp.argsort(x, axis=dim, stable=True)
    if x.dtype == xp.bool:
        key = xp.astype(x, xp.int8)
    else:
        key = x
    if _is_float(x):
        key = -key
        idx = xp.argsort(key, axis=dim, stable=True)  # NaN last: move them first
        nan_sorted = xp.isnan(_gather(xp, x, idx, axis=dim))
        perm = xp.argsort(xp.astype(xp.logical_not(nan_sorted), xp.int8), axis=dim, stable=True)
        return _gather(xp, idx, perm, axis=dim)
    # integers: ascending order of the bitwise complement (-x overflows at the minimum)
    return xp.argsort(xp.astype(key, xp.int64) * -1 - 1, axis=dim, stable=True)


def _int64(xp, idx):
    return xp.astype(idx, xp.int64)


@xp_kernel
def _sort_kernel(xp, x, dim, keepdim, args):
    (descending,) = args
    idx = _argsort(xp, x, dim, descending)
    return _gather(xp, x, idx, axis=dim), _int64(xp, idx)


def _slice_along(x, dim, start, stop):
    index = [slice(None)] * x.ndim
    index[dim] = slice(start, stop)
    return x[tuple(index)]


@xp_kernel
def _topk_kernel(xp, x, dim, keepdim, args):
    k, largest = args
    idx = _slice_along(_argsort(xp, x, dim, largest), dim, 0, k)
    return _gather(xp, x, idx, axis=dim), _int64(xp, idx)


def _pick(xp, x, idx_sorted, pos, dim, keepdim):
    """Entries of ``x`` at sorted position ``pos`` (an array with size 1 along ``dim``)."""
    idx = _gather(xp, idx_sorted, pos, axis=dim)
    values = _gather(xp, x, idx, axis=dim)
    idx = _int64(xp, idx)
    if not keepdim:
        values, idx = xp.squeeze(values, axis=dim), xp.squeeze(idx, axis=dim)
    return values, idx


def _positions(xp, x, dim, fill):
    shape = list(x.shape)
    shape[dim] = 1
    return xp.full(tuple(shape), fill, dtype=xp.int64, **on_device_of(x))


@xp_kernel
def _kthvalue_kernel(xp, x, dim, keepdim, args):
    (k,) = args
    idx = _argsort(xp, x, dim, False)
    return _pick(xp, x, idx, _positions(xp, x, dim, k - 1), dim, keepdim)


@xp_kernel
def _median_kernel(xp, x, dim, keepdim, args):
    (ignore_nan,) = args
    n = x.shape[dim]
    idx = _argsort(xp, x, dim, False)
    nans = xp.sum(xp.astype(_isnan(xp, x), xp.int64), axis=dim, keepdims=True)
    if ignore_nan:  # the lower median of the non-NaN entries (the first NaN when all are)
        pos = xp.where(nans == n, 0, (n - nans - 1) // 2)
    else:  # NaN when there is one: the first NaN, which sorts at n - #NaN
        pos = xp.where(nans > 0, n - nans, xp.zeros_like(nans) + (n - 1) // 2)
    values, idx = _pick(xp, x, idx, xp.astype(pos, xp.int64), dim, keepdim)
    return row_major(values), row_major(idx)


# --- rules -----------------------------------------------------------------------------


def _select_vjp(F, g, self_shape, out, dim, keepdim):
    gv, idx = g[0], out[1]
    if not keepdim:
        gv, idx = F.unsqueeze(gv, dim), F.unsqueeze(idx, dim)
    return F.scatter_along(gv, idx, dim, self_shape[dim])


def _select_jvp(F, t, out, dim, keepdim):
    idx = out[1] if keepdim else F.unsqueeze(out[1], dim)
    v = F.take_along(t, idx, dim)
    return (v if keepdim else F.squeeze(v, (dim,))), None


def _selecting(name, kernel, what, source):
    return defop(
        name, kernel, ("self",), attrs=("dim", "keepdim", "args"), nout=2, out_diff=(0,),
        vjp={"self": _select_vjp}, jvp={"self": _select_jvp},
        math={"self": f"grad_x = zeros(x.shape); grad_x[indices along dim] += grad "
                      f"({what})",
              "out": "dvalues = dx gathered at indices along dim"},
        source=source,
    )


_SELECTION = ("the values are x gathered at integer indices along dim, a linear map for "
              "fixed indices; its transpose is a scatter (PyTorch's {}")
SORT = _selecting("sort", _sort_kernel, "a permutation along dim",
                  _SELECTION.format("sort_backward / value_selecting_reduction_backward)"))
TOPK = _selecting("topk", _topk_kernel, "the k selected entries",
                  _SELECTION.format("topk: value_selecting_reduction_backward)"))
KTHVALUE = _selecting("kthvalue", _kthvalue_kernel, "the k-th smallest entry",
                      _SELECTION.format("kthvalue: value_selecting_reduction_backward)"))
MEDIAN_DIM = _selecting("median_dim", _median_kernel, "the lower median",
                        _SELECTION.format("median.dim: value_selecting_reduction_backward)"))
MEDIAN_DIM.node_name = "MedianBackward1"


@xp_kernel
def _median_all_kernel(xp, x, ignore_nan):
    flat = xp.reshape(x, (-1,))
    values, _ = _median_kernel(xp, flat, 0, False, (ignore_nan,))
    return values


def _even_mask(F, self, out):
    """Entries equal to the result (the NaN entries when it is NaN), each 1 / count."""
    out = F.expand(out, self.shape)
    nan_out = F.cast(out != out, self.dtype)
    mask = F.cast(self == out, self.dtype) * (1 - nan_out) + F.cast(self != self,
                                                                      self.dtype) * nan_out
    return mask / F.sum(mask, None, False)


def _even_vjp(F, g, self, out):
    # masked, not only multiplied: a NaN or inf cotangent reaches the selected entries only
    # (PyTorch's evenly_distribute_backward fills them into zeros)
    mask = _even_mask(F, self, out)
    return keep(F, g * mask, mask != 0)


MEDIAN = defop(
    "median", _median_all_kernel, ("self",), attrs=("ignore_nan",),
    vjp={"self": _even_vjp},
    jvp={"self": lambda F, t, self, out: F.sum(t * _even_mask(F, self, out), None, False)},
    math={"self": "grad_x = grad * [x == median] / #{x == median}  (NaN result: shared by the "
                  "NaN entries)",
          "out": "dy = mean of dx over the entries equal to the median"},
    source="subgradient of an order statistic, shared evenly among ties (PyTorch's "
           "evenly_distribute_backward for median() and nanmedian())",
)


# --- public functions ------------------------------------------------------------------


def _ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _as_1d(input):
    from .shape import reshape

    return reshape(input, (1,))


def _run(op, input, dim, keepdim, args, name, ret):
    """Apply a selecting op; a 0-d input is its own 1-entry slice, as in PyTorch."""
    d = wrap_dim(dim, _ndim(input), name)
    if _ndim(input) == 0:
        values, indices = apply(op, (_as_1d(input),), (0, True, args))
        from .shape import reshape

        return ret(reshape(values, ()), reshape(indices, ()))
    values, indices = apply(op, (input,), (d, bool(keepdim), args))
    return ret(values, indices)


@documented(SORT)
def sort(input, dim=-1, descending=False, stable=False):
    """``(values, indices)`` sorted along ``dim`` (a ``sort`` named tuple). The sort is
    always stable (``stable=True`` is what ``stable=False`` allows); NaN sorts as the
    largest value. The gradient of ``values`` is scattered back through ``indices``."""
    return _run(SORT, input, dim, True, (bool(descending),), "sort", sort_return)


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim`` (int64, no gradient); stable."""
    return sort(input, dim, descending, stable).indices


def msort(input):
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


@documented(TOPK)
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (``largest=False``: smallest) entries along ``dim`` and their
    indices (a ``topk`` named tuple), in sorted order (which ``sorted=False`` allows)."""
    d = wrap_dim(dim, _ndim(input), "topk")
    n = 1 if _ndim(input) == 0 else input.shape[d]
    if not 0 <= k <= n:
        raise RuntimeError("topk: selected index k out of range")
    return _run(TOPK, input, d, True, (int(k), bool(largest)), "topk", topk_return)


@documented(KTHVALUE)
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest entry (1-based) along ``dim`` and its index (a ``kthvalue``
    named tuple)."""
    d = wrap_dim(dim, _ndim(input), "kthvalue")
    n = 1 if _ndim(input) == 0 else input.shape[d]
    if not 1 <= k <= n:
        raise IndexBoundsError(f"kthvalue: selected number k out of range for dimension {d}")
    return _run(KTHVALUE, input, d, keepdim, (int(k),), "kthvalue", kthvalue_return)


def _median(input, dim, keepdim, ignore_nan, name, ret):
    if dim is None:
        if input.numel() == 0:
            if dtype_kind(input.dtype) == "f":  # NaN, as PyTorch's (still on the graph)
                return input.sum() * math.nan
            raise IndexError(f"{name}: median() input tensor cannot be empty")
        return apply(MEDIAN, (input,), (bool(ignore_nan),))
    _nonempty_dim(input, dim, name)
    return _run(MEDIAN_DIM, input, dim, keepdim, (bool(ignore_nan),), name, ret)


def _nonempty_dim(input, dim, name):
    """PyTorch's IndexError for a selection (median, mode) along a dim of size 0."""
    d = wrap_dim(dim, _ndim(input), name)
    if _ndim(input) and input.shape[d] == 0:
        raise IndexError(f"{name}: Expected reduction dim {d} to have non-zero size.")


@documented(MEDIAN, MEDIAN_DIM)
def median(input, dim=None, keepdim=False):
    """``median(x)``: the lower median of all entries (NaN if any is NaN); the gradient is
    shared by the entries equal to it. ``median(x, dim, keepdim=False)``: ``(values,
    indices)`` along ``dim`` (a ``median`` named tuple); the gradient goes to the index."""
    return _median(input, dim, keepdim, False, "median", median_return)


@documented(MEDIAN, MEDIAN_DIM)
def nanmedian(input, dim=None, keepdim=False):
    """:func:`median` ignoring NaNs (NaN only where every entry is NaN)."""
    return _median(input, dim, keepdim, True, "nanmedian", nanmedian_return)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    from .. import _creation as c
    from .indexing import take_along_dim
    from .shape import movedim, reshape, unsqueeze

    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{name}(): interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    if dtype_kind(input.dtype) != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    # The interpolation ranks are computed on the host (from the NaN count of each slice)
    # and the weights moved beside the input (take_along_dim takes host indices): an
    # explicit copy from a GPU, a compute on Dask (a library refusing host copies raises).
    qd = np.asarray(q._host() if isinstance(q, Tensor) else q, dtype=np.float64)
    if qd.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if np.any((qd < 0) | (qd > 1)):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    x = input
    if dim is None:
        x = reshape(x, (-1,))
        d = 0
    else:
        d = wrap_dim(dim, _ndim(input), name)
        if x.ndim == 0:
            x = reshape(x, (1,))
    sorted_x = movedim(sort(x, d).values, d, -1)  # NaN last
    n = sorted_x.shape[-1]
    data = sorted_x._host()
    nan = np.isnan(data)
    qs = qd.reshape(-1)
    lead = data.shape[:-1]
    if ignore_nan:
        valid = n - nan.sum(-1, keepdims=True)
        ranks = qs * (valid - 1).astype(np.float64)  # (..., len(q))
        ranks = np.where(valid == 0, 0.0, ranks)
    else:
        ranks = np.broadcast_to(qs * (n - 1), lead + (qs.size,)).copy()
        ranks = np.where(nan.any(-1, keepdims=True), n - 1, ranks)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)  # half to even, as PyTorch
    below = ranks.astype(np.int64)
    values = take_along_dim(sorted_x, below, -1)
    if interpolation in ("linear", "midpoint"):
        above = np.ceil(ranks).astype(np.int64)
        weights = np.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        upper = take_along_dim(sorted_x, above, -1)
        w = c.as_tensor(beside(weights.astype(data.dtype), _data(input)))
        if interpolation == "linear" and isinstance(q, Tensor) and dtype_kind(q.dtype) == "f" \
                and (q.requires_grad or STATE.dual_level):
            slope = _rank_slope(ranks, n, nan, valid if ignore_nan else None, data.dtype)
            dq = reshape(q - q.detach(), (-1,)).to(data.dtype)
            w = w + dq * c.as_tensor(beside(slope, _data(input)))
        values = values + w * (upper - values)
    # values: (..., len(q)) -> (len(q), ...) with the reduced dim (kept as 1 with keepdim)
    values = movedim(values, -1, 0)
    if keepdim:
        if dim is None:
            values = reshape(values, (values.shape[0],) + (1,) * _ndim(input))
        elif _ndim(input) > 0:
            values = unsqueeze(values, d + 1)
    if qd.ndim == 0:
        values = reshape(values, values.shape[1:])
    return values


def _rank_slope(ranks, n, nan, valid, dtype):
    """d rank / d q (NumPy, ``ranks``' shape): the weight ``rank - below`` is differentiated
    in ``q`` (``rank = q (n - 1)``, or ``q (valid - 1)`` ignoring NaNs) through the
    zero-valued term ``(q - q.detach()) * slope``, as PyTorch's composite differentiates
    ``q``: 0 where the rank is forced (a NaN slice)."""
    if valid is None:
        slope = np.where(nan.any(-1, keepdims=True), 0, n - 1)
    else:
        slope = np.where(valid == 0, 0, valid - 1)
    return np.broadcast_to(slope, ranks.shape).astype(dtype)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles (``q`` a number or 1-D tensor in [0, 1]) along ``dim`` (all
    entries when None), interpolating between sorted entries as ``interpolation`` says
    (``linear``, ``lower``, ``higher``, ``midpoint``, ``nearest``); NaN where a slice has a
    NaN. A 1-D ``q`` adds a leading dim. A composition of ``sort``, a gather and ``a + w (b
    - a)``, as in PyTorch, so the gradient flows to the one or two entries used."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """:func:`quantile` ignoring NaNs (NaN where a slice is all NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")

# Errors raised while preparing the arguments name the op (chainrule._dispatch.name_errors).
for _name in __all__:
    globals()[_name] = name_errors(globals()[_name], _name)
del _name
