"""``Parameter``, ``Module`` and the containers (``Sequential``, ``ModuleList``,
``ModuleDict``), as in ``torch.nn``."""

from __future__ import annotations

import functools
import inspect
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np

from .._state import no_grad
from .._tensor import Tensor, _copy_data, _fill, check_grad_dtype, wrap
from ..backend import dtype_kind, numpy_dtype
from ._hooks import GLOBAL_HOOKS, add_hook, call_with_hooks

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


def _typename(obj):
    """``torch.typename`` for error messages: the qualified class name (builtins by their
    bare name); a tensor (a Parameter too) by its legacy type name, as PyTorch's
    ("torch.DoubleTensor" for float64, "torch.FloatTensor", "torch.LongTensor", ...)."""
    if isinstance(obj, Tensor):
        from .._methods import _TYPE_NAMES

        name = np.dtype(numpy_dtype(obj.dtype)).name
        return "torch." + _TYPE_NAMES.get(name, {"bfloat16": "BFloat16Tensor"}.get(name,
                                                                                  "Tensor"))
    cls = obj if isinstance(obj, type) else type(obj)
    module = getattr(cls, "__module__", "") or ""
    if module in ("", "builtins"):
        return cls.__qualname__
    return module + "." + cls.__qualname__


# hooks run by every module (``register_module_*_registration_hook``)
_GLOBAL_REGISTRATION_HOOKS = {"module": OrderedDict(), "parameter": OrderedDict(),
                              "buffer": OrderedDict()}


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
    # the version saved in ``state_dict()._metadata`` (a subclass whose saved entries
    # change raises it and converts older ones in ``_load_from_state_dict``)
    _version = 1

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
    def __setattr__(self, name, value):
        # PyTorch's rules: a Parameter / Module / Buffer registers (taking the name from
        # the other tables and the instance dict); a registered name only takes a value of
        # its kind or None
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._parameters, self._buffers)
            for hook, _ in _GLOBAL_REGISTRATION_HOOKS["module"].values():
                output = hook(self, name, value)
                if output is not None:
                    value = output
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                f"'{name}' (torch.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = self.__dict__.get("_buffers")
        # (an UninitializedBuffer registers as a Buffer does, as PyTorch's)
        is_buffer = isinstance(value, Buffer) or getattr(type(value), "_is_buffer", False)
        if is_buffer or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            if is_buffer:
                persistent = value.persistent
            else:
                persistent = name not in self._non_persistent_buffers_set
            self.register_buffer(name, value, persistent=persistent)
            return
        object.__setattr__(self, name, value)

    def _remove_from(self, name, *dicts):
        for d in dicts:
            d.pop(name, None)
        self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)

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
                if store == "_buffers":
                    self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = (dir(type(self)) + list(self.__dict__) + list(self._parameters)
                + list(self._modules) + list(self._buffers))
        return sorted(k for k in keys if not k[0].isdigit())  # (not Python names)

    def register_parameter(self, name, param):
        """Register ``param`` (a :class:`Parameter` or None) under ``name``.

        Raises AttributeError before ``Module.__init__``; TypeError for a non-string name
        or a non-Parameter; KeyError for a dotted or empty name or one that is already an
        attribute (other than a parameter)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None:
            for hook, _ in _GLOBAL_REGISTRATION_HOOKS["parameter"].values():
                output = hook(self, name, param)
                if output is not None:
                    param = output
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor (or None) that is state but not a parameter (running
        statistics); ``persistent=False`` leaves it out of ``state_dict``.

        Raises AttributeError before ``Module.__init__``; KeyError for a bad or taken name,
        TypeError for a non-string name or a non-Tensor."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        if isinstance(tensor, Buffer):
            tensor = wrap(tensor._data)
        for hook, _ in _GLOBAL_REGISTRATION_HOOKS["buffer"].values():
            output = hook(self, name, tensor)
            if output is not None:
                tensor = output
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register a child ``module`` (or None) under ``name``.

        Raises TypeError for a non-Module or a non-string name; KeyError for a dotted or
        empty name or one that is already an attribute (other than a child module)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f"module name can't contain \".\", got: {name}")
        if name == "":
            raise KeyError("module name can't be empty string \"\"")
        for hook, _ in _GLOBAL_REGISTRATION_HOOKS["module"].values():
            output = hook(self, name, module)
            if output is not None:
                module = output
        self._modules[name] = module

    def register_module(self, name, module):
        """Alias of :meth:`add_module`."""
        self.add_module(name, module)

    def _check_name(self, name, what, table):
        # PyTorch's checks and messages, in its order
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f"{what} name can't contain \".\"")
        if name == "":
            raise KeyError(f"{what} name can't be empty string \"\"")
        if hasattr(self, name) and name not in self.__dict__[table]:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target):
        """The sub-module at the dotted path ``target`` ("" is ``self``). Raises
        AttributeError for a path through a missing attribute or a non-Module."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        """The parameter at the dotted path ``target``. Raises AttributeError for a path
        that does not lead to a parameter."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path ``target``. Raises AttributeError for a path that
        does not lead to a buffer."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        buffer = getattr(mod, name)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return buffer

    def set_submodule(self, target, module, strict=False):
        """Put ``module`` at the dotted path ``target`` (its parent must exist). Raises
        ValueError for an empty ``target`` or a non-Module; AttributeError for a missing
        parent, a name that is an attribute but not a module, or (``strict``) a name not
        yet an attribute."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(parent._get_name() + " has no attribute `" + name + "`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError("`" + name + "` is not an nn.Module")
        setattr(parent, name, module)

    # --- traversal --------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module ("") and every descendant, depth first;
        a module reachable twice is listed once (``remove_duplicate=False``: under each
        name). ``memo``: a set of modules to skip (filled in as they are listed)."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
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
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        """The direct child modules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in mods:
            for name, t in getattr(mod, store).items():
                if t is None or id(t) in seen:
                    continue
                if remove_duplicate:
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
        """Set training mode on this module and (through their own ``train``) its
        children; returns self.

        Raises ValueError for a non-bool ``mode``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
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
        """Clear the parameters' gradients: None (default), or zeroed in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant, then on self (children first);
        returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_to_tensors(self, convert):
        # as PyTorch's ``_apply``: children first; a parameter keeps its identity (its data
        # is replaced, and its gradient's), so optimizers built before still hold it
        for m in self.children():
            m._apply_to_tensors(convert)
        with no_grad():
            for p in self._parameters.values():
                if p is None:
                    continue
                new = convert(p, True)
                if new is not p:
                    p.data = new
                if p.grad is not None:
                    g = convert(p.grad, False)
                    if g is not p.grad:
                        p.grad.data = g
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = convert(b, False)
        return self

    def to(self, *args, dtype=None, device=None, **kwargs):
        """Cast floating parameters and buffers to ``dtype`` and move them to ``device``
        (``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``: "cpu",
        "cuda"/"cuda:i" for CuPy, or an Array API library's device). Returns self. As in
        PyTorch, parameters stay the same objects (their data is replaced), so an
        optimizer made before still updates them; integer buffers keep their dtype.

        ``to("meta")``: chainrule has no storage-free tensors, so parameters and buffers
        become NaN-filled tensors (integer buffers zeros) of the same shapes and dtypes. A
        module moved there only to be called through ``func.functional_call`` (torch.func's
        model-ensembling recipe) works as in PyTorch; a direct call gives NaN rather than
        numbers of a model that is not there.

        Raises TypeError for a ``dtype`` that is neither floating nor complex."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, str) or type(a).__name__ == "device":
                device = a
            elif a is not None:
                dtype = a
        if dtype is not None and dtype_kind(dtype) not in ("f", "c"):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
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
        """Move the parameters and buffers to shared memory (``Tensor.share_memory_``, see
        :mod:`chainrule.multiprocessing`): processes given this module then update the same
        values (Hogwild training). Returns self."""
        for t in (*self.parameters(), *self.buffers()):
            t.share_memory_()
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
        """Cast every parameter and buffer (integer ones too) to ``dst_type``; returns
        self."""
        return self._apply_to_tensors(lambda t, is_param: t if t.dtype == dst_type
                                      else t.detach().type(dst_type))

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
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._hooks("_state_dict_pre_hooks").values():
            hook[0](self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook, private in self._hooks("_state_dict_hooks").values():
            result = hook(self, destination, prefix, local_metadata)
            if private:
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
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
            if not isinstance(value, Tensor) and hasattr(value, "__array__") and \
                    not isinstance(value, (int, float, complex, bool)):
                # arrays, and tensors of other libraries (a PyTorch state dict loads as is)
                value = wrap(np.asarray(value.detach() if hasattr(value, "detach") else value))
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            # an uninitialized parameter (a lazy module's) has no shape to check: it takes
            # an uninitialized one as is (a copy of nothing), as PyTorch's
            lazy = getattr(type(param), "_uninitialized", False)
            if not lazy and len(param.shape) == 0 and len(value.shape) == 1 and \
                    value.shape[0] == 1:
                value = value[0]  # (PyTorch 0.3 checkpoints)
            if not lazy and tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"torch.Size({list(value.shape)}) from checkpoint, the "
                                  f"shape in current model is torch.Size({list(param.shape)}).")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            if isinstance(value, Parameter):
                                value.requires_grad_(param.requires_grad)
                            else:
                                value = Parameter(value, requires_grad=param.requires_grad)
                        setattr(self, name, value)
                    elif lazy:
                        param.copy_(value)
                    else:
                        value = value.detach()  # a copy, on the parameter's device
                        param.copy_(value.clone() if value.device == param.device else
                                    value.to(param.device))
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {param.shape} and whose "
                                  f"dimensions in the checkpoint are {value.shape}, an "
                                  f"exception occurred : {ex.args}.")
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
        if metadata is not None:
            state_dict._metadata = metadata

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
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if "
                                         "incompatible_keys need to be modified, it should "
                                         "be done inplace.")

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
        return add_hook(self._hooks("_forward_pre_hooks"), hook, prepend, flags=(
            (self._hooks("_forward_pre_hooks_with_kwargs"), with_kwargs),))

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
        output)``) runs after ``forward``; returning a value replaces the output."""
        return add_hook(self._hooks("_forward_hooks"), hook, prepend, flags=(
            (self._hooks("_forward_hooks_with_kwargs"), with_kwargs),
            (self._hooks("_forward_hooks_always_called"), always_call)))

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` runs when the gradients of the module's outputs
        are known; returning a tuple replaces ``grad_output``."""
        return add_hook(self._hooks("_backward_pre_hooks"), hook, prepend, flags=())

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the
        module's tensor inputs are computed (``grad_input``: one per positional tensor
        input that requires grad; Nones when none does); returning a tuple replaces
        ``grad_input``.

        Raises RuntimeError on a module that has a hook of :meth:`register_backward_hook`
        (as PyTorch)."""
        self._backward_hook_kind(True)
        return add_hook(self._hooks("_backward_hooks"), hook, prepend, flags=())

    def register_backward_hook(self, hook):
        """PyTorch's deprecated name; here the same as :meth:`register_full_backward_hook`.
        Raises RuntimeError on a module that has a full backward hook (as PyTorch)."""
        self._backward_hook_kind(False)
        return add_hook(self._hooks("_backward_hooks"), hook, False, flags=())

    def _backward_hook_kind(self, full):
        kind = self.__dict__.get("_is_full_backward_hook")
        if kind is not None and kind != full and self._hooks("_backward_hooks"):
            raise RuntimeError("Cannot use both regular backward hooks and full backward "
                               "hooks on a single Module. Please use only one of them.")
        object.__setattr__(self, "_is_full_backward_hook", full)

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


# --- global hooks (torch.nn.modules.module.register_module_*) ---------------------------
def _call_with_global_hooks(self, *args, **kwargs):
    return call_with_hooks(self, args, kwargs)


_fast_call = Module.__call__


def _update_call():
    # ``Module.__call__`` checks only the module's own hook tables (it is on every
    # forward); while a global call hook exists, every call goes through the hooks
    Module.__call__ = _call_with_global_hooks if any(GLOBAL_HOOKS.values()) else _fast_call


def _add_global(table, hook, flags=()):
    handle = add_hook(GLOBAL_HOOKS[table], hook, False, on_remove=_update_call,
                      flags=tuple((GLOBAL_HOOKS[side], on) for side, on in flags))
    _update_call()
    return handle


def register_module_forward_pre_hook(hook):
    """``hook(module, args)`` runs before the ``forward`` of every module, before the
    module's own pre-hooks (returning a value replaces the arguments). Returns a handle
    whose ``remove()`` unregisters it."""
    return _add_global("_forward_pre_hooks", hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """``hook(module, args, output)`` (``with_kwargs``: ``hook(module, args, kwargs,
    output)``) runs after the ``forward`` of every module, before the module's own
    hooks; returning a value replaces the output. Returns a removable handle."""
    return _add_global("_forward_hooks", hook, (("_forward_hooks_with_kwargs", with_kwargs),
                                                ("_forward_hooks_always_called", always_call)))


def register_module_full_backward_pre_hook(hook):
    """``hook(module, grad_output)`` for every module, before the module's own backward
    pre-hooks. Returns a removable handle."""
    return _add_global("_backward_pre_hooks", hook)


def register_module_full_backward_hook(hook):
    """``hook(module, grad_input, grad_output)`` for every module, before the module's
    own backward hooks. Returns a removable handle."""
    return _add_global("_backward_hooks", hook)


def register_module_backward_hook(hook):
    """PyTorch's deprecated name; here the same as
    :func:`register_module_full_backward_hook`."""
    return register_module_full_backward_hook(hook)


def _add_registration_hook(kind, hook):
    return add_hook(_GLOBAL_REGISTRATION_HOOKS[kind], hook, False, None)


def register_module_module_registration_hook(hook):
    """``hook(module, name, submodule)`` runs when any module registers a child; a
    returned module is registered instead. Returns a removable handle."""
    return _add_registration_hook("module", hook)


def register_module_parameter_registration_hook(hook):
    """``hook(module, name, param)`` runs when any module registers a parameter; a
    returned parameter is registered instead. Returns a removable handle."""
    return _add_registration_hook("parameter", hook)


def register_module_buffer_registration_hook(hook):
    """``hook(module, name, buffer)`` runs when any module registers a buffer; a returned
    tensor is registered instead. Returns a removable handle."""
    return _add_registration_hook("buffer", hook)


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


def _abs_index(idx, n):
    """``idx`` (an int, or an object with ``__index__``) as a position in ``range(n)``.
    Raises TypeError for a non-integer, IndexError out of range."""
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


def _renumber(module):
    """Name the child modules "0", "1", ... in their order (after a deletion)."""
    items = list(module._modules.values())
    module._modules.clear()
    for i, m in enumerate(items):
        module._modules[str(i)] = m


class _ModuleSequence(Module):
    """What Sequential and ModuleList share: integer positions, ``len``, iteration,
    ``append``, ``pop`` and deletion (the later modules renumbered from 0, as PyTorch's)."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        """Add ``module`` at the end; returns self."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, idx):
        """Remove and return the module at ``idx`` (or the modules of a slice); the later
        ones are renumbered."""
        m = self[idx]
        del self[idx]
        return m

    def _insert_at(self, index, module):
        # (after the caller's checks) ``module`` at ``index`` in [0, len], the modules from
        # there on moved up one: their names, when numbers, renumbered
        if not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        items = list(self._modules.items())
        items.insert(index, (None, module))
        self._modules.clear()
        for i, (key, m) in enumerate(items):
            self._modules[str(i) if key is None or key.isdigit() else key] = m


class Sequential(_ModuleSequence):
    """Modules applied in order: ``Sequential(m1, m2)(x) == m2(m1(x))``; also
    ``Sequential(OrderedDict(name=module, ...))``. Supports ``len``, iteration, integer
    and slice indexing, ``append``, ``insert``, ``extend``, ``pop``, ``del``, ``+``, ``*``
    (as PyTorch's)."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_abs_index(idx, len(self))]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_abs_index(idx, len(self))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        """Remove the module(s) at ``idx`` (an int or a slice); all are then renamed
        "0", "1", ..., as PyTorch's."""
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_abs_index(idx, len(self))]]):
            delattr(self, key)
        _renumber(self)

    def insert(self, index, module):
        """Insert ``module`` before ``index`` (``-len <= index <= len``); returns self.
        Raises AssertionError for a non-Module, IndexError for an index out of range."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        self._insert_at(index + n if index < 0 else index, module)
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

    def _check_factor(self, other):
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and "
                            f"{type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")

    def __mul__(self, other):
        self._check_factor(other)
        return Sequential(*(list(self) * other))

    def __rmul__(self, other):
        return self.__mul__(other)

    def __imul__(self, other):
        self._check_factor(other)
        return self.extend(list(self) * (other - 1))

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
        return self._modules[str(_abs_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_abs_index(idx, len(self))), module)

    def __delitem__(self, idx):
        """Remove the module(s) at ``idx`` (an int or a slice); the later ones are
        renumbered from 0."""
        if isinstance(idx, slice):
            for k in range(len(self._modules))[idx]:
                delattr(self, str(k))
        else:
            delattr(self, str(_abs_index(idx, len(self))))
        _renumber(self)

    def __add__(self, other):
        combined = ModuleList()
        for m in list(self) + list(other):
            combined.append(m)
        return combined

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
        """Append each module of ``modules``; returns self. Raises TypeError for a
        non-iterable."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got "
                            + type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """Insert ``module`` before ``index``, as ``list.insert`` (a negative index counts
        from the end; one past either end inserts there)."""
        n = len(self._modules)
        index = operator.index(index)
        index = max(0, index + n) if index < 0 else min(index, n)
        self._insert_at(index, module)

    def __iadd__(self, modules):
        return self.extend(modules)


class _DictMethods:
    """``get``, ``pop`` and ``clear`` of the dict-like containers, from their own
    ``__getitem__``, ``__delitem__``, ``__contains__`` and ``__iter__``."""

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        for k in list(self):
            del self[k]


class _DictOf(_DictMethods, Module):
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

    def update(self, items):
        """Add the ``(name, value)`` pairs of a mapping or an iterable of pairs. Raises
        TypeError for a non-iterable or an element that is not iterable, ValueError for an
        element that is not a pair."""
        what = type(self).__name__
        if not isinstance(items, Iterable):
            raise TypeError(f"{'ParametersDict' if what == 'ParameterDict' else what}.update "
                            "should be called with an iterable of key/value pairs, but got "
                            + type(items).__name__)
        if isinstance(items, (Mapping, _DictOf)):
            for k, v in self._mapping_items(items):
                self[k] = v
            return
        for j, pair in enumerate(items):
            if not isinstance(pair, Iterable):
                raise TypeError(f"{what} update sequence element #{j} should be Iterable; is"
                                + type(pair).__name__)
            if len(pair) != 2:
                raise ValueError(f"{what} update sequence element #{j} has length "
                                 f"{len(pair)}; 2 is required")
            self[pair[0]] = pair[1]

    def _mapping_items(self, items):
        return items.items()


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
    ``append``, ``extend``. Tensors put in become Parameters; as PyTorch's, other values
    are kept too (a module as a child module, anything else as an attribute)."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            out = type(self)()
            for i in range(*idx.indices(len(self))):
                out.append(self[i])
            return out
        return getattr(self, self._key(idx))

    def _key(self, idx):
        try:
            return str(_abs_index(idx, len(self)))
        except IndexError as e:
            raise IndexError(f"ParameterList: {e}") from None

    def __setitem__(self, idx, value):
        setattr(self, self._key(idx), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        """Add ``value`` at the end; returns self."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append each of ``values``; returns self. Raises TypeError for a non-iterable
        (a tensor included)."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(f"  ({i}): " + _param_line(p, str(numpy_dtype(p.dtype))
                                                   if isinstance(p, Tensor) else "")
                         for i, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


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


class ParameterDict(_DictMethods, Module):
    """A dict of parameters, registered under their keys (dict methods: ``keys``,
    ``values``, ``items``, ``update``, ``pop``, ``popitem``, ``get``, ``setdefault``,
    ``copy``, ``fromkeys``, ``in``, ``|``). Tensors put in become Parameters; as PyTorch's,
    other values are kept too (a module as a child module, anything else as an attribute).
    A plain ``dict`` given to the constructor or ``update`` is added in sorted key order
    (an ``OrderedDict``, a ParameterDict or pairs keep theirs)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _key_to_attr(key):
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not "
                            f"a string (type is '{type(key).__name__}'). Open an issue on "
                            "github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._key_to_attr(key))

    def __setitem__(self, key, value):
        attr = self._key_to_attr(key)
        setattr(self, attr, _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._key_to_attr(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def popitem(self):
        """Remove and return the last ``(key, value)`` pair."""
        k = next(reversed(self._keys))
        return k, self.pop(k)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def copy(self):
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def update(self, parameters):
        """Add the ``(name, value)`` pairs of a mapping (a plain dict sorted by key, as
        PyTorch) or of an iterable of pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of "
                            "key/value pairs, but got " + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = parameters.items()
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for j, p in enumerate(parameters):
                if not isinstance(p, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{j} should be "
                                    "Iterable; is" + type(p).__name__)
                if len(p) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{j} has length "
                                     f"{len(p)}; 2 is required")
                pairs.append(p)
        for k, v in pairs:
            self[k] = v

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ror__(self, other):
        out = other.copy()
        out.update(self)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            name = _TYPENAMES.get(str(numpy_dtype(p.dtype)), "Tensor") if isinstance(p, Tensor) \
                else ""
            lines.append(f"  ({k}): " + _param_line(p, "chainrule." + name))
        return "\n".join(lines)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
