"""Reductions over ``dim`` (an int, a tuple of ints, or None for all) with ``keepdim``.

Each VJP first puts the reduced dimensions back (``_unreduce``: reshape to the keepdim
shape, then broadcast to the input shape), so the rules read as the textbook formulas.
The VJPs take the input's shape from the saved ``self_shape`` (never ``self.shape``): on a
lazy backend it carries the input's chunks (:class:`chainrule.backend.ChunkedShape`), so
the cotangent is broadcast back in those chunks and Dask has nothing to rechunk.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from .._creation import zeros
from .._dispatch import IN_PLACE, apply, name_errors
from .._table import Singular, defop, documented
from .._tensor import Tensor
from ..backend import backend_of, dtype_kind, numpy_dtype, on_device_of, row_major, xp_kernel
from ._dims import number_arg, wrap_dim, wrap_dims
from .elementwise import keep

__all__ = ["sum", "mean", "prod", "amax", "amin", "max", "min", "var", "std", "logsumexp",
           "vector_norm", "norm", "argmax", "argmin"]

_builtin_sum = sum
_builtin_max = max
_builtin_min = min


def _dims(dim, ndim, op="reduction"):
    """Normalize ``dim`` to a sorted tuple of non-negative ints, or None for all dims (also
    for a 0-d tensor, whose dim 0 / -1 is its only entry, as in PyTorch)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    dims = (dim,) if isinstance(dim, (int, np.integer)) or getattr(dim, "ndim", 1) == 0 \
        else tuple(dim)  # (a 0-d integer tensor: one dim, read by wrap_dims)
    dims = wrap_dims(dims, ndim, op)
    return None if ndim == 0 else tuple(sorted(dims))


def _ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _keep_shape(shape, dim):
    if dim is None:
        return (1,) * len(shape)
    return tuple(1 if i in dim else n for i, n in enumerate(shape))


def _unreduce(F, g, shape, dim, keepdim):
    """The reduced cotangent ``g`` broadcast back over the input's shape."""
    if not keepdim:
        g = F.reshape(g, _keep_shape(shape, dim))
    return F.expand(g, shape)


def _count(shape, dim):
    if dim is None:
        return int(np.prod(shape))
    return int(np.prod([shape[d] for d in dim]))


SOURCE = ("Giles (2008), An extended collection of matrix derivative results, Report NA-08/01 "
          "(sums and products are linear / multilinear maps)")

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))


def _signed(xp, x, out):
    """PyTorch's sum and prod of a bool or small integer tensor are int64; NumPy's of an
    unsigned one (uint8, a torch dtype) would be uint64."""
    dt = out.dtype
    if dt is _FLOATS[0] or dt is _FLOATS[1]:  # the common case, decided at once
        return out
    if getattr(dt, "kind", None) == "u" and x.dtype.itemsize < 8:  # NumPy's dtypes
        return xp.astype(xp.asarray(out), xp.int64)
    return out


SUM = defop(
    "sum",
    xp_kernel(lambda xp, x, dim, keepdim: _signed(
        xp, x, row_major(xp.sum(x, axis=dim, keepdims=keepdim)))),
    ("self",),
    attrs=("dim", "keepdim"),
    vjp={"self": lambda F, g, self_shape, dim, keepdim:
         _unreduce(F, g, self_shape, dim, keepdim)},
    jvp={"self": lambda F, t, dim, keepdim: F.sum(t, dim, keepdim)},
    math={"self": "grad_x = expand(grad)", "out": "dy = sum(dx)"},
    source="linear map: its VJP is the transpose, a broadcast",
)
MEAN = defop(
    "mean",
    xp_kernel(lambda xp, x, dim, keepdim: row_major(xp.mean(x, axis=dim, keepdims=keepdim))),
    ("self",),
    attrs=("dim", "keepdim"),
    vjp={"self": lambda F, g, self_shape, dim, keepdim:
         _unreduce(F, g, self_shape, dim, keepdim) / _count(self_shape, dim)},
    jvp={"self": lambda F, t, dim, keepdim: F.mean(t, dim, keepdim)},
    math={"self": "grad_x = expand(grad) / n", "out": "dy = mean(dx)"},
    source="linear map: its VJP is the transpose, a broadcast divided by the count",
)


def _prod_vjp(F, g, self, out, dim, keepdim, self_shape):
    gk = _unreduce(F, g, self_shape, dim, keepdim)
    if not F.maybe_any(self == 0):
        return gk * _unreduce(F, out, self_shape, dim, keepdim) / self
    # With zeros, x_i^-1 prod(x) is undefined: use the product of the other entries.
    return gk * F.prod_others(self, dim)


