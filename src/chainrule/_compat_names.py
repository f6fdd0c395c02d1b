"""More of PyTorch's top-level names that ported code touches around the math: the
constants (``pi``, ``inf``, ``newaxis``), the types ``dtype`` and ``layout``, tensor
queries (``is_signed``, ``is_same_size``, ``typename``), the modules ``version``, ``cpu``
and ``compiler``, the global switches (``set_default_tensor_type``, ``set_warn_always``,
the autocast state), and the functions PyTorch removed but still names, which raise its
guidance (``lstsq``, ``solve``, ``symeig``, ``eig``, ``matrix_rank``).
"""

from __future__ import annotations

import abc
import math
import sys
import types
import warnings

import numpy as np

from . import _creation
from . import amp as _amp
from ._tensor import Tensor
from ._trace import LOCAL as _TRACE
from .backend import UnsupportedDtype, numpy_dtype

__all__ = ["pi", "e", "inf", "nan", "newaxis", "dtype", "layout", "strided", "typename",
           "is_complex", "is_conj", "is_neg", "is_signed", "is_same_size", "get_device",
           "detach", "detach_", "version", "cpu", "compiler", "set_default_tensor_type",
           "set_flush_denormal", "set_warn_always", "is_warn_always_enabled",
           "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
           "set_autocast_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "get_autocast_cpu_dtype", "set_autocast_cpu_dtype", "get_autocast_gpu_dtype",
           "set_autocast_gpu_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "lstsq", "solve", "symeig", "eig", "matrix_rank"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


class _DtypeMeta(abc.ABCMeta):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (np.dtype, UnsupportedDtype))


class dtype(metaclass=_DtypeMeta):
    """The type of chainrule's dtypes (``isinstance(chainrule.float32, chainrule.dtype)``):
    they are NumPy's dtype objects, and ``chainrule.bfloat16`` a placeholder that NumPy has
    no type for. Not instantiable, as ``torch.dtype``."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("cannot create 'chainrule.dtype' instances")


class layout:
    """A tensor's memory layout (``torch.layout``): chainrule's tensors are dense, so
    ``chainrule.strided`` is the only one (``Tensor.layout``)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"chainrule.{self.name}"

    def __reduce__(self):
        return (getattr, (sys.modules[__package__], self.name))


strided = layout("strided")


def _tensor_arg(name, input, position=1, what="input"):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: argument '{what}' (position {position}) must be Tensor, "
                        f"not {type(input).__name__}")
    return input


def typename(obj, /):
    """The fully qualified name of ``obj``'s type: ``t.type()`` for a tensor
    (``"torch.FloatTensor"``), ``module.qualname`` for anything else."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in {"", "builtins"} else f"{module}.{qualname}"


def is_complex(input):
    """True for a tensor of a complex dtype."""
    return np.dtype(numpy_dtype(_tensor_arg("is_complex", input).dtype)).kind == "c"


def is_conj(input):
    """False: chainrule computes conjugates, never marks them lazily (``Tensor.is_conj``)."""
    return _tensor_arg("is_conj", input).is_conj()


def is_neg(input):
    """False: chainrule computes negations, never marks them lazily."""
    return _tensor_arg("is_neg", input).is_neg()


def is_signed(input):
    """True for a tensor of a signed dtype: signed integers, floats, complex (not uint8 or
    bool)."""
    return _tensor_arg("is_signed", input).is_signed()


def is_same_size(input, other):
    """True when two tensors have the same shape."""
    return tuple(_tensor_arg("is_same_size", input).shape) == \
        tuple(_tensor_arg("is_same_size", other, 2, "other").shape)


def get_device(input):
    """-1 for a CPU tensor, else its GPU's index (``Tensor.get_device``)."""
    return _tensor_arg("get_device", input).get_device()


def detach(input):
    """``input.detach()``: the same values, cut from the graph."""
    return _tensor_arg("detach", input).detach()


def detach_(input):
    """``input.detach_()``: ``input`` itself, cut from the graph."""
    return _tensor_arg("detach_", input).detach_()


