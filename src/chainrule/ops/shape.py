"""Shape ops: reshape/view, flatten, transpose, t, permute, squeeze, unsqueeze, expand,
broadcast_to, cat, stack, split, chunk.

All are linear maps that only move entries, so each VJP moves the cotangent back (the
inverse permutation, the inverse reshape, a split for a concatenation). ``expand``'s VJP
is the identity: the engine sums the expanded dims away.
"""

from __future__ import annotations

import numpy as np

from .._creation import _promote_types
from .._dispatch import ShapeError, apply
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import ChunkedShape, backend_of, xp_kernel
from ..backend import row_major as _row_major  # NumPy keeps broadcast inputs' order
from ._dims import DimensionError, wrap_dim, wrap_dims

__all__ = ["reshape", "view", "flatten", "transpose", "swapaxes", "t", "permute", "squeeze",
           "unsqueeze", "expand", "broadcast_to", "cat", "concat", "concatenate", "stack",
           "split", "chunk", "unbind", "movedim"]

MOVES = "a linear map that only moves entries: its VJP moves the cotangent back"


def _shape(x):
    return x.shape if isinstance(x, Tensor) else np.shape(x)


def _sizes(args):
    """Accept ``f(2, 3)`` and ``f((2, 3))`` as PyTorch does."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(int(a) for a in args[0])
    return tuple(int(a) for a in args)


RESHAPE = defop(
    "reshape", "reshape", ("self",), attrs=("shape",), view="unless it copies",
    vjp={"self": lambda F, g, self_shape: F.reshape(g, self_shape)},
    jvp={"self": lambda F, t, shape: F.reshape(t, shape)},
    math={"self": "grad_x = reshape(grad, x.shape)", "out": "dy = reshape(dx, shape)"},
    source=MOVES,
)


@documented(RESHAPE)
def reshape(input, *shape):
    """The same entries in a new ``shape`` (one entry may be -1). ValueError names both
    shapes when the sizes differ."""
    sizes = _sizes(shape)
    try:
        return apply(RESHAPE, (input,), (sizes,))
    except ValueError:
        size = int(np.prod(_shape(input)))
        raise RuntimeError(f"reshape: shape '{list(sizes)}' is invalid for input of size "
                           f"{size} (input shape {tuple(_shape(input))})") from None


def _view_dtype(input, dtype):
    data = input._data
    if dtype == data.dtype:
        return input
    if input.requires_grad or data.__class__ is not np.ndarray or \
            dtype.itemsize != data.dtype.itemsize:
        raise NotImplementedError(
            f"view: reinterpreting a tensor of dtype {data.dtype} as {dtype} is supported for "
            "NumPy tensors that do not require grad, of the same item size")
    from .._tensor import wrap

    return wrap(data.view(dtype))


def view(input, *shape):
    """The same entries in a new ``shape``, sharing memory with ``input`` (a view that is
    never a copy, unlike :func:`reshape`).

    ``view(dtype)`` (one dtype argument) reinterprets the bytes of a NumPy tensor as a
    dtype of the same item size (its own dtype: the tensor as it is), as PyTorch's.

    Raises RuntimeError, as PyTorch does, when the entries' layout in memory does not allow
    the new shape without a copy (``x.t().view(6)``): use ``reshape`` then; for
    ``view(dtype)`` of another item size or of a tensor that requires grad (PyTorch
    differentiates neither), NotImplementedError.
    """
    if len(shape) == 1 and isinstance(shape[0], (np.dtype, type)) and not (
            isinstance(shape[0], type) and issubclass(shape[0], int)):
        return _view_dtype(input, np.dtype(shape[0]))
    sizes = _sizes(shape)
    data = input._data if isinstance(input, Tensor) else np.asarray(input)
    if data.__class__ is np.ndarray:
        check = np.reshape
    else:  # another backend: its own reshape(copy=False); a lazy one has no memory layout
        b = backend_of(data)
        check = (lambda *a, **k: None) if b.lazy else b.xp.reshape
    try:
        check(data, sizes, copy=False)
    except ValueError as e:
        if "copy" not in str(e):  # a size mismatch: reshape's own error names the shapes
            return reshape(input, sizes)  # raises, naming both shapes
        raise RuntimeError(
            f"view: view size is not compatible with input tensor's size and stride (at "
            f"least one dimension spans across two contiguous subspaces). Use .reshape(...) "
            f"instead. (input shape {tuple(data.shape)}, requested {sizes})") from None
    return reshape(input, sizes)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one."""
    shape = _shape(input)
    s = wrap_dim(start_dim, len(shape), "flatten")
    e = wrap_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise RuntimeError(f"flatten: start_dim ({start_dim}) cannot come after end_dim "
                           f"({end_dim}) for a tensor of shape {tuple(shape)}")
    if len(shape) == 0:
        return reshape(input, (1,))
    if s == e:  # nothing to merge: the input itself, as PyTorch's (no node, no view)
        return input
    size = int(np.prod(shape[s:e + 1]))  # an explicit size: -1 is ambiguous for empty dims
    return reshape(input, shape[:s] + (size,) + shape[e + 1:])