def _prod_jvp(F, t, self, out, dim, keepdim, self_shape):
    return F.sum(t * _prod_vjp(F, F.ones_like(out), self, out, dim, keepdim, self_shape),
                 dim, keepdim)


PROD = defop(
    "prod",
    xp_kernel(lambda xp, x, dim, keepdim: _signed(
        xp, x, row_major(xp.prod(x, axis=dim, keepdims=keepdim)))),
    ("self",),
    attrs=("dim", "keepdim"),
    vjp={"self": _prod_vjp}, jvp={"self": _prod_jvp},
    math={"self": "grad_x_i = grad * prod_{j != i} x_j  (= grad * y / x_i without zeros)",
          "out": "dy = sum_i (prod_{j != i} x_j) dx_i"},
    source="product rule; zero entries handled as in PyTorch's prod_backward",
)


def _select_mask(F, self, out, dim, keepdim, self_shape):
    """Entries equal to the reduced extreme, each weighted 1/count (ties split evenly)."""
    mask = F.cast(self == _unreduce(F, out, self_shape, dim, keepdim), self.dtype)
    return mask / F.sum(mask, dim, True)  # in x's dtype: float32 stays float32


def _extreme(name, kernel, word):
    """amax / amin: the gradient goes to the extreme entries, shared evenly among ties."""
    return defop(
        name, xp_kernel(lambda xp, x, dim, keepdim: row_major(getattr(xp, kernel)(
            x, axis=dim, keepdims=keepdim))), ("self",),
        attrs=("dim", "keepdim"),
        vjp={"self": lambda F, g, self, out, dim, keepdim, self_shape: _unreduce(
            F, g, self_shape, dim, keepdim) * _select_mask(F, self, out, dim, keepdim,
                                                            self_shape)},
        jvp={"self": lambda F, t, self, out, dim, keepdim, self_shape:
             F.sum(t * _select_mask(F, self, out, dim, keepdim, self_shape), dim, keepdim)},
        math={"self": f"grad_x = expand(grad) * [x == {word}] / #ties",
              "out": f"dy = mean of dx over the {word}imal entries"},
        source=f"subgradient of {word}; ties share evenly (PyTorch's {name}_backward)",
    )


AMAX = _extreme("amax", "max", "max")
AMIN = _extreme("amin", "min", "min")


def _arg_reduce(argname, valname):
    @xp_kernel
    def forward(xp, x, dim, keepdim):
        (d,) = dim
        # the value at the first arg-extreme is the extreme itself (NaN included)
        return (row_major(getattr(xp, valname)(x, axis=d, keepdims=keepdim)),
                row_major(getattr(xp, argname)(x, axis=d, keepdims=keepdim)))

    return forward


def _onehot(F, indices, shape, dim, keepdim, dtype):
    """Mask of the input's shape (in ``dtype``), 1 at the selected index along ``dim``."""
    (d,) = dim
    if keepdim:
        indices = F.squeeze(indices, (d,))
    return F.onehot(indices, shape[d], d, dtype)


def _max_vjp(F, g, self_shape, out, dim, keepdim):
    # selected with where, not multiplied by the one-hot: a NaN or inf cotangent stays at
    # the index and the other entries get exact zeros, as PyTorch's scatter does
    mask = _onehot(F, out[1], self_shape, dim, keepdim, g[0].dtype) != 0
    return keep(F, _unreduce(F, g[0], self_shape, dim, keepdim), mask)


def _max_jvp(F, t, self_shape, out, dim, keepdim):
    return F.sum(t * _onehot(F, out[1], self_shape, dim, keepdim, t.dtype), dim, keepdim), None


def _value_selecting(name):
    """max / min along a dim, returning (values, indices); the gradient goes to the index."""
    return defop(
        name, _arg_reduce("arg" + name, name), ("self",), attrs=("dim", "keepdim"), nout=2,
        out_diff=(0,),
        vjp={"self": _max_vjp}, jvp={"self": _max_jvp},
        math={"self": f"grad_x = grad scattered to the arg{name} index along dim",
              "out": f"dvalues = dx at the arg{name} index"},
        source="a selection: linear in x for fixed indices (PyTorch's "
               "value_selecting_reduction_backward)",
    )


