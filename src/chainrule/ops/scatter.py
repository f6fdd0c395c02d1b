"""Gathers and scatters along a dimension, and the index/mask ops built on indexing.

Primitives (each declared once, with its VJP and JVP):

- ``gather(input, dim, index)``: ``out[i][j][k] = input[i][index[i][j][k]][k]`` (dim 1).
- ``scatter(input, dim, index, src)``: a copy of ``input`` with ``src`` written at those
  positions. Where ``index`` repeats a position, PyTorch leaves the result unspecified;
  here the *last* write in ``index``'s C order wins, on every backend, and only that
  entry of ``src`` gets the gradient (the derivative of the value computed).
- ``scatter_add``: the same positions, added (repeats add up).
- ``scatter_reduce(reduce=sum|prod|mean|amax|amin, include_self)``: PyTorch's gradients
  (amax/amin: shared evenly among the entries equal to the result).

All four address ``input`` with one advanced index ``at`` (one integer array per dim,
broadcasting to ``index``'s shape), built from ``index`` when the op is called, so their
rules are the indexing rules: a gather's transpose is a scatter-add (``index_put`` with
``accumulate``, which adds at repeated positions) and a scatter's is a gather.

Compositions (exact; they record the ops named): ``index_select``, ``take`` and
``masked_select`` (``index``), ``index_add``, ``index_copy``, ``index_fill`` and
``masked_scatter`` (``index_put``), ``masked_fill`` (``where``).
"""

from __future__ import annotations

import numpy as np

from .. import _ns
from .._creation import as_tensor
from .._dispatch import IndexBoundsError, apply, name_errors
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import NUMPY, backend_of, beside, numpy_dtype, row_major, xp_kernel
from .elementwise import mul, where
from .indexing import _on_data_device, getitem, index_put
from .shape import broadcast_to, reshape

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add",
           "index_copy", "index_fill", "masked_fill", "masked_select", "masked_scatter",
           "take"]

REDUCES = ("sum", "prod", "mean", "amax", "amin")


# --- the rules' helpers (F first: the table's check reads the names they use) ------------


def _part(x, src_at):
    """The entries of ``src`` that take part (``index``'s shape of it; winners only)."""
    return x if src_at is None else x[src_at]


def _place(F, v, shape, src_at):
    """The transpose of :func:`_part`: ``v`` put back into zeros of ``src``'s shape."""
    if src_at is None:
        return v
    return F.index_put(F.zeros(shape, v.dtype), src_at, v, False)


def _kept(F, v, keep):
    """``v`` where ``keep`` (the entries of ``input`` that take part), else 0."""
    return v if keep is None else F.where(keep, v, 0.0)


def _kept_ones(F, v, keep):
    """``v`` where ``keep``, else 1 (a divisor that is safe where ``v`` takes no part)."""
    return v if keep is None else F.where(keep, v, 1.0)


def _scale(v, count):
    return v if count is None else v / count


def _scatter_add_into(F, shape, at, v):
    return F.index_put(F.zeros(shape, v.dtype), at, v, True)


def _ties(F, self, src, out, at, src_at, keep, dtype):
    """amax/amin: (self's weights, src's weights), each 1/n on the entries equal to the
    result (n of them at that position), else 0."""
    w_self = _kept(F, F.cast(self == out, dtype), keep)
    w_src = F.cast(_part(src, src_at) == out[at], dtype)
    n = F.index_put(w_self, at, w_src, True)
    return w_self / n, w_src / n[at]