# --- modules ---------------------------------------------------------------------------------

def _module(name, doc, **attrs):
    """A module ``chainrule.<name>`` (importable: ``import chainrule.version``)."""
    mod = types.ModuleType(f"{__package__}.{name}", doc)
    mod.__dict__.update(attrs)
    sys.modules.setdefault(mod.__name__, mod)
    return mod


version = _module(
    "version", "``torch.version``: chainrule's version (``__version__``); no CUDA or ROCm "
    "build (``cuda`` and ``hip`` are None).",
    __version__=None, cuda=None, hip=None, rocm=None, xpu=None, debug=False,
    git_version="unknown")  # __version__ is set by chainrule/__init__.py


def _cpu_synchronize(device=None):
    return None


def _cpu_set_device(device):
    return None


cpu = _module(
    "cpu", "``torch.cpu``: the CPU is always available, one device, nothing to synchronize.",
    is_available=lambda: True, device_count=lambda: 1, current_device=lambda: "cpu",
    is_initialized=lambda: True, synchronize=_cpu_synchronize, set_device=_cpu_set_device,
    amp=types.SimpleNamespace(autocast=_amp.autocast, GradScaler=_amp.GradScaler))


def _disable(fn=None, recursive=True, *, reason=None):
    """``torch.compiler.disable``: nothing is compiled here, so the function itself (as a
    decorator, bare or called)."""
    return fn if fn is not None else (lambda f: f)


def _identity(fn):
    return fn


compiler = _module(
    "compiler", "``torch.compiler``: ``compile`` is ``chainrule.compile`` (trace and replay);"
    " ``disable``, ``allow_in_graph`` and ``assume_constant_result`` return the function "
    "(a function called inside a traced one is traced as part of it), and ``is_compiling()`` "
    "is True while ``chainrule.compile`` traces in this thread.",
    disable=_disable, allow_in_graph=_identity,
    assume_constant_result=_identity, is_compiling=lambda: _TRACE.tracer is not None,
    is_dynamo_compiling=lambda: False, is_exporting=lambda: False, reset=lambda: None)


# --- global switches -------------------------------------------------------------------------

DEFAULT_TENSOR_TYPE_DEPRECATED = (
    "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
    "torch.set_default_dtype() and torch.set_default_device() as alternatives.")