MAX_DIM = _value_selecting("max")
MIN_DIM = _value_selecting("min")


def _centered(F, self, dim):
    return self - F.mean(self, dim, True)


VAR = defop(
    "var", xp_kernel(lambda xp, x, dim, correction, keepdim: row_major(xp.var(
        x, axis=dim, correction=correction, keepdims=keepdim))),
    ("self",), attrs=("dim", "correction", "keepdim"),
    vjp={"self": lambda F, g, self, dim, correction, keepdim, self_shape:
         _unreduce(F, g, self_shape, dim, keepdim) * (2.0 * _inv_dof(self_shape, dim,
                                                                       correction))
         * _centered(F, self, dim)},
    jvp={"self": lambda F, t, self, dim, correction, keepdim:
         F.sum(t * _centered(F, self, dim), dim, keepdim)
         * (2.0 * _inv_dof(self.shape, dim, correction))},
    math={"self": "grad_x = grad * 2 (x - mean(x)) / (n - correction)  (n <= correction: the "
                  "variance is nan/inf and so is its gradient, as in PyTorch)",
          "out": "dy = 2 sum((x - mean) dx) / (n - correction)"},
    source="derivative of sum((x - mean)^2) / (n - c); the mean's own term sums to zero",
)


def _inv_dof(shape, dim, correction):
    """1 / (n - correction); inf when there are no degrees of freedom (the forward is then
    nan or inf with a warning, and the gradient nan, as in PyTorch; never ZeroDivisionError)."""
    dof = _count(shape, dim) - correction
    return 1.0 / dof if dof else math.inf


def _std_vjp(F, g, self, out, dim, correction, keepdim, self_shape):
    safe = F.where(out == 0, 1.0, out)
    scale = F.where(out == 0, 0.0, g / safe)
    return (_unreduce(F, scale, self_shape, dim, keepdim) * _centered(F, self, dim)
            * _inv_dof(self_shape, dim, correction))


def _std_jvp(F, t, self, out, dim, correction, keepdim):
    safe = F.where(out == 0, 1.0, out)
    return F.where(out == 0, 0.0, F.sum(t * _centered(F, self, dim), dim, keepdim)
                   * _inv_dof(self.shape, dim, correction) / safe)


STD = defop(
    "std", xp_kernel(lambda xp, x, dim, correction, keepdim: row_major(xp.std(
        x, axis=dim, correction=correction, keepdims=keepdim))),
    ("self",), attrs=("dim", "correction", "keepdim"),
    vjp={"self": _std_vjp}, jvp={"self": _std_jvp},
    math={"self": "grad_x = grad * (x - mean(x)) / ((n - correction) std)  (0 where std = 0)",
          "out": "dy = sum((x - mean) dx) / ((n - correction) std)"},
    source="chain rule through sqrt(var); zero where std = 0 as in PyTorch's std_backward",
)


def _logsumexp(xp, x, dim, keepdim):
    # shifted by the finite maximum; all -inf gives -inf, +inf or NaN propagate
    try:
        m = xp.max(x, axis=dim, keepdims=True)
    except ValueError:  # an empty reduction: the sum of no terms is 0, its log -inf
        m = xp.sum(x, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    s = xp.log(xp.sum(xp.exp(x - m), axis=dim, keepdims=keepdim))
    return row_major(s + xp.reshape(m, s.shape))


def _lse_weights(F, self, out, dim, keepdim, self_shape):
    return F.exp(self - _unreduce(F, out, self_shape, dim, keepdim))


LOGSUMEXP = defop(
    "logsumexp", xp_kernel(_logsumexp),
    ("self",), attrs=("dim", "keepdim"),
    vjp={"self": lambda F, g, self, out, dim, keepdim, self_shape:
         _unreduce(F, g, self_shape, dim, keepdim)
         * _lse_weights(F, self, out, dim, keepdim, self_shape)},
    jvp={"self": lambda F, t, self, out, dim, keepdim, self_shape:
         F.sum(t * _lse_weights(F, self, out, dim, keepdim, self_shape), dim, keepdim)},
    math={"self": "grad_x = grad * softmax(x) = grad * exp(x - y)",
          "out": "dy = sum(softmax(x) dx)"},
    source="derivative of log sum exp: the softmax weights",
    floating=True,  # a bool or integer input is cast to the default float (as PyTorch's)
)


@xp_kernel
def _vector_norm(xp, x, ord, dim, keepdim):
    return row_major(_vector_norm_of(xp, x, ord, dim, keepdim))


def _vector_norm_of(xp, x, ord, dim, keepdim):
    a = xp.abs(x)
    kw = dict(axis=dim, keepdims=keepdim)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, **kw))
    if ord == math.inf:
        return xp.max(a, **kw)
    if ord == -math.inf:
        return xp.min(a, **kw)
    if ord == 0:
        return xp.sum(xp.astype(a != 0, a.dtype), **kw)
    if ord == 1:
        return xp.sum(a, **kw)
    return xp.sum(a ** ord, **kw) ** (1.0 / ord)


