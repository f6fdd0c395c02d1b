"""Bijections for :class:`~chainrule.distributions.TransformedDistribution`, as
``torch.distributions.transforms``: ExpTransform, AffineTransform, SigmoidTransform,
TanhTransform, SoftplusTransform, PowerTransform, AbsTransform, ComposeTransform,
IndependentTransform and ``identity_transform``.

A transform ``t`` maps ``x`` to ``y = t(x)``; ``t.inv`` is its inverse (a transform too) and
``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` elementwise (summed over the rightmost
``event_dim`` dims for transforms with an event dim). Everything is composed of public
differentiable chainrule ops. With ``cache_size=1`` a transform remembers its last
``(x, y)`` pair, so ``t.inv(t(x))`` returns ``x`` itself (as PyTorch's cache; this is what
makes ``TransformedDistribution(Normal, TanhTransform(cache_size=1)).log_prob(sample)``
exact near ``|y| = 1``).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._tensor import Tensor
from ..backend import numpy_dtype
from . import constraints
from .distribution import softplus, sum_rightmost

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform",
           "TanhTransform", "SoftplusTransform", "PowerTransform", "AbsTransform",
           "ComposeTransform", "IndependentTransform", "identity_transform"]
# (and the structured transforms of transforms_more, which build on Transform here: the
# package puts them in this module's namespace, as torch.distributions.transforms has them)


def _broadcast_shape(shape, param):
    """``shape`` broadcast with the shape of ``param`` (a number has shape ``()``)."""
    other = tuple(param.shape) if isinstance(param, Tensor) else ()
    return tuple(np.broadcast_shapes(tuple(shape), other))


def _equal(a, b):
    """Equal numbers, or tensors equal everywhere (PyTorch's transforms' parameter test)."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        return bool(np.all(np.asarray(_ops.eq(a, b).numpy() if isinstance(a, Tensor)
                                      else _ops.eq(b, a).numpy())))
    return a == b


