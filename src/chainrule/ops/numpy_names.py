"""NumPy's names, with NumPy's semantics and signatures: array_split, atleast_1d/2d/3d,
deg2rad, rad2deg, degrees, radians, dsplit, hsplit, vsplit, expand_dims, fabs, mod,
permute_dims, ravel, rollaxis, pad, partition and gradient.

Each is an exact composition of the table's primitives (basic indexing, reshape, cat,
multiplication, sort, ...), so its derivative is theirs; none declares a rule of its own.
Where PyTorch has the same name (deg2rad, rad2deg, atleast_*, dsplit/hsplit/vsplit, ravel)
the semantics agree; the split functions then return a tuple, as PyTorch's (NumPy's give a
list of the same arrays), and ``array_split``, NumPy's only, a list.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _creation
from .._dispatch import name_errors
from .._tensor import Tensor
from ..backend import beside, numpy_dtype
from ._dims import wrap_dim
from .elementwise import abs as _abs
from .elementwise import add, div, mul, sub
from .elementwise_more import remainder
from .indexing import getitem
from .rearrange import narrow, tensor_split
from .shape import cat, expand, permute, reshape
from .sorting import sort

__all__ = ["array_split", "atleast_1d", "atleast_2d", "atleast_3d", "deg2rad", "rad2deg",
           "degrees", "radians", "dsplit", "hsplit", "vsplit", "expand_dims", "fabs", "mod",
           "permute_dims", "ravel", "rollaxis", "pad", "partition", "gradient"]


def _tensor(a):
    return a if isinstance(a, Tensor) else _creation.as_tensor(a)


# --- angles and elementwise aliases -----------------------------------------------------------

@name_errors
def deg2rad(input):
    """Degrees to radians, ``input * pi / 180`` (NumPy's and PyTorch's deg2rad)."""
    return mul(_tensor(input), math.pi / 180)


@name_errors
def rad2deg(input):
    """Radians to degrees, ``input * 180 / pi`` (NumPy's and PyTorch's rad2deg)."""
    return mul(_tensor(input), 180 / math.pi)


@name_errors
def radians(x):
    """NumPy's alias of :func:`deg2rad`."""
    return deg2rad(x)


@name_errors
def degrees(x):
    """NumPy's alias of :func:`rad2deg`."""
    return rad2deg(x)


@name_errors
def fabs(x):
    """NumPy's ``fabs``: the absolute value (chainrule is real-valued, so it is ``abs``)."""
    return _abs(_tensor(x))


@name_errors
def mod(x1, x2):
    """NumPy's ``mod``: ``x1 - floor(x1 / x2) * x2``, with the sign of the divisor (Python's
    convention); the same as :func:`chainrule.remainder`."""
    return remainder(x1, x2)


# --- shapes -----------------------------------------------------------------------------------

