"""The Optimizer base class (``torch.optim.Optimizer``) and the helpers every optimizer's
step uses; the optimizers themselves are in :mod:`chainrule.optim` and its ``_more``."""

from __future__ import annotations

import copy
import functools
import itertools
from collections import OrderedDict, defaultdict

import numpy as np

from .. import _inplace
from .._creation import get_default_dtype
from .._state import enable_grad
from .._tensor import Tensor, wrap
from ..backend import backend_of
from ..nn._hooks import RemovableHandle as _Handle


def _scalar_dtype():
    """The dtype of the 0-d state scalars (``step``): PyTorch's ``_get_scalar_dtype`` rule,
    float64 when the default float dtype is float64, else float32."""
    return np.float64 if np.dtype(get_default_dtype()) == np.float64 else np.float32


def _scalar(value, fused=False):
    """A 0-d NumPy-backed state tensor (``step``, ``mu_product``, ...); float32 for a
    ``fused`` group's ``step``, as PyTorch's ``_get_scalar_dtype(is_fused=True)``."""
    return wrap(np.array(value, dtype=np.float32 if fused else _scalar_dtype()))


def _zeros(p):
    """A state buffer of zeros like parameter ``p`` (same shape, dtype and backend)."""
    return wrap(backend_of(p._data).xp.zeros_like(p._data))


def _tick(step):
    """Add one to a 0-d ``step`` tensor in place; returns the new count as a float."""
    d = step._data
    d += 1
    return float(d)


def _is_array(v):
    """True for an array of some backend (what older state dicts hold), not a number."""
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, Tensor)


def _add(table, hook):
    handle = _Handle(table)
    table[handle.id] = hook
    return handle


_global_step_pre_hooks = OrderedDict()
_global_step_post_hooks = OrderedDict()


