"""A batch of cotangents (or tangents) carried through the unchanged derivative rules.

``jacrev`` needs one VJP per row of the Jacobian and ``jacfwd`` one JVP per column. Instead
of one backward (forward) pass each, the rules run once on a :class:`Batched` value: ``B``
cotangents stacked along a leading axis, ``data`` of shape ``(B, *shape)``, that presents
itself to a rule as one value of the *logical* shape ``shape``. Its operators broadcast
against plain arrays on the logical dims, and :data:`BATCHED` has every name of the rule
namespace :data:`chainrule._ns.RAW`, with ``dim``/``axis`` arguments shifted past the batch
axis, shapes prefixed with ``B``, a batch letter in einsum equations. So a rule such as
``F.matmul(g, F.mT(mat2))`` or ``F.index_put(F.zeros(shape, g.dtype), index, g, True)``
gives all ``B`` results at once when ``g`` is Batched and the saved primals are plain.

A function of :data:`BATCHED` called with no Batched argument is RAW's. Names registered
later (``chainrule._ns.register``, the linalg helpers) are covered too: those known to
broadcast over leading batch dimensions run once on the stacked data, any other runs RAW
once per row and stacks the results (correct, not vectorized).

Public helpers, used by ``chainrule.func``: :func:`vjp_rows` (every row of ``u^T J`` for a
batch of cotangents ``u`` in one backward pass) and :func:`jvp_columns` (every column of
``J v`` for a batch of tangents ``v`` in one forward pass). Where the batched pass cannot
run (a custom ``autograd.Function`` or a hook in the graph: NotImplementedError), or raises
(a rule's error path, written for one cotangent), they redo the work one pass per
row/column, so they give exactly the answer, or the error, of ``B`` separate passes.

Rules that look at a cotangent's numbers (``np.asarray(g)``, as the linalg degeneracy
checks do) see the rows stacked on a leading axis; that is right for elementwise tests and
reductions over trailing axes. A plain array derived that way must not be combined with
Batched values (its batch axis would count as a logical dim).
"""

from __future__ import annotations

import gc
import math
import string
import threading
import weakref
from types import SimpleNamespace

import numpy as np

from . import _ns
from ._ns import RAW, NotBatchable
from ._tensor import Tensor
from .backend import as_numpy
from .ops.einsum import parse as _parse_einsum
from .ops.indexing import _index_put
from .ops.nn import log_softmax_array, softmax_array

__all__ = ["Batched", "BATCHED", "NotBatchable", "namespace"]

_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


_VMAP = threading.local()  # .depth > 0 while vmap evaluates on batched values (this thread)


def in_vmap_evaluation():
    """Whether a batched vmap evaluation is running in this thread (an inner vmap then
    evaluates per sample, so the two batches never meet in one elementwise op)."""
    return getattr(_VMAP, "depth", 0) > 0


def in_user_vmap():
    """Whether a ``chainrule.func.vmap`` call is running in this thread (batched or one
    sample at a time): custom Functions then need a vmap rule, as in PyTorch."""
    return getattr(_VMAP, "user", 0) > 0


