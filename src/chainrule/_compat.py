"""PyTorch's top-level helpers that code ported from it calls around the math: type tests,
dtype queries, ``inference_mode``, printing, saving, the random state, and the namespaces
``cuda``, ``backends`` and ``jit`` (``amp`` is its own module).

Each does what PyTorch's does on a CPU machine, or is the identity where PyTorch's only
changes speed (``compile``, ``jit.script``); none changes a value or a gradient.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import pickle
import sys
import threading
from types import SimpleNamespace

import numpy as np

from . import _creation, _dispatch
from . import amp as _amp
from ._creation import _promote_types, _result_type
from ._dispatch import name_errors, torch_can_cast
from ._state import STATE, _GradMode
from ._tensor import PRINT_OPTS, InferenceVersion, Size, Tensor
from .backend import device as _device
from .backend import numpy_dtype

__all__ = ["is_tensor", "is_floating_point", "is_nonzero", "inference_mode",
           "is_inference_mode_enabled", "is_inference", "Size", "finfo", "iinfo", "promote_types",
           "result_type", "can_cast", "broadcast_shapes", "set_printoptions", "get_rng_state",
           "set_rng_state", "save", "load", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "compile", "cuda", "backends", "jit",
           "set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads", "set_default_device", "get_default_device", "autocast",
           "set_float32_matmul_precision", "get_float32_matmul_precision"]

_INFERENCE = threading.local()


def is_tensor(obj):
    """True for a chainrule Tensor (a Parameter too)."""
    return isinstance(obj, Tensor)


@name_errors
def is_floating_point(input):
    """True for a tensor of a floating dtype."""
    return np.dtype(numpy_dtype(input.dtype)).kind == "f"


@name_errors
def is_nonzero(input):
    """``bool(input != 0)`` for a one-element tensor.

    Raises RuntimeError for an empty tensor or one of several elements (PyTorch's text).
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


class inference_mode(_GradMode):
    """``no_grad`` for inference (``torch.inference_mode``): results of ops inside do not
    require grad, :func:`is_inference_mode_enabled` is True, and every tensor made inside
    is an *inference tensor* (``Tensor.is_inference()``; views of normal tensors stay
    normal). Outside inference mode an inference tensor raises RuntimeError (PyTorch's
    messages) when a recorded op saves it for backward, when it is updated in place, and
    when it is asked to require grad; use ``clone()`` to get a normal tensor.
    ``inference_mode(False)`` turns inference mode off (and grad mode on) for its block.
    A context manager and a decorator (``@inference_mode()`` or bare ``@inference_mode``).
    """

    _state = False
    mode = True  # a bare @inference_mode decorates before __init__ runs

    def __init__(self, mode=True):
        self.mode = bool(mode) if not callable(mode) else True

    def __enter__(self):
        self._prev = STATE.enabled
        self._depth = getattr(_INFERENCE, "depth", 0)
        self._prev_inference = STATE.inference
        STATE.enabled = not self.mode
        _INFERENCE.depth = self._depth + 1 if self.mode else 0
        STATE.set_modes(inference=self.mode)

    def __exit__(self, *exc):
        STATE.enabled = self._prev
        _INFERENCE.depth = self._depth
        STATE.set_modes(inference=self._prev_inference)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self.mode):
                return fn(*args, **kwargs)
        return wrapper


def is_inference_mode_enabled():
    """Whether an ``inference_mode()`` block is running in this thread."""
    return getattr(_INFERENCE, "depth", 0) > 0


