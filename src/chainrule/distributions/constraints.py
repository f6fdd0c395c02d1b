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
    "dependent", "dependent_property", "is_dependent", "multinomial", "positive_integer",
    "lower_triangular", "corr_cholesky", "square", "symmetric", "positive_semidefinite",
    "cat", "stack",
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


class _Dependent(Constraint):
    """A constraint that depends on other parameters (``support`` of a distribution whose
    bounds are parameters): ``check`` raises ValueError, and ``is_discrete`` / ``event_dim``
    raise NotImplementedError unless given, as ``torch.distributions.constraints.dependent``.
    """

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    """True for ``dependent`` (and ``dependent_property``) constraints."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property that is also a dependent constraint (on the class), as PyTorch's
    ``constraints.dependent_property``: on an instance it evaluates the function."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, v):
        return (v % 1 == 0) & (v <= self.upper_bound)


class _Multinomial(Constraint):
    """Non-negative counts summing to at most ``upper_bound`` (over the last dim)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def _check(self, v):
        return np.all(v >= 0, axis=-1) & (v.sum(-1) <= _np(self.upper_bound))


class _LowerTriangular(Constraint):
    event_dim = 2

    def _check(self, v):
        return np.all(np.tril(v) == v, axis=(-2, -1))


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower triangular, positive diagonal,
    rows of unit norm (to ``10 n eps``)."""

    event_dim = 2

    def _check(self, v):
        tol = np.finfo(v.dtype if v.dtype.kind == "f" else np.float64).eps * v.shape[-1] * 10
        unit = np.all(np.abs(np.linalg.norm(v, axis=-1) - 1.0) <= tol, axis=-1)
        return _LowerCholesky()._check(v) & unit


class _Square(Constraint):
    event_dim = 2

    def _check(self, v):
        return np.full(v.shape[:-2], v.shape[-2] == v.shape[-1], dtype=bool)


class _Symmetric(_Square):
    def _check(self, v):
        square = super()._check(v)
        if not square.all():
            return square
        return np.all(np.isclose(v, np.swapaxes(v, -1, -2), atol=1e-6), axis=(-2, -1))


class _PositiveSemidefinite(_Symmetric):
    def _check(self, v):
        sym = super()._check(v)
        if not sym.all():
            return sym
        return np.all(np.linalg.eigvalsh(v) >= 0, axis=-1)


class _Cat(Constraint):
    """Constraints applied to consecutive slices (of ``lengths``) along ``dim``."""

    def __init__(self, cseq, dim=0, lengths=None):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match cseq "
                                 f"({len(self.cseq)})")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def _check(self, v):
        if not -v.ndim <= self.dim < v.ndim:
            raise AssertionError(f"dim {self.dim} out of range for value with {v.ndim} "
                                 f"dimensions")
        checks, start = [], 0
        for c, length in zip(self.cseq, self.lengths):
            part = np.take(v, np.arange(start, start + length), axis=self.dim)
            checks.append(np.asarray(c._check(part)))
            start += length
        return np.concatenate(checks, self.dim)


class _Stack(Constraint):
    """One constraint per index along ``dim``."""

    def __init__(self, cseq, dim=0):
        if not all(isinstance(c, Constraint) for c in cseq):
            raise AssertionError("All elements of cseq must be Constraint instances")
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def _check(self, v):
        if not -v.ndim <= self.dim < v.ndim:
            raise AssertionError(f"dim {self.dim} out of range for value with {v.ndim} "
                                 f"dimensions")
        parts = [np.take(v, i, axis=self.dim) for i in range(v.shape[self.dim])]
        return np.stack([np.asarray(c._check(p)) for p, c in zip(parts, self.cseq)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
positive_integer = _IntegerGreaterThan(1)
multinomial = _Multinomial
lower_triangular = _LowerTriangular()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
cat = _Cat
stack = _Stack