def _others(F, self, src, out, at, src_at, keep):
    """prod: for each reduced entry e, the product of the *other* entries at its position
    (self's and src's), exact where entries are zero, and written so that its own
    derivative is right too (second order). With z zeros at the position and P the
    product of its nonzero entries: ``y / e`` for e != 0; for e = 0, P when z = 1,
    P * (the other zero) when z = 2 (0, whose derivative is P), else 0."""
    s_part = _part(src, src_at)
    zero_self = _kept(F, F.cast(self == 0, self.dtype), keep)
    zero_src = F.cast(s_part == 0, s_part.dtype)
    zeros = F.index_put(zero_self, at, zero_src, True)
    ms = F.where(zero_self > 0, 1.0, _kept_ones(F, self, keep))
    msrc = F.where(zero_src > 0, 1.0, s_part)
    P = F.scatter_prod(ms, at, msrc)
    # the zero entries themselves (value 0) summed per position: the "other zero" when z = 2
    Z = F.index_put(F.where(zero_self > 0, self, 0.0), at, F.where(zero_src > 0, s_part, 0.0),
                    True)
    zeros_at, P_at, Z_at, out_at = zeros[at], P[at], Z[at], out[at]
    o_self = F.where(zero_self > 0,
                     F.where(zeros == 1, P, F.where(zeros == 2, P * (Z - self), 0.0)),
                     out / ms)
    o_src = F.where(zero_src > 0,
                    F.where(zeros_at == 1, P_at,
                            F.where(zeros_at == 2, P_at * (Z_at - s_part), 0.0)),
                    out_at / msrc)
    return _kept(F, o_self, keep), o_src


def _reduce_vjp_self(F, g, self, src, out, at, src_at, reduce, keep, count):
    if reduce in ("sum", "mean"):
        return _kept(F, _scale(g, count), keep)
    if reduce == "prod":
        return g * _others(F, self, src, out, at, src_at, keep)[0]
    w_self, _ = _ties(F, self, src, out, at, src_at, keep, g.dtype)
    return g * w_self


def _reduce_vjp_src(F, g, self, src, out, at, src_at, reduce, keep, count, src_shape):
    if reduce in ("sum", "mean"):
        return _place(F, _scale(g, count)[at], src_shape, src_at)
    if reduce == "prod":
        return _place(F, g[at] * _others(F, self, src, out, at, src_at, keep)[1], src_shape,
                      src_at)
    _, w_src = _ties(F, self, src, out, at, src_at, keep, g.dtype)
    return _place(F, g[at] * w_src, src_shape, src_at)


def _reduce_jvp_self(F, t, self, src, out, at, src_at, reduce, keep, count):
    if reduce in ("sum", "mean"):
        return _scale(_kept(F, t, keep), count)
    if reduce == "prod":
        return t * _others(F, self, src, out, at, src_at, keep)[0]
    w_self, _ = _ties(F, self, src, out, at, src_at, keep, t.dtype)
    return t * w_self


def _reduce_jvp_src(F, t, self, src, out, at, src_at, reduce, keep, count, self_shape):
    if reduce in ("sum", "mean"):
        return _scale(_scatter_add_into(F, self_shape, at, _part(t, src_at)), count)
    if reduce == "prod":
        o_src = _others(F, self, src, out, at, src_at, keep)[1]
        return _scatter_add_into(F, self_shape, at, _part(t, src_at) * o_src)
    _, w_src = _ties(F, self, src, out, at, src_at, keep, t.dtype)
    return _scatter_add_into(F, self_shape, at, _part(t, src_at) * w_src)


# --- the primitives ------------------------------------------------------------------------

_TRANSPOSE = "a selection is linear; its transpose scatters back, adding at repeated indices"

