"""``torch.autograd.graph``'s names that apply here: ``Node`` (the base class of every
``grad_fn``, with ``register_hook``, ``register_prehook``, ``metadata``, ``name()`` and
``next_functions``), ``increment_version``, and the saved-tensor contexts.

``saved_tensors_hooks(pack_hook, unpack_hook)``: while it is active, every tensor an op or
a custom Function saves for backward goes through ``pack_hook`` when it is saved, and what
that returned through ``unpack_hook`` each time backward (or ``grad_fn._saved_*``,
``ctx.saved_tensors``) needs it, as in PyTorch. ``save_on_cpu`` is built on it;
``disable_saved_tensors_hooks`` forbids them for a block.

How it costs nothing otherwise: entering the hooks sets the dispatcher's SLOW flag, so the
packing runs in an ``AFTER_OP`` hook (:func:`_pack_recorded`) after an op recorded its node,
never in the recording itself. A packed node changes class (``PackedOpNode``), which the
engine runs on its general path, unpacking first.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import weakref
from typing import Any, NamedTuple

from .. import _dispatch, _inplace, _node
from .._engine import current_pass
from .._node import PACKED, Node, PackedValue
from .._state import STATE, no_grad
from .._tensor import Tensor, _fill

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "register_multi_grad_hook", "allow_mutation_on_saved_tensors"]


class GradientEdge(NamedTuple):
    """Where a tensor's gradient enters the graph: ``node`` (its ``grad_fn``, or its
    leaf's AccumulateGrad node) and ``output_nr``. ``autograd.grad`` accepts one in
    ``inputs`` (the gradient flowing into that edge) and ``backward(inputs=)`` too."""

    node: Node
    output_nr: int
    ownership_token: Any = None


def get_gradient_edge(tensor):
    """The :class:`GradientEdge` of ``tensor`` (``torch.autograd.graph.get_gradient_edge``):
    it stays valid when ``tensor`` is later changed in place, so the gradient of its
    value at this point can still be asked for."""
    from .._dispatch import edge

    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node, nr = edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump ``tensor``'s version counter, as an in-place write would: saved values of it
    then raise when a backward pass uses them."""
    tensor._vc[0] += 1


PACK_INPLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to "
    "pack hook cannot be modified by in-place operations as this can lead to unexpected "
    "side-effects. Please open an issue if you need to perform in-place operations on the "
    "input to a pack hook.")


