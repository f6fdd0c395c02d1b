"""Inverses and determinants: inv, det, slogdet, logdet, matrix_power.

The key identity is the differential of the inverse, ``d(A^-1) = -A^-1 dA A^-1`` (Giles
2008, the inverse); a VJP is read off from ``<G, dY> = <grad_A, dA>`` with
``<X, Y> = tr(X^T Y)``.

Primitives declared here (table name, graph node, public functions):

- ``linalg_inv`` (``LinalgInvExBackward0``): inv, matrix_power with n < 0
- ``linalg_det`` (``LinalgDetBackward0``): det
- ``linalg_cofactor`` (``LinalgCofactorBackward0``): det's gradient ``det(A) A^-T``, recorded
  when det is differentiated with ``create_graph=True``
- ``linalg_slogdet`` (``LinalgSlogdetBackward0``): slogdet, logdet

``logdet`` and ``matrix_power`` are exact compositions of these and of ``matmul``/``where``.
The rule namespace ``F`` gains (see :func:`chainrule._ns.register`): ``inv``, ``inv_ext``
(inv with +-inf at singular matrices), ``cofactor`` and ``det_hvp``.
"""

from __future__ import annotations

import collections

import numpy as np

from .._dispatch import apply
from .._ns import RAW, _prod_others, register
from .._table import defop, documented
from ..backend import NUMPY, backend_of, dtype_kind, native_dtype, on_device_of, xp_kernel
from ._common import (
    GILES,
    _as_input,
    _batch_prefix,
    _batched_trace_of_product,
    _check_square,
    _data,
    _exact,
    _first_zero_pivot,
    _float_dtype,
    _kernel_of,
    _linalg_name,
    _mT,
    _scalar_to_matrix,
)
from ._errors import LinAlgError

__all__ = ["LinAlgError", "inv", "det", "slogdet", "logdet", "matrix_power"]


slogdet_return = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])


@xp_kernel
def _inv_op(xp, A):
    return _inv_kernel(A) if xp is NUMPY.xp else xp.linalg.inv(A)


def _inv_kernel(A, prefix=""):
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        where = _first_zero_pivot(A)
        b, k = where if where is not None else (0, "?")
        raise LinAlgError(
            f"{prefix}{_batch_prefix(A, b)}The diagonal element {k} is zero, the inversion "
            "could not be completed because the input matrix is singular.") from None


def _inv_ext(A):
    """A^-1, extended to exactly singular matrices as adj(A) / det(A) = cof(A)^T / 0: +-inf,
    and nan where the adjugate vanishes (what PyTorch's slogdet backward gives there)."""
    try:
        return np.linalg.inv(A)
    except np.linalg.LinAlgError:
        pass
    n = A.shape[-1]
    flat = A.reshape(-1, n, n)
    out = np.empty(flat.shape, dtype=np.result_type(flat.dtype, np.float32))
    for b, a in enumerate(flat):
        try:
            out[b] = np.linalg.inv(a)
        except np.linalg.LinAlgError:
            with np.errstate(divide="ignore", invalid="ignore"):
                out[b] = _mT(_cofactor(a)) / np.zeros((), out.dtype)
    return out.reshape(A.shape)


@xp_kernel
def _det_kernel(xp, A):
    return xp.linalg.det(A)


@xp_kernel
def _slogdet_kernel(xp, A):
    sign, logabsdet = xp.linalg.slogdet(A)
    return xp.asarray(sign), xp.asarray(logabsdet)


@xp_kernel
def _cofactor_op(xp, A):
    """The cofactor matrix ``det(A) A^-T``, also at singular A (see :func:`_exact`)."""
    return _exact(xp, _cofactor, A.shape, (A,), _cofactor_svd)


def _svd_parts(xp, A):
    """``U``, ``s``, ``Vh`` of ``A`` and ``det(U) det(Vh)`` (+-1): ``A = alpha U diag(s) Vh``
    with ``det(A) = alpha prod(s)``."""
    U, s, Vh = xp.linalg.svd(A)
    return U, s, Vh, xp.linalg.det(U) * xp.linalg.det(Vh)


def _cofactor_svd(xp, A):
    """The cofactor matrix of any square A, singular or not, without a branch on the values
    (so without a host round trip): ``det(U) det(V) U diag(prod_{j != i} s_j) V^T`` from the
    SVD ``A = U diag(s) V^T`` (for invertible A this is ``det(A) A^-T``). Used where the
    values stay on a device (CuPy, Array API libraries); an inverse there would not raise at
    a singular A but return large or inf entries, and ``det(A) A^-T`` a finite wrong value."""
    if A.shape[-1] == 0:
        return xp.zeros(A.shape, dtype=A.dtype, **on_device_of(A))
    U, s, Vh, alpha = _svd_parts(xp, A)
    others = _prod_others(xp, s, (s.ndim - 1,))
    return alpha[..., None, None] * xp.matmul(U * others[..., None, :], Vh)


