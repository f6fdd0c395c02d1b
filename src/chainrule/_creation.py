"""Constructors: tensor, as_tensor, from_numpy, zeros, ones, full, empty, eye, arange,
linspace, *_like, rand, randn, randint, manual_seed.

Dtypes follow NumPy: a Python float (or list of floats) gives the default float dtype
(float64 unless :func:`set_default_dtype` changed it), ints give int64; every constructor
takes ``dtype=``, ``device=`` ("cpu") and ``requires_grad=`` (float dtypes only), and the
shape as ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``.
"""

from __future__ import annotations

import numpy as np

from ._dispatch import name_errors
from ._tensor import Tensor, wrap
from .backend import backend_of, numpy_dtype
from .backend import device as _device

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "eye",
           "arange", "linspace", "zeros_like", "ones_like", "full_like", "empty_like", "rand",
           "randn", "randint", "rand_like", "randn_like", "manual_seed", "default_generator",
           "set_default_dtype", "get_default_dtype", "from_dlpack", "compute"]

_DEFAULT_FLOAT = [np.dtype(np.float64)]


def set_default_dtype(d):
    """Set the float dtype that constructors give Python floats (float64, NumPy's, unless
    changed; float32 as in PyTorch's default). Only float32 and float64 are accepted
    (TypeError otherwise, as PyTorch)."""
    d = np.dtype(d)
    if d not in (np.float32, np.float64):
        raise TypeError(f"set_default_dtype: only float32 and float64 are supported as the "
                        f"default dtype, got {d}")
    _DEFAULT_FLOAT[0] = d


def get_default_dtype():
    """The float dtype constructors give Python floats (float64 unless changed)."""
    return _DEFAULT_FLOAT[0].type


def _np_dtype(dtype):
    """A dtype of any backend (``x.dtype`` of a tensor on another device) as NumPy's."""
    return None if dtype is None else numpy_dtype(dtype)


def _float_default(data, dtype, from_python=True):
    """Cast a float64 result of a constructor to the default float dtype when no dtype was
    asked for (and the data came from Python numbers, not from an array)."""
    if dtype is None and from_python and data.dtype == np.float64 \
            and _DEFAULT_FLOAT[0] != np.float64:
        return data.astype(_DEFAULT_FLOAT[0])
    return data


def _check_device(device, op):
    """NumPy data lives on the CPU; ``device="cuda"`` moves the result onto CuPy."""
    if device is None:
        return None
    dev = _device(device)
    if dev.type == "cpu":
        return None
    if dev.type != "cuda" and "." not in dev.type:
        raise RuntimeError(f"{op}: device {str(dev)!r} is not available: chainrule computes "
                           "on the CPU (NumPy, Dask), on 'cuda' (CuPy) or on an Array API "
                           "library's device ('array_api_strict.device1')")
    return dev  # made on the host, then moved there


def _on_device(t, dev):
    return t if dev is None else t.to(dev)


def _foreign(data):
    """True for an array of another backend (Dask, CuPy, an Array API library): kept as
    it is, never converted or computed."""
    return not isinstance(data, (np.ndarray, np.generic, list, tuple, float, int, bool,
                                 complex)) and hasattr(data, "shape") and hasattr(data, "dtype")

default_generator = np.random.default_rng(0)


def manual_seed(seed):
    """Seed the generator behind rand, randn and randint (NumPy's PCG64)."""
    global default_generator
    default_generator = np.random.default_rng(seed)
    return default_generator