class saved_tensors_hooks:
    """Context manager that sets a pair of pack / unpack hooks for saved tensors
    (``torch.autograd.graph.saved_tensors_hooks``).

    While it is active, each tensor an op records for backward (an input or an output the
    derivative needs; ``ctx.save_for_backward``'s tensors of a custom Function) is passed to
    ``pack_hook(tensor)`` at forward time, under ``no_grad``; what it returns is stored in
    place of the tensor. When backward (or ``grad_fn._saved_<name>``, or
    ``ctx.saved_tensors``) needs the value, ``unpack_hook(packed)`` is called (once per
    saved value each time) and must return a Tensor of the value to use. Hooks nest: the
    innermost active pair is the one used. Hooks set here are per thread.

    Raises RuntimeError on entering when ``disable_saved_tensors_hooks`` is active (its
    message); RuntimeError when ``pack_hook`` modifies its input in place; TypeError (at
    backward) when ``unpack_hook`` returns something other than a Tensor. Saved values
    that went through hooks are not version-checked (PyTorch cannot track versions through
    the hooks either).
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        message = STATE.saved_hooks_disabled
        if message is not None:
            raise RuntimeError(message)
        STATE.set_modes(saved_hooks=STATE.saved_hooks + ((self.pack_hook, self.unpack_hook),))
        return self

    def __exit__(self, *exc):
        STATE.set_modes(saved_hooks=STATE.saved_hooks[:-1])
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device when backward
    unpacks them (``torch.autograd.graph.save_on_cpu``). NumPy data is on the CPU already:
    the pack hook then keeps the tensor as it is. ``pin_memory`` is accepted and has no
    effect (no pinned memory here). Raises as :class:`saved_tensors_hooks`."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            return (tensor.device, tensor.cpu())

        def unpack_from_cpu(packed):
            dev, tensor = packed
            return tensor.to(dev)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _Kept:
    """A tensor saved under :class:`allow_mutation_on_saved_tensors`: the tensor, its
    version when saved, and the copy of its value taken before it was first changed."""

    __slots__ = ("tensor", "version", "copy", "__weakref__")

    def __init__(self, tensor):
        self.tensor, self.version, self.copy = tensor, tensor._vc[0], None


class allow_mutation_on_saved_tensors(saved_tensors_hooks):
    """Tensors saved for backward may be changed in place inside this block
    (``torch.autograd.graph.allow_mutation_on_saved_tensors``): the first in-place write to
    a saved tensor (or to a view or alias of it) copies its value first, and backward uses
    that copy. Run the forward and the backward inside the same block, as in PyTorch.

    A backward with ``create_graph=True`` differentiates the copy through the history the
    value had when it was saved, so second derivatives stay right. Raises RuntimeError
    (PyTorch's "modified by an inplace operation") when a saved value was changed by a
    write that did not copy it first (an optimizer's step, ``increment_version``); a write
    through ``.numpy()`` is seen by neither chainrule nor PyTorch."""

    def __init__(self):
        kept = weakref.WeakSet()

        def pack(tensor):
            handle = _Kept(tensor)
            kept.add(handle)
            return handle

        def unpack(handle):
            if handle.copy is not None:  # with create_graph the node links the copy to
                return handle.copy           # the history the value had when it was saved
            if handle.tensor._vc[0] != handle.version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: is at version {handle.tensor._vc[0]}; expected "
                    f"version {handle.version} instead (it was changed by a write that "
                    "allow_mutation_on_saved_tensors does not see, such as one through "
                    ".numpy() or an optimizer's step)")
            return handle.tensor

        def before_write(t):
            vc = t._vc
            for handle in list(kept):
                if handle.copy is None and handle.tensor._vc is vc and vc[0] == handle.version:
                    with no_grad():
                        handle.copy = handle.tensor.detach().clone()

        super().__init__(pack, unpack)
        self._before_write = before_write

    def __enter__(self):
        super().__enter__()
        _inplace.BEFORE_WRITE.append(self._before_write)
        return self

    def __exit__(self, *exc):
        _inplace.BEFORE_WRITE.remove(self._before_write)
        return super().__exit__(*exc)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Forbid saved-tensor hooks for a block (``torch.autograd.graph.
    disable_saved_tensors_hooks``): entering :class:`saved_tensors_hooks` (or
    :class:`save_on_cpu`) inside it raises RuntimeError(``error_message``). Raises that
    RuntimeError at once when hooks are already active."""
    previous = STATE.saved_hooks_disabled
    try:
        STATE.saved_hooks_disabled = error_message
        if STATE.saved_hooks:
            raise RuntimeError(error_message)
        yield
    finally:
        STATE.saved_hooks_disabled = previous


def pack_tensor(tensor, data, hooks):
    """``hooks``' pack hook on ``tensor`` (whose saved array is ``data``), under no_grad: a
    :class:`PackedValue`. Raises RuntimeError when the hook changed the tensor in place."""
    pack, unpack = hooks
    vc = tensor._vc
    version = vc[0]
    with no_grad():
        obj = pack(tensor)
    if vc[0] != version:
        raise RuntimeError(PACK_INPLACE)
    return PackedValue(obj, unpack, getattr(data, "shape", ()))


_node.ENGINE.pack_tensor = pack_tensor  # SavedTensor.register_hooks packs through it


def _saved_input(x, data, hooks):
    """Pack a saved input: the input tensor itself when its array is the one saved, else a
    tensor of the saved (promoted) array sharing its version counter."""
    if x._data is not data:
        x = _fill(object.__new__(Tensor), data, vc=x._vc)
    return pack_tensor(x, data, hooks)


def _saved_output(data, node, nr, like, hooks):
    """Pack a saved output: a tensor of its array with ``node`` as its grad_fn."""
    t = _fill(object.__new__(Tensor), data, node, nr, like._vc if like is not None else None)
    return pack_tensor(t, data, hooks)


def _pack_recorded(op, inputs, datas, attrs, out, result):
    """The dispatcher's AFTER_OP hook while saved-tensor hooks are active: the node this op
    just recorded (the only way a result has a grad_fn of an unpacked node class) has its
    saved inputs and outputs packed by the innermost hooks."""
    hooks = STATE.saved_hooks
    if not hooks:
        return
    hooks = hooks[-1]
    if result.__class__ is tuple:
        first = next((r for r in result if r._grad_fn is not None), None)
        node = None if first is None else first._grad_fn
    else:
        node = result._grad_fn
    if node is None or node.__class__ not in PACKED:
        return
    plan = node.plan
    saved = node.saved
    if not saved or not plan.frees or plan.op is not op:
        return
    n = 1 if plan.variadic else len(op.inputs)
    new = list(saved)
    for k, slot in enumerate(plan.slots):
        value = saved[k]
        if slot < n:
            if plan.variadic:
                new[k] = [_saved_input(x, v, hooks) if isinstance(x, Tensor) else v
                          for x, v in zip(inputs, value)]
            elif isinstance(inputs[slot], Tensor):
                new[k] = _saved_input(inputs[slot], value, hooks)
        elif slot == n:
            if result.__class__ is tuple:
                new[k] = tuple(_saved_output(o, r._grad_fn, i, r, hooks)
                               if hasattr(o, "shape") else o
                               for i, (o, r) in enumerate(zip(value, result)))
            else:
                new[k] = _saved_output(value, node, 0, result, hooks)
    node.saved = tuple(new)
    node.checks = None  # PyTorch checks no versions through hooks
    node.__class__ = PACKED[node.__class__]


_dispatch.AFTER_OP.append(_pack_recorded)


# --- register_multi_grad_hook ---------------------------------------------------------------

class _MultiHandle:
    """The handle of :func:`register_multi_grad_hook`: ``remove()`` removes the hook from
    every tensor."""

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _hook_node(t):
    """The node a tensor's hooks hang on now: its grad_fn, or its leaf's AccumulateGrad
    (None when the leaf is in no graph)."""
    if isinstance(t, GradientEdge):
        return t.node
    if t._grad_fn is not None:
        return t._grad_fn
    return t._acc() if t._acc is not None else None


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Register a hook on several tensors at once (``torch.autograd.graph.
    register_multi_grad_hook``).

    ``mode="all"``: in each backward pass, once the gradients of all the tensors that the
    pass computes are there, ``fn(grads)`` is called with the list of them, None for a
    tensor the pass does not reach (or does not need: ``backward(inputs=)``,
    ``autograd.grad``). ``mode="any"``: ``fn(grad)`` is called once per pass, with the
    first of the tensors' gradients computed. ``fn``'s result is ignored (the gradients
    are not replaced). Returns a handle whose ``remove()`` removes the hook.

    Raises ValueError for another mode, as PyTorch; in "all" mode every tensor must require
    grad (RuntimeError, from ``register_hook``).
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = list(tensors)
    lock = threading.Lock()
    if mode == "all":
        n = len(tensors)
        for t in tensors:
            if not t.requires_grad:
                raise AssertionError("Expected gradient function to be set")
        tasks = weakref.WeakKeyDictionary()  # a running pass -> [count, expected, grads]

        def get_inner_hook(idx):
            def inner_hook(grad):
                key = current_pass()
                if key is None:
                    raise AssertionError("expected this hook to be called inside a backward "
                                         "call")
                with lock:
                    task = tasks.get(key)
                    if task is None:  # the first of this pass's calls
                        expected = sum(key.will_execute(_hook_node(t)) for t in tensors)
                        task = tasks[key] = [0, expected, [None] * n]
                    task[0] += 1
                    task[2][idx] = grad
                    done = task[0] >= task[1]
                    if done:
                        del tasks[key]
                if done:
                    fn(task[2])

            return inner_hook

        handles = [t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors)]
    else:
        ran = weakref.WeakSet()  # the passes where fn ran

        @functools.wraps(fn)
        def wrapped_fn(grad):
            key = current_pass()
            if key is None:
                raise AssertionError("expected this hook to be called inside a backward call")
            with lock:
                if key in ran:
                    return
                ran.add(key)
            fn(grad)

        handles = [t.register_hook(wrapped_fn) for t in tensors if t.requires_grad]
    return _MultiHandle(handles)
