"""LowRankMultivariateNormal, Wishart and LKJCholesky, as ``torch.distributions``
(lowrank_multivariate_normal.py, wishart.py, lkj_cholesky.py), through chainrule's
differentiable ``linalg`` (``cholesky``, ``solve_triangular``, ``cholesky_solve``,
``slogdet``) and ``mvlgamma``."""

from __future__ import annotations

import math
import warnings
from functools import cached_property
from numbers import Number

import numpy as np

from .. import _creation
from .. import linalg as _linalg
from .. import ops as _ops
from .._tensor import Size, Tensor
from ..backend import numpy_dtype
from ..linalg.torch_functions import diag_embed as _diag_embed
from . import constraints
from .continuous import Beta, _standard_normal
from .distribution import Distribution, _draw, as_float, broadcast_all, values_of
from .exp_family import ExponentialFamily
from .multivariate import batch_mahalanobis, precision_to_scale_tril
from .univariate import Chi2

__all__ = ["LowRankMultivariateNormal", "Wishart", "LKJCholesky"]

_LOG_2 = math.log(2)


def _mT(x):
    return _ops.transpose(x, -1, -2)


def _batch_mv(m, v):
    return _ops.squeeze(_ops.matmul(m, _ops.unsqueeze(v, -1)), -1)


