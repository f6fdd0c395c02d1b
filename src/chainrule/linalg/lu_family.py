"""LU factorization with partial pivoting: lu, lu_factor, lu_unpack, lu_solve.

``A = P L U`` for ``A`` (..., m, n), ``k = min(m, n)``: ``P`` (..., m, m) a permutation,
``L`` (..., m, k) unit lower trapezoidal, ``U`` (..., k, n) upper trapezoidal. ``P`` is
piecewise constant in ``A`` (it changes only where the pivot order does), so it gets no
gradient, as in PyTorch.

Primitive declared here (table name, graph node, public functions):

- ``linalg_lu`` (``LinalgLuBackward0``): lu, and through it lu_factor (``L`` and ``U``
  packed in one matrix), lu_unpack and lu_solve (triangular solves with the factors, so the
  gradient reaches ``LU`` and ``B``).

The rules, with ``X = L^-1 P^T dA U^-1`` for a square ``A`` (from ``P^T dA = dL U + L dU``,
``L^-1 dL`` strictly lower and ``dU U^-1`` upper): ``dL = L tril(X, -1)``,
``dU = triu(X) U``, and the adjoint ``grad_A = P L^-T (tril(L^T grad_L, -1) +
triu(grad_U U^T)) U^-T``. A wide ``A = P L [U1 U2]`` adds ``U2 = L^-1 P^T A2``; a tall
``A = P [L1; L2] U`` adds ``L2 = (P^T A)_2 U^-1``; both by the product rule.
"""

from __future__ import annotations

import collections

import numpy as np

from .._dispatch import ShapeError, apply
from .._table import defop, documented
from .._tensor import Tensor, wrap
from ..backend import beside, numpy_dtype, xp_kernel
from ._common import _as_input

__all__ = ["lu", "lu_factor", "lu_factor_ex", "lu_unpack", "lu_solve"]

LUResult = collections.namedtuple("linalg_lu", ["P", "L", "U"])
LUFactorResult = collections.namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = collections.namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUUnpackResult = collections.namedtuple("lu_unpack", ["P", "L", "U"])

SOURCE = ("Differentiating P^T A = L U by the product rule (L^-1 dL strictly lower, dU U^-1 "
          "upper), as PyTorch's linalg_lu_backward / linalg_lu_jvp; the rectangular cases "
          "from U2 = L^-1 P^T A2 (wide) and L2 = (P^T A)_2 U^-1 (tall)")


@xp_kernel
def _lu_kernel(xp, A):
    if not hasattr(xp, "lu"):
        raise NotImplementedError("linalg.lu: an LU factorization is not available on this "
                                  "backend (it needs SciPy's lu, on NumPy)")
    P, L, U = xp.lu(A)
    m = A.shape[-2]
    if tuple(P.shape) != (*A.shape[:-2], m, m):  # SciPy gives (0, 0, 0) for an empty batch
        return xp.zeros((*A.shape[:-2], m, m), dtype=A.dtype), L, U
    return P.astype(A.dtype, copy=False), L, U


def _solve_l(F, L, B, *, left=True, transpose=False):
    """``L^-1 B`` (``B L^-1`` when not left; with ``L^T`` when ``transpose``), L unit lower."""
    M = F.mT(L) if transpose else L
    return F.solve_triangular(M, B, upper=transpose, left=left, unitriangular=True)


def _solve_u(F, U, B, *, left=True, transpose=False):
    """``U^-1 B`` (``B U^-1`` when not left; with ``U^T`` when ``transpose``), U upper."""
    M = F.mT(U) if transpose else U
    return F.solve_triangular(M, B, upper=not transpose, left=left)


