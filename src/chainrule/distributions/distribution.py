"""The base class of ``chainrule.distributions`` and the helpers its subclasses share."""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._state import no_grad
from .._tensor import Size, Tensor, wrap
from ..backend import beside, numpy_dtype
from . import constraints as _constraints

__all__ = ["Distribution", "broadcast_all"]


def _float_dtype(values):
    for v in values:
        if isinstance(v, Tensor) and numpy_dtype(v.dtype).kind == "f":
            return numpy_dtype(v.dtype)
    return numpy_dtype(_creation.get_default_dtype())


def as_float(value, dtype, like=None):
    """``value`` as a Tensor of the float ``dtype`` (Tensors of that dtype pass through, so
    their graph is kept; numbers and arrays are wrapped, on the device of the Tensor
    ``like`` when given)."""
    if isinstance(value, Tensor):
        return value if numpy_dtype(value.dtype) == dtype else _ops.to_dtype(value, dtype)
    if isinstance(value, (int, float, np.ndarray, np.generic, list, tuple)):
        return beside_of(like, np.array(value, dtype=dtype))
    raise ValueError(f"Input arguments must all be instances of numbers or Tensors, got "
                     f"{type(value).__name__}")


def broadcast_all(*values):
    """The arguments as Tensors of one float dtype (that of the first float Tensor among them,
    else the default dtype), broadcast to one shape, as ``torch.distributions.utils.
    broadcast_all``. Raises ValueError for an argument that is neither a number nor a
    Tensor (or array)."""
    dtype = _float_dtype(values)
    like = next((v for v in values if isinstance(v, Tensor)), None)  # numbers go beside it
    tensors = [as_float(v, dtype, like) for v in values]
    shape = tuple(np.broadcast_shapes(*[tuple(t.shape) for t in tensors]))
    return tuple(t if tuple(t.shape) == shape else _ops.broadcast_to(t, shape) for t in tensors)


def sum_rightmost(value, dim):
    """``value`` summed over its rightmost ``dim`` dims."""
    if dim == 0:
        return value
    return value.sum(dim=tuple(range(-dim, 0)))


def clamp_probs(probs):
    """Probabilities clamped to ``[eps, 1 - eps]`` (eps of their dtype)."""
    eps = float(np.finfo(numpy_dtype(probs.dtype)).eps)
    return _ops.clamp(probs, eps, 1 - eps)


def logits_to_probs(logits, is_binary=False):
    """``sigmoid(logits)`` (binary) or ``softmax(logits, -1)``."""
    return _ops.sigmoid(logits) if is_binary else _ops.softmax(logits, -1)


def probs_to_logits(probs, is_binary=False):
    """``log(p) - log1p(-p)`` (binary) or ``log(p)``, of clamped probabilities."""
    ps = clamp_probs(probs)
    return _ops.log(ps) - _ops.log1p(-ps) if is_binary else _ops.log(ps)


def softplus(x):
    """``log(1 + e^x)`` without the linear cut-off of ``nn.functional.softplus``."""
    return _ops.softplus(x, threshold=math.inf)


def beside_of(like, array):
    """NumPy ``array`` as a Tensor on the device of the Tensor ``like`` (on the CPU when
    ``like`` is None): host-side draws and constants that then meet ``like``."""
    return wrap(array if like is None else beside(array, like._data))


def values_of(t):
    """The NumPy values of a Tensor (no gradient)."""
    return np.asarray(t.detach().numpy())


def as_shape(sample_shape):
    """A sample shape (an int or a sequence of ints) as a tuple."""
    if isinstance(sample_shape, int):
        return (sample_shape,)
    return tuple(int(s) for s in sample_shape)


