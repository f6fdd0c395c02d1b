"""``torch.nn.parameter``: :class:`Parameter`, :class:`Buffer` and the uninitialized
tensors of lazy modules, :class:`UninitializedParameter` and :class:`UninitializedBuffer`.

An uninitialized tensor has a dtype and a device but no shape yet: ``materialize(shape)``
gives it storage (uninitialized values) and turns it, in place, into a :class:`Parameter`
(or a plain :class:`~chainrule.Tensor` for a buffer), so that whoever holds it (a module,
an optimizer built before the first forward) holds the materialized tensor. Until then, as
PyTorch's, only the dtype and device conversions (``to``, ``float``, ``double``, ...,
``cpu``, ``cuda``), ``size()``, ``copy_`` and the attributes ``dtype``, ``device``,
``requires_grad``, ``grad``, ``data`` work: ``shape`` raises RuntimeError and any other
use (an op, a method) raises ValueError ("Attempted to use an uninitialized parameter in
...").
"""

from __future__ import annotations

import sys

import numpy as np

from .. import _creation
from .._tensor import Size, Tensor, _fill, wrap
from ..backend import numpy_dtype
from ._module import Buffer, Parameter

__all__ = ["Parameter", "UninitializedParameter", "is_lazy", "Buffer", "UninitializedBuffer",
           "UninitializedTensorMixin"]

_RAW = Tensor.__dict__["_data"]  # the slot itself: reads it past the mixin's guard

_USE_ERROR = ("Attempted to use an uninitialized parameter in {}. This error happens when you "
              "are using a `LazyModule` or explicitly manipulating "
              "`torch.nn.parameter.{}` objects. When using LazyModules Call `forward` with a "
              "dummy batch to initialize the parameters before calling torch functions")
_SHAPE_ERROR = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                "usually happens in `load_state_dict` when trying to load an uninitialized "
                "parameter into an initialized one. Call `forward` to initialize the "
                "parameters before accessing their attributes.")


_OWN = ("chainrule.nn._module", "chainrule.nn._hooks", "chainrule.nn.lazy", __name__)


def _internal(frame):
    """Whether ``frame`` is inside one of chainrule's functions (not the module machinery
    of this file, ``Module`` and the lazy modules, nor a ``forward``)."""
    module = frame.f_globals.get("__name__", "")
    return module.startswith("chainrule.") and module not in _OWN and \
        frame.f_code.co_name != "forward"


def _user_function(frame):
    """The chainrule function that user code called and that reached for an uninitialized
    tensor (``<function add>``, ``<function linear>``): the outermost chainrule frame from
    ``frame`` on, named by its op when it is a dispatcher's wrapper."""
    found = frame
    while frame is not None and _internal(frame):
        found, frame = frame, frame.f_back
    code, local, name = found.f_code, found.f_locals, None
    if code.co_name in ("call", "wrapper", "apply"):  # (what it wraps names it)
        name = getattr(local.get("op"), "name", None) or local.get("name") or \
            getattr(local.get("fn"), "__name__", None)
    if not isinstance(name, str):
        name = getattr(code, "co_qualname", code.co_name)
    return f"<function {name}>"


def _use_error(t, frame):
    return ValueError(_USE_ERROR.format(_user_function(frame), type(t).__name__))


def _raw_tensor(t):
    return wrap(_RAW.__get__(t)) if is_lazy(t) else t


def _allowed(name):
    """Tensor's method ``name`` run on the (empty) data; a tensor result is again
    uninitialized (of this class, keeping ``requires_grad``), as PyTorch's."""
    method = getattr(Tensor, name)

    def call(self, *args, **kwargs):
        inner = wrap(_RAW.__get__(self))
        out = method(inner, *(_raw_tensor(a) for a in args), **kwargs)
        if out is inner:  # (in place: copy_)
            _RAW.__set__(self, _RAW.__get__(inner))
            return self
        if isinstance(out, Tensor):
            return self._like(_RAW.__get__(out))
        return out

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``Tensor.{name}`` on the empty data (allowed before materializing)."
    return call


