"""The rest of ``torch.linalg``, as exact compositions of the table's primitives (so their
gradients, to any order, come from those rules): vecdot, diagonal, vander, matrix_rank,
the ``_ex`` variants (solve_ex, inv_ex, cholesky_ex), householder_product, tensorinv and
tensorsolve; and LAPACK's LDL^T factorization (ldl_factor, ldl_solve), which is not
differentiable (as in PyTorch) and says so.
"""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np

from .._dispatch import ShapeError
from .._tensor import Tensor, wrap
from ..backend import backend_of, beside, dtype_kind, numpy_dtype
from ..ops import where
from ._common import _is_vector_rhs

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve", "matmul", "vecdot", "diagonal",
           "vander", "matrix_rank", "solve_ex", "inv_ex", "cholesky_ex", "householder_product",
           "tensorinv", "tensorsolve"]

SolveExResult = collections.namedtuple("linalg_solve_ex", ["result", "info"])
LDLResult = collections.namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LDLExResult = collections.namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
InvExResult = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
CholeskyExResult = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])


def _t(x):
    return x if isinstance(x, Tensor) else wrap(np.asarray(x))


def _no_grad_input(name, *xs):
    """These factorizations are not differentiable (as in PyTorch): an input that requires
    grad, or carries a forward-mode tangent, raises here rather than giving a derivative
    that silently misses their part (a zero tangent)."""
    from .._dual import tangent_of
    from .._state import STATE, is_grad_enabled

    if (is_grad_enabled() and any(isinstance(x, Tensor) and x.requires_grad for x in xs)) \
            or (STATE.dual_level and any(tangent_of(x) is not None for x in xs)):
        raise NotImplementedError(
            f"linalg.{name}: the derivative is not implemented (as in PyTorch); pass "
            "A.detach(), or use linalg.solve / linalg.cholesky / linalg.lu, which are "
            "differentiable")


def _sytrf(A, name):
    from scipy.linalg import lapack

    A = _t(A)
    _no_grad_input(name, A)
    dtype = A.detach().numpy().dtype  # float32 in, float32 out (computed in float64)
    a = np.asarray(A.detach().numpy(), dtype=float)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.{name}: A must be a batch of square matrices, got shape "
                         f"{a.shape}")
    flat = a.reshape((math.prod(a.shape[:-2]),) + a.shape[-2:])  # (0 x 0 works)
    LD = np.empty_like(flat)
    piv = np.empty(flat.shape[:2], dtype=np.int32)
    info = np.empty(flat.shape[0], dtype=np.int32)
    for b, m in enumerate(flat):
        ldu, ipiv, inf = lapack.dsytrf(m, lower=1)
        LD[b], piv[b], info[b] = np.tril(ldu), ipiv, inf
    batch = a.shape[:-2]
    d = A._data  # computed on the host (LAPACK), returned beside A
    return (wrap(beside(LD.reshape(a.shape).astype(dtype), d)),
            wrap(beside(piv.reshape(batch + a.shape[-1:]), d)),
            wrap(beside(info.reshape(batch), d)))


def ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)``: LAPACK's Bunch-Kaufman factorization ``P A P^T = L D L^T`` of a
    symmetric ``A`` (..., n, n) (its lower triangle is read), in LAPACK's compact form
    (sytrf): ``LD`` holds ``L`` below the diagonal and ``D``'s blocks on it; ``pivots``
    int32, 1-based (negative for 2x2 blocks), as ``torch.linalg.ldl_factor``. Not
    differentiable (as in PyTorch): an ``A`` that requires grad raises
    NotImplementedError."""
    LD, piv, _ = _sytrf(A, "ldl_factor")
    return LDLResult(LD, piv)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """:func:`ldl_factor` plus LAPACK's ``info`` (0: success; i > 0: D_ii is exactly 0)."""
    return LDLExResult(*_sytrf(A, "ldl_factor_ex"))


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """Solve ``A X = B`` from :func:`ldl_factor`'s output (LAPACK's sytrs), as
    ``torch.linalg.ldl_solve``. Not differentiable (as in PyTorch)."""
    from scipy.linalg import lapack

    LD, pivots, B = _t(LD), _t(pivots), _t(B)
    _no_grad_input("ldl_solve", LD, B)
    dtype = np.result_type(LD.detach().numpy().dtype, B.detach().numpy().dtype)
    ld, piv = np.asarray(LD.detach().numpy(), dtype=float), np.asarray(pivots.numpy())
    b = np.asarray(B.detach().numpy(), dtype=float)
    if b.ndim < 2 or b.shape[-2] != ld.shape[-1]:
        raise ShapeError(f"linalg.ldl_solve: B of shape {b.shape} does not fit LD of shape "
                         f"{ld.shape}")
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    count = math.prod(batch)
    if count == 0 or b.size == 0:  # an empty batch, 0x0 matrices or no right-hand sides
        return wrap(beside(np.zeros(batch + b.shape[-2:], dtype=dtype), B._data))
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((count,) + ld.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape((count, piv.shape[-1]))
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((count,) + b.shape[-2:])
    out = np.stack([lapack.dsytrs(m, p, r, lower=1)[0] for m, p, r in zip(ld, piv, bb)])
    return wrap(beside(out.reshape(batch + b.shape[-2:]).astype(dtype), B._data))


def matmul(input, other):
    """Alias of ``chainrule.matmul`` (``torch.linalg.matmul``)."""
    from ..ops import matmul as _matmul

    return _matmul(input, other)


def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y, dim)`` with broadcasting (real inputs: no conjugation), as
    ``torch.linalg.vecdot``; shape: the broadcast shape without ``dim``."""
    from ..ops import sum as _sum

    x, y = _t(x), _t(y)
    if x.ndim and y.ndim and x.shape[dim] != y.shape[dim]:  # (0-d: a single entry)
        raise ShapeError(f"linalg.vecdot: x and y must have the same size along dim {dim}, "
                         f"got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if dtype_kind(x.dtype) == "c":  # complex: the Hermitian inner product, as torch
        x = wrap(backend_of(x._data).xp.conj(x._data))  # (no gradient for complex here)
    return _sum(x * y, dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal of each matrix (the last two dims by default), as
    ``torch.linalg.diagonal``: an alias of ``chainrule.diagonal`` with other defaults."""
    from ..ops import diagonal as _diagonal

    return _diagonal(_t(A), offset, dim1, dim2)


def vander(x, *, N=None):
    """The Vandermonde matrix ``[1, x, x^2, ..., x^(N-1)]`` along a new last dim (increasing
    powers, as ``torch.linalg.vander``; ``x`` (..., n), result (..., n, N), N defaults to
    n)."""
    from .._creation import ones_like
    from ..ops import stack

    x = _t(x)
    if x.ndim == 0:  # a 0-d x is one value, as in PyTorch
        x = x.reshape(1)
    N = x.shape[-1] if N is None else N
    if N <= 1:  # as torch (N = 1, a column of ones, is refused there too)
        raise ValueError(f"linalg.vander: N must be greater than 1, got N={N}")
    return stack([ones_like(x)] + [x ** k for k in range(1, N)], -1)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """The number of singular values above ``max(atol, rtol * s_max)`` (int64, no
    gradient), as ``torch.linalg.matrix_rank``; ``rtol`` defaults to ``eps * max(m, n)``
    when ``atol`` is not given, else 0."""
    from .decomp import eigvalsh, svdvals

    A = _t(A).detach()
    if A.ndim < 2:
        raise ShapeError(f"linalg.matrix_rank: A must have at least 2 dimensions, got shape "
                         f"{tuple(A.shape)}")
    if tol is not None:
        atol, rtol = tol, 0.0
    s = (eigvalsh(A).abs() if hermitian else svdvals(A)).numpy()
    m, n = A.shape[-2], A.shape[-1]
    if rtol is None:
        rtol = 0.0 if atol is not None and np.any(np.asarray(_num(atol)) > 0) else \
            np.finfo(s.dtype).eps * max(m, n)
    atol = 0.0 if atol is None else np.asarray(_num(atol))
    smax = s.max(-1, initial=0.0)
    tolerance = np.maximum(atol, np.asarray(_num(rtol)) * smax)
    rank = np.sum(s > np.expand_dims(tolerance, -1), axis=-1).astype(np.int64)
    return wrap(beside(rank, A._data))  # counted on the host, returned beside A


def _num(x):
    return x.detach().numpy() if isinstance(x, Tensor) else x


def _info(A, k=2):
    return wrap(np.zeros(tuple(A.shape[:-k]), dtype=np.int32))