GATHER = defop(
    "gather", xp_kernel(lambda xp, x, at: row_major(x[at])), ("self",), attrs=("at",),
    vjp={"self": lambda F, g, self_shape, at: _scatter_add_into(F, self_shape, at, g)},
    jvp={"self": lambda F, t, at: t[at]},
    math={"self": "grad_x = zeros(x.shape).scatter_add(dim, index, grad) (repeats add up)",
          "out": "dy = dx.gather(dim, index)"},
    source=_TRANSPOSE + " (PyTorch derivatives.yaml: gather -> scatter_add)",
)
SCATTER = defop(
    "scatter", xp_kernel(lambda xp, x, src, at, src_at: row_major(xp.index_put(
        x, at, _part(src, src_at), False))), ("self", "src"), attrs=("at", "src_at"),
    vjp={"self": lambda F, g, at: F.index_put(g, at, 0.0, False),
         "src": lambda F, g, src_shape, at, src_at: _place(F, g[at], src_shape, src_at)},
    jvp={"self": lambda F, t, at: F.index_put(t, at, 0.0, False),
         "src": lambda F, t, self_shape, at, src_at: F.index_put(
             F.zeros(self_shape, t.dtype), at, _part(t, src_at), False)},
    math={"self": "grad_x = grad with the written positions zeroed",
          "src": "grad_src = grad.gather(dim, index) on the entries written last (a repeated "
                 "position takes the last write in index's order), 0 elsewhere",
          "out": "dy = dx.scatter(dim, index, dsrc)"},
    source="writing is linear in (x, src); VJP by transposition (PyTorch derivatives.yaml: "
           "scatter.src; with repeated indices, the derivative of the last write)",
)
SCATTER_ADD = defop(
    "scatter_add", xp_kernel(lambda xp, x, src, at, src_at: row_major(xp.index_put(
        x, at, _part(src, src_at), True))), ("self", "src"), attrs=("at", "src_at"),
    vjp={"self": lambda F, g: g,
         "src": lambda F, g, src_shape, at, src_at: _place(F, g[at], src_shape, src_at)},
    jvp={"self": lambda F, t: t,
         "src": lambda F, t, self_shape, at, src_at: _scatter_add_into(
             F, self_shape, at, _part(t, src_at))},
    math={"self": "grad_x = grad", "src": "grad_src = grad.gather(dim, index)",
          "out": "dy = dx.scatter_add(dim, index, dsrc)"},
    source="adding is linear; VJP by transposition (PyTorch derivatives.yaml: scatter_add)",
)


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    big = np.inf if dtype.kind == "f" else info.max
    return -big if reduce == "amax" else big


_UFUNCS = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def _scatter_reduce_kernel(xp, x, src, at, src_at, reduce, keep, count):
    return row_major(_scatter_reduce_of(xp, x, src, at, src_at, reduce, keep, count))


def _scatter_reduce_of(xp, x, src, at, src_at, reduce, keep, count):
    values = _part(src, src_at)
    if reduce in ("sum", "mean"):
        base = x if keep is None else xp.where(keep, x, xp.zeros_like(x))
        out = xp.index_put(base, at, values, True)
        if count is None:
            return out
        return out // count if numpy_dtype(x.dtype).kind in "iu" else out / count
    if xp is not NUMPY.xp:  # (CuPy's maximum.at rounds float64 to float32: not used)
        raise NotImplementedError(
            f"scatter_reduce(reduce={reduce!r}) needs NumPy's {_UFUNCS[reduce].__name__}.at "
            f"(a scatter-{reduce}), which the {xp._backend} backend does not provide")
    out = np.array(x, copy=True)
    if keep is not None:
        out[~keep] = _identity(reduce, out.dtype)
    _UFUNCS[reduce].at(out, at, values)
    return out


def _scatter_prod_raw(base, at, values):
    out = np.array(base, copy=True)
    np.multiply.at(out, at, values)
    return out


# scatter_prod(base, at, values): base with values multiplied in at ``at`` (repeats multiply)
_ns.register("scatter_prod", _scatter_prod_raw,
             lambda base, at, values: apply(SCATTER_REDUCE, (base, values),
                                            (at, None, "prod", None, None)))


SCATTER_REDUCE = defop(
    "scatter_reduce", xp_kernel(_scatter_reduce_kernel), ("self", "src"),
    attrs=("at", "src_at", "reduce", "keep", "count"),
    vjp={"self": _reduce_vjp_self, "src": _reduce_vjp_src},
    jvp={"self": _reduce_jvp_self, "src": _reduce_jvp_src},
    math={"self": "sum: grad_x = grad; mean: grad / count; prod: grad * (product of the other "
                  "entries at the position; y / x without zeros); amax/amin: "
                  "grad / n on the n entries equal to y, else 0 (include_self=False: 0 at "
                  "the written positions)",
          "src": "sum: grad.gather(dim, index); mean: (grad / count).gather(dim, index); "
                 "prod: grad.gather(dim, index) * (product of the other entries); "
                 "amax/amin: (grad / n).gather"
                 "(dim, index) where src equals y there, else 0",
          "out": "sum/mean: scatter_add of the tangents (/ count); prod: sum over the reduced "
                 "entries of dv * (product of the others); amax/amin: the mean tangent of the "
                 "tied entries"},
    source="PyTorch derivatives.yaml (scatter_reduce_backward): the reductions' own rules "
           "per position (sum, mean, prod = product of the others, with zeros counted as in "
           "prod's backward, amax/amin split evenly among ties)",
)


