"""Pruning, as ``torch.nn.utils.prune``: pruning the tensor ``name`` of a module replaces
the parameter by a parameter ``name + "_orig"`` and a buffer ``name + "_mask"``, and
registers a forward pre-hook (the pruning method itself) that sets ``module.<name>`` to
``<name>_orig * <name>_mask`` before each call, so the gradient reaching ``_orig`` is the
upstream gradient masked. Pruning the same tensor again combines the masks through a
:class:`PruningContainer` (the new method acts on the entries, or channels, left
unpruned); :func:`remove` makes the pruning permanent.

The entries that :class:`L1Unstructured` and :class:`LnStructured` prune are those that
PyTorch's CPU ``topk`` selects, ties included: it calls libstdc++'s ``std::partial_sort``
(when ``64 * k <= n``) or ``std::nth_element``, whose choice among equal values
:func:`_torch_topk_positions` reproduces. The random methods draw from chainrule's
generator, so their masks differ from PyTorch's (not their sizes).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ... import _creation
from ... import ops as _ops
from ..._tensor import wrap
from ...backend import backend_of, beside

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask",
           "identity", "random_unstructured", "l1_unstructured", "random_structured",
           "ln_structured", "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _pre_hooks(module):
    """The module's forward pre-hook table: ``{id: hook}``, as PyTorch's."""
    return module._hooks("_forward_pre_hooks")


class BasePruningMethod(ABC):
    """Abstract base class of the pruning methods, as PyTorch's: a subclass defines
    ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"`` with a ``dim`` attribute, or
    ``"global"``) and :meth:`compute_mask`; an instance, registered as a forward pre-hook,
    recomputes ``module.<name>`` from ``<name>_orig`` and ``<name>_mask``."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """Set ``module.<name>`` to the masked original (the forward pre-hook)."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask for the importance scores ``t``, on top of ``default_mask`` (the mask
        of earlier pruning, ones when there was none); same shape as ``t``."""

    def apply_mask(self, module):
        """``<name>_mask`` (in ``<name>_orig``'s dtype) times ``<name>_orig``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with an earlier
        pruning of it through a :class:`PruningContainer`); the mask is computed from
        ``importance_scores`` (the tensor itself when None). Returns the method registered
        as the forward pre-hook.

        Raises AssertionError for scores of another shape, or when the tensor already has
        two pruning hooks; whatever ``compute_mask`` raises (the parameter restored)."""
        hooks = _pre_hooks(module)
        old_method = None
        found = []
        for k, hook in hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old_method = hook
                found.append(k)
        if len(found) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor "
                                 f"{name} of module {module}. Use a PruningContainer.")
        for k in found:
            del hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        elif old_method is not None:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container

        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as "
                                     f"parameter {name} of {module}, got "
                                     f"{importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _creation.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask computed from ``importance_scores`` (``t`` when None) on
        top of ``default_mask`` (ones when None)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as "
                                     f"tensor t, got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else _creation.ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruning permanent: ``<name>`` becomes a parameter again (the
        ``_orig`` parameter object, holding the masked values); ``<name>_orig`` and
        ``<name>_mask`` are deleted."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 "removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one tensor (iterative pruning): the latest
    acts on the entries (``"unstructured"``) or channels (``"structured"``) that the
    current mask keeps, or on all of them (``"global"``)."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Append ``method`` (acting on the same tensor name).

        Raises TypeError for a non-``BasePruningMethod``, ValueError for one acting on
        another tensor."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """``default_mask`` with the latest method's mask computed on the part of ``t``
        it leaves (see the class).

        Raises AttributeError for a structured method without ``dim``, IndexError for a
        ``dim`` out of range, ValueError for an unknown ``PRUNING_TYPE``."""
        method = self._pruning_methods[-1]
        mask = default_mask
        new_mask = mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     "have the attribute `dim` defined.")
            n_dims = t.dim()
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep_channel
            slc = tuple(slc)
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * len(t.shape)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial_mask = method.compute_mask(t[slc], default_mask=mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: the reparametrisation with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Zeroes ``amount`` (an int: a count; a float in [0, 1]: a fraction, rounded) of the
    entries, those at the flat positions :meth:`_chosen` gives."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        tensor_size = t.nelement()
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        mask = default_mask.clone()
        if nparams_toprune != 0:
            mask.view(-1)[self._chosen(t, nparams_toprune, mask)] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` (an int: a count; a float in [0, 1]: a fraction, rounded) of the
    entries, at random."""

    def _chosen(self, t, k, mask):
        return _ops.topk(_creation.rand_like(t).reshape(-1), k=k).indices

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the ``amount`` (count or fraction) entries of smallest absolute value, ties
    chosen as PyTorch's CPU ``topk(|t|, k, largest=False)`` chooses them."""

    def _chosen(self, t, k, mask):
        pos = _torch_topk_positions(np.abs(_host(t).reshape(-1)), k, largest=False)
        return wrap(beside(pos, mask._data))

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Zeroes ``amount`` (count or fraction) whole channels along ``dim``: all but those
    :meth:`_kept_channels` gives."""

    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        """Raises ValueError for a tensor of fewer than 2 dims, IndexError for ``dim``
        out of range."""
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        tensor_size = t.shape[self.dim]
        nparams_toprune = _compute_nparams_toprune(self.amount, tensor_size)
        _validate_pruning_amount(nparams_toprune, tensor_size)
        kept = self._kept_channels(t, tensor_size, nparams_toprune)
        if nparams_toprune == 0:
            return default_mask
        mask = _creation.zeros_like(t)
        slc = [slice(None)] * len(t.shape)
        slc[self.dim] = kept
        mask[tuple(slc)] = 1
        mask *= default_mask.to(dtype=mask.dtype)
        return mask


class RandomStructured(_Structured):
    """Prunes ``amount`` (count or fraction) whole channels along ``dim``, at random."""

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _kept_channels(self, t, tensor_size, nparams_toprune):
        if nparams_toprune == 0:
            return None
        prob = _creation.rand(tensor_size)
        return prob > _ops.kthvalue(prob, k=nparams_toprune).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes the ``amount`` (count or fraction) channels along ``dim`` of smallest
    ``n``-norm (``n`` as ``p`` of ``torch.norm``: a number, ``inf``, ``-inf``, ``'fro'``,
    ``'nuc'``); the channels kept are those PyTorch's CPU ``topk(norms, largest=True)``
    picks, ties included."""

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def _kept_channels(self, t, tensor_size, nparams_toprune):
        norm = _compute_norm(t, self.n, self.dim)
        keep = _torch_topk_positions(_host(norm).reshape(-1), tensor_size - nparams_toprune,
                                     largest=True)
        return wrap(beside(keep, t._data))

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by a given mask (multiplied into the current one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# --- the functions ---------------------------------------------------------------------


def identity(module, name):
    """Reparametrise ``module.<name>`` as pruned, with a mask of ones. Returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` (int: count; float in [0, 1]: fraction) of the (unpruned) entries of
    ``module.<name>`` at random. Returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` (count or fraction) unpruned entries of ``module.<name>`` of
    smallest ``|importance_scores|`` (the tensor when None). Returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` (count or fraction) unpruned channels along ``dim`` at random.
    Returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` (count or fraction) unpruned channels along ``dim`` of smallest
    ``n``-norm of ``importance_scores`` (the tensor when None). Returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` pairs of ``parameters`` together: an unstructured
    ``pruning_method(**kwargs)`` (e.g. ``L1Unstructured``, ``amount=...``) chooses among all
    their unpruned entries at once (``importance_scores``: a dict from pairs to scores);
    each tensor is then pruned by its part of the mask (:class:`CustomFromMask`).

    Raises TypeError when ``parameters`` is not iterable, ``importance_scores`` not a dict,
    or the method not unstructured."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    relevant_importance_scores = _flat(
        [importance_scores.get((module, name), getattr(module, name))
         for (module, name) in parameters])
    default_mask = _flat(
        [getattr(module, name + "_mask", _creation.ones_like(getattr(module, name)))
         for (module, name) in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the '
                        f"`pruning_method`. Found method {pruning_method} of type "
                        f"{method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(relevant_importance_scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        param_mask = final_mask[pointer:pointer + num_param].view_as(param)
        custom_from_mask(module, name, mask=param_mask)
        pointer += num_param


def _flat(tensors):
    """The tensors flattened and concatenated (``nn.utils.parameters_to_vector``)."""
    return _ops.cat([t.reshape(-1) for t in tensors])


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` by the given ``mask``. Returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent (see
    :meth:`BasePruningMethod.remove`) and drop its hook. Returns ``module``.

    Raises ValueError when ``name`` is not pruned."""
    hooks = _pre_hooks(module)
    for k, hook in list(hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module):
    """Whether ``module`` or one of its submodules has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in _pre_hooks(submodule).values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


# --- validation and helpers ------------------------------------------------------------


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or "
                         "a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                         f"to prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional "
                         f"tensors. Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    dims = list(range(t.dim()))
    if dim < 0:
        dim = dims[dim]
    dims.remove(dim)
    return _ops.norm(t, p=n, dim=dims)


def _host(t):
    d = t.detach()._data
    return d if d.__class__ is np.ndarray else np.asarray(backend_of(d).to_numpy(d))


# --- PyTorch's CPU topk: which entries it selects among ties ----------------------------
#
# torch.topk on the CPU fills a vector of (value, index) pairs and calls
# std::partial_sort(begin, begin + k, end, comp) when k * 64 <= n, else
# std::nth_element(begin, begin + k - 1, end, comp) (then sorts the first k - 1); the
# first k pairs are the result. comp is "<" with NaN largest (largest=False), or ">" with
# NaN first (largest=True). Below is libstdc++'s code of those algorithms on integer
# keys (comp(x, y) is key[x] < key[y]), which decides which of equal values are kept.


def _torch_topk_positions(values, k, largest):
    """The positions (int64, in no particular order) of the ``k`` entries of the 1-D
    array ``values`` that PyTorch's CPU ``topk(values, k, largest=largest)`` returns."""
    n = values.shape[0]
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.arange(n, dtype=np.int64)
    # comp as integer ranks: equal values (and all NaNs) share a rank, NaN is the largest
    _, rank = np.unique(np.asarray(values, dtype=np.float64), return_inverse=True)
    key = -rank.reshape(-1).astype(np.int64) if largest else rank.reshape(-1).astype(np.int64)
    pos = np.arange(n, dtype=np.int64)
    if k * 64 <= n:
        _heap_select(key, pos, 0, k, n)
    else:
        _nth_element(key, pos, 0, k - 1, n)
    return np.sort(pos[:k])


def _swap(key, pos, i, j):
    key[i], key[j] = key[j], key[i]
    pos[i], pos[j] = pos[j], pos[i]


def _nth_element(key, pos, first, nth, last):
    """libstdc++'s ``std::__introselect``."""
    depth = 2 * ((last - first).bit_length() - 1)
    while last - first > 3:
        if depth == 0:
            _heap_select(key, pos, first, nth + 1, last)
            _swap(key, pos, first, nth)
            return
        depth -= 1
        cut = _partition_pivot(key, pos, first, last)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(key, pos, first, last)


def _partition_pivot(key, pos, first, last):
    """``std::__unguarded_partition_pivot``: the median of ``first + 1``, the middle and
    ``last - 1`` moved to ``first``, then Hoare's partition of the rest around it (done
    with arrays: the i-th swap exchanges the i-th entry from the left that is not below
    the pivot with the i-th from the right that is not above it, while they are in
    order)."""
    mid = first + (last - first) // 2
    a, b, c = first + 1, mid, last - 1
    if key[a] < key[b]:
        m = b if key[b] < key[c] else (c if key[a] < key[c] else a)
    else:
        m = a if key[a] < key[c] else (c if key[b] < key[c] else b)
    _swap(key, pos, first, m)
    pivot = key[first]
    left = first + 1 + np.flatnonzero(key[first + 1:last] >= pivot)
    right = (first + np.flatnonzero(key[first:last] <= pivot))[::-1]
    m = min(left.shape[0], right.shape[0])
    ordered = left[:m] < right[:m]
    count = m if ordered.all() else int(np.argmin(ordered))
    li, ri = left[:count], right[:count]
    key[li], key[ri] = key[ri], key[li].copy()
    pos[li], pos[ri] = pos[ri], pos[li].copy()
    cut = int(left[count]) if count < left.shape[0] else last
    if count > 0:
        cut = min(cut, int(ri[-1]))
    return cut


def _insertion_sort(key, pos, first, last):
    """``std::__insertion_sort`` (on the at most 3 entries introselect leaves)."""
    for i in range(first + 1, last):
        kv, pv = key[i], pos[i]
        if kv < key[first]:
            key[first + 1:i + 1] = key[first:i].copy()
            pos[first + 1:i + 1] = pos[first:i].copy()
            key[first], pos[first] = kv, pv
        else:
            j = i
            while kv < key[j - 1]:
                key[j], pos[j] = key[j - 1], pos[j - 1]
                j -= 1
            key[j], pos[j] = kv, pv


def _adjust_heap(heap, hole, length, value):
    """``std::__adjust_heap`` on a list of ``(key, position)`` (a max-heap by key)."""
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if heap[child][0] < heap[child - 1][0]:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if length & 1 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and heap[parent][0] < value[0]:
        heap[hole] = heap[parent]
        hole = parent
        parent = (hole - 1) // 2
    heap[hole] = value


def _heap_select(key, pos, first, middle, last):
    """``std::__heap_select``: a heap of ``[first, middle)``; each later entry below its
    top replaces the top (which moves to that entry's place)."""
    length = middle - first
    heap = list(zip(key[first:middle].tolist(), pos[first:middle].tolist()))
    if length >= 2:
        parent = (length - 2) // 2
        while True:
            _adjust_heap(heap, parent, length, heap[parent])
            if parent == 0:
                break
            parent -= 1
    block = 4096
    for start in range(middle, last, block):
        stop = min(start + block, last)
        # the top only decreases, so the entries not below it now never enter
        for i in (start + np.flatnonzero(key[start:stop] < heap[0][0])).tolist():
            if key[i] < heap[0][0]:
                value = (int(key[i]), int(pos[i]))
                key[i], pos[i] = heap[0]
                _adjust_heap(heap, 0, length, value)
    key[first:middle] = [h[0] for h in heap]
    pos[first:middle] = [h[1] for h in heap]