TRANSPOSE = defop(
    "transpose", "swapaxes", ("self",), attrs=("dim0", "dim1"), view=True,
    vjp={"self": lambda F, g, dim0, dim1: F.transpose(g, dim0, dim1)},
    jvp={"self": lambda F, t, dim0, dim1: F.transpose(t, dim0, dim1)},
    math={"self": "grad_x = transpose(grad, dim0, dim1)", "out": "dy = transpose(dx)"},
    source=MOVES,
)


@documented(TRANSPOSE)
def transpose(input, dim0, dim1):
    """Swap dims ``dim0`` and ``dim1`` (a view). A 0-d tensor takes dims 0 and -1 and is
    returned as a view of itself, as in PyTorch."""
    nd = len(_shape(input))
    if nd == 0:
        wrap_dim(dim0, nd, "transpose")
        wrap_dim(dim1, nd, "transpose")
        return apply(RESHAPE, (input,), ((),))
    return apply(TRANSPOSE, (input,), (wrap_dim(dim0, nd, "transpose"),
                                       wrap_dim(dim1, nd, "transpose")))


swapaxes = transpose


def t(input):
    """Transpose of a tensor with at most 2 dims (0-D and 1-D are returned as they are)."""
    shape = _shape(input)
    if len(shape) > 2:
        raise ShapeError(f"t: expects a tensor with <= 2 dimensions, got shape {shape}; "
                         "use transpose(dim0, dim1) or .mT")
    if len(shape) == 2:
        return apply(TRANSPOSE, (input,), (0, 1))  # dims known valid: no wrapping needed
    return apply(RESHAPE, (input,), (tuple(shape),))


PERMUTE = defop(
    "permute", "permute_dims", ("self",), attrs=("dims",), view=True,
    vjp={"self": lambda F, g, dims: F.permute(g, tuple(np.argsort(dims)))},
    jvp={"self": lambda F, t, dims: F.permute(t, dims)},
    math={"self": "grad_x = permute(grad, inverse(dims))", "out": "dy = permute(dx, dims)"},
    source=MOVES,
)


@documented(PERMUTE)
def permute(input, *dims):
    """Reorder the dims (a view); ``dims`` is a permutation of ``range(ndim)``."""
    dims = _sizes(dims)
    nd = len(_shape(input))
    if len(dims) != nd:
        raise RuntimeError(f"permute: number of dims don't match in permute: the tensor has "
                           f"shape {tuple(_shape(input))} and dims {dims} has {len(dims)}")
    wrapped = wrap_dims(dims, nd, "permute")
    return apply(PERMUTE, (input,), (wrapped,))


def movedim(input, source, destination):
    """Move dim ``source`` to position ``destination``."""
    nd = len(_shape(input))
    sources = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    dests = (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    if len(sources) != len(dests):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({sources} "
                           f"dims) should contain the same number of dims as destination "
                           f"({dests} dims)")
    src = wrap_dims(sources, nd, "movedim")
    dst = wrap_dims(dests, nd, "movedim")
    if not nd:  # a 0-d tensor: dims 0 and -1 are its only dim (as PyTorch), nothing moves;
        return permute(input, ())  # still a view, not the input itself (PyTorch's alias)
    order = [None] * nd
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(nd) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, order)