# --- arguments -----------------------------------------------------------------------------


def _dim(dim, ndim, name):
    top = max(ndim, 1)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{name}: dim must be an int, got {type(dim).__name__}")
    if not -top <= dim < top:
        raise IndexError(f"{name}: Dimension out of range (expected to be in range of "
                         f"[{-top}, {top - 1}], but got {dim})")
    return int(dim) % top


def _host(x):
    """An index or mask as a NumPy array (a Tensor's data; copied from another backend)."""
    d = x._data if isinstance(x, Tensor) else x
    if isinstance(d, (np.ndarray, np.generic)):
        return np.asarray(d)
    if isinstance(d, (list, tuple, int, bool, float, str)):
        d = np.asarray(d)
        return d.astype(np.int64) if d.size == 0 and d.dtype.kind == "f" else d
    return np.asarray(backend_of(d).to_numpy(d))


def _index(index, name, allowed=("int32", "int64"), what=None):
    idx = _host(index)
    if idx.dtype.name not in allowed and not (idx.size == 0 and idx.dtype.kind in "iub"):
        # (an empty index of another integer dtype selects nothing: PyTorch accepts it)
        kinds = "/".join(allowed)
        raise RuntimeError(what or f"{name}: Expected dtype {kinds} for index, got "
                                   f"{idx.dtype}")
    return idx.astype(np.intp, copy=False)


def _bounds(idx, size, dim, name, wrap=False):
    """``idx`` checked against ``size`` (negative ones wrapped when ``wrap``)."""
    if idx.size == 0:
        return idx
    if wrap:
        idx = np.where(idx < 0, idx + size, idx)
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        first = int(idx[bad].flat[0])
        if wrap and first < 0:
            first -= size
        raise IndexBoundsError(f"{name}: index {first} is out of bounds for dimension {dim} "
                               f"with "
                         f"size {size}")
    return idx


def _tensor(x):
    return x if isinstance(x, Tensor) else as_tensor(x)


def _grid(idx, dim):
    """The advanced index of the positions ``idx`` (along ``dim``) addresses: ``idx``
    itself along ``dim``, ``arange`` along the other dims, broadcasting to its shape."""
    n = idx.ndim
    at = []
    for i in range(n):
        if i == dim:
            at.append(idx)
        else:
            shape = [1] * n
            shape[i] = idx.shape[i]
            at.append(np.arange(idx.shape[i]).reshape(shape))
    return tuple(at)


def _positions(input, dim, index, name, src=None):
    """Check ``index`` against ``input`` (and ``src``) as PyTorch does; the advanced index
    ``at`` of the addressed positions and ``src_at``, the part of ``src`` used."""
    shape = tuple(input.shape)
    idx = _index(index, name)
    d = _dim(dim, len(shape), name)
    if idx.ndim != len(shape) and max(idx.ndim, 1) != max(len(shape), 1):
        raise RuntimeError(f"{name}: Index tensor must have the same number of dimensions as "
                           f"input tensor (index {list(idx.shape)}, input {list(shape)})")
    src_shape = None if src is None else tuple(src.shape)
    if src_shape is not None and max(len(src_shape), 1) != max(idx.ndim, 1):
        raise RuntimeError(f"{name}: Index tensor must have the same number of dimensions as "
                           f"src tensor (index {list(idx.shape)}, src {list(src_shape)})")
    if idx.size == 0:  # nothing addressed (PyTorch checks no sizes then)
        at = tuple(np.zeros(idx.shape, np.intp) for _ in shape)
        return at, None if src_shape is None else tuple(slice(k) for k in idx.shape), d
    full = shape if shape else (1,)
    idx_shape = idx.shape if idx.ndim else (1,)
    too_big = any(k > n for i, (k, n) in enumerate(zip(idx_shape, full)) if i != d)
    if src_shape is not None:
        too_big = too_big or any(k > n for k, n in zip(idx_shape, src_shape or (1,)))
    if too_big:
        msg = (f"{name}: Expected index {list(idx.shape)} to be no larger than self "
               f"{list(shape)} apart from dimension {d}")
        if src_shape is not None:
            msg += f" and to be no larger size than src {list(src_shape)}"
        raise RuntimeError(msg)
    _bounds(idx, full[d], d, name)
    if not shape:  # a 0-d input: index 0, the whole value
        return (), (), d
    at = _grid(idx, d)
    src_at = None
    if src_shape is not None and src_shape != idx.shape:
        src_at = tuple(slice(k) for k in idx.shape)
    return at, src_at, d


