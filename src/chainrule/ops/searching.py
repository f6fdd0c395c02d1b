"""PyTorch's functions whose results are indices, counts or truth values: nonzero,
argwhere, unique, unique_consecutive, bincount, histc, searchsorted, bucketize, isin,
tril_indices, triu_indices, logical_and/or/xor, signbit, heaviside, scalar_tensor, the
bitwise ops (and, or, xor, not, shifts), isinf/isposinf/isneginf/isreal, all/any.

None of them has a gradient. Those whose result is a float computed from an input that
requires grad (``unique``'s values, ``bincount`` with weights, ``heaviside``) give a
tensor whose backward raises "the derivative for ... is not implemented", as PyTorch's
does, so a gradient is never silently zero.
"""

from __future__ import annotations

import collections
import operator

import numpy as np

from .._creation import _make, _result_type, get_default_dtype
from .._dispatch import edge, name_errors
from .._node import DelayedError
from .._tensor import Tensor, _fill, wrap
from ..backend import backend_of, beside, numpy_dtype, on_device_of, row_major

__all__ = ["nonzero", "argwhere", "unique", "unique_consecutive", "bincount", "histc",
           "histogram", "histogramdd",
           "searchsorted", "bucketize", "isin", "tril_indices", "triu_indices", "logical_and",
           "logical_or", "logical_xor", "signbit", "heaviside", "scalar_tensor"]

UniqueResult = collections.namedtuple("unique", ["values", "inverse_indices", "counts"])


def _host(x, op):
    """``x``'s data as a NumPy array: NumPy tensors, numbers and lists as they are, a
    device's (a GPU's) data by an explicit host copy. A lazy backend (Dask) refuses: these
    results have data-dependent shapes, which it cannot give without computing."""
    a = x._data if isinstance(x, Tensor) else x
    if isinstance(a, (np.ndarray, np.generic, int, float, bool, list, tuple)):
        return np.asarray(a)
    b = backend_of(a)
    if b.lazy:
        raise NotImplementedError(f"{op}: runs on NumPy data only, got a {b.name} array")
    return np.asarray(b.to_numpy(a))


def _beside(data, *inputs):
    """A host result ``data`` moved onto the device of the first input that lives off the
    host (as it is when all are NumPy data or numbers)."""
    for x in inputs:
        a = x._data if isinstance(x, Tensor) else x
        if hasattr(a, "shape") and a.__class__ is not np.ndarray \
                and not isinstance(a, np.generic):
            return beside(np.asarray(data), a)
    return data


def _no_derivative(data, op, *inputs):
    """``data`` as a tensor (beside the inputs); when an input requires grad, one whose
    backward raises."""
    data = _beside(data, *inputs)
    grad_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    if not grad_inputs:
        return wrap(data)
    node = DelayedError(f"the derivative for '{op}' is not implemented.",
                        tuple(edge(x) for x in grad_inputs))
    return _fill(object.__new__(Tensor), data, node, 0)


@name_errors
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero entries: an (n, ndim) int64 tensor, or with ``as_tuple`` one
    1-D tensor per dim (there, a 0-d input counts as 1-D)."""
    a = _host(input, "nonzero")
    idx = np.nonzero(np.atleast_1d(a))
    if as_tuple:
        return tuple(wrap(_beside(i.astype(np.int64), input)) for i in idx)
    if a.ndim == 0:  # (1, 0) or (0, 0): one or no entry, no coordinates
        return wrap(_beside(np.zeros((int(a != 0), 0), dtype=np.int64), input))
    return wrap(_beside(np.stack(idx, axis=-1).astype(np.int64), input))


@name_errors
def argwhere(input):
    """``nonzero(input)``: an (n, ndim) int64 tensor of the indices of non-zero entries."""
    a = _host(input, "argwhere")
    return wrap(_beside(np.argwhere(a).astype(np.int64), input))


@name_errors
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), and optionally the index of each entry's value and
    each value's count; along ``dim`` the distinct slices. No gradient (backward raises)."""
    a = _host(input, "unique")
    values, inverse, counts = np.unique(a, return_inverse=True, return_counts=True, axis=dim)
    inverse = inverse.reshape(a.shape if dim is None else (a.shape[dim],))
    out = [_no_derivative(values, "unique", input)]
    if return_inverse:
        out.append(wrap(_beside(inverse.astype(np.int64), input)))
    if return_counts:
        out.append(wrap(_beside(counts.astype(np.int64), input)))
    return out[0] if len(out) == 1 else tuple(out)