def squeeze(input, dim=None):
    """Remove dims of size 1 (all of them, or those in ``dim`` that have size 1)."""
    shape = _shape(input)
    if dim is None:
        new = tuple(n for n in shape if n != 1)
    else:
        dims = set(wrap_dims((dim,) if isinstance(dim, (int, np.integer)) else tuple(dim),
                             len(shape), "squeeze"))
        new = tuple(n for i, n in enumerate(shape) if not (i in dims and n == 1))
    return reshape(input, new)


def unsqueeze(input, dim):
    """Insert a dim of size 1 at ``dim`` (``-1`` appends)."""
    shape = _shape(input)
    d = wrap_dim(dim, len(shape), "unsqueeze", extra=1)
    return reshape(input, shape[:d] + (1,) + shape[d:])


EXPAND = defop(
    "expand", "broadcast_to", ("self",), attrs=("shape",), view=True,
    vjp={"self": lambda F, g: g},
    jvp={"self": lambda F, t, shape: F.expand(t, shape)},
    math={"self": "grad_x = sum of grad over the expanded dims (done by the engine)",
          "out": "dy = expand(dx)"},
    source="broadcasting is a linear map; its transpose sums",
)


@documented(EXPAND)
def expand(input, *sizes):
    """Broadcast to ``sizes`` without copying; ``-1`` keeps a dim, new dims go in front."""
    sizes = _sizes(sizes)
    shape = _shape(input)
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes given for a tensor of shape {shape}")
    target = tuple(shape[i - lead] if s == -1 and i >= lead else s for i, s in enumerate(sizes))
    return apply(EXPAND, (input,), (target,))


def broadcast_to(input, shape):
    """Broadcast to ``shape`` (NumPy rules) without copying."""
    if shape.__class__ is not ChunkedShape:  # a rule's shape keeps its chunks (create_graph)
        shape = tuple(shape)
    return apply(EXPAND, (input,), (shape,))


def _dtype(tangents):
    return next(t.dtype for t in tangents if t is not None)


def _split_back(F, g, needs, dim, sizes):
    out = []
    start = 0
    for need, n in zip(needs, sizes):
        out.append(g[(slice(None),) * dim + (slice(start, start + n), ...)] if need else None)
        start += n
    return out


CAT = defop(
    "cat", xp_kernel(lambda xp, xs, dim, sizes: _row_major(xp.concat(xs, axis=dim))), ("tensors",),
    attrs=("dim", "sizes"), variadic=True,
    vjp={"tensors": _split_back},
    jvp={"tensors": lambda F, ts, tensors_shape, dim, sizes: F.cat(
        [F.zeros(shape, _dtype(ts)) if t is None else t for t, shape in zip(ts, tensors_shape)],
        dim)},
    math={"tensors": "grad_i = the slice of grad where tensor i was placed",
          "out": "dy = cat(dx_i)"},
    source=MOVES,
)


def _common_dtype(tensors):
    """``tensors`` cast to the dtype PyTorch's ``cat``/``stack`` give them: a higher
    category (bool < int < float) wins with its own width (int64 with float32 is float32,
    where NumPy says float64). The casts are recorded (``to_dtype``); equal dtypes, the
    common case, are passed through untouched."""
    dtypes = [x.dtype if isinstance(x, Tensor) else np.asarray(x).dtype for x in tensors]
    first = dtypes[0]
    if all(d == first for d in dtypes):
        return tensors
    from .elementwise import to_dtype

    target = first
    for d in dtypes[1:]:
        target = _promote_types(target, d)
    target = np.dtype(target)
    return [x if d == target else to_dtype(x, target) if isinstance(x, Tensor) else
            np.asarray(x).astype(target) for x, d in zip(tensors, dtypes)]


