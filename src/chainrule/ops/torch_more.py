"""More of PyTorch's top-level names, as exact compositions of the table's primitives (their
gradients, to any order, come from those rules): positive, float_power, ldexp, dstack,
broadcast_tensors, split_with_sizes, sum_to_size, select_scatter, slice_scatter,
repeat_interleave, combinations, constant_pad_nd, nextafter, frexp, mode, unfold; and the
samplers multinomial and poisson.
"""

from __future__ import annotations

import collections
import itertools
import math

import numpy as np

from .._creation import _result_type
from .._dispatch import IN_PLACE, name_errors
from .._tensor import Tensor, wrap
from ..backend import beside, dtype_kind, numpy_dtype
from ._dims import wrap_dim
from .elementwise import where
from .indexing import getitem
from .shape import broadcast_to, cat, reshape, split
from .sorting import _nonempty_dim

__all__ = ["positive", "float_power", "ldexp", "dstack", "broadcast_tensors",
           "split_with_sizes", "sum_to_size", "select_scatter", "slice_scatter",
           "repeat_interleave", "combinations", "constant_pad_nd", "nextafter", "frexp",
           "mode", "unsafe_split", "unsafe_chunk", "fill", "zero_", "put", "index_reduce",
           "bernoulli", "normal", "alias_copy", "diagonal_copy", "expand_copy", "narrow_copy",
           "permute_copy", "split_with_sizes_copy", "squeeze_copy", "t_copy",
           "transpose_copy", "unbind_copy", "unsqueeze_copy", "view_copy", "conj",
           "conj_physical", "resolve_conj", "resolve_neg", "real", "imag", "angle", "multinomial",
           "poisson", "unfold"]

FrexpResult = collections.namedtuple("frexp", ["mantissa", "exponent"])
ModeResult = collections.namedtuple("mode", ["values", "indices"])


def _t(x):
    """``x`` as a tensor (numbers and arrays of numbers wrapped); TypeError otherwise."""
    if isinstance(x, Tensor):
        return x
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"expected a tensor or numbers, got {type(x).__name__} {x!r:.40}")
    return wrap(a)


def positive(input):
    """``input`` itself (PyTorch's ``torch.positive`` returns it unchanged)."""
    return _t(input)


def float_power(input, exponent):
    """``input ** exponent`` computed in float64 (``torch.float_power``)."""
    from .elementwise import pow as _pow
    from .elementwise import to_dtype

    x = _t(input)
    complex_ = dtype_kind(x.dtype) == "c" or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and dtype_kind(exponent.dtype) == "c")
    wide = np.complex128 if complex_ else np.float64  # (a complex one stays complex)
    x = to_dtype(x, wide)
    e = to_dtype(exponent, wide) if isinstance(exponent, Tensor) else \
        (complex(exponent) if complex_ else float(exponent))
    return _pow(x, e)


def ldexp(input, other):
    """``input * 2.0 ** other`` (``torch.ldexp``): the dtype follows from promoting the two
    (a float ``other`` beside a float32 ``input`` can widen it), an int exponent keeping a
    float ``input``'s dtype and giving an int ``input`` the default float dtype."""
    x, e = _t(input), _t(other)
    if not isinstance(other, Tensor):  # a number or a list: beside the input
        e = wrap(beside(e._data, x._data))
    if dtype_kind(e.dtype) != "f":  # (the Array API has no float ** int-array)
        e = e.to(np.float64)
    scale = 2.0 ** e
    if dtype_kind(x.dtype) == "f" and dtype_kind(other.dtype if isinstance(other, Tensor)
                                                   else np.asarray(other).dtype) != "f":
        scale = scale.to(x.dtype)
    return x * scale


