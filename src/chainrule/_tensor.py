"""The Tensor: an ndarray plus what autograd needs (requires_grad, grad, grad_fn).

Op methods (``x.exp()``, ``x @ y``) are attached by :mod:`chainrule._methods` from one
table, so this file holds only the state and the PyTorch-named properties.
"""

from __future__ import annotations

import numpy as np

from ._state import SLOW, STATE
from .backend import backend_of, device, dtype_kind

_ndarray, _generic, _asarray = np.ndarray, np.generic, np.asarray
# set_printoptions(...): PyTorch's defaults; they are chainrule's own (NumPy's print options
# are the user's and stay untouched)
PRINT_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
              "sci_mode": None}

_FLOAT_KINDS = "f"

# The float dtype that constructors give Python floats and that float functions of integer
# tensors return (chainrule.set_default_dtype): one slot, read by the creation layer and
# the dispatcher
DEFAULT_FLOAT = [np.dtype(np.float64)]


def is_float_dtype(dtype):
    """True for a real floating dtype of any backend (NumPy's, or an Array API library's
    such as ``array_api_strict.float32``)."""
    return dtype_kind(dtype) in _FLOAT_KINDS


INFERENCE_SAVED = (
    "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
    "inference mode in computation tracked by autograd. To work around this, you can make a "
    "clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` instead "
    "of `torch.inference_mode()`.")
INFERENCE_INPLACE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")


class InferenceUse(RuntimeError):
    """An inference tensor's version read outside inference mode (an in-place update, or
    a save for backward, which the dispatcher re-raises with PyTorch's message)."""


class InferenceVersion(list):
    """The version counter of an inference tensor (one made in ``inference_mode()``), and
    what marks it as one: views and ``detach()`` share it, so they are inference tensors too,
    as in PyTorch. Inside inference mode it counts as any other; outside, reading it raises
    :class:`InferenceUse` (PyTorch's message for an in-place update): only an in-place
    update or saving for backward reads it, so normal tensors pay nothing."""

    __slots__ = ()

    def __getitem__(self, i):
        if STATE.inference:
            return list.__getitem__(self, i)
        raise InferenceUse(INFERENCE_INPLACE)


def _fill(t, data, grad_fn=None, output_nr=0, vc=None, requires_grad=False):
    """Set every slot of a Tensor: the one place that knows them all (the dispatcher's
    ``_record`` repeats it inline, as it is the hot path)."""
    t._data = data
    t._requires_grad = requires_grad or grad_fn is not None
    t._grad_fn = grad_fn
    t._grad = None
    t._vc = [0] if vc is None else vc
    t._output_nr = output_nr
    t._acc = None
    t._extra = None
    return t


class _ViewHooks:
    """Filled by the dispatcher (a higher layer): bring a view's history up to date, and
    make a contiguous copy."""

    refresh = staticmethod(lambda t: None)
    contiguous = None


view_hooks = _ViewHooks()
_CPU = device("cpu")


def wrap(data, requires_grad=False):
    """Wrap an array (no copy) in a new Tensor with no history. A NumPy scalar (what NumPy
    returns for a 0-d result) becomes a 0-d array, so a tensor's data is always an array."""
    if data.__class__ is not _ndarray and isinstance(data, _generic):
        data = _asarray(data)
    t = _fill(object.__new__(Tensor), data, requires_grad=requires_grad)
    if STATE.flags & SLOW and STATE.inference:  # made in inference_mode(): an inference tensor
        t._vc = InferenceVersion((0,))
    return t


def _copy_data(d):
    """An independent copy of a tensor's data on its own device (a lazy Dask array, which
    nothing writes into, is shared)."""
    if d.__class__ is np.ndarray or isinstance(d, np.generic):
        return np.array(d, copy=True)
    b = backend_of(d)
    return d if b.lazy else b.xp.asarray(d, copy=True)


def _rebuild(data, requires_grad):
    """Unpickle a Tensor (see ``Tensor.__reduce_ex__``): a leaf."""
    return wrap(data, requires_grad=requires_grad)


