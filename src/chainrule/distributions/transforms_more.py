"""More transforms, as ``torch.distributions.transforms``: CatTransform, StackTransform,
ReshapeTransform, SoftmaxTransform, StickBreakingTransform, LowerCholeskyTransform,
PositiveDefiniteTransform, CorrCholeskyTransform and CumulativeDistributionTransform
(re-exported by ``chainrule.distributions.transforms``). Compositions of differentiable
chainrule ops; ``log_abs_det_jacobian`` where PyTorch defines it (SoftmaxTransform,
LowerCholeskyTransform and PositiveDefiniteTransform have none there, nor here)."""

from __future__ import annotations

import math

import numpy as np

from .. import _creation
from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Size
from ..backend import numpy_dtype
from ..linalg.torch_functions import diag_embed as _diag_embed
from . import constraints
from .distribution import softplus, sum_rightmost
from .transforms import Transform
from .utils import tril_matrix_to_vec, vec_to_tril_matrix

__all__ = ["CatTransform", "StackTransform", "ReshapeTransform", "SoftmaxTransform",
           "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform"]


def _pad_last(x, before, after, value):
    """``x`` with ``before``/``after`` entries of ``value`` added along the last dim."""
    parts = []
    shape = tuple(x.shape[:-1])
    if before:
        parts.append(_creation.full(shape + (before,), value, dtype=x.dtype, device=x.device))
    parts.append(x)
    if after:
        parts.append(_creation.full(shape + (after,), value, dtype=x.dtype, device=x.device))
    return _ops.cat(parts, -1)


def _clipped_sigmoid(x):
    finfo = np.finfo(numpy_dtype(x.dtype))
    return _ops.clamp(_ops.sigmoid(x), float(finfo.tiny), 1.0 - float(finfo.eps))


def _check_dim(name, t, dim, size, what):
    if not -t.dim() <= dim < t.dim():
        raise AssertionError(f"dim {dim} out of range for {name} with {t.dim()} dimensions")
    if t.shape[dim] != size:
        raise AssertionError(f"{name}.size({dim}) = {t.shape[dim]} must equal {what} {size}")


