"""Indexing: ``x[index]`` (basic and advanced) and ``index_put`` (``x[index] = v``).

Basic indexing (ints, slices, None, Ellipsis) gives a view and records ``SliceBackward0``;
advanced indexing (integer arrays, boolean masks) gives a copy and records
``IndexBackward0``. Both have the same VJP: the cotangent is scattered back into zeros of
the input's shape, *adding* at repeated integer indices.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import _dispatch, _ns
from .._dispatch import apply
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import NUMPY, backend_of, xp_kernel

__all__ = ["index_put", "getitem", "take_along_dim"]

_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def normalize_index(index, negative_steps=False):
    """A tuple index with Tensors and lists turned into arrays; and whether it is basic.
    As PyTorch's, a uint8 tensor is a mask (deprecated there, with a warning), and a slice
    with a negative step raises ValueError (the library's own indices may have them:
    ``negative_steps=True``)."""
    if not isinstance(index, tuple):
        index = (index,)
    out = []
    basic = True
    for i in index:
        if isinstance(i, Tensor):
            i = i._data
            if getattr(i, "dtype", None) == np.uint8:  # PyTorch: a uint8 index is a mask
                warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use "
                              "a dtype torch.bool instead.", UserWarning, stacklevel=3)
                i = i.astype(bool) if isinstance(i, np.ndarray) \
                    else backend_of(i).xp.astype(i, backend_of(i).xp.bool)
        elif i.__class__ is slice and not negative_steps and i.step is not None \
                and i.step < 0:
            raise ValueError("step must be greater than zero")
        elif isinstance(i, list):
            i = np.asarray(i)
            if i.size == 0:  # x[[]]: an empty integer index, as in PyTorch
                i = i.astype(np.intp)
        if isinstance(i, bool) or not isinstance(i, _BASIC):
            basic = False
        out.append(i)
    if basic and Ellipsis not in out:
        out.append(Ellipsis)  # x[1, ...] is a 0-d view where x[1] would be a copied scalar
    return tuple(out), basic


_ns.register("index_put", NUMPY.xp.index_put, lambda *a: index_put(*a),
             lambda xp, dev, lazy: xp.index_put)


def _scatter_back(F, g, self_shape, index):
    return F.index_put(F.zeros(self_shape, g.dtype), index, g, True)


SCATTER = "the transpose of a selection is a scatter (adding at repeated indices)"

SLICE = defop(
    "slice", xp_kernel(lambda xp, x, index: x[index]), ("self",), attrs=("index",), view=True,
    vjp={"self": _scatter_back}, jvp={"self": lambda F, t, index: t[index]},
    math={"self": "grad_x = zeros(x.shape); grad_x[index] = grad", "out": "dy = dx[index]"},
    source=SCATTER,
)
_dispatch.SCATTERED_VJP.add(SLICE)  # the engine adds x[t]'s cotangent in place
@xp_kernel
def _advanced_index(xp, x, index):
    out = x[index]
    flags = getattr(out, "flags", None)
    # PyTorch's advanced indexing gives a contiguous tensor (so .view works on it); NumPy's
    # may be strided (x[..., idx] puts the indexed dim first in memory)
    return out if flags is None or flags.c_contiguous else out.copy(order="C")


INDEX = defop(
    "index", _advanced_index, ("self",), attrs=("index",),
    vjp={"self": _scatter_back}, jvp={"self": lambda F, t, index: t[index]},
    math={"self": "grad_x = zeros(x.shape); grad_x[index] += grad (repeats add up)",
          "out": "dy = dx[index]"},
    source=SCATTER,
)


def _index_put(x, values, indices, accumulate):
    """index_put on NumPy arrays (the rule namespace's ``index_put``)."""
    return NUMPY.xp.index_put(x, indices, values, accumulate)


INDEX_PUT = defop(
    "index_put", xp_kernel(lambda xp, x, values, indices, accumulate: xp.index_put(
        x, indices, values, accumulate)), ("self", "values"), attrs=("indices", "accumulate"),
    vjp={"self": lambda F, g, indices, accumulate:
         g if accumulate else F.index_put(g, indices, 0.0, False),
         "values": lambda F, g, indices: g[indices]},
    jvp={"self": lambda F, t, indices, accumulate:
         t if accumulate else F.index_put(t, indices, 0.0, False),
         "values": lambda F, t, self_shape, indices, accumulate:
         F.index_put(F.zeros(self_shape, t.dtype), indices, t, accumulate)},
    math={"self": "grad_x = grad with the written entries zeroed (accumulate: grad)",
          "values": "grad_v = grad[indices], summed over broadcast dims",
          "out": "dy = index_put(dx, indices, dv)"},
    source="writing is linear in (x, v); VJP by transposition",
)


def _on_data_device(index, input):
    """Index arrays moved beside the data they index (as PyTorch takes CPU indices for
    CUDA tensors): an Array API library or CuPy indexes with its own arrays only. Dask
    indexes with NumPy arrays as they are."""
    d = input._data if isinstance(input, Tensor) else None
    if d is None or d.__class__ is np.ndarray:
        return index
    b = backend_of(d)
    if b.lazy:
        return index
    return tuple(b.xp.asarray(i, device=d.device) if isinstance(i, np.ndarray) else i
                 for i in index)


def split_index(index):
    """PyTorch applies the ints of an index before its tensors (an int is a basic index
    there), NumPy takes them as advanced indices broadcast with the arrays: ``x[0, :, idx]``
    puts idx's dims first in NumPy, in place in PyTorch. For a normalized advanced index
    with an int and an array apart (not side by side), the two steps that give PyTorch's
    result: a basic index (the ints, slices, None, Ellipsis) and then the advanced one;
    None when NumPy's result already is PyTorch's."""
    kinds = ["i" if isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
             else "a" if hasattr(i, "shape") and getattr(i, "ndim", 0) >= 0
             and not isinstance(i, np.generic) else "b" for i in index]
    ints = [k for k, c in enumerate(kinds) if c == "i"]
    arrays = [k for k, c in enumerate(kinds) if c == "a"]
    if not ints or not arrays:
        return None
    used = ints + arrays
    if max(used) - min(used) + 1 == len(used):  # side by side: NumPy's result is PyTorch's
        return None
    first, second = [], []
    for i, c in zip(index, kinds):
        if c == "a":
            width = i.ndim if getattr(i, "dtype", None) == np.bool_ else 1
            first.extend([slice(None)] * width)
            second.append(i)
        elif c == "i":
            first.append(i)
        else:
            first.append(i)
            second.append(i if i is Ellipsis else slice(None))
    return tuple(first), tuple(second)


@documented(SLICE, INDEX)
def getitem(input, index, negative_steps=False):
    """``input[index]`` with NumPy semantics: ints, slices, None, Ellipsis (a view), integer
    arrays and boolean masks (a copy). Out-of-range indices raise IndexError naming the
    shape."""
    index, basic = normalize_index(index, negative_steps)
    if not basic:
        index = _on_data_device(index, input)
        steps = split_index(index)
        if steps is not None:  # PyTorch's order: the ints first, then the arrays
            if Ellipsis not in steps[0]:
                steps = (steps[0] + (Ellipsis,), steps[1])
            return apply(INDEX, (apply(SLICE, (input,), (steps[0],)),), (steps[1],))
    return apply(SLICE if basic else INDEX, (input,), (index,))


@documented(INDEX_PUT)
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at ``indices`` (added when
    ``accumulate``, so repeated indices add up)."""
    index, basic = normalize_index(indices, negative_steps=True)
    if not basic:
        index = _on_data_device(index, input)
        if split_index(index) is not None and np.size(
                values._data if isinstance(values, Tensor) else values) > 1:
            raise NotImplementedError(
                "index_put: an index with an int and a tensor apart (x[0, :, idx] = v) puts "
                "the selected entries in PyTorch's order, which chainrule does not follow "
                "for a value of more than one element; index in two steps (x[0][:, idx] = v)")
    return apply(INDEX_PUT, (input, values), (index, bool(accumulate)))


def take_along_dim(input, indices, dim=None):
    """PyTorch's ``take_along_dim`` (NumPy's ``take_along_axis``): entries of ``input``
    picked along ``dim`` at ``indices`` (int64; negative ones count from the end), the two
    broadcasting against each other on the other dims. ``dim=None`` takes from ``input``
    flattened at ``indices`` flattened. Recorded as advanced indexing (``index``)."""
    if not isinstance(input, Tensor):
        from .._creation import as_tensor

        input = as_tensor(input)
    idx = indices._data if isinstance(indices, Tensor) else indices
    if idx.__class__ is not np.ndarray:  # checked on the host (a GPU's indices copied)
        try:
            idx = np.asarray(backend_of(idx).to_numpy(idx))
        except TypeError:  # a list or a number
            idx = np.asarray(idx)
    if idx.dtype != np.int64 and not (idx.size == 0 and idx.dtype.kind == "f"):
        raise RuntimeError(f"take_along_dim: dtype of indices should be int64 (Long) but "
                           f"got {idx.dtype}")
    idx = idx.astype(np.intp, copy=False)
    if dim is None:
        from .shape import reshape

        input, idx, d = reshape(input, (-1,)), idx.reshape(-1), 0
    else:
        if input.ndim != idx.ndim:
            raise RuntimeError(f"take_along_dim: input and indices should have the same "
                               f"number of dimensions, but got {input.ndim} dimensions for "
                               f"input, and {idx.ndim} dimensions for indices")
        top = max(input.ndim, 1)
        if not -top <= dim < top:
            raise IndexError(f"take_along_dim: Dimension out of range (expected to be in "
                             f"range of [{-top}, {top - 1}], but got {dim})")
        d = dim % top
    shape = tuple(input.shape)
    if not shape:  # 0-d input and index: the value itself (index 0 or -1)
        from .shape import reshape

        picked = take_along_dim(reshape(input, (1,)), idx.reshape(1).astype(np.int64), 0)
        return reshape(picked, ())
    n = shape[d]
    if idx.size:
        idx = np.where(idx < 0, idx + n, idx)
        bad = (idx < 0) | (idx >= n)
        if bad.any():
            first = int(idx[bad].flat[0])
            raise IndexError(f"take_along_dim: index {first if first >= 0 else first - n} "
                             f"is out of bounds for dimension {d} with size {n}")
    others = [i for i in range(len(shape)) if i != d]
    try:
        np.broadcast_shapes(tuple(shape[i] for i in others), tuple(idx.shape[i] for i in others))
    except ValueError:
        raise RuntimeError(f"take_along_dim: the shapes of input {list(shape)} and indices "
                           f"{list(idx.shape)} do not broadcast apart from dimension "
                           f"{d}") from None
    index = []
    for i in range(len(shape)):
        if i == d:
            index.append(idx)
        else:
            grid = np.arange(shape[i])  # size 1: index 0, broadcast against indices
            index.append(grid.reshape([shape[i] if j == i else 1 for j in range(len(shape))]))
    return getitem(input, tuple(index))