def _vector_norm_dx(F, self, out, ord, dim, keepdim):
    """d||x||_p / dx, with out already broadcast back: the rule is grad * this."""
    if ord == 0:
        return F.zeros_like(self)
    if ord == 1:
        return F.sign(self)
    if abs(ord) == math.inf:
        mask = F.cast(F.abs(self) == out, self.dtype)
        return F.sign(self) * mask / F.sum(mask, dim, True)
    safe = F.where(out == 0, 1.0, out)
    if ord == 2:
        return F.where(out == 0, 0.0, self / safe)
    # entries equal to 0 get 0 (for p < 1, |x_i|^(p-1) is infinite there: PyTorch's choice)
    nonzero = F.where(self == 0, 1.0, self)
    value = F.sign(self) * (F.abs(nonzero) / safe) ** (ord - 1)
    return F.where((out == 0) | (self == 0), 0.0, value)


def _norm_vjp(F, g, self, out, ord, dim, keepdim, self_shape):
    outk = _unreduce(F, out, self_shape, dim, keepdim)
    return _unreduce(F, g, self_shape, dim, keepdim) * _vector_norm_dx(F, self, outk, ord,
                                                                        dim, keepdim)


def _norm_jvp(F, t, self, out, ord, dim, keepdim, self_shape):
    outk = _unreduce(F, out, self_shape, dim, keepdim)
    return F.sum(t * _vector_norm_dx(F, self, outk, ord, dim, keepdim), dim, keepdim)


VECTOR_NORM = defop(
    "linalg_vector_norm", _vector_norm, ("self",), attrs=("ord", "dim", "keepdim"),
    vjp={"self": _norm_vjp}, jvp={"self": _norm_jvp},
    math={"self": "grad_x = grad * sign(x) |x|^(p-1) / ||x||_p^(p-1)  (p=2: grad * x / ||x||; "
                  "inf: shared by the largest |x_i|; 0 where ||x|| = 0, and 0 at x_i = 0 for any "
                  "p, as PyTorch)",
          "out": "dy = sum(sign(x) |x|^(p-1) dx) / ||x||^(p-1)"},
    source="derivative of (sum |x_i|^p)^(1/p); PyTorch's norm_backward conventions at zero",
    singular={"self": Singular("||x|| = 0 (the norm is not differentiable there: the rule "
                               "gives the subgradient 0, its second derivative is infinite)",
                               "undefined", lambda out: out == 0,
                               "sqrt(sum(x ** 2) + eps) in place of norm(x)")},
)


# --- public functions ----------------------------------------------------------------


def _exact_dtype(out, dtype):
    """The result of a reduction given ``dtype=``, in exactly that dtype (NumPy sums a small
    integer dtype in int64; PyTorch's ``sum(dtype=int32)`` is int32)."""
    if numpy_dtype(out.dtype) == numpy_dtype(dtype):
        return out
    from .elementwise import to_dtype

    return to_dtype(out, dtype)


@documented(SUM)
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (int, tuple, or None for all). Shape: the input's with ``dim``
    removed (kept as 1 with ``keepdim``)."""
    if dtype is not None:
        from .elementwise import to_dtype

        input = to_dtype(input, dtype)
    out = apply(SUM, (input,), (_dims(dim, _ndim(input), 'sum'), bool(keepdim)))
    return out if dtype is None else _exact_dtype(out, dtype)


@documented(MEAN)
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` (int, tuple, or None for all)."""
    if dtype is not None:
        from .elementwise import to_dtype

        input = to_dtype(input, dtype)
    return apply(MEAN, (input,), (_dims(dim, _ndim(input), 'mean'), bool(keepdim)))


