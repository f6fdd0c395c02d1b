"""``Variable``: PyTorch's pre-0.4 wrapper, kept for old code. ``Variable(t,
requires_grad=...)`` is a new leaf sharing ``t``'s data, and every Tensor is a Variable."""

from __future__ import annotations

from .._tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a leaf tensor sharing ``data``'s storage
    (detached from its history, as PyTorch's), requiring grad as asked. ``isinstance(t,
    Variable)`` is True for every tensor."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable: data must be a Tensor, got {type(data).__name__}")
        return data.detach().requires_grad_(bool(requires_grad))  # (any truthy value)