@name_errors
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (of slices along ``dim``); optionally the
    run index of each entry and each run's length. No gradient (backward raises)."""
    a = _host(input, "unique_consecutive")
    axis = 0 if dim is None else dim % a.ndim
    flat = a.reshape(-1) if dim is None else np.moveaxis(a, axis, 0)
    n = flat.shape[0]
    if n == 0:
        starts = np.zeros(0, dtype=np.int64)
    else:
        change = np.any((flat[1:] != flat[:-1]).reshape(n - 1, -1), axis=1)
        starts = np.concatenate([[0], np.nonzero(change)[0] + 1])
    values = flat[starts] if dim is None else np.moveaxis(flat[starts], 0, axis)
    out = [_no_derivative(values, "unique_consecutive", input)]
    if return_inverse:
        inv = np.cumsum(np.isin(np.arange(n), starts)) - 1
        out.append(wrap(_beside(inv.reshape(a.shape if dim is None else (n,)).astype(np.int64),
                                input)))
    if return_counts:
        out.append(wrap(_beside(np.diff(np.append(starts, n)).astype(np.int64), input)))
    return out[0] if len(out) == 1 else tuple(out)


@name_errors
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-D non-negative integer tensor (sums of ``weights`` per
    value when given). No gradient (backward raises when the weights require grad)."""
    a = _host(input, "bincount")
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise RuntimeError(f"bincount: expected a 1-D integer tensor, got {a.ndim}-D "
                           f"{a.dtype}")
    if weights is None:
        return wrap(_beside(np.bincount(a, minlength=minlength).astype(np.int64), input))
    w = _host(weights, "bincount")
    # float weights keep their dtype; any other (int, bool) gives float64, as PyTorch's
    dtype = w.dtype if w.dtype.kind == "f" else np.float64
    return _no_derivative(np.bincount(a, w, minlength=minlength).astype(dtype), "bincount",
                          weights, input)


def histc(input, bins=100, min=0, max=0):
    """Histogram of ``bins`` equal bins over [min, max] (the data's range when min == max;
    widened by 1 each way when that is one value too); entries outside (and NaN) are
    ignored, one on ``max`` counts in the last bin. Same dtype as the (floating) input;
    the result does not require grad.

    As PyTorch's ``histc``, an entry's bin is found by division alone
    (``(x - min) * bins / (max - min)`` in the input's dtype), without the check against
    the bin edges that ``histogram`` (and NumPy) make: an entry within rounding of an
    inner edge may count one bin off theirs."""
    a = _host(input, "histc")
    _float_only(a, "histogram_cpu")
    _positive_bins(bins, 0)
    lo, hi = float(min), float(max)
    if lo == hi and a.size:  # PyTorch: min == max (not only both 0) takes the data's range
        lo, hi = float(a.min()), float(a.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    f = a.dtype.type
    left, right = f(lo), f(hi)
    x = a.ravel()
    x = x[(x >= left) & (x <= right)]
    with np.errstate(over="ignore", invalid="ignore"):
        pos = ((x - left) * f(bins) / (right - left)).astype(np.int64)
    pos[pos == bins] = bins - 1  # the last bin holds its right edge
    counts = np.bincount(pos, minlength=bins)
    return wrap(_beside(counts.astype(a.dtype), input))


HistogramResult = collections.namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = collections.namedtuple("histogramdd", ["hist", "bin_edges"])
_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}


def _float_only(a, kernel):
    if a.dtype not in (np.float32, np.float64):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_TORCH_NAMES.get(a.dtype.name, a.dtype.name)}'")


def _positive_bins(bins, dim):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           f"dimension {dim}")


def _torch_linspace(lo, hi, n, dtype):
    """``torch.linspace(lo, hi, n)`` in ``dtype`` as PyTorch's CPU kernel computes it: the
    step in ``dtype``, the first half ``lo + step * i`` and the second ``hi - step *
    (n - 1 - i)``, each rounded once (the kernel's fused multiply-add; emulated in a wider
    type), so that bin edges, and the bins of entries on them, agree with PyTorch's."""
    f = np.dtype(dtype).type
    start, end = f(lo), f(hi)
    step = (end - start) / f(n - 1)
    wide = np.float64 if dtype == np.float32 else np.longdouble
    s, e, st = wide(start), wide(end), wide(step)
    i = np.arange(n).astype(wide)
    return np.where(i < n // 2, s + st * i, e - st * (wide(n - 1) - i)).astype(dtype)


def _histogramdd(op, a, bins, ranges, weight, density, n):
    """PyTorch's ``histogramdd`` of the points ``a`` (shape (m, n)): its argument checks,
    its bin edges (``_torch_linspace`` over the given range or the data's), then NumPy's
    ``histogramdd`` on those edges (the bins PyTorch's search finds: ``[e_i, e_i+1)``, the
    last one closed). Returns (hist, list of edge arrays) in ``a``'s dtype."""
    _float_only(a, "histogramdd")
    dt = a.dtype
    if isinstance(bins, Tensor) or not isinstance(bins, (list, tuple)):
        bins = [bins] * n
    if len(bins) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if ranges is not None:
        ranges = [float(r) for r in ranges]
        if len(ranges) != 2 * n:
            raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range "
                               f"should have {2 * n} elements, but got {len(ranges)}")
    w = None
    if weight is not None:
        w = _host(weight, op)
        if w.dtype != dt:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided, input tensor and weight "
                f"tensor should have the same dtype, but got input({_CPP_NAMES.get(dt.name)})"
                f", and weight({_CPP_NAMES.get(w.dtype.name, w.dtype.name)})")
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            e = _host(b, op)
            if e.ndim != 1:
                raise RuntimeError("torch.histogramdd: bins tensor should have one dimension, "
                                   f"but got {e.ndim} dimensions in the bins tensor for "
                                   f"dimension {d}")
            if e.dtype != dt:
                raise RuntimeError(
                    "torch.histogramdd: input tensor and bins tensors should have the same "
                    f"dtype, but got input with dtype {_CPP_NAMES.get(dt.name)} and bins for "
                    f"dimension {d} with dtype {_CPP_NAMES.get(e.dtype.name, e.dtype.name)}")
            edges.append(np.array(e))
            continue
        b = operator.index(b)
        _positive_bins(b, d)
        if ranges is not None:
            lo, hi = ranges[2 * d], ranges[2 * d + 1]
        elif a.shape[0]:
            lo, hi = float(a[:, d].min()), float(a[:, d].max())
        else:
            lo, hi = 0.0, 1.0
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{lo:g}, {hi:g}] is "
                               "not finite")
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension {d}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(_torch_linspace(lo, hi, b + 1, dt))
    shape = tuple(max(len(e) - 1, 0) for e in edges)
    if any(not (e[0] <= e[-1]) for e in edges if len(e)):  # PyTorch counts nothing there
        hist = np.zeros(shape, dt)
    else:
        try:
            hist = np.histogramdd(a, bins=edges, weights=w)[0].astype(dt)
        except ValueError as error:  # edges that are not sorted
            raise RuntimeError(f"torch.{op}: {error}") from None
    if density:
        total = hist.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            hist = hist / total
            for d, e in enumerate(edges):
                hist = hist / np.diff(e).reshape([-1 if k == d else 1 for k in range(n)])
    return hist.astype(dt), edges


