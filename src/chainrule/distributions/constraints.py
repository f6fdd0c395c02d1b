"""``chainrule.distributions.constraints``: the sets that parameters and values of a
distribution must lie in, as in ``torch.distributions.constraints``.

``constraint.check(value)`` returns a bool Tensor: one entry per value for elementwise
constraints, with the rightmost ``event_dim`` dims reduced for the vector and matrix ones
(``simplex``, ``real_vector``, ``lower_cholesky``, ``positive_definite``). Checks read the
values (no gradient); they are used by ``validate_args=True``.
"""

from __future__ import annotations

import numpy as np

from .._tensor import Tensor, wrap
from ..backend import beside

__all__ = [
    "Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean",
    "nonnegative_integer", "integer_interval", "interval", "half_open_interval",
    "greater_than", "greater_than_eq", "less_than", "simplex", "real_vector",
    "lower_cholesky", "positive_definite",
    "independent", "one_hot",
]


def _np(value):
    if isinstance(value, Tensor):
        return np.asarray(value.detach().numpy())
    return np.asarray(value)


class Constraint:
    """A set of values. ``check(value)`` gives a bool Tensor (True inside the set);
    ``event_dim`` counts the rightmost dims that make one event; ``is_discrete`` is True for
    integer-valued sets."""

    is_discrete = False
    event_dim = 0

    def _check(self, v):  # pragma: no cover - every constraint overrides it
        raise NotImplementedError

    def check(self, value):
        """A bool Tensor, True where ``value`` lies in the set."""
        out = np.asarray(self._check(_np(value)))  # checked on the host, returned beside it
        return wrap(beside(out, value._data) if isinstance(value, Tensor) else out)

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Real(Constraint):
    def _check(self, v):
        return v == v  # not NaN (infinities pass, as torch's constraints.real)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, v):
        return v > _np(self.lower_bound)

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def _check(self, v):
        return v >= _np(self.lower_bound)

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, v):
        return v < _np(self.upper_bound)

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound, open_upper=False):
        self.lower_bound, self.upper_bound, self.open_upper = lower_bound, upper_bound, open_upper

    def _check(self, v):
        lo, hi = _np(self.lower_bound), _np(self.upper_bound)
        return (v >= lo) & ((v < hi) if self.open_upper else (v <= hi))

    def __repr__(self):
        name = "HalfOpenInterval" if self.open_upper else "Interval"
        return f"{name}(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Boolean(Constraint):
    is_discrete = True

    def _check(self, v):
        return (v == 0) | (v == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def _check(self, v):
        return (v % 1 == 0) & (v >= _np(self.lower_bound)) & (v <= _np(self.upper_bound))

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def _check(self, v):
        return (v % 1 == 0) & (v >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def _check(self, v):
        return np.all(v >= 0, axis=-1) & (np.abs(v.sum(-1) - 1) < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def _check(self, v):
        return np.all((v == 0) | (v == 1), axis=-1) & (v.sum(-1) == 1)


class _Independent(Constraint):
    def __init__(self, base, reinterpreted_batch_ndims):
        self.base, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.event_dim = base.event_dim + reinterpreted_batch_ndims
        self.is_discrete = base.is_discrete

    @property
    def base_constraint(self):
        """The constraint on each entry (PyTorch's name for it)."""
        return self.base

    def _check(self, v):
        if v.ndim < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {v.ndim}")
        ok = np.asarray(self.base._check(v))
        n = self.reinterpreted_batch_ndims
        return ok.reshape(ok.shape[:ok.ndim - n] + (-1,)).all(-1) if n else ok

    def __repr__(self):
        return f"IndependentConstraint({self.base!r}, {self.reinterpreted_batch_ndims})"


class _LowerCholesky(Constraint):
    event_dim = 2

    def _check(self, v):
        lower = np.all(np.tril(v) == v, axis=(-2, -1))
        return lower & np.all(np.diagonal(v, axis1=-2, axis2=-1) > 0, axis=-1)


class _PositiveDefinite(Constraint):
    event_dim = 2

    def _check(self, v):
        symmetric = np.all(np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6), axis=(-2, -1))
        flat = v.reshape((-1,) + v.shape[-2:])
        pd = np.array([_cholesky_ok(m) for m in flat], dtype=bool).reshape(v.shape[:-2])
        return symmetric & pd


def _cholesky_ok(m):
    try:
        np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        return False
    return bool(np.isfinite(m).all())


real = _Real()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
boolean = _Boolean()
nonnegative_integer = _IntegerGreaterThan(0)
simplex = _Simplex()
one_hot = _OneHot()
real_vector = _Independent(real, 1)
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
integer_interval = _IntegerInterval
independent = _Independent


def half_open_interval(lower_bound, upper_bound):
    """The set ``[lower_bound, upper_bound)``."""
    return _Interval(lower_bound, upper_bound, open_upper=True)