def _last_writes(at, shape, idx_shape, src_at):
    """Where ``at`` repeats a position, keep the last write (in C order) only: (at, src_at)
    of the winners, or the arguments as they are when nothing repeats."""
    full = np.broadcast_arrays(*at)
    flat = np.ravel_multi_index(tuple(a.ravel() for a in full), shape)
    _, first_from_end = np.unique(flat[::-1], return_index=True)
    if first_from_end.size == flat.size:
        return at, src_at
    keep = np.sort(flat.size - 1 - first_from_end)
    at = tuple(a.ravel()[keep] for a in full)
    return at, np.unravel_index(keep, idx_shape)


def _beside(array, input):
    """A NumPy constant moved beside ``input``'s data (another library's device)."""
    return beside(array, input._data)


def _same_dtype(input, src, name):
    if numpy_dtype(input.dtype) != numpy_dtype(src.dtype):
        raise RuntimeError(f"{name}: Expected self.dtype to be equal to src.dtype (self "
                           f"{input.dtype}, src {src.dtype})")


# --- the public functions --------------------------------------------------------------


@documented(GATHER)
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j][k] = input[i][index[i][j][k]][k]`` (for ``dim=1``): entries of ``input``
    picked along ``dim`` at ``index`` (int64 or int32, as many dims as ``input``, no larger
    than it on the other dims); the result has ``index``'s shape. Repeated indices add
    their gradients up. ``sparse_grad`` is accepted for PyTorch's signature (the gradient
    is dense)."""
    input = _tensor(input)
    idx = _host(index)
    if idx.size == 0 and idx.ndim != input.ndim:  # selects nothing: PyTorch does not check
        _dim(dim, input.ndim, "gather")
        return getitem(reshape(input, (-1,)), (np.zeros(idx.shape, dtype=np.intp),))
    if input.ndim == 0 and idx.ndim == 1:  # a 0-d input acts as 1-D; the result: index's shape
        _dim(dim, 0, "gather")
        return gather(reshape(input, (1,)), 0, index)
    at, _, _ = _positions(input, dim, index, "gather")
    return apply(GATHER, (input,), (_on_data_device(at, input),))


def _src(src, input, idx_shape, name):
    """``src`` as a tensor; a number fills ``index``'s shape in ``input``'s dtype."""
    if isinstance(src, Tensor):
        return src
    if np.ndim(src) == 0:  # beside input's data (its backend's device)
        return as_tensor(_beside(np.full(idx_shape, src, dtype=numpy_dtype(input.dtype)),
                                 input))
    return as_tensor(src)


@documented(SCATTER)
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (a tensor, or a number: ``value``) written at the
    positions ``index`` addresses along ``dim``: ``out[i][index[i][j]] = src[i][j]`` for
    ``dim=1``. Where ``index`` repeats a position, the last write in ``index``'s C order
    wins (PyTorch leaves it unspecified) and only that entry of ``src`` gets the gradient.
    ``reduce="add"`` is :func:`scatter_add`, ``"multiply"`` is ``scatter_reduce("prod")``
    (PyTorch's deprecated argument)."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter: missing the src (tensor) or value (number) argument")
    input = _tensor(input)
    idx_shape = np.shape(_host(index))
    src_was_number = not isinstance(src, Tensor) and np.ndim(src) == 0
    src = _src(src, input, idx_shape, "scatter")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter: reduce argument must be either add or multiply, "
                               f"got {reduce!r}")
        if reduce == "add":
            return scatter_add(input, dim, index, src)
        return scatter_reduce(input, dim, index, src, "prod")
    if not src_was_number:
        _same_dtype(input, src, "scatter")
    at, src_at, _ = _positions(input, dim, index, "scatter", src)
    if at and idx_shape:
        at, src_at = _last_writes(at, tuple(input.shape), idx_shape, src_at)
    if src_at is not None:
        src_at = _on_data_device(src_at, input)
    return apply(SCATTER, (input, src), (_on_data_device(at, input), src_at))


@documented(SCATTER_ADD)
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at the positions ``index`` addresses along
    ``dim`` (``out[i][index[i][j]] += src[i][j]`` for ``dim=1``); repeats add up."""
    input, src = _tensor(input), _tensor(src)
    _same_dtype(input, src, "scatter_add")
    at, src_at, _ = _positions(input, dim, index, "scatter_add", src)
    return apply(SCATTER_ADD, (input, src), (_on_data_device(at, input), src_at))