class CatTransform(Transform):
    """Applies ``tseq[i]`` to consecutive slices of lengths ``lengths[i]`` (1 each by
    default) along ``dim`` and concatenates the results, as PyTorch's CatTransform.

    Raises AssertionError for non-Transforms, a ``lengths`` of another length, or an input
    whose size along ``dim`` is not ``sum(lengths)``."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, x, fn, name):
        _check_dim(name, x, self.dim, self.length, "length")
        out, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            out.append(fn(t, _ops.narrow(x, self.dim, start, length)))
            start += length
        return _ops.cat(out, self.dim)

    def _call(self, x):
        return self._map(x, lambda t, s: t(s), "x")

    def _inverse(self, y):
        return self._map(y, lambda t, s: t.inv(s), "y")

    def log_abs_det_jacobian(self, x, y):
        _check_dim("x", x, self.dim, self.length, "length")
        _check_dim("y", y, self.dim, self.length, "length")
        parts, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            ld = t.log_abs_det_jacobian(_ops.narrow(x, self.dim, start, length),
                                        _ops.narrow(y, self.dim, start, length))
            if t.event_dim < self.event_dim:
                ld = sum_rightmost(ld, self.event_dim - t.event_dim)
            parts.append(ld)
            start += length
        dim = self.dim
        if dim >= 0:
            dim = dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return _ops.cat(parts, dim)
        return sum(parts)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def _same_params(self, other):
        return (self.dim == other.dim and self.lengths == other.lengths
                and self.transforms == other.transforms)


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice along ``dim`` and stacks the results, as
    PyTorch's StackTransform. Raises AssertionError for non-Transforms or an input whose
    size along ``dim`` is not ``len(tseq)``."""

    def __init__(self, tseq, dim=0, cache_size=0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slice(self, z):
        return [_ops.select(z, self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x):
        _check_dim("x", x, self.dim, len(self.transforms), "len(transforms)")
        return _ops.stack([t(s) for s, t in zip(self._slice(x), self.transforms)], self.dim)

    def _inverse(self, y):
        _check_dim("y", y, self.dim, len(self.transforms), "len(transforms)")
        return _ops.stack([t.inv(s) for s, t in zip(self._slice(y), self.transforms)],
                          self.dim)

    def log_abs_det_jacobian(self, x, y):
        _check_dim("x", x, self.dim, len(self.transforms), "len(transforms)")
        _check_dim("y", y, self.dim, len(self.transforms), "len(transforms)")
        return _ops.stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                           zip(self._slice(x), self._slice(y), self.transforms)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def _same_params(self, other):
        return self.dim == other.dim and self.transforms == other.transforms


def _replace_tail(shape, old, new):
    """``shape`` with its trailing ``old`` replaced by ``new``; ValueError when it does not
    end in ``old``."""
    if len(shape) < len(old):
        raise ValueError("Too few dimensions on input")
    cut = len(shape) - len(old)
    if tuple(shape[cut:]) != tuple(old):
        raise ValueError(f"Shape mismatch: expected {Size(shape[cut:])} but got {old}")
    return Size(tuple(shape[:cut]) + tuple(new))


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims from ``in_shape`` to ``out_shape`` (a bijection with
    log-det 0), as PyTorch's ReshapeTransform. Raises ValueError for shapes of different
    sizes, and from ``forward_shape``/``inverse_shape`` for shapes that do not end in
    ``in_shape``/``out_shape``."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = Size(in_shape)
        self.out_shape = Size(out_shape)
        if int(np.prod(self.in_shape)) != int(np.prod(self.out_shape)):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return _creation.zeros(batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        return _replace_tail(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return _replace_tail(shape, self.out_shape, self.in_shape)

    def _same_params(self, other):
        return self.in_shape == other.in_shape and self.out_shape == other.out_shape


def _check_vector_shape(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(Transform):
    """``y = softmax(x)`` over the last dim (not bijective: ``inv(y) = log y``), as PyTorch's
    SoftmaxTransform; no log-det."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = _ops.exp(x - _ops.amax(x, -1, keepdim=True))
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return _ops.log(y)

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        return shape

    def inverse_shape(self, shape):
        _check_vector_shape(shape)
        return shape


def _stick_offset(x):
    k = x.shape[-1]
    return _creation.tensor(np.arange(k, 0, -1, dtype=numpy_dtype(x.dtype)), device=x.device)


class StickBreakingTransform(Transform):
    """Real vectors of length ``K`` to the ``K + 1`` simplex by stick breaking, as PyTorch's
    StickBreakingTransform: ``z_i = sigmoid(x_i - log(K - i))``, ``y_i = z_i prod_{j<i}(1 -
    z_j)``, the last entry the remaining stick."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        z = _clipped_sigmoid(x - _ops.log(_stick_offset(x)))
        z_cumprod = _ops.cumprod(1 - z, -1)
        return _pad_last(z, 0, 1, 1.0) * _pad_last(z_cumprod, 1, 0, 1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = _stick_offset(y_crop)
        sf = 1 - _ops.cumsum(y_crop, -1)
        sf = _ops.clamp(sf, min=float(np.finfo(numpy_dtype(y.dtype)).tiny))
        return _ops.log(y_crop) - _ops.log(sf) + _ops.log(offset)

    def log_abs_det_jacobian(self, x, y):
        x = x - _ops.log(_stick_offset(x))
        return (-x - softplus(-x) + _ops.log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        _check_vector_shape(shape)
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _tril_exp_diag(x, fn):
    return _ops.tril(x, -1) + _diag_embed(fn(_ops.diagonal(x, 0, -2, -1)))


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular ones with a positive diagonal: the strictly lower
    part kept, the diagonal exponentiated (not bijective), as PyTorch's; no log-det."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return _tril_exp_diag(x, _ops.exp)

    def _inverse(self, y):
        return _tril_exp_diag(y, _ops.log)


class PositiveDefiniteTransform(Transform):
    """Square matrices to positive-definite ones: ``L L^T`` of LowerCholeskyTransform's
    ``L``, inverse through the Cholesky factor (not bijective), as PyTorch's; no log-det."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return _ops.matmul(L, _ops.transpose(L, -1, -2))

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(_linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """Real vectors of length ``D (D - 1) / 2`` to Cholesky factors of ``D x D`` correlation
    matrices (lower triangular, positive diagonal, unit rows), as PyTorch's
    CorrCholeskyTransform: ``tanh`` to partial correlations, then stick breaking row by
    row. ``log_abs_det_jacobian`` is PyTorch's (tanh's and the stick breaking's)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        x = _ops.tanh(x)
        eps = float(np.finfo(numpy_dtype(x.dtype)).eps)
        x = _ops.clamp(x, -1 + eps, 1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z = r ** 2
        z1m_cumprod_sqrt = _ops.cumprod(_ops.sqrt(1 - z), -1)
        r = r + _creation.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * _pad_last(z1m_cumprod_sqrt[..., :-1], 1, 0, 1.0)

    def _inverse(self, y):
        y_cumsum = 1 - _ops.cumsum(y * y, -1)
        y_cumsum_shifted = _pad_last(y_cumsum[..., :-1], 1, 0, 1.0)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / _ops.sqrt(y_cumsum_vec)
        return (_ops.log1p(t) - _ops.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        y1m_cumsum = 1 - _ops.cumsum(y * y, -1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * _ops.log(y1m_cumsum_tril).sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        _check_vector_shape(shape)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` (to the unit interval), inverse ``icdf``, log-det
    ``distribution.log_prob(x)``, as PyTorch's CumulativeDistributionTransform; the domain
    is the distribution's support."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _same_params(self, other):
        return self.distribution is other.distribution