class _Count:
    """A context manager counting, per thread, how deep inside it the code runs."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        setattr(_VMAP, self.name, getattr(_VMAP, self.name, 0) + 1)

    def __exit__(self, *exc):
        setattr(_VMAP, self.name, getattr(_VMAP, self.name) - 1)
        return False


def _base(array):
    while isinstance(getattr(array, "base", None), np.ndarray):
        array = array.base
    return array


class WriteJournal:
    """The in-place writes made while ``vmap`` evaluates ``func``
    (:func:`chainrule._inplace.check` notes each before it happens): which tensor, and the
    memory it writes (its data's base array, with a copy of its values before).

    PyTorch's vmap runs ``func`` once, so an update of a tensor made before the call (one
    ``func`` closed over) happens once. Where chainrule evaluates ``func`` once per sample
    (or abandons a batched attempt for that), such an update would happen once per sample,
    silently; :meth:`refuse` puts the memory back as it was before the call (values and
    version counters) and raises RuntimeError instead.
    """

    def __init__(self):
        self.memory = {}  # id(base) -> [weak reference, values before, version list, version]
        self.tensors = {}  # id(tensor) -> weak reference, for the tensors written and roots

    def note(self, t):
        """``t`` is about to be written in place."""
        data = t._data
        array = _base(data.data if isinstance(data, Batched) else data)
        owner = array if isinstance(array, np.ndarray) else t
        if id(owner) not in self.memory:
            before = array.copy() if owner is array else \
                data if isinstance(data, np.generic) else None
            self.memory[id(owner)] = [weakref.ref(owner), before, t._vc, t._vc[0]]
        root = t._extra.get("view_of") if t._extra else None
        for x in (t, root):
            if x is not None and id(x) not in self.tensors:
                self.tensors[id(x)] = weakref.ref(x)

    def refuse(self, why, own=(), by_memory=True):
        """After an evaluation whose own objects are gone: raise when it wrote a tensor from
        outside it, after putting all the memory written back.

        ``by_memory`` (a batched attempt, about to be redone per sample): a base array still
        alive is from outside; all are put back (the mapped inputs' too: the samples write
        their rows again), and those other than the arrays ``own`` (the mapped inputs')
        raise. Otherwise (the per-sample evaluations done; their results' graphs may keep
        temporaries' memory alive): a tensor written (or the root of a view written) still
        alive other than the tensors ``own`` (the mapped inputs, the outputs) raises.
        ``why`` says why ``func`` was evaluated per sample.
        """
        if not self.memory:
            return
        if by_memory:
            mine = {id(_base(a)) for a in own}
            live = lambda: [k for k, e in self.memory.items()  # noqa: E731
                            if k not in mine and e[0]() is not None]
        else:
            mine = {id(t) for t in own}
            live = lambda: [k for k, r in self.tensors.items()  # noqa: E731
                            if k not in mine and r() is not None]
        if live():
            gc.collect()  # temporaries of the evaluation held only by reference cycles
        outside = live()
        if by_memory or outside:
            for e in self.memory.values():
                owner, before = e[0](), e[1]
                if owner is None or before is None:
                    continue  # gone, or another library's memory (not copied)
                if isinstance(owner, np.ndarray):
                    owner[...] = before
                else:
                    owner._data = before
                e[2][0] = e[3]
        if outside:
            raise RuntimeError(
                f"vmap: func updated in place a tensor it did not create (one it closed "
                f"over, or an input with in_dims None). chainrule evaluates this call once "
                f"per sample ({why}), which would repeat that update for every sample, "
                f"where PyTorch's vmap updates it once; the tensor is left as it was before "
                f"the call. Update it outside the vmapped function, or avoid what stops "
                f"batching.")


def write_journal():
    """The :class:`WriteJournal` of this thread's batched vmap attempt, or None."""
    return getattr(_VMAP, "journal", None)


def set_write_journal(journal):
    """Make ``journal`` this thread's (None: none); returns the one it replaces."""
    before = getattr(_VMAP, "journal", None)
    _VMAP.journal = journal
    return before


def user_vmap():
    """A context manager marking a ``chainrule.func.vmap`` call in this thread."""
    return _Count("user")


def vmap_evaluation():
    """A context manager: batched values may not be copied to the host inside it."""
    return _Count("depth")


class Batched:
    """``B`` values of one logical shape, stacked: ``data`` has shape ``(B, *shape)``.

    ``shape``, ``ndim`` and ``size`` describe one value (the batch axis is hidden). Operators
    broadcast with NumPy's rules on the logical dims against plain arrays, scalars and other
    Batched values (of the same ``B``); indexing applies to the logical dims. NumPy
    functions given a Batched see ``data`` (``np.asarray``), i.e. the rows stacked on a
    leading axis, which broadcasts right-aligned like the logical value.
    """

    __slots__ = ("data",)
    __array_ufunc__ = None  # `ndarray op Batched` defers to Batched's reflected operator
    __hash__ = None

    def __init__(self, data):
        self.data = data

    @property
    def shape(self):
        return self.data.shape[1:]

    @property
    def ndim(self):
        return self.data.ndim - 1

    @property
    def size(self):
        return math.prod(self.data.shape[1:])

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def batch_size(self):
        return self.data.shape[0]

    @property
    def device(self):
        """The device of the stacked data (an op moving index arrays beside its input's
        data asks for it)."""
        return getattr(self.data, "device", "cpu")

    def __len__(self):
        if self.data.ndim < 2:
            raise TypeError("len() of a 0-d Batched value")
        return self.data.shape[1]

    def __repr__(self):
        return f"Batched(batch_size={self.data.shape[0]}, shape={self.shape}, dtype={self.dtype})"

    def __array__(self, dtype=None, copy=None):
        if getattr(_VMAP, "depth", 0):
            raise NotBatchable("vmap: a batched value was converted to a NumPy array (it "
                               "would mix the samples)")
        if copy:
            return np.array(self.data, dtype=dtype, copy=True)
        return self.data if dtype is None else self.data.astype(dtype, copy=False)

    def __bool__(self):
        raise TypeError("the truth value of a Batched value is ambiguous")

    def shares_memory(self, other):
        """Whether this batch's stack is a view of ``other``'s (a view op's result inside
        vmap, e.g. a reshape that did not copy: an in-place update through it must then
        rewrite its base's history, as for plain arrays)."""
        if not isinstance(other, Batched) or isinstance(self, DiagBatched):
            return False
        data = self.data
        return (isinstance(data, np.ndarray) or getattr(data, "numpy_like", False)) and \
            data.base is not None and \
            np.may_share_memory(data, other.data)

    def rows(self, shape=None, dtype=None):
        """A fresh array ``(B, *shape)`` (default: the logical shape) of the rows, broadcast
        to ``shape`` and cast to ``dtype``."""
        shape = self.shape if shape is None else tuple(shape)
        data = np.broadcast_to(_lift(self, len(shape)), self.data.shape[:1] + shape)
        return np.array(data, dtype=dtype or self.data.dtype)

    def __getitem__(self, index):
        return _getitem(self, index)

    def __neg__(self):
        return Batched(-self.data)

    def __pos__(self):
        return self

    def __abs__(self):
        return Batched(np.abs(self.data))

    def __invert__(self):
        return Batched(~self.data)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)


class DiagBatched(Batched):
    """The batch ``(v_b e_b)_b`` of a vector of length ``n``: row ``b`` is ``v_b`` times the
    ``b``-th unit vector, i.e. the rows of ``diag(v)``. These are the one-hot seeds of a
    Jacobian. They stay the vector ``v`` through products with plain vectors and through
    ``matrix @ seed`` / ``seed @ matrix`` (``O(n^2)`` instead of a GEMM); any other use sees
    the materialized rows ``diag(v)``, so results never depend on this shortcut.
    """

    __slots__ = ("v", "_rows")

    def __init__(self, v):
        self.v = v
        self._rows = None

    @property
    def data(self):
        if self._rows is None:
            self._rows = np.diag(self.v)
        return self._rows

    @property
    def device(self):
        return getattr(self.v, "device", "cpu")

    @property
    def shape(self):
        return self.v.shape

    @property
    def ndim(self):
        return 1

    @property
    def size(self):
        return self.v.size

    @property
    def dtype(self):
        return self.v.dtype

    @property
    def batch_size(self):
        return self.v.shape[0]

    def _scaled(self, other, op):
        """``op(self, other)`` as a DiagBatched when ``other`` is a plain vector/scalar that
        scales each row's single non-zero; None otherwise."""
        if isinstance(other, Batched) or isinstance(other, Tensor):
            return None
        o = np.asarray(other)
        if o.ndim == 0 or o.shape == self.v.shape:
            with np.errstate(all="ignore"):
                zero = op(np.zeros((), self.v.dtype), o)
            if np.all(zero == 0):  # off-diagonal zeros stay zero
                return DiagBatched(op(self.v, o))
        return None

    def __mul__(self, other):
        out = self._scaled(other, np.multiply)
        return Batched.__mul__(self, other) if out is None else out

    def __rmul__(self, other):
        out = self._scaled(other, np.multiply)
        return Batched.__rmul__(self, other) if out is None else out

    def __truediv__(self, other):
        out = self._scaled(other, np.true_divide)
        return Batched.__truediv__(self, other) if out is None else out

    def __neg__(self):
        return DiagBatched(-self.v)


def _lift(x, n):
    """``x.data`` with size-1 axes after the batch axis, so its logical dims number ``n``
    (it then lines up right-aligned with plain operands of up to ``n`` dims)."""
    d = x.data
    k = n - d.ndim + 1
    if k <= 0:
        return d
    return d.reshape(d.shape[:1] + (1,) * k + d.shape[1:])


def _no_tensors(other):
    if isinstance(other, Tensor):
        raise TypeError("a Batched value does not combine with a Tensor (batched cotangents "
                        "and tangents run on arrays, not on a recorded graph)")


def _binary(op):
    def forward(self, other):
        d = self.data
        if isinstance(other, Batched):
            o = other.data
            if d.ndim == o.ndim:  # the common case: nothing to line up
                return Batched(op(d, o))
            n = max(d.ndim, o.ndim) - 1
            return Batched(op(_lift(self, n), _lift(other, n)))
        c = other.__class__
        if c is float or c is int:
            return Batched(op(d, other))
        _no_tensors(other)
        return Batched(op(_lift(self, _ndim(other)), other))

    def reflected(self, other):
        c = other.__class__
        if c is float or c is int:
            return Batched(op(other, self.data))
        _no_tensors(other)
        return Batched(op(other, _lift(self, _ndim(other))))

    return forward, reflected


for _name, _op in (
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide),
    ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
    ("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor),
):
    _f, _r = _binary(_op)
    setattr(Batched, f"__{_name}__", _f)
    setattr(Batched, f"__r{_name}__", _r)
for _name, _op in (("lt", np.less), ("le", np.less_equal), ("gt", np.greater),
                   ("ge", np.greater_equal), ("eq", np.equal), ("ne", np.not_equal)):
    setattr(Batched, f"__{_name}__", _binary(_op)[0])
del _name, _op, _f, _r


# --- indexing -----------------------------------------------------------------------------


def _explicit_index(index, ndim):
    """``index`` as a tuple naming every one of ``ndim`` dims (Ellipsis spelled out)."""
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(i._data if isinstance(i, Tensor) else np.asarray(i) if isinstance(i, list)
                  else i for i in index)
    used = 0
    for i in index:
        if i is None or i is Ellipsis:
            continue
        if isinstance(i, np.ndarray) and i.dtype == bool:
            used += i.ndim
        elif not isinstance(i, (bool, np.bool_)):
            used += 1
    fill = (slice(None),) * max(ndim - used, 0)
    for k, i in enumerate(index):
        if i is Ellipsis:
            return index[:k] + fill + index[k + 1:]
    return index + fill


def _is_basic(index):
    if not isinstance(index, tuple):
        index = (index,)
    return all(isinstance(i, _BASIC) and not isinstance(i, bool) for i in index)


def _getitem(x, index):
    if _is_basic(index):  # the batch axis is a leading slice
        if not isinstance(index, tuple):
            index = (index,)
        return Batched(x.data[(slice(None),) + index])
    # Advanced indices may move their dims to the front: index with the batch axis last
    # (a trailing slice stays last whatever the advanced indices do), then move it back.
    moved = np.moveaxis(x.data, 0, -1)
    out = moved[_explicit_index(index, x.ndim) + (slice(None),)]
    return Batched(np.moveaxis(out, -1, 0))


def _index_put_batched(x, indices, values, accumulate):
    B = _batch_size((x, values))
    if isinstance(x, Batched):
        out = np.array(x.data, copy=True)
    else:
        x = np.asarray(x)
        out = np.empty((B,) + x.shape, dtype=x.dtype)
        out[...] = x
    shape = out.shape[1:]
    if _is_basic(indices):  # a view; no index repeats, so accumulating is adding
        index = indices if isinstance(indices, tuple) else (indices,)
        target = out[(slice(None),) + index]
        vals = values
        if isinstance(values, Batched):
            extra = values.ndim - (target.ndim - 1)
            if extra > 0 and all(n == 1 for n in values.shape[:extra]):
                # leading size-1 dims of the values beyond the target's are dropped, as
                # NumPy's (and PyTorch's) assignment does (``x[0] = v`` with v of shape (1,))
                vals = values.data.reshape(values.data.shape[:1] + values.shape[extra:])
            else:
                vals = _lift(values, target.ndim - 1)
        if accumulate:
            target += vals
        else:
            target[...] = vals
        return Batched(out)
    view = np.moveaxis(out, 0, -1)
    index = _explicit_index(indices, len(shape)) + (slice(None),)
    if isinstance(values, Batched):
        vals = np.moveaxis(values.data, 0, -1)
    else:
        vals = np.expand_dims(np.asarray(values), -1)
    if accumulate:
        np.add.at(view, index, vals)
    else:
        view[index] = vals
    return Batched(out)


# --- helpers of the namespace ---------------------------------------------------------------


def _batch_size(args):
    for a in args:
        if isinstance(a, Batched):
            return a.data.shape[0]
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Batched):
                    return b.data.shape[0]
    return None