@documented(SCATTER_REDUCE)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """``input`` with the entries of ``src`` reduced into the positions ``index``
    addresses along ``dim``: ``reduce`` is "sum", "prod", "mean", "amax" or "amin"; with
    ``include_self=False`` the written positions of ``input`` take no part (the others
    keep their value). Gradients as PyTorch's: amax/amin share the gradient evenly among
    the entries equal to the result; prod's is the product of the other entries, exact
    where entries are zero (to second order). amax, amin and prod compute with NumPy
    only."""
    if reduce not in REDUCES:
        raise RuntimeError(f"scatter_reduce: reduce argument must be either sum, prod, mean, "
                           f"amax or amin, got {reduce}")
    input, src = _tensor(input), _tensor(src)
    _same_dtype(input, src, "scatter_reduce")
    at, src_at, _ = _positions(input, dim, index, "scatter_reduce", src)
    shape = tuple(input.shape)
    keep = None
    if not include_self:
        keep = np.ones(shape, bool)
        keep[at] = False
    count = None
    if reduce == "mean":
        dtype = numpy_dtype(input.dtype)
        count = np.zeros(shape, np.int64)
        np.add.at(count, at, 1)
        if include_self:
            count += 1
        count = np.maximum(count, 1).astype(dtype if dtype.kind in "fc" else np.int64)
    return apply(SCATTER_REDUCE, (input, src),
                 (_on_data_device(at, input), src_at, reduce, _beside(keep, input),
                  _beside(count, input)))


# --- compositions ------------------------------------------------------------------------


def _along(dim, ndim, idx):
    return (slice(None),) * dim + (idx,) + (slice(None),) * (ndim - dim - 1)


def _vector_index(index, name, allowed=("int32", "int64"), what=None):
    idx = _index(index, name, allowed, what)
    if idx.ndim > 1:
        raise IndexError(f"{name}: Index is supposed to be a vector (got shape "
                         f"{list(idx.shape)})")
    return idx.reshape(-1)


def index_select(input, dim, index):
    """The slices of ``input`` along ``dim`` at ``index`` (a vector of int64/int32, in
    range), in that order: ``input[..., index, ...]``. Composition: advanced indexing
    (``index``), whose VJP adds the gradients of repeated indices."""
    input = _tensor(input)
    d = _dim(dim, input.ndim, "index_select")
    idx = _vector_index(index, "index_select")
    if input.ndim == 0:  # a 0-d input stays 0-d (PyTorch): its one entry, selected
        _bounds(idx, 1, 0, "index_select")
        return reshape(getitem(reshape(input, (1,)), (idx,)), ()) if idx.size == 1 else \
            getitem(reshape(input, (1,)), (idx,))
    _bounds(idx, input.shape[d], d, "index_select")
    return getitem(input, _along(d, input.ndim, idx))


def _check_source(input, d, idx, source, name, what="source"):
    shape, sshape = tuple(input.shape), tuple(source.shape)
    want = shape[:d] + (idx.size,) + shape[d + 1:] if shape else (idx.size,)
    if sshape != want and not (not shape and sshape in ((), (1,)) and idx.size == 1):
        raise RuntimeError(f"{name}: {what} of shape {list(sshape)} does not match the "
                           f"self shape {list(shape)} with {idx.size} indices along "
                           f"dimension {d} (expected {list(want)})")