def set_default_tensor_type(t, /):
    """PyTorch's deprecated ``set_default_tensor_type``, with its warning:
    ``FloatTensor``/``DoubleTensor`` (or their names, ``"torch.DoubleTensor"``) set the
    default float dtype (:func:`set_default_dtype`); other types raise TypeError."""
    warnings.warn(DEFAULT_TENSOR_TYPE_DEPRECATED, UserWarning, stacklevel=2)
    if isinstance(t, str):
        found = getattr(_creation, t.rpartition(".")[2], None)
        if t.partition(".")[0] not in ("torch", "chainrule", t) or \
                not isinstance(found, _creation._LegacyType):
            raise TypeError(f"set_default_tensor_type: invalid type: {t!r}")
        t = found
    if not isinstance(t, _creation._LegacyType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if np.dtype(t.dtype) not in (np.float32, np.float64):
        raise TypeError("only floating-point types are supported as the default type")
    _creation.set_default_dtype(t.dtype)


def set_flush_denormal(mode):
    """False: NumPy gives no switch to flush denormal floats to zero, so the mode is not
    set (PyTorch returns True where the CPU supports it)."""
    return False


_WARN_ALWAYS = [False]


def set_warn_always(b, /):
    """Record PyTorch's ``warn_always`` flag (chainrule's warnings go through Python's
    ``warnings`` filters either way)."""
    if not isinstance(b, bool):
        raise RuntimeError(f"set_warn_always: setWarnOnlyOnce expects a bool, but got "
                           f"{type(b).__name__}")
    _WARN_ALWAYS[0] = b


def is_warn_always_enabled():
    """The flag :func:`set_warn_always` set (False by default)."""
    return _WARN_ALWAYS[0]


# --- autocast state (chainrule.amp.autocast keeps it; dtypes are never changed) ---------------

_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


def _device_type(device_type, op):
    if not isinstance(device_type, str) or device_type.split(":")[0] not in _DEVICE_TYPES:
        raise RuntimeError(f"{op}: Expected one of {', '.join(_DEVICE_TYPES)} device type at start "
                           f"of device string: {device_type}")
    return device_type.split(":")[0]


def _check_bool(value, op):
    if not isinstance(value, bool):
        raise TypeError(f"{op}: expected a bool, got {type(value).__name__}")


def _check_dtype(value, op):
    if not isinstance(value, dtype):
        raise TypeError(f"{op}: expected a dtype, got {type(value).__name__}")


def _deprecated(old, new):
    warnings.warn(f"torch.{old}() is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (CUDA when not given, as PyTorch's)."""
    return _amp.autocast_state(_device_type(device_type or "cuda",
                                            "is_autocast_enabled"))["enabled"]


def set_autocast_enabled(device_type, enabled=None):
    """``set_autocast_enabled(device_type, enabled)`` (or ``(enabled)`` for CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_bool(enabled, "set_autocast_enabled")
    _amp.autocast_state(_device_type(device_type, "set_autocast_enabled"))["enabled"] = \
        bool(enabled)


def get_autocast_dtype(device_type):
    """The dtype autocast names for ``device_type`` (bfloat16 on the CPU, float16 else)."""
    return _amp.autocast_state(_device_type(device_type, "get_autocast_dtype"))["dtype"]


def set_autocast_dtype(device_type, dtype):
    _check_dtype(dtype, "set_autocast_dtype")
    _amp.autocast_state(_device_type(device_type, "set_autocast_dtype"))["dtype"] = dtype


def is_autocast_cpu_enabled():
    _deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _deprecated("set_autocast_gpu_dtype", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


_AUTOCAST_CACHE = [True]


def is_autocast_cache_enabled():
    return _AUTOCAST_CACHE[0]


def set_autocast_cache_enabled(enabled):
    _check_bool(enabled, "set_autocast_cache_enabled")
    _AUTOCAST_CACHE[0] = enabled


def clear_autocast_cache():
    """Nothing to clear: autocast casts nothing here."""


# --- removed functions: PyTorch's guidance ----------------------------------------------------

_REMOVED_SINCE = "This function was deprecated since version 1.9 and is now removed. "
REMOVED = {
    "lstsq": _REMOVED_SINCE + (
        "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, "
        "the residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\n"
        "X, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\n"
        "X = torch.linalg.lstsq(A, B).solution"),
    "solve": _REMOVED_SINCE + (
        "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
        "has its arguments reversed and does not return the LU factorization.\n\n"
        "To get the LU factorization see `torch.lu`, which can be used with "
        "`torch.lu_solve` or `torch.lu_unpack`.\n"
        "X = torch.solve(B, A).solution should be replaced with:\n"
        "X = torch.linalg.solve(A, B)"),
    "symeig": _REMOVED_SINCE + (
        "The default behavior has changed from using the upper triangular portion of the "
        "matrix by default to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\n"
        "and\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')"),
    "eig": _REMOVED_SINCE + (
        "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
        "real tensors mimicking complex tensors.\n\n"
        "L, _ = torch.eig(A) should be replaced with:\n"
        "L_complex = torch.linalg.eigvals(A)\n\n"
        "and\n\n"
        "L, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)"),
    "matrix_rank": _REMOVED_SINCE.rstrip() + (
        "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
        "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'."),
}


def _removed(name):
    """A function PyTorch removed: RuntimeError with PyTorch's guidance, after the name (as
    every chainrule error starts)."""
    def fn(*args, **kwargs):
        raise RuntimeError(f"{name}: {REMOVED[name]}")

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "Removed from PyTorch (1.9); raises RuntimeError with its guidance."
    return fn


lstsq, solve, symeig, eig, matrix_rank = (_removed(n) for n in (
    "lstsq", "solve", "symeig", "eig", "matrix_rank"))
