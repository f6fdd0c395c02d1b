"""Attach the op functions to Tensor as methods and operators (one table, PyTorch's names)."""

from __future__ import annotations

import numpy as np

from . import _creation, _dual, _inplace, ops
from . import _tensor as _tensor_mod
from ._batched import Batched
from ._dispatch import name_errors, refresh_view
from ._node import _Handle
from ._state import STATE
from ._tensor import Tensor, wrap
from .backend import (
    BFLOAT16,
    backend_of,
    beside,
    dtype_kind,
    host_to,
    numpy_dtype,
    on_device_of,
)
from .backend import device as _device
from .ops.elementwise import ADD, DIV, MUL, POW, RECIPROCAL, SUB, _copy_layout
from .ops.searching import _torch_name

_SAME_NAME = [
    "add", "sub", "mul", "div", "true_divide", "pow", "neg", "abs", "sign", "exp", "log",
    "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "erf", "clamp",
    "clip", "maximum", "minimum", "square", "reciprocal", "clone", "sum", "mean", "prod",
    "amax", "amin", "max", "min", "var", "std", "logsumexp", "norm", "argmax", "argmin",
    "softmax", "log_softmax", "matmul", "mm", "mv", "bmm", "dot", "inner", "outer", "trace",
    "diag", "diagonal", "tril", "triu", "flatten", "transpose", "swapaxes", "t", "squeeze",
    "unsqueeze", "broadcast_to", "split", "chunk", "unbind", "movedim", "index_put", "lt",
    "le", "gt", "ge", "eq", "ne", "isnan", "isfinite", "logical_not", "take_along_dim",
    "isclose", "allclose", "equal", "dist", "flip", "fliplr", "flipud", "roll", "rot90",
    "narrow", "select", "unflatten", "tensor_split", "tile", "swapdims", "moveaxis",
    "acos", "arccos", "asin", "arcsin", "atan", "arctan", "atan2", "arctan2", "sinh", "cosh",
    "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "log2", "log10", "exp2",
    "rsqrt", "hypot", "logaddexp", "logaddexp2", "xlogy", "lgamma", "digamma", "erfc",
    "erfinv", "sinc", "floor", "ceil", "round", "trunc", "fix", "frac", "fmod", "remainder",
    "floor_divide", "clamp_min", "clamp_max", "addcmul", "addcdiv", "lerp", "nan_to_num",
    "copysign", "fmax", "fmin", "sgn", "negative", "absolute", "multiply", "subtract",
    "divide", "i0", "logit", "mvlgamma",
    # reductions, scans and sorting (ops/reduction.py, ops/scans.py, ops/sorting.py)
    "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "sort", "argsort", "msort",
    "topk", "kthvalue", "median", "nanmedian", "quantile", "nanquantile", "nansum",
    "nanmean", "diff", "count_nonzero", "aminmax", "cov", "corrcoef",
    # indices, counts and truth values (ops/searching.py)
    "nonzero", "argwhere", "unique", "unique_consecutive", "bincount", "histc", "histogram",
    "logical_and", "logical_or", "logical_xor", "signbit", "heaviside", "isin",
    # more of PyTorch's names (ops/torch_more.py)
    "positive", "float_power", "ldexp", "sum_to_size", "select_scatter", "slice_scatter",
    "repeat_interleave", "nextafter", "frexp", "mode", "split_with_sizes",
    "unsafe_split", "unsafe_chunk", "put", "index_reduce", "bernoulli", "zero_",
    "diagonal_scatter", "narrow_copy", "conj", "conj_physical", "resolve_conj", "resolve_neg",
    "angle",
]


def _data(x):
    return x._data if isinstance(x, Tensor) else x


