"""Scans along a dim: cumsum, cumprod, logcumsumexp, cummax and cummin.

Each is a primitive. cumsum's VJP is the reversed cumulative sum of the cotangent;
cumprod's is PyTorch's ``cumprod_backward`` (exact where the input has zeros, at first
order); logcumsumexp's is computed in log space with the cotangent split by sign
(PyTorch's ``logcumsumexp_backward``); cummax / cummin return ``(values, indices)`` and
scatter the cotangent to the running arg-extreme, adding where an index repeats.
"""

from __future__ import annotations

import collections

import numpy as np

from .. import _ns
from .._dispatch import apply, name_errors
from .._table import TABLE, defop, documented
from .._tensor import Tensor
from ..backend import backend_of, dtype_kind, on_device_of, row_major, xp_kernel
from ._dims import wrap_dim

__all__ = ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"]

cummax_return = collections.namedtuple("cummax", ["values", "indices"])
cummin_return = collections.namedtuple("cummin", ["values", "indices"])


# --- the rule namespace's gather / scatter along a dim ------------------------------------


def _aligned(xp, x, idx, dim):
    """``x`` and ``idx`` with the same number of dims (leading 1s added to the smaller: a
    batch axis of the batched namespace) and broadcast against each other on every dim but
    ``dim`` (counted in the larger)."""
    nd = max(x.ndim, idx.ndim)
    if x.ndim < nd:
        x = xp.reshape(x, (1,) * (nd - x.ndim) + tuple(x.shape))
    if idx.ndim < nd:
        idx = xp.reshape(idx, (1,) * (nd - idx.ndim) + tuple(idx.shape))
    shape = [max(a, b) for a, b in zip(x.shape, idx.shape)]
    xs, ids = list(shape), list(shape)
    xs[dim], ids[dim] = x.shape[dim], idx.shape[dim]
    if tuple(x.shape) != tuple(xs):
        x = xp.broadcast_to(x, tuple(xs))
    if tuple(idx.shape) != tuple(ids):
        idx = xp.broadcast_to(idx, tuple(ids))
    return x, idx


def _take_along(xp, x, idx, dim):
    x, idx = _aligned(xp, x, idx, dim)
    if "take_along_axis" in vars(xp):
        return xp.take_along_axis(x, idx, axis=dim)
    # a library without it (Dask): a one-hot contraction, O(n k)
    im = xp.expand_dims(xp.moveaxis(idx, dim, -1), axis=-1)
    hits = xp.astype(im == xp.arange(x.shape[dim], dtype=im.dtype, **on_device_of(im)),
                     x.dtype)
    out = xp.sum(xp.expand_dims(xp.moveaxis(x, dim, -1), axis=-2) * hits, axis=-1)
    return xp.moveaxis(out, -1, dim)


def _take_along_np(x, idx, dim):
    return _take_along(np, np.asarray(x), np.asarray(idx), dim)


def _scatter_along_np(g, idx, dim, n):
    """zeros with ``n`` entries along ``dim``, ``g`` added at ``idx`` along ``dim``."""
    g, idx = _aligned(np, np.asarray(g), np.asarray(idx), dim)
    gm, im = np.moveaxis(g, dim, -1), np.moveaxis(idx, dim, -1)
    lead = gm.shape[:-1]
    m = int(np.prod(lead))
    k = gm.shape[-1]
    flat = (im.reshape(m, k) + (np.arange(m) * n)[:, None]).ravel()
    out = np.bincount(flat, weights=gm.reshape(-1), minlength=m * n)
    return np.moveaxis(out.astype(g.dtype, copy=False).reshape(lead + (n,)), -1, dim)