class UninitializedTensorMixin:
    """What :class:`UninitializedParameter` and :class:`UninitializedBuffer` share: the
    guard on every use but the allowed ones, and :meth:`materialize`."""

    __slots__ = ()
    cls_to_become = None
    _uninitialized = True  # (what ``Module._load_from_state_dict`` looks for)

    def __getattribute__(self, name):
        if name == "_data":  # every op reads the data: using it is the error
            raise _use_error(self, sys._getframe(1))
        return object.__getattribute__(self, name)

    def _like(self, raw):
        new = object.__new__(type(self))
        _fill(new, raw, requires_grad=self._requires_grad)
        new._extra = None if self._extra is None else dict(self._extra)
        return new

    def materialize(self, shape, device=None, dtype=None):
        """Give this tensor storage of ``shape`` (uninitialized values), on ``device`` and
        of ``dtype`` (its own when None), and make it, in place, a ``cls_to_become``
        (:class:`Parameter`, or a plain Tensor for a buffer)."""
        raw = _RAW.__get__(self)
        data = _creation.empty(*tuple(shape), dtype=raw.dtype if dtype is None else dtype)
        here = wrap(raw).device
        target = here if device is None else device
        if str(target) != "cpu":
            data = data.to(target)
        _RAW.__set__(self, data._data)
        self._extra = None
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        # an op that reads the shape first is a use (ValueError, as PyTorch's ops raise
        # before any attribute); user code and load_state_dict get PyTorch's RuntimeError
        caller = sys._getframe(1)
        while caller.f_globals.get("__name__") == __name__:  # (the attribute guard)
            caller = caller.f_back
        if _internal(caller):
            raise _use_error(self, caller)
        raise RuntimeError(_SHAPE_ERROR)

    def size(self, dim=None):
        raw = _RAW.__get__(self)
        return Size(raw.shape) if dim is None else raw.shape[dim]

    @property
    def dtype(self):
        return _RAW.__get__(self).dtype

    @property
    def ndim(self):
        return _RAW.__get__(self).ndim

    @property
    def device(self):
        return wrap(_RAW.__get__(self)).device

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def data(self):
        """The (empty) data as a plain tensor; assigning a tensor replaces it (keeping this
        one uninitialized, as ``Module.to`` does with the converted tensor)."""
        return wrap(_RAW.__get__(self))

    @data.setter
    def data(self, value):
        _RAW.__set__(self, _RAW.__get__(value) if isinstance(value, Tensor) else
                     np.asarray(value))

    def is_floating_point(self):
        return np.dtype(numpy_dtype(self.dtype)).kind == "f"

    def is_complex(self):
        return np.dtype(numpy_dtype(self.dtype)).kind == "c"

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = self._like(np.array(_RAW.__get__(self)))
        memo[id(self)] = result
        return result


# the conversions PyTorch allows (its ``_allowed_methods``); ``detach`` as well, which
# chainrule's ``Module.to`` / ``Module.type`` use on the way to ``to``
for _name in ("copy_", "half", "float", "double", "bfloat16", "char", "short", "int", "long",
              "cuda", "cpu", "to", "type", "get_device", "detach"):
    if hasattr(Tensor, _name):
        setattr(UninitializedTensorMixin, _name, _allowed(_name))
del _name


def _empty_raw(device, dtype):
    data = _creation.empty(0, dtype=dtype if dtype is not None else _creation.get_default_dtype())
    if device is not None and str(device) != "cpu":
        data = data.to(device)
    return data._data


def is_lazy(param):
    """Whether ``param`` is an :class:`UninitializedParameter` or an
    :class:`UninitializedBuffer`."""
    return getattr(type(param), "_uninitialized", False)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A :class:`Parameter` whose shape is not known yet (a lazy module's, until its first
    forward): ``requires_grad``, and the ``device`` and ``dtype`` (chainrule's default float
    dtype when None) it materializes with. It counts as a Parameter (a module registers it,
    ``parameters()`` and optimizers take it); see the module's docstring for what can be
    done with it before :meth:`~UninitializedTensorMixin.materialize`."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        p = object.__new__(cls)
        _fill(p, _empty_raw(device, dtype), requires_grad=bool(requires_grad))
        return p

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy module's running statistics):
    ``materialize(shape)`` makes it a plain Tensor. Assigned to a module attribute it
    registers as a buffer (``persistent``: whether it goes into ``state_dict``), as a
    :class:`Buffer` does."""

    __slots__ = ()
    cls_to_become = Tensor
    _is_buffer = True

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        b = object.__new__(cls)
        _fill(b, _empty_raw(device, dtype), requires_grad=bool(requires_grad))
        b._extra = {"persistent": bool(persistent)}
        return b

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    @property
    def persistent(self):
        return (self._extra or {}).get("persistent", True)