def index_add(input, dim, index, source, *, alpha=1):
    """``input`` with ``alpha * source`` added to its slices along ``dim`` at ``index``
    (repeats add up). Composition: ``index_put(..., accumulate=True)`` (and ``mul`` for
    ``alpha``)."""
    input, source = _tensor(input), _tensor(source)
    d = _dim(dim, input.ndim, "index_add")
    idx = _vector_index(index, "index_add")
    _check_source(input, d, idx, source, "index_add")
    _bounds(idx, input.shape[d] if input.ndim else 1, d, "index_add")
    if alpha != 1:
        source = mul(source, alpha)
    input = input.contiguous()  # PyTorch's result is contiguous (index_put keeps a layout)
    if input.ndim == 0:
        return index_put(input, (Ellipsis,), source.sum(), accumulate=True)
    return index_put(input, _along(d, input.ndim, idx), source, accumulate=True)


def index_copy(input, dim, index, source):
    """``input`` with the slices of ``source`` copied to its slices along ``dim`` at
    ``index`` (int64). Where ``index`` repeats, the last copy wins (PyTorch leaves it
    unspecified) and only that slice of ``source`` gets the gradient. Composition:
    ``index_put`` (and ``index`` for the winning slices)."""
    input, source = _tensor(input), _tensor(source)
    d = _dim(dim, input.ndim, "index_copy")
    idx = _vector_index(index, "index_copy", ("int64",),
                        f"index_copy: Expected a long tensor for index, but got "
                        f"{_host(index).dtype}")
    _check_source(input, d, idx, source, "index_copy")
    _same_dtype(input, source, "index_copy")
    input = input.contiguous()  # PyTorch's result is contiguous (index_put keeps a layout)
    if input.ndim == 0:
        _bounds(idx, 1, 0, "index_copy")
        return index_put(input, (Ellipsis,), reshape(source, ()))
    _bounds(idx, input.shape[d], d, "index_copy")
    _, first_from_end = np.unique(idx[::-1], return_index=True)
    if first_from_end.size != idx.size:  # repeats: the last copy of each index wins
        last = np.sort(idx.size - 1 - first_from_end)
        source = getitem(source, _along(d, input.ndim, last))
        idx = idx[last]
    return index_put(input, _along(d, input.ndim, idx), source)


def _fill_value(value, name):
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"{name} only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return value


def index_fill(input, dim, index, value):
    """``input`` with its slices along ``dim`` at ``index`` (int64; negative ones count
    from the end) set to ``value`` (a number, or a 0-d tensor, which gets the gradient of
    every filled entry once). Composition: ``index_put``."""
    input = _tensor(input)
    d = _dim(dim, input.ndim, "index_fill")
    idx = _index(index, "index_fill", ("int64",))
    if idx.ndim > 1:
        raise IndexBoundsError(f"index_fill: Index has to be a vector/scalar (got shape "
                         f"{list(idx.shape)})")
    value = _fill_value(value, "index_fill:")
    size = input.shape[d] if input.ndim else 1
    idx = np.unique(_bounds(idx.reshape(-1), size, d, "index_fill", wrap=True))
    if input.ndim == 0:
        return index_put(input, (Ellipsis,), value) if idx.size else input.clone()
    return index_put(input, _along(d, input.ndim, idx), value)


def _bool_mask(mask, name, message):
    m = mask._data if isinstance(mask, Tensor) else mask
    dtype = getattr(m, "dtype", None)
    if dtype is None:
        m = np.asarray(m)
        dtype = m.dtype
    if numpy_dtype(dtype) != np.bool_:
        raise RuntimeError(message.format(dtype=numpy_dtype(dtype)))
    return mask if isinstance(mask, Tensor) else m


