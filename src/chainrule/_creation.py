"""Constructors: tensor, as_tensor, from_numpy, zeros, ones, full, empty, eye, arange,
linspace, *_like, rand, randn, randint, manual_seed.

Dtypes follow NumPy: a Python float (or list of floats) gives the default float dtype
(float64 unless :func:`set_default_dtype` changed it), ints give int64; every constructor
takes ``dtype=``, ``device=`` ("cpu") and ``requires_grad=`` (float dtypes only), and the
shape as ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import _state
from ._dispatch import _combine, _group_dtype, name_errors, torch_promote
from ._tensor import DEFAULT_FLOAT as _DEFAULT_FLOAT
from ._tensor import (
    Tensor,
    _fill,
    channels_last,
    channels_last_3d,
    check_memory_format,
    contiguous_format,
    memory_format,
    preserve_format,
    wrap,
)
from ._trace import LOCAL as _TRACE_LOCAL
from .backend import backend_of, native_dtype, numpy_dtype
from .backend import device as _device

__all__ = ["tensor", "as_tensor", "from_numpy", "frombuffer", "zeros", "ones", "full", "empty",
           "eye", "arange", "linspace", "zeros_like", "ones_like", "full_like", "empty_like",
           "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
           "manual_seed", "default_generator", "Generator", "initial_seed", "seed",
           "set_default_dtype", "get_default_dtype", "from_dlpack", "compute", "logspace",
           "asarray", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
           "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "memory_format",
           "preserve_format", "contiguous_format", "channels_last", "channels_last_3d"]

def set_default_dtype(d):
    """Set the float dtype that constructors give Python floats (float64, NumPy's, unless
    changed; float32 as in PyTorch's default). Only float32 and float64 are accepted
    (TypeError otherwise, as PyTorch)."""
    d = numpy_dtype(d)
    if d not in (np.float32, np.float64):
        raise TypeError(f"set_default_dtype: only float32 and float64 are supported as the "
                        f"default dtype, got {d}")
    _DEFAULT_FLOAT[0] = d
    low = d != np.float64
    _state.LOW_DEFAULT_FLOAT[0] = low
    _state.STATE.set_modes(low_float=low)  # ops then give integer-only math this dtype


def get_default_dtype():
    """The float dtype constructors give Python floats (float64 unless changed): a NumPy
    dtype, ``chainrule.float64`` itself."""
    return _DEFAULT_FLOAT[0]


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

class Generator(np.random.Generator):
    """``torch.Generator``: a NumPy Generator (PCG64) with PyTorch's seeding methods. Pass
    it as ``generator=`` to rand, randn, randint, randperm, bernoulli, normal, DataLoader
    and random_split; it is a NumPy Generator too (``g.random(3)``).

    Raises RuntimeError for a device other than the CPU.
    """

    def __init__(self, device="cpu"):
        if _check_device(device, "Generator") is not None:
            raise RuntimeError(f"Generator: only CPU generators exist here, got device "
                               f"{str(device)!r}")
        self._initial_seed = 67280421310721  # PyTorch's default seed
        super().__init__(np.random.PCG64(self._initial_seed))

    device = _device("cpu")

    def __getattribute__(self, name):
        tracer = _TRACE_LOCAL.tracer
        if tracer is not None:  # chainrule.compile is tracing: a draw would be repeated
            tracer.refuse("a random number was drawn from a Generator")
        return super().__getattribute__(name)

    def manual_seed(self, seed):
        """Reseed in place; returns the generator. ``seed`` an int in [-2**63, 2**64): a
        negative one is taken modulo 2**64, as PyTorch.

        Raises RuntimeError for a non-integer, ValueError out of that range."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -2 ** 63 <= seed < 2 ** 64:
            raise ValueError("Overflow when unpacking long long")
        self._initial_seed = seed % 2 ** 64
        self.bit_generator.state = np.random.PCG64(self._initial_seed).state
        return self

    def initial_seed(self):
        """The seed last given (or the default one)."""
        return self._initial_seed

    def seed(self):
        """Reseed from fresh entropy; returns the seed."""
        self.manual_seed(np.random.SeedSequence().entropy % 2 ** 63)
        return self._initial_seed

    def get_state(self):
        """The generator's state as a uint8 tensor (as PyTorch's ByteTensor), for
        :meth:`set_state`: the PCG64 state and increment, its cached half-word and the
        initial seed (restored too)."""
        st = self.bit_generator.state
        words = [st["state"]["state"] >> 64, st["state"]["state"] & _MASK64,
                 st["state"]["inc"] >> 64, st["state"]["inc"] & _MASK64,
                 int(st["has_uint32"]), int(st["uinteger"]), self._initial_seed]
        return wrap(np.array(words, dtype="<u8").view(np.uint8))

    def set_state(self, new_state):
        """Restore a state from :meth:`get_state` (a uint8 tensor; the dict of NumPy's
        ``bit_generator.state`` too); returns the generator.

        Raises TypeError for anything else, RuntimeError for a tensor of the wrong size."""
        if isinstance(new_state, dict):
            self.bit_generator.state = new_state
            return self
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a chainrule.ByteTensor, but got "
                            f"{type(new_state).__name__}")
        data = np.asarray(new_state._host())
        if data.dtype != np.uint8:
            raise TypeError("RNG state must be a chainrule.ByteTensor")
        if data.size != 8 * _STATE_WORDS:
            raise RuntimeError(f"Expected an RNG state of {8 * _STATE_WORDS} bytes (from "
                               f"get_state()), got {data.size}")
        w = [int(v) for v in np.ascontiguousarray(data.reshape(-1)).view("<u8")]
        self.bit_generator.state = {
            "bit_generator": "PCG64", "state": {"state": (w[0] << 64) | w[1],
                                                "inc": (w[2] << 64) | w[3]},
            "has_uint32": w[4], "uinteger": w[5]}
        self._initial_seed = w[6]
        return self