def _lu_vjp(F, g, A_shape, out):
    gL, gU = g[1], g[2]
    P, L, U = out
    m, n = A_shape[-2], A_shape[-1]
    k = min(m, n)
    if gL is None:
        gL = F.zeros_like(L)
    if gU is None:
        gU = F.zeros_like(U)
    if m == n:
        M = F.tril(F.matmul(F.mT(L), gL), -1) + F.triu(F.matmul(gU, F.mT(U)))
        inner = _solve_u(F, U, _solve_l(F, L, M, transpose=True), left=False, transpose=True)
        return F.matmul(P, inner)
    if m < n:  # U = [U1 U2], L square (k = m)
        U1, U2 = U[..., :, :k], U[..., :, k:]
        g1, g2 = gU[..., :, :k], gU[..., :, k:]
        M = F.tril(F.matmul(F.mT(L), gL) - F.matmul(g2, F.mT(U2)), -1) + \
            F.triu(F.matmul(g1, F.mT(U1)))
        a1 = _solve_u(F, U1, _solve_l(F, L, M, transpose=True), left=False, transpose=True)
        a2 = _solve_l(F, L, g2, transpose=True)
        return F.matmul(P, F.cat([a1, a2], -1))
    # m > n: L = [L1; L2], U square (k = n)
    L1, L2 = L[..., :k, :], L[..., k:, :]
    g1, g2 = gL[..., :k, :], gL[..., k:, :]
    M = F.tril(F.matmul(F.mT(L1), g1), -1) + \
        F.triu(F.matmul(gU, F.mT(U)) - F.matmul(F.mT(L2), g2))
    a1 = _solve_u(F, U, _solve_l(F, L1, M, transpose=True), left=False, transpose=True)
    a2 = _solve_u(F, U, g2, left=False, transpose=True)
    return F.matmul(P, F.cat([a1, a2], -2))


def _lu_jvp(F, t, A_shape, out):
    P, L, U = out
    m, n = A_shape[-2], A_shape[-1]
    k = min(m, n)
    B = F.matmul(F.mT(P), t)  # P^T dA
    if m == n:
        X = _solve_u(F, U, _solve_l(F, L, B), left=False)
        return None, F.matmul(L, F.tril(X, -1)), F.matmul(F.triu(X), U)
    if m < n:
        U1, U2 = U[..., :, :k], U[..., :, k:]
        X = _solve_u(F, U1, _solve_l(F, L, B[..., :, :k]), left=False)
        dL = F.matmul(L, F.tril(X, -1))
        dU2 = _solve_l(F, L, B[..., :, k:] - F.matmul(dL, U2))
        return None, dL, F.cat([F.matmul(F.triu(X), U1), dU2], -1)
    L1, L2 = L[..., :k, :], L[..., k:, :]
    X = _solve_u(F, U, _solve_l(F, L1, B[..., :k, :]), left=False)
    dU = F.matmul(F.triu(X), U)
    dL2 = _solve_u(F, U, B[..., k:, :] - F.matmul(L2, dU), left=False)
    return None, F.cat([F.matmul(L1, F.tril(X, -1)), dL2], -2), dU


LU = defop(
    "linalg_lu", _lu_kernel, ("A",), nout=3, out_diff=(1, 2),
    vjp={"A": _lu_vjp}, jvp={"A": _lu_jvp},
    math={"A": "square: grad_A = P L^-T (tril(L^T grad_L, -1) + triu(grad_U U^T)) U^-T; "
               "wide (U = [U1 U2]): grad_L -= L^-T grad_U2 U2^T, grad_A2 = P L^-T grad_U2; "
               "tall (L = [L1; L2]): grad_U -= L2^T grad_L2 U^-T, "
               "grad_(P^T A)2 = grad_L2 U^-T",
          "out": "X = L^-1 P^T dA U^-1: dL = L tril(X, -1), dU = triu(X) U (dP = 0)"},
    source=SOURCE,
)


def _check(name, A):
    data = A._data if isinstance(A, Tensor) else np.asarray(A)
    if data.ndim < 2:
        raise ShapeError(f"{name}: A must have at least 2 dimensions (a matrix or a batch of "
                         f"matrices), got shape {tuple(data.shape)}")
    if numpy_dtype(data.dtype) not in (np.float32, np.float64):
        raise TypeError(f"{name}: A must be float32 or float64, got {data.dtype}")
    return data


@documented(LU)
def lu(A, *, pivot=True):
    """LU factorization with partial pivoting, ``A = P L U`` (``torch.linalg.lu``).

    Parameters
    ----------
    A : Tensor, shape (..., m, n), float32 or float64
    pivot : bool
        Only True is supported (pivoting is what keeps the factorization stable).

    Returns
    -------
    (P, L, U) : named tuple ``linalg_lu``; ``P`` (..., m, m), ``L`` (..., m, k) unit lower,
    ``U`` (..., k, n) upper, ``k = min(m, n)``. ``P`` has no gradient.

    Raises
    ------
    ValueError (ShapeError) for fewer than 2 dims; TypeError for a non-float dtype;
    NotImplementedError for ``pivot=False`` and on backends without an LU kernel.
    """
    _check("linalg.lu", A)
    if not pivot:
        raise NotImplementedError("linalg.lu: pivot=False (LU without pivoting) is not "
                                  "supported; it is unstable and only available on CUDA in "
                                  "PyTorch")
    return LUResult(*apply(LU, (_as_input(A),)))


