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
from ._tensor import PRINT_OPTS, InferenceVersion, Size, Tensor, wrap
from .backend import device as _device
from .backend import numpy_dtype

__all__ = ["is_tensor", "is_floating_point", "is_nonzero", "inference_mode",
           "is_inference_mode_enabled", "is_inference", "Size", "finfo", "iinfo", "promote_types",
           "result_type", "can_cast", "broadcast_shapes", "set_printoptions", "get_rng_state",
           "set_rng_state", "save", "load", "serialization", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_deterministic_debug_mode", "get_deterministic_debug_mode", "random",
           "cuda", "backends", "jit", "onnx", "accelerator", "distributed",
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
    """The default generator's state: a uint8 tensor, for :func:`set_rng_state`."""
    return _creation.default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state (and initial seed) from
    :func:`get_rng_state`."""
    _creation.default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """``torch.random.fork_rng``: the default generator's state (and seed) is restored when
    the block ends, whatever it drew or reseeded; ``enabled=False`` does nothing."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


random = SimpleNamespace(
    manual_seed=lambda seed: _creation.manual_seed(seed), seed=lambda: _creation.seed(),
    initial_seed=lambda: _creation.initial_seed(), get_rng_state=get_rng_state,
    set_rng_state=set_rng_state, fork_rng=fork_rng,
    default_generator=_creation.default_generator)
random.__doc__ = "``torch.random``: the default generator's seeding and state, fork_rng."


def save(obj, f, pickle_module=pickle, pickle_protocol=pickle.DEFAULT_PROTOCOL, **kwargs):
    """Pickle ``obj`` (tensors, state dicts, modules, containers of them) to ``f``, a path
    or a binary file object, as ``torch.save``: each tensor is saved with its storage, so
    tensors that share memory (a tensor and its views, a Parameter and the tensor it wraps)
    still share it after :func:`load`; strides, dtype, ``requires_grad`` (a non-leaf loads
    as a leaf) and the Parameter class are kept; the graph and ``.grad`` are not."""
    with _opened(f, "wb") as fh:
        _TensorPickler(fh, protocol=pickle_protocol).dump(obj)


class _StorageRef:
    """The storage (a C-contiguous ndarray owning the memory) behind saved tensors: one
    object per storage, so pickle's memo writes it once and loads it once (shared)."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array


def _storage_of(data):
    """``(storage array, byte offset)`` of a host ndarray: the array at the root of its
    ``.base`` chain when that one is C-contiguous, else a contiguous copy of ``data``."""
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if data.size and root.flags.c_contiguous and root.dtype.kind in "biufcm?" \
            and root.dtype.hasobject is False:
        offset = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        return root, offset
    return None, 0


class _TensorPickler(pickle.Pickler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._storages = {}

    def reducer_override(self, obj):
        if isinstance(obj, _StorageRef):
            a = obj.array
            return _rebuild_storage, (a.tobytes(), a.dtype.str)
        if not isinstance(obj, Tensor):
            return NotImplemented
        from .nn import Parameter
        kind = "Parameter" if type(obj) is Parameter else "Tensor" \
            if type(obj) is Tensor else None
        if kind is None:  # another subclass: its own __reduce_ex__
            return NotImplemented
        data = np.asarray(obj._host())
        root, offset = _storage_of(data)
        if root is None:
            data = np.ascontiguousarray(data)
            root, offset = data.reshape(-1), 0
        ref = self._storages.get(id(root))
        if ref is None:
            ref = self._storages[id(root)] = (_StorageRef(root), root)  # keep root alive
        return _rebuild_tensor, (ref[0], offset, tuple(data.shape), tuple(data.strides),
                                 data.dtype.str, bool(obj._requires_grad), kind)


_LOADING = threading.local()  # the device tensors go to while load() runs (map_location)


def _rebuild_storage(raw, dtype):
    """A storage saved by :func:`save`: a writable 1-D array of ``dtype``."""
    return np.frombuffer(raw, dtype=np.dtype(dtype)).copy()


def _rebuild_tensor(storage, offset, shape, strides, dtype, requires_grad, kind):
    """A tensor saved by :func:`save`: a view of its (shared) storage."""
    dtype = np.dtype(dtype)
    data = np.ndarray(tuple(shape), dtype=dtype, buffer=storage, offset=int(offset),
                      strides=tuple(strides)) if storage.size else \
        np.empty(tuple(shape), dtype=dtype)
    t = wrap(data)
    target = getattr(_LOADING, "device", None)
    if target is not None:
        t = t.to(target)
    if kind == "Parameter":
        from .nn import Parameter
        return Parameter(t, bool(requires_grad))
    if requires_grad:
        t.requires_grad_(True)
    return t


_SAFE_GLOBALS = []


def _allowed_globals():
    allowed = {("collections", "OrderedDict"), ("collections", "Counter"),
               ("builtins", "set"), ("builtins", "complex"), ("builtins", "bytearray"),
               ("_codecs", "encode"), ("numpy", "dtype"),
               (__name__, "_rebuild_tensor"), (__name__, "_rebuild_storage"),
               (Size.__module__, "Size"), (_device.__module__, _device.__name__)}
    return allowed | {(getattr(g, "__module__", None), getattr(g, "__qualname__", None))
                      for g in _SAFE_GLOBALS}


def _weights_only_error(what):
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. \n\t(1) "
        "Re-running `chainrule.load` with `weights_only` set to `False` will likely "
        "succeed, but it can result in arbitrary code execution. Do it only if you got the "
        "file from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` "
        "please check the recommended steps in the following error message.\n\t"
        f"WeightsUnpickler error: Unsupported global: GLOBAL {what} was not an allowed "
        f"global by default. Please use `chainrule.serialization.add_safe_globals([{what}])`"
        f" or the `chainrule.serialization.safe_globals([{what}])` context manager to "
        "allowlist this global if you trust this class/function.")


class _WeightsUnpickler(pickle.Unpickler):
    """``weights_only=True``: only tensors, Parameters, dtypes, devices, Sizes and plain
    containers (dict, list, tuple, set, OrderedDict, numbers, strings, bytes) load."""

    def find_class(self, module, name):
        if (module, name) in _allowed_globals():
            return super().find_class(module, name)
        raise _weights_only_error(f"{module}.{name}" if module != "builtins" else name)


def _map_device(map_location):
    """The device loaded tensors go to (None: the CPU, where they were saved from)."""
    loc = map_location
    if loc is None:
        return None
    if isinstance(loc, dict):
        loc = loc.get("cpu", "cpu")
    elif callable(loc) and not isinstance(loc, (str, _device)):
        probe = wrap(np.empty((0,), dtype=np.uint8))
        out = loc(probe, "cpu")
        loc = None if out is None or out is probe else \
            out.device if isinstance(out, Tensor) else out
        if loc is None:
            return None
    try:
        dev = _device(loc)
    except Exception:  # noqa: BLE001 - an unknown location: the message below
        dev = None
    if dev is not None and dev.type == "cpu":
        return None
    if dev is not None and dev.type == "cuda":
        if _cuda_available():
            return dev
        raise RuntimeError("Attempting to deserialize object on a CUDA device but "
                           "chainrule.cuda.is_available() is False. If you are running on a "
                           "CPU-only machine, please use chainrule.load with "
                           "map_location=chainrule.device('cpu') to map your storages to "
                           "the CPU.")
    raise RuntimeError(f"load: map_location={map_location!r} is not available here "
                       "(tensors are loaded on the CPU, or on 'cuda' with CuPy)")


def load(f, map_location=None, pickle_module=None, *, weights_only=None, **kwargs):
    """Read back what :func:`save` wrote (``f`` a path or a binary file object), as
    ``torch.load``. ``weights_only`` (True by default, as in PyTorch 2.6+; False when a
    ``pickle_module`` is given) loads only tensors, Parameters, dtypes, devices, Sizes and
    plain containers, and raises ``pickle.UnpicklingError`` for any other class (a whole
    module, a namedtuple, a NumPy array): ``weights_only=False`` loads anything, which runs
    the file's code (only for files you trust). ``map_location``: "cpu", a device, a dict
    {"cpu": ...} or a callable ``(storage, location)``."""
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    target = _map_device(map_location)
    prev = getattr(_LOADING, "device", None)
    _LOADING.device = target
    try:
        with _opened(f, "rb") as fh:
            if weights_only:
                return _WeightsUnpickler(fh).load()
            return (pickle_module or pickle).load(fh)
    finally:
        _LOADING.device = prev


def _add_safe_globals(safe_globals):
    """Allow these classes/functions in ``load(weights_only=True)``."""
    _SAFE_GLOBALS.extend(safe_globals)


def _get_safe_globals():
    return list(_SAFE_GLOBALS)


def _clear_safe_globals():
    _SAFE_GLOBALS.clear()


@contextlib.contextmanager
def _safe_globals(safe_globals):
    """Allow these classes/functions in ``load(weights_only=True)`` inside the block."""
    before = list(_SAFE_GLOBALS)
    _SAFE_GLOBALS.extend(safe_globals)
    try:
        yield
    finally:
        _SAFE_GLOBALS[:] = before


serialization = SimpleNamespace(save=save, load=load, add_safe_globals=_add_safe_globals,
                                get_safe_globals=_get_safe_globals,
                                clear_safe_globals=_clear_safe_globals,
                                safe_globals=_safe_globals)
serialization.__doc__ = "``torch.serialization``: save, load and the weights_only allowlist."


def _opened(f, mode):
    if hasattr(f, "write" if "w" in mode else "read"):
        return contextlib.nullcontext(f)
    return open(f, mode)


_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Record the flag: chainrule's kernels (NumPy, LAPACK on the CPU) are deterministic
    already. Raises TypeError unless ``mode`` is a bool, as PyTorch."""
    for name, value, pos in (("mode", mode, " (position 1)"), ("warn_only", warn_only, "")):
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"_set_deterministic_algorithms(): argument '{name}'{pos} must "
                            f"be bool, not {type(value).__name__}")
    _DETERMINISTIC["mode"] = bool(mode)
    _DETERMINISTIC["warn_only"] = bool(mode) and bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """True after ``use_deterministic_algorithms(True, warn_only=True)``."""
    return _DETERMINISTIC["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0 / "default", 1 / "warn", 2 / "error", as PyTorch: the same flags as
    :func:`use_deterministic_algorithms` (1: warn_only)."""
    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("set_deterministic_debug_mode: invalid value of debug_mode, "
                               "expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = names[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, (int, np.integer)):
        raise TypeError("set_deterministic_debug_mode: debug_mode must be str or int, but "
                        f"got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("set_deterministic_debug_mode: invalid value of debug_mode, "
                           "expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _DETERMINISTIC["mode"]:
        return 0
    return 1 if _DETERMINISTIC["warn_only"] else 2


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


def _current_accelerator(check_available=False):
    return _device("cuda") if _cuda_available() else None


accelerator = SimpleNamespace(
    is_available=_cuda_available, device_count=_cuda_count,
    current_accelerator=_current_accelerator, synchronize=lambda device=None: (
        _cuda_synchronize() if _cuda_available() else None))
accelerator.__doc__ = ("``torch.accelerator``: the accelerator is CUDA through CuPy when a "
                       "GPU is seen (as ``chainrule.cuda``), else none.")


def _distributed_available():
    return False


def _distributed_initialized():
    return False


distributed = SimpleNamespace(is_available=_distributed_available,
                              is_initialized=_distributed_initialized)
distributed.__doc__ = ("``torch.distributed``'s queries only: chainrule has no process "
                       "groups (is_available() is False); scale out with Dask instead.")

# ``import torch.backends.cudnn as cudnn`` and ``import torch.distributed as dist`` (at the
# top of many scripts) find these namespaces as modules
for _name, _ns_obj in (("backends", backends), ("backends.cudnn", backends.cudnn),
                       ("backends.mps", backends.mps), ("backends.cuda", backends.cuda),
                       ("accelerator", accelerator), ("distributed", distributed)):
    sys.modules.setdefault(f"{__package__}.{_name}", _ns_obj)

jit = SimpleNamespace(script=lambda obj, *args, **kwargs: obj,
                      trace=lambda func, example_inputs=None, *args, **kwargs: func,
                      ignore=lambda fn=None, **kwargs: fn if fn is not None else (lambda f: f),
                      unused=lambda fn: fn, export=lambda fn: fn)
jit.__doc__ = "``torch.jit``'s decorators and tracers as the identity (results unchanged)."


def _onnx_export(*args, **kwargs):
    raise RuntimeError("chainrule.onnx.export: chainrule has no ONNX exporter; export the "
                       "model from PyTorch instead")


onnx = SimpleNamespace(export=_onnx_export, is_in_onnx_export=lambda: False)
onnx.__doc__ = ("``torch.onnx``: importable (scripts import it at the top), but export "
                "raises: chainrule has no ONNX exporter.")

# ``import torch.cuda``, ``import torch.onnx``, ``from torch.serialization import
# safe_globals`` and ``from torch.jit import script`` find these namespaces as modules too
for _name, _ns_obj in (("cuda", cuda), ("cuda.amp", cuda.amp), ("jit", jit), ("onnx", onnx),
                       ("serialization", serialization), ("random", random)):
    sys.modules.setdefault(f"{__package__}.{_name}", _ns_obj)