_MASK64 = 2 ** 64 - 1
_STATE_WORDS = 7

default_generator = Generator().manual_seed(0)


def manual_seed(seed):
    """Seed the generator behind rand, randn, randint, ... in place (NumPy's PCG64);
    returns it (``chainrule.default_generator``). ``seed`` goes through ``int()`` first
    (``manual_seed(1.5)`` seeds 1), as PyTorch."""
    return default_generator.manual_seed(int(seed))


def initial_seed():
    """The seed of the default generator."""
    return default_generator.initial_seed()


def seed():
    """Reseed the default generator from fresh entropy; returns the seed."""
    return default_generator.seed()


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
        b = backend_of(data)
        data = data if dtype is None else b.xp.astype(data, native_dtype(b, dtype))
        t = wrap(b.xp.asarray(data, copy=True) if not b.lazy else data)
        t = t if device is None else t.to(device)  # ("cpu" too: an explicit host copy)
        return t.requires_grad_(True) if requires_grad else t
    array = np.array(data, dtype=dtype if dtype is None else numpy_dtype(dtype))
    if array.dtype.kind in "OUSV":
        _not_numeric(data, array, "tensor")
    return _make(_float_default(array, dtype, from_python), requires_grad, dev)


class NotNumericError(TypeError, RuntimeError):
    """Data no tensor dtype holds (``None``, a list of ``None``): PyTorch's constructors raise
    RuntimeError ("Could not infer dtype"), its ops a TypeError for the same argument."""


def _not_numeric(data, array, op):
    """Raise for data that NumPy keeps as objects or strings (``tensor(None)``,
    ``tensor("abc")``): no tensor dtype holds them (PyTorch raises too)."""
    if array.dtype.kind == "O":
        raise NotNumericError(f"{op}: Could not infer dtype of {type(data).__name__} "
                           f"(got {data!r:.60})")
    raise TypeError(f"{op}: invalid data type {type(data).__name__!r} (got {data!r:.60})")