def _pivots_of(P):
    """LAPACK's ``ipiv`` (1-based int32 row swaps, applied in order) for permutations
    ``P`` (..., m, m) with ``A = P L U``, as a NumPy array (..., k)."""
    P = np.asarray(P)
    m = P.shape[-1]
    if m == 0 or P.size == 0:  # 0x0 matrices or an empty batch: no pivots
        return np.zeros(P.shape[:-1], dtype=np.int32)
    perm = np.argmax(P, axis=-2).reshape(-1, m)  # row i of P^T A is row perm[i] of A
    out = np.empty(perm.shape, dtype=np.int32)
    for b, target in enumerate(perm):
        rows = list(range(m))  # rows[i]: the row of A now at position i
        where = list(range(m))  # where[r]: the position of row r of A
        for i in range(m):
            j = where[target[i]]
            out[b, i] = j + 1
            rows[i], rows[j] = rows[j], rows[i]
            where[rows[i]], where[rows[j]] = i, j
    return out.reshape(P.shape[:-1])


def lu_factor(A, *, pivot=True, _check=True):
    """``(LU, pivots)``: ``L`` and ``U`` packed in one (..., m, n) matrix (``L``'s unit
    diagonal implicit) and LAPACK's pivots (1-based int32, (..., min(m, n))), as
    ``torch.linalg.lu_factor``. Differentiable in ``LU`` through :func:`lu`. Raises
    RuntimeError when ``U`` has an exactly zero diagonal entry (a singular ``A``), as
    PyTorch; :func:`lu_factor_ex` returns it in ``info`` instead."""
    P, L, U = lu(A, pivot=pivot)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    from .._creation import zeros
    from ..ops import cat, tril, triu

    batch, dev = tuple(A.shape[:-2]), U.device
    if m > n:
        packed = tril(L, -1) + cat([triu(U), zeros(*batch, m - n, n, dtype=U.dtype,
                                                   device=dev)], -2)
    elif m < n:
        packed = cat([tril(L, -1), zeros(*batch, m, n - m, dtype=L.dtype, device=dev)],
                     -1) + triu(U)
    else:
        packed = tril(L, -1) + triu(U)
    # found on the host from P, returned beside it
    pivots = wrap(beside(_pivots_of(P.detach().numpy())[..., :k], P._data))
    if _check:
        _raise_on_zero_pivot("torch.linalg.lu_factor", _lu_info(U))
    return LUFactorResult(packed, pivots)


def _lu_info(U):
    """LAPACK getrf's ``info`` per matrix (int32, (...)): the 1-based index of the first
    exactly zero diagonal entry of ``U`` (or of the packed ``LU``), 0 if there is none."""
    d = np.diagonal(U.detach().numpy(), 0, -2, -1)
    zero = d == 0
    if d.shape[-1] == 0:
        return np.zeros(d.shape[:-1], dtype=np.int32)
    return np.where(zero.any(-1), np.argmax(zero, -1) + 1, 0).astype(np.int32)