def _scatter_along_xp(xp):
    """On other libraries, a sum of one-hot masks (no scatter in the Array API): O(n k)."""
    def scatter(g, idx, dim, n):
        g, idx = _aligned(xp, g, idx, dim)
        gm, im = xp.moveaxis(g, dim, -1), xp.moveaxis(idx, dim, -1)
        positions = xp.arange(n, dtype=im.dtype, **on_device_of(im))
        hits = xp.astype(xp.expand_dims(im, axis=-1) == positions, gm.dtype)
        out = xp.sum(xp.expand_dims(gm, axis=-1) * hits, axis=-2)
        return xp.moveaxis(out, -1, dim)

    return scatter


def _sum_over(x, dim):
    """The table's ``sum`` over one dim (this module sits below ops.reduction)."""
    return apply(TABLE["sum"], (x,), ((dim % x.ndim,), False))


def _own(xp, name):
    return vars(xp).get(name)


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _onehot_along(idx, dim, n, like):
    """A tensor (no grad) of ``idx``'s shape with a last dim of ``n``: 1 where the position
    equals the index at ``dim`` (moved last), in ``like``'s dtype, on ``idx``'s backend."""
    from .. import _creation as c

    idd = _data(idx)
    xp = backend_of(idd).xp
    im = xp.expand_dims(xp.moveaxis(idd, dim, -1), axis=-1)
    positions = xp.arange(n, dtype=im.dtype, **on_device_of(im))
    return c.as_tensor(xp.astype(im == positions, _data(like).dtype))


def _take_along_diff(x, idx, dim):
    from .indexing import take_along_dim

    if _data(idx).__class__ is not np.ndarray:  # other libraries: a one-hot contraction
        from .shape import movedim, unsqueeze

        hits = _onehot_along(idx, dim, x.shape[dim], x)  # (..., k, n)
        return movedim(_sum_over(unsqueeze(movedim(x, dim, -1), -2) * hits, -1), -1, dim)

    xd, idd = _aligned(np, np.empty(x.shape, dtype=bool), np.asarray(_data(idx)), dim)
    if tuple(xd.shape) != tuple(x.shape):
        from .shape import broadcast_to, reshape

        x = broadcast_to(reshape(x, (1,) * (xd.ndim - x.ndim) + tuple(x.shape)), xd.shape)
    return take_along_dim(x, idd, dim)


def _scatter_along_diff(g, idx, dim, n):
    from .. import _creation as c
    from .indexing import index_put
    from .shape import broadcast_to, movedim, reshape, unsqueeze

    if _data(idx).__class__ is not np.ndarray:  # other libraries: a one-hot contraction
        hits = _onehot_along(idx, dim, n, g)  # (..., k, n)
        return movedim(_sum_over(unsqueeze(movedim(g, dim, -1), -1) * hits, -2), -1, dim)
    gd, idd = _aligned(np, np.empty(g.shape, dtype=bool), np.asarray(_data(idx)), dim)
    if tuple(gd.shape) != tuple(g.shape):
        g = broadcast_to(reshape(g, (1,) * (gd.ndim - g.ndim) + tuple(g.shape)), gd.shape)
    shape = list(gd.shape)
    shape[dim] = n
    grids = np.ogrid[tuple(slice(s) for s in idd.shape)]
    index = tuple(idd if i == dim else np.broadcast_to(grids[i], idd.shape)
                  for i in range(idd.ndim))
    return index_put(c.zeros(tuple(shape), dtype=g.dtype), index, g, accumulate=True)


if "take_along" not in _ns.names():
    _ns.register("take_along", _take_along_np, _take_along_diff,
                 lambda xp, dev, lazy: lambda x, idx, dim: _take_along(xp, x, idx, dim),
                 batch=("leading", (2, "dim")))
if "scatter_along" not in _ns.names():
    _ns.register("scatter_along", _scatter_along_np, _scatter_along_diff,
                 lambda xp, dev, lazy: _scatter_along_xp(xp),
                 batch=("leading", (2, "dim")))


# --- kernels ---------------------------------------------------------------------------


def _cumsum_xp(xp, x, dim):
    own = _own(xp, "cumulative_sum")
    return own(x, axis=dim) if own is not None else xp.cumsum(x, axis=dim)