@documented(CAT)
def cat(tensors, dim=0):
    """Concatenate along an existing dim. Shapes must agree except along ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("cat: expected a non-empty sequence of tensors")
    for i, x in enumerate(tensors):
        if len(_shape(x)) == 0:
            raise RuntimeError(f"cat: zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated; use stack")
    # PyTorch's legacy rule: 1-D empty tensors are skipped beside tensors of other ranks;
    # they still take part in the dtype promotion and get a (empty) gradient, so they are
    # reshaped to an empty slab of the others' rank rather than dropped
    kept = [x for x in tensors if tuple(_shape(x)) != (0,)]
    if kept and len(kept) < len(tensors) and any(len(_shape(x)) != 1 for x in kept):
        ref = tuple(_shape(kept[0]))
        d = wrap_dim(dim, len(ref), "cat")
        empty = ref[:d] + (0,) + ref[d + 1:]
        tensors = [reshape(x, empty) if isinstance(x, Tensor) and tuple(_shape(x)) == (0,)
                   else np.reshape(x, empty) if tuple(_shape(x)) == (0,) else x
                   for x in tensors]
    tensors = _common_dtype(tensors)
    nd = len(_shape(tensors[0]))
    d = wrap_dim(dim, nd, "cat")
    sizes = tuple(_shape(x)[d] if len(_shape(x)) > d else 0 for x in tensors)
    return apply(CAT, tensors, (d, sizes))


concat = concatenate = cat


def _unstack(F, g, needs, dim):
    return [g[(slice(None),) * dim + (i, ...)] if need else None for i, need in enumerate(needs)]


STACK = defop(
    "stack", xp_kernel(lambda xp, xs, dim: _row_major(xp.stack(xs, axis=dim))), ("tensors",),
    attrs=("dim",),
    variadic=True,
    vjp={"tensors": _unstack},
    jvp={"tensors": lambda F, ts, tensors_shape, dim: F.stack(
        [F.zeros(shape, _dtype(ts)) if t is None else t for t, shape in zip(ts, tensors_shape)],
        dim)},
    math={"tensors": "grad_i = grad selected at index i along dim", "out": "dy = stack(dx_i)"},
    source=MOVES,
)


@documented(STACK)
def stack(tensors, dim=0):
    """Stack equal-shaped tensors along a new dim ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: expected a non-empty sequence of tensors")
    tensors = _common_dtype(tensors)
    nd = len(_shape(tensors[0]))
    return apply(STACK, tensors, (wrap_dim(dim, nd, "stack", extra=1),))


def split(tensor, split_size_or_sections, dim=0):
    """Split into pieces of ``split_size`` (the last may be smaller) or of the listed sizes;
    each piece is a view recorded by indexing."""
    shape = _shape(tensor)
    if len(shape) == 0:
        raise RuntimeError("split: split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, len(shape), "split")
    n = shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0 and n:
            raise RuntimeError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split: split_with_sizes expects split_sizes to sum exactly to "
                               f"{n} (input tensor's size at dimension {d}), but got "
                               f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(tensor[(slice(None),) * d + (slice(start, start + s),)])
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of ``ceil(n / chunks)`` (the last may be smaller)."""
    if chunks <= 0:  # RuntimeError as in PyTorch, and a ValueError (a bad argument value)
        raise ShapeError(f"chunk: chunk expects `chunks` to be greater than 0, got: {chunks}")
    shape = _shape(input)
    if len(shape) == 0:
        raise RuntimeError("chunk: chunk expects at least a 1-dimensional tensor")
    n = shape[wrap_dim(dim, len(shape), "chunk")]
    if n == 0:  # PyTorch's: `chunks` empty pieces
        return split(input, [0] * chunks, dim)
    size = -(-n // chunks)
    return split(input, max(size, 1), dim)


def unbind(input, dim=0):
    """The slices along ``dim``, as a tuple."""
    if len(_shape(input)) == 0:  # IndexError as in PyTorch, and a ValueError
        raise DimensionError(f"unbind: Dimension specified as {dim} but tensor has no "
                             "dimensions")
    d = wrap_dim(dim, len(_shape(input)), "unbind")
    return tuple(input[(slice(None),) * d + (i,)] for i in range(_shape(input)[d]))