def _cofactor(A):
    """The cofactor matrix ``det(A) A^-T`` (the gradient of det), also at singular A.

    Invertible A: ``det(A) * inv(A)^T``. Singular A (det exactly 0): from the SVD
    ``A = U diag(s) V^T``, ``cof(A) = det(U) det(V) U diag(prod_{j != i} s_j) V^T``, the
    continuous extension (nonzero when rank(A) = n - 1).
    """
    if A.size == 0:  # 0x0 matrices (det = 1): an empty cofactor
        return np.zeros(A.shape, A.dtype)
    n = A.shape[-1]
    flat = A.reshape(-1, n, n)
    det = np.linalg.det(flat)
    out = np.empty(flat.shape, dtype=np.result_type(det.dtype, flat.dtype))
    ok = det != 0
    if ok.any():
        out[ok] = det[ok, None, None] * _mT(np.linalg.inv(flat[ok]))
    if not ok.all():
        U, s, Vh = np.linalg.svd(flat[~ok])
        alpha = np.linalg.det(U) * np.linalg.det(Vh)
        others = RAW.prod_others(s, (-1,))
        out[~ok] = alpha[:, None, None] * ((U * others[:, None, :]) @ Vh)
    return out.reshape(A.shape)


def _pair_products(s):
    """P[..., i, j] = prod_{l != i, j} s_l (the second derivatives of prod(s))."""
    n = s.shape[-1]
    idx = np.arange(n)
    keep = (idx[None, None, :] != idx[:, None, None]) & (idx[None, None, :] != idx[None, :, None])
    return np.prod(np.where(keep, s[..., None, None, :], 1), axis=-1)


def _det_hvp(A, E):
    """d cof(A)[E], the Hessian of det at A applied to E (self-adjoint), also at singular A.

    Invertible A: ``det(A) (tr(A^-1 E) A^-T - A^-T E^T A^-T)``. Singular A: with the SVD
    ``A = U diag(s) V^T`` and ``E~ = U^T E V``, ``d cof = det(U) det(V) U D V^T`` where
    ``D_ii = sum_{k != i} p_ik E~_kk`` and ``D_ij = -p_ij E~_ji`` (i != j),
    ``p_ij = prod_{l != i, j} s_l``: the derivative of the minors of a diagonal matrix.
    """
    n = A.shape[-1]
    E = np.broadcast_to(np.asarray(E), np.broadcast_shapes(A.shape, np.shape(E)))
    A = np.broadcast_to(A, E.shape)
    if E.size == 0:  # 0x0 matrices or an empty batch: an empty result
        return np.zeros(E.shape, np.result_type(A, E))
    flat, Ef = A.reshape(-1, n, n), E.reshape(-1, n, n)
    det = np.linalg.det(flat)
    out = np.empty(flat.shape, dtype=np.result_type(flat, Ef))
    ok = det != 0
    if ok.any():
        AiT = _mT(np.linalg.inv(flat[ok]))
        Eo = Ef[ok]
        tr = np.einsum("bij,bij->b", AiT, Eo)
        out[ok] = det[ok, None, None] * (tr[:, None, None] * AiT - AiT @ _mT(Eo) @ AiT)
    if not ok.all():
        U, s, Vh = np.linalg.svd(flat[~ok])
        alpha = np.linalg.det(U) * np.linalg.det(Vh)
        Et = _mT(U) @ Ef[~ok] @ _mT(Vh)
        P = _pair_products(s)
        D = -P * _mT(Et)
        P[:, np.arange(n), np.arange(n)] = 0
        D[:, np.arange(n), np.arange(n)] = np.einsum("bik,bk->bi", P,
                                                     np.diagonal(Et, 0, -2, -1))
        out[~ok] = alpha[:, None, None] * (U @ D @ Vh)
    return out.reshape(E.shape)


def _det_hvp_xp(xp, A, E):
    """The Hessian of det at A applied to E, also at singular A (see :func:`_exact`)."""
    shape = np.broadcast_shapes(A.shape, E.shape)
    return _exact(xp, _det_hvp, shape, (A, E), _det_hvp_svd)