@documented(PROD)
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim`` (an int, or None for all entries); zero entries are handled."""
    if dtype is not None:
        from .elementwise import to_dtype

        input = to_dtype(input, dtype)
    out = apply(PROD, (input,), (_dims(dim, _ndim(input), 'prod'), bool(keepdim)))
    return out if dtype is None else _exact_dtype(out, dtype)


@documented(AMAX)
def amax(input, dim=(), keepdim=False):
    """Largest value over ``dim`` (all dims by default); ties share the gradient."""
    return apply(AMAX, (input,), (_dims(dim, _ndim(input), 'amax'), bool(keepdim)))


@documented(AMIN)
def amin(input, dim=(), keepdim=False):
    """Smallest value over ``dim`` (all dims by default); ties share the gradient."""
    return apply(AMIN, (input,), (_dims(dim, _ndim(input), 'amin'), bool(keepdim)))


max_return = collections.namedtuple("max", ["values", "indices"])
min_return = collections.namedtuple("min", ["values", "indices"])


def _select_along(input, op, dim, keepdim, name):
    """max/min along ``dim``: a 0-d tensor is its own extreme (index 0), as in PyTorch."""
    d = wrap_dim(dim, _ndim(input), name)
    if _ndim(input) == 0:
        from .shape import reshape

        return apply(op, (reshape(input, (1,)),), ((0,), False))
    return apply(op, (input,), ((d,), bool(keepdim)))


@documented(MAX_DIM, AMAX)
def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """``max(x)``: the largest entry (ties share the gradient, like ``amax``).
    ``max(x, dim, keepdim=False)``: a ``(values, indices)`` named tuple; the gradient goes
    to the returned index. ``max(x, other_tensor)``: elementwise ``maximum``."""
    if out is not None:  # PyTorch's out=: the result written into out (resized)
        return IN_PLACE.write_out(out, max(input, dim, keepdim, other=other), "max")
    if other is not None:  # max(input, other=t): elementwise, as PyTorch's overload
        if dim is not None:
            raise TypeError("max(): give either dim or other, not both")
        dim = other
    if isinstance(dim, Tensor):
        from .elementwise import maximum

        return maximum(input, dim)
    if dim is None:
        return amax(input)
    values, indices = _select_along(input, MAX_DIM, dim, keepdim, "max")
    return max_return(values, indices)


@documented(MIN_DIM, AMIN)
def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """``min(x)``, ``min(x, dim, keepdim)`` (values, indices) or ``min(x, other)``;
    see :func:`max`."""
    if out is not None:  # PyTorch's out=: the result written into out (resized)
        return IN_PLACE.write_out(out, min(input, dim, keepdim, other=other), "min")
    if other is not None:  # max(input, other=t): elementwise, as PyTorch's overload
        if dim is not None:
            raise TypeError("min(): give either dim or other, not both")
        dim = other
    if isinstance(dim, Tensor):
        from .elementwise import minimum

        return minimum(input, dim)
    if dim is None:
        return amin(input)
    values, indices = _select_along(input, MIN_DIM, dim, keepdim, "min")
    return min_return(values, indices)


def _arg_index(input, dim, keepdim, name):
    """argmax / argmin on the input's backend (an int64 tensor, no gradient)."""
    from .._tensor import wrap

    if isinstance(input, Tensor):
        data = input._data
    else:
        data = np.asarray(input)
        if data.dtype.kind in "OUSV":  # argmax(None) would be NumPy's index 0 of an object
            raise TypeError(f"{name}: argument 'input' must be a Tensor, not "
                            f"{type(input).__name__}")
    xp = backend_of(data).xp
    fn = getattr(xp, name)
    if dim is None:  # keepdim keeps every dim, of size 1 (PyTorch)
        index = xp.asarray(fn(xp.reshape(data, (-1,)), axis=0))
        return wrap(xp.reshape(index, (1,) * data.ndim) if keepdim else index)
    d = wrap_dim(dim, data.ndim, name)
    if data.ndim == 0:
        return wrap(xp.zeros((), dtype=xp.int64, **on_device_of(data)))
    return wrap(xp.asarray(fn(data, axis=d, keepdims=bool(keepdim))))


