"""MultivariateNormal and Independent."""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from .. import _creation
from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Tensor
from ..backend import numpy_dtype
from . import constraints
from .distribution import Distribution, _draw, as_float, sum_rightmost

__all__ = ["MultivariateNormal", "Independent"]


def _mT(x):
    return _ops.transpose(x, -1, -2)


def batch_mahalanobis(L, x):
    """``x^T (L L^T)^-1 x`` over the last dim of ``x`` by one triangular solve ``L^-1 x``
    (batch dims of ``L`` and ``x`` broadcast)."""
    batch = np.broadcast_shapes(tuple(L.shape[:-2]), tuple(x.shape[:-1]))
    n = L.shape[-1]
    L = _ops.broadcast_to(L, batch + (n, n))
    x = _ops.broadcast_to(x, batch + (n,))
    z = _linalg.solve_triangular(L, _ops.unsqueeze(x, -1), upper=False)
    return (z ** 2).sum((-2, -1))


def precision_to_scale_tril(P):
    """The lower Cholesky factor ``L`` of ``P^-1`` (``L L^T = P^-1``) without inverting
    ``P``: with ``F`` the flip of both matrix dims, ``chol(F P F)`` flipped back and
    transposed is ``L^-1``, then one triangular solve (PyTorch's multivariate_normal.py)."""
    Lf = _linalg.cholesky(_ops.flip(P, (-2, -1)))
    L_inv = _mT(_ops.flip(Lf, (-2, -1)))
    eye = _creation.eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return _linalg.solve_triangular(L_inv, eye, upper=False)


class MultivariateNormal(Distribution):
    """Multivariate normal distribution ``N(loc, Sigma)`` with event shape ``(n,)``, given
    ``loc`` (shape ``(..., n)``) and exactly one of ``covariance_matrix`` (``Sigma``),
    ``precision_matrix`` (``Sigma^-1``) or ``scale_tril`` (lower-triangular ``L`` with
    positive diagonal, ``Sigma = L L^T``), each ``(..., n, n)``; batch dims of ``loc`` and
    the matrix broadcast. As ``torch.distributions.MultivariateNormal``.

    Internally ``L`` is used throughout: ``rsample = loc + L eps`` (``eps ~ N(0, I)``),
    ``log_prob(x) = -(n log 2 pi + |L^-1 (x - loc)|^2) / 2 - sum log diag L`` (one triangular
    solve, no inverse), ``entropy = n (1 + log 2 pi) / 2 + sum log diag L``, ``variance =
    diag(L L^T)``. All differentiable through ``linalg.cholesky`` and
    ``linalg.solve_triangular``.

    Raises ValueError for a 0-d ``loc``, a matrix of fewer than 2 dims, not exactly one
    matrix argument, and (when validating) a covariance or precision matrix that is not
    symmetric positive definite or a ``scale_tril`` that is not lower triangular with a
    positive diagonal.
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _expand_skip = ("_unbroadcasted_scale_tril",)  # broadcast where used, as in PyTorch

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        dtype = next((numpy_dtype(v.dtype) for v in (loc, given[0])
                      if isinstance(v, Tensor) and numpy_dtype(v.dtype).kind == "f"),
                     numpy_dtype(_creation.get_default_dtype()))
        loc = as_float(loc, dtype)
        matrix = as_float(given[0], dtype)
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name = ("scale_tril" if scale_tril is not None else
                "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             f"leading batch dimensions")
        batch = tuple(np.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        n = matrix.shape[-1]
        setattr(self, name, _ops.broadcast_to(matrix, batch + (n, n)))
        self.loc = _ops.broadcast_to(loc, batch + (loc.shape[-1],))
        super().__init__(batch, tuple(self.loc.shape[-1:]), validate_args=validate_args)
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = _linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(matrix)

    def _full(self, x, extra):
        return _ops.broadcast_to(x, tuple(self._batch_shape) + extra)

    @cached_property
    def scale_tril(self):
        n = self._event_shape[0]
        return self._full(self._unbroadcasted_scale_tril, (n, n))

    @cached_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return self._full(_ops.matmul(L, _mT(L)), (n, n))

    @cached_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        L_inv = _linalg.solve_triangular(L, _creation.eye(n, dtype=L.dtype, device=L.device),
                                      upper=False)
        return self._full(_ops.matmul(_mT(L_inv), L_inv), (n, n))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        n = self._event_shape[0]
        return self._full((self._unbroadcasted_scale_tril ** 2).sum(-1), (n,))

    def _half_log_det(self):
        L = self._unbroadcasted_scale_tril
        return _ops.log(_ops.diagonal(L, dim1=-2, dim2=-1)).sum(-1)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _draw(lambda g, s: g.standard_normal(s), shape, numpy_dtype(self.loc.dtype),
                    self.loc)
        L = self._unbroadcasted_scale_tril
        return self.loc + _ops.squeeze(_ops.matmul(L, _ops.unsqueeze(eps, -1)), -1)

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        n = self._event_shape[0]
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return self._full(h, ())


class Independent(Distribution):
    """Reinterprets the rightmost ``reinterpreted_batch_ndims`` batch dims of
    ``base_distribution`` as event dims, as ``torch.distributions.Independent``:
    ``log_prob`` and ``entropy`` are the base's summed over those dims; moments and draws
    are the base's.

    Raises ValueError when ``reinterpreted_batch_ndims`` exceeds the base's batch dims.
    """

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        base = base_distribution
        if reinterpreted_batch_ndims > len(base.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= "
                             f"len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {len(base.batch_shape)}")
        shape = tuple(base.batch_shape) + tuple(base.event_shape)
        cut = len(shape) - (reinterpreted_batch_ndims + len(base.event_shape))
        self.base_dist = base
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return False if self.reinterpreted_batch_ndims > 0 else self.base_dist.has_enumerate_support

    @property
    def support(self):
        base = self.base_dist.support
        return None if base is None else constraints.independent(
            base, self.reinterpreted_batch_ndims)

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def enumerate_support(self, expand=True):
        """The base's support (only with ``reinterpreted_batch_ndims == 0``, as PyTorch).

        Raises NotImplementedError for a cartesian product of reinterpreted dims."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def _expand_parts(self, new, batch_shape):
        extra = tuple(self._event_shape)[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + extra)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