def _varargs(fn, keyword):
    """A shape method (``x.view(2, 3)``, ``x.view((2, 3))``) that also takes its sizes by
    PyTorch's keyword (``x.reshape(shape=(2, 3))``, ``x.permute(dims=...)``)."""
    def method(self, *sizes, **kwargs):
        if kwargs:
            if sizes or set(kwargs) - {keyword, "dtype"}:
                raise TypeError(f"{fn.__name__}() got an unexpected combination of "
                                f"arguments: {tuple(sizes)} and {sorted(kwargs)}")
            sizes = (kwargs[keyword],) if keyword in kwargs else (kwargs["dtype"],)
        return fn(self, *sizes)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _dims_varargs(fn):
    """A method taking dims as varargs too (``x.flip(0, 1)``, ``x.tile(1, 2)``,
    ``x.squeeze(0, 1)``, ``x.hsplit(1, 2)``), as PyTorch's: two or more ints are one
    tuple."""
    def method(self, *args, **kwargs):
        if len(args) > 1 and all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                                 for a in args):
            args = (tuple(args),)
        return fn(self, *args, **kwargs)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _to(self, *args, dtype=None, device=None, copy=False, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``.

    A device is "cpu" (NumPy; Dask data stays on Dask, which computes on the CPU too) or
    "cuda"/"cuda:i" (CuPy). Moving to another device copies the data (from the GPU, or a
    Dask compute). For a tensor that requires grad (or carries a tangent) the move is
    recorded, as PyTorch's ``ToCopyBackward``: the cotangent goes back to the source
    device, the tangent along; one graph may then span devices.
    """
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, _device)):
            device = a
        elif a is not None:
            dtype = a
    t = self
    if device is not None:
        t = _move(t, _device(device))
    if dtype is not None and numpy_dtype(dtype) != numpy_dtype(t.dtype):
        t = ops.to_dtype(t, dtype)
    return t.clone() if copy and t is self else t


def _rtruediv(self, other):
    """``other / self``; ``1 / self`` is ``reciprocal(self)``, which saves its result, not
    ``self`` (as PyTorch's), so ``self`` may change in place before the backward."""
    if (other.__class__ is int or other.__class__ is float) and other == 1:
        return RECIPROCAL.call(self)
    return DIV.call(other, self)


def _fast_cast(np_dtype):
    """``long()``, ``int()``, ``bool()``: the tensor itself when it has that dtype already
    (as PyTorch's ``to``: writing into the result writes into it), else a new tensor with
    no history (an int or bool tensor cannot require grad), contiguous where the input
    is not dense (expanded, strided), as PyTorch's."""
    np_dtype = np.dtype(np_dtype)

    def cast(self):
        d = self._data
        if d.dtype == np_dtype:
            return self
        if d.__class__ is not np.ndarray:
            return _to(self, np_dtype)
        return wrap(_copy_layout(d.astype(np_dtype), d))

    return cast


#: The recorded move of a tensor that requires grad (``[fn(t, device)]``), registered by
#: chainrule.autograd.function (a higher layer: a custom Function whose backward moves the
#: cotangent back).
RECORDED_MOVE = [None]


def _move(t, dev):
    if t.device == dev or (dev.type == "cpu" and t.device.type == "cpu"):
        return t
    if (t._requires_grad and STATE.enabled) or \
            (STATE.dual_level and _dual.tangent_of(t) is not None):
        return RECORDED_MOVE[0](t, dev)  # differentiable (and its tangent moves), as torch
    return wrap(move_data(t._data, dev))


def move_data(data, dev):
    """``data`` (any backend's array) copied onto ``dev``: to the host for "cpu", from the
    host onto a GPU or an Array API library's device otherwise."""
    host = data if data.__class__ is np.ndarray else np.asarray(backend_of(data).to_numpy(data))
    if dev.type == "cpu":
        return host
    try:
        return host_to(dev, host)
    except RuntimeError as error:
        raise RuntimeError(f"to: {error}") from None


def _cpu(self):
    """A copy on the CPU (NumPy); Dask data stays lazy (it is already on the CPU)."""
    return _to(self, "cpu")


def _cuda(self, device=None):
    """A copy on the GPU (CuPy); ``device`` an index or "cuda:i"."""
    dev = "cuda" if device is None else (f"cuda:{device}" if isinstance(device, int)
                                         else device)
    return _to(self, dev)


def _inplace_binary(fn, ufunc):
    """``x.op_(other)``: a true NumPy in-place update when nothing is recorded, else the
    out-of-place op written back (:func:`chainrule._inplace.update`)."""
    name = fn.__name__ + "_"

    def method(self, other, *, alpha=1):
        if alpha != 1:
            other = ops.mul(other, alpha)
        if not _inplace.recording(self, other):
            _inplace.check(self, name)
            data = self._data
            o = _data(other)
            # a float tensor with a float of its dtype or a Python number: NumPy's update
            # is PyTorch's; other mixes go through the op and PyTorch's casting rule
            if isinstance(data, np.ndarray) and data.flags.writeable and \
                    data.dtype.kind == "f" and (o.__class__ is np.ndarray and o.dtype ==
                                                data.dtype or o.__class__ in (float, int)):
                try:
                    ufunc(data, o, out=data, casting="same_kind")
                except (ValueError, TypeError) as e:
                    raise RuntimeError(f"{name}: cannot update a tensor of shape "
                                       f"{tuple(self.shape)} ({self.dtype}) in place with "
                                       f"{np.shape(_data(other))}: {e}") from None
                self._vc[0] += 1
                return self
            return _inplace.write_in_place(self, fn(self, other), name)
        return _inplace.update(self, lambda old: fn(old, other), name, other)

    method.__name__ = method.__qualname__ = name  # "add_() got an unexpected keyword ..."
    return method


def _inplace_variant(fn, op_name):
    """``x.<op_name>_(*args)``: ``fn`` applied to ``x`` and written back in place (one line
    per op in ``install``; the update's recording is :func:`chainrule._inplace.update`'s)."""
    name = op_name + "_"

    def method(self, *args, **kwargs):
        if "out" in kwargs:  # the result goes into self (fn would write out= and return it)
            raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
        return _inplace.update(self, lambda old: fn(old, *args, **kwargs), name,
                               *args, *kwargs.values())

    method.__name__ = name
    method.__doc__ = f"In-place version of :func:`{op_name}`: ``self`` is set to its result."
    return method


def _matrix_t_0d(self, name):
    import warnings

    warnings.warn(f"Tensor.{name} is deprecated on 0-D tensors. This function is the identity "
                  "in these cases.", UserWarning, stacklevel=3)
    return self


def _H(self):
    """The conjugate transpose of a matrix (real: the transpose), as PyTorch's ``Tensor.H``:
    2-D only (0-D passes through, as in PyTorch)."""
    if self.ndim not in (0, 2):
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.{hint}")
    return ops.conj(ops.t(self))


def _setitem(self, index, value):
    norm, _ = ops.indexing.normalize_index(index)  # raises for a negative step, as PyTorch
    if isinstance(_data(value), Batched) and not isinstance(self._data, Batched):
        raise RuntimeError(_inplace.VMAP_INPLACE.format(name="__setitem__"))
    shape = np.shape(_data(value))
    if len(shape) > 1 and shape[0] == 1:
        # PyTorch drops a value's leading size-1 dims (x[mask] = v of shape (1, 1)); NumPy's
        # boolean-mask assignment does not: drop them here (recorded, for the gradient)
        lead = next((i for i, n in enumerate(shape) if n != 1), len(shape))
        value = (ops.reshape(value, shape[lead:]) if isinstance(value, Tensor) else
                 np.reshape(value, shape[lead:]))
    if not _inplace.recording(self, value):
        _inplace.check(self, "__setitem__")
        if isinstance(self._data, np.ndarray) and self._data.flags.writeable and (
                _ or ops.indexing.split_index(norm) is None):
            try:
                self._data[norm] = _data(value)
            except (ValueError, IndexError, TypeError) as e:
                raise type(e)(f"__setitem__: {e} (tensor shape {tuple(self.shape)}, value "
                              f"shape {np.shape(_data(value))})") from None
            self._vc[0] += 1
            return
        _inplace.write_in_place(self, ops.index_put(self, index, value), "__setitem__")
        return
    _inplace.update(self, lambda old: ops.index_put(old, index, value), "__setitem__", value)


def _fill_with(name):
    def method(self, value):
        if isinstance(_data(value), Batched) and not isinstance(self._data, Batched):
            raise RuntimeError(_inplace.VMAP_INPLACE.format(name=name))
        if not _inplace.recording(self, value):
            _inplace.check(self, name)
            if isinstance(self._data, np.ndarray) and self._data.flags.writeable:
                src = _data(value)
                if hasattr(src, "shape") and not isinstance(src, (np.ndarray, np.generic)):
                    src = backend_of(src).to_numpy(src)  # from a GPU (or Dask): a host copy
                try:
                    np.copyto(self._data, src, casting="unsafe")
                except ValueError as e:
                    raise RuntimeError(f"{name}: cannot copy a value of shape {np.shape(src)} "
                                       f"into a tensor of shape {tuple(self.shape)}: "
                                       f"{e}") from None
                self._vc[0] += 1
                return self
            if isinstance(self._data, np.ndarray):  # a read-only view (diagonal): cast as
                # np.copyto does above (1.5 into an int tensor is 1), written through its base
                value = wrap(np.asarray(_data(value)).astype(self._data.dtype, copy=False))
            return _inplace.write_in_place(self, value, name)
        return _inplace.update(
            self, lambda old: ops.index_put(old, (Ellipsis,), value), name, value)

    method.__name__ = name
    return method


_fill = _fill_with("fill_")
_copy = _fill_with("copy_")


def _zero(self):
    return _fill_with("zero_")(self, 0.0)


def _tensor_arg(other, name):
    """``other`` of ``t.view_as(other)`` and kin, which must be a Tensor (as PyTorch's)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    return other


def _random_fill(name, draw):
    """``t.uniform_(...)`` and the other in-place samplers: ``t`` filled with draws of
    ``draw(generator, shape, *args)`` (chainrule's generator unless ``generator=``), as an
    in-place write (a leaf that requires grad needs ``no_grad``, as in PyTorch)."""
    def method(self, *args, generator=None, **kwargs):
        rng = _creation.default_generator if generator is None else generator
        bits = getattr(rng, "bit_generator", None)
        saved = None if bits is None else bits.state
        try:
            values = np.asarray(draw(rng, tuple(self.shape), *args, **kwargs))
            return _fill_with(name)(self, wrap(values.astype(np.dtype(numpy_dtype(self.dtype)))))
        except Exception as e:
            if saved is not None:  # a failing call (an expanded tensor, a bad parameter)
                bits.state = saved  # leaves the random state as it was
            if isinstance(e, (ArithmeticError, ValueError)) and not str(e).startswith(name):
                # NumPy's (or Python's) word on a bad parameter: exponential_(0) divides by 0
                raise RuntimeError(f"{name}: invalid parameters {args or ''}{kwargs or ''} "
                                   f"({type(e).__name__}: {e})") from None
            raise
    method.__name__ = name
    return method


def _random_ints(rng, shape, low=0, high=None, *, dtype=None):
    if high is None:
        low, high = (0, low) if low else (0, 2 ** 24)
    return rng.integers(low, high, size=shape)


_RANDOM_FILLS = {
    "uniform_": lambda rng, shape, a=0.0, b=1.0: rng.uniform(a, b, shape),
    "normal_": lambda rng, shape, mean=0.0, std=1.0: rng.normal(mean, std, shape),
    "random_": _random_ints,
    "exponential_": lambda rng, shape, lambd=1.0: rng.exponential(1.0 / lambd, shape),
    "geometric_": lambda rng, shape, p: rng.geometric(p, shape),
    "cauchy_": lambda rng, shape, median=0.0, sigma=1.0: median + sigma * rng.standard_cauchy(
        shape),
    "log_normal_": lambda rng, shape, mean=1.0, std=2.0: rng.lognormal(mean, std, shape),
    "bernoulli_": lambda rng, shape, p=0.5: rng.random(shape) < np.asarray(
        p._data if isinstance(p, Tensor) else p),
}


def _contiguous_copy(t):
    out = ops.clone(t)  # clone keeps the layout; this copy is row-major (C)
    d = out._data
    out._data = np.ascontiguousarray(d) if d.__class__ is np.ndarray else d.copy(order="C")
    return out


def _reflected(fn, name):
    """``other <op> self`` (``__rand__`` and kin): ``fn(other, self)``."""
    def op(self, other):
        return fn(other, self)
    op.__name__ = name
    return op


def _bitwise_inplace(fn, name):
    """``x.bitwise_and_(other)`` / ``x &= other``: the result written into ``x``, which
    keeps its dtype (PyTorch: a bool tensor cannot take an integer result)."""
    def method(self, other):
        out = fn(self, other)
        if out.dtype != self.dtype and dtype_kind(self.dtype) == "b":
            raise RuntimeError(f"{name}: result type {_torch_name(out.dtype)} can't be cast "
                               f"to the desired output type {_torch_name(self.dtype)}")
        return _fill_with(name)(self, out)
    method.__name__ = name
    return method


_TYPE_NAMES = {"float64": "DoubleTensor", "float32": "FloatTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
               "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """``t.type()``: PyTorch's type string (``"torch.DoubleTensor"``, which ported code
    compares with); ``t.type(dtype)``: ``t.to(dtype)`` (a dtype or such a string)."""
    if dtype is None:
        return "torch." + _TYPE_NAMES.get(np.dtype(numpy_dtype(self.dtype)).name, "Tensor")
    if isinstance(dtype, _creation._LegacyType):  # t.type(chainrule.FloatTensor)
        dtype = dtype.dtype
    if isinstance(dtype, str):
        names = {v: k for k, v in _TYPE_NAMES.items()}
        dtype = np.dtype(names.get(dtype.rpartition(".")[2], dtype))
    return _to(self, dtype=dtype)


def _invert(self):
    d = self._data
    if dtype_kind(d.dtype) not in "biu":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    if d.__class__ is np.ndarray:
        return wrap(np.invert(d))
    xp = backend_of(d).xp
    return wrap(xp.logical_not(d) if d.dtype == xp.bool else xp.bitwise_invert(d))


def _new(make):
    """``t.new_zeros(size)`` and kin: a new tensor with ``t``'s dtype and device."""
    def new(self, *size, dtype=None, device=None, requires_grad=False, **kwargs):
        return make(self, size, dtype=self.dtype if dtype is None else dtype,
                    device=self.device if device is None else device,
                    requires_grad=requires_grad, **kwargs)
    return new


def _shape_args(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (list, tuple)) \
        else tuple(size)


def _like_methods(T):
    """The methods that take another tensor's shape or dtype, and the ``new_*``
    constructors (PyTorch's names)."""
    from . import _creation as c

    T.type_as = lambda self, other: self.to(_tensor_arg(other, "type_as").dtype)
    T.view_as = lambda self, other: ops.view(self, *_tensor_arg(other, "view_as").shape)
    T.reshape_as = lambda self, other: ops.reshape(self, *_tensor_arg(other, "reshape_as").shape)
    T.expand_as = lambda self, other: ops.expand(self, *_tensor_arg(other, "expand_as").shape)
    T.is_floating_point = lambda self: dtype_kind(self.dtype) == "f"
    T.repeat = lambda self, *sizes: ops.repeat(self, *sizes)
    T.new_zeros = _new(lambda self, size, **kw: c.zeros(*_shape_args(size), **kw))
    T.new_ones = _new(lambda self, size, **kw: c.ones(*_shape_args(size), **kw))
    T.new_empty = _new(lambda self, size, **kw: c.empty(*_shape_args(size), **kw))
    T.new_full = lambda self, size, fill_value, dtype=None, device=None, \
        requires_grad=False: c.full(tuple(size), fill_value,
                                    dtype=self.dtype if dtype is None else dtype,
                                    device=self.device if device is None else device,
                                    requires_grad=requires_grad)
    T.new_tensor = lambda self, data, dtype=None, device=None, requires_grad=False: \
        c.tensor(data, dtype=numpy_dtype(self.dtype) if dtype is None else dtype,
                 device=self.device if device is None else device,
                 requires_grad=requires_grad)


def _stride(self, dim=None):
    """The step, in elements, between neighbours along each dim (PyTorch's ``stride``):
    NumPy's strides of the data (0 along a broadcast dim, (1, n) for a transposed matrix);
    the row-major strides of the shape where NumPy's are negative (a flipped view, which
    PyTorch copies) or the data is not NumPy's."""
    d = self._data
    shape = tuple(d.shape)
    strides = None
    if d.__class__ is np.ndarray and d.itemsize and d.size:  # empty: row-major, as PyTorch
        size = d.itemsize
        if all(s >= 0 and s % size == 0 for s in d.strides):
            strides = tuple(s // size for s in d.strides)
    if strides is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
    if dim is None:
        return strides
    if not -len(shape) <= dim < max(len(shape), 1):
        raise IndexError(f"stride: Dimension out of range (expected to be in range of "
                         f"[{-len(shape)}, {len(shape) - 1}], but got {dim})")
    return strides[dim]


def _element_size(self):
    """Bytes per element."""
    return np.dtype(numpy_dtype(self.dtype)).itemsize


def _get_device(self):
    """-1 for a CPU tensor, else the GPU's index (PyTorch's ``get_device``)."""
    dev = self.device
    return -1 if dev.type == "cpu" else (dev.index or 0)


def _resize(self, *sizes):
    """``t.resize_(*sizes)``: ``t`` given the shape ``sizes``, keeping its first entries in
    row-major order (new entries are 0 here; PyTorch leaves them uninitialised).

    Raises RuntimeError for a tensor that requires grad (as PyTorch)."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(int(s) for s in _shape_args(sizes))
    if any(s < 0 for s in shape):
        raise RuntimeError(f"resize_: Trying to create tensor with negative dimension: "
                           f"{list(shape)}")
    d = self._data
    if tuple(d.shape) == shape:
        return self
    xp = np if d.__class__ is np.ndarray else backend_of(d).xp
    flat = xp.reshape(d, (-1,))
    n = int(np.prod(shape, dtype=np.int64))
    if n <= flat.shape[0]:
        new = xp.reshape(flat[:n], shape)
    else:
        new = xp.concat([flat, xp.zeros((n - flat.shape[0],), dtype=d.dtype,
                                         **on_device_of(d))])
        new = xp.reshape(new, shape)
    self._data = xp.asarray(new, copy=True) if xp is not np else np.array(new)
    self._vc[0] += 1
    return self


def _fill_diagonal(self, fill_value, wrap=False):
    """``t.fill_diagonal_(value, wrap=False)``: the main diagonal (entries with all indices
    equal) set to ``value`` in place; a tall matrix with ``wrap=True`` restarts it every
    ``cols + 1`` rows (NumPy's ``fill_diagonal``).

    Raises RuntimeError below 2 dims, or for unequal dims above 2 (PyTorch's texts)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(tuple(self.shape), dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return self.masked_fill_(wrap_tensor(beside(mask, self._data)), fill_value)


wrap_tensor = wrap


def _contains(self, element):
    """``element in t``: whether any entry equals ``element`` (a number, or a tensor
    broadcast against ``t``), as PyTorch's ``(t == element).any()``."""
    if isinstance(element, (Tensor, int, float, np.number, np.bool_)):
        return bool(ops.searching.reduce_any(ops.eq(self, element)))  # (a host copy of one bool)
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                       f"in a {type(element)}.")


def _register_post_accumulate_grad_hook(self, hook):
    """Run ``hook(tensor)`` each time a backward pass has accumulated this leaf's ``.grad``
    (not when ``autograd.grad`` computes its gradient, nor when ``backward(inputs=...)``
    leaves it out, as PyTorch); its result is ignored. Returns a handle with ``remove()``.

    Raises RuntimeError for a tensor that does not require grad, or a non-leaf."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf "
                           "tensors")
    hooks = self._extra.get("post_accumulate_hooks") if self._extra else None
    if hooks is None:
        hooks = []
        self._extra_set("post_accumulate_hooks", hooks)  # the engine runs them
    hooks.append(hook)
    return _Handle(hooks, hook)


def _inplace_compare(fn, op_name):
    """``x.eq_(y)`` and kin: the comparison's result written into ``x``'s dtype (1 and 0),
    as PyTorch's. A tensor that required grad still does, with a zero gradient."""
    name = op_name + "_"

    def method(self, *args):
        def compute(old):
            result = fn(old, *args)
            if old.requires_grad:  # recorded: old's gradient through the update is zero
                never = _creation.zeros(tuple(result.shape), dtype=np.bool_)
                result = ops.where(never, old, result.to(old.dtype))
            return result
        return _inplace.update(self, compute, name, *args)

    method.__name__ = name
    method.__doc__ = f"In-place ``{op_name}``: ``self`` set to the result, in its dtype."
    return method


def _data_ptr(self):
    """The address of the tensor's first element (NumPy's or CuPy's buffer): equal for
    views that start at the same element, as PyTorch's."""
    d = self._data
    if isinstance(d, np.ndarray):
        return d.__array_interface__["data"][0]
    ptr = getattr(getattr(d, "data", None), "ptr", None)  # CuPy
    if ptr is None:
        raise RuntimeError(f"data_ptr: {type(d).__name__} arrays give no address")
    return int(ptr)


def _root_array(d):
    while isinstance(getattr(d, "base", None), np.ndarray):
        d = d.base
    return d


def _storage_offset(self):
    """Elements between the start of the NumPy buffer the tensor's data views (its
    outermost base array) and its first element (0 for a tensor that owns its data)."""
    d = self._data
    if not isinstance(d, np.ndarray) or d.itemsize == 0:
        return 0
    root = _root_array(d)
    return (d.__array_interface__["data"][0] - root.__array_interface__["data"][0]) \
        // d.itemsize


def _is_set_to(self, tensor):
    """True when both tensors view the same memory the same way (address, shape, strides,
    dtype), as PyTorch's."""
    return (isinstance(tensor, Tensor) and self.dtype == tensor.dtype
            and tuple(self.shape) == tuple(tensor.shape) and _stride(self) == _stride(tensor)
            and _data_ptr(self) == _data_ptr(tensor))


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride; (0, 1, ...)
    for a contiguous tensor)."""
    strides = _stride(self)
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


def _cpu_callable(self, name):
    if not isinstance(self._data, np.ndarray):
        raise RuntimeError(f"{name}: only implemented on CPU tensors")
    if self.requires_grad and STATE.enabled:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _apply(self, callable):  # noqa: A002  (PyTorch's parameter name)
    """``x.apply_(fn)``: every element replaced by ``fn(element)`` (a Python number; cast
    to the tensor's dtype), in place. CPU only; not for a tensor that requires grad."""
    _cpu_callable(self, "apply_")
    flat = self._data.reshape(-1).tolist()
    values = np.array([callable(v) for v in flat]).reshape(self._data.shape)
    return _fill_with("apply_")(self, wrap(values.astype(self._data.dtype)))


def _map(self, tensor, callable):  # noqa: A002
    """``x.map_(y, fn)``: every element ``a`` of ``x`` replaced by ``fn(a, b)``, ``b`` the
    matching element of ``y`` broadcast to ``x``'s shape, in place (CPU only)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_: argument 'other' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    _cpu_callable(self, "map_")
    other = np.asarray(tensor._data)
    try:
        other = np.broadcast_to(other, self._data.shape)
    except ValueError:
        raise RuntimeError(f"map_: the tensor of shape {list(other.shape)} cannot be "
                           f"broadcast to {list(self._data.shape)}") from None
    values = [callable(a, b) for a, b in zip(self._data.reshape(-1).tolist(),
                                             other.reshape(-1).tolist())]
    values = np.array(values).reshape(self._data.shape)
    return _fill_with("map_")(self, wrap(values.astype(self._data.dtype)))


def _as_subclass(self, cls):
    """``x`` (its data and history shared) as an instance of the Tensor subclass ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    alias = ops.view(self, *self.shape) if self.requires_grad else self.detach()
    out = cls.__new__(cls)
    for klass in type(alias).__mro__:
        for slot in getattr(klass, "__slots__", ()):
            if hasattr(alias, slot) and slot != "__weakref__":
                object.__setattr__(out, slot, getattr(alias, slot))
    return out


def _legacy_new_method(self, *args, **kwargs):
    """``x.new(...)`` (PyTorch's legacy constructor) in ``x``'s dtype: ``x.new(2, 3)`` is an
    uninitialised tensor of that shape, ``x.new([1, 2])`` a copy of the data."""
    data, alias = _creation.legacy_new(args, numpy_dtype(self.dtype), "new", True)
    return alias if alias is not None else wrap(data)


def nonzero_static(input, *, size, fill_value=-1):
    """The indices of the nonzero elements of ``input`` (as ``nonzero``, shape (n, ndim))
    cut or padded with ``fill_value`` to exactly ``size`` rows."""
    if not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = np.argwhere(np.asarray(input.detach().cpu().numpy()))[:size]
    out = np.full((size, input.ndim), fill_value, dtype=np.int64)
    out[:len(found)] = found
    return wrap(beside(out, input._data))


# PyTorch's top-level in-place functions (``torch.exp_(x)`` is ``x.exp_()``): made from the
# Tensor methods by chainrule/__init__.py (:func:`top_level_inplace`)
TOP_INPLACE = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "conj_physical_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_",
    "exp2_", "exp_", "expm1_", "fill_", "fix_", "floor_", "frac_", "gcd_", "i0_", "index_put_",
    "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
    "negative_", "rad2deg_", "reciprocal_", "resize_as_", "round_", "rsqrt_", "sigmoid_",
    "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_",
)


def top_level_inplace(name):
    """``torch.<name>(input, *args)``: the Tensor method ``input.<name>(*args)``; None when
    Tensor has no such method."""
    method = getattr(Tensor, name, None)
    if method is None:
        return None

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: ``input`` updated in place and returned."
    return name_errors(fn)


def install():
    T = Tensor
    _like_methods(T)
    _tensor_mod.view_hooks.refresh = refresh_view
    _tensor_mod.view_hooks.contiguous = _contiguous_copy
    for name in _SAME_NAME:
        setattr(T, name, getattr(ops, name))
    for name, keyword in (("reshape", "shape"), ("view", "size"), ("permute", "dims"),
                          ("expand", "size")):
        setattr(T, name, _varargs(getattr(ops, name), keyword))
    for name in ("flip", "tile", "squeeze", "count_nonzero"):
        setattr(T, name, _dims_varargs(getattr(ops, name)))
    T.where = lambda self, condition, other: ops.where(condition, self, other)
    T.is_complex = lambda self: dtype_kind(self.dtype) == "c"
    T.any, T.all = ops.searching.reduce_any, ops.searching.reduce_all
    T.to = _to
    T.cpu = _cpu
    T.cuda = _cuda
    T.float = lambda self: _to(self, np.float32)
    T.double = lambda self: _to(self, np.float64)
    T.long = _fast_cast(np.int64)
    T.int = _fast_cast(np.int32)
    T.bool = _fast_cast(np.bool_)
    T.half = lambda self: _to(self, np.float16)
    T.bfloat16 = lambda self: _to(self, BFLOAT16)  # raises, naming it
    T.byte = lambda self: _to(self, np.uint8)
    T.char = lambda self: _to(self, np.int8)
    T.short = lambda self: _to(self, np.int16)
    T.type = _type
    T.__init__ = _creation.tensor_init
    T.nelement = T.numel
    T.ndimension = T.dim
    T.stride = _stride
    T.element_size = _element_size
    T.get_device = _get_device
    T.resize_ = _resize
    T.fill_diagonal_ = _fill_diagonal
    T.__contains__ = _contains
    T.real = property(ops.real)  # a real tensor is its own real part
    T.imag = property(ops.imag)  # raises for a real tensor, as PyTorch's
    T.is_conj = T.is_neg = lambda self: False  # conjugates are computed, never lazy
    T.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
    for name in ("isinf", "isposinf", "isneginf", "isreal", "unfold", "multinomial",
                 "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                 "bitwise_left_shift", "bitwise_right_shift"):
        setattr(T, name, getattr(ops, name))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                 "bitwise_right_shift"):
        setattr(T, name + "_", _bitwise_inplace(getattr(ops, name), name + "_"))
    T.bitwise_not_ = lambda self: _fill_with("bitwise_not_")(self, ops.bitwise_not(self))
    for name, draw in _RANDOM_FILLS.items():
        setattr(T, name, _random_fill(name, draw))
    T.T = property(lambda self: ops.permute(self, tuple(range(self.ndim))[::-1]))
    # on a 0-d tensor PyTorch's mT/mH/adjoint are the identity (deprecated, with a warning)
    T.mT = property(lambda self: _matrix_t_0d(self, "mT") if self.ndim == 0 else
                    ops.transpose(self, -2, -1))
    T.mH = property(lambda self: _matrix_t_0d(self, "mH") if self.ndim == 0 else
                    ops.conj(ops.transpose(self, -2, -1)))  # (real: mT)
    T.H = property(_H)
    # Operators are the ops' own call functions: the hot path of user code.
    T.__add__, T.__sub__, T.__mul__ = ADD.call, SUB.call, MUL.call
    T.__truediv__, T.__pow__ = DIV.call, POW.call
    T.__radd__ = lambda self, other: ADD.call(other, self)
    T.__rsub__ = lambda self, other: SUB.call(other, self)
    T.__rmul__ = lambda self, other: MUL.call(other, self)
    T.__rtruediv__ = _rtruediv
    T.__rpow__ = lambda self, other: POW.call(other, self)
    T.__matmul__ = lambda self, other: ops.matmul(self, other)
    T.__rmatmul__ = lambda self, other: ops.matmul(other, self)
    T.__neg__ = ops.neg
    T.__abs__ = ops.abs
    T.__pos__ = lambda self: self
    T.__getitem__ = ops.getitem
    T.__setitem__ = _setitem
    T.__lt__, T.__le__, T.__gt__, T.__ge__ = ops.lt, ops.le, ops.gt, ops.ge
    T.__eq__, T.__ne__ = ops.eq, ops.ne
    # bitwise on integer tensors, logical on bool ones (PyTorch); floats raise
    for op, name in (("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                     ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")):
        fn = getattr(ops, name)
        setattr(T, f"__{op}__", fn)
        setattr(T, f"__r{op}__", _reflected(fn, f"__r{op}__"))
        setattr(T, f"__i{op}__", _bitwise_inplace(fn, f"__i{op}__"))
    T.__invert__ = _invert
    for name, fn, ufunc in (("add", ops.add, np.add), ("sub", ops.sub, np.subtract),
                            ("mul", ops.mul, np.multiply), ("div", ops.div, np.true_divide)):
        method = _inplace_binary(fn, ufunc)
        setattr(T, name + "_", method)
    for name in ("neg", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos",
                 "tan", "tanh", "sigmoid", "relu", "erf", "square", "reciprocal", "clamp",
                 "clip", "pow", "tril", "triu", "index_put",
                 "acos", "arccos", "asin", "arcsin", "atan", "arctan", "sinh", "cosh", "asinh",
                 "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "log2", "log10", "exp2",
                 "rsqrt", "lgamma", "digamma", "erfc", "erfinv", "sinc", "floor", "ceil",
                 "round", "trunc", "fix", "frac", "sgn", "negative", "absolute", "nan_to_num",
                 "i0", "logit", "mvlgamma", "clamp_min", "clamp_max", "atan2", "arctan2",
                 "hypot", "xlogy", "fmod", "remainder", "floor_divide", "copysign", "lerp",
                 "addcmul", "addcdiv", "multiply", "subtract", "divide",
                 "cumsum", "cumprod", "float_power", "ldexp", "nextafter", "true_divide",
                 "put", "index_reduce", "conj_physical"):
        setattr(T, name + "_", _inplace_variant(getattr(ops, name), name))
    # in-place view ops that change the shape: the tensor keeps its identity
    T.unsqueeze_ = lambda self, dim: _inplace.reshape_in_place(
        self, lambda x: ops.unsqueeze(x, dim), "unsqueeze_")
    T.squeeze_ = lambda self, *dim: _inplace.reshape_in_place(
        self, lambda x: ops.squeeze(x, *dim), "squeeze_")
    T.t_ = lambda self: _inplace.reshape_in_place(self, ops.t, "t_")
    T.transpose_ = lambda self, dim0, dim1: _inplace.reshape_in_place(
        self, lambda x: ops.transpose(x, dim0, dim1), "transpose_")
    T.polygamma = lambda self, n: ops.polygamma(n, self)  # torch: x.polygamma(n)
    T.polygamma_ = _inplace_variant(T.polygamma, "polygamma")
    # NumPy's names that PyTorch has as Tensor methods too (chainrule.ops.numpy_names)
    for name in ("deg2rad", "rad2deg", "ravel"):
        setattr(T, name, getattr(ops, name))
    for name in ("hsplit", "vsplit", "dsplit"):  # x.hsplit(1, 2): the indices [1, 2]
        setattr(T, name, _dims_varargs(getattr(ops, name)))
    for name in ("deg2rad", "rad2deg"):
        setattr(T, name + "_", _inplace_variant(getattr(ops, name), name))
    T.__mod__ = lambda self, other: ops.remainder(self, other)
    T.__rmod__ = lambda self, other: ops.remainder(other, self)
    T.__floordiv__ = lambda self, other: ops.floor_divide(self, other)
    T.__rfloordiv__ = lambda self, other: ops.floor_divide(other, self)
    # gathers, scatters, index and mask ops (chainrule.ops.scatter), and in place
    for name in ("gather", "scatter", "scatter_add", "scatter_reduce", "index_select",
                 "index_add", "index_copy", "index_fill", "masked_fill", "masked_select",
                 "masked_scatter", "take"):
        setattr(T, name, getattr(ops, name))
    for name in ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                 "index_fill", "masked_fill", "masked_scatter"):
        setattr(T, name + "_", _inplace_variant(getattr(ops, name), name))
    T.__iadd__ = lambda self, other: T.add_(self, other)
    T.__isub__ = lambda self, other: T.sub_(self, other)
    T.__imul__ = lambda self, other: T.mul_(self, other)
    T.__itruediv__ = lambda self, other: T.div_(self, other)
    T.zero_ = _zero
    T.fill_ = _fill
    T.copy_ = _copy


def install_more(T, is_nonzero, removed, strided, functional):
    """More of PyTorch's Tensor methods and attributes (aliases, queries, legacy methods),
    installed by ``chainrule/__init__.py`` with what they need from the layers above this
    one: ``is_nonzero`` (chainrule._compat), the texts of removed functions and the
    ``strided`` layout (chainrule._compat_names), and ``chainrule.nn.functional``."""
    for name in ("greater", "greater_equal", "less", "less_equal", "not_equal", "gcd", "lcm",
                 "igamma", "igammac"):
        setattr(T, name, getattr(ops, name))
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                 "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
                 "logical_not"):
        setattr(T, name + "_", _inplace_compare(getattr(ops, name), name))
    for name in ("heaviside", "gcd", "lcm", "igamma", "igammac"):
        setattr(T, name + "_", _inplace_variant(getattr(ops, name), name))
    for name in ("swapaxes", "swapdims"):
        setattr(T, name + "_", lambda self, dim0, dim1, _n=name: _inplace.reshape_in_place(
            self, lambda x: ops.transpose(x, dim0, dim1), _n + "_"))
    T.layout = property(lambda self: strided)
    T.is_cpu = property(lambda self: self.device.type == "cpu")
    T.itemsize = property(_element_size)
    T.nbytes = property(lambda self: self.numel() * _element_size(self))
    T.data_ptr = _data_ptr
    T.storage_offset = _storage_offset
    T.is_set_to = _is_set_to
    T.dim_order = _dim_order
    T.is_nonzero = is_nonzero
    T.is_same_size = lambda self, other: tuple(self.shape) == tuple(other.shape)
    T.is_signed = lambda self: dtype_kind(self.dtype) in "ifc"
    T.resize_as_ = lambda self, the_template, *, memory_format=None: _resize(
        self, *the_template.shape)
    T.new = _legacy_new_method
    T.prelu = lambda self, weight: functional.prelu(self, weight)
    T.hardshrink = lambda self, lambd=0.5: functional.hardshrink(self, lambd)
    T.apply_ = _apply
    T.map_ = _map
    T.as_subclass = _as_subclass
    T.nonzero_static = nonzero_static
    for name in ("lstsq", "solve", "symeig", "eig"):
        setattr(T, name, lambda self, *args, _n=name, **kwargs: _removed(_n, removed))


def _removed(name, texts):
    raise RuntimeError(f"{name}: {texts[name]}")
