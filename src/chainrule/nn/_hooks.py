"""Module hooks, as ``torch.nn.Module``'s: forward pre-hooks and hooks, and full backward
(pre-)hooks.

Backward hooks work as PyTorch's ``BackwardHook``: the tensors a module is called with
pass through one identity ``autograd.Function``, its outputs through another. The output
side's backward receives ``grad_output`` (backward pre-hooks may replace it); the input
side's backward receives ``grad_input``, the cotangents of the module's tensor inputs, and
calls each hook with ``(module, grad_input, grad_output)`` (a hook may replace
``grad_input``). When no input requires grad, the hooks get ``grad_input`` of Nones, from
the output side.
"""

from __future__ import annotations

import warnings

from .._state import is_grad_enabled
from .._tensor import Tensor
from ..autograd.function import Function


class RemovableHandle:
    """Returned by the ``register_*hook`` methods: ``remove()`` unregisters the hook (also
    as a context manager)."""

    _next_id = 0

    def __init__(self, table, on_remove=None, sides=()):
        self.table = table
        self.sides = sides  # the side tables of the hook's flags (see add_hook)
        self.id = RemovableHandle._next_id
        self.on_remove = on_remove
        RemovableHandle._next_id += 1

    def remove(self):
        self.table.pop(self.id, None)
        for side in getattr(self, "sides", ()):
            side.pop(self.id, None)
        if getattr(self, "on_remove", None) is not None:
            self.on_remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# hooks that every module runs (``torch.nn.modules.module.register_module_*_hook``),
# before its own; tables as a module's
GLOBAL_HOOKS = {"_forward_pre_hooks": {}, "_forward_hooks": {}, "_backward_pre_hooks": {},
                "_backward_hooks": {}, "_forward_hooks_with_kwargs": {},
                "_forward_hooks_always_called": {}}


def add_hook(table, hook, prepend, extra=None, on_remove=None, flags=None):
    """Register ``hook`` in ``table`` (a dict in call order).

    ``flags`` None: the entry is ``(hook, extra)`` (the state-dict hook tables). Otherwise
    the entry is the hook itself, as in PyTorch's tables (``module._forward_pre_hooks``
    maps ids to hooks), and ``flags`` lists ``(side table, on)`` pairs: the hook's id is
    entered in each side table whose flag is on (PyTorch's ``_forward_hooks_with_kwargs``,
    ``_forward_hooks_always_called``) and removed from all of them with the hook."""
    handle = RemovableHandle(table, on_remove, tuple(side for side, _ in flags or ()))
    entry = (hook, extra) if flags is None else hook
    for side, on in flags or ():
        if on:
            side[handle.id] = True
    if prepend:
        items = list(table.items())
        table.clear()
        table[handle.id] = entry
        table.update(items)
    else:
        table[handle.id] = entry
    return handle


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


class _State:
    """What one call's input and output sides share: where the tensors are among the
    positional arguments and outputs, and the ``grad_output`` of this backward pass."""

    def __init__(self, module):
        self.module = module
        self.n_inputs = self.n_outputs = 0
        self.input_index = self.output_index = None
        self.grad_output = None


def _pack(index, values, size):
    out = [None] * size
    for i, v in zip(index, values):
        out[i] = v
    return tuple(out)


class _HookedInputs(Function):
    """Identity on the module's input tensors (those that do not require grad are marked
    non-differentiable, and get zeros, as in PyTorch); its backward calls the hooks."""

    @staticmethod
    def forward(ctx, state, *xs):
        ctx.state = state
        outs = tuple(x.view_as(x) for x in xs)
        ctx.mark_non_differentiable(*(o for x, o in zip(xs, outs) if not x.requires_grad))
        return outs

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        if state.grad_output is None:  # reached without passing the outputs (double backward)
            return (None, *grads)
        module = state.module
        grad_input = _pack(state.input_index, grads, state.n_inputs)
        for hook in _hooks_of(module, "_backward_hooks"):
            result = hook(module, grad_input, state.grad_output)
            if result is not None:
                grad_input = _checked(result, grad_input, "grad_input")
        state.grad_output = None
        return (None, *(grad_input[i] for i in state.input_index))