def _make(data, requires_grad, device=None):
    dev = _check_device(device, "tensor")
    if dev is not None:  # made on the host, then moved (CuPy)
        t = wrap(data).to(dev)
        if requires_grad:
            t.requires_grad_(True)
        return t
    t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _shape(size, keyword=None):
    if keyword is not None:
        if size:
            raise TypeError("give the shape either positionally or as size=, not both")
        size = (keyword,)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (array_like or Tensor)."""
    dev = _check_device(device, "tensor")
    from_python = not isinstance(data, (Tensor, np.ndarray, np.generic))
    if isinstance(data, Tensor):
        data = data._data
    if _foreign(data):  # a Dask, CuPy or Array API array: kept on its backend (no compute)
        xp = backend_of(data).xp
        data = data if dtype is None else xp.astype(data, dtype)
        return _make(xp.asarray(data, copy=True) if not backend_of(data).lazy else data,
                     requires_grad, device)
    return _make(_float_default(np.array(data, dtype=dtype), dtype, from_python),
                 requires_grad, dev)


def as_tensor(data, dtype=None):
    """Share memory with ``data`` when it already is an ndarray of ``dtype``; a Tensor is
    returned as is (converted if ``dtype`` differs)."""
    if isinstance(data, Tensor):
        if dtype is None or data.dtype == np.dtype(dtype):
            return data
        return data.to(dtype)
    if _foreign(data):  # kept on its backend, shared (no conversion, no compute)
        return wrap(data if dtype is None else backend_of(data).xp.astype(data, dtype))
    return wrap(np.asarray(data, dtype=dtype))


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that implements the DLPack protocol
    (``__dlpack__``): a CuPy array stays on the GPU, a host array becomes NumPy."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: a {type(ext_tensor).__name__} does not implement the "
                        "DLPack protocol (__dlpack__)")
    module = type(ext_tensor).__module__.split(".")[0]
    if module == "cupy":
        return wrap(ext_tensor)
    return wrap(np.from_dlpack(ext_tensor))


def compute(*tensors):
    """Compute lazy (Dask) tensors, all in one shared Dask compute, and return them as
    NumPy-backed tensors without history (others are returned detached, as they are).
    This is the one place besides ``.numpy()`` where Dask work runs."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"compute: argument {i} is a {type(t).__name__}, not a Tensor")
    lazy = [i for i, t in enumerate(tensors) if backend_of(t._data).lazy]
    out = [t.detach() for t in tensors]
    if lazy:
        import dask

        values = dask.compute(*[tensors[i]._data for i in lazy])
        for i, v in zip(lazy, values):
            out[i] = wrap(np.asarray(v))
    return tuple(out)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to either show in the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy expects an np.ndarray, got {type(ndarray).__name__}")
    return wrap(ndarray)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of zeros of shape ``size`` (float64 by default)."""
    _check_device(device, "zeros")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "zeros")
    data = np.zeros(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of ones of shape ``size`` (float64 by default)."""
    _check_device(device, "ones")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "ones")
    data = np.ones(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """An uninitialized tensor of shape ``size``."""
    _check_device(device, "empty")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "empty")
    data = np.empty(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def _no_extra(kwargs, op):
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype as NumPy infers it)."""
    _check_device(device, "full")
    return _make(_float_default(np.full(tuple(size), fill_value, dtype=_np_dtype(dtype)), dtype),
                 requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The ``n x m`` identity (``m = n`` by default)."""
    _check_device(device, "eye")
    return _make(_float_default(np.eye(n, m, dtype=_np_dtype(dtype)), dtype), requires_grad, device)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    """Values in ``[start, end)`` spaced by ``step`` (``arange(n)`` counts from 0)."""
    _check_device(device, "arange")
    if end is None:
        start, end = 0, start
    return _make(_float_default(np.arange(start, end, step, dtype=_np_dtype(dtype)), dtype),
                 requires_grad, device)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    _check_device(device, "linspace")
    return _make(_float_default(np.linspace(start, end, steps, dtype=_np_dtype(dtype)), dtype),
                 requires_grad, device)


def _like(fn):
    def like(input, dtype=None, device=None, requires_grad=False):
        _check_device(device, fn.__name__)
        data = input._data if isinstance(input, Tensor) else input
        if _foreign(data):  # on the input's backend (lazily for Dask)
            return _make(getattr(backend_of(data).xp, fn.__name__)(data, dtype=dtype),
                         requires_grad)
        return _make(fn(np.asarray(data), dtype=dtype), requires_grad, device)

    like.__name__ = fn.__name__
    like.__doc__ = f"``numpy.{fn.__name__}`` of ``input``'s shape and dtype."
    return like


zeros_like = name_errors(_like(np.zeros_like))
ones_like = name_errors(_like(np.ones_like))
empty_like = name_errors(_like(np.empty_like))


@name_errors
def full_like(input, fill_value, dtype=None, requires_grad=False):
    """A tensor of ``input``'s shape (and dtype) filled with ``fill_value``."""
    data = input._data if isinstance(input, Tensor) else input
    if _foreign(data):
        return _make(backend_of(data).xp.full_like(data, fill_value, dtype=dtype),
                     requires_grad)
    return _make(np.full_like(np.asarray(data), fill_value, dtype=dtype), requires_grad)


def _sample(op, draw, size, dtype, device, requires_grad, kwargs):
    _check_device(device, op)
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, op)
    data = _float_default(draw(default_generator, shape), dtype)
    return _make(data if dtype is None else data.astype(dtype), requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Uniform samples in [0, 1) of shape ``size`` (the default float dtype unless
    ``dtype``)."""
    return _sample("rand", lambda g, s: g.random(s), size, dtype, device, requires_grad,
                   kwargs)


def randn(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Standard normal samples of shape ``size`` (the default float dtype unless
    ``dtype``)."""
    return _sample("randn", lambda g, s: g.standard_normal(s), size, dtype, device,
                   requires_grad, kwargs)


def randint(low, high=None, size=(), dtype=None):
    """Random integers in ``[low, high)`` (``[0, low)`` when ``high`` is omitted)."""
    if high is None:
        low, high = 0, low
    return wrap(default_generator.integers(low, high, size=tuple(size), dtype=dtype or np.int64))


@name_errors
def rand_like(input, dtype=None, requires_grad=False):
    """Uniform samples of ``input``'s shape and dtype."""
    return rand(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


@name_errors
def randn_like(input, dtype=None, requires_grad=False):
    """Standard normal samples of ``input``'s shape and dtype."""
    return randn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)