def _cumprod_xp(xp, x, dim):
    own = _own(xp, "cumulative_prod")
    return own(x, axis=dim) if own is not None else xp.cumprod(x, axis=dim)


def _logcumsumexp_xp(xp, x, dim):
    if x.__class__ is np.ndarray:  # NumPy's ufunc: exact for any spread of values
        return np.logaddexp.accumulate(x, axis=dim)
    # elsewhere: one logaddexp per step along dim (exact for any spread of values)
    return _running(xp, x, dim, xp.logaddexp)


def _running(xp, x, dim, step):
    """The scan of ``step`` along ``dim``, one vectorised step per entry."""
    moved = xp.moveaxis(x, dim, 0)
    steps = [moved[0, ...]]
    for i in range(1, moved.shape[0]):
        steps.append(step(steps[-1], moved[i, ...]))
    return xp.moveaxis(xp.stack(steps, axis=0), 0, dim)


def _flip_xp(xp, x, dim):
    return xp.flip(x, axis=dim)


# --- the rule namespace's scans ----------------------------------------------------------


def _register(name, fn, diff):
    if name not in _ns.names():
        _ns.register(name, lambda x, dim: fn(np, x, dim), diff,
                     lambda xp, dev, lazy: lambda x, dim: fn(xp, x, dim),
                     batch=("leading", (1, "dim")))


_register("cumsum", _cumsum_xp, lambda x, dim: cumsum(x, dim))
_register("cumprod", _cumprod_xp, lambda x, dim: cumprod(x, dim))
_register("logcumsumexp", _logcumsumexp_xp, lambda x, dim: logcumsumexp(x, dim))


def _flip_diff(x, dim):
    from .rearrange import flip

    return flip(x, dim)


_register("flip", _flip_xp, _flip_diff)


# --- cumsum ----------------------------------------------------------------------------


def _revcumsum(F, g, dim):
    """sum_{k >= i} g_k along ``dim``."""
    return F.flip(F.cumsum(F.flip(g, dim), dim), dim)


CUMSUM = defop(
    "cumsum", xp_kernel(lambda xp, x, dim: row_major(_cumsum_xp(xp, x, dim))), ("self",),
    attrs=("dim",),
    vjp={"self": lambda F, g, dim: _revcumsum(F, g, dim)},
    jvp={"self": lambda F, t, dim: F.cumsum(t, dim)},
    math={"self": "grad_x_i = sum_{k >= i} grad_k  (a reversed cumsum)",
          "out": "dy = cumsum(dx)"},
    source="a linear map (a lower-triangular matrix of ones); its VJP is the transpose",
)


# --- cumprod ---------------------------------------------------------------------------


def _zero_parts(F, self, dim):
    """Masks of the entries before the first zero of their slice and of that first zero,
    and the input with that zero replaced by 1."""
    zero = F.cast(self == 0, self.dtype)
    count = F.cumsum(zero, dim)  # zeros up to and including i
    before = count == 0
    first = (zero * F.cast(count == 1, self.dtype)) == 1
    return before, first, F.where(first, 1.0, self)


def _cumprod_vjp(F, g, self, out, dim):
    if not F.maybe_any(self == 0):
        return _revcumsum(F, g * out, dim) / self
    # PyTorch's cumprod_backward: before the first zero z the formula above (x_i != 0);
    # at z, sum_{k >= z} g_k prod_{j <= k, j != z} x_j, the reversed cumsum of g times the
    # cumprod of x with x_z set to 1; after z every product holds x_z = 0.
    before, first, x1 = _zero_parts(F, self, dim)
    safe = F.where(before, self, 1.0)
    at_zero = _revcumsum(F, g * F.cumprod(x1, dim), dim)
    return F.where(before, _revcumsum(F, g * out, dim) / safe, F.where(first, at_zero, 0.0))


