"""Rearranging entries, as PyTorch's functions of the same names: flip, fliplr, flipud,
roll, rot90, narrow, select, unflatten, tensor_split, hstack, vstack, column_stack,
meshgrid, tile, repeat, and the aliases swapdims and moveaxis.

Each is an exact composition of primitives of the table (basic indexing, reshape, expand,
cat, transpose), so its derivative is theirs: these functions move entries, and their VJP
moves the cotangent back. None declares a rule of its own.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import IndexBoundsError, ShapeError, apply
from .._tensor import Tensor
from ._dims import wrap_dim
from .elementwise import clone
from .indexing import SLICE, getitem
from .shape import cat, expand, movedim, reshape, transpose, unsqueeze

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90", "narrow", "select", "unflatten",
           "tensor_split", "hstack", "vstack", "column_stack", "meshgrid", "tile", "repeat",
           "swapdims", "moveaxis", "numel"]


def _dims(dims, ndim, op):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(sorted({wrap_dim(d, ndim, op) for d in dims}))


def flip(input, dims):
    """Reverse the order of entries along ``dims`` (an int or a sequence)."""
    d = _dims(dims, input.ndim, "flip")
    # a copy, as PyTorch's flip: writing into the result leaves the input as it is (the
    # slice op itself takes negative steps; getitem refuses them from users, as PyTorch's)
    return clone(apply(SLICE, (input,), (tuple(slice(None, None, -1) if i in d else
                                               slice(None) for i in range(input.ndim)),)))


def fliplr(input):
    """Flip the columns (dim 1) of a tensor with at least 2 dims."""
    if input.ndim < 2:
        raise ShapeError(f"fliplr: input must be >= 2-d, got shape {tuple(input.shape)}")
    return flip(input, (1,))


def flipud(input):
    """Flip the rows (dim 0) of a tensor with at least 1 dim."""
    if input.ndim < 1:
        raise ShapeError("flipud: input must be >= 1-d, got a 0-d tensor")
    return flip(input, (0,))


def narrow(input, dim, start, length):
    """``length`` entries along ``dim`` from ``start`` (negative counts from the end)."""
    d = wrap_dim(dim, input.ndim, "narrow")
    n = input.shape[d]
    start = start + n if start < 0 else start
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise IndexBoundsError(f"narrow: start ({start}) + length ({length}) exceeds dimension "
                         f"size ({n}) of dim {dim} (shape {tuple(input.shape)})")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def select(input, dim, index):
    """The slice at ``index`` along ``dim`` (that dim removed)."""
    d = wrap_dim(dim, input.ndim, "select")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} out of range for dimension {dim} with size "
                         f"{n}")
    return getitem(input, (slice(None),) * d + (index,))


def roll(input, shifts, dims=None):
    """Entries shifted cyclically by ``shifts`` along ``dims`` (over the flattened tensor,
    then restored, when ``dims`` is None)."""
    if dims is None:
        return reshape(roll(reshape(input, (-1,)), shifts, 0), tuple(input.shape))
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts ({len(shifts)}) and dims ({len(dims)}) must have "
                         "the same length")
    out = input
    for shift, dim in zip(shifts, dims):
        d = wrap_dim(dim, input.ndim, "roll")
        n = input.shape[d]
        s = shift % n if n else 0
        if s:
            out = cat([narrow(out, d, n - s, s), narrow(out, d, 0, n - s)], d)
    return clone(out) if out is input else out  # a new tensor even for a whole turn


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first towards
    the second (as ``torch.rot90``)."""
    if len(dims) != 2:
        raise ShapeError(f"rot90: expected 2 dims, got {len(dims)}")
    d0, d1 = (wrap_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise ShapeError(f"rot90: the dims must differ, got {tuple(dims)}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return clone(input)  # a new tensor, as PyTorch's


def unflatten(input, dim, sizes):
    """Dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    d = wrap_dim(dim, input.ndim, "unflatten")
    shape = tuple(input.shape)
    sizes = tuple(int(n) for n in sizes)
    if sizes.count(-1) == 1:  # inferred from dim d alone, as PyTorch's (so an empty dim
        # splits into (1, 0), where reshape's -1 over an empty tensor is ambiguous)
        known = int(np.prod([n for n in sizes if n != -1]))
        if known and shape[d] % known == 0:
            sizes = tuple(shape[d] // known if n == -1 else n for n in sizes)
    return reshape(input, shape[:d] + sizes + shape[d + 1:])


def tensor_split(input, indices_or_sections, dim=0):
    """Views along ``dim``: ``n`` near-equal parts for an int (the first ``size % n`` one
    longer), or the pieces between the given indices."""
    d = wrap_dim(dim, input.ndim, "tensor_split")
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):  # a 0-d count or a 1-D list of indices
        values = np.asarray(indices_or_sections.detach().numpy())
        if values.dtype.kind not in "iu" or values.ndim > 1:
            raise TypeError(f"tensor_split: a tensor indices_or_sections must be a 0-d or "
                            f"1-D integer tensor, got shape {values.shape} and dtype "
                            f"{values.dtype}")
        indices_or_sections = int(values) if values.ndim == 0 else values.tolist()
    if isinstance(indices_or_sections, (int, np.integer)):
        n = indices_or_sections
        if n < 1:
            raise ValueError(f"tensor_split: number of sections must be positive, got {n}")
        q, r = divmod(size, n)
        bounds = [i * q + min(i, r) for i in range(n + 1)]
    else:
        # each piece is input[a:b] with Python's slice semantics: a negative index counts
        # from the end (PyTorch: tensor_split(x, [-1]) is x[:-1], x[-1:])
        bounds = [0] + [min(max(int(i) + size if int(i) < 0 else int(i), 0), size)
                        for i in indices_or_sections] + [size]
    return tuple(narrow(input, d, a, max(b - a, 0)) if b >= a else narrow(input, d, a, 0)
                 for a, b in zip(bounds[:-1], bounds[1:]))


def _atleast(t, n):
    while t.ndim < n:
        t = unsqueeze(t, 0 if t.ndim == 0 or n == 1 else 0)
    return t


def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    ts = [_atleast(t, 1) for t in tensors]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    """Concatenate along dim 0, 1-D tensors as rows."""
    return cat([_atleast(t, 2) for t in tensors], 0)


def column_stack(tensors):
    """1-D (and 0-d) tensors as columns, then concatenated along dim 1."""
    cols = [reshape(t, (-1, 1)) if t.ndim <= 1 else t for t in tensors]
    return cat(cols, 1)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 1-D tensors: ``"ij"`` (matrix indexing, PyTorch's default) or
    ``"xy"`` (the first two grid dims swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    sizes = [t.numel() for t in tensors]
    k = len(tensors)
    order = list(range(k))
    if indexing == "xy" and k >= 2:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[order[i]] for i in range(k))
    out = []
    for i, t in enumerate(tensors):
        pos = order.index(i)
        view = [1] * k
        view[pos] = sizes[i]
        out.append(expand(reshape(t, tuple(view)), *shape))
    return tuple(out)


def repeat(input, *sizes):
    """``Tensor.repeat``: the tensor tiled ``sizes[i]`` times along dim ``i`` (leading
    sizes add dims)."""
    if len(sizes) == 1 and isinstance(sizes[0], (list, tuple)):
        sizes = tuple(sizes[0])
    if len(sizes) < input.ndim:
        raise ShapeError(f"repeat: the number of repeats ({len(sizes)}) can not be smaller "
                         f"than the number of dimensions of the tensor ({input.ndim})")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    x = reshape(input, sum(((1, n) for n in shape), ()))   # (1, a, 1, b, ...)
    x = expand(x, *sum(((r, n) for r, n in zip(sizes, shape)), ()))
    x = reshape(x, tuple(r * n for r, n in zip(sizes, shape)))
    # PyTorch's repeat always makes a new tensor: repeating once, or repeats the reshape
    # could express as a view of the expanded input (a 0 stride: (1, 3) repeated (2, 1, 1)),
    # would otherwise alias the input, and a write into the result would change it;
    # the copy is row-major, as PyTorch's (a transposed input's views keep its layout)
    if not x.is_contiguous():
        return x.contiguous()
    if all(r == 1 for r in sizes) or 0 in getattr(x._data, "strides", ()):
        return clone(x)
    return x


def tile(input, dims):
    """``torch.tile``: as ``repeat``, with ones prepended to ``dims`` when it is shorter
    than the tensor's dims."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def swapdims(input, dim0, dim1):
    """Alias of :func:`chainrule.transpose`."""
    return transpose(input, dim0, dim1)


def moveaxis(input, source, destination):
    """Alias of :func:`chainrule.movedim`."""
    return movedim(input, source, destination)


def numel(input):
    """The number of entries of ``input`` (an int), as ``torch.numel``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"numel: expected a Tensor, got {type(input).__name__}")
    return int(np.prod(input.shape, dtype=np.int64))