def _atleast(name, n, arys):
    if len(arys) == 1 and isinstance(arys[0], (list, tuple)) and arys[0] \
            and all(isinstance(a, Tensor) for a in arys[0]):
        return tuple(_atleast(name, n, (a,)) for a in arys[0])  # PyTorch's sequence form
    if len(arys) != 1:
        return tuple(_atleast(name, n, (a,)) for a in arys)
    t = _tensor(arys[0])
    s = tuple(t.shape)
    if len(s) >= n:
        return t
    if n == 1:
        return reshape(t, (1,))
    if n == 2:
        return reshape(t, (1,) * (2 - len(s)) + s)
    # n == 3: 0-d -> (1, 1, 1), (N,) -> (1, N, 1), (M, N) -> (M, N, 1)
    return reshape(t, {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


@name_errors
def atleast_1d(*arys):
    """Each input with at least 1 dim (0-d becomes shape (1,)); several inputs give a
    tuple (NumPy's and PyTorch's atleast_1d)."""
    return _atleast("atleast_1d", 1, arys)


@name_errors
def atleast_2d(*arys):
    """Each input with at least 2 dims: 0-d becomes (1, 1), (N,) becomes (1, N); several
    inputs give a tuple."""
    return _atleast("atleast_2d", 2, arys)


@name_errors
def atleast_3d(*arys):
    """Each input with at least 3 dims: 0-d becomes (1, 1, 1), (N,) becomes (1, N, 1) and
    (M, N) becomes (M, N, 1); several inputs give a tuple."""
    return _atleast("atleast_3d", 3, arys)


@name_errors
def expand_dims(a, axis):
    """Insert dims of size 1 at the positions ``axis`` (an int or a tuple) of the result,
    as NumPy's expand_dims."""
    a = _tensor(a)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    nd = a.ndim + len(axes)
    where = [wrap_dim(int(ax), nd, "expand_dims") for ax in axes]
    if len(set(where)) != len(where):
        raise ValueError(f"expand_dims: repeated axis in {axis!r}")
    rest = iter(a.shape)
    return reshape(a, tuple(1 if i in where else next(rest) for i in range(nd)))


@name_errors
def permute_dims(a, axes=None):
    """The dims reordered by ``axes`` (reversed when None), NumPy's permute_dims (the Array
    API's name for ``transpose``)."""
    a = _tensor(a)
    axes = tuple(range(a.ndim))[::-1] if axes is None else tuple(int(ax) for ax in axes)
    return permute(a, axes)


@name_errors
def ravel(a, order="C"):
    """The entries as a 1-D tensor in row-major order (``order='C'``) or column-major
    (``'F'``), NumPy's ravel (PyTorch's is the row-major one)."""
    a = _tensor(a)
    if order in ("C", "A", "K"):  # chainrule's tensors are row-major
        if not a.is_contiguous():  # PyTorch's ravel is contiguous().view(-1): a copy of a
            a = a.contiguous()  # non-contiguous input, even where a view could be made
        return reshape(a, (-1,))
    if order == "F":
        return reshape(permute(a, tuple(range(a.ndim))[::-1]), (-1,))
    raise ValueError(f"ravel: order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")


@name_errors
def rollaxis(a, axis, start=0):
    """NumPy's rollaxis: move dim ``axis`` so that it comes before the dim now at position
    ``start`` (NumPy recommends moveaxis, whose meaning is simpler)."""
    a = _tensor(a)
    n = a.ndim
    axis = wrap_dim(axis, n, "rollaxis")
    if start < 0:
        start += n
    if not 0 <= start < n + 1:
        raise np.exceptions.AxisError(f"rollaxis: start={start} is out of bounds for an "
                                      f"array of dimension {n}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = list(range(n))
    axes.remove(axis)
    axes.insert(start, axis)
    return permute(a, tuple(axes))


# --- splits -----------------------------------------------------------------------------------

@name_errors
def array_split(ary, indices_or_sections, axis=0):
    """NumPy's array_split: ``n`` near-equal parts along ``axis`` for an int (the first
    ``size % n`` one longer) or the pieces between the given indices; a list of views
    (:func:`chainrule.tensor_split` with NumPy's argument names)."""
    return list(tensor_split(_tensor(ary), indices_or_sections, axis))


def _split(name, ary, indices_or_sections, axis):
    if isinstance(indices_or_sections, (int, np.integer)):
        n = int(indices_or_sections)
        if n < 1:
            raise ValueError(f"{name}: number sections must be larger than 0.")
        if ary.shape[axis] % n:
            raise ValueError(f"{name}: array split does not result in an equal division "
                             f"(dim {axis} of size {ary.shape[axis]} into {n} sections)")
    return tuple(tensor_split(ary, indices_or_sections, axis))


@name_errors
def hsplit(ary, indices_or_sections):
    """Split along dim 1 (dim 0 of a 1-D input) into equal sections (an int, which must
    divide the size) or at the given indices; a tuple of views (NumPy's and PyTorch's)."""
    ary = _tensor(ary)
    if ary.ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split("hsplit", ary, indices_or_sections, 1 if ary.ndim > 1 else 0)


@name_errors
def vsplit(ary, indices_or_sections):
    """Split along dim 0 of an input with at least 2 dims (NumPy's and PyTorch's)."""
    ary = _tensor(ary)
    if ary.ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", ary, indices_or_sections, 0)


@name_errors
def dsplit(ary, indices_or_sections):
    """Split along dim 2 of an input with at least 3 dims (NumPy's and PyTorch's)."""
    ary = _tensor(ary)
    if ary.ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", ary, indices_or_sections, 2)


# --- pad --------------------------------------------------------------------------------------

def _pad_positions(mode, n, before, after):
    """The source index along a dim of size ``n`` of each position of the padded dim."""
    pos = np.arange(-before, n + after)
    if mode == "edge" or (mode == "reflect" and n == 1):
        return np.clip(pos, 0, n - 1)
    if mode == "reflect":  # mirror about the edge entries: period 2 (n - 1)
        p = 2 * (n - 1)
        pos = pos % p
        return np.where(pos >= n, p - pos, pos)
    if mode == "symmetric":  # mirror including the edge entries: period 2 n
        pos = pos % (2 * n)
        return np.where(pos >= n, 2 * n - 1 - pos, pos)
    return pos % n  # wrap


def _runs(pos):
    """Split ``pos`` into runs of step +1, -1 or 0: ``[(first, step, length)]``."""
    runs, i = [], 0
    while i < len(pos):
        j = i + 1
        step = int(pos[j] - pos[i]) if j < len(pos) else 1
        if step in (-1, 0, 1):
            while j < len(pos) and pos[j] - pos[j - 1] == step:
                j += 1
        else:  # a jump (wrap mode): this run is one entry
            step = 1
        runs.append((int(pos[i]), step, j - i))
        i = j
    return runs


def _gather_runs(x, d, pos):
    """``x`` indexed along dim ``d`` by ``pos``, as slices (reversed where they go down) and
    broadcasts of one entry (repeated edges), concatenated."""
    if len(pos) == x.shape[d] and np.array_equal(pos, np.arange(x.shape[d])):
        return x
    pieces = []
    for first, step, length in _runs(pos):
        lead = (slice(None),) * d
        if step == 1:
            pieces.append(getitem(x, lead + (slice(first, first + length),)))
        elif step == -1:
            stop = first - length
            pieces.append(getitem(x, lead + (slice(first, None if stop < 0 else stop, -1),),
                                  negative_steps=True))
        else:
            one = narrow(x, d, first, 1)
            shape = list(one.shape)
            shape[d] = length
            pieces.append(expand(one, tuple(shape)))
    return pieces[0] if len(pieces) == 1 else cat(pieces, d)


def _per_axis(name, value, ndim):
    arr = np.asarray(value)
    try:
        return np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {name} of shape {arr.shape} cannot be broadcast to "
                         f"({ndim}, 2), one (before, after) pair per dim") from None


_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


@name_errors
def pad(array, pad_width, mode="constant", constant_values=0):
    """NumPy's pad: ``pad_width`` is an int, a ``(before, after)`` pair, or one pair per
    dim (first dim first); modes ``'constant'`` (``constant_values``, a number or pairs
    like ``pad_width``), ``'edge'`` (repeat the edge entry), ``'reflect'`` (mirror without
    the edge), ``'symmetric'`` (mirror with the edge) and ``'wrap'`` (periodic). Widths may
    exceed the dim's size, as NumPy's. Dims are padded in order (corners come from the later
    dims, as NumPy's). Built from slices, flips, broadcasts and cat: the gradient of a
    padded entry flows to the entry it copies.
    """
    x = _tensor(array)
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode {mode!r} is not supported (chainrule has "
                         f"{', '.join(repr(m) for m in _PAD_MODES)})")
    widths = _per_axis("pad_width", pad_width, x.ndim)
    if widths.dtype.kind not in "iu" and not np.all(widths == np.round(widths)):
        raise TypeError("pad: `pad_width` must be of integral type.")
    widths = widths.astype(np.int64)
    if np.any(widths < 0):
        raise ValueError("pad: index can't contain negative values")
    values = _per_axis("constant_values", constant_values, x.ndim) if mode == "constant" \
        else None
    for d in range(x.ndim):
        before, after = int(widths[d, 0]), int(widths[d, 1])
        if before == 0 and after == 0:
            continue
        n = x.shape[d]
        if mode == "constant":
            parts = []
            for size, value in ((before, values[d, 0]), (after, values[d, 1])):
                shape = list(x.shape)
                shape[d] = size
                parts.append(_creation.full(tuple(shape), value.item(), dtype=x.dtype,
                                            device=x.device))
            x = cat([parts[0], x, parts[1]], d)
            continue
        if n == 0:
            raise ValueError(f"pad: can't extend empty axis {d} using modes other than "
                             "'constant' or 'empty'")
        x = _gather_runs(x, d, _pad_positions(mode, n, before, after))
    return x


# --- partition --------------------------------------------------------------------------------

@name_errors
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """NumPy's partition: the entries along ``axis`` rearranged so that the ``kth`` (an int
    or a sequence of ints) is where it would be in sorted order, the smaller before it and
    the larger after it. chainrule returns the full sort along ``axis`` (which satisfies
    NumPy's contract for every ``kth``; NumPy leaves the order within each side
    unspecified), so its gradient is :func:`chainrule.sort`'s. ``axis=None`` partitions
    the flattened input."""
    if order is not None:
        raise ValueError("partition: order is for structured arrays, which chainrule lacks")
    x = _tensor(a)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if x.ndim == 0:
        raise ValueError("partition: a 0-d array cannot be partitioned")
    d = wrap_dim(axis, x.ndim, "partition")
    n = x.shape[d]
    for k in np.atleast_1d(np.asarray(kth)).tolist():
        if not isinstance(k, numbers.Integral):
            raise TypeError(f"partition: kth must be an int or a sequence of ints, got {kth!r}")
        if not -n <= k < n:
            raise ValueError(f"partition: kth(={k}) out of bounds ({n})")
    return sort(x, dim=d).values


# --- gradient ---------------------------------------------------------------------------------

def _spacings(varargs, axes):
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return [varargs[0]] * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("gradient: invalid number of arguments (one spacing, or one per "
                        f"axis: {len(axes)})")
    out = []
    for h in varargs:  # a scalar spacing, or the coordinates along that axis
        if np.ndim(h) == 0:
            out.append(float(h))
            continue
        x = np.asarray(h.detach().numpy() if isinstance(h, Tensor) else h, dtype=float)
        if x.ndim != 1:
            raise ValueError(f"gradient: coordinates must be 1-D, got shape {x.shape}")
        out.append(x)
    return out


def _gradient_axis(f, d, h, edge_order):
    n = f.shape[d]
    if n < edge_order + 1:
        raise ValueError("gradient: Shape of array too small to calculate a numerical "
                         "gradient, at least (edge_order + 1) elements are required.")

    def part(start, length):
        return narrow(f, d, start, length)

    if np.ndim(h):  # coordinates: NumPy's non-uniform formulas (np.gradient's source)
        return _gradient_coordinates(f, d, h, edge_order, part)

    interior = div(sub(part(2, n - 2), part(0, n - 2)), 2 * h)
    if edge_order == 1:
        first = div(sub(part(1, 1), part(0, 1)), h)
        last = div(sub(part(n - 1, 1), part(n - 2, 1)), h)
    else:  # second-order one-sided differences
        first = div(add(add(mul(part(0, 1), -3.0), mul(part(1, 1), 4.0)),
                        mul(part(2, 1), -1.0)), 2 * h)
        last = div(add(add(mul(part(n - 1, 1), 3.0), mul(part(n - 2, 1), -4.0)),
                       part(n - 3, 1)), 2 * h)
    return cat([first, interior, last], d)


def _gradient_coordinates(f, d, x, edge_order, part):
    """Central differences on the grid ``x`` (constants: the gradient is taken in ``f``),
    second order inside: ``a f[i-1] + b f[i] + c f[i+1]`` with NumPy's weights."""
    n = f.shape[d]
    if x.shape[0] != n:
        raise ValueError(f"gradient: when spacing is given as coordinates, their length "
                         f"{x.shape[0]} must match the size {n} of the dimension {d}")
    shape = [1] * f.ndim

    def along(w):  # a weight vector along dim d, broadcast against f's slices
        shape[d] = len(w)
        return _tensor(beside(np.asarray(w, dtype=numpy_dtype(f.dtype)).reshape(shape),
                              f._data))

    dx = np.diff(x)
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    interior = add(add(mul(part(0, n - 2), along(a)), mul(part(1, n - 2), along(b))),
                   mul(part(2, n - 2), along(c)))
    if edge_order == 1:
        first = div(sub(part(1, 1), part(0, 1)), float(dx[0]))
        last = div(sub(part(n - 1, 1), part(n - 2, 1)), float(dx[-1]))
    else:
        h1, h2 = float(dx[0]), float(dx[1])
        first = add(add(mul(part(0, 1), -(2 * h1 + h2) / (h1 * (h1 + h2))),
                        mul(part(1, 1), (h1 + h2) / (h1 * h2))),
                    mul(part(2, 1), -h1 / (h2 * (h1 + h2))))
        h1, h2 = float(dx[-2]), float(dx[-1])
        last = add(add(mul(part(n - 3, 1), h2 / (h1 * (h1 + h2))),
                       mul(part(n - 2, 1), -(h2 + h1) / (h1 * h2))),
                   mul(part(n - 1, 1), (2 * h2 + h1) / (h2 * (h1 + h2))))
    return cat([first, interior, last], d)


@name_errors
def gradient(f, *varargs, axis=None, edge_order=1, spacing=None, dim=None):
    """NumPy's gradient on a uniform grid: second-order central differences
    ``(f[i+1] - f[i-1]) / (2 h)`` inside, one-sided differences at the edges (first order,
    or second order with ``edge_order=2``). ``varargs``: the spacing ``h``, one scalar for
    every axis or one per axis (default 1), or per axis the coordinates of the grid points
    (NumPy's non-uniform formulas; the gradient is taken in ``f`` only). With
    ``axis=None`` (every axis) or a tuple of several axes, a tuple of tensors, one per
    axis; one tensor when NumPy's spelling (spacing given positionally, or ``axis=``)
    names a single axis (NumPy's return type).

    PyTorch's call is ``torch.gradient``'s: ``gradient(f)``, ``gradient(f, spacing=h,
    dim=d)`` (``spacing`` a scalar or a list of scalars, ``dim`` an int or a list) returns
    a tuple always, also for a 1-D ``f`` (where NumPy's ``gradient(f)`` is one array: a
    ported ``torch.gradient(x)[0]`` must be the whole derivative)."""
    f = _tensor(f)
    numpy_style = bool(varargs) or axis is not None
    torch_style = spacing is not None or dim is not None
    if torch_style:
        if varargs or axis is not None:
            raise TypeError("gradient: give NumPy's spacing arguments and axis, or PyTorch's "
                            "spacing= and dim=, not both")
        axis = dim
        if spacing is not None:
            varargs = tuple(spacing) if isinstance(spacing, (list, tuple)) else (spacing,)
    if edge_order not in (1, 2):
        raise ValueError("gradient: 'edge_order' greater than 2 not supported")
    if f.ndim == 0:
        raise ValueError("gradient: Shape of array too small to calculate a numerical "
                         "gradient, at least (edge_order + 1) elements are required.")
    if axis is None:
        axes = tuple(range(f.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (axis,)
    else:
        axes = tuple(axis)
    axes = tuple(wrap_dim(int(ax), f.ndim, "gradient") for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"gradient: repeated axis in {axis!r}")
    varargs = tuple(h.item() if isinstance(h, Tensor) and h.ndim == 0 else h for h in varargs)
    spacings = _spacings(varargs, axes)
    out = tuple(_gradient_axis(f, d, h, edge_order) for d, h in zip(axes, spacings))
    return out[0] if numpy_style and not torch_style and len(out) == 1 else out