def _det_hvp_svd(xp, A, E):
    """The Hessian of det at any square A applied to E, without a branch on the values:
    the singular-A formula of :func:`_det_hvp` (``U D V^T`` from the SVD), which holds for
    every A, with ``p_ij = prod_{l != i, j} s_l`` computed as products of the others of
    ``s`` with ``s_i`` set to 1 (exact with zeros, O(n^2) memory)."""
    A, E = xp.broadcast_arrays(A, E)
    n = A.shape[-1]
    if n == 0 or 0 in A.shape:
        return xp.zeros(A.shape, dtype=xp.result_type(A, E), **on_device_of(A))
    U, s, Vh, alpha = _svd_parts(xp, A)
    mT = xp.matrix_transpose
    Et = xp.matmul(xp.matmul(mT(U), E), mT(Vh))
    eye = xp.eye(n, dtype=xp.bool, **on_device_of(A))
    one = xp.ones((), dtype=s.dtype, **on_device_of(s))
    P = _prod_others(xp, xp.where(eye, one, s[..., None, :]), (s.ndim,))  # P[..., i, j]
    zero = xp.zeros((), dtype=s.dtype, **on_device_of(s))
    diag = xp.sum(xp.where(eye, zero, P) * xp.linalg.diagonal(Et)[..., None, :], axis=-1)
    D = xp.where(eye, diag[..., :, None], -P * mT(Et))
    return alpha[..., None, None] * xp.matmul(xp.matmul(U, D), Vh)


def _register():
    """Declare the names the rules below use (before the ops; the differentiable versions
    are looked up when called). On NumPy the raw versions check (a singular matrix raises
    LinAlgError naming it); elsewhere they compute through the backend's namespace."""
    register("inv", lambda A: _inv_kernel(A, "inv (in a derivative rule): "),
             lambda A: inv(A), _linalg_name("inv"), batch="leading")
    register("inv_ext", _inv_ext, lambda A: inv(A), _linalg_name("inv"), batch="leading")
    register("cofactor", _cofactor, lambda A: apply(COFACTOR, (A,)), _kernel_of(_cofactor_op),
             batch="leading")
    register("det_hvp", _det_hvp, lambda A, E: _det_hvp_differentiable(A, E),
             _kernel_of(_det_hvp_xp), batch="leading")


_register()


INV = defop(
    "linalg_inv", _inv_op, ("A",), node_name="LinalgInvExBackward0",
    vjp={"A": lambda F, g, out: -F.matmul(F.matmul(F.mT(out), g), F.mT(out))},
    jvp={"A": lambda F, t, out: -F.matmul(F.matmul(out, t), out)},
    math={"A": "grad_A = -A^-T grad A^-T", "out": "dY = -A^-1 dA A^-1"},
    source=GILES + ": the inverse",
)


def _slogdet_vjp(F, g, A):
    if g[1] is None:
        return None
    return _scalar_to_matrix(F, g[1]) * F.mT(F.inv_ext(A))


DET = defop(
    "linalg_det", _det_kernel, ("A",),
    vjp={"A": lambda F, g, A: _scalar_to_matrix(F, g) * F.cofactor(A)},
    jvp={"A": lambda F, t, A: F.sum(F.cofactor(A) * t, (-2, -1), False)},
    math={"A": "grad_A = grad * det(A) A^-T  (the cofactor matrix; at a singular A its "
               "continuous extension det(U) det(V) U diag(prod_{j!=i} s_j) V^T from the SVD)",
          "out": "d det = det(A) tr(A^-1 dA) = <cof(A), dA>"},
    source=GILES + ": the determinant (Jacobi's formula); singular case: the adjugate from the "
           "SVD, as in the singular branch of PyTorch's linalg_det_backward",
)


COFACTOR = defop(
    "linalg_cofactor", _cofactor_op, ("A",),
    vjp={"A": lambda F, g, A: F.det_hvp(A, g)},
    jvp={"A": lambda F, t, A: F.det_hvp(A, t)},
    math={"A": "grad_A = H(A)[grad], H the Hessian of det (self-adjoint): "
               "det(A) (tr(A^-1 grad) A^-T - A^-T grad^T A^-T); at a singular A, from the "
               "SVD A = U S V^T: det(UV) U D V^T with D_ii = sum_{k!=i} p_ik E_kk, "
               "D_ij = -p_ij E_ji, E = U^T grad V, p_ij = prod_{l!=i,j} s_l",
          "out": "d cof(A) = H(A)[dA]"},
    source=GILES + ": the determinant, differentiated once more (d A^-T = -A^-T dA^T A^-T); the "
           "singular case from cof(U S V^T) = det(UV) U cof(S) V^T and the minors of a "
           "diagonal S. The node of det's derivative, so det has all derivatives everywhere",
)


SLOGDET = defop(
    "linalg_slogdet", _slogdet_kernel, ("A",), nout=2, out_diff=(1,),
    vjp={"A": _slogdet_vjp},
    jvp={"A": lambda F, t, A: (None, _batched_trace_of_product(F, F.inv_ext(A), t))},
    math={"A": "grad_A = grad_logabsdet * A^-T  (sign is piecewise constant: no gradient; "
               "+-inf at a singular A, as in PyTorch)",
          "out": "dsign = 0, d logabsdet = tr(A^-1 dA)"},
    source=GILES + ": the determinant; d log|det A| = d det(A) / det(A)",
)