def masked_fill(input, mask, value):
    """``value`` where ``mask`` (bool, broadcasting with ``input``) is True, else
    ``input``; ``value`` a number or a 0-d tensor, which gets the gradient of the masked
    entries, summed. Composition: ``where``."""
    input = _tensor(input)
    mask = _bool_mask(mask, "masked_fill", "masked_fill: only supports boolean masks, but got "
                                          "mask with dtype {dtype}")
    value = _fill_value(value, "masked_fill:")
    shape = tuple(input.shape)
    mshape = tuple(mask.shape)
    try:  # the two broadcast (the result may be larger than input, as in PyTorch)
        np.broadcast_shapes(mshape, shape)
    except ValueError:
        raise RuntimeError(f"masked_fill: mask of shape {mshape} does not broadcast with the "
                           f"input's shape {shape}") from None
    if not isinstance(mask, Tensor):  # a NumPy mask goes beside input's data
        mask = _beside(mask, input)
    if numpy_dtype(input.dtype).kind in "iub":  # PyTorch: the value takes input's dtype
        value = _cast_value(value, input)
    elif isinstance(value, Tensor) and value.dtype != input.dtype:  # (differentiably: a
        value = value.to(input.dtype)  # float64 0-d value into a 0-d float32 input)
    data = input._data
    if data.__class__ is np.ndarray and not data.flags.c_contiguous:
        # PyTorch's result is contiguous; NumPy's where follows its inputs' layout unless
        # a full row-major condition outvotes a transposed or expanded input
        m = mask._data if isinstance(mask, Tensor) else mask
        if m.__class__ is np.ndarray:
            mask = np.ascontiguousarray(np.broadcast_to(m, np.broadcast_shapes(mshape, shape)))
    return where(mask, value, input)


def _cast_value(value, input):
    """A fill value cast to the dtype of an int or bool ``input`` (2.5 -> 2, 0.0 -> False),
    so that the result keeps input's dtype, as PyTorch's masked_fill does; it carries no
    gradient (an int or bool tensor cannot require grad)."""
    if isinstance(value, Tensor):
        value = value.detach()
        return value if value.dtype == input.dtype else value.to(input.dtype)
    return np.asarray(value).astype(numpy_dtype(input.dtype))


def _broadcast_pair(input, mask, name):
    shape, mshape = tuple(input.shape), tuple(mask.shape)
    try:
        both = np.broadcast_shapes(shape, mshape)
    except ValueError:
        raise RuntimeError(f"{name}: the shapes of input {list(shape)} and mask "
                           f"{list(mshape)} do not broadcast") from None
    if both != shape:
        input = broadcast_to(input, both)
    m = _host(mask)
    if m.shape != both:
        m = np.broadcast_to(m, both)
    return input, m


def masked_select(input, mask):
    """The entries of ``input`` where ``mask`` (bool; the two broadcast) is True, as a 1-D
    tensor in C order. Composition: ``expand`` and mask indexing (``index``)."""
    input = _tensor(input)
    mask = _bool_mask(mask, "masked_select", "masked_select: expected BoolTensor for mask "
                                             "(got {dtype})")
    input, m = _broadcast_pair(input, mask, "masked_select")
    return getitem(input, (m,))


def masked_scatter(input, mask, source):
    """``input`` with the masked entries (``mask`` bool, broadcasting with ``input``)
    replaced, in C order, by the first entries of ``source`` (which needs at least as many
    entries as the mask has True). Composition: ``index_put`` with the mask, of ``source``
    flattened and cut."""
    input, source = _tensor(input), _tensor(source)
    mask = _bool_mask(mask, "masked_scatter", "masked_scatter: only supports boolean masks, "
                                              "but got mask with dtype {dtype}")
    _same_dtype(input, source, "masked_scatter")
    input, m = _broadcast_pair(input, mask, "masked_scatter")
    k = int(np.count_nonzero(m))
    n = int(np.prod(source.shape))
    if n < k:
        raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in "
                           f"mask ({n} < {k})")
    flat = reshape(source, (-1,))
    if k < n:
        flat = getitem(flat, slice(0, k))
    # PyTorch's result is contiguous (index_put keeps a transposed input's layout)
    return index_put(input.contiguous(), (m,), flat)


def take(input, index):
    """The entries of ``input`` flattened, at ``index`` (int64, any shape; negative ones
    count from the end); the result has ``index``'s shape. Composition: ``reshape`` and
    advanced indexing (``index``)."""
    input = _tensor(input)
    idx = _index(index, "take", ("int64",),
                 f"take: Expected a long tensor for index, but got {_host(index).dtype}")
    n = int(np.prod(input.shape))
    if idx.size and n == 0:
        raise IndexError("take: tried to take from an empty tensor")
    idx = _bounds(idx, n, 0, "take", wrap=True)
    return getitem(reshape(input, (-1,)), (idx,))


# Errors raised while these functions check their arguments name the op.
for _name in __all__:
    globals()[_name] = name_errors(globals()[_name], _name)
del _name