def _eye_like(n, x):
    return _creation.eye(n, dtype=x.dtype, device=x.device)


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of ``I + W^T D^-1 W``."""
    m = W.shape[-1]
    K = _ops.matmul(_mT(W) / _ops.unsqueeze(D, -2), W) + _eye_like(m, W)
    return _linalg.cholesky(K)


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """``log det(W W^T + D)`` by the matrix determinant lemma."""
    diag = _ops.diagonal(capacitance_tril, 0, -2, -1)
    return 2 * _ops.log(diag).sum(-1) + _ops.log(D).sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """``x^T (W W^T + D)^-1 x`` by the Woodbury identity."""
    Wt_Dinv = _mT(W) / _ops.unsqueeze(D, -2)
    Wt_Dinv_x = _batch_mv(Wt_Dinv, x)
    return (x ** 2 / D).sum(-1) - batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


def _batch_trace_XXT(bmat):
    return (bmat ** 2).sum((-2, -1))


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``W W^T + diag(D)`` (``cov_factor`` W of shape
    ``(..., n, m)``, ``cov_diag`` D of shape ``(..., n)``), as
    ``torch.distributions.LowRankMultivariateNormal``: ``log_prob`` and ``entropy`` by the
    Woodbury identity and the determinant lemma through the ``m x m`` capacitance matrix
    ``I + W^T D^-1 W``; ``rsample = loc + W eps_W + sqrt(D) eps_D``.

    Raises ValueError for a 0-d ``loc``, a ``cov_factor`` of fewer than 2 dims or ``cov_factor``
    / ``cov_diag`` shapes that do not match ``loc``'s event or batch shape, and (when
    validating) for non-positive ``cov_diag`` entries or NaN parameters."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True
    _expand_skip = ("_unbroadcasted_cov_factor", "_unbroadcasted_cov_diag",
                    "_capacitance_tril")

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        dtype = next((numpy_dtype(v.dtype) for v in (loc, cov_factor, cov_diag)
                      if isinstance(v, Tensor) and numpy_dtype(v.dtype).kind == "f"),
                     numpy_dtype(_creation.get_default_dtype()))
        loc, cov_factor, cov_diag = (as_float(v, dtype) for v in (loc, cov_factor, cov_diag))
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape "
                             f"{Size(event_shape)}")
        loc_, cov_diag_ = _ops.unsqueeze(loc, -1), _ops.unsqueeze(cov_diag, -1)
        try:
            shape = np.broadcast_shapes(tuple(loc_.shape), tuple(cov_factor.shape),
                                        tuple(cov_diag_.shape))
        except ValueError as e:
            raise ValueError(f"Incompatible batch shapes: loc {Size(loc.shape)}, cov_factor "
                             f"{Size(cov_factor.shape)}, cov_diag {Size(cov_diag.shape)}") from e
        n1 = tuple(shape[:-1]) + (1,)
        self.cov_factor = _ops.broadcast_to(cov_factor, shape)
        self.loc = _ops.broadcast_to(loc_, n1)[..., 0]
        self.cov_diag = _ops.broadcast_to(cov_diag_, n1)[..., 0]
        batch_shape = tuple(self.loc.shape[:-1])
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def _full(self, x, extra):
        return _ops.broadcast_to(x, tuple(self._batch_shape) + extra)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        v = (self._unbroadcasted_cov_factor ** 2).sum(-1) + self._unbroadcasted_cov_diag
        return self._full(v, tuple(self._event_shape))

    @cached_property
    def scale_tril(self):
        n = self._event_shape[0]
        d_sqrt = _ops.unsqueeze(_ops.sqrt(self._unbroadcasted_cov_diag), -1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = _ops.matmul(Dinvsqrt_W, _mT(Dinvsqrt_W)) + _eye_like(n, Dinvsqrt_W)
        return self._full(d_sqrt * _linalg.cholesky(K), (n, n))

    @cached_property
    def covariance_matrix(self):
        n = self._event_shape[0]
        W = self._unbroadcasted_cov_factor
        cov = _ops.matmul(W, _mT(W)) + _diag_embed(self._unbroadcasted_cov_diag)
        return self._full(cov, (n, n))

    @cached_property
    def precision_matrix(self):
        n = self._event_shape[0]
        Wt_Dinv = (_mT(self._unbroadcasted_cov_factor)
                   / _ops.unsqueeze(self._unbroadcasted_cov_diag, -2))
        A = _linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        P = _diag_embed(1 / self._unbroadcasted_cov_diag) - _ops.matmul(_mT(A), A)
        return self._full(P, (n, n))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_w = _standard_normal(w_shape, self.loc.dtype, self.loc)
        eps_d = _standard_normal(shape, self.loc.dtype, self.loc)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + _ops.sqrt(self._unbroadcasted_cov_diag) * eps_d)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        value = self._value(value, self.loc.dtype)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return self._full(H, ())


def _mvdigamma(x, p):
    """The multivariate digamma ``sum_i digamma(x - i/2)``, ``i < p``. Raises
    AssertionError for ``x <= (p - 1) / 2``."""
    if not bool(values_of(x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    half = _creation.tensor(np.arange(p, dtype=numpy_dtype(x.dtype)) / 2, device=x.device)
    return _ops.digamma(_ops.unsqueeze(x, -1) - half).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart distribution over ``p x p`` positive-definite matrices with ``df`` degrees of
    freedom and scale matrix given as exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril``, as ``torch.distributions.Wishart``.

    ``log_prob``, ``entropy``, ``mean = df V``, ``mode = (df - p - 1) V`` (NaN for ``df <=
    p + 1``), ``variance = df (V_ij^2 + V_ii V_jj)`` as PyTorch's wishart.py. ``rsample`` is
    Bartlett's decomposition (reparameterised; the chi-squared diagonal through the Gamma
    implicit derivative); singular draws are redrawn up to ``max_try_correction`` times.
    KL between two Wisharts is the Bregman divergence of the log-normaliser.

    Raises AssertionError unless exactly one matrix is given, ValueError for a matrix of
    fewer than 2 dims or ``df <= p - 1``, and (when validating) for invalid matrices; warns
    (UserWarning) for ``df < p``."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        dtype = next((numpy_dtype(v.dtype) for v in (given[0], df)
                      if isinstance(v, Tensor) and numpy_dtype(v.dtype).kind == "f"),
                     numpy_dtype(_creation.get_default_dtype()))
        param = as_float(given[0], dtype)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = as_float(df, dtype, param)
        else:
            df = as_float(df, dtype, param)
            batch_shape = tuple(np.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool(values_of(self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{p - 1}.")
        full = _ops.broadcast_to(param, batch_shape + event_shape)
        if scale_tril is not None:
            self.scale_tril = full
        elif covariance_matrix is not None:
            self.covariance_matrix = full
        else:
            self.precision_matrix = full
        if bool(values_of(self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = param
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _linalg.cholesky(param)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(param)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        offsets = _creation.arange(p, dtype=L.dtype, device=L.device)
        return Chi2(df=_ops.unsqueeze(self.df, -1) - offsets.expand(tuple(batch_shape) + (p,)))

    def expand(self, batch_shape, _instance=None):
        """This Wishart with its parameters broadcast to ``batch_shape`` (as PyTorch's)."""
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        cov_shape = tuple(batch_shape) + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(cov_shape)
        new._batch_shape = batch_shape
        new._dist_chi2 = new._chi2(batch_shape)
        return new

    def _full(self, x):
        return _ops.broadcast_to(x, tuple(self._batch_shape) + tuple(self._event_shape))

    @cached_property
    def scale_tril(self):
        return self._full(self._unbroadcasted_scale_tril)

    @cached_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(_ops.matmul(L, _mT(L)))

    @cached_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        return self._full(_linalg.cholesky_solve(_eye_like(self._event_shape[-1], L), L))

    def _df_matrix(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = _ops.where(factor <= 0, math.nan, factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        d = _ops.diagonal(V, 0, -2, -1)
        return self._df_matrix() * (V ** 2 + _ops.unsqueeze(d, -1) * _ops.unsqueeze(d, -2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        chi = _ops.sqrt(self._dist_chi2.rsample(sample_shape))
        eps = float(np.finfo(numpy_dtype(chi.dtype)).eps)
        diag = _diag_embed(_ops.clamp(chi, min=eps))
        shape = tuple(sample_shape) + tuple(self._batch_shape) + (p, p)
        L = self._unbroadcasted_scale_tril
        below = _ops.tril(_draw(lambda g, s: g.standard_normal(s), shape,
                                numpy_dtype(L.dtype), L), -1)
        chol = _ops.matmul(L, diag + below)
        return _ops.matmul(chol, _mT(chol))

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Bartlett draws of shape ``sample_shape + batch_shape + (p, p)``; a draw that is
        not positive definite is redrawn (with a UserWarning) up to
        ``max_try_correction`` (default 10) times."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tuple(Size(sample_shape))
        sample = self._bartlett_sampling(sample_shape)
        singular = ~values_of(self.support.check(sample))
        if singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                mask = _creation.tensor(singular[..., None, None], device=sample.device)
                sample = _ops.where(mask, self._bartlett_sampling(sample_shape), sample)
                singular = ~values_of(self.support.check(sample))
                if not singular.any():
                    break
        return sample

    def _log_det_L(self):
        return _ops.log(_ops.diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)).sum(-1)

    def log_prob(self, value):
        value = self._value(value, self.df.dtype)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (-nu * (p * _LOG_2 / 2 + self._log_det_L())
                - _ops.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * _linalg.slogdet(value).logabsdet
                - _ops.diagonal(_linalg.cholesky_solve(value, L), 0, -2, -1).sum(-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._log_det_L())
                + _ops.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return (-self.precision_matrix / 2, (self.df - p - 1) / 2)

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-_linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + _ops.mvlgamma(y + (p + 1) / 2, p))


class LKJCholesky(Distribution):
    """LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices with
    ``concentration`` eta (density of the correlation matrix ``prop. det(C)^(eta - 1)``),
    as ``torch.distributions.LKJCholesky``: ``log_prob`` as PyTorch's lkj_cholesky.py;
    draws by the onion method (no rsample). Event shape ``(dim, dim)``.

    Raises ValueError for ``dim < 2`` and (when validating) for ``concentration <= 0`` or
    values that are not correlation Cholesky factors."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        c = self.concentration
        marginal_conc = c + 0.5 * (self.dim - 2)
        offset = np.concatenate([[0.0], np.arange(self.dim - 1)]).astype(numpy_dtype(c.dtype))
        offset = _creation.tensor(offset, device=c.device)
        self._beta = Beta(offset + 0.5, _ops.unsqueeze(marginal_conc, -1) - 0.5 * offset)
        super().__init__(tuple(c.shape), (dim, dim), validate_args=validate_args)

    def _expand_parts(self, new, batch_shape):
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))

    def sample(self, sample_shape=()):
        y = values_of(self._beta.sample(sample_shape))[..., None]
        shape = tuple(self._extended_shape(sample_shape))
        dt = numpy_dtype(self.concentration.dtype)

        def draw(g, s):
            u = np.tril(g.standard_normal(s), -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                u = u / np.linalg.norm(u, axis=-1, keepdims=True)
            u[..., 0, :] = 0.0
            w = np.sqrt(y) * u
            diag = np.sqrt(np.maximum(1 - (w ** 2).sum(-1), np.finfo(dt).tiny))
            return w + diag[..., None] * np.eye(self.dim)

        return _draw(draw, shape, dt, self.concentration)

    def log_prob(self, value):
        value = self._value(value, self.concentration.dtype)
        diag_elems = _ops.diagonal(value, 0, -1, -2)[..., 1:]
        order = _creation.tensor(np.arange(2, self.dim + 1), dtype=self.concentration.dtype,
                                 device=self.concentration.device)
        order = 2 * _ops.unsqueeze(self.concentration - 1, -1) + self.dim - order
        unnormalized_log_pdf = (order * _ops.log(diag_elems)).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = _ops.lgamma(alpha) * dm1
        numerator = _ops.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