def as_tensor(data, dtype=None, device=None):
    """Share memory with ``data`` when it already is an ndarray of ``dtype`` on ``device``;
    a Tensor is returned as is, or converted (``to(dtype)``, ``to(device)``: recorded, so
    the history is kept, as PyTorch) where its dtype or device differs. RuntimeError for a
    device that is not available (see :func:`tensor`)."""
    _check_device(device, "as_tensor")
    if device is not None:
        t = as_tensor(data, dtype)
        return t if t.device == _device(device) else t.to(device)
    if isinstance(data, Tensor):
        if dtype is None or numpy_dtype(data.dtype) == numpy_dtype(dtype):
            return data
        return data.to(dtype)
    if _foreign(data):  # kept on its backend, shared (no conversion, no compute)
        b = backend_of(data)
        return wrap(data if dtype is None else b.xp.astype(data, native_dtype(b, dtype)))
    array = np.asarray(data, dtype=dtype)
    if array.dtype.kind in "OUSV":
        _not_numeric(data, array, "as_tensor")
    return wrap(array)


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


_READONLY_WARNED = [False]
READONLY_BUFFER = (
    "The given buffer is not writable, and PyTorch does not support non-writable tensors. "
    "This means you can write to the underlying (supposedly non-writable) buffer using the "
    "tensor. You may want to copy the buffer to protect its data or make it writable before "
    "converting it to a tensor. This type of warning will be suppressed for the rest of this "
    "program.")


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing memory with an object of Python's buffer protocol (bytearray,
    array.array, memoryview, mmap, ...): ``count`` elements of ``dtype`` (all that fit
    when -1) from byte ``offset`` on, as ``torch.frombuffer``. Raises ValueError as PyTorch
    for an empty buffer, ``count == 0``, an offset outside it, a length after the offset
    that is not a multiple of the element size, or too large a ``count``. A non-writable
    buffer (bytes) warns once, as PyTorch; unlike PyTorch's, the tensor is then read-only
    (an in-place update raises rather than write into immutable memory)."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dt = numpy_dtype(dtype)
    length, size = view.nbytes, dt.itemsize
    if view.readonly and not _READONLY_WARNED[0]:
        _READONLY_WARNED[0] = True
        warnings.warn(READONLY_BUFFER, UserWarning, stacklevel=2)
    if length <= 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0 and (length - offset) % size:
        raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                         f"bytes) must be a multiple of element size ({size})")
    n = (length - offset) // size if count < 0 else count
    if offset + n * size > length:
        raise ValueError(f"requested buffer length ({n} * {size} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    data = np.frombuffer(buffer, dtype=dt, count=n, offset=offset)
    return _make(data, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of zeros of shape ``size`` (float64 by default)."""
    _check_device(device, "zeros")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "zeros")
    _no_negative(shape)
    data = np.zeros(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """A tensor of ones of shape ``size`` (float64 by default)."""
    _check_device(device, "ones")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "ones")
    _no_negative(shape)
    data = np.ones(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def empty(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """An uninitialized tensor of shape ``size``."""
    _check_device(device, "empty")
    shape = _shape(size, kwargs.pop("size", None))
    _no_extra(kwargs, "empty")
    _no_negative(shape)
    data = np.empty(shape, dtype=_np_dtype(dtype))
    return _make(_float_default(data, dtype), requires_grad, device)


def _no_negative(shape):
    """PyTorch's RuntimeError for a negative size (before any draw)."""
    for s in shape:
        if int(s) < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {int(s)}: "
                               f"{[int(k) for k in shape]}")


def _no_extra(kwargs, op):
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """A tensor of shape ``size`` filled with ``fill_value`` (dtype as NumPy infers it)."""
    _check_device(device, "full")
    _no_negative(tuple(size))
    data = np.full(tuple(size), fill_value, dtype=_np_dtype(dtype))
    if data.dtype.kind in "OUSV":  # full(size, None), full(size, "a")
        raise TypeError(f"full: argument 'fill_value' must be a number, not "
                        f"{type(fill_value).__name__}")
    return _make(_float_default(data, dtype), requires_grad, device)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    """The ``n x m`` identity (``m = n`` by default)."""
    _check_device(device, "eye")
    for name, k in (("n", n), ("m", m)):
        if k is not None and int(k) < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {int(k)}")
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


@name_errors
def logspace(start, end, steps, base=10.0, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** x`` for ``x`` evenly spaced from ``start`` to ``end``
    inclusive (the default float dtype unless ``dtype``; an integer dtype truncates)."""
    _check_device(device, "logspace")
    data = np.power(float(base), np.linspace(start, end, steps))
    return _make(_float_default(data if dtype is None else data.astype(_np_dtype(dtype)), dtype),
                 requires_grad, device)


@name_errors
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """``obj`` as a tensor, sharing memory when it can (a Tensor, or an ndarray of
    ``dtype``), as ``torch.asarray``; ``copy=True`` always copies, ``copy=False`` raises
    where a copy is needed. Python floats give the default float dtype."""
    dev = _check_device(device, "asarray")
    if isinstance(obj, Tensor):
        t = obj if dtype is None or _np_dtype(dtype) == numpy_dtype(obj.dtype) \
            else obj.to(dtype)
        if t is not obj and copy is False:
            raise ValueError("asarray: a copy is needed to change the dtype, but copy=False")
        if copy and t is obj:
            t = obj.clone()
    elif _foreign(obj):
        return as_tensor(obj, dtype)
    else:
        from_python = not isinstance(obj, (np.ndarray, np.generic))
        try:
            data = np.array(obj, dtype=_np_dtype(dtype), copy=copy)
        except ValueError as e:
            raise ValueError(f"asarray: {e}") from None
        if data.dtype.kind in "OUSV":
            _not_numeric(obj, data, "asarray")
        t = wrap(_float_default(data, dtype, from_python))
    t = _on_device(t, dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _like(fn):
    def like(input, dtype=None, device=None, requires_grad=False, *, layout=None,
             memory_format=preserve_format):
        _check_device(device, fn.__name__)
        check_memory_format(memory_format, fn.__name__)
        data = input._data if isinstance(input, Tensor) else input
        if _foreign(data) and (device is None or _device(device) == backend_of(data).device(data)):
            b = backend_of(data)  # on the input's backend (lazily for Dask)
            return _make(getattr(b.xp, fn.__name__)(
                data, dtype=None if dtype is None else native_dtype(b, dtype)), requires_grad)
        if _foreign(data):  # made on the host, then moved to ``device``
            data = np.empty(tuple(data.shape), dtype=numpy_dtype(data.dtype))
        return _make(fn(np.asarray(data), dtype=_np_dtype(dtype)), requires_grad, device)

    like.__name__ = fn.__name__
    like.__doc__ = f"``numpy.{fn.__name__}`` of ``input``'s shape and dtype."
    return like


zeros_like = name_errors(_like(np.zeros_like))
ones_like = name_errors(_like(np.ones_like))
empty_like = name_errors(_like(np.empty_like))


@name_errors
def full_like(input, fill_value, dtype=None, requires_grad=False, *, device=None, layout=None,
              memory_format=preserve_format):
    """A tensor of ``input``'s shape (and dtype) filled with ``fill_value``."""
    _check_device(device, "full_like")
    check_memory_format(memory_format, "full_like")
    data = input._data if isinstance(input, Tensor) else input
    if _foreign(data) and (device is None or _device(device) == backend_of(data).device(data)):
        b = backend_of(data)
        return _make(b.xp.full_like(data, fill_value, dtype=None if dtype is None else
                                    native_dtype(b, dtype)), requires_grad)
    if _foreign(data):  # made on the host, then moved to ``device``
        data = np.empty(tuple(data.shape), dtype=numpy_dtype(data.dtype))
    return _make(np.full_like(np.asarray(data), fill_value, dtype=_np_dtype(dtype)),
                 requires_grad, device)


def _generator(generator):
    return default_generator if generator is None else generator


def _sample(op, draw, size, dtype, device, requires_grad, kwargs):
    if _check_device(device, op) is not None:  # the move after the draw may still fail:
        # then the random state goes back to what it was (a failing call draws nothing)
        rng = _generator(kwargs.get("generator"))
        saved = rng.bit_generator.state
        try:
            return _make(_sample(op, draw, size, dtype, None, False, kwargs)._data,
                         requires_grad, device)
        except Exception:
            rng.bit_generator.state = saved
            raise
    shape = _shape(size, kwargs.pop("size", None))
    rng = _generator(kwargs.pop("generator", None))
    _no_extra(kwargs, op)
    if dtype is not None:  # a bad dtype fails before the draw: the random state is untouched
        try:
            dtype = _np_dtype(dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{op}: dtype must be a dtype, got {dtype!r} ({e})") from None
        if np.dtype(dtype).kind not in "fc":  # PyTorch's kernels exist for floats only
            raise NotImplementedError(f"{op}: not implemented for dtype {np.dtype(dtype)} "
                                      "(a floating dtype is needed)")
    _no_negative(shape)
    data = _float_default(draw(rng, shape), dtype)
    return _make(data if dtype is None else data.astype(dtype), requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Uniform samples in [0, 1) of shape ``size`` (the default float dtype unless
    ``dtype``), from ``generator=`` or the default generator."""
    return _sample("rand", lambda g, s: g.random(s), size, dtype, device, requires_grad,
                   kwargs)


def randn(*size, dtype=None, device=None, requires_grad=False, **kwargs):
    """Standard normal samples of shape ``size`` (the default float dtype unless
    ``dtype``), from ``generator=`` or the default generator."""
    return _sample("randn", lambda g, s: g.standard_normal(s), size, dtype, device,
                   requires_grad, kwargs)


def _integers(op, low, high, size, generator, dtype, device, requires_grad):
    _check_device(device, op)
    if not low < high:
        raise RuntimeError(f"{op}: expects 'from' to be less than 'to', but got from={low} "
                           f">= to={high}")
    _no_negative(tuple(size))
    if dtype is not None and np.dtype(_np_dtype(dtype)).kind in "iu":
        info = np.iinfo(_np_dtype(dtype))
        if low < info.min:
            raise RuntimeError(f"{op}: from is out of bounds for {np.dtype(_np_dtype(dtype))}")
        if high - 1 > info.max:
            raise RuntimeError(f"{op}: to - 1 is out of bounds for "
                               f"{np.dtype(_np_dtype(dtype))}")
    data = _generator(generator).integers(low, high, size=tuple(size), dtype=np.int64)
    return _make(data if dtype is None else data.astype(_np_dtype(dtype)), requires_grad,
                 device)


@name_errors
def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False,
            low=None, high=None):
    """Random integers in ``[low, high)``, PyTorch's overloads: ``randint(high, size)`` and
    ``randint(low, high, size)`` (``size`` a tuple, positional or ``size=``; ``low``/``high``
    as keywords too). int64 unless ``dtype``.

    Raises TypeError without a size, RuntimeError when ``low >= high``.
    """
    args = list(args)
    if size is None:
        if not args or not isinstance(args[-1], (tuple, list)):
            raise TypeError("randint() missing required argument 'size' (a tuple, such as "
                            "randint(10, (3,)))")
        size = args.pop()
    low, high = _bounds("randint", args, low, high)
    return _integers("randint", low, high, size, generator, dtype, device, requires_grad)


def _bounds(op, args, low, high):
    """``(low, high)`` from PyTorch's ``(high)`` / ``(low, high)`` positional forms and the
    keywords."""
    if len(args) > 2:
        raise TypeError(f"{op}() takes high, or low and high; got {len(args)} numbers")
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    if high is None:
        raise TypeError(f"{op}() missing required argument 'high'")
    return 0 if low is None else low, high


@name_errors
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``)."""
    _check_device(device, "randperm")
    _no_negative((int(n),))
    data = _generator(generator).permutation(int(n))
    return _make(data if dtype is None else data.astype(_np_dtype(dtype)), requires_grad,
                 device)


@name_errors
def rand_like(input, dtype=None, device=None, requires_grad=False, generator=None, *,
              memory_format=preserve_format):
    """Uniform samples of ``input``'s shape and dtype."""
    check_memory_format(memory_format, "rand_like")
    return rand(*input.shape, dtype=dtype or input.dtype,
                device=input.device if device is None else device,
                requires_grad=requires_grad, generator=generator)


@name_errors
def randn_like(input, dtype=None, device=None, requires_grad=False, generator=None, *,
              memory_format=preserve_format):
    """Standard normal samples of ``input``'s shape and dtype."""
    check_memory_format(memory_format, "randn_like")
    return randn(*input.shape, dtype=dtype or input.dtype,
                 device=input.device if device is None else device,
                 requires_grad=requires_grad, generator=generator)


@name_errors
def randint_like(input, *args, low=None, high=None, dtype=None, device=None,
                 requires_grad=False, generator=None):
    """Random integers in ``[low, high)`` of ``input``'s shape and dtype:
    ``randint_like(input, high)`` or ``randint_like(input, low, high)``."""
    low, high = _bounds("randint_like", args, low, high)
    return _integers("randint_like", low, high, input.shape, generator, dtype or input.dtype,
                     input.device if device is None else device, requires_grad)


# --- torch.Tensor(...) and the legacy typed constructors (torch.FloatTensor, ...) ----------

def _sizes(args):
    """The shape when ``args`` are sizes (ints, or one chainrule.Size), else None."""
    if len(args) == 1 and isinstance(args[0], tuple) and hasattr(args[0], "numel"):  # a Size
        args = tuple(args[0])
    if args and all(isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_))
                    for a in args):
        sizes = tuple(int(a) for a in args)
        for s in sizes:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(sizes)}")
        return sizes
    return None


def legacy_new(args, dtype, name, typed):
    """The data (and the tensor it aliases, or None) of ``torch.Tensor(*args)``, or of a
    typed constructor (``typed``: ``torch.FloatTensor(*args)``, always of ``dtype``):
    no args: an empty 1-D tensor; ints (or a Size): an uninitialised tensor of that shape;
    a tensor: that tensor itself (its storage shared); data: a copy cast to ``dtype``."""
    dtype = np.dtype(dtype)
    if not args:
        return np.empty((0,), dtype=dtype), None
    shape = _sizes(args)
    if shape is not None:
        return np.empty(shape, dtype=dtype), None
    if len(args) != 1:
        raise TypeError(f"{name}(): expected sizes (ints) or one sequence of data, got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if isinstance(data, Tensor):
        if typed and numpy_dtype(data.dtype) != dtype:
            raise TypeError(f"{name}(): expected a tensor of dtype {dtype}, got one of "
                            f"{data.dtype}")
        return data._data, data
    if isinstance(data, str) or not (np.ndim(data) or isinstance(
            data, (float, int, np.floating, np.integer, np.bool_, bool))):
        raise TypeError(f"{name}(): data must be a sequence (got {type(data).__name__})")
    if _foreign(data):
        b = backend_of(data)
        return b.xp.astype(data, native_dtype(b, dtype)), None
    return np.array(data).astype(dtype), None


def tensor_init(self, *args, dtype=None, requires_grad=False, device=None):
    """``chainrule.Tensor(*args)``, as ``torch.Tensor``: ``Tensor(2, 3)`` is an
    uninitialised tensor of shape (2, 3) and ``Tensor([1, 2])`` a copy of the data, both of
    the default float dtype (or ``dtype``); ``Tensor(t)`` shares ``t``'s storage (and
    dtype); ``Tensor()`` is empty. chainrule also takes a number (a 0-d tensor),
    ``dtype=`` and ``requires_grad=``."""
    if _check_device(device, "Tensor") is not None:
        raise RuntimeError(f"Tensor: make a tensor on {device} with chainrule.tensor(..., "
                           "device=...)")
    if dtype is None and len(args) == 1 and isinstance(args[0], Tensor):
        dtype = args[0].dtype  # an alias keeps its dtype
    data, alias = legacy_new(args, get_default_dtype() if dtype is None else
                             _np_dtype(dtype), "Tensor", False)
    if alias is not None and numpy_dtype(alias.dtype) != numpy_dtype(data.dtype):
        data, alias = alias.to(dtype)._data, None
    _fill(self, data, vc=alias._vc if alias is not None else None)
    if requires_grad:
        self.requires_grad_(True)


class _LegacyType(type):
    """The metaclass of ``FloatTensor`` and kin: calling one makes a chainrule Tensor of its
    dtype, and ``isinstance(t, FloatTensor)`` is True for a tensor of that dtype (as in
    PyTorch; these classes are not subclasses of Tensor)."""

    def __call__(cls, *args, device=None):
        if _check_device(device, cls.__name__) is not None:
            raise RuntimeError(f"{cls.__name__}: only CPU tensors; use chainrule.tensor(..., "
                               f"device={str(device)!r})")
        data, alias = legacy_new(args, cls.dtype, cls.__name__, True)
        if alias is not None:
            return alias
        return wrap(data)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and numpy_dtype(obj.dtype) == np.dtype(cls.dtype)

    def __repr__(cls):
        return f"<class 'chainrule.{cls.__name__}'>"


def _legacy(name, dtype):
    doc = (f"``torch.{name}``: ``{name}(data)`` or ``{name}(*sizes)`` makes a {np.dtype(dtype)}"
           f" tensor; ``isinstance(t, {name})`` tests a tensor's dtype.")
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "chainrule"})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
HalfTensor = _legacy("HalfTensor", np.float16)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
BoolTensor = _legacy("BoolTensor", np.bool_)