def _cumprod_jvp(F, t, self, out, dim):
    if not F.maybe_any(self == 0):
        return out * F.cumsum(t / self, dim)
    # d y_k = sum_{i <= k} t_i prod_{j <= k, j != i} x_j: before z the formula above; from
    # z on only i = z leaves no zero factor, giving t_z times the cumprod of x with x_z = 1.
    before, first, x1 = _zero_parts(F, self, dim)
    safe = F.where(before, self, 1.0)
    t_first = F.sum(F.where(first, t, 0.0), (dim,), True)
    return F.where(before, out * F.cumsum(t / safe, dim), t_first * F.cumprod(x1, dim))


CUMPROD = defop(
    "cumprod", xp_kernel(lambda xp, x, dim: row_major(_cumprod_xp(xp, x, dim))), ("self",),
    attrs=("dim",),
    vjp={"self": _cumprod_vjp}, jvp={"self": _cumprod_jvp},
    math={"self": "grad_x_i = sum_{k >= i} grad_k y_k / x_i (no zeros); with a first zero at z: "
                  "that for i < z, sum_{k >= z} grad_k prod_{j <= k, j != z} x_j at z, 0 after",
          "out": "dy_k = y_k sum_{i <= k} dx_i / x_i (no zeros); with zeros, dx_z prod_{j <= k, "
                 "j != z} x_j from the first zero z on"},
    source="product rule; zeros handled as PyTorch's cumprod_backward (first-order exact; "
           "second derivatives at an exact zero are those of this formula, as in PyTorch)",
)


# --- logcumsumexp ----------------------------------------------------------------------

_LOW = -1e30  # log of a zero weight: exp(_LOW - anything finite) is 0, and stays finite


def _log_parts(F, v):
    """log|v| where v > 0 and where v < 0 (_LOW elsewhere)."""
    log_abs = F.log(F.abs(F.where(v == 0, 1.0, v)))
    return F.where(v > 0, log_abs, _LOW), F.where(v < 0, log_abs, _LOW)


def _rev_lcse(F, v, dim):
    return F.flip(F.logcumsumexp(F.flip(v, dim), dim), dim)


def _lcse_vjp(F, g, self, out, dim):
    pos, neg = _log_parts(F, g)
    return (F.exp(_rev_lcse(F, pos - out, dim) + self)
            - F.exp(_rev_lcse(F, neg - out, dim) + self))


def _lcse_jvp(F, t, self, out, dim):
    pos, neg = _log_parts(F, t)
    return (F.exp(F.logcumsumexp(pos + self, dim) - out)
            - F.exp(F.logcumsumexp(neg + self, dim) - out))


LOGCUMSUMEXP = defop(
    "logcumsumexp", xp_kernel(lambda xp, x, dim: row_major(_logcumsumexp_xp(xp, x, dim))),
    ("self",),
    attrs=("dim",),
    vjp={"self": _lcse_vjp}, jvp={"self": _lcse_jvp},
    math={"self": "grad_x_i = sum_{k >= i} grad_k exp(x_i - y_k), in log space: "
                  "exp(revlcse(log grad+ - y) + x) - exp(revlcse(log grad- - y) + x)",
          "out": "dy_k = sum_{i <= k} dx_i exp(x_i - y_k) (the same split by sign)"},
    source="derivative of log sum_{i<=k} exp(x_i): softmax weights over each prefix; "
           "PyTorch's logcumsumexp_backward (after TensorFlow's math_grad)",
)


# --- cummax / cummin -------------------------------------------------------------------