def check_grad_dtype(dtype, what="tensor"):
    if not is_float_dtype(dtype):
        raise RuntimeError(
            f"only tensors of floating point dtype can require gradients; this {what} has "
            f"dtype {dtype}. Convert it first, e.g. x.double() or x.float()."
        )


class memory_format:
    """PyTorch's memory formats (``chainrule.preserve_format``, ``contiguous_format``,
    ``channels_last``, ``channels_last_3d``), accepted where PyTorch takes
    ``memory_format=``. Values and gradients do not depend on the layout:
    ``contiguous_format`` gives a row-major result; the channels-last formats are accepted
    and give the same values in row-major layout."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"chainrule.{self.name}"


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def check_memory_format(value, where):
    """TypeError naming ``where`` unless ``value`` is a memory format."""
    if not isinstance(value, memory_format):
        raise TypeError(f"{where}: memory_format must be chainrule.preserve_format, "
                        f"contiguous_format or channels_last, got {value!r}")


class Size(tuple):
    """A shape, as ``torch.Size`` (what ``Tensor.shape`` and ``Tensor.size()`` return): a
    tuple of ints with :meth:`numel`."""

    __slots__ = ()

    def numel(self):
        """The product of the sizes."""
        n = 1
        for k in self:
            n *= k
        return n

    def __getitem__(self, index):
        out = tuple.__getitem__(self, index)
        return Size(out) if isinstance(index, slice) else out

    def __repr__(self):
        return f"chainrule.Size({list(self)})"


class _Formatter:
    """PyTorch's ``torch._tensor_str._Formatter`` for a host array: one width for every
    entry; floats in ``precision`` decimals, ``1.`` when every finite entry is an integer,
    scientific when the finite nonzero magnitudes span more than 1000x, exceed 1e8, or go
    below 1e-4 (``sci_mode`` forces it either way)."""

    def __init__(self, data):
        self.floating = data.dtype.kind == "f"
        self.int_mode, self.sci_mode, self.max_width = True, False, 1
        flat = data.reshape(-1)
        p = PRINT_OPTS["precision"]
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if not vals.size:
            return
        mags = np.abs(vals.astype(np.float64))
        lo, hi = mags.min(), mags.max()
        values = vals.tolist()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) \
            if PRINT_OPTS["sci_mode"] is None else PRINT_OPTS["sci_mode"]
        if self.sci_mode:
            texts = (f"{v:.{p}e}" for v in values)
        elif self.int_mode:
            texts = (f"{v:.0f}." for v in values)
        else:
            texts = (f"{v:.{p}f}" for v in values)
        self.max_width = max(len(t) for t in texts)

    def format(self, value):
        p = PRINT_OPTS["precision"]
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}" + ("" if np.isinf(value) or np.isnan(value) else ".")
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(data):
    """PyTorch's ``get_summarized_data``: the entries shown when a tensor is summarised."""
    e = PRINT_OPTS["edgeitems"]
    if data.ndim == 0:
        return data
    if data.ndim == 1:
        return np.concatenate((data[:e], data[-e:])) if data.shape[0] > 2 * e else data
    if not e:
        return np.empty((0,) * data.ndim, dtype=data.dtype)
    rows = list(range(e)) + list(range(len(data) - e, len(data))) \
        if data.shape[0] > 2 * e else range(data.shape[0])
    return np.stack([_summarized(data[i]) for i in rows])