def _histogram_outputs(op, hist, edges, inputs, aten):
    """The tensors of a histogram: when an input requires grad, they have a grad_fn whose
    backward raises (as PyTorch's ``NotImplemented`` node)."""
    grad_inputs = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    first = inputs[0]
    if not grad_inputs:
        return wrap(_beside(hist, first)), [wrap(_beside(e, first)) for e in edges]
    node = DelayedError(f"derivative for aten::{aten} is not implemented",
                        tuple(edge(x) for x in grad_inputs))
    make = lambda data: _fill(object.__new__(Tensor), _beside(data, first), node, 0)  # noqa: E731
    return make(hist), [make(e) for e in edges]


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """Histogram of the values of ``input`` (``torch.histogram``): ``bins`` equal bins over
    ``range`` (the data's min and max when None; a range of one value is widened by 0.5
    each way), or the bins between the edges of a 1-D tensor ``bins``. Each bin is
    ``[e_i, e_i+1)``, the last closed; entries outside (and NaN) are not counted.
    ``weight`` (same shape and dtype as ``input``) sums weights instead of counting;
    ``density`` divides by the total and the bin widths. Returns the named tuple
    ``(hist, bin_edges)`` of ``input``'s (floating) dtype. The outputs have no
    derivative: where an input requires grad, backward through them raises, as PyTorch."""
    a = _host(input, "histogram")
    _float_only(a, "histogramdd")
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range= is only taken with an int number of bins, "
                        "not with a tensor of bin edges")
    w = None
    if weight is not None:  # PyTorch takes both flattened: only their sizes must agree
        w = _host(weight, "histogram").reshape(-1)
        if w.size != a.size:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same "
                "shape as the input tensor excluding its innermost dimension, but got input "
                f"with shape [{a.size}, 1] and weight with shape [{w.size}]")
        w = wrap(w)
    hist, edges = _histogramdd("histogram", a.reshape(-1, 1), [bins], range, w, density, 1)
    hist, edges = _histogram_outputs("histogram", hist, edges, (input, weight, bins),
                                     "histogram")
    return HistogramResult(hist, edges[0])