def _cumextreme(xp, x, dim, name):
    """Running extreme and the index of its last occurrence (PyTorch: an entry equal to the
    running extreme, or a NaN, takes over the index; NaN propagates)."""
    numpy = x.__class__ is np.ndarray  # NumPy's ufuncs accumulate; elsewhere, step by step
    n = x.shape[dim]
    shape = [1] * x.ndim
    shape[dim] = n
    positions = xp.reshape(xp.arange(n, dtype=xp.int64, **on_device_of(x)), tuple(shape))
    nan_safe = xp.maximum if name == "max" else xp.minimum  # NaN propagates through both
    if numpy:
        values = (np.maximum if name == "max" else np.minimum).accumulate(x, axis=dim)
    else:
        values = _running(xp, x, dim, nan_safe)
    takes = x == values
    if dtype_kind(x.dtype) in "fc":
        takes = xp.logical_or(takes, xp.isnan(x))
    marks = xp.where(takes, positions, xp.zeros_like(positions))
    if numpy:
        indices = np.maximum.accumulate(marks, axis=dim)
    else:
        indices = _running(xp, marks, dim, xp.maximum)
    return row_major(values), row_major(xp.astype(indices, xp.int64))


def _cum_vjp(F, g, self_shape, out, dim):
    return F.scatter_along(g[0], out[1], dim, self_shape[dim])


def _cum_jvp(F, t, out, dim):
    return F.take_along(t, out[1], dim), None


def _cumulative_extreme(name):
    return defop(
        "cum" + name, xp_kernel(lambda xp, x, dim: _cumextreme(xp, x, dim, name)), ("self",),
        attrs=("dim",), nout=2, out_diff=(0,),
        vjp={"self": _cum_vjp}, jvp={"self": _cum_jvp},
        math={"self": f"grad_x = zeros(x.shape); grad_x[indices along dim] += grad (the "
                      f"running arg{name}; repeated indices add up)",
              "out": "dvalues = dx gathered at indices along dim"},
        source=f"a selection, linear in x for fixed indices (PyTorch's cum{name}_backward, "
               "a scatter_add)",
    )


CUMMAX = _cumulative_extreme("max")
CUMMIN = _cumulative_extreme("min")


# --- public functions ------------------------------------------------------------------


def _ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _scan(op, input, dim, name, dtype=None):
    from .shape import reshape

    if dtype is not None:
        from .elementwise import to_dtype

        input = to_dtype(input, dtype)
    d = wrap_dim(dim, _ndim(input), name)
    if _ndim(input) == 0:
        out = apply(op, (reshape(input, (1,)),), (0,))
        if isinstance(out, tuple):
            return tuple(reshape(o, ()) for o in out)
        return reshape(out, ())
    if op in (CUMSUM, CUMPROD) and dtype is None and isinstance(input, Tensor) \
            and dtype_kind(input.dtype) in "biu":
        from .elementwise import to_dtype

        input = to_dtype(input, np.int64)
    out = apply(op, (input,), (d,))
    if dtype is not None and op in (CUMSUM, CUMPROD) and out.dtype != input.dtype:
        from .elementwise import to_dtype  # NumPy accumulates small ints in int64

        out = to_dtype(out, input.dtype)  # (wrapping, as the narrow sum would)
    return out


@documented(CUMSUM)
def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim`` (integers and bools accumulate in int64)."""
    return _scan(CUMSUM, input, dim, "cumsum", dtype)


@documented(CUMPROD)
def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``; the gradient is exact where the input has zeros."""
    return _scan(CUMPROD, input, dim, "cumprod", dtype)


@documented(LOGCUMSUMEXP)
def logcumsumexp(input, dim):
    """``log(cumsum(exp(x), dim))`` computed stably."""
    return _scan(LOGCUMSUMEXP, input, dim, "logcumsumexp")


@documented(CUMMAX)
def cummax(input, dim):
    """Running maximum along ``dim`` and the index where it was (last) attained (a
    ``cummax`` named tuple); NaN propagates."""
    return cummax_return(*_scan(CUMMAX, input, dim, "cummax"))


@documented(CUMMIN)
def cummin(input, dim):
    """Running minimum along ``dim`` and its index (a ``cummin`` named tuple)."""
    return cummin_return(*_scan(CUMMIN, input, dim, "cummin"))

# Errors raised while preparing the arguments name the op (chainrule._dispatch.name_errors).
for _name in __all__:
    globals()[_name] = name_errors(globals()[_name], _name)
del _name