def argmax(input, dim=None, keepdim=False):
    """Index of the largest entry (flattened when ``dim`` is None); no gradient."""
    return _arg_index(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest entry (flattened when ``dim`` is None); no gradient."""
    return _arg_index(input, dim, keepdim, "argmin")


def _dim_or_unbiased(dim, unbiased):
    """``var(x, True)``: PyTorch's overload takes a positional bool as ``unbiased``."""
    if isinstance(dim, (bool, np.bool_)):
        return None, bool(dim)
    return dim, unbiased


def _correction(correction, unbiased):
    if unbiased is not None:
        return 1 if unbiased else 0
    return 1 if correction is None else correction


@documented(VAR)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with ``correction`` (Bessel's, 1, by default; ``unbiased=False``
    means 0)."""
    dim, unbiased = _dim_or_unbiased(dim, unbiased)
    return apply(VAR, (input,), (_dims(dim, _ndim(input), "var"),
                                 _correction(correction, unbiased),
                                 bool(keepdim)))


@documented(STD)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation over ``dim`` (see :func:`var`)."""
    dim, unbiased = _dim_or_unbiased(dim, unbiased)
    return apply(STD, (input,), (_dims(dim, _ndim(input), "std"),
                                 _correction(correction, unbiased),
                                 bool(keepdim)))


@documented(LOGSUMEXP)
def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x), dim))`` computed stably."""
    return apply(LOGSUMEXP, (input,), (_dims(dim, _ndim(input), 'logsumexp'), bool(keepdim)))


@documented(VECTOR_NORM)
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The p-norm ``(sum |x_i|^p)^(1/p)`` over ``dim`` (all entries when None); ``ord`` may be
    any real number, ``inf`` or ``-inf`` (``0`` counts non-zeros and has zero gradient)."""
    if dtype is not None:
        from .elementwise import to_dtype

        x = to_dtype(x, dtype)
    return apply(VECTOR_NORM, (x,), (float(ord), _dims(dim, _ndim(x), "vector_norm"),
                                      bool(keepdim)))


MATRIX_NORM = [None]  # filled by chainrule.linalg (a higher layer) with its matrix_norm


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: ``p="fro"`` or a number gives :func:`vector_norm` over ``dim``
    (all entries when None); ``p="nuc"`` the nuclear norm (the sum of the singular
    values, ``chainrule.linalg.matrix_norm``) over the two dims ``dim`` (the last two of a
    2-D input when None)."""
    p = number_arg(p, "norm", "p")
    if p == "fro":
        p = 2
    if p == "nuc":
        # chainrule.linalg sits above the ops: it registers its matrix_norm here
        matrix_norm = MATRIX_NORM[0]
        if matrix_norm is None:
            raise RuntimeError("norm: p='nuc' needs chainrule.linalg (import chainrule)")

        if dim is None:
            if _ndim(input) != 2:
                raise RuntimeError(f"norm: p='nuc' with dim=None needs a 2-D input, got "
                                   f"{_ndim(input)} dims (pass dim, two dims)")
            dim = (0, 1)
        if isinstance(dim, (int, np.integer)) or len(dim) != 2:
            raise RuntimeError("norm: p='nuc' needs dim to be a pair of dims")
        return matrix_norm(input, "nuc", tuple(dim), keepdim, dtype=dtype)
    if isinstance(p, str):
        raise ValueError(f"norm: p must be 'fro', 'nuc' or a number, got {p!r}")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# --- NaN-ignoring reductions, moments, cov / corrcoef, differences, integrals ------------
# Compositions of the primitives above and of the elementwise ones (their gradients follow
# from those), as PyTorch composes them.


def _nan_zeroed(input):
    from .elementwise import isnan, where

    return where(isnan(input), 0.0, input)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """:func:`sum` treating NaN as zero (their gradient is zero). Composition:
    ``sum(where(isnan(x), 0, x))``."""
    if not _is_float(input):
        return sum(input, dim, keepdim, dtype=dtype)
    return sum(_nan_zeroed(input), dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """:func:`mean` of the non-NaN entries (NaN where a slice has none). Composition:
    ``nansum(x) / count of non-NaN``."""
    from .elementwise import isnan, logical_not

    if not _is_float(input):
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                           f"dtype but got {input.dtype}")
    total = nansum(input, dim, keepdim, dtype=dtype)
    count = sum(logical_not(isnan(input)), dim, keepdim, dtype=total.dtype)  # dtype= kept
    with np.errstate(divide="ignore", invalid="ignore"):  # an all-NaN slice: NaN, silently
        return total / count


def _is_float(x):
    dt = x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype
    return dtype_kind(dt) in "fc"


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var(input, ...), mean(input, dim, keepdim))`` with :func:`var`'s arguments (a
    positional bool is ``unbiased``)."""
    dim, unbiased = _dim_or_unbiased(dim, unbiased)
    return (var(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std(input, ...), mean(input, dim, keepdim))`` (see :func:`var_mean`)."""
    dim, unbiased = _dim_or_unbiased(dim, unbiased)
    return (std(input, dim, unbiased, keepdim, correction=correction),
            mean(input, dim, keepdim))


def _weights(w, name, n_obs):
    from .._creation import as_tensor

    if w is None:
        return None
    w = w if isinstance(w, Tensor) else as_tensor(np.asarray(w))
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{w.ndim} dimensions")
    if w.numel() != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input, but got {w.numel()} != {n_obs}")
    return w


def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance matrix of the variables in the rows of ``input`` (observations in the
    columns; a 1-D input is one variable), as ``torch.cov``: integer frequency weights
    ``fweights``, observation weights ``aweights``, and ``correction`` (1: Bessel's).
    Composition of sums, a matmul and a division (PyTorch's own composition)."""
    from .shape import reshape, squeeze

    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.ndim} dimensions")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    n_obs = x.shape[1]
    fw = _weights(fweights, "fweights", n_obs)
    aw = _weights(aweights, "aweights", n_obs)
    if fw is not None:
        fd = fw._host()  # checked on the host (an explicit copy off a GPU)
        if fd.dtype.kind not in "iu":
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        if np.any(fd < 0):
            raise RuntimeError("cov(): fweights cannot be negative")
    if aw is not None:
        ad = aw._host()
        if ad.dtype.kind not in "f":
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        if np.any(ad < 0):
            raise RuntimeError("cov(): aweights cannot be negative")
    if fw is not None and dtype_kind(x.dtype) == "f":
        fw = fw.to(x.dtype)  # (the Array API does not promote an int array with a float one)
    w = fw
    if aw is not None:
        w = aw if w is None else w * aw
    if w is None:
        w_sum = n_obs
        avg = mean(x, 1)
    else:
        w_sum = sum(w)
        avg = sum(x * w, 1) / w_sum
    if w is None or correction == 0:
        norm_factor = w_sum - correction
    elif aw is None:
        norm_factor = w_sum - correction
    else:
        norm_factor = w_sum - correction * sum(w * aw) / w_sum
    nf = norm_factor._host() if isinstance(norm_factor, Tensor) else np.asarray(norm_factor)
    if nf <= 0:
        import warnings

        warnings.warn("cov(): degrees of freedom is <= 0", RuntimeWarning, stacklevel=2)
        norm_factor = 0.0 * norm_factor if isinstance(norm_factor, Tensor) else 0.0
    xc = x - reshape(avg, (-1, 1))
    from .shape import transpose

    c = xc @ transpose(xc * w if w is not None else xc, 0, 1)  # Tensor.__matmul__: mm
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c / norm_factor
    return squeeze(out)