# --- PyTorch's type promotion (chainrule.promote_types / result_type, and the ops that
# promote as PyTorch does: cat, stack, the bitwise ops) ----------------------------------

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _promote_types(type1, type2):
    """The dtype PyTorch computes ``type1 op type2`` in: the higher category (bool < int <
    float < complex) wins with its own dtype (float32 with int64 is float32, where NumPy
    says float64), a complex taking a float's precision too (complex64 with float64 is
    complex128); within a category, the larger."""
    a, b = np.dtype(numpy_dtype(type1)), np.dtype(numpy_dtype(type2))
    for d in (a, b):
        if d.kind not in _CATEGORY:
            raise TypeError(f"promote_types: {d} is not a numeric or bool dtype")
    return torch_promote(a, b)


def _result_type(tensor1, tensor2):
    """The dtype of an arithmetic result of the two, by PyTorch's rules: dimensioned
    tensors decide, then 0-d tensors, then Python numbers, a later group only when it is
    of a higher category (a Python float then gives the default float dtype, a Python
    complex the default complex dtype)."""
    groups = {0: [], 1: [], 2: []}  # dimensioned tensors, 0-d tensors, Python numbers
    for x in (tensor1, tensor2):
        if isinstance(x, Tensor):
            groups[0 if x.ndim else 1].append(np.dtype(numpy_dtype(x.dtype)))
        else:
            kind = np.asarray(x).dtype.kind
            default = np.dtype(get_default_dtype())
            groups[2].append(default if kind == "f" else
                             np.promote_types(default, np.complex64) if kind == "c" else
                             np.dtype(np.int64) if kind in "iu" else np.dtype(np.bool_))
    dims, zeros, numbers = (_group_dtype(groups[g]) for g in (0, 1, 2))
    return _combine(dims, _combine(zeros, numbers))