def _raise_on_zero_pivot(op, info):
    if info.any():
        flat = np.ravel(info)
        b = int(np.flatnonzero(flat > 0)[0])
        batch = f"(Batch element {b}): " if info.ndim else ""
        j = int(flat[b])
        raise RuntimeError(f"{op}: {batch}U[{j},{j}] is zero and using it on lu_solve would "
                           "result in a division by zero. If you still want to perform the "
                           "factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """:func:`lu_factor` plus ``info`` (int32, LAPACK's getrf: the 1-based index of the first
    exactly zero diagonal entry of ``U``, 0 otherwise), as in PyTorch: a singular ``A``
    still factors (``U`` has a zero on its diagonal) unless ``check_errors``."""
    LU_, piv = lu_factor(A, pivot=pivot, _check=False)
    info = _lu_info(LU_)  # the diagonal of the packed LU is U's
    if check_errors:
        _raise_on_zero_pivot("torch.linalg.lu_factor_ex", info)
    return LUFactorExResult(LU_, piv, wrap(beside(info, LU_._data)))


def _permutation(pivots, m, dtype):
    """``P`` (..., m, m) from LAPACK pivots (1-based swaps), as a NumPy array."""
    piv = np.asarray(pivots.numpy() if isinstance(pivots, Tensor) else pivots)
    if piv.size == 0:  # no swaps (k = 0) or an empty batch: identities
        return np.broadcast_to(np.eye(m, dtype=dtype), piv.shape[:-1] + (m, m)).copy()
    flat = piv.reshape(-1, piv.shape[-1])
    P = np.empty((flat.shape[0], m, m), dtype=dtype)
    for b, swaps in enumerate(flat):
        perm = np.arange(m)
        for i, j in enumerate(swaps):
            if not 1 <= j <= m:
                raise RuntimeError(f"lu_unpack: pivot {int(j)} at position {i} is out of "
                                   f"range [1, {m}]")
            perm[[i, j - 1]] = perm[[j - 1, i]]
        P[b] = np.eye(m, dtype=dtype)[:, perm]  # P e_i = e_perm[i]: (P^T A)[i] = A[perm[i]]
    return P.reshape(piv.shape[:-1] + (m, m))


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from :func:`lu_factor`'s packed ``LU`` and ``pivots``, as
    ``torch.lu_unpack``; ``L`` and ``U`` are differentiable in ``LU_data``."""
    from .._creation import eye
    from ..ops import cat, tril, triu

    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    P = L = U = None
    if unpack_data:
        dev = LU_data.device
        L = tril(LU_data[..., :, :k], -1) + cat(
            [eye(k, dtype=LU_data.dtype, device=dev),
             _zeros(m - k, k, LU_data.dtype, dev)], -2) \
            if m > k else tril(LU_data[..., :, :k], -1) + eye(k, dtype=LU_data.dtype, device=dev)
        U = triu(LU_data[..., :k, :])
    if unpack_pivots:  # computed on the host from the pivots, then put beside LU
        P = wrap(beside(_permutation(LU_pivots, m, numpy_dtype(LU_data.dtype)),
                        LU_data._data))
    return LUUnpackResult(P, L, U)


def _zeros(r, c, dtype, device):
    from .._creation import zeros

    return zeros(r, c, dtype=dtype, device=device)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """Solve ``A X = B`` (``X A = B`` when not ``left``; with ``A^T`` when ``adjoint``)
    from :func:`lu_factor`'s output, as ``torch.linalg.lu_solve``. Differentiable in ``LU``
    and ``B`` (triangular solves with the unpacked factors).

    Raises ValueError (ShapeError) when ``LU`` is not square or ``B``'s shape does not fit.
    """
    from ..ops import matmul
    from .solves import solve_triangular

    m, n = LU.shape[-2], LU.shape[-1]
    if m != n:
        raise ShapeError(f"linalg.lu_solve: LU must be a batch of square matrices, got shape "
                         f"{tuple(LU.shape)}")
    rows = B.shape[-2] if left else B.shape[-1]
    if B.ndim < 2 or rows != n:
        raise ShapeError(f"linalg.lu_solve: B of shape {tuple(B.shape)} does not fit LU of "
                         f"shape {tuple(LU.shape)} (left={left})")
    P, L, U = lu_unpack(LU, pivots)

    def tri(M, X, upper, unit, side_left):
        return solve_triangular(M, X, upper=upper, left=side_left, unitriangular=unit)

    if left and not adjoint:  # A = P L U: X = U^-1 L^-1 P^T B
        return tri(U, tri(L, matmul(P.mT, B), False, True, True), True, False, True)
    if left:  # A^T X = B: U^T L^T P^T X = B, X = P L^-T U^-T B
        return matmul(P, tri(L.mT, tri(U.mT, B, False, False, True), True, True, True))
    if not adjoint:  # X P L U = B: X = B U^-1 L^-1 P^T
        return matmul(tri(L, tri(U, B, True, False, False), False, True, False), P.mT)
    # X A^T = B: X U^T L^T P^T = B, X = B P L^-T U^-T
    return tri(U.mT, tri(L.mT, matmul(B, P), True, True, False), False, False, False)


def _name_errors():
    from .._dispatch import name_errors

    for name in ("lu_factor", "lu_factor_ex", "lu_unpack", "lu_solve"):
        globals()[name] = name_errors(globals()[name], name)


_name_errors()