def solve_ex(A, B, *, left=True, check_errors=False):
    """:func:`chainrule.linalg.solve` plus ``info`` (int32, LAPACK's getrf: the index of the
    first zero pivot of a singular ``A``, 0 otherwise), as ``torch.linalg.solve_ex``: a
    singular ``A`` gives a NaN solution and ``info > 0`` rather than an error, unless
    ``check_errors`` (then LinAlgError, as :func:`chainrule.linalg.solve`)."""
    from .solves import solve

    A = _t(A)
    info = _host_info(A, "inv")
    d = A._data
    if check_errors or not info.any():
        return SolveExResult(solve(A, B, left=left), wrap(beside(info, d)))
    bad = wrap(beside((info > 0)[..., None, None], d))
    eye = wrap(beside(np.broadcast_to(np.eye(A.shape[-1], dtype=numpy_dtype(A.dtype)),
                                      tuple(A.shape)).copy(), d))
    out = solve(where(bad, eye, A), B, left=left)  # a solvable stand-in where A is singular
    vector = left and _is_vector_rhs(tuple(A.shape), tuple(_t(B).shape))
    mask = (info > 0)[..., None] if vector else (info > 0)[..., None, None]
    return SolveExResult(where(wrap(beside(mask, d)), math.nan, out), wrap(beside(info, d)))


def _host_info(A, kind):
    """LAPACK's ``info`` of ``A`` (see :func:`_lapack_info`), found on the host: a device's
    (a GPU's) matrices by an explicit copy; zeros on a lazy backend (Dask), which would
    have to compute."""
    d = A._data
    if d.__class__ is not np.ndarray and backend_of(d).lazy:
        return np.zeros(tuple(A.shape[:-2]), dtype=np.int32)
    return _lapack_info(A.detach()._host(), kind)


def _lapack_info(data, kind):
    """LAPACK's ``info`` per matrix of a batch (int32, the batch's shape): for "inv", the
    1-based index of the first exactly zero pivot of the LU factorisation (getrf); for
    "cholesky", the order of the first leading minor that is not positive definite
    (potrf); 0 where the factorisation succeeds."""
    from scipy.linalg import lu_factor

    mats = np.asarray(data, dtype=np.float64)
    flat = mats.reshape((math.prod(mats.shape[:-2]),) + mats.shape[-2:])  # (0 x 0 works)
    info = np.zeros(len(flat), dtype=np.int32)
    for b, m in enumerate(flat):
        if not np.all(np.isfinite(m)):
            continue  # NaN in, NaN out (no info), as PyTorch's
        if kind == "inv":
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # scipy's "singular matrix" warning
                zero = np.flatnonzero(np.diag(lu_factor(m, check_finite=False)[0]) == 0)
            info[b] = zero[0] + 1 if zero.size else 0
        else:
            for k in range(1, m.shape[-1] + 1):
                try:
                    np.linalg.cholesky(m[:k, :k])
                except np.linalg.LinAlgError:
                    info[b] = k
                    break
    return info.reshape(mats.shape[:-2])


def _ex(fn, A, kind, check_errors, result):
    """``fn(A)`` plus LAPACK's ``info``, as PyTorch's ``*_ex`` functions: where a matrix
    fails (``info > 0``) its result is NaN rather than an error, unless
    ``check_errors``."""
    A = _t(A)
    info = _host_info(A, kind)
    d = A._data
    if check_errors or not info.any():
        return result(fn(A), wrap(beside(info, d)))
    bad = wrap(beside((info > 0)[..., None, None], d))
    eye = wrap(beside(np.broadcast_to(np.eye(A.shape[-1], dtype=numpy_dtype(A.dtype)),
                                      tuple(A.shape)).copy(), d))
    out = fn(where(bad, eye, A))  # a factorable stand-in where A fails
    return result(where(bad, math.nan, out), wrap(beside(info, d)))


def inv_ex(A, *, check_errors=False):
    """:func:`chainrule.linalg.inv` plus ``info`` (int32, LAPACK's getrf: the index of the
    first zero pivot of a singular matrix, 0 otherwise), as ``torch.linalg.inv_ex``: a
    singular matrix gives NaN and ``info > 0`` rather than an error, unless
    ``check_errors``."""
    from .inverse import inv

    return _ex(inv, A, "inv", check_errors, InvExResult)