def _tensor_body(data, indent, summarize, f1, f2=None):
    """PyTorch's ``_tensor_str_with_formatter`` (``f2``: the imaginary parts' formatter)."""
    e = PRINT_OPTS["edgeitems"]

    def one(v):
        if f2 is None:
            return f1.format(v)
        imag = (f2.format(v.imag) + "j").lstrip()
        return f1.format(v.real) + (imag if imag[0] in "+-" else "+" + imag)

    if data.ndim == 0:
        return one(data.item())
    if data.ndim == 1:
        width = f1.max_width + 2 + (f2.max_width + 1 if f2 is not None else 0)
        per_line = max(1, int((PRINT_OPTS["linewidth"] - indent) // width))
        if summarize and not e:
            items = ["..."]
        elif summarize and data.shape[0] > 2 * e:
            items = [one(v) for v in data[:e].tolist()] + [" ..."] + \
                [one(v) for v in data[-e:].tolist()]
        else:
            items = [one(v) for v in data.tolist()]
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = data.shape[0]
    if summarize and n > 2 * e:
        parts = [_tensor_body(data[i], indent + 1, summarize, f1, f2) for i in range(e)] + \
            ["..."] + [_tensor_body(data[i], indent + 1, summarize, f1, f2)
                       for i in range(n - e, n)]
    else:
        parts = [_tensor_body(data[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _tensor_str(data, indent):
    """PyTorch's ``_tensor_str`` for a host array (float16 printed through float32)."""
    if data.size == 0:
        return "[]"
    summarize = data.size > PRINT_OPTS["threshold"]
    if data.dtype == np.float16:
        data = data.astype(np.float32)
    shown = _summarized(data) if summarize else data
    if data.dtype.kind == "c":
        return _tensor_body(data, indent, summarize, _Formatter(shown.real),
                            _Formatter(shown.imag))
    return _tensor_body(data, indent, summarize, _Formatter(shown))


def _add_suffixes(text, suffixes, indent):
    """PyTorch's ``_add_suffixes``: ``, suffix`` each, on a new line when the line would
    pass ``linewidth``."""
    out = [text]
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > PRINT_OPTS["linewidth"]:
            out.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last += len(suffix) + 2
    out.append(")")
    return "".join(out)


class Tensor:
    """An n-dimensional array that can record the operations applied to it.

    Parameters
    ----------
    data : array_like
        Copied into a new ndarray (NumPy's dtype rules: a Python float or a list of floats
        gives float64, ints give int64).
    dtype : numpy dtype, optional
    requires_grad : bool
        Record operations on this tensor so that ``backward`` computes its ``.grad``.
        Only float32 and float64 tensors can require grad (RuntimeError otherwise).

    Notes
    -----
    Attributes follow PyTorch: ``shape``, ``dtype``, ``ndim``, ``requires_grad``, ``grad``,
    ``grad_fn`` (the graph node that made it, ``None`` for a leaf), ``is_leaf``.
    """

    __slots__ = (
        "_data", "_requires_grad", "_grad_fn", "_grad", "_vc", "_output_nr", "_acc",
        "_extra", "__weakref__",
    )
    # ndarray * Tensor must defer to Tensor.__rmul__ rather than loop over elements.
    __array_ufunc__ = None

    def __init__(self, data, dtype=None, requires_grad=False):
        if isinstance(data, Tensor):
            data = data._data
        _fill(self, np.array(data, dtype=dtype))
        if requires_grad:
            self.requires_grad_(True)

    # --- array properties ------------------------------------------------------------
    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        return Size(self._data.shape) if dim is None else self._data.shape[dim]

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    @property
    def data(self):
        """A tensor sharing this one's storage, detached from the graph."""
        return wrap(self._data)

    @data.setter
    def data(self, value):
        self._data = value._data if isinstance(value, Tensor) else np.asarray(value)

    @property
    def device(self):
        """Where the data lives, a :class:`chainrule.device` ("cpu" for NumPy and Dask,
        "cuda:0" for CuPy). Compares equal to its string form."""
        d = self._data
        if d.__class__ is np.ndarray:
            return _CPU
        return backend_of(d).device(d)

    @property
    def backend(self):
        """The name of the array library holding the data: "numpy", "dask", "cupy", or an
        Array API library's name."""
        return backend_of(self._data).name

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    # PyTorch's other device kinds and layouts, which chainrule does not have
    is_xpu = is_mps = is_meta = is_sparse = is_quantized = is_mkldnn = False

    def pin_memory(self, device=None):
        """``self``: host memory needs no pinning here (CuPy copies from it as it is)."""
        return self

    def is_pinned(self, device=None):
        return False

    # --- autograd state --------------------------------------------------------------
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if value.__class__ is not bool:
            raise RuntimeError("requires_grad must be a bool")  # PyTorch's setter message
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place on a leaf; returns self.

        Raises RuntimeError for a non-leaf (its requires_grad follows from its inputs), for
        a non-float dtype, and for an inference tensor asked to require grad outside
        inference mode (PyTorch's rule); TypeError for a ``requires_grad`` that is not a
        bool (1, a 0-d tensor, ...), as PyTorch.
        """
        if requires_grad.__class__ is not bool:
            kind = type(requires_grad)
            kind = kind.__name__ if kind.__module__ in ("builtins", "chainrule._tensor") else \
                f"{kind.__module__.split('.')[0]}.{kind.__name__}"
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {kind}")
        if requires_grad and self._vc.__class__ is InferenceVersion and not STATE.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables; use "
                    "x.detach() to get a tensor that does not require grad"
                )
            return self
        if requires_grad:
            check_grad_dtype(self._data.dtype)
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        if self._extra is not None:
            view_hooks.refresh(self)  # a view whose base was changed in place
        return self._grad_fn

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _base(self):
        """The tensor this one is a view of (its root base), or None (PyTorch's ``_base``)."""
        return self._extra.get("view_of") if self._extra else None

    def _is_view(self):
        return self._base is not None

    def is_contiguous(self, memory_format=contiguous_format):
        """True when the entries are laid out in row-major (C) order without gaps (the
        only layout chainrule makes: False for the channels-last formats, except where
        the two layouts coincide)."""
        check_memory_format(memory_format, "is_contiguous")
        c = getattr(self._data, "flags", None) is None or self._data.flags.c_contiguous
        if memory_format is channels_last or memory_format is channels_last_3d:
            return bool(c and self.ndim in (4, 5) and self.shape[1] == 1)
        return bool(c)

    def contiguous(self, memory_format=contiguous_format):
        """``self`` when it is contiguous, else a row-major copy that keeps the history
        (recorded as ``CloneBackward0``, as in PyTorch). ``memory_format`` is accepted
        (see :class:`memory_format`)."""
        check_memory_format(memory_format, "contiguous")
        if self.is_contiguous():
            return self
        return view_hooks.contiguous(self)

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__module__}.{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size")
            if value.dtype != self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{value.dtype}' to a tensor "
                    f"with dtype '{self.dtype}'. The gradient must match the tensor's dtype")
        self._grad = value

    @property
    def output_nr(self):
        return self._output_nr

    @property
    def _version(self):
        """The version counter (bumped by each in-place update). Raises RuntimeError for an
        inference tensor, which has none (PyTorch's message)."""
        if self._vc.__class__ is InferenceVersion:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._vc[0]

    def is_inference(self):
        """Whether this tensor was made in ``inference_mode()`` (or is a view or detach()
        of one): it cannot be saved for backward, nor updated in place outside inference
        mode, nor made to require grad there (PyTorch's inference tensors)."""
        return self._vc.__class__ is InferenceVersion

    def detach(self):
        """A new tensor sharing storage (and version counter) but with no history."""
        t = wrap(self._data)
        t._vc = self._vc
        return t

    def detach_(self):
        if self._extra and self._extra.get("view_of") is not None:
            raise RuntimeError("detach_() is not allowed on a view; use detach()")
        self._grad_fn = None
        self._requires_grad = False
        return self

    # --- copies and pickling ----------------------------------------------------------
    def __copy__(self):
        """``copy.copy``: a new leaf sharing this tensor's storage (as PyTorch), with its
        own version counter, ``.grad`` slot and gradient node; no history."""
        t = wrap(self._data, requires_grad=self._requires_grad)
        t._grad = self._grad
        return t

    def __deepcopy__(self, memo):
        """``copy.deepcopy`` of a leaf: an independent leaf with copied data and ``.grad``.
        Raises RuntimeError for a non-leaf, as PyTorch does (its graph cannot be copied)."""
        if self._grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment. Call .detach() (or .clone().detach()) "
                f"first; this tensor (shape {tuple(self.shape)}) was made by "
                f"{self._grad_fn.name()}.")
        if id(self) in memo:
            return memo[id(self)]
        t = wrap(_copy_data(self._data), requires_grad=self._requires_grad)
        memo[id(self)] = t
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        return t

    def __reduce_ex__(self, protocol):
        # Data, dtype and requires_grad; never the graph, hooks or .grad (as PyTorch). The
        # data as a host array (copied from a GPU): chainrule.load gives CPU tensors.
        return (_rebuild, (np.array(self._host()), bool(self._requires_grad)))

    def _extra_set(self, key, value):
        if self._extra is None:
            self._extra = {}
        self._extra[key] = value

    # --- conversions -----------------------------------------------------------------
    def numpy(self, *, force=False):
        """The data as an ndarray: shared memory for NumPy data, an explicit host copy
        otherwise (Dask computes, CuPy copies from the GPU). Raises for a tensor that
        requires grad while grad mode is on, as PyTorch does: call ``detach().numpy()`` (or
        pass ``force=True``); under ``no_grad`` (a custom Function's forward) it is allowed."""
        if self._requires_grad and not force and STATE.flags & 1:
            raise RuntimeError(
                "can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()"
                " (inside a custom Function's backward that gives up second derivatives: "
                "write backward with chainrule ops, or mark it @once_differentiable)"
            )
        return self._host()

    def __array__(self, dtype=None, copy=None):
        # NumPy 2 passes copy=True for np.array(t) and trusts the result to be a copy.
        if copy:
            return np.array(self._data, dtype=dtype, copy=True)
        a = np.asarray(self._data)
        return a if dtype is None else a.astype(dtype, copy=False)

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"a tensor with {self._data.size} elements cannot be converted to a Python scalar"
            )
        return self._host().item()

    def tolist(self):
        return self._host().tolist()

    def _host(self):
        """The data as an ndarray (an explicit copy from a GPU, a compute on Dask)."""
        d = self._data
        return d if d.__class__ is np.ndarray else np.asarray(backend_of(d).to_numpy(d))

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"boolean value of a tensor with {self._data.size} values is ambiguous"
            )
        return bool(self.item())

    def __index__(self):
        if dtype_kind(self._data.dtype) not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    def __repr__(self):
        if self._data.__class__ is not np.ndarray and not isinstance(self._data, np.generic):
            b = backend_of(self._data)
            fn = (f", grad_fn=<{self._grad_fn.name()}>" if self._grad_fn is not None else
                  ", requires_grad=True" if self._requires_grad else "")
            return (f"tensor(<{b.name} array of shape {tuple(self.shape)}, dtype "
                    f"{self.dtype}>, device='{self.device}'{fn})")
        data = np.asarray(self._data)
        prefix = "tensor("
        default = np.dtype(DEFAULT_FLOAT[0])
        extras = []
        if data.size == 0:  # no entries to tell the dtype by: shown unless the default
            if data.ndim != 1:
                extras.append(f"size={tuple(data.shape)}")
            if data.dtype != default:
                extras.append(f"dtype={data.dtype}")
        else:
            if not PRINT_OPTS["edgeitems"]:
                extras.append(f"size={tuple(data.shape)}")
            if data.dtype not in (default, np.promote_types(default, np.complex64),
                                  np.int64, np.bool_):
                extras.append(f"dtype={data.dtype}")
        if self._grad_fn is not None:
            extras.append(f"grad_fn=<{self._grad_fn.name()}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return prefix + _add_suffixes(_tensor_str(data, len(prefix)), extras, len(prefix))

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)
