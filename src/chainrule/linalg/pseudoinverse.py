"""The pseudo-inverse and least squares: pinv, lstsq.

Primitive declared here (table name, graph node, public functions):

- ``linalg_pinv`` (``LinalgPinvBackward0``): pinv, lstsq

``lstsq`` is ``pinv(A) @ B`` (exact for full-rank ``A``), with LAPACK's extra outputs.
"""

from __future__ import annotations

import collections

import numpy as np

from .._dispatch import ShapeError, apply
from .._table import defop, documented
from .._tensor import wrap
from ..backend import backend_of, native_dtype, numpy_dtype, on_device_of, xp_kernel
from ._common import (
    _as_input,
    _batch,
    _check_square,
    _data,
    _float_dtype,
    _is_vector_rhs,
    _shape,
    _shape_error,
)

__all__ = ["pinv", "lstsq"]


lstsq_return = collections.namedtuple(
    "linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


@xp_kernel
def _pinv_kernel(xp, A, atol, rtol, hermitian):
    if "complex" in str(A.dtype):  # the conjugate transpose: pinv = V S^-1 U^H

        def mT(x):
            return xp.conj(xp.matrix_transpose(x))
    else:
        mT = xp.matrix_transpose
    if hermitian:
        w, V = xp.linalg.eigh(A)
        s = xp.abs(w)
        U, Vh = V * xp.sign(w + xp.astype(w == 0, w.dtype))[..., None, :], mT(V)
    else:
        U, s, Vh = xp.linalg.svd(A, full_matrices=False)
    if s.shape[-1]:
        smax = xp.max(s, axis=-1, keepdims=True)
    else:
        smax = xp.zeros_like(s[..., :1])
    tol = xp.maximum(xp.asarray(atol, dtype=s.dtype, **on_device_of(s)), rtol * smax)
    big = s > tol
    sinv = xp.where(big, 1.0 / xp.where(big, s, 1.0), 0.0)
    return xp.astype(xp.matmul(mT(Vh) * sinv[..., None, :], mT(U)), A.dtype)


def _pinv_vjp(F, g, self, out):
    A, P = self, out
    Pt, Gt = F.mT(P), F.mT(g)
    M = F.matmul(Gt, F.matmul(P, Pt))  # G^T P P^T
    Q = F.matmul(F.matmul(Pt, P), Gt)  # P^T P G^T
    return (-F.matmul(F.matmul(Pt, g), Pt)
            + M - F.matmul(A, F.matmul(P, M))
            + Q - F.matmul(F.matmul(Q, P), A))


def _pinv_jvp(F, t, self, out):
    A, P = self, out
    Pt, Tt = F.mT(P), F.mT(t)
    R = F.matmul(F.matmul(P, Pt), Tt)  # P P^T dA^T
    S = F.matmul(Tt, F.matmul(Pt, P))  # dA^T P^T P
    return (-F.matmul(F.matmul(P, t), P)
            + R - F.matmul(F.matmul(R, A), P)
            + S - F.matmul(P, F.matmul(A, S)))


PINV = defop(
    "linalg_pinv", _pinv_kernel, ("self",), attrs=("atol", "rtol", "hermitian"),
    vjp={"self": _pinv_vjp}, jvp={"self": _pinv_jvp},
    math={"self": "grad_A = -P^T grad P^T + (I - A P) grad^T P P^T + P^T P grad^T (I - P A),"
                  " P = A^+  (valid where the rank of A is locally constant)",
          "out": "dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P"},
    source="Golub & Pereyra (1973), The differentiation of pseudo-inverses and nonlinear "
           "least squares problems, SIAM J. Numer. Anal. 10(2), Thm. 4.3; PyTorch's "
           "pinv_backward",
)


def _default_rtol(shape, dtype, atol_given):
    if atol_given:
        return 0.0
    return float(np.finfo(numpy_dtype(dtype)).eps) * max(shape[-2], shape[-1])


@documented(PINV)
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """Moore-Penrose pseudo-inverse, as ``torch.linalg.pinv``.

    Singular values below ``max(atol, rtol * sigma_max)`` are treated as zero. Defaults as
    in PyTorch: ``atol = 0``; ``rtol = eps * max(m, n)`` when neither is given, 0 when only
    ``atol`` (> 0) is given.

    The derivative is that of the pseudo-inverse at constant rank (Golub & Pereyra); it is
    exact for full-rank ``A`` and not defined where the rank changes.

    Parameters
    ----------
    A : Tensor of shape (*, m, n)
        float32 or float64; tall, square or wide.
    atol, rtol : float, keyword-only, optional
    hermitian : bool, keyword-only
        Assume ``A`` symmetric and use its eigendecomposition (only the lower triangle is
        read by the forward; the gradient is that of the general formula, as in PyTorch).

    Returns
    -------
    Tensor of shape (*, n, m)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions (or is not square with ``hermitian=True``).
    """
    s = _shape(A)
    op = "linalg.pinv"
    if len(s) < 2:
        raise _shape_error(op, "A must have at least 2 dimensions", ("A",), (s,))
    if hermitian:
        _check_square(op, "A", A)
    atol_f = 0.0 if atol is None else float(atol)
    rtol_f = _default_rtol(s, _float_dtype(A), atol_f > 0) if rtol is None else float(rtol)
    return apply(PINV, (_as_input(A),), (atol_f, rtol_f, bool(hermitian)))


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@documented(PINV)
def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B``, as ``torch.linalg.lstsq``.

    Computed as ``X = pinv(A) B`` (the minimum-norm least-squares solution, which every
    LAPACK driver returns for a full-rank ``A``). The gradient is exact for full-rank ``A``
    (tall, square or wide) and is the constant-rank derivative otherwise.

    Parameters
    ----------
    A : Tensor of shape (*, m, n)
    B : Tensor of shape (*, m, k), or (*, m) for a vector right-hand side (1-D, or exactly
        ``A.shape[:-1]``). Batch dimensions broadcast.
    rcond : float, optional
        Singular values below ``rcond * sigma_max`` count as zero (default
        ``eps * max(m, n)``).
    driver : {"gelsy", "gels", "gelsd", "gelss"}, keyword-only, optional
        Which outputs are filled in follows PyTorch's CPU drivers (default ``"gelsy"``).

    Returns
    -------
    (solution, residuals, rank, singular_values) : named tuple
        ``solution`` (*, n, k) (or (*, n)) is differentiable. ``residuals`` (*, k): the
        squared residual norms ``||A X - B||^2`` per column, differentiable, computed when
        ``m > n``, every ``A`` has full rank and the driver is not ``gelsy`` (otherwise
        empty, like PyTorch). ``rank`` (int64, *): not for ``gels``. ``singular_values``
        (*, min(m, n)): only for ``gelsd``/``gelss``. Empty outputs have shape (0,).

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions, ``B``'s rows do not match ``A``'s, the batch
        dimensions do not broadcast or ``driver`` is unknown.
    """
    from ..ops import matmul, sum

    a, b = _shape(A), _shape(B)
    names, shapes = ("A", "B"), (a, b)
    op = "linalg.lstsq"
    if len(a) < 2:
        raise _shape_error(op, "A must have at least 2 dimensions", names, shapes)
    if len(b) < 1:
        raise _shape_error(op, "B must have at least 1 dimension", names, shapes)
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise ShapeError(f"{op}: driver must be one of {_DRIVERS}, got {driver!r}")
    vector = _is_vector_rhs(a, b)
    bm = tuple(b) + (1,) if vector else tuple(b)
    if bm[-2] != a[-2]:
        raise _shape_error(op, f"A and B must have the same number of rows ({a[-2]} and "
                               f"{bm[-2]})", names, shapes)
    _batch(op, names, shapes, (a[:-2], bm[:-2]))
    A, B = _as_input(A), _as_input(B)
    dtype = _float_dtype(A)
    m, n = a[-2], a[-1]
    rc = float(np.finfo(dtype).eps) * max(m, n) if rcond is None else float(rcond)
    data = _data(A)
    xp, dev = backend_of(data).xp, on_device_of(data)
    fdt = native_dtype(backend_of(data), dtype)
    if min(m, n):
        sv = xp.linalg.svdvals(data)
        smax = xp.max(sv, axis=-1, keepdims=True)
    else:
        sv = smax = xp.zeros(a[:-2] + (0,), dtype=fdt, **dev)
    rank = xp.astype(xp.sum(xp.astype(sv > rc * smax, xp.int64), axis=-1), xp.int64)
    P = pinv(A, atol=0.0, rtol=rc)
    Bm = B[..., None] if vector else B
    X = matmul(P, Bm)
    empty = xp.zeros((0,), dtype=fdt, **dev)
    # full rank decides whether LAPACK returns residuals; off the host (Dask, a GPU) the
    # rank is not read back to decide it: residuals whenever m > n, as PyTorch's CUDA gels
    full = data.__class__ is not np.ndarray or bool(xp.all(rank == n))
    if driver != "gelsy" and m > n and full:
        residuals = sum((matmul(A, X) - Bm) ** 2, -2)
    else:
        residuals = wrap(empty)
    solution = X[..., 0] if vector else X
    rank_out = wrap(xp.zeros((0,), dtype=xp.int64, **dev)) if driver == "gels" \
        else wrap(rank)
    sv_out = wrap(xp.astype(sv, fdt)) if driver in ("gelsd", "gelss") \
        else wrap(empty)
    return lstsq_return(solution, residuals, rank_out, sv_out)
