"""The backend behind ``vmap``'s batched evaluation: a tensor's data may be a batch of
values (:class:`VBatched`, a :class:`chainrule._batched.Batched` stacked on a leading axis
that the tensor's shape hides). Every op then runs once on the whole batch:

- forward kernels compute through a namespace of Array API functions lifted to batches
  (elementwise functions align the logical dims; axis arguments skip the batch axis;
  NumPy's linalg broadcasts over it);
- derivative rules run on the batched namespace of :mod:`chainrule._batched`, the one the
  batched backward of ``jacrev`` uses, so a primitive's batching comes from its
  declaration.

A kernel or rule that is not lifted (a name missing here, a kernel that computes with
NumPy only, a rule that reads a batched value's numbers) runs once per sample on that
sample's rows, the results stacked (:func:`per_sample_rule`; PyTorch's per-op fallback).
What cannot run that way (a host copy of a batched value outside a kernel, results whose
shapes differ by sample) raises :class:`NotBatchable`; ``vmap`` then evaluates the
function once per sample instead, so a batched value never meets code that would mix its
samples.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from . import _batched as _b
from . import _ns
from ._batched import (
    Batched,
    DiagBatched,
    NotBatchable,
    _any_batched,
    _axes,
    _axis,
    _cat,
    _diag,
    _einsum,
    _expand,
    _index_put_batched,
    _lift,
    _matmul,
    _ndim,
    _permute,
    _squeeze,
    _stack,
    namespace,
)
from ._ns import RAW
from .backend import NUMPY, Backend, as_numpy, numpy_array, numpy_sum, register_backend


class VBatched(Batched):
    """A batch of values that is a tensor's data inside ``vmap``: a host copy of it raises
    :class:`NotBatchable` (it would mix the samples), so code that leaves the library sends
    ``vmap`` back to one evaluation per sample."""

    __slots__ = ()

    def __array__(self, dtype=None, copy=None):
        raise NotBatchable("a batched value inside vmap was converted to a NumPy array")

    device = "cpu"

    def __getitem__(self, index):
        return _v(Batched.__getitem__(self, index))

    def __setitem__(self, index, value):
        # the in-place layer writes a whole new value (``dest[...] = data``, data already
        # of dest's logical shape): each sample's rows take that sample's value
        if index is not Ellipsis and index != (Ellipsis,):
            raise NotBatchable("vmap: an in-place write into part of a batched value")
        if not self.data.flags.writeable:  # a read-only view of the batch (a broadcast)
            raise NotBatchable("vmap: an in-place write into a read-only batched view")
        if isinstance(value, Batched):
            value = _b._lift(value, self.ndim).data
        self.data[...] = value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # NumPy called on a batch (np.exp(x), ndarray + x): elementwise, each sample's
        # value; reductions and out= would mix or overwrite samples, so vmap evaluates
        # once per sample instead
        if method != "__call__" or "out" in kwargs or ufunc.nout != 1 or \
                _any_batched(kwargs.values()):
            raise NotBatchable(f"vmap: numpy.{ufunc.__name__}.{method} of a batched value")
        return _elementwise(ufunc)(*inputs, **kwargs)


def _v(x):
    """Batched results as VBatched (tuples too); other values as they are."""
    if isinstance(x, Batched) and not isinstance(x, VBatched):
        return VBatched(x.data)
    if isinstance(x, tuple):
        return tuple(_v(y) for y in x)
    return x


def _plain(x):
    return x.data if isinstance(x, Batched) else x


def _elementwise(fn):
    def f(*args, **kwargs):
        top = 0  # the most logical dims of any argument
        low = None  # the fewest of a batched one
        for a in args:
            if isinstance(a, Batched):
                k = a.ndim
                if low is None or k < low:
                    low = k
            else:
                k = _ndim(a)
            if k > top:
                top = k
        if low is None:
            return fn(*args, **kwargs)
        if low == top:  # every batched argument has the most dims: nothing to line up
            return VBatched(fn(*(a.data if isinstance(a, Batched) else a for a in args),
                               **kwargs))
        return VBatched(fn(*(_lift(a, top) if isinstance(a, Batched) else a for a in args),
                           **kwargs))
    return f


def _reduction(fn):
    def f(x, axis=None, keepdims=False, **kwargs):
        if not isinstance(x, Batched):
            return fn(x, axis=axis, keepdims=keepdims, **kwargs)
        return VBatched(fn(x.data, axis=_axes(axis, x.ndim), keepdims=keepdims, **kwargs))
    return f


def _on_data(fn):
    """A function of one array whose leading dims broadcast (NumPy's linalg)."""
    def f(*args, **kwargs):
        if not _any_batched(args):
            return fn(*args, **kwargs)
        n = max(_ndim(a) for a in args)
        return _v(_wrap_out(fn(*(_lift(a, n) if isinstance(a, Batched) else a
                                 for a in args), **kwargs)))
    return f


def _wrap_out(out):
    if isinstance(out, tuple):
        return tuple(_wrap_out(o) for o in out)
    return VBatched(np.asarray(out))


def _axis_fn(fn):
    """``fn(x, axis)`` with one logical axis."""
    def f(x, axis, *args, **kwargs):
        if not isinstance(x, Batched):
            return fn(x, axis, *args, **kwargs)
        return VBatched(fn(x.data, _axis(axis, x.ndim), *args, **kwargs))
    return f


def _moveaxis(x, source, destination):
    if not isinstance(x, Batched):
        return np.moveaxis(x, source, destination)
    return VBatched(np.moveaxis(x.data, _axes(source, x.ndim), _axes(destination, x.ndim)))


def _swapaxes(x, a, b):
    return _v(_b._transpose(x, a, b))


def _diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal as a view of the batch that can be written (NumPy's ``diagonal`` is
    read-only; the in-place layer writes a batched view's new value through it, as it does
    for the views that indexing makes), so ``y.diagonal().add_(1)`` updates ``y``."""
    if not isinstance(x, Batched) or isinstance(x, DiagBatched):
        return _v(_b._diagonal(x, offset, axis1, axis2))
    data = x.data
    a1, a2 = _axis(axis1, x.ndim), _axis(axis2, x.ndim)
    if not data.flags.writeable or a1 == a2:
        return _v(_b._diagonal(x, offset, axis1, axis2))
    index = [slice(None)] * data.ndim
    if offset >= 0:
        index[a2] = slice(min(offset, data.shape[a2]), None)
    else:
        index[a1] = slice(min(-offset, data.shape[a1]), None)
    planes = np.moveaxis(data[tuple(index)], (a1, a2), (-2, -1))
    n = min(planes.shape[-2:])
    view = np.lib.stride_tricks.as_strided(
        planes, planes.shape[:-2] + (n,), planes.strides[:-2] +
        (planes.strides[-2] + planes.strides[-1],))
    return VBatched(view)


def _flip(x, axis=None):
    if not isinstance(x, Batched):
        return np.flip(x, axis)
    return VBatched(np.flip(x.data, _axes(axis, x.ndim)))


def _triangle(fn):
    def f(x, k=0):
        if not isinstance(x, Batched):
            return fn(x, k=k)
        return VBatched(fn(x.data, k=k))
    return f


def _take_along_axis(x, indices, axis):
    B = x.data.shape[0] if isinstance(x, Batched) else indices.data.shape[0]
    full = [a.data if isinstance(a, Batched) else np.broadcast_to(a, (B,) + np.shape(a))
            for a in (x, indices)]
    return VBatched(np.take_along_axis(full[0], full[1], _axis(axis, _ndim(x))))


def _cumulative_prod(x, axis=None, **kwargs):
    if not isinstance(x, Batched):
        return np.cumulative_prod(x, axis=axis, **kwargs)
    return VBatched(np.cumulative_prod(x.data, axis=_axis(axis, x.ndim), **kwargs))


def _astype(x, dtype, copy=True):
    if not isinstance(x, Batched):
        return as_numpy(x).astype(dtype, copy=copy)
    return VBatched(x.data.astype(dtype, copy=copy))


def _asarray(x, dtype=None, copy=None, **kwargs):
    if not isinstance(x, Batched):
        return numpy_array(x, dtype=dtype, copy=True if copy else None)
    return VBatched(numpy_array(x.data, dtype=dtype, copy=bool(copy)))


def _like(fn):
    def f(x, *args, **kwargs):
        if not isinstance(x, Batched):
            return fn(x, *args, **kwargs)
        return VBatched(fn(x.data, *args, **kwargs))
    return f


def _index_put(x, indices, values, accumulate):
    if not (isinstance(x, Batched) or isinstance(values, Batched)):
        return NUMPY.xp.index_put(x, indices, values, accumulate)
    return _v(_index_put_batched(x, indices, values, accumulate))


def _namespace():
    from scipy import special

    np_xp = NUMPY.xp
    ns = {}
    for name in ("abs", "add", "subtract", "multiply", "divide", "pow", "negative", "exp",
                 "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sign",
                 "maximum", "minimum", "where", "clip", "isfinite", "isnan", "equal",
                 "not_equal", "less", "less_equal", "greater", "greater_equal",
                 "logical_and", "logical_or", "logical_not", "square", "floor", "ceil"):
        ns[name] = _elementwise(getattr(np, name))
    ns["expit"] = _elementwise(special.expit)
    ns["erf"] = _elementwise(special.erf)
    for name in ("sum", "mean", "prod", "max", "min", "var", "std", "any", "all"):
        ns[name] = _reduction(numpy_sum if name == "sum" else getattr(np, name))
    ns.update(
        reshape=lambda x, shape, **kwargs: _v(_b._reshape(x, shape)),
        broadcast_to=lambda x, shape: _v(_expand(x, shape)),
        permute_dims=lambda x, axes: _v(_permute(x, axes)),
        expand_dims=lambda x, axis: _v(_b._unsqueeze(x, axis)),
        squeeze=lambda x, axis=None: _v(_squeeze(x, axis)), moveaxis=_moveaxis,
        swapaxes=_swapaxes, flip=_flip, matrix_transpose=lambda x: _swapaxes(x, -1, -2),
        matmul=lambda a, b: _v(_matmul(a, b)), einsum=lambda eq, *ops: _v(_einsum(eq, *ops)),
        concat=lambda xs, axis=0: _v(_cat(xs, axis)),
        stack=lambda xs, axis=0: _v(_stack(xs, axis)),
        tril=_triangle(np.tril), triu=_triangle(np.triu), diagonal=_diagonal,
        trace=lambda x, *args, **kwargs: _v(_b._trace(x, *args, **kwargs)),
        diag=lambda v, k=0: _v(_diag(v, k)), take_along_axis=_take_along_axis,
        cumulative_prod=_cumulative_prod, astype=_astype, asarray=_asarray,
        zeros_like=_like(np.zeros_like), ones_like=_like(np.ones_like),
        index_put=_index_put, solve_triangular=_on_data(np_xp.solve_triangular),
        expm=_on_data(np_xp.expm), argmax=_axis_fn(np.argmax), argmin=_axis_fn(np.argmin),
    )
    for name in ("zeros", "ones", "eye", "arange", "full", "bool", "int64", "float32",
                 "float64", "finfo", "iinfo", "empty"):
        ns[name] = getattr(np, name)
    ns["int"] = int
    linalg = {name: _on_data(getattr(np.linalg, name)) for name in (
        "inv", "solve", "det", "slogdet", "cholesky", "qr", "eigh", "svd", "svdvals", "pinv",
        "matrix_transpose")}
    linalg["diagonal"] = lambda x, offset=0: _diagonal(x, offset, -2, -1)
    ns["linalg"] = SimpleNamespace(**linalg)
    return ns


class _LiftedNamespace(SimpleNamespace):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotBatchable(f"vmap: {name} has no batched version here")


class _VmapBackend(Backend):
    """``rules()`` is the batched rule namespace; a kernel without a batched version (or a
    NumPy-only one) raises NotBatchable."""

    def __init__(self):
        super().__init__("vmap", SimpleNamespace(), providers=_namespace(),
                         to_numpy=_no_host)
        self.xp = _LiftedNamespace(**{k: v for k, v in vars(self.xp).items()})
        self.rules = namespace
        self._batched_kernels = {}

    def kernel(self, op):
        k = self._batched_kernels.get(op.name)
        if k is None:
            k = self._batched_kernels[op.name] = self._batched_kernel(op)
        return k

    def _batched_kernel(self, op):
        looped = _per_sample(NUMPY.kernel(op), op.name)
        try:
            k = super().kernel(op)
        except NotBatchable:  # a kernel named by a function the batch namespace lacks
            return looped
        if op.pointwise:  # entry by entry: NumPy's kernel runs on the stacked batch as it is
            k = _pointwise(NUMPY.kernel(op), k)

        def batched(*args, **kwargs):
            try:
                return _v(k(*args, **kwargs))
            except NotImplementedError:  # NotBatchable too: a kernel computing with NumPy
                return looped(*args, **kwargs)  # only, or with a function not lifted here
        return batched


def _per_sample(numpy_kernel, name):
    """The kernel of an op without a batched version: its NumPy kernel once per sample (the
    batched arguments' rows, the others as they are), the results stacked, as PyTorch's
    vmap fallback for an op without a batching rule. A kernel is a pure function of its
    arguments, so this is each sample's own result. Results whose shapes differ between
    samples (values decide them, as ``nonzero``'s) raise NotBatchable: vmap then evaluates
    the whole function once per sample."""
    def f(*args, **kwargs):
        B = _size((args, tuple(kwargs.values())))
        if B is None:
            return numpy_kernel(*args, **kwargs)
        rows = [numpy_kernel(*_sample(args, b),
                             **{key: _sample(v, b) for key, v in kwargs.items()})
                for b in range(B)]
        return _stacked(rows, name)
    return f


def _stacked(rows, name):
    first = rows[0]
    if isinstance(first, (tuple, list)):
        return type(first)(_stacked(list(col), name) for col in zip(*rows))
    if first is None or isinstance(first, (bool, int, float, complex, str, np.dtype)):
        if any(r != first for r in rows):
            raise NotBatchable(f"vmap: {name} gives a different Python value per sample")
        return first
    rows = [np.asarray(r) for r in rows]
    if any(r.shape != rows[0].shape for r in rows):
        raise NotBatchable(f"vmap: {name} gives results of different shapes per sample")
    return VBatched(np.stack(rows))


def _pointwise(numpy_kernel, lifted):
    """A pointwise op's batched kernel: its NumPy kernel on the stacked data when the
    attrs are numbers (an array attr could broadcast into the batch axis: then ``lifted``,
    the kernel on the lifted namespace)."""
    def f(x, *attrs):
        if isinstance(x, Batched) and all(a is None or isinstance(a, (int, float, np.dtype, type))
                                          for a in attrs):
            return VBatched(numpy_kernel(x.data, *attrs))
        return lifted(x, *attrs)
    return f


def _sample(x, b):
    """Sample ``b`` of a value that may be (or hold, in tuples and lists) batched values."""
    if isinstance(x, Batched):
        return x.data[b]
    if isinstance(x, (tuple, list)):
        return type(x)(_sample(y, b) for y in x)
    return x


def _size(x):
    """The batch size of the first batched value in ``x`` (nested), or None."""
    if isinstance(x, Batched):
        return x.data.shape[0]
    if isinstance(x, (tuple, list)):
        for y in x:
            B = _size(y)
            if B is not None:
                return B
    return None


def per_sample_rule(rule, g, saved):
    """A derivative rule without a batched version (it reads a batched value's numbers, or
    calls a function not lifted here): ``rule`` once per sample, on that sample's cotangent
    and saved values with NumPy's rule namespace, the input cotangents stacked. Each
    sample's result is the rule's own, as in one evaluation per sample."""
    B = _size((g, saved))
    if B is None:
        raise NotBatchable("vmap: a derivative rule without a batched version")
    return _stacked([rule(RAW, _sample(g, b), _sample(saved, b)) for b in range(B)],
                    "a derivative rule")


_ns.BATCHING.per_sample = per_sample_rule


def _no_host(x):
    raise NotBatchable("vmap: a batched value cannot be copied to the host inside vmap")


VMAP = _VmapBackend()
for _cls in (Batched, VBatched, DiagBatched):
    register_backend(_cls, VMAP)