def dstack(tensors):
    """Stack along the third dim: 0-D and 1-D become (1, 1, n), 2-D (m, n, 1)
    (``torch.dstack``)."""
    out = []
    for t in tensors:
        t = _t(t)
        if t.ndim == 0:
            t = reshape(t, (1, 1, 1))
        elif t.ndim == 1:
            t = reshape(t, (1, t.shape[0], 1))
        elif t.ndim == 2:
            t = reshape(t, tuple(t.shape) + (1,))
        out.append(t)
    return cat(out, 2)


def broadcast_tensors(*tensors):
    """The tensors broadcast to their common shape (views; ``torch.broadcast_tensors``)."""
    ts = [_t(t) for t in tensors]
    try:
        shape = np.broadcast_shapes(*[tuple(t.shape) for t in ts])
    except ValueError:
        raise RuntimeError(f"broadcast_tensors: shapes {[tuple(t.shape) for t in ts]} do not "
                           "broadcast") from None
    return tuple(broadcast_to(t, shape) for t in ts)


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of the given sizes along ``dim`` (which must add up to its size)."""
    x = _t(input)
    d = wrap_dim(dim, x.ndim, "split_with_sizes")
    if sum(split_sizes) != x.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{x.shape[d]} (input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(split_sizes)}")
    return split(x, list(split_sizes), d)


def sum_to_size(input, *size):
    """``input`` summed to ``size`` (which ``input`` broadcasts from), as ``Tensor.
    sum_to_size``: the reverse of broadcasting."""
    from .reduction import sum as _sum

    x = _t(input)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    if np.broadcast_shapes(size, tuple(x.shape)) != tuple(x.shape):
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size "
                           f"{list(x.shape)}")
    lead = x.ndim - len(size)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and x.shape[lead + i] != 1)
    y = _sum(x, dims, True) if dims else x
    return reshape(y, size)


def _scatter_slice(input, src, index):
    from .indexing import index_put

    x = _t(input)
    return index_put(x, index, _t(src))


def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim``
    (``torch.select_scatter``); differentiable in both."""
    x = _t(input)
    d = wrap_dim(dim, x.ndim, "select_scatter")
    if not -x.shape[d] <= index < x.shape[d]:
        raise IndexError(f"select_scatter: index {index} is out of range for dimension {d} "
                         f"of size {x.shape[d]}")
    want = tuple(x.shape[:d]) + tuple(x.shape[d + 1:])
    if tuple(_t(src).shape) != want:
        raise RuntimeError(f"select_scatter: expected src to have a size equal to the slice "
                           f"of self. src size = {list(_t(src).shape)}, slice size = "
                           f"{list(want)}")
    return _scatter_slice(x, src, (slice(None),) * d + (index,))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``src`` written at ``start:end:step`` along ``dim``
    (``torch.slice_scatter``); differentiable in both."""
    x = _t(input)
    d = wrap_dim(dim, x.ndim, "slice_scatter")
    key = (slice(None),) * d + (slice(start, end, step),)
    want = np.empty(x.shape, dtype=bool)[key].shape
    if tuple(_t(src).shape) != tuple(want):
        raise RuntimeError(f"slice_scatter: expected src to have a size equal to the slice of "
                           f"self. src size = {list(_t(src).shape)}, slice size = "
                           f"{list(want)}")
    return _scatter_slice(x, src, key)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each entry repeated ``repeats`` times (an int, or one count per entry along ``dim``;
    ``dim=None`` flattens first), as ``torch.repeat_interleave``; a gather of the
    entries, whose VJP adds the copies' gradients."""
    x = _t(input)
    if repeats is None:  # repeat_interleave(repeats): the indices, repeated
        counts = np.asarray(x.numpy(), dtype=np.int64)
        return wrap(beside(np.repeat(np.arange(counts.size), counts), x._data))
    if dim is None:
        x, d = reshape(x, (-1,)), 0
    else:
        d = wrap_dim(dim, x.ndim, "repeat_interleave")
    r = np.asarray(repeats.numpy() if isinstance(repeats, Tensor) else repeats)
    if r.ndim > 1 or (r.ndim == 1 and r.size not in (1, x.shape[d])):
        raise RuntimeError(f"repeat_interleave: repeats must have the same size as input "
                           f"along dim, but got repeats.size(0) = {r.size} and "
                           f"input.size({d}) = {x.shape[d]}")
    if (r < 0).any():
        raise RuntimeError("repeat_interleave: repeats can not be negative")
    idx = np.repeat(np.arange(x.shape[d]), r if r.ndim else int(r))
    return getitem(x, (slice(None),) * d + (idx,))


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's entries, as rows (C order), as
    ``torch.combinations``; a gather, differentiable in ``input``."""
    x = _t(input)
    if x.ndim != 1:
        raise RuntimeError(f"combinations: Expect a 1D vector, but got shape {list(x.shape)}")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = np.array(list(pick(range(x.shape[0]), r)), dtype=np.intp).reshape(-1, r)
    if rows.size == 0:
        return wrap(beside(np.empty((0, r) if r else (0,), dtype=numpy_dtype(x.dtype)), x._data))
    return getitem(x, (rows,))


def constant_pad_nd(input, pad, value=0):
    """Pad with ``value`` (``pad`` = (left, right) pairs from the last dim backwards, as
    ``torch.nn.functional.pad``; negative pads crop), as ``torch.constant_pad_nd``."""
    from .._creation import full
    from .rearrange import narrow

    x = _t(input)
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeError(f"constant_pad_nd: Length of pad must be even but instead it "
                           f"equals {len(pad)}, and at most 2 * {x.ndim}")
    for k in range(len(pad) // 2):
        d = x.ndim - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        if left < 0:
            x = narrow(x, d, -left, x.shape[d] + left)
        if right < 0:
            x = narrow(x, d, 0, x.shape[d] + right)
        parts = []
        for width in (max(left, 0), max(right, 0)):
            shape = list(x.shape)
            shape[d] = width
            parts.append(full(tuple(shape), value, dtype=x.dtype, device=x.device))
        x = cat([parts[0], x, parts[1]], d)
    if x is input:  # an empty pad: a copy, as PyTorch's (never the input itself)
        x = x.clone()
    return x


def nextafter(input, other):
    """The next float after ``input`` toward ``other`` (``torch.nextafter``; ``other`` itself
    where the two are equal, so ``nextafter(0.0, -0.0)`` is ``-0.0``): a step of one unit in
    the last place, so its gradient is 1 in ``input`` where ``input != other`` (NaN
    included), 0 where they are equal, and 0 in ``other``, as PyTorch's."""
    a, b = _t(input), _t(other)
    da, db = a.detach().numpy(), b.detach().numpy()  # found on the host, used beside a
    dtype = np.dtype(numpy_dtype(_result_type(a, other) if isinstance(other, Tensor) else
                                 a.dtype))  # PyTorch's promotion (a 0-d other is weaker)
    if a.dtype != dtype:
        a = a.to(dtype)
    da, db = da.astype(dtype, copy=False), db.astype(dtype, copy=False)
    moving = da != db
    nxt = np.where(moving, np.nextafter(da, db), db)
    with np.errstate(invalid="ignore", over="ignore"):
        step = nxt - da
    # ``a + step`` is exactly the next float (a NaN stays NaN); from an infinity the step is
    # infinite and ``a + step`` NaN, so the value there is the next float itself (the largest
    # finite one toward ``other``), as it is where ``a == other``
    through = moving & ~np.isinf(da)
    if through.all():
        out = a + wrap(beside(step, a._data))
    else:
        out = where(wrap(beside(through, a._data)),
                    a + wrap(beside(np.where(through, step, 0.0).astype(dtype), a._data)),
                    wrap(beside(nxt, a._data)))
    if isinstance(other, Tensor) and other.requires_grad:  # a zero gradient for ``other``
        out = where(wrap(beside(np.zeros(np.shape(nxt), bool), a._data)), b.to(dtype), out)
    return out


