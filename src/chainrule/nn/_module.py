"""``Parameter``, ``Module`` and the containers (``Sequential``, ``ModuleList``,
``ModuleDict``), as in ``torch.nn``."""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from .._state import no_grad
from .._tensor import Tensor, _copy_data, _fill, check_grad_dtype, wrap
from ..backend import dtype_kind, numpy_dtype
from ._hooks import add_hook, call_with_hooks

__all__ = ["Parameter", "Buffer", "Module", "Sequential", "ModuleList", "ModuleDict",
           "ParameterList", "ParameterDict"]

_HOOK_TABLES = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks",
                "_backward_hooks")


class Parameter(Tensor):
    """A Tensor that is a module's parameter: assigning one to a :class:`Module` attribute
    registers it (``parameters()``, ``state_dict()``). A leaf with ``requires_grad=True``
    by default; shares ``data``'s storage.

    Parameters
    ----------
    data : Tensor or array_like, optional
        The values (an empty float tensor when omitted).
    requires_grad : bool

    Raises
    ------
    RuntimeError
        ``requires_grad=True`` with a non-float dtype.
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            arr = np.empty((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            arr = data._data
        else:
            arr = np.asarray(data)
        if requires_grad:
            check_grad_dtype(arr.dtype, "parameter")
        p = object.__new__(cls)
        _fill(p, arr, requires_grad=bool(requires_grad))
        if isinstance(data, Tensor):
            p._vc = data._vc
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        # PyTorch's Parameter copies data and requires_grad, not .grad (a plain tensor's
        # deepcopy keeps its .grad)
        p = Parameter(wrap(_copy_data(self._data)), self._requires_grad)  # (on its device)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, protocol):
        return (Parameter, (np.array(self._host()), bool(self._requires_grad)))  # (host data)


class Buffer(Tensor):
    """A Tensor that, assigned to a :class:`Module` attribute, registers as a buffer
    (``persistent=False``: left out of ``state_dict``)."""

    __slots__ = ("persistent",)

    def __new__(cls, data, *, persistent=True):
        arr = data._data if isinstance(data, Tensor) else np.asarray(data)
        b = object.__new__(cls)
        _fill(b, arr)
        b.persistent = persistent
        return b

    def __init__(self, data, *, persistent=True):
        pass


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class of layers and models, as ``torch.nn.Module``.

    Subclasses call ``super().__init__()`` first, then assign :class:`Parameter`\\ s,
    sub-modules and buffers (``register_buffer``) as attributes; they are registered in
    assignment order and show in ``parameters()``, ``named_modules()``, ``state_dict()``
    and the ``repr``. Calling the module runs ``forward``.
    """

    training: bool

    def __init_subclass__(cls, **kwargs):
        # chainrule's own layers take PyTorch's factory keyword ``device=``: their
        # parameters and buffers are made, then moved there (a user's subclass is left as
        # written, as PyTorch leaves it)
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or not cls.__module__.startswith("chainrule.") or \
                "device" not in inspect.signature(init).parameters:
            return
        signature = inspect.signature(init)

        @functools.wraps(init)
        def __init__(self, *args, **kw):
            init(self, *args, **kw)
            device = signature.bind(self, *args, **kw).arguments.get("device")
            if device is not None and str(device) != "cpu":
                self.to(device)

        cls.__init__ = __init__

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        for table in _HOOK_TABLES:
            object.__setattr__(self, table, OrderedDict())

    # --- registration ---------------------------------------------------------------
    def _check_init(self, what):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            self._check_init("parameters")
            self._remove_from(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter "
                                f"'{name}' (torch.nn.Parameter or None expected)")
            if value is not None and not isinstance(value, Parameter):
                raise TypeError(f"cannot assign 'Tensor' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            params[name] = value
            return
        if isinstance(value, Module):
            self._check_init("module")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers)
            self._modules[name] = value
            return
        modules = self.__dict__.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            modules[name] = value
            return
        if isinstance(value, Buffer):
            self._check_init("buffers")
            self._remove_from(name, self.__dict__, self._parameters, self._modules)
            self.register_buffer(name, value, persistent=value.persistent)
            return
        buffers = self.__dict__.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *dicts):
        for d in dicts:
            d.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, ()):
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def register_parameter(self, name, param):
        """Register ``param`` (a :class:`Parameter` or None) under ``name``.

        Raises KeyError for an empty, dotted or taken name, TypeError for a non-Parameter."""
        self._check_init("parameters")
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (torch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor (or None) that is state but not a parameter (running
        statistics); ``persistent=False`` leaves it out of ``state_dict``.

        Raises KeyError for a bad or taken name, TypeError for a non-Tensor."""
        self._check_init("buffers")
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = wrap(tensor._data)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register a child ``module`` (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name, what):
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f"{what} name can't contain \".\" or be empty, got {name!r}")
        taken = (name in self.__dict__ or (what != "parameter" and name in self._parameters)
                 or (what != "buffer" and name in self._buffers)
                 or (what != "module" and name in self._modules))
        if taken:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target):
        """The sub-module at the dotted path ``target`` ("" is ``self``)."""
        mod = self
        if target == "":
            return mod
        for item in target.split("."):
            if item not in mod._modules:
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = mod._modules[item]
        return mod

    def get_parameter(self, target):
        """The parameter at the dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return mod._parameters[name]

    def get_buffer(self, target):
        """The buffer at the dotted path ``target``. Raises AttributeError for a path that
        does not lead to a buffer."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at the dotted path ``target`` (its parent must exist). Raises
        AttributeError for a missing parent, or (``strict``) a name not yet a submodule;
        ValueError for an empty ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        setattr(parent, name, module)

    # --- traversal --------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module ("") and every descendant, depth first;
        a module reachable twice is listed once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name,
                                       remove_duplicate)

    def modules(self):
        """Every module of the tree, this one first."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """``(name, module)`` of the direct children."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """The direct child modules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, t in getattr(mod, store).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield mod_prefix + ("." if mod_prefix else "") + name, t

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, Parameter)`` in registration order, depth first; a shared
        parameter is listed once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        """The parameters (a generator; pass it to an optimizer)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, buffer)``, as :meth:`named_parameters`."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers (running statistics and other non-parameter state)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # --- modes, gradients, dtypes ----------------------------------------------------
    def train(self, mode=True):
        """Set training mode on this module and its descendants; returns self.

        Raises ValueError for a non-bool ``mode``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        """``train(False)``: dropout off, batch norm on its running statistics."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` of every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Clear the parameters' gradients: None (default) or zeros."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach().new_zeros(tuple(p.grad.shape))

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant, then on self (children first);
        returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert):
        for m in self.modules():
            for name, p in m._parameters.items():
                if p is not None:
                    new = convert(p, True)
                    if new is not p:
                        m._parameters[name] = Parameter(new, p.requires_grad)
            for name, b in m._buffers.items():
                if b is not None:
                    m._buffers[name] = convert(b, False)
        return self

    def to(self, *args, dtype=None, device=None, **kwargs):
        """Cast floating parameters and buffers to ``dtype`` and move them to ``device``
        (``to(dtype)``, ``to(device)``, ``to(device, dtype)``: "cpu", "cuda"/"cuda:i" for
        CuPy, or an Array API library's device). Returns self (parameters are replaced by new
        Parameters of the new dtype, as in PyTorch).

        ``to("meta")``: chainrule has no storage-free tensors, so parameters and buffers
        become NaN-filled tensors (integer buffers zeros) of the same shapes and dtypes. A
        module moved there only to be called through ``func.functional_call`` (torch.func's
        model-ensembling recipe) works as in PyTorch; a direct call gives NaN rather than
        numbers of a model that is not there."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str) or type(a).__name__ == "device":
                device = a
            elif a is not None:
                dtype = a
        if device is not None and str(device) == "meta":
            self._apply_to_tensors(lambda t, is_param: wrap(np.full(
                t.shape, np.nan if dtype_kind(t.dtype) == "f" else 0, dtype=numpy_dtype(t.dtype))))
            device = None

        def convert(t, is_param):
            out = t
            if device is not None and t.device != device:  # a copy (to or from a GPU)
                out = wrap(out.detach().to(device)._data)
            if dtype is not None and dtype_kind(t.dtype) == "f" and \
                    numpy_dtype(dtype) != numpy_dtype(t.dtype):
                out = out.detach().to(dtype)
            return out

        return self._apply_to_tensors(convert)

    def float(self):
        """``to(float32)``."""
        return self.to(np.float32)

    def double(self):
        """``to(float64)``."""
        return self.to(np.float64)

    def half(self):
        """``to(float16)`` (NumPy's half precision)."""
        return self.to(np.float16)

    def compile(self, *args, **kwargs):
        """PyTorch compiles ``__call__`` with ``torch.compile``; chainrule has no compiler,
        so the module runs as it is (same results). Returns None, as PyTorch's."""
        return None

    def share_memory(self):
        """PyTorch moves the tensors to shared memory for multiprocessing; chainrule's
        loaders run in one process, so nothing changes. Returns self."""
        return self

    def cpu(self):
        """Parameters and buffers on the CPU (copied from a GPU; NumPy's stay). Returns
        self."""
        return self.to("cpu")

    def cuda(self, device=None):
        """Parameters and buffers copied onto the GPU (CuPy), ``device`` an index or
        "cuda:i". Returns self."""
        return self.to("cuda" if device is None else
                       f"cuda:{device}" if isinstance(device, int) else device)

    def type(self, dst_type):
        return self.to(dst_type)

    # --- state dict --------------------------------------------------------------------
    def get_extra_state(self):
        """Extra (non-tensor) state to save in :meth:`state_dict` under ``_extra_state``:
        override it together with :meth:`set_extra_state` (PyTorch's protocol); the base
        class saves none. Raises RuntimeError when called without an override."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called. Please file an issue on the chainrule repository.")

    def set_extra_state(self, state):
        """Restore what :meth:`get_extra_state` returned (called by
        :meth:`load_state_dict`). Raises RuntimeError when called without an override."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called. Please file an issue on the chainrule repository.")

    def _has_extra_state(self, method):
        return getattr(type(self), method) is not getattr(Module, method)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters, persistent buffers and extra state (not its
        children's) into ``destination`` under ``prefix``."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state("get_extra_state"):
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """An ordered dict ``{dotted name: tensor}`` of parameters and persistent buffers
        (detached, sharing storage, unless ``keep_vars``) and ``<prefix>_extra_state`` of
        modules that define :meth:`get_extra_state`, built as PyTorch's: each module's
        :meth:`_save_to_state_dict`, then its children's under ``name.`` (a module or
        parameter reachable under two names is saved under both), with the state-dict
        hooks run."""
        if destination is None:
            destination = OrderedDict()
        for hook in self._hooks("_state_dict_pre_hooks").values():
            hook[0](self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook, private in self._hooks("_state_dict_hooks").values():
            result = hook(self, destination, prefix, {})
            if private and result is not None:
                destination = result
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own parameters, persistent buffers and extra state (not its
        children's) from ``state_dict`` (keys under ``prefix``), appending to
        ``missing_keys``, ``unexpected_keys`` and ``error_msgs`` (PyTorch's protocol:
        override it to rename or convert old keys). ``local_metadata
        ["assign_to_params_buffers"]`` assigns the given tensors instead of copying."""
        for hook, with_module in self._hooks("_load_state_dict_pre_hooks").values():
            args = (state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                    error_msgs)
            if with_module:
                hook(self, *args)
            else:
                hook(*args)
        local_state = {k: v for k, v in self._parameters.items() if v is not None}
        local_state.update((k, v) for k, v in self._buffers.items()
                           if v is not None and k not in self._non_persistent_buffers_set)
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor) and (
                    isinstance(value, (np.generic, int, float)) or hasattr(value, "__array__")):
                # arrays, and tensors of other libraries (a PyTorch state dict loads as is)
                value = wrap(np.asarray(value.detach() if hasattr(value, "detach") else value))
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if len(param.shape) == 0 and len(value.shape) == 1:  # PyTorch 0.3 checkpoints
                value = value[0]
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{tuple(value.shape)} from checkpoint, the shape in current "
                                  f"model is {tuple(param.shape)}.")
                continue
            with no_grad():
                if assign:
                    if isinstance(param, Parameter):
                        if isinstance(value, Parameter):
                            value.requires_grad_(param.requires_grad)
                        else:
                            value = Parameter(value, requires_grad=param.requires_grad)
                    setattr(self, name, value)
                else:
                    value = value.detach()  # a copy, on the parameter's device
                    param.copy_(value.clone() if value.device == param.device else
                                value.to(param.device))
        extra_key = prefix + "_extra_state"
        if self._has_extra_state("set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    head = key[len(prefix):].split(".", 1)
                    if len(head) > 1:
                        if head[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif head[0] not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy the values of ``state_dict`` into the parameters and buffers (in place,
        without gradient, cast to their dtypes), or with ``assign=True`` make the given
        tensors the module's (parameters wrapped as Parameters keeping ``requires_grad``).
        Each module loads its own entries with :meth:`_load_from_state_dict`, as PyTorch's,
        then its children theirs. Returns ``(missing_keys, unexpected_keys)`` as a named
        tuple.

        Raises TypeError when ``state_dict`` is not a mapping; RuntimeError, listing them,
        when ``strict`` and keys are missing or unexpected, or (always) when a shape
        differs or an entry is not a tensor (after loading the other entries, as
        PyTorch)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items()
                                 if k.startswith(child_prefix)}, child_prefix)
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook, _ in module._hooks("_load_state_dict_post_hooks").values():
                if hook(module, incompatible) is not None:
                    raise RuntimeError("Hooks registered with "
                                       "``register_load_state_dict_post_hook`` are not "
                                       "expected to return new values, if incompatible_keys "
                                       "need to be modified, it should be done inplace.")

        load(self, state_dict)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # --- state-dict hooks -------------------------------------------------------------
    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before :meth:`state_dict` saves this
        module. Returns a removable handle."""
        return add_hook(self._hooks("_state_dict_pre_hooks"), hook, False, False)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module's
        entries are saved (it may change ``state_dict`` in place). Returns a handle."""
        return add_hook(self._hooks("_state_dict_hooks"), hook, False, False)

    def _register_state_dict_hook(self, hook):
        """PyTorch's private form of :meth:`register_state_dict_post_hook`: a hook returning
        a dict replaces the state dict."""
        return add_hook(self._hooks("_state_dict_hooks"), hook, False, True)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries (it may
        edit ``state_dict``). Returns a removable handle."""
        return add_hook(self._hooks("_load_state_dict_pre_hooks"), hook, False, True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """PyTorch's private form: ``hook(state_dict, prefix, ...)`` (with ``module`` first
        when ``with_module``)."""
        return add_hook(self._hooks("_load_state_dict_pre_hooks"), hook, False, with_module)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after this module and its children are
        loaded (it may edit the missing / unexpected key lists in place; returning a value
        raises RuntimeError). Returns a removable handle."""
        return add_hook(self._hooks("_load_state_dict_post_hooks"), hook, False, None)

    # --- calling and printing -------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d.get("_forward_hooks") or d.get("_forward_pre_hooks") or \
                d.get("_backward_hooks") or d.get("_backward_pre_hooks"):
            return call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # --- hooks (see chainrule.nn._hooks) --------------------------------------------
    def _hooks(self, table):
        if table not in self.__dict__:  # a module unpickled from before hooks existed
            object.__setattr__(self, table, OrderedDict())
        return self.__dict__[table]

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args)`` (``with_kwargs``: ``hook(module, args, kwargs)``) runs
        before ``forward``; returning a value replaces the positional arguments (a tuple,
        or one value); with kwargs it returns ``(args, kwargs)``. Returns a handle whose
        ``remove()`` unregisters it."""
        return add_hook(self._hooks("_forward_pre_hooks"), hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
        output)``) runs after ``forward``; returning a value replaces the output."""
        return add_hook(self._hooks("_forward_hooks"), hook, prepend,
                        (with_kwargs, always_call))

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs
        are known; returning a tuple replaces ``grad_output``."""
        return add_hook(self._hooks("_backward_pre_hooks"), hook, prepend)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the
        module's tensor inputs are computed (``grad_input``: one per positional tensor
        input that requires grad; Nones when none does); returning a tuple replaces
        ``grad_input``."""
        return add_hook(self._hooks("_backward_hooks"), hook, prepend)

    def register_backward_hook(self, hook):
        """PyTorch's deprecated name; here the same as :meth:`register_full_backward_hook`."""
        return self.register_full_backward_hook(hook)

    def extra_repr(self):
        """The text inside this module's parentheses in its ``repr``."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        child_lines = []
        for name, m in self._modules.items():
            child_lines.append("(" + name + "): " + _addindent(repr(m), 2))
        lines = lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra.split("\n")) == 1 and not child_lines:
                main += extra
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


class _IncompatibleKeys(tuple):
    """``(missing_keys, unexpected_keys)`` from ``load_state_dict``."""

    def __new__(cls, missing_keys, unexpected_keys):
        return super().__new__(cls, (missing_keys, unexpected_keys))

    @property
    def missing_keys(self):
        return self[0]

    @property
    def unexpected_keys(self):
        return self[1]

    def __repr__(self):
        if not self[0] and not self[1]:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self[0]}, unexpected_keys={self[1]})"


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: integer positions, ``len``, iteration and
    ``append``."""

    def _index(self, idx):
        n = len(self._modules)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range")
        return idx % n

    def __delitem__(self, idx):
        """Remove the module(s) at ``idx`` (an int or a slice); the later ones are
        renumbered from 0, as PyTorch's."""
        keys = list(self._modules)
        for k in (keys[idx] if isinstance(idx, slice) else [keys[self._index(idx)]]):
            del self._modules[k]
        items = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(items):
            self._modules[str(i)] = m

    def pop(self, idx):
        """Remove and return the module at ``idx`` (the later ones are renumbered)."""
        m = self[idx]
        del self[idx]
        return m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self


class Sequential(_ModuleSequence):
    """Modules applied in order: ``Sequential(m1, m2)(x) == m2(m1(x))``; also
    ``Sequential(OrderedDict(name=module, ...))``. Supports ``len``, iteration, integer
    and slice indexing, ``append``."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (OrderedDict, dict)):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[self._index(idx)]

    def __setitem__(self, idx, module):
        key = list(self._modules)[self._index(idx)]
        self.add_module(key, module)

    def insert(self, index, module):
        """Insert ``module`` before ``index`` (``-len <= index <= len``); returns self.
        Raises IndexError for an index out of range."""
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        items = list(self._modules.items())
        items.insert(index + n if index < 0 else index, (None, module))
        self._modules.clear()
        for i, (key, m) in enumerate(items):
            self.add_module(str(i) if key is None or key.isdigit() else key, m)
        return self

    def extend(self, sequential):
        """Append each module of ``sequential``; returns self."""
        for m in sequential:
            self.append(m)
        return self

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but "
                             f"{type(other)} is given.")
        return self.extend(list(other))

    def __mul__(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return Sequential(*(list(self) * other))

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(_ModuleSequence):
    """A list of modules, registered (their parameters are the list's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(self._index(idx))]

    def __setitem__(self, idx, module):
        self.add_module(str(self._index(idx)), module)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def __repr__(self):
        # PyTorch's compressed form: a run of modules with the same repr is one line,
        # "(i-j): n x Module(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = []
        for start, end, r in runs:
            head = f"({start}): " if start == end else f"({start}-{end}): {end - start + 1} x "
            lines.append(_addindent(head + r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def extend(self, modules):
        """Append each module of ``modules``; returns self."""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before ``index``."""
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(items):
            self.add_module(str(i), m)

    def __iadd__(self, modules):
        return self.extend(modules)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward: iterate over its modules")


class _DictOf(Module):
    """A dict-like container over one of the module's tables (``_store``): the dict
    methods; subclasses say how an item is registered (``__setitem__``)."""

    _store = "_modules"

    def __init__(self, items=None):
        super().__init__()
        if items is not None:
            self.update(items)

    def _table(self):
        return self.__dict__[self._store]

    def __getitem__(self, key):
        return self._table()[key]

    def __delitem__(self, key):
        del self._table()[key]

    def __len__(self):
        return len(self._table())

    def __iter__(self):
        return iter(self._table())

    def __contains__(self, key):
        return key in self._table()

    def keys(self):
        return self._table().keys()

    def values(self):
        return self._table().values()

    def items(self):
        return self._table().items()

    def get(self, key, default=None):
        return self._table().get(key, default)

    def pop(self, key):
        return self._table().pop(key)

    def clear(self):
        self._table().clear()

    def update(self, items):
        """Add the ``(name, value)`` pairs of a mapping or an iterable."""
        pairs = items.items() if hasattr(items, "items") else items
        for k, v in pairs:
            self[k] = v

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward: index it by name")


class ModuleDict(_DictOf):
    """A dict of modules, registered in insertion order."""

    def __init__(self, modules=None):
        super().__init__(modules)

    def __setitem__(self, key, module):
        self.add_module(key, module)



def _as_parameter(value):
    """A tensor as a Parameter (a Parameter as it is); other values as they are."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters, registered under "0", "1", ...: ``len``, indexing, iteration,
    ``append``, ``extend``. Tensors put in become Parameters (as PyTorch's)."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def _key(self, idx):
        n = len(self._parameters)
        if not -n <= idx < n:
            raise IndexError(f"ParameterList: index {idx} is out of range for {n} parameters")
        return str(idx % n)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self)[idx])
        return self._parameters[self._key(idx)]

    def __setitem__(self, idx, value):
        self.register_parameter(self._key(idx), _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        """Add ``value`` at the end; returns self."""
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        """Append each of ``values``; returns self."""
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(f"  ({i}): " + _param_line(p, str(numpy_dtype(p.dtype)))
                         for i, p in enumerate(self))

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ParameterList has no forward: index it or iterate over it")


_TYPENAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
              "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
              "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
              "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}


def _param_line(p, type_name):
    """PyTorch's line for one entry of a ParameterList / ParameterDict repr."""
    if not isinstance(p, Tensor):
        return f"Object of type: {type(p).__name__}"
    kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
    return f"{kind} containing: [{type_name} of size {'x'.join(str(n) for n in p.shape)}]"


class ParameterDict(_DictOf):
    """A dict of parameters, registered under their keys (dict methods: ``keys``,
    ``values``, ``items``, ``update``, ``pop``, ``get``, ``in``). Tensors put in become
    Parameters. As PyTorch's, a plain ``dict`` given to the constructor or ``update`` is
    added in sorted key order (an ``OrderedDict``, a ParameterDict or pairs keep theirs)."""

    _store = "_parameters"

    def __init__(self, parameters=None):
        super().__init__(parameters)

    def update(self, items):
        """Add the ``(name, value)`` pairs of a mapping (a plain dict sorted by key, as
        PyTorch) or of an iterable of pairs."""
        if isinstance(items, dict) and not isinstance(items, OrderedDict):
            items = sorted(items.items())
        super().update(items)

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            name = _TYPENAMES.get(str(numpy_dtype(p.dtype)), "Tensor") if isinstance(p, Tensor) \
                else ""
            lines.append(f"  ({k}): " + _param_line(p, "chainrule." + name))
        return "\n".join(lines)

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))