def is_inference(input):
    """``input.is_inference()``: whether ``input`` is an inference tensor (made in
    ``inference_mode()``). Raises TypeError for anything but a Tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference: argument 'input' must be a Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()


def _mark_inference(op, inputs, datas, attrs, out, result):
    """The dispatcher's AFTER_OP hook in inference mode: a result with a version counter
    of its own (not a view of an input) becomes an inference tensor."""
    if not STATE.inference:
        return
    shared = {id(x._vc) for x in inputs if isinstance(x, Tensor)}
    for r in (result if result.__class__ is tuple else (result,)):
        if isinstance(r, Tensor) and id(r._vc) not in shared \
                and r._vc.__class__ is not InferenceVersion:
            r._vc = InferenceVersion((r._vc[0],))


_dispatch.AFTER_OP.append(_mark_inference)


@name_errors
def finfo(type=None):
    """Machine limits of a float dtype (NumPy's ``finfo``: ``eps``, ``max``, ``min``,
    ``tiny``, ``resolution``, ``bits``); the default float dtype when none is given."""
    return np.finfo(numpy_dtype(_creation.get_default_dtype() if type is None else type))


@name_errors
def iinfo(type):
    """Machine limits of an integer dtype (NumPy's ``iinfo``)."""
    return np.iinfo(numpy_dtype(type))


@name_errors
def promote_types(type1, type2):
    """The dtype PyTorch computes ``type1 op type2`` in: the higher category (bool < int <
    float) wins with its own dtype (float32 with int64 is float32, where NumPy says
    float64); within a category, the larger."""
    return _promote_types(type1, type2)


@name_errors
def result_type(tensor1, tensor2):
    """The dtype of an arithmetic result of the two, by PyTorch's rules: dimensioned
    tensors decide, then 0-d tensors, then Python numbers, a later group only when it is
    of a higher category (a Python float then gives the default float dtype)."""
    return _result_type(tensor1, tensor2)


@name_errors
def can_cast(from_, to):
    """Whether PyTorch's casting rules allow ``from_`` -> ``to`` without changing kind
    downward (complex to real, float to int, or a number to bool, is not allowed; int16 to
    uint8 is)."""
    return torch_can_cast(np.dtype(numpy_dtype(from_)), np.dtype(numpy_dtype(to)))


@name_errors
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to.

    Raises RuntimeError (naming the shapes) when they do not broadcast."""
    try:
        return Size(np.broadcast_shapes(*(tuple(s) if not isinstance(s, int) else (s,)
                                          for s in shapes)))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {list(shapes)} cannot be broadcast "
                           "together") from None


@name_errors
def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """How tensors print, as PyTorch's: ``precision`` decimals (4), ``threshold`` entries
    before summarising (1000), ``edgeitems`` shown at each end when summarised (3),
    ``linewidth`` (80), ``sci_mode`` (None: chosen per tensor; True/False forces it);
    ``profile`` "default", "short" or "full" sets the first four. NumPy's own print options
    are left as they are."""
    if profile is not None:
        preset = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
                  "full": (4, sys.maxsize, 3, 80)}[profile]
        PRINT_OPTS.update(precision=preset[0], threshold=preset[1], edgeitems=preset[2],
                          linewidth=preset[3])
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTS[key] = value
    PRINT_OPTS["sci_mode"] = sci_mode


def get_rng_state():
    """The default generator's state (a dict, for :func:`set_rng_state`)."""
    return _creation.default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from :func:`get_rng_state`."""
    _creation.default_generator.set_state(new_state)


def save(obj, f, pickle_protocol=pickle.DEFAULT_PROTOCOL, **kwargs):
    """Pickle ``obj`` (tensors, state dicts, modules, containers of them) to ``f``, a path
    or a binary file object."""
    with _opened(f, "wb") as fh:
        pickle.dump(obj, fh, protocol=pickle_protocol)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, **kwargs):
    """Read back what :func:`save` wrote (``f`` a path or a binary file object). Only load
    files you trust: this is ``pickle``. ``map_location`` may name the CPU only."""
    if map_location not in (None, "cpu") and str(map_location) != "cpu":
        raise RuntimeError(f"load: map_location={map_location!r} is not available here "
                           "(tensors are loaded on the CPU)")
    with _opened(f, "rb") as fh:
        return (pickle_module or pickle).load(fh)


def _opened(f, mode):
    if hasattr(f, "write" if "w" in mode else "read"):
        return contextlib.nullcontext(f)
    return open(f, mode)


_DETERMINISTIC = [False]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record the flag: chainrule's kernels (NumPy, LAPACK on the CPU) are deterministic
    already."""
    _DETERMINISTIC[0] = bool(mode)


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC[0]


_THREADS = {"intra": None, "interop": None}


def _positive_threads(n, op):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise RuntimeError(f"{op}: expects a positive integer, got {n!r}")
    return int(n)


def set_num_threads(int):  # noqa: A002  (PyTorch's parameter name)
    """Record the number of threads for intra-op work (``get_num_threads`` returns it).
    chainrule's kernels are NumPy's, whose BLAS thread pool is set by its environment
    variables (OMP_NUM_THREADS...), so this changes no result and no speed.

    Raises RuntimeError unless ``int`` is a positive integer (PyTorch's text)."""
    _THREADS["intra"] = _positive_threads(int, "set_num_threads")


def get_num_threads():
    """The number given to :func:`set_num_threads`, else the number of CPUs."""
    return _THREADS["intra"] or os.cpu_count() or 1


def set_num_interop_threads(int):  # noqa: A002
    """Record the number of inter-op threads (``get_num_interop_threads`` returns it); as
    :func:`set_num_threads`, nothing else changes."""
    _THREADS["interop"] = _positive_threads(int, "set_num_interop_threads")


def get_num_interop_threads():
    """The number given to :func:`set_num_interop_threads`, else the number of CPUs."""
    return _THREADS["interop"] or os.cpu_count() or 1


def set_default_device(device):
    """``torch.set_default_device``: only the CPU (or None) is accepted, as chainrule's
    constructors make tensors on the CPU; pass ``device='cuda'`` to a constructor for a
    CuPy tensor.

    Raises RuntimeError for any other device."""
    if device is None or _device(device).type == "cpu":
        return
    raise RuntimeError(f"set_default_device: only 'cpu' can be the default device in "
                       f"chainrule, got {str(device)!r} (make a tensor elsewhere with "
                       "device=... in its constructor, or .to(device))")


def get_default_device():
    """The device constructors make tensors on: the CPU."""
    return _device("cpu")


def compile(model=None, **kwargs):
    """``model`` itself (``torch.compile`` changes speed, not results); usable as
    ``compile(fn)``, ``@compile`` and ``@compile(mode=...)``."""
    if model is None:
        return lambda fn: fn
    return model


def _cuda_available():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver or no device: not available
        return False


def _cuda_count():
    if not _cuda_available():
        return 0
    import cupy
    return cupy.cuda.runtime.getDeviceCount()


def _cupy_or_none():
    return importlib.import_module("cupy") if _cuda_available() else None


def _cuda_synchronize(device=None):
    """Wait for the GPU's queued work (CuPy's current device, or ``device``); nothing to
    wait for without one."""
    cupy = _cupy_or_none()
    if cupy is not None:
        index = device.index if hasattr(device, "index") else device
        cupy.cuda.Device(index if isinstance(index, int) else None).synchronize()


def _cuda_current_device():
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError("Torch not compiled with CUDA enabled (chainrule: no CuPy or no "
                           "GPU; pip install chainrule[gpu])")
    return cupy.cuda.runtime.getDevice()


def _cuda_device_name(device=None):
    cupy = _cupy_or_none()
    if cupy is None:
        raise RuntimeError("Torch not compiled with CUDA enabled (chainrule: no CuPy or no "
                           "GPU; pip install chainrule[gpu])")
    index = device.index if hasattr(device, "index") else device
    name = cupy.cuda.runtime.getDeviceProperties(
        index if isinstance(index, int) else cupy.cuda.runtime.getDevice())["name"]
    return name.decode() if isinstance(name, bytes) else name


def _cuda_memory_allocated(device=None):
    """Bytes held by tensors on the GPU: CuPy's memory pool's used bytes (0 without one)."""
    cupy = _cupy_or_none()
    return 0 if cupy is None else cupy.get_default_memory_pool().used_bytes()


def _cuda_empty_cache():
    """Free the cached, unused GPU blocks (CuPy's memory pool); nothing without a GPU."""
    cupy = _cupy_or_none()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()


autocast = _amp.autocast  # torch.autocast: dtypes are left as they are (chainrule.amp)

_MATMUL_PRECISION = ["highest"]


def set_float32_matmul_precision(precision):
    """Accepted as PyTorch's (``"highest"``, ``"high"``, ``"medium"``); NumPy's float32
    matmul has one precision, so results do not change. ValueError for another value."""
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"set_float32_matmul_precision: expected 'highest', 'high' or "
                         f"'medium', got {precision!r}")
    _MATMUL_PRECISION[0] = precision


