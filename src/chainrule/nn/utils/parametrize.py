"""Parametrisations of module tensors, as ``torch.nn.utils.parametrize``: after
``register_parametrization(module, "weight", p)``, ``module.weight`` is computed as
``p(original)`` on every access, where ``original`` (or ``original0``, ``original1``, ...
when ``p.right_inverse`` returns a tuple) is the parameter stored under
``module.parametrizations.weight``. The module's class is replaced by a subclass
``Parametrized<Class>`` holding a ``weight`` property, as in PyTorch, so the state dict
has PyTorch's keys (``parametrizations.weight.original``, ...)."""

from __future__ import annotations

import copy
import copyreg
from contextlib import contextmanager

from ..._state import no_grad
from ..._tensor import Tensor
from .._module import ModuleDict, ModuleList, Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "ParametrizationList"]

_CACHE = {"enabled": 0, "values": {}}


@contextmanager
def cached():
    """Within this context a parametrised tensor is computed once per access key and
    reused (as PyTorch's ``parametrize.cached``)."""
    _CACHE["enabled"] += 1
    try:
        yield
    finally:
        _CACHE["enabled"] -= 1
        if not _CACHE["enabled"]:
            _CACHE["values"] = {}


class ParametrizationList(ModuleList):
    """The parametrisations of one tensor, applied in order to the stored original(s);
    ``right_inverse(value)`` stores the originals that give ``value``."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:  # taken as the identity, as PyTorch
                        pass
        if isinstance(new, Tensor):
            self.is_tensor = True
            self.ntensors = 1
            with no_grad():
                if new is not original:
                    original.copy_(new)
            if isinstance(original, Parameter):
                self.register_parameter("original", original)
            else:
                self.register_buffer("original", original)
        else:
            self.is_tensor = False
            self.ntensors = len(new)
            for i, orig in enumerate(new):
                t = orig.detach().clone()
                if isinstance(original, Parameter):
                    self.register_parameter(f"original{i}",
                                            Parameter(t, requires_grad=original.requires_grad))
                else:
                    self.register_buffer(f"original{i}", t)

    def right_inverse(self, value):
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    value = m.right_inverse(value)
            if self.is_tensor:
                self.original.copy_(value)
            else:
                for i, v in enumerate(value):
                    getattr(self, f"original{i}").copy_(v)

    def forward(self):
        mods = list(self)
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has a parametrisation (on ``tensor_name`` when given)."""
    params = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(params, ModuleDict):
        return False
    return len(params) > 0 if tensor_name is None else tensor_name in params


def _default_deepcopy(self, memo):
    # the standard deepcopy (the __getstate__ below refuses pickling, not copying)
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _refuse_pickling(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module):
    cls = module.__class__
    namespace = {"__module__": cls.__module__, "_parametrized_base": cls,
                 "__getstate__": _refuse_pickling}  # PyTorch's: state_dict() only
    if not hasattr(cls, "__deepcopy__"):  # deepcopy would call __getstate__
        namespace["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module, tensor_name):
    def get(self):
        plist = self.parametrizations[tensor_name]
        if _CACHE["enabled"]:
            key = (id(self), tensor_name)
            if key not in _CACHE["values"]:
                _CACHE["values"][key] = plist()
            return _CACHE["values"][key]
        return plist()

    def set_(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get, set_))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` be ``parametrization(original)``, as
    ``torch.nn.utils.parametrize.register_parametrization``; a second call on the same
    name appends to its list. ``parametrization`` is a Module whose ``forward`` maps the
    original(s) to the tensor and whose optional ``right_inverse`` maps a tensor back
    (returning a tuple stores several originals). Returns ``module``.

    Raises ValueError when ``module`` has no parameter or buffer ``tensor_name``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters[tensor_name]
    elif tensor_name in module._buffers:
        original = module._buffers[tensor_name]
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    _inject_property(module, tensor_name)
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo :func:`register_parametrization` on ``tensor_name``: it becomes a parameter
    again holding its current parametrised value (``leave_parametrized``) or the
    original. Returns ``module``. Raises ValueError when it is not parametrised, or when
    ``leave_parametrized=False`` with several originals."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name).detach().clone()
        requires_grad = next(iter(plist.parameters()), value).requires_grad
        new = Parameter(value, requires_grad=requires_grad)
    else:
        if not plist.is_tensor:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        new = plist.original
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(new, Parameter):
        module.register_parameter(tensor_name, new)
    else:
        module.register_buffer(tensor_name, new)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__._parametrized_base
    return module