def _any_batched(args):
    for a in args:
        if isinstance(a, Batched):
            return True
    return False


def _full(x, B):
    """The data of ``x`` with a batch axis: Batched data, or a plain value broadcast."""
    if isinstance(x, Batched):
        return x.data
    x = np.asarray(x)
    return np.broadcast_to(x, (B,) + x.shape)


_AxisError = getattr(np, "exceptions", np).AxisError


def _axis(a, ndim):
    """A logical axis (possibly negative) as an axis of the data (past the batch axis)."""
    a = int(a)
    if not -ndim <= a < ndim:
        raise _AxisError(a, ndim)
    return a % ndim + 1


def _axes(dim, ndim):
    """Logical axes (None: all; an int; a tuple) as data axes."""
    if dim is None:
        return tuple(range(1, ndim + 1))
    if isinstance(dim, (int, np.integer)):
        return _axis(dim, ndim)
    return tuple(_axis(d, ndim) for d in dim)


def _ndim(x):
    c = x.__class__
    if c is float or c is int:
        return 0
    if c is np.ndarray:
        return x.ndim
    return x.ndim if isinstance(x, Batched) else np.ndim(x)


def _unary(fn, raw=None):
    raw = raw or fn

    def f(x, *args, **kwargs):
        if isinstance(x, Batched):
            return Batched(fn(x.data, *args, **kwargs))
        return raw(x, *args, **kwargs)

    f.__name__ = getattr(raw, "__name__", "f")
    return f


