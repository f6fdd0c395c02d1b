"""``chainrule.linalg``: linear algebra with tensor-level derivative rules."""

from ..ops.reduction import vector_norm

__all__ = ["vector_norm"]