class Transform:
    """The base of every transform, as ``torch.distributions.transforms.Transform``.

    Subclasses define ``_call(x)``, ``_inverse(y)`` and ``log_abs_det_jacobian(x, y)``;
    ``domain``/``codomain`` are constraints, ``bijective`` and ``sign`` (+1 or -1 for a
    monotone transform) describe it. Raises ValueError for a ``cache_size`` other than 0 or
    1, and NotImplementedError for a method a subclass does not define."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached_x_y = (None, None)
        self._inv = None

    @property
    def event_dim(self):
        """The number of rightmost dims that make one event (that of the domain)."""
        return self.domain.event_dim

    @property
    def sign(self):
        raise NotImplementedError(f"{type(self).__name__} has no sign")

    @property
    def inv(self):
        """The inverse transform (``inv(self(x)) == x``)."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    def with_cache(self, cache_size=1):
        """This transform with the given cache size (itself when it already has it)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError(f"{type(self).__name__} has no log_abs_det_jacobian")

    def __eq__(self, other):
        """Parameter-free transforms are equal to any of their class (as PyTorch's
        ExpTransform, TanhTransform, ...); others compare their parameters."""
        return type(self) is type(other) and self._same_params(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def _same_params(self, other):
        return type(self) is not Transform and not any(
            k not in ("_cache_size", "_cached_x_y", "_inv") for k in vars(self))

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """The inverse of a transform (``t.inv``): calls swapped, log-det negated."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    @property
    def event_dim(self):
        return self._inv.event_dim

    def __call__(self, x):
        return self._inv._inv_call(x)

    def with_cache(self, cache_size=1):
        """The inverse of the forward transform with the given cache size."""
        return self._inv.with_cache(cache_size).inv

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def _same_params(self, other):
        return self._inv == other._inv

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class ComposeTransform(Transform):
    """``parts`` applied in order (``ComposeTransform([f, g])(x) == g(f(x))``); the
    log-det is the parts' summed, each over the dims its event does not cover."""

    def __init__(self, parts, cache_size=0):
        parts = list(parts)
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        self.parts = parts
        super().__init__(cache_size=cache_size)

    def with_cache(self, cache_size=1):
        """This composition with every part given the cache size."""
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    @property
    def event_dim(self):
        return self.domain.event_dim

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def domain(self):
        """The first part's domain, reinterpreted over as many rightmost dims as the parts
        need (PyTorch's ComposeTransform.domain)."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            event_dim += p.domain.event_dim - p.codomain.event_dim
            event_dim = max(event_dim, p.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        """The last part's codomain, reinterpreted likewise (PyTorch's
        ComposeTransform.codomain)."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for p in self.parts:
            event_dim += p.codomain.event_dim - p.domain.event_dim
            event_dim = max(event_dim, p.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _same_params(self, other):
        return self.parts == other.parts

    def log_abs_det_jacobian(self, x, y):
        """The parts' log-dets at the intermediate points (``y`` itself for the last part),
        each summed over the event dims it does not cover (PyTorch's)."""
        if not self.parts:
            return _creation.zeros_like(x)
        total = 0.0
        event_dim = self.domain.event_dim
        for i, p in enumerate(self.parts):
            y_p = y if i == len(self.parts) - 1 else p(x)
            total = total + sum_rightmost(p.log_abs_det_jacobian(x, y_p),
                                          event_dim - p.domain.event_dim)
            event_dim += p.codomain.event_dim - p.domain.event_dim
            x = y_p
        return total

    def __repr__(self):
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with its rightmost ``reinterpreted_batch_ndims`` batch dims
    treated as event dims, as ``torch.distributions.transforms.IndependentTransform``: the
    same values, the log-det summed over those dims, domain and codomain reinterpreted."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def _same_params(self, other):
        return (self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
                and self.base_transform == other.base_transform)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ExpTransform(Transform):
    """``y = exp(x)`` (real to positive); ``log |dy/dx| = x``; inverse ``log``."""

    bijective = True
    sign = +1
    codomain = constraints.positive

    def _call(self, x):
        return _ops.exp(x)

    def _inverse(self, y):
        return _ops.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive ``x``; ``log |dy/dx| = log |exponent y / x|``."""

    bijective = True
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    def forward_shape(self, shape):
        """``shape`` broadcast with the exponent's."""
        return _broadcast_shape(shape, self.exponent)

    inverse_shape = forward_shape

    def _same_params(self, other):
        return _equal(self.exponent, other.exponent)

    @property
    def sign(self):
        return _ops.sign(self.exponent) if isinstance(self.exponent, Tensor) else \
            (1 if self.exponent > 0 else -1)

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return _ops.log(_ops.abs(self.exponent * y / x))


class SigmoidTransform(Transform):
    """``y = sigmoid(x)`` (clamped into the open unit interval);
    ``log |dy/dx| = -softplus(-x) - softplus(x)``."""

    bijective = True
    sign = +1
    codomain = constraints.unit_interval

    def _call(self, x):
        finfo = np.finfo(numpy_dtype(x.dtype))
        return _ops.clamp(_ops.sigmoid(x), float(finfo.tiny), 1.0 - float(finfo.eps))

    def _inverse(self, y):
        finfo = np.finfo(numpy_dtype(y.dtype))
        y = _ops.clamp(y, float(finfo.tiny), 1.0 - float(finfo.eps))
        return _ops.log(y) - _ops.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``; ``log |dy/dx| = 2 (log 2 - x - softplus(-2 x))`` (stable for large
    ``|x|``). The inverse is ``atanh``; use ``cache_size=1`` to get ``x`` back exactly from
    a draw."""

    bijective = True
    sign = +1
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return _ops.tanh(x)

    def _inverse(self, y):
        return _ops.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - softplus(-2.0 * x))


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``; inverse ``x = y + log(-expm1(-y))``;
    ``log |dy/dx| = -softplus(-x)``."""

    bijective = True
    sign = +1
    codomain = constraints.positive

    def _call(self, x):
        return softplus(x)

    def _inverse(self, y):
        return _ops.log(-_ops.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -softplus(-x)


class AbsTransform(Transform):
    """``y = |x|`` (not bijective; ``inv(y) = y``); codomain ``positive``, as PyTorch's."""

    codomain = constraints.positive

    def _call(self, x):
        return _ops.abs(x)

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale x``; ``log |dy/dx| = log |scale|`` (broadcast to ``x``'s shape and
    summed over the rightmost ``event_dim`` dims)."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        """``real``, reinterpreted over ``event_dim`` rightmost dims."""
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    def forward_shape(self, shape):
        """``shape`` broadcast with those of ``loc`` and ``scale``."""
        return _broadcast_shape(_broadcast_shape(shape, self.loc), self.scale)

    inverse_shape = forward_shape

    def _same_params(self, other):
        return (self._event_dim == other._event_dim and _equal(self.loc, other.loc)
                and _equal(self.scale, other.scale))

    @property
    def sign(self):
        if isinstance(self.scale, Tensor):
            return _ops.sign(self.scale)
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, Tensor):
            result = _ops.log(_ops.abs(scale))
        else:
            result = _creation.full_like(x, math.log(abs(scale)))
        shape = tuple(np.broadcast_shapes(tuple(x.shape), tuple(result.shape)))
        if tuple(result.shape) != shape:
            result = _ops.broadcast_to(result, shape)
        # log |det| of the map on the whole event: log |scale| once per event entry (PyTorch
        # sums over scale's own event dims only, which undercounts a broadcast scale)
        return sum_rightmost(result, self._event_dim)

    def __repr__(self):
        return f"AffineTransform(loc={self.loc}, scale={self.scale})"