def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """Histogram of the points of ``input`` (``torch.histogramdd``): its last dim of size
    N gives each point's N coordinates. ``bins`` is an int (per dim), N ints, or N 1-D
    tensors of edges; ``range`` 2N floats (min, max per dim), the data's by default;
    ``weight`` has ``input``'s shape less its last dim. Returns the named tuple
    ``(hist, bin_edges)``: an N-d tensor and a tuple of N edge tensors. No derivative (as
    :func:`histogram`)."""
    a = _host(input, "histogramdd")
    if a.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    n = a.shape[-1]
    if weight is not None:
        w = _host(weight, "histogramdd")
        if tuple(w.shape) != a.shape[:-1]:
            raise RuntimeError(
                "torch.histogramdd: if weight tensor is provided it should have the same "
                "shape as the input tensor excluding its innermost dimension, but got input "
                f"with shape {list(a.shape)} and weight with shape {list(w.shape)}")
        weight_flat = wrap(w.reshape(-1))
    else:
        weight_flat = None
    hist, edges = _histogramdd("histogramdd", a.reshape(-1, n), bins, range, weight_flat,
                               density, n)
    tensors = [b for b in (bins if isinstance(bins, (list, tuple)) else ())
               if isinstance(b, Tensor)]
    hist, edges = _histogram_outputs("histogramdd", hist, edges,
                                     (input, weight, *tensors), "_histogramdd_from_bin_cts")
    return HistogramddResult(hist, tuple(edges))


@name_errors
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Where each value of ``input`` would be inserted in ``sorted_sequence`` (its last
    dim, batched over the leading ones) to keep it sorted; ``right``/``side="right"`` puts
    it after equal values. int64 (int32 with ``out_int32``)."""
    seq = _host(sorted_sequence, "searchsorted")
    vals = _host(input, "searchsorted")
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, _host(sorter, "searchsorted"), -1)
    if seq.ndim <= 1:
        out = np.searchsorted(seq, vals, side=side)
    else:
        lead = seq.shape[:-1]
        if vals.shape[:-1] != lead:
            raise RuntimeError(f"searchsorted: boundaries {seq.shape} and input {vals.shape} "
                               "must have the same leading dims")
        s2, v2 = seq.reshape(-1, seq.shape[-1]), vals.reshape(-1, vals.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(s2, v2)]).reshape(
            vals.shape)
    return wrap(_beside(np.asarray(out).astype(np.int32 if out_int32 else np.int64), input,
                        sorted_sequence))


@name_errors
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each entry for 1-D ``boundaries``: ``searchsorted(boundaries,
    input)`` (``right=True``: boundaries[i-1] <= x < boundaries[i])."""
    b = _host(boundaries, "bucketize")
    if b.ndim != 1:
        raise RuntimeError(f"bucketize: boundaries tensor must be 1 dimension, but got dim "
                           f"{b.ndim}")
    return searchsorted(b, input, out_int32=out_int32, right=right)


@name_errors
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each entry of ``elements`` is among ``test_elements`` (a bool tensor)."""
    return wrap(_beside(np.isin(_host(elements, "isin"), _host(test_elements, "isin"),
                                assume_unique=assume_unique, invert=invert),
                        elements, test_elements))


def _tri_indices(fn, row, col, offset, dtype, device):
    r, c = fn(row, offset, col)
    return _make(np.stack([r, c]).astype(numpy_dtype(dtype or np.int64)), False, device)


@name_errors
def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) coordinates of the lower triangle of a ``row x col`` matrix."""
    return _tri_indices(np.tril_indices, row, col, offset, dtype, device)


