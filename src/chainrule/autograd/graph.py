"""``torch.autograd.graph``'s names that apply here: ``Node`` (the base class of every
``grad_fn``, with ``register_hook``, ``register_prehook``, ``metadata``, ``name()`` and
``next_functions``), ``increment_version``, and the saved-tensor contexts.

``save_on_cpu`` and ``disable_saved_tensors_hooks`` change nothing here (tensors already
live on the CPU, and no saved-tensor hooks exist); ``saved_tensors_hooks`` raises
NotImplementedError: chainrule keeps saved values as they are and cannot call pack/unpack
hooks, so a hook with an effect would silently not run.
"""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

from .._node import Node

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


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


class saved_tensors_hooks:
    """Not supported (see the module docstring): raises NotImplementedError."""

    def __init__(self, pack_hook, unpack_hook):
        raise NotImplementedError(
            "saved_tensors_hooks: chainrule keeps the values a backward pass needs as they "
            "are and does not call pack/unpack hooks on them")


@contextlib.contextmanager
def save_on_cpu(pin_memory=False, device_type="cuda"):
    """Saved values stay where they are (on the CPU already, for NumPy data)."""
    yield


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Nothing to disable: chainrule has no saved-tensor hooks."""
    yield