def cholesky_ex(A, *, upper=False, check_errors=False):
    """:func:`chainrule.linalg.cholesky` plus ``info`` (int32, LAPACK's potrf: the order of
    the first leading minor that is not positive definite, 0 otherwise), as
    ``torch.linalg.cholesky_ex``: such a matrix gives NaN and ``info > 0`` rather than an
    error, unless ``check_errors``."""
    from .decomp import cholesky

    return _ex(lambda M: cholesky(M, upper=upper), A, "cholesky", check_errors,
               CholeskyExResult)


def householder_product(A, tau):
    """The first ``n`` columns of ``H_1 H_2 ... H_k``, ``H_i = I - tau_i v_i v_i^T`` with
    ``v_i`` the ``i``-th column of ``A`` below the diagonal and a 1 on it (LAPACK's orgqr),
    as ``torch.linalg.householder_product``. ``A`` (..., m, n), ``tau`` (..., k), k <= n
    <= m; differentiable in both (a product of rank-one updates)."""
    from .._creation import eye, zeros
    from ..ops import cat, matmul, tril, unsqueeze

    A, tau = _t(A), _t(tau)
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if not (k <= n <= m):
        raise ShapeError(f"linalg.householder_product: need tau.shape[-1] <= A.shape[-1] <= "
                         f"A.shape[-2], got A {tuple(A.shape)} and tau {tuple(tau.shape)}")
    dev = A.device
    V = tril(A, -1) + eye(m, n, dtype=A.dtype, device=dev)  # unit lower trapezoidal reflectors
    Q = cat([eye(n, dtype=A.dtype, device=dev), zeros(m - n, n, dtype=A.dtype, device=dev)],
            -2) if m > n else eye(m, n, dtype=A.dtype, device=dev)
    for i in reversed(range(k)):  # Q <- H_i Q, from the last reflector to the first
        v = V[..., :, i:i + 1]
        t = unsqueeze(unsqueeze(tau[..., i], -1), -1)
        Q = Q - t * matmul(v, matmul(v.mT, Q))
    if k == 0:  # no reflectors: the identity columns, batched, with a zero gradient in A
        Q = Q + 0.0 * V + zeros(*tau.shape[:-1], 1, 1, dtype=A.dtype, device=dev)
    return Q


def _split(shape, ind, name):
    if ind <= 0:
        raise ValueError(f"linalg.{name}: Expected a strictly positive integer for 'ind', "
                         f"but got {ind}")
    return tuple(shape[:ind]), tuple(shape[ind:])


def tensorinv(A, ind=2):
    """The inverse of ``A`` seen as a matrix from its first ``ind`` dims to the rest, as
    ``torch.linalg.tensorinv``: result shape ``A.shape[ind:] + A.shape[:ind]``."""
    from .inverse import inv

    A = _t(A)
    out, inp = _split(A.shape, ind, "tensorinv")
    if math.prod(out) != math.prod(inp):
        raise ShapeError(f"linalg.tensorinv: Expected self to satisfy the requirement "
                         f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                         f"{math.prod(inp)} != {math.prod(out)} (shape {tuple(A.shape)})")
    return inv(A.reshape(math.prod(out), math.prod(inp))).reshape(inp + out)


def tensorsolve(A, B, dims=None):
    """``X`` with ``tensordot(A, X, X.ndim) == B``, as ``torch.linalg.tensorsolve``
    (``dims``: dims of ``A`` moved to the end first)."""
    from ..ops import movedim
    from .solves import solve

    A, B = _t(A), _t(B)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = movedim(A, dims, list(range(A.ndim - len(dims), A.ndim)))
    rows, cols = tuple(A.shape[:B.ndim]), tuple(A.shape[B.ndim:])
    if math.prod(rows) != math.prod(B.shape) or math.prod(cols) != math.prod(rows):
        raise ShapeError(f"linalg.tensorsolve: Expected prod(A.shape[:B.ndim]) == "
                         f"prod(B.shape) == prod(A.shape[B.ndim:]), got A {tuple(A.shape)} "
                         f"and B {tuple(B.shape)}")
    n = math.prod(rows)
    return solve(A.reshape(n, n), B.reshape(n, 1)).reshape(cols)


def _name_errors():
    from .._dispatch import name_errors

    for name in __all__:
        globals()[name] = name_errors(globals()[name], f"linalg.{name}")


_name_errors()