def _elementwise(raw):
    """An n-ary elementwise function: Batched arguments lifted to a common logical ndim."""

    def f(*args):
        if not _any_batched(args):
            return raw(*args)
        n = max(_ndim(a) for a in args)
        return Batched(raw(*(_lift(a, n) if isinstance(a, Batched) else a for a in args)))

    return f


# --- the vectorized functions ---------------------------------------------------------------


def _reshape(x, shape):
    if not isinstance(x, Batched):
        return np.reshape(x, shape)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return Batched(x.data.reshape(x.data.shape[:1] + shape))


def _expand(x, shape):
    if not isinstance(x, Batched):
        return np.broadcast_to(x, shape)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return Batched(np.broadcast_to(_lift(x, len(shape)), x.data.shape[:1] + shape))


def _unsqueeze(x, axis):
    if not isinstance(x, Batched):
        return np.expand_dims(x, axis)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    n = x.ndim + len(axes)
    return Batched(np.expand_dims(x.data, tuple(_axis(a, n) for a in axes)))


def _squeeze(x, axis=None):
    if not isinstance(x, Batched):
        return np.squeeze(x, axis)
    if axis is None:
        axes = tuple(i + 1 for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = _axes((axis,) if isinstance(axis, (int, np.integer)) else axis, x.ndim)
    return Batched(np.squeeze(x.data, axes))


def _transpose(x, axis1, axis2):
    if not isinstance(x, Batched):
        return np.swapaxes(x, axis1, axis2)
    return Batched(np.swapaxes(x.data, _axis(axis1, x.ndim), _axis(axis2, x.ndim)))


def _permute(x, axes=None):
    if not isinstance(x, Batched):
        return np.transpose(x, axes)
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return Batched(np.transpose(x.data, (0,) + tuple(_axis(a, x.ndim) for a in axes)))


def _mT(x):
    if not isinstance(x, Batched):
        return np.swapaxes(x, -1, -2)
    return Batched(np.swapaxes(x.data, -1, -2))


def _reduction(raw, kernel):
    def f(x, dim, keepdim):
        if not isinstance(x, Batched):
            return raw(x, dim, keepdim)
        return Batched(kernel(x.data, axis=_axes(dim, x.ndim), keepdims=keepdim))

    return f


def _prod_others_batched(x, dim):
    if not isinstance(x, Batched):
        return RAW.prod_others(x, dim)
    axes = _axes(dim, x.ndim)
    return Batched(RAW.prod_others(x.data, (axes,) if isinstance(axes, int) else axes))


def _rows2d(x):
    """``x`` as a matrix (everything but the last axis, last axis)."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _matmul(a, b):
    """NumPy's matmul on the logical dims (1-D operands promoted, batch dims broadcast)."""
    if isinstance(b, DiagBatched) and not isinstance(a, Batched) and np.ndim(a) == 2:
        return Batched((np.asarray(a) * b.v).T)  # row b: A[:, b] v_b
    if isinstance(a, DiagBatched) and not isinstance(b, Batched) and np.ndim(b) == 2:
        return Batched(a.v[:, None] * np.asarray(b))  # row b: v_b B[b, :]
    ab, bb = isinstance(a, Batched), isinstance(b, Batched)
    if not (ab or bb):
        return np.matmul(a, b)
    A = a.data if ab else as_numpy(a)
    M = b.data if bb else as_numpy(b)
    na, nb = A.ndim - ab, M.ndim - bb
    if na == 0 or nb == 0:
        raise ValueError("matmul: both operands need at least 1 dimension")
    vec_a, vec_b = na == 1, nb == 1
    if vec_a:  # (k,) -> (1, k)
        A = A[..., None, :]
        na = 2
    if vec_b:  # (k,) -> (k, 1)
        M = M[..., None]
        nb = 2
    n = max(na, nb)
    if ab and na < n:
        A = A.reshape(A.shape[:1] + (1,) * (n - na) + A.shape[1:])
    if bb and nb < n:
        M = M.reshape(M.shape[:1] + (1,) * (n - nb) + M.shape[1:])
    if not bb and M.ndim == 2:  # batch @ one matrix: one GEMM over all rows
        out = (_rows2d(A) @ M).reshape(A.shape[:-1] + M.shape[-1:])
    elif not ab and A.ndim == 2:  # one matrix @ batch: (M^T A^T)^T, one GEMM
        Mt = np.swapaxes(M, -1, -2)
        out = np.swapaxes((_rows2d(Mt) @ A.T).reshape(Mt.shape[:-1] + A.shape[:1]), -1, -2)
    else:
        out = np.matmul(A, M)
    if vec_a:
        out = out[..., 0, :]
    if vec_b:
        out = out[..., 0]
    return Batched(out)


def _trace(x, offset=0, axis1=0, axis2=1, dtype=None):
    if not isinstance(x, Batched):
        return np.trace(x, offset, axis1, axis2, dtype)
    return Batched(np.trace(x.data, offset, _axis(axis1, x.ndim), _axis(axis2, x.ndim), dtype))


def _diag(v, k=0):
    if not isinstance(v, Batched):
        return np.diag(v, k)
    if v.ndim == 2:
        return Batched(np.diagonal(v.data, k, 1, 2))
    if v.ndim != 1:
        raise ValueError("diag: input must be 1-D or 2-D")
    n = v.shape[0]
    size = n + abs(k)
    out = np.zeros(v.data.shape[:1] + (size, size), dtype=v.dtype)
    i = np.arange(n)
    out[:, i + max(-k, 0), i + max(k, 0)] = v.data
    return Batched(out)


def _diagonal(x, offset=0, axis1=0, axis2=1):
    if not isinstance(x, Batched):
        return np.diagonal(x, offset, axis1, axis2)
    return Batched(np.diagonal(x.data, offset, _axis(axis1, x.ndim), _axis(axis2, x.ndim)))


def _diagonal_scatter_batched(x, src, offset=0, dim1=0, dim2=1):
    if not (isinstance(x, Batched) or isinstance(src, Batched)):
        return RAW.diagonal_scatter(x, src, offset, dim1, dim2)
    B = _batch_size((x, src))
    nd = _ndim(x)
    data = _full(x, B)
    if isinstance(src, Batched):
        src = _lift(src, nd - 1)
    return Batched(RAW.diagonal_scatter(data, src, offset, _axis(dim1, nd), _axis(dim2, nd)))


def _triangle(raw):
    def f(x, k=0):
        if not isinstance(x, Batched):
            return raw(x, k)
        if x.ndim >= 2:
            return Batched(raw(x.data, k))
        return _looped(raw)(x, k)

    return f


def _index_put_ns(x, indices, values, accumulate):
    if not (isinstance(x, Batched) or isinstance(values, Batched)):
        return _index_put(x, values, indices, accumulate)
    return _index_put_batched(x, indices, values, accumulate)


def _einsum(equation, *operands):
    if not _any_batched(operands):
        return RAW.einsum(equation, *operands)
    terms, out = _parse_einsum(equation, [_ndim(x) for x in operands])
    used = set("".join(terms) + out)
    z = next(c for c in string.ascii_letters if c not in used)
    subs = [z + t if isinstance(x, Batched) else t for t, x in zip(terms, operands)]
    datas = [x.data if isinstance(x, Batched) else x for x in operands]
    eq = ",".join(subs) + "->" + z + out
    return Batched(np.einsum(eq, *datas, optimize=len(operands) > 1))


def _softmax(x, dim):
    if not isinstance(x, Batched):
        return softmax_array(x, dim)
    return Batched(softmax_array(x.data, _axis(dim, x.ndim)))


def _log_softmax(x, dim):
    if not isinstance(x, Batched):
        return log_softmax_array(x, dim)
    return Batched(log_softmax_array(x.data, _axis(dim, x.ndim)))


def _cat(xs, dim):
    xs = list(xs)
    B = _batch_size((xs,))
    if B is None:
        return np.concatenate(xs, axis=dim)
    return Batched(np.concatenate([_full(x, B) for x in xs], axis=_axis(dim, _ndim(xs[0]))))


def _stack(xs, dim):
    xs = list(xs)
    B = _batch_size((xs,))
    if B is None:
        return np.stack(xs, axis=dim)
    return Batched(np.stack([_full(x, B) for x in xs], axis=_axis(dim, _ndim(xs[0]) + 1)))


def _cast(x, dtype):
    if not isinstance(x, Batched):
        return RAW.cast(x, dtype)
    return Batched(x.data.astype(dtype, copy=False))


# --- registered names: leading-batch functions and the per-row fallback ----------------------


def _row(x, b):
    if isinstance(x, Batched):
        return x.data[b]
    if isinstance(x, (list, tuple)) and any(isinstance(y, Batched) for y in x):
        return type(x)(_row(y, b) for y in x)
    return x


def _stack_rows(rows):
    first = rows[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        return type(first)(_stack_rows(list(col)) for col in zip(*rows))
    return Batched(np.stack([np.asarray(r) for r in rows]))


def _looped(raw):
    """The generic fallback: ``raw`` once per row of the Batched arguments, stacked."""

    def f(*args, **kwargs):
        B = _batch_size(tuple(args) + tuple(kwargs.values()))
        if B is None:
            return raw(*args, **kwargs)
        rows = [raw(*(_row(a, b) for a in args), **{k: _row(v, b) for k, v in kwargs.items()})
                for b in range(B)]
        return _stack_rows(rows)

    f.__name__ = getattr(raw, "__name__", "looped")
    f.looped = True
    return f


def _leading(raw, dim_arg=None):
    """For a function that broadcasts over leading batch dims (the linalg helpers): run
    once on the Batched data, lifted so all operands line up right-aligned. ``dim_arg``
    (position, keyword) names an axis argument, shifted past the batch axis when >= 0."""

    def f(*args, **kwargs):
        values = tuple(args) + tuple(kwargs.values())
        if not _any_batched(values):
            return raw(*args, **kwargs)
        n = max(_ndim(a) for a in values if isinstance(a, (Batched, np.ndarray)))
        args = [_lift(a, n) if isinstance(a, Batched) else a for a in args]
        kwargs = {k: _lift(v, n) if isinstance(v, Batched) else v for k, v in kwargs.items()}
        if dim_arg is not None:
            pos, key = dim_arg
            if len(args) > pos and args[pos] >= 0:
                args[pos] += 1
            elif kwargs.get(key, -1) >= 0:
                kwargs[key] += 1
        out = raw(*args, **kwargs)
        if isinstance(out, tuple):
            return tuple(None if o is None else Batched(o) for o in out)
        return Batched(out)

    f.__name__ = getattr(raw, "__name__", "leading")
    return f


# Registered helpers known to broadcast over leading dims (chainrule.linalg), by name; the
# value names an axis argument to shift, (position, keyword), or is None.
def _for_registered(name, raw):
    """The batched version of a registered name, as its registration declares (see
    :data:`chainrule._ns.BATCH_RULES`)."""
    rule = _ns.BATCH_RULES.get(name)
    if rule is None:
        return _looped(raw)
    return _leading(raw, None if rule == "leading" else rule[1])


class _Namespace(SimpleNamespace):
    """BATCHED: a name missing here but present in RAW (registered later) is added on first
    use, as :func:`_for_registered` makes it."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        fn = _for_registered(name, getattr(RAW, name))
        setattr(self, name, fn)
        return fn


BATCHED = _Namespace(
    where=_elementwise(np.where),
    exp=_unary(np.exp),
    log=_unary(np.log),
    sin=_unary(np.sin),
    cos=_unary(np.cos),
    abs=_unary(np.abs),
    sign=_unary(np.sign),
    sigmoid=_unary(RAW.sigmoid),
    zeros_like=_unary(np.zeros_like),
    ones_like=_unary(np.ones_like),
    zeros=RAW.zeros,
    ones=RAW.ones,
    eye=RAW.eye,
    cast=_cast,
    maybe_any=lambda mask: bool(np.any(mask.data if isinstance(mask, Batched) else mask)),
    reshape=_reshape,
    expand=_expand,
    unsqueeze=_unsqueeze,
    squeeze=_squeeze,
    transpose=_transpose,
    permute=_permute,
    mT=_mT,
    sum=_reduction(RAW.sum, np.sum),
    mean=_reduction(RAW.mean, np.mean),
    prod_others=_prod_others_batched,
    matmul=_matmul,
    trace=_trace,
    diag=_diag,
    diagonal=_diagonal,
    diagonal_scatter=_diagonal_scatter_batched,
    tril=_triangle(np.tril),
    triu=_triangle(np.triu),
    index_put=_index_put_ns,
    einsum=_einsum,
    softmax=_softmax,
    log_softmax=_log_softmax,
    cat=_cat,
    stack=_stack,
)


_SYNCED = [0]  # how many RAW names BATCHED has been checked against


def namespace():
    """:data:`BATCHED`, with every name of RAW (names registered since are added)."""
    raw = vars(RAW)
    if len(raw) != _SYNCED[0]:
        names = vars(BATCHED)
        for name, fn in list(raw.items()):
            if name not in names:
                setattr(BATCHED, name, _for_registered(name, fn))
        _SYNCED[0] = len(raw)
    return BATCHED


namespace()
_ns.BATCHING.batched = Batched
_ns.BATCHING.namespace = namespace