def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, ``|mantissa|`` in
    [0.5, 1) (``torch.frexp``); the mantissa is ``input * 2 ** -exponent``, differentiable
    with the exponent held fixed, as PyTorch."""
    x = _t(input)
    _, e = np.frexp(x.detach().numpy())
    exponent = wrap(beside(e.astype(np.int32), x._data))
    scale = beside((2.0 ** -e).astype(numpy_dtype(x.dtype)), x._data)
    return FrexpResult(x * wrap(scale), exponent)


def mode(input, dim=-1, keepdim=False):
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest among
    ties) and the index of its last occurrence, as ``torch.mode``; the values' gradient
    goes to that index."""
    from .indexing import take_along_dim

    x = _t(input)
    if x.ndim == 0:
        return ModeResult(x * 1, wrap(beside(np.array(0, dtype=np.int64), x._data)))
    _nonempty_dim(x, dim, "mode")
    d = wrap_dim(dim, x.ndim, "mode")
    data = np.moveaxis(np.asarray(x.detach().numpy()), d, -1)
    flat = data.reshape(-1, data.shape[-1])
    idx = np.empty(flat.shape[0], dtype=np.int64)
    for k, row in enumerate(flat):
        vals, counts = np.unique(row, return_counts=True)
        best = vals[np.argmax(counts)]  # unique sorts: the smallest among the most frequent
        idx[k] = np.nonzero(row == best)[0][-1] if row.size else 0
    idx = idx.reshape(data.shape[:-1])
    index = wrap(beside(np.expand_dims(idx, d), x._data))  # found on the host
    values = take_along_dim(x, index, d)
    if not keepdim:
        values = reshape(values, tuple(s for i, s in enumerate(values.shape) if i != d))
        return ModeResult(values, wrap(beside(idx, x._data)))
    return ModeResult(values, index)