@name_errors
def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, n) coordinates of the upper triangle of a ``row x col`` matrix."""
    return _tri_indices(np.triu_indices, row, col, offset, dtype, device)


def _logical(name):
    def fn(input, other):
        a, b = (x._data if isinstance(x, Tensor) else x for x in (input, other))
        if a.__class__ is np.ndarray or b.__class__ is np.ndarray:
            out = np.asarray(getattr(np, name)(a, b))
            if out.dtype.kind != "b":  # NumPy's object loop: None or a string operand
                raise TypeError(f"{name}: arguments must be tensors or numbers, got "
                                f"{type(input).__name__} and {type(other).__name__}")
            return wrap(out)
        return wrap(getattr(backend_of(a).xp, name)(a, b))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name.split('_')[1]}`` of the truth values (a bool tensor)."
    return name_errors(fn)


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


@name_errors
def signbit(input):
    """Whether the sign bit is set (True for -0.0): a bool tensor."""
    a = input._data if isinstance(input, Tensor) else np.asarray(input)
    if a.__class__ is np.ndarray:
        return wrap(np.asarray(np.signbit(a)))
    return wrap(backend_of(a).xp.signbit(a))


@name_errors
def heaviside(input, values):
    """0 where x < 0 (or x is NaN), ``values`` where x == 0, 1 where x > 0. No gradient:
    backward raises (as PyTorch: the step's derivative is not implemented)."""
    a, v = _host(input, "heaviside"), _host(values, "heaviside")
    # PyTorch's ``x == 0 ? values : x > 0``: a NaN input gives 0 (NumPy's heaviside, NaN)
    return _no_derivative(np.asarray(np.where(a == 0, v, a > 0)).astype(np.result_type(a, v)),
                          "heaviside", input, values)


@name_errors
def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding ``s`` (the default float dtype unless ``dtype``)."""
    return _make(np.asarray(s, dtype=numpy_dtype(dtype or get_default_dtype())), requires_grad,
                 device)


# --- bitwise ops: integer and bool tensors only, no gradient (PyTorch's semantics) ---------

_TORCH_NAMES = {"float16": "Half", "float32": "Float", "float64": "Double", "bool": "Bool",
                "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}

# name -> (NumPy's ufunc, the operator (other backends), PyTorch's kernel name for its
# error, whether bool tensors are allowed)
_BITWISE = {
    "bitwise_and": (np.bitwise_and, operator.and_, "bitwise_and_cpu", True),
    "bitwise_or": (np.bitwise_or, operator.or_, "bitwise_or_cpu", True),
    "bitwise_xor": (np.bitwise_xor, operator.xor, "bitwise_xor_cpu", True),
    "bitwise_left_shift": (np.left_shift, operator.lshift, "lshift_cpu", False),
    "bitwise_right_shift": (np.right_shift, operator.rshift, "rshift_cpu", False),
}


def _torch_name(dtype):
    name = np.dtype(dtype).name
    return _TORCH_NAMES.get(name, name)


def _bitwise_dtype(a, b, kernel, bool_ok):
    """The result dtype (NumPy's) of a bitwise op on ``a`` and ``b``, by PyTorch's
    promotion (:func:`chainrule.result_type`: a Python int keeps an int32 tensor int32).

    Raises NotImplementedError (PyTorch's text) for a float result, or bool for a shift."""
    if a.__class__ is Tensor and b.__class__ is Tensor and a._data.dtype == b._data.dtype \
            and a.ndim and b.ndim:
        dtype = np.dtype(numpy_dtype(a._data.dtype))
    else:
        dtype = np.dtype(_result_type(a, b))
    if dtype.kind not in ("iu" + ("b" if bool_ok else "")):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_torch_name(dtype)}\'')
    return dtype


def _cast(x, dtype):
    """``x``'s data as ``dtype``: an array of its backend, or (a number) a NumPy scalar,
    wrapped around as PyTorch does."""
    if isinstance(x, Tensor):
        d = x._data
        if d.__class__ is np.ndarray:
            return d if d.dtype == dtype else d.astype(dtype)
        if np.dtype(numpy_dtype(d.dtype)) == dtype:
            return d
        xp = backend_of(d).xp
        return xp.astype(d, getattr(xp, dtype.name))
    a = np.asarray(x)
    if a.dtype.kind not in "biu":
        raise TypeError(f"expected a tensor or an integer, got {type(x).__name__} {x!r:.40}")
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def _bitwise(name):
    ufunc, operator_fn, kernel, bool_ok = _BITWISE[name]

    def fn(input, other):
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            input = wrap(np.asarray(input))
        dtype = _bitwise_dtype(input, other, kernel, bool_ok)
        a, b = _cast(input, dtype), _cast(other, dtype)
        host_a = a.__class__ is np.ndarray or isinstance(a, np.generic)
        host_b = b.__class__ is np.ndarray or isinstance(b, np.generic)
        if host_a and host_b:
            return wrap(np.asarray(ufunc(a, b)))
        # another backend: its operators, with a number as a Python scalar
        if host_a:
            a = a.item() if a.ndim == 0 else beside(a, b)
        if host_b:
            b = b.item() if b.ndim == 0 else beside(b, a)
        return wrap(operator_fn(a, b))

    fn.__name__ = fn.__qualname__ = name
    what = name.split("_", 1)[1].replace("_", " ")
    fn.__doc__ = (f"Elementwise bitwise {what} of integer (or bool) tensors, in the dtype "
                  "PyTorch promotes them to; no gradient. Raises NotImplementedError for "
                  "float tensors (as PyTorch).")
    return fn


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")
bitwise_left_shift = _bitwise("bitwise_left_shift")
bitwise_right_shift = _bitwise("bitwise_right_shift")


def bitwise_not(input):
    """Elementwise bitwise NOT of an integer tensor (logical NOT of a bool one); no
    gradient. Raises NotImplementedError for a float tensor (as PyTorch)."""
    if not isinstance(input, Tensor):
        input = wrap(np.asarray(input))
    d = input._data
    if np.dtype(numpy_dtype(d.dtype)).kind not in "biu":
        raise NotImplementedError(f'"bitwise_not_cpu" not implemented for '
                                  f"'{_torch_name(numpy_dtype(d.dtype))}'")
    if d.__class__ is np.ndarray:
        return wrap(np.asarray(np.invert(d)))
    xp = backend_of(d).xp
    return wrap(xp.logical_not(d) if d.dtype == xp.bool else xp.bitwise_invert(d))


# --- truth values of floats ----------------------------------------------------------------

def _truth(name, doc):
    def fn(input):
        x = input if isinstance(input, Tensor) else wrap(np.asarray(input))
        d = x._data
        xp = np if d.__class__ is np.ndarray else backend_of(d).xp
        if name == "isinf":
            out = xp.isinf(d)
        elif name == "isposinf":
            out = xp.isinf(d) & (d > 0)
        elif name == "isneginf":
            out = xp.isinf(d) & (d < 0)
        else:  # isreal: every entry of a real tensor
            out = xp.ones(d.shape, dtype=xp.bool, **on_device_of(d)) if xp is not np \
                else np.ones(d.shape, bool)
        return wrap(np.asarray(out) if xp is np else out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


isinf = _truth("isinf", "Whether each entry is +inf or -inf (a bool tensor; False for ints).")
isposinf = _truth("isposinf", "Whether each entry is +inf (a bool tensor).")
isneginf = _truth("isneginf", "Whether each entry is -inf (a bool tensor).")
isreal = _truth("isreal", "Whether each entry is real: all True (chainrule's tensors are "
                "real).")


def _reduce_truth(name):
    def fn(input, dim=None, keepdim=False):  # chainrule.all/any take out= (_out_param)
        x = input if isinstance(input, Tensor) else wrap(np.asarray(input))
        d = x._data
        axis = tuple(dim) if isinstance(dim, (list, tuple)) else dim
        xp = np if d.__class__ is np.ndarray else backend_of(d).xp
        r = getattr(xp, name)(d, axis=axis, keepdims=keepdim)
        if np.dtype(numpy_dtype(d.dtype)) == np.uint8:  # PyTorch keeps uint8 for uint8
            r = r.astype(np.uint8) if xp is np else xp.astype(r, xp.uint8)
        return wrap(row_major(np.asarray(r)) if xp is np else r)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"Whether {name} entries are nonzero, over ``dim`` (an int, a tuple, or "
                  "None for every entry): a bool tensor (uint8 for a uint8 input, as "
                  "PyTorch).")
    return fn


# ``torch.all`` and ``torch.any``: named reduce_all and reduce_any here (so this module and star
# imports keep the builtins); chainrule exports them as ``all`` and ``any``.
reduce_all = _reduce_truth("all")
reduce_any = _reduce_truth("any")

for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
              "bitwise_right_shift", "bitwise_not", "isinf", "isposinf", "isneginf", "isreal",
              "reduce_all", "reduce_any"):
    globals()[_name] = name_errors(globals()[_name], _name.replace("reduce_", ""))
del _name
__all__ += ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
            "bitwise_right_shift", "bitwise_not", "isinf", "isposinf", "isneginf", "isreal"]