def register_optimizer_step_pre_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs before every optimizer's ``step`` (it may
    return ``(new_args, new_kwargs)``). Returns a handle whose ``remove()`` unregisters it."""
    return _add(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook):
    """``hook(optimizer, args, kwargs)`` runs after every optimizer's ``step``. Returns a
    handle whose ``remove()`` unregisters it."""
    return _add(_global_step_post_hooks, hook)


def _hooked_step(step):
    """``step`` running the global and the optimizer's step pre- and post-hooks around
    it, as PyTorch's ``Optimizer.profile_hook_step``."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in itertools.chain(list(_global_step_pre_hooks.values()),
                                    list(self._optimizer_step_pre_hooks.values())):
            result = hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
        out = step(self, *args, **kwargs)
        for hook in itertools.chain(list(self._optimizer_step_post_hooks.values()),
                                    list(_global_step_post_hooks.values())):
            hook(self, args, kwargs)
        return out

    wrapper.hooked = True
    return wrapper


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: holds ``param_groups`` (list of dicts) and ``state`` (``{param: dict}``).

    Parameters
    ----------
    params : iterable of Tensor, of (name, Tensor) pairs, or of dict
        Leaf tensors with ``requires_grad=True`` (e.g. ``model.parameters()``), named ones
        (``model.named_parameters()``: the names are kept in each group's
        ``"param_names"``), or parameter groups ``{"params": [...], "lr": ..., ...}`` whose
        missing options take ``defaults``.
    defaults : dict
        The default options.

    Raises
    ------
    ValueError
        An empty parameter list, a parameter that is not a leaf requiring grad, a
        parameter in more than one group, or a group mixing named and unnamed parameters.
    TypeError
        ``params`` is a single Tensor (pass an iterable).
    """

    #: State entries that are 0-d scalar tensors (kept as they are by ``load_state_dict``)
    _scalar_keys = ("step",)
    #: Further 0-d state entries (cast to the parameter's dtype on load, as PyTorch does)
    _other_scalars = ()

    def __init__(self, params, defaults):
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        self.defaults = defaults
        self.state = defaultdict(dict)  # as PyTorch's: self.state[p] starts empty
        self.param_groups = []
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        if not getattr(type(self).step, "hooked", False):  # hooks also run around a
            type(self).step = _hooked_step(type(self).step)  # subclass's own step
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__}: optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    @property
    def params(self):
        """All parameters, group after group (a list)."""
        return [p for g in self.param_groups for p in g["params"]]

    def add_param_group(self, param_group):
        """Add a group ``{"params": ..., option: value}``; options it lacks take the
        optimizer's defaults.

        Raises ValueError for a parameter already in another group, a non-leaf tensor, or a
        missing required option."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        ps = group["params"]
        ps = [ps] if isinstance(ps, Tensor) else list(ps)
        named = [p for p in ps if isinstance(p, tuple)]
        if named:  # named parameters, as ``model.named_parameters()`` gives
            if len(named) != len(ps):
                raise ValueError("all optimizer params should be with/without names. Some "
                                 "param names are missing")
            group["param_names"] = [name for name, _ in named]
            ps = [p for _, p in named]
        group["params"] = ps
        for i, p in enumerate(group["params"]):
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} can only optimize Tensors, but one of "
                                f"the params is {type(p).__name__}")
            if not p.is_leaf:  # a frozen parameter (requires_grad=False) is kept and
                #                 skipped by step() while its .grad is None, as PyTorch
                raise ValueError(f"{type(self).__name__}: can't optimize a non-leaf Tensor "
                                 f"(parameter {i} has grad_fn={p.grad_fn.name()})")
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if existing & {id(p) for p in group["params"]}:
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def __getstate__(self):
        # without the per-instance ``step`` wrapper a scheduler installs (it refers to this
        # optimizer: a copy must step its own parameters), as PyTorch's __getstate__
        state = dict(self.__dict__)
        state.pop("step", None)
        state.pop("_opt_called", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before this optimizer's ``step`` (it may
        return ``(new_args, new_kwargs)``). Returns a removable handle."""
        return _add(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after this optimizer's ``step``. Returns a
        removable handle."""
        return _add(self._optimizer_step_post_hooks, hook)

    def step(self, closure=None):
        """One update: subclasses define it. Raises NotImplementedError."""
        raise NotImplementedError

    def zero_grad(self, set_to_none=True):
        """Clear the gradients: set them to None (default) or, with ``set_to_none=False``,
        detach them from any graph and fill them with zeros in place (as PyTorch's
        ``grad.zero_()``: an Inf or NaN entry becomes 0 too)."""
        for g in self.param_groups:
            for p in g["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if grad.grad_fn is not None:
                    grad.detach_()
                else:
                    grad.requires_grad_(False)
                d = grad._data
                if d.__class__ is np.ndarray and d.flags.writeable:
                    d[...] = 0
                elif d.__class__ is np.ndarray:  # a read-only array (a broadcast view)
                    grad._data = np.zeros_like(d)
                else:
                    grad._data = backend_of(d).xp.zeros_like(d)
                grad._vc[0] += 1

    # --- state dict ----------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``
        with parameters numbered across groups, as PyTorch."""
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: v for p, v in self._state_items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def _state_items(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state:
                    yield p, self.state[p]

    def load_state_dict(self, state_dict):
        """Load a :meth:`state_dict` (copied) into an optimizer over parameters of the same
        shapes and grouping.

        Raises ValueError when the number of groups or of parameters per group differs."""
        state_dict = _copy_state(state_dict)
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        self.state = defaultdict(dict)  # as PyTorch's: self.state[p] starts empty
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                if i in state_dict["state"]:
                    self.state[p] = self._as_tensors(p, state_dict["state"][i])
            for k, v in theirs.items():
                if k != "params":
                    mine[k] = v

    def _as_tensors(self, p, st):
        """A loaded state entry as PyTorch's ``load_state_dict`` leaves it: buffers as Tensors
        of ``p``'s dtype and backend, ``step`` as it is (for chainrule's optimizers and their
        subclasses, an int, float or array ``step`` from an older state dict becomes a 0-d
        tensor, as their ``__setstate__`` in PyTorch; a user's optimizer keeps its numbers)."""
        if not isinstance(st, dict):
            return st
        xp = backend_of(p._data).xp
        floating = np.dtype(p.dtype).kind in "fc"
        builtin = any(c is not Optimizer and (c.__module__ == __package__ or
                                              c.__module__.startswith(__package__ + "."))
                      for c in type(self).__mro__)
        for k, v in st.items():
            scalar = k in self._scalar_keys or k in self._other_scalars
            if scalar and builtin and not isinstance(v, Tensor) and v is not None:
                v = _scalar(float(np.asarray(v)))
            if k in self._scalar_keys:
                st[k] = v
                continue
            if _is_array(v):
                v = wrap(v)
            if isinstance(v, Tensor):
                d = v._data
                if floating and d.dtype != p.dtype and np.dtype(d.dtype).kind in "fc":
                    d = d.astype(p.dtype)
                if not scalar and type(d) is not type(p._data):
                    d = xp.asarray(d)
                v._data = d
            st[k] = v
        return st

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    # --- helpers -------------------------------------------------------------------------
    def _grads(self, group):
        """``(p, gradient array)`` for the group's parameters that have a gradient
        (negated under ``maximize``)."""
        for p in group["params"]:
            if p.grad is None:
                continue
            g = p.grad._data
            if group.get("maximize", False):
                g = -g
            yield p, g

    def _set(self, p, new):
        """Write ``new`` (an array) into ``p``'s data in place."""
        if _inplace.BEFORE_WRITE:
            _inplace.before_write(p)
        if p._data.__class__ is np.ndarray:
            p._data[...] = new
        else:
            p._data = new
        p._vc[0] += 1

    def _update(self, p, step):
        if _inplace.BEFORE_WRITE:
            _inplace.before_write(p)
        if p._data.__class__ is np.ndarray:
            p._data -= step
        else:
            p._data = p._data - step
        p._vc[0] += 1

    def _persist(self):
        """Compute the lazy (Dask) parameters and state in one shared persist."""
        lazy = [p for p in self.params if p._data.__class__ is not np.ndarray
                and backend_of(p._data).lazy]
        if not lazy:
            return
        import dask

        slots = [v for p in lazy if p in self.state for v in self.state[p].values()
                 if isinstance(v, Tensor) and v._data.__class__ is not np.ndarray]
        flat = [p._data for p in lazy] + [v._data for v in slots]
        done = dask.persist(*flat)
        for p, d in zip(lazy, done):
            p._data = d
        for v, d in zip(slots, done[len(lazy):]):
            v._data = d


def _copy_state(obj):
    """A deep copy of a state dict; a Tensor's data is copied with its own backend's
    ``copy`` (so CuPy and Dask buffers stay where they are)."""
    if isinstance(obj, dict):
        return {k: _copy_state(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_copy_state(v) for v in obj)
    if isinstance(obj, Tensor):
        return wrap(obj._data.copy())
    return copy.deepcopy(obj)


def _check(name, value, what, low=0.0):
    """PyTorch's range check and message (``name`` is unused: PyTorch's messages do not
    name the optimizer); a Tensor ``lr`` must have one element."""
    if what == "learning rate" and isinstance(value, Tensor) and value.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not value >= low:
        raise ValueError(f"Invalid {what}: {value}")


def _num(v):
    """A hyperparameter as the step uses it: a (one-element) Tensor as a Python float, as
    PyTorch's single-tensor steps take ``lr`` (and Tensor betas) as scalars; a tuple
    entry by entry; anything else as it is."""
    if isinstance(v, Tensor):
        return float(v.item())
    if isinstance(v, tuple):
        return tuple(_num(x) for x in v)
    return v


def _sub_square(v, a):
    """``v - a * a`` rounded once, as PyTorch's CPU ``v.addcmul(a, a, value=-1)`` (a fused
    multiply-add): for float64 by Dekker's exact product ``a * a = p + e``, so that when
    ``v`` is ``a * a`` rounded the result is that rounding error, not 0 (and its sign is
    PyTorch's); other float dtypes through float64 (where their square is exact)."""
    if v.dtype != np.float64:
        return (v.astype(np.float64) - a.astype(np.float64) ** 2).astype(v.dtype)
    c = 134217729.0 * a  # Veltkamp split: a = hi + lo, each with at most 26 bits
    hi = c - (c - a)
    lo = a - hi
    p = a * a
    e = ((hi * hi - p) + 2 * hi * lo) + lo * lo
    return (v - p) - e


def _lerp(a, b, w):
    """``a.lerp_(b, w)`` as PyTorch's CPU kernel rounds it: ``a + w (b - a)`` when
    ``|w| < 0.5``, else ``b - (b - a)(1 - w)`` (so ``w = 1`` gives ``b`` exactly)."""
    if abs(w) < 0.5:
        return a + w * (b - a)
    return b - (b - a) * (1 - w)


def _call(closure):
    if closure is None:
        return None
    with enable_grad():
        return closure()
