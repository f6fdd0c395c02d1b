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

from .._dispatch import apply
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import backend_of, on_device_of, xp_kernel
from ._dims import wrap_dim, wrap_dims

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
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
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

SUM = defop(
    "sum", xp_kernel(lambda xp, x, dim, keepdim: xp.sum(x, axis=dim, keepdims=keepdim)), ("self",),
    attrs=("dim", "keepdim"),
    vjp={"self": lambda F, g, self_shape, dim, keepdim:
         _unreduce(F, g, self_shape, dim, keepdim)},
    jvp={"self": lambda F, t, dim, keepdim: F.sum(t, dim, keepdim)},
    math={"self": "grad_x = expand(grad)", "out": "dy = sum(dx)"},
    source="linear map: its VJP is the transpose, a broadcast",
)
MEAN = defop(
    "mean",
    xp_kernel(lambda xp, x, dim, keepdim: xp.mean(x, axis=dim, keepdims=keepdim)), ("self",),
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
    xp_kernel(lambda xp, x, dim, keepdim: xp.prod(x, axis=dim, keepdims=keepdim)), ("self",),
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
        name, xp_kernel(lambda xp, x, dim, keepdim: getattr(xp, kernel)(
            x, axis=dim, keepdims=keepdim)), ("self",),
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
        return (getattr(xp, valname)(x, axis=d, keepdims=keepdim),
                getattr(xp, argname)(x, axis=d, keepdims=keepdim))

    return forward


def _onehot(F, indices, shape, dim, keepdim, dtype):
    """Mask of the input's shape (in ``dtype``), 1 at the selected index along ``dim``."""
    (d,) = dim
    if keepdim:
        indices = F.squeeze(indices, (d,))
    return F.onehot(indices, shape[d], d, dtype)


def _max_vjp(F, g, self_shape, out, dim, keepdim):
    return _unreduce(F, g[0], self_shape, dim, keepdim) * _onehot(F, out[1], self_shape, dim,
                                                                  keepdim, g[0].dtype)


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
    "var", xp_kernel(lambda xp, x, dim, correction, keepdim: xp.var(
        x, axis=dim, correction=correction, keepdims=keepdim)),
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
    "std", xp_kernel(lambda xp, x, dim, correction, keepdim: xp.std(
        x, axis=dim, correction=correction, keepdims=keepdim)),
    ("self",), attrs=("dim", "correction", "keepdim"),
    vjp={"self": _std_vjp}, jvp={"self": _std_jvp},
    math={"self": "grad_x = grad * (x - mean(x)) / ((n - correction) std)  (0 where std = 0)",
          "out": "dy = sum((x - mean) dx) / ((n - correction) std)"},
    source="chain rule through sqrt(var); zero where std = 0 as in PyTorch's std_backward",
)


def _logsumexp(xp, x, dim, keepdim):
    # shifted by the finite maximum; all -inf gives -inf, +inf or NaN propagate
    m = xp.max(x, axis=dim, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    s = xp.log(xp.sum(xp.exp(x - m), axis=dim, keepdims=keepdim))
    return s + xp.reshape(m, s.shape)


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
)


@xp_kernel
def _vector_norm(xp, x, ord, dim, keepdim):
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
)


# --- public functions ----------------------------------------------------------------


@documented(SUM)
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (int, tuple, or None for all). Shape: the input's with ``dim``
    removed (kept as 1 with ``keepdim``)."""
    if dtype is not None:
        from .elementwise import to_dtype

        input = to_dtype(input, dtype)
    return apply(SUM, (input,), (_dims(dim, _ndim(input), 'sum'), bool(keepdim)))


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
    return apply(PROD, (input,), (_dims(dim, _ndim(input), 'prod'), bool(keepdim)))


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
def max(input, dim=None, keepdim=False):
    """``max(x)``: the largest entry (ties share the gradient, like ``amax``).
    ``max(x, dim, keepdim=False)``: a ``(values, indices)`` named tuple; the gradient goes
    to the returned index. ``max(x, other_tensor)``: elementwise ``maximum``."""
    if isinstance(dim, Tensor):
        from .elementwise import maximum

        return maximum(input, dim)
    if dim is None:
        return amax(input)
    values, indices = _select_along(input, MAX_DIM, dim, keepdim, "max")
    return max_return(values, indices)


@documented(MIN_DIM, AMIN)
def min(input, dim=None, keepdim=False):
    """``min(x)``, ``min(x, dim, keepdim)`` (values, indices) or ``min(x, other)``;
    see :func:`max`."""
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

    data = input._data if isinstance(input, Tensor) else np.asarray(input)
    xp = backend_of(data).xp
    fn = getattr(xp, name)
    if dim is None:
        return wrap(xp.asarray(fn(xp.reshape(data, (-1,)), axis=0)))
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


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: ``p="fro"`` or a number gives :func:`vector_norm` over ``dim``
    (all entries when None). Matrix norms (``"nuc"``) are in ``chainrule.linalg``."""
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise NotImplementedError(
            f"norm: p={p!r} is a matrix norm; use chainrule.linalg.matrix_norm"
        )
    return vector_norm(input, p, dim, keepdim, dtype=dtype)