class _HookedOutputs(Function):
    """Identity on the module's output tensors; its backward runs the backward pre-hooks
    on ``grad_output`` (None for an output that got no gradient) and keeps it for the
    input side."""

    @staticmethod
    def forward(ctx, state, *ys):
        ctx.state = state
        ctx.set_materialize_grads(False)
        return tuple(y.view_as(y) for y in ys)

    @staticmethod
    def backward(ctx, *grads):
        state = ctx.state
        module = state.module
        grad_output = _pack(state.output_index, grads, state.n_outputs)
        for hook in _hooks_of(module, "_backward_pre_hooks"):
            result = hook(module, grad_output)
            if result is not None:
                grad_output = _checked(result, grad_output, "grad_output", "pre ")
        state.grad_output = grad_output
        if state.input_index is None:  # no input requires grad: the hooks are called here
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients.",
                          stacklevel=2)
            nones = (None,) * state.n_inputs
            for hook in _hooks_of(module, "_backward_hooks"):
                result = hook(module, nones, grad_output)
                if result is not None and not all(r is None for r in _as_tuple(result)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            state.grad_output = None
        return (None, *(grad_output[i] for i in state.output_index))


def _checked(result, old, what, pre=""):
    if len(result) != len(old):
        raise RuntimeError(f"Backward {pre}hook returned an invalid number of {what}, got "
                           f"{len(result)}, but expected {len(old)}")
    return tuple(result)


def _wrap_tensors(function, state, values):
    """``values`` with its tensors passed through ``function`` (when one requires grad and
    grad mode is on); the tensors' positions, or None."""
    index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not (is_grad_enabled() and any(values[i].requires_grad for i in index)):
        return values, None
    new = _as_tuple(function.apply(state, *(values[i] for i in index)))
    values = list(values)
    for i, t in zip(index, new):
        values[i] = t
    return tuple(values), index


def _hooks_of(module, table):
    """The hooks of the global table, then of the module's own."""
    return [*GLOBAL_HOOKS[table].values(), *module.__dict__[table].values()]


def _flagged(module, table, *sides):
    """``(id, hook, flag, ...)`` for the hooks of the global table, then of the module's
    own, with each flag read from its side table (see add_hook)."""
    own = module.__dict__
    rows = []
    for where in (GLOBAL_HOOKS, own):
        flags = [where.get(side) or {} for side in sides]
        rows += [(i, hook, *(i in f for f in flags))
                 for i, hook in (where.get(table) or {}).items()]
    return rows


def call_with_hooks(module, args, kwargs):
    """``module(*args, **kwargs)`` with its registered hooks (and the global ones, first).

    As PyTorch's, when the pre-hooks, ``forward`` or a forward hook raises, the forward
    hooks registered with ``always_call=True`` that have not run yet are called (with the
    output so far, or None) before the error propagates; an error they raise themselves
    is turned into a warning."""
    forward_hooks = _flagged(module, "_forward_hooks", "_forward_hooks_with_kwargs",
                             "_forward_hooks_always_called")
    called = set()
    output = None
    try:
        for _, hook, with_kwargs in _flagged(module, "_forward_pre_hooks",
                                             "_forward_pre_hooks_with_kwargs"):
            if with_kwargs:
                result = hook(module, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(module, args)
                if result is not None:
                    args = _as_tuple(result)
        state = None
        if module._backward_hooks or module._backward_pre_hooks or \
                GLOBAL_HOOKS["_backward_hooks"] or GLOBAL_HOOKS["_backward_pre_hooks"]:
            state = _State(module)
            state.n_inputs = len(args)
            args, state.input_index = _wrap_tensors(_HookedInputs, state, tuple(args))
        output = module.forward(*args, **kwargs)
        for hook_id, hook, with_kwargs, always_call in forward_hooks:
            if always_call:
                called.add(hook_id)
            result = hook(module, args, kwargs, output) if with_kwargs else \
                hook(module, args, output)
            if result is not None:
                output = result
        if state is not None:
            outs = _as_tuple(output)
            state.n_outputs = len(outs)
            outs, state.output_index = _wrap_tensors(_HookedOutputs, state, outs)
            output = outs if isinstance(output, tuple) else outs[0]
        return output
    except Exception:
        for hook_id, hook, with_kwargs, always_call in forward_hooks:
            if not always_call or hook_id in called:
                continue
            try:
                result = hook(module, args, kwargs, output) if with_kwargs else \
                    hook(module, args, output)
                if result is not None:
                    output = result
            except Exception as e:
                where = "global module" if hook_id in GLOBAL_HOOKS["_forward_hooks"] \
                    else "module"
                warnings.warn(f"{where} forward hook with ``always_call=True`` raised an "
                              "exception that was silenced as another error was raised in "
                              f"forward: {e}", stacklevel=2)
        raise