def get_float32_matmul_precision():
    """The value last given to :func:`set_float32_matmul_precision` (``"highest"``)."""
    return _MATMUL_PRECISION[0]


cuda = SimpleNamespace(
    is_available=_cuda_available, device_count=_cuda_count,
    manual_seed=lambda seed: None, manual_seed_all=lambda seed: None,
    synchronize=_cuda_synchronize, empty_cache=_cuda_empty_cache,
    current_device=_cuda_current_device, get_device_name=_cuda_device_name,
    memory_allocated=_cuda_memory_allocated,
    amp=SimpleNamespace(autocast=_amp.autocast, GradScaler=_amp.GradScaler),
)
cuda.__doc__ = ("``torch.cuda``'s queries: a CUDA device is available when CuPy is installed "
                "and sees one (``device='cuda'`` tensors then live on CuPy); synchronize, "
                "empty_cache and memory_allocated act on CuPy's device and memory pool. "
                "manual_seed does nothing: chainrule's random numbers come from its one "
                "generator (seeded by chainrule.manual_seed) and are moved to the GPU.")

backends = SimpleNamespace(
    cudnn=SimpleNamespace(deterministic=False, benchmark=False, enabled=True,
                          is_available=lambda: False),
    mps=SimpleNamespace(is_available=lambda: False, is_built=lambda: False),
    cuda=SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False)),
)

jit = SimpleNamespace(script=lambda obj, *args, **kwargs: obj,
                      trace=lambda func, example_inputs=None, *args, **kwargs: func,
                      ignore=lambda fn=None, **kwargs: fn if fn is not None else (lambda f: f),
                      unused=lambda fn: fn, export=lambda fn: fn)
jit.__doc__ = "``torch.jit``'s decorators and tracers as the identity (results unchanged)."