def _det_hvp_differentiable(A, E):
    """The Hessian of det applied to E, on Tensors (third derivatives of det; A must be
    invertible): det(A) (tr(A^-1 E) A^-T - A^-T E^T A^-T)."""
    from ..ops import matmul, sum, transpose, unsqueeze

    AiT = transpose(inv(A), -1, -2)
    tr = unsqueeze(unsqueeze(sum(AiT * E, (-2, -1)), -1), -1)
    d = unsqueeze(unsqueeze(det(A), -1), -1)
    return d * (tr * AiT - matmul(matmul(AiT, transpose(E, -1, -2)), AiT))


@documented(INV)
def inv(A):
    """Inverse of a square matrix (or of each matrix in a batch).

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64; ``*`` is any number of batch dimensions.

    Returns
    -------
    Tensor of shape (*, n, n)
        ``A^-1``, same dtype as ``A``.

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square (the message gives its shape).
    LinAlgError
        If a matrix is exactly singular (a zero pivot in its LU factorization), naming the
        batch element and the diagonal element, as PyTorch does. ``A`` is left unchanged.
    """
    _check_square("linalg.inv", "A", A)
    return apply(INV, (_as_input(A),))


@documented(DET, COFACTOR)
def det(A):
    """Determinant of a square matrix (or of each matrix in a batch).

    The gradient is the cofactor matrix ``det(A) A^-T`` (node ``LinalgCofactorBackward0``
    when differentiated again), computed from the SVD when ``A`` is exactly singular, so
    first and second derivatives are exact there too (PyTorch returns a zero gradient at
    an exactly singular ``A`` unless ``create_graph=True``). Third derivatives need an
    invertible ``A``.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64.

    Returns
    -------
    Tensor of shape (*)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    """
    _check_square("linalg.det", "A", A)
    return apply(DET, (_as_input(A),))


@documented(SLOGDET)
def slogdet(A):
    """Sign and log of the absolute value of the determinant.

    At a singular ``A`` the gradient of ``logabsdet`` is infinite: the backward gives
    ``adj(A)^T / 0`` (+-inf, nan where the adjugate is zero), as PyTorch does; a first-order
    backward never raises, so one singular matrix in a batch does not stop the others.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64.

    Returns
    -------
    (sign, logabsdet) : named tuple of Tensors of shape (*)
        ``det(A) = sign * exp(logabsdet)``; ``sign`` is -1, 0 or 1 and has no gradient;
        a singular matrix gives ``sign = 0`` and ``logabsdet = -inf``.

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    """
    _check_square("linalg.slogdet", "A", A)
    sign, logabsdet = apply(SLOGDET, (_as_input(A),))
    return slogdet_return(sign, logabsdet)


@documented(SLOGDET)
def logdet(A):
    """Log-determinant ``log(det(A))``, as ``torch.logdet``.

    Computed as ``where(sign == -1, nan, logabsdet)`` from :func:`slogdet`: ``nan`` for a
    negative determinant (whose entries get a zero gradient, like PyTorch), ``-inf`` for a
    singular matrix.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64.

    Returns
    -------
    Tensor of shape (*)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    """
    from ..ops import where

    _check_square("linalg.logdet", "A", A)
    sign, logabsdet = apply(SLOGDET, (_as_input(A),))
    if dtype_kind(sign.dtype) == "c":  # complex A: log(det) = log(sign) + logabsdet
        from ..ops import log

        return log(sign) + logabsdet
    return where(sign._data == -1, float("nan"), logabsdet)


@documented(INV)
def matrix_power(A, n):
    """``A^n`` for an integer ``n``, as ``torch.linalg.matrix_power``.

    ``n > 0``: repeated squaring with ``matmul`` (about ``2 log2(n)`` products);
    ``n < 0``: the same on ``inv(A)``; ``n = 0``: the identity (broadcast to ``A``'s shape),
    whose gradient with respect to ``A`` is zero; ``n = 1``: a copy of ``A``.

    Parameters
    ----------
    A : Tensor of shape (*, m, m)
    n : int

    Returns
    -------
    Tensor of shape (*, m, m)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    TypeError
        If ``n`` is not an integer.
    LinAlgError
        For ``n < 0`` and a singular ``A``.
    """
    from ..ops import clone, matmul, where

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    s = _check_square("linalg.matrix_power", "A", A)
    A = _as_input(A)
    if n == 0:
        data = _data(A)
        xp = backend_of(data).xp
        eye = xp.eye(s[-1], dtype=native_dtype(backend_of(data), _float_dtype(A)),
                     **on_device_of(data))
        return where(xp.ones(s, dtype=xp.bool, **on_device_of(data)),
                     xp.broadcast_to(eye, s), A)
    if n < 0:
        A, n = inv(A), -n
        if n == 1:
            return A
    if n == 1:
        return clone(A)
    result = None
    base = A
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)