class Distribution:
    """The base of every distribution, as ``torch.distributions.Distribution``.

    ``batch_shape`` is the shape of independent (not identically distributed) draws,
    ``event_shape`` that of one draw; ``sample(sample_shape)`` returns a tensor of shape
    ``sample_shape + batch_shape + event_shape`` and ``log_prob(value)`` one of shape
    ``sample_shape + batch_shape``. With ``validate_args`` (default True, as PyTorch's outside
    ``python -O``; change it with :meth:`set_default_validate_args`) invalid parameters raise
    ValueError at construction, and values outside the support raise ValueError in
    ``log_prob``. Draws come from chainrule's default generator (``chainrule.manual_seed``).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints: dict = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument validation on or off for distributions made afterwards."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if _constraints.is_dependent(constraint):
                    continue  # bounds given by other parameters (PyTorch skips these too)
                lazy = isinstance(getattr(type(self), param, None), cached_property)
                if lazy and param not in self.__dict__:
                    continue  # computed from the other parameterisation
                value = getattr(self, param)
                valid = values_of(constraint.check(value))
                if not valid.all():
                    raise ValueError(
                        f"Expected parameter {param} (Tensor of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")

    @property
    def batch_shape(self):
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one draw."""
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self):
        """``variance.sqrt()``."""
        return _ops.sqrt(self.variance)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters broadcast (as views) to the larger
        ``batch_shape``, as ``torch.distributions.Distribution.expand``: every tensor
        attribute whose leading dims are the current batch shape is expanded to
        ``batch_shape`` followed by its other dims (except those named in ``_expand_skip``,
        such as MultivariateNormal's unbroadcast Cholesky factor), and every distribution it
        is built from with this batch shape (LogNormal's and HalfNormal's base,
        OneHotCategorical's Categorical) is expanded likewise. Raises RuntimeError (from
        ``expand``) when the batch shape does not broadcast to ``batch_shape``."""
        batch_shape = Size(as_shape(batch_shape))
        new = _instance if _instance is not None else type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        old = tuple(self._batch_shape)
        for k, v in self.__dict__.items():
            if k in self._expand_skip:
                continue
            if isinstance(v, Tensor) and tuple(v.shape[:len(old)]) == old:
                new.__dict__[k] = v.expand(tuple(batch_shape) + tuple(v.shape[len(old):]))
            elif isinstance(v, Distribution) and tuple(v.batch_shape) == old:
                new.__dict__[k] = v.expand(batch_shape)  # a part with this batch shape
        self._expand_parts(new, batch_shape)
        new._batch_shape = batch_shape
        return new

    #: Tensor attributes that are not batch-shaped (kept as they are by :meth:`expand`).
    _expand_skip: tuple = ()

    def _expand_parts(self, new, batch_shape):
        """Expand the distributions ``new`` is built from whose batch shape is not this one
        (those with this batch shape are expanded by :meth:`expand` itself)."""

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} has no enumerate_support")

    def _extended_shape(self, sample_shape=()):
        return Size(as_shape(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without gradient."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised draw, differentiable with respect to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n):
        """``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no log_prob")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} has no icdf")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} has no entropy")

    def perplexity(self):
        """``exp(entropy())``."""
        return _ops.exp(self.entropy())

    def _value(self, value, dtype):
        """``value`` as a Tensor, checked against the support when validating."""
        if not isinstance(value, Tensor):
            value = _creation.tensor(np.asarray(value, dtype=dtype))
        if self._validate_args:
            self._validate_sample(value)
        return value

    def _validate_sample(self, value):
        event = len(self._event_shape)
        if tuple(value.shape[len(value.shape) - event:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual, expected = tuple(value.shape), tuple(self._batch_shape + self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual} vs {expected}.")
        support = self.support
        if support is not None and not values_of(support.check(value)).all():
            raise ValueError(f"Expected value argument (Tensor of shape {actual}) to be within "
                             f"the support ({support!r}) of the distribution {self!r}, but "
                             f"found invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{k}: {self.__dict__[k] if self.__dict__[k].numel() == 1 else self.__dict__[k].shape}"
            for k in names)
        return f"{type(self).__name__}({args})"


def _draw(fn, shape, dtype, like=None):
    """A Tensor of ``fn(generator, shape)`` from the default generator, in ``dtype``, on
    ``like``'s device (drawn on the host, then copied there)."""
    data = fn(_creation.default_generator, tuple(shape))
    return beside_of(like, np.asarray(data).astype(numpy_dtype(dtype)))
