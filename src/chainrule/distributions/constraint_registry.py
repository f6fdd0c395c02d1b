"""``biject_to`` and ``transform_to``: the transform from unconstrained real numbers onto
a constraint's set, as ``torch.distributions.constraint_registry`` (for optimising a
constrained parameter through an unconstrained one: ``scale = transform_to(positive)(u)``).

Registered: ``real`` (identity), ``positive``/``nonnegative`` and ``greater_than(_eq)``
(``exp`` then a shift), ``less_than`` (``-exp`` then a shift), ``interval`` /
``unit_interval`` (sigmoid then an affine map), ``independent`` (``real_vector`` too: the
base constraint's transform as an IndependentTransform). Other constraints raise
NotImplementedError, as PyTorch's registry does for unregistered ones.
"""

from __future__ import annotations

from numbers import Number

from . import constraints
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    SigmoidTransform,
    identity_transform,
)

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from constraint types to factories ``factory(constraint) -> Transform``;
    calling the registry with a constraint (an instance) builds its transform.

    Raises NotImplementedError for a constraint type with no factory."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass or instance); usable
        as a decorator when ``factory`` is omitted."""
        if factory is None:
            return lambda f: self.register(constraint, f)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        for cls in type(constraint).__mro__:
            if cls in self._registry:
                return self._registry[cls](constraint)
        raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _real(constraint):
    return identity_transform


def _greater_than(constraint):  # positive too (as PyTorch's registry resolves it)
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


def _greater_than_eq(constraint):  # nonnegative
    return ExpTransform() if isinstance(constraint.lower_bound, Number) and \
        constraint.lower_bound == 0 else _greater_than(constraint)


def _less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


def _interval(constraint):
    lo, hi = constraint.lower_bound, constraint.upper_bound
    if isinstance(lo, Number) and isinstance(hi, Number) and lo == 0 and hi == 1:
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(lo, hi - lo)])


def _independent(registry):
    def factory(constraint):  # the base's transform, its log-det summed over the dims
        return IndependentTransform(registry(constraint.base),
                                    constraint.reinterpreted_batch_ndims)
    return factory


for _registry in (biject_to, transform_to):
    _registry.register(constraints.independent, _independent(_registry))
    _registry.register(type(constraints.real), _real)
    _registry.register(constraints.greater_than, _greater_than)
    _registry.register(constraints.greater_than_eq, _greater_than_eq)
    _registry.register(constraints.less_than, _less_than)
    _registry.register(constraints.interval, _interval)