def unsafe_split(input, split_size_or_sections, dim=0):
    """``split`` (PyTorch's "unsafe" variant differs only in skipping a version check)."""
    return split(_t(input), split_size_or_sections, dim)


def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` (PyTorch's "unsafe" variant differs only in skipping a version check)."""
    from .shape import chunk

    return chunk(_t(input), chunks, dim)


def fill(input, value):
    """A tensor of ``input``'s shape and dtype filled with ``value`` (``torch.fill``); a
    0-d tensor ``value`` gets the sum of the gradient, ``input`` none."""
    x = _t(input)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions.")
        return broadcast_to(value.to(x.dtype), tuple(x.shape)) * 1
    return wrap(beside(np.full(tuple(x.shape), value, dtype=numpy_dtype(x.dtype)), x._data))


def zero_(input):
    """``input`` set to zeros in place (``torch.zero_``); its gradient there is 0."""
    from .._creation import zeros_like

    x = _t(input)
    # ``where`` rather than ``0 * old``, which is NaN where ``old`` is NaN or infinite
    return IN_PLACE.update(x, lambda old: where(zeros_like(old, dtype=bool), old, zeros_like(old)),
                  "zero_")


def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source`` written at the flat positions ``index`` (added
    with ``accumulate``), as ``torch.put``; differentiable in both."""
    from .indexing import index_put

    x = _t(input)
    idx = np.asarray(index.numpy() if isinstance(index, Tensor) else index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"put: Expected a long tensor for index, but got {idx.dtype}")
    src = _t(source)
    if idx.size != src.numel():
        raise RuntimeError(f"put: Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {src.numel()}, "
                           f"index.numel() = {idx.size}")
    n = int(np.prod(x.shape))
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise IndexError(f"put: index out of range for a tensor of {n} elements")
    flat = reshape(x, (-1,))
    out = index_put(flat, (idx.reshape(-1) % max(n, 1),), reshape(src, (-1,)), accumulate)
    return reshape(out, tuple(x.shape))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """``input`` with the slices of ``source`` reduced into its slices ``index`` along
    ``dim`` ("prod", "mean", "amax", "amin"), as ``torch.index_reduce``: a
    ``scatter_reduce`` with the index spread over the other dims."""
    from .scatter import scatter_reduce

    x, src = _t(input), _t(source)
    if x.ndim == 0:  # a 0-d self (and source) act as 1-D, as in PyTorch
        out = index_reduce(reshape(x, (1,)), 0, index, reshape(src, (-1,)), reduce,
                           include_self=include_self)
        return reshape(out, ())
    d = wrap_dim(dim, x.ndim, "index_reduce")
    idx = np.asarray(index.numpy() if isinstance(index, Tensor) else index).astype(np.int64)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce: reduce argument must be either prod, mean, amax or "
                           f"amin, got {reduce}")
    if idx.ndim != 1 or src.ndim != x.ndim or src.shape[d] != idx.size:
        raise RuntimeError(f"index_reduce: index of shape {list(idx.shape)} and source of "
                           f"shape {list(src.shape)} do not fit self of shape "
                           f"{list(x.shape)} along dim {d}")
    shape = [1] * src.ndim
    shape[d] = idx.size
    full_index = wrap(np.broadcast_to(idx.reshape(shape), tuple(src.shape)).copy())
    return scatter_reduce(x, d, full_index, src, reduce, include_self=include_self)


def bernoulli(input, p=None, *, generator=None):
    """Samples in {0, 1} with probabilities ``input`` (or the number ``p``), from chainrule's
    generator (``manual_seed``) or ``generator`` (a NumPy Generator); no gradient, as
    PyTorch's."""
    from .. import _creation

    x = _t(input)
    rng = generator or _creation.default_generator
    probs = np.asarray(x.detach().numpy()) if p is None else np.full(tuple(x.shape), p)
    if ((probs < 0) | (probs > 1)).any():
        raise RuntimeError("bernoulli: Expected p_in >= 0 && p_in <= 1 to be true")
    dtype = numpy_dtype(x.dtype) if dtype_kind(x.dtype) == "f" else np.float32
    return wrap(beside((rng.random(probs.shape) < probs).astype(dtype), x._data))


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False, out=None):
    """``mean + std * z`` with standard normal ``z`` from chainrule's generator
    (``manual_seed``) or ``generator``, as ``torch.normal``; differentiable in tensor
    ``mean`` and ``std`` (the reparametrization: d/dmean = 1, d/dstd = z).

    With numbers for both, ``size`` is required and the result has the default float dtype
    (or ``dtype``), on ``device``. Raises RuntimeError for a negative ``std`` (before the
    draw, leaving the random state as it was), TypeError for other types."""
    from .. import _creation

    rng = generator or _creation.default_generator
    for name, v in (("mean", mean), ("std", std)):  # before the draw: a failing call
        if not isinstance(v, (Tensor, int, float)):  # leaves the random state alone
            raise TypeError(f"normal: {name} must be a Tensor or a number, got "
                            f"{type(v).__name__}")
    m = mean if isinstance(mean, Tensor) else None
    s = std if isinstance(std, Tensor) else None
    if size is not None:
        shape = tuple(size)
    else:
        shapes = [tuple(t.shape) for t in (m, s) if t is not None]
        if not shapes:
            raise TypeError("normal: give mean or std as a tensor, or size")
        shape = np.broadcast_shapes(*shapes)
    if s is not None and (np.asarray(s.detach().cpu().numpy()) < 0).any():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    if s is None and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if dtype is None:
        dtype = next((numpy_dtype(t.dtype) for t in (m, s) if t is not None),
                     np.dtype(_creation.get_default_dtype()))
    z = rng.standard_normal(shape).astype(numpy_dtype(dtype))
    like = next((t._data for t in (m, s) if t is not None), None)  # drawn on the host
    if like is not None:
        z = wrap(beside(z, like))
    else:
        z = _creation.tensor(z, device=device)
    result = mean + std * z
    if requires_grad:
        result = result.detach().requires_grad_()
    if out is not None:
        return IN_PLACE.write_out(out, result, "normal")
    return result


def _copy_of(view_name):
    """PyTorch's ``<view>_copy``: the view op's result as a new tensor (no shared memory),
    with the same gradient."""
    def fn(input, *args, **kwargs):
        from . import shape
        from .matmul import diagonal
        from .rearrange import narrow

        named = {"diagonal": diagonal, "narrow": narrow, "split_with_sizes": split_with_sizes}
        view = named.get(view_name) or getattr(shape, view_name)
        out = view(_t(input), *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(o.clone() for o in out)
        return out.clone()

    fn.__name__ = f"{view_name}_copy"
    fn.__doc__ = f"``{view_name}(...)`` as a copy (``torch.{view_name}_copy``)."
    return fn


def alias_copy(input):
    """A copy of ``input`` (``torch.alias_copy``)."""
    return _t(input).clone()


diagonal_copy = _copy_of("diagonal")
expand_copy = _copy_of("expand")
narrow_copy = _copy_of("narrow")
permute_copy = _copy_of("permute")
split_with_sizes_copy = _copy_of("split_with_sizes")
squeeze_copy = _copy_of("squeeze")
t_copy = _copy_of("t")
transpose_copy = _copy_of("transpose")
unbind_copy = _copy_of("unbind")
unsqueeze_copy = _copy_of("unsqueeze")
view_copy = _copy_of("view")


# Complex conjugation and parts: PyTorch's names, so code written for real and complex
# tensors alike runs. chainrule differentiates real tensors only (a complex tensor cannot
# require grad), so on a complex tensor these compute values, with no history.

def _complex_part(fn, x):
    """``fn`` (conj, real or imag) of a complex tensor's data, on its backend (NumPy's
    ``real``/``imag`` are views of the data, as PyTorch's)."""
    d = x._data
    if d.__class__ is np.ndarray:
        return wrap(getattr(np, fn)(d) if fn == "conj" else getattr(d, fn))
    from ..backend import backend_of

    return wrap(getattr(backend_of(d).xp, fn)(d))


def conj(input):
    """The complex conjugate (a new tensor: chainrule has no lazy conjugate bit); a real
    tensor is returned as it is (as PyTorch's)."""
    x = _t(input)
    return _complex_part("conj", x) if dtype_kind(x.dtype) == "c" else x


def conj_physical(input):
    """The complex conjugate as a new tensor: for a real tensor, a copy of ``input``."""
    x = _t(input)
    return _complex_part("conj", x) if dtype_kind(x.dtype) == "c" else x.clone()


def resolve_conj(input):
    """``input``: chainrule's conjugates are already computed (no lazy bit to resolve)."""
    return _t(input)


def resolve_neg(input):
    """``input`` (chainrule has no lazy negation to resolve)."""
    return _t(input)


def real(input):
    """The real part: a real tensor itself, a complex one's real part (float dtype of its
    precision; a view of the data on NumPy, as PyTorch's)."""
    x = _t(input)
    return _complex_part("real", x) if dtype_kind(x.dtype) == "c" else x


def imag(input):
    """The imaginary part of a complex tensor, as ``torch.imag``.

    Raises RuntimeError for a real tensor (PyTorch's message)."""
    x = _t(input)
    if dtype_kind(x.dtype) != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _complex_part("imag", x)


def angle(input):
    """The argument of each entry: 0 for ``x >= 0``, pi for ``x < 0``, nan for nan (a real
    tensor); its gradient is 0, as PyTorch's."""
    x = _t(input)
    if dtype_kind(x.dtype) == "c":  # the argument, in the matching real dtype (no gradient:
        # a complex tensor never requires grad in chainrule)
        return wrap(np.asarray(np.angle(x.detach().numpy())))
    zero = x.nan_to_num(0.0, 0.0, 0.0) * 0.0 + 0.0  # 0 (not -0 or nan) for -0 and +-inf
    return where(x < 0, zero + math.pi, where(x != x, math.nan, zero))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """``num_samples`` category indices per row of ``input`` (1-D, or 2-D: one row per
    distribution), drawn with probabilities proportional to its non-negative weights, from
    chainrule's generator or ``generator``; int64, no gradient (``torch.multinomial``).
    Without replacement, a category is drawn at most once (zero-weight categories come
    last, lowest index first, once the others are used up).

    Raises RuntimeError (PyTorch's texts) for a non-float input, a negative, inf or nan
    weight, a row summing to 0, ``num_samples <= 0``, or more samples than categories
    without replacement."""
    from .. import _creation

    x = _t(input)
    if dtype_kind(x.dtype) != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{numpy_dtype(x.dtype).name}")
    if x.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n = int(num_samples)
    if n <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    p = np.asarray(x.detach().numpy(), dtype=np.float64).reshape(-1, x.shape[-1])
    k = p.shape[-1]
    if not replacement and n > k:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = p.sum(-1, keepdims=True)
    if (total <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = generator or _creation.default_generator
    if replacement:  # inverse CDF: a zero-weight category has an empty interval
        cdf = np.cumsum(p / total, axis=-1)
        u = rng.random((p.shape[0], n))
        out = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u)])
        out = np.minimum(out, k - 1)
    else:  # the exponential race: the n largest p / E (E ~ Exp(1)) are the draws, in order
        keys = p / rng.exponential(1.0, p.shape)
        out = np.argsort(-keys, axis=-1, kind="stable")[:, :n]
    out = out.astype(np.int64)
    return wrap(beside(out[0] if x.ndim == 1 else out, x._data))  # drawn on the host


def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (a float tensor), in its dtype, from chainrule's
    generator or ``generator``; the gradient with respect to the rates is zero, as in
    PyTorch.

    Raises NotImplementedError for an integer input and RuntimeError for a negative rate."""
    from .. import _creation

    x = _t(input)
    if dtype_kind(x.dtype) != "f":
        raise NotImplementedError(f'"poisson_cpu" not implemented for '
                                  f"'{_TORCH_DTYPE.get(numpy_dtype(x.dtype).name, x.dtype)}'")
    rates = np.asarray(x.detach().numpy())
    if (rates < 0).any() or np.isnan(rates).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rng = generator or _creation.default_generator
    sample = wrap(beside(np.asarray(rng.poisson(rates)).astype(numpy_dtype(x.dtype)), x._data))
    return x * 0.0 + sample if x.requires_grad else sample


_TORCH_DTYPE = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                "uint8": "Byte", "bool": "Bool"}


def unfold(input, dimension, size, step):
    """The windows of ``size`` entries along ``dimension``, ``step`` apart, as a new last
    dim (``Tensor.unfold``): shape ``(..., (n - size) // step + 1, ..., size)``.
    Differentiable (an indexing op: overlapping windows add their gradients).

    Raises RuntimeError when ``size`` exceeds the dim's length or ``step <= 0``."""
    from .indexing import getitem as _getitem
    from .shape import movedim

    x = _t(input)
    scalar = x.ndim == 0
    if scalar:  # PyTorch: a 0-d tensor unfolds to its one entry, as a 1-D tensor
        x = reshape(x, (1,))
    d = wrap_dim(dimension, x.ndim, "unfold")
    n = x.shape[d]
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if scalar:
        return x if size == 1 else getitem(x, slice(0, size))
    starts = np.arange(0, n - size + 1, step, dtype=np.int64)
    index = wrap(starts[:, None] + np.arange(size, dtype=np.int64)[None, :])
    windows = _getitem(x, (slice(None),) * d + (index,))  # (..., k, size, ...)
    return movedim(windows, d + 1, -1)


for _name in __all__:
    globals()[_name] = name_errors(globals()[_name], _name)
del _name