def corrcoef(input):
    """Pearson correlation coefficients of the rows of ``input`` (``cov`` normalised by the
    standard deviations, clipped to [-1, 1] as ``torch.corrcoef``). Composition."""
    from .elementwise import clamp, sqrt
    from .shape import reshape

    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = sqrt(c.diagonal())
    c = c / reshape(d, (-1, 1))
    c = c / reshape(d, (1, -1))
    return clamp(c, -1, 1)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference ``x[i+1] - x[i]`` along ``dim``, after concatenating
    ``prepend`` / ``append`` along it (as ``torch.diff``). Composition of slices and a
    subtraction; a bool input gives ``!=`` (no gradient)."""
    from .rearrange import narrow
    from .shape import broadcast_to, cat

    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim, "diff")
    def as_part(extra):
        if not isinstance(extra, Tensor):
            from .._creation import as_tensor

            extra = as_tensor(np.asarray(extra, dtype=numpy_dtype(input.dtype)))
        if extra.ndim == 0:
            shape = list(input.shape)
            shape[d] = 1
            extra = broadcast_to(extra, tuple(shape))
        return extra

    parts = ([] if prepend is None else [as_part(prepend)]) + [input] + \
        ([] if append is None else [as_part(append)])
    x = cat(parts, dim=d) if len(parts) > 1 else input
    boolean = dtype_kind(x.dtype) == "b"
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1)
        if boolean:
            from .._tensor import wrap

            x = wrap(hi._data != lo._data)
        else:
            x = hi - lo
    if x is input and n == 0:  # a copy, as PyTorch's (which returns an empty dim's input)
        x = x.clone()
    return x


def _trapezoid_terms(y, x, dx, dim, name):
    from .rearrange import narrow
    from .shape import reshape

    d = wrap_dim(dim, y.ndim, name)
    m = y.shape[d]
    if m == 0:
        return None, d
    avg = (narrow(y, d, 1, m - 1) + narrow(y, d, 0, m - 1)) * 0.5
    if x is None:
        return avg * (1.0 if dx is None else dx), d
    if not isinstance(x, Tensor):
        from .._creation import as_tensor

        x = as_tensor(np.asarray(x, dtype=np.float64))
    if x.ndim == 1:
        if x.shape[0] != m:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = m - 1
        step = reshape(diff(x), tuple(shape))
    else:
        step = diff(x, dim=d - y.ndim if x.ndim != y.ndim else d)
    return avg * step, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: sample points ``x`` (1-D along ``dim``, or
    broadcasting with ``y``) or a constant spacing ``dx`` (1 by default). Composition."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid: pass either x or dx, not both")
    terms, d = _trapezoid_terms(y, x, dx, dim, "trapezoid")
    if terms is None:
        shape = tuple(n for i, n in enumerate(y.shape) if i != d)

        return zeros(shape, dtype=y.dtype, device=y.device)
    return sum(terms, d)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one entry fewer than ``y``).
    Composition: ``cumsum`` of the trapezoid terms."""
    from .scans import cumsum

    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid: pass either x or dx, not both")
    terms, d = _trapezoid_terms(y, x, dx, dim, "cumulative_trapezoid")
    if terms is None:  # no samples along dim: no running integral either (y's shape)
        return zeros(tuple(y.shape), dtype=y.dtype, device=y.device)
    return cumsum(terms, d)


def count_nonzero(input, dim=None):
    """Number of non-zero entries over ``dim`` (an int or tuple; all when None): an int64
    tensor, no gradient."""
    from .._tensor import wrap

    data = input._data if isinstance(input, Tensor) else np.asarray(input)
    xp = backend_of(data).xp
    dims = _dims(dim, data.ndim, "count_nonzero")
    return wrap(row_major(xp.astype(xp.sum(xp.astype(data != 0, xp.int64), axis=dims),
                                    xp.int64)))


aminmax_return = collections.namedtuple("aminmax", ["min", "max"])


def aminmax(input, *, dim=None, keepdim=False):
    """``(amin, amax)`` over ``dim`` (all entries when None) as an ``aminmax`` named tuple;
    ties share the gradient. Composition of ``amin`` and ``amax``."""
    if dim is None:
        return aminmax_return(amin(input, (), keepdim), amax(input, (), keepdim))
    if _ndim(input) > 0 and input.shape[wrap_dim(dim, _ndim(input), "aminmax")] == 0:
        raise IndexError("aminmax(): Expected reduction dim {} to have non-zero size."
                         .format(dim))
    return aminmax_return(amin(input, dim, keepdim), amax(input, dim, keepdim))


# --- NumPy's spellings: axis= for dim, keepdims= for keepdim (PyTorch accepts both) -----

_NOT_GIVEN = object()


def _numpy_spellings(fn):
    import functools

    @functools.wraps(fn)
    def wrapper(*args, axis=_NOT_GIVEN, keepdims=_NOT_GIVEN, **kwargs):
        if axis is not _NOT_GIVEN:
            if "dim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both 'dim' and its alias 'axis'")
            kwargs["dim"] = axis
        if keepdims is not _NOT_GIVEN:
            if "keepdim" in kwargs:
                raise TypeError(f"{fn.__name__}() got both 'keepdim' and its alias 'keepdims'")
            kwargs["keepdim"] = keepdims
        return fn(*args, **kwargs)

    return wrapper


sum, mean, prod, amax, amin, max, min, var, std, logsumexp, argmax, argmin, nansum, nanmean, \
    var_mean, std_mean = (_numpy_spellings(f) for f in (
        sum, mean, prod, amax, amin, max, min, var, std, logsumexp, argmax, argmin, nansum,
        nanmean, var_mean, std_mean))

__all__ += ["nansum", "nanmean", "var_mean", "std_mean", "cov", "corrcoef", "diff",
            "trapezoid", "trapz", "cumulative_trapezoid", "count_nonzero", "aminmax"]

for _name in ("nansum", "nanmean", "var_mean", "std_mean", "cov", "corrcoef", "diff",
              "trapezoid", "cumulative_trapezoid", "count_nonzero", "aminmax"):
    globals()[_name] = name_errors(globals()[_name], _name)
trapz = trapezoid
del _name
