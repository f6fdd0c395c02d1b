"""Matrix decompositions with matrix-form derivative rules: cholesky, qr, eigh / eigvalsh,
svd / svdvals.

Every rule is written with whole matrices (no loops over entries), batched over leading
dimensions, and named after PyTorch's graph nodes. Conventions shared by all of them:

- ``<X, Y> = sum(X * Y)``; ``sym(X) = (X + X^T) / 2``; ``skew(X) = (X - X^T) / 2``;
  ``diag(v)`` is the diagonal matrix with ``v`` on its diagonal.
- Symmetric inputs (cholesky, eigh) read one triangle only, and their gradient is the
  *symmetric* matrix ``G`` with ``<G, dA> = d(loss)`` for every symmetric ``dA``, as in
  PyTorch. Their JVP reads the symmetric part ``sym(dA)`` of the tangent, which makes JVP
  and VJP exact adjoints for every ``dA``.
- Factors that are only defined up to a choice of basis (eigenvectors of a repeated
  eigenvalue, singular vectors of a repeated singular value) make the chain rule divide by
  a zero gap. The VJP raises a RuntimeError that says so when the loss depends on those
  vectors (their cotangent is not zero), instead of returning nan as PyTorch does. No finite
  value would be right in general: even a basis-invariant loss such as
  ``V diag(f(L)) V^T`` needs the limit of (f(L_j) - f(L_i)) / (L_j - L_i), which the
  cotangent at that point does not carry. Losses that do not depend on those vectors
  (eigenvalues and singular values only, other eigenvectors) get the exact, finite gradient.
  The JVP returns nan in the tangent of the vectors of such a group when the tangent splits
  it, and finite tangents elsewhere.
- The extra columns of a ``full_matrices`` / ``mode="complete"`` factor are any orthonormal
  basis of a complement. Their cotangent is folded into the thin factor when the loss does
  not depend on that basis (``U2 @ U2^T``); otherwise backward raises a RuntimeError.
"""

from __future__ import annotations

import collections

import numpy as np
from scipy.linalg import get_lapack_funcs

from .. import _dual, _state
from .._dispatch import ShapeError, apply
from .._ns import BATCHING
from .._state import STATE
from .._table import defop, documented
from .._tensor import Tensor, wrap
from ..backend import NUMPY, backend_of, numpy_dtype, xp_kernel
from . import solves as _solves  # noqa: F401  (declares F.solve_triangular, used below)
from ._errors import LinAlgError

__all__ = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals"]


# --- helpers of the rule namespace ----------------------------------------------------


def _data(x):
    """The array behind a rule argument (an array, or a Tensor when the backward is
    recorded, or a batch of them); used only for checks and masks, never for values that
    need a gradient. A batch (``vmap``, ``jacfwd``) is its stacked NumPy array."""
    d = x._data if isinstance(x, Tensor) else x
    batched = BATCHING.batched
    return np.asarray(d) if batched is not None and isinstance(d, batched) else d


def _xp(d):
    """(namespace, device keywords) of array ``d``: masks are built on its backend."""
    b = backend_of(d)
    return b.xp, ({} if b is NUMPY or b.lazy else {"device": d.device})


def _on_host(d):
    """Whether ``d``'s values can be read here (NumPy). Elsewhere a check would compute
    (Dask) or wait for the device (CuPy), so the rules do not raise there: they put NaN
    where NumPy would raise (PyTorch returns nan there on every device)."""
    return d.__class__ is np.ndarray or isinstance(d, np.generic)


def _maybe(mask):
    """False only when ``mask`` is known to be all False (computed on the host only)."""
    return bool(mask.any()) if _on_host(mask) else True


def _eye(F, n, like):
    return F.eye(n, dtype=like.dtype)


def _offdiag(d, k):
    """Bool (k, k): True off the diagonal, on ``d``'s backend."""
    xp, dev = _xp(d)
    return ~xp.eye(k, dtype=xp.bool, **dev)


def _diag_embed(F, v):
    """``diag(v)`` for a batch of vectors ``v``: shape (..., k) -> (..., k, k)."""
    return F.unsqueeze(v, -1) * _eye(F, v.shape[-1], v)


def _sym(F, X):
    return 0.5 * (X + F.mT(X))


def _phi(F, X):
    """Murray's Phi: the lower triangle with the diagonal halved."""
    return F.tril(X) - 0.5 * X * _eye(F, X.shape[-1], X)


def _join_cols(F, X1, X2):
    """``[X1 | X2]`` along the last dimension, as products with constant selectors."""
    k, r = X1.shape[-1], X2.shape[-1]
    eye = F.eye(k + r, dtype=X1.dtype)
    return F.matmul(X1, eye[:k, :]) + F.matmul(X2, eye[k:, :])


# Near-degeneracy thresholds: two eigen/singular values closer than
# _GAP_RTOL * n * eps * (largest magnitude) are treated as equal; a cotangent (tangent)
# above sqrt(eps) * (its overall size) on the factor columns of such a pair is "there".
_GAP_RTOL = 100.0


def _eps(x):
    d = _data(x)
    return float(_xp(d)[0].finfo(d.dtype).eps)


def _tol(values):
    """Per matrix (..., 1, 1): the distance below which two of ``values`` count as equal."""
    v = _data(values)
    xp = _xp(v)[0]
    if v.shape[-1] == 0:
        scale = xp.zeros_like(v[..., :1])[..., None]
    else:
        scale = xp.max(xp.abs(v), axis=-1, keepdims=True)[..., None]
    return _GAP_RTOL * max(v.shape[-1], 1) * _eps(v) * scale


def _near_equal(values):
    """Bool mask (..., k, k): off-diagonal pairs of (nearly) equal values, per matrix."""
    v = _data(values)
    gaps = _xp(v)[0].abs(v[..., None, :] - v[..., :, None])
    return (gaps <= _tol(v)) & _offdiag(v, v.shape[-1])


def _fro(x):
    """Frobenius norm per matrix (0 for None), shape (...)."""
    if x is None:
        return 0.0
    d = _data(x)
    xp = _xp(d)[0]
    return xp.sqrt(xp.sum(d * d, axis=(-2, -1)))


def _col_norms(x, like):
    """Euclidean norm of each column of a cotangent, (..., k); zeros like ``like`` (the
    values, (..., k)) for None."""
    if x is None:
        return _xp(_data(like))[0].zeros_like(_data(like))
    d = _data(x)
    xp = _xp(d)[0]
    return xp.sqrt(xp.sum(d * d, axis=-2))


def _batch_index(idx):
    return f" of the matrix at batch index {tuple(int(i) for i in idx)}" if len(idx) else ""


def _raise_where(bad, values, explain):
    """On the host: raise RuntimeError(explain(index, value)) at the first True of
    ``bad``, else return None. Elsewhere: return ``bad`` (the caller puts NaN there)."""
    if not _on_host(bad):
        return bad
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise RuntimeError(explain(idx, float(values[idx])))
    return None


def _poison(F, x, bad):
    """``x`` with NaN in every matrix where ``bad`` (its batch dims, then more) has a
    True: what the rules give off the host where NumPy raises (see :func:`_on_host`)."""
    if bad is None:
        return x
    xp = _xp(bad)[0]
    batch = x.ndim - 2
    any_bad = xp.any(bad, axis=tuple(range(batch, bad.ndim)))
    return F.where(any_bad[..., None, None], float("nan"), x)


def _check_degenerate(near, col_norms, scale, eps, explain):
    """Raise RuntimeError(explain(index, size)) for a pair (i, j) in ``near`` (values that
    are (nearly) equal) when the cotangent of factor column i or j is not zero: the chain
    rule would divide by the ~0 gap there (0/0 at best), and no finite value is right in
    general. ``scale`` (...) is the size of the whole cotangent. Off the host, return the
    mask of such pairs (None on the host)."""
    if not _maybe(near):
        return None
    pair = col_norms[..., :, None] + col_norms[..., None, :]
    xp = _xp(near)[0]
    tol = _scaled(xp, eps, scale)
    bad = near & (pair > tol)
    return _raise_where(bad, None if not _on_host(bad) else np.broadcast_to(pair, near.shape),
                        explain)


def _scaled(xp, eps, scale):
    """sqrt(eps) * scale, as (..., 1, 1) (scale is a number or an array (...))."""
    if isinstance(scale, float):
        return float(np.sqrt(eps)) * scale
    return float(np.sqrt(eps)) * scale[..., None, None]


def _big(x, scale):
    """Entries of ``x`` (data) that are not (numerically) zero next to ``scale`` (...)."""
    xp = _xp(x)[0]
    return xp.abs(x) > _scaled(xp, _eps(x), scale)


def _rows_mask(mask, x):
    """A mask computed from the stacked rows of a batch of tangents ``x`` (``_data``: batch
    axis first) as a batch again, so that it lines up with ``x``'s rows instead of counting
    its batch axis as a logical dim (``jacfwd``, ``hessian``: a degenerate pair gives nan
    in each column whose tangent splits it)."""
    batched = BATCHING.batched
    if mask is None or batched is None or isinstance(mask, batched) or \
            not isinstance(x, batched):
        return mask
    return batched(mask)


def _inverse_gaps(F, gaps, near, undefined=None):
    """``1 / gaps`` off the diagonal, 0 on it and where ``near`` (a gap that is ~0); NaN
    where ``undefined`` (for a JVP whose tangent splits a degenerate pair)."""
    keep = ~near & _offdiag(near, gaps.shape[-1])
    inv = F.where(keep, 1.0 / F.where(keep, gaps, 1.0), 0.0)
    if undefined is not None and _maybe(undefined):
        inv = F.where(undefined, float("nan"), inv)
    return inv


# --- forward kernels on any backend -------------------------------------------------

def _linalg(xp, name, op, why=None):
    """``xp.linalg.<name>``, or NotImplementedError naming the op, the backend and why."""
    fn = getattr(getattr(xp, "linalg", None), name, None)
    if fn is None:
        reason = why or f"its library has no linalg.{name}"
        raise NotImplementedError(f"{op} is not available on the {xp._backend} backend: "
                                  f"{reason}")
    if xp is NUMPY.xp:
        return fn

    def call(*args, **kwargs):  # a library's refusal (Dask: 2-D only, chunk layouts)
        try:
            return fn(*args, **kwargs)
        except (ValueError, NotImplementedError) as error:
            first = str(error).strip().splitlines()[0]
            raise NotImplementedError(f"{op} on the {xp._backend} backend: {first}") from None

    return call


# --- cholesky -------------------------------------------------------------------------


def _not_positive_definite(A, upper):
    """The error for a failed factorization: which matrix, and which leading minor."""
    flat = A.reshape((-1,) + A.shape[-2:])
    (potrf,) = get_lapack_funcs(("potrf",), (flat[0],))
    for b, M in enumerate(flat):
        _, info = potrf(M, lower=not upper)
        if info > 0:
            where = _batch_index(np.unravel_index(b, A.shape[:-2])) if A.ndim > 2 else ""
            return LinAlgError(
                f"the input is not positive-definite: the leading minor of order {info}"
                f"{where} is not positive-definite (only the "
                f"{'upper' if upper else 'lower'} triangle is read)"
            )
    return LinAlgError("the input is not positive-definite")


@xp_kernel
def _cholesky_forward(xp, A, upper):
    if xp is not NUMPY.xp:  # lower factor of the triangle read; U = (chol of A^T)^T
        L = _linalg(xp, "cholesky", "linalg.cholesky")(xp.matrix_transpose(A) if upper else A)
        return xp.matrix_transpose(L) if upper else L
    try:
        return np.linalg.cholesky(A, upper=upper)
    except np.linalg.LinAlgError:
        raise _not_positive_definite(A, upper) from None


def _cholesky_vjp(F, g, out, upper):
    L, gL = (F.mT(out), F.mT(g)) if upper else (out, g)
    S = _sym(F, _phi(F, F.matmul(F.mT(L), gL)))
    S_Linv = F.solve_triangular(L, S, upper=False, left=False)           # S L^-1
    return F.solve_triangular(F.mT(L), S_Linv, upper=True)               # L^-T S L^-1


def _cholesky_jvp(F, t, out, upper):
    L = F.mT(out) if upper else out
    X = F.solve_triangular(L, _sym(F, t), upper=False)                   # L^-1 dA
    X = F.solve_triangular(F.mT(L), X, upper=True, left=False)           # ... L^-T
    dL = F.matmul(L, _phi(F, X))
    return F.mT(dL) if upper else dL


CHOLESKY = defop(
    "linalg_cholesky", _cholesky_forward, ("A",), attrs=("upper",),
    vjp={"A": _cholesky_vjp}, jvp={"A": _cholesky_jvp},
    math={"A": "grad_A = L^-T sym(Phi(L^T grad_L)) L^-1, Phi(X) = tril(X) - diag(X)/2 "
               "(upper=True: L = U^T, grad_L = grad_U^T); symmetric, as in PyTorch",
          "out": "dL = L Phi(L^-1 sym(dA) L^-T)  (upper=True: dU = dL^T)"},
    source="Murray (2016), Differentiation of the Cholesky decomposition, arXiv:1602.07527, "
           "sec. 3 (symbolic forward and reverse rules with Phi); symmetrized as PyTorch's "
           "cholesky_backward",
    node_name="LinalgCholeskyExBackward0",
)


# --- qr -------------------------------------------------------------------------------


@xp_kernel
def _qr_forward(xp, A, mode):
    Q, R = _linalg(xp, "qr", "linalg.qr")(A, mode=mode)
    return Q, R


def _check_full_rank(R, what):
    """The rules divide by R: a (nearly) zero diagonal entry (the leading columns of A are
    linearly dependent) leaves Q without a derivative."""
    R = _data(R)
    xp = _xp(R)[0]
    d = xp.abs(xp.linalg.diagonal(R))
    return _raise_where(d <= _tol(d)[..., 0], d, lambda idx, value: (
        f"linalg.qr {what}: R[{idx[-1]}, {idx[-1]}] = {value:.3g} is (nearly) zero"
        f"{_batch_index(idx[:-1])}: the leading columns of A are linearly dependent, Q is "
        "not unique there and the QR decomposition has no derivative"))


def _qr_tall_vjp(F, gQ, gR, Q, R):
    """A = QR with m >= n, Q (m, n), R (n, n): (gQ + Q copyltu(M)) R^-T,
    M = R gR^T - gQ^T Q, copyltu(M) = tril(M) + tril(M, -1)^T (symmetric)."""
    M = None
    if gR is not None:
        M = F.matmul(R, F.mT(gR))
    if gQ is not None:
        gQtQ = F.matmul(F.mT(gQ), Q)
        M = -gQtQ if M is None else M - gQtQ
    B = F.matmul(Q, F.tril(M) + F.mT(F.tril(M, -1)))
    if gQ is not None:
        B = B + gQ
    bad = _check_full_rank(R, "backward")
    return _poison(F, F.solve_triangular(F.mT(R), B, upper=False, left=False), bad)  # B R^-T


def _qr_tall_jvp(F, t, Q, R):
    bad = _check_full_rank(R, "JVP")
    X = F.solve_triangular(R, F.matmul(F.mT(Q), t), upper=True, left=False)  # Q^T dA R^-1
    low = F.tril(X, -1)
    dR_Rinv = X - low + F.mT(low)                     # = X - C, C = low - low^T skew
    dR = F.matmul(dR_Rinv, R)
    dQ = F.solve_triangular(R, t, upper=True, left=False) - F.matmul(Q, dR_Rinv)
    return _poison(F, dQ, bad), _poison(F, dR, bad)


def _fold_complement(F, U1, U2, g1, g2, what, part):
    """Cotangent of the thin factor U1 carrying that of the complement columns U2.

    U2 is any orthonormal basis of range(U1)^perp: U1^T dU2 = -dU1^T U2 is determined,
    U2^T dU2 (skew) is a free choice. So <g2, dU2> = <-U2 g2^T U1, dU1> when the loss
    does not depend on that choice, i.e. skew(U2^T g2) = 0; otherwise raise.
    """
    K = F.matmul(F.mT(U2), g2)
    r = K.shape[-1]

    def explain(idx, value):
        return (
            f"{what} backward: the loss depends on the choice of the last {r} {part} "
            f"(component {value:.3g}{_batch_index(idx[:-2])}). They are any "
            "orthonormal basis of the orthogonal complement, so such a loss has no gradient; "
            "use the reduced factor, or a loss invariant to that basis (e.g. U2 @ U2.mT)"
        )

    bad = None
    if r > 1:
        skew = _data(K) - _xp(_data(K))[0].matrix_transpose(_data(K))
        bad = _raise_where(_big(skew, _fro(g2)), abs(skew), explain)
    folded = _poison(F, -F.matmul(U2, F.matmul(F.mT(g2), U1)), bad)
    return folded if g1 is None else g1 + folded


def _qr_vjp(F, g, out, mode):
    gQ, gR = g
    Q, R = out
    m, n = Q.shape[-2], R.shape[-1]
    if gQ is None and gR is None:
        return None
    if mode == "complete" and m > n:  # Q = [Q1 | Q2], R = [R1; 0]
        Q1 = Q[..., :, :n]
        if gQ is not None:
            gQ = _fold_complement(F, Q1, Q[..., :, n:], gQ[..., :, :n], gQ[..., :, n:],
                                  "linalg.qr(mode='complete')", "columns of Q")
        Q, R = Q1, R[..., :n, :]
        gR = None if gR is None else gR[..., :n, :]
    if m >= n:
        return _qr_tall_vjp(F, gQ, gR, Q, R)
    # Wide: A = [X | Y] with X = Q R1 (square) and R2 = Q^T Y.
    R1, R2 = R[..., :, :m], R[..., :, m:]
    if gR is None:
        gX = _qr_tall_vjp(F, gQ, None, Q, R1)
        return _join_cols(F, gX, F.zeros(gX.shape[:-1] + (n - m,), gX.dtype))
    gR1, gR2 = gR[..., :, :m], gR[..., :, m:]
    gQ_X = F.matmul(F.matmul(Q, R2), F.mT(gR2))                   # Y gR2^T
    if gQ is not None:
        gQ_X = gQ_X + gQ
    return _join_cols(F, _qr_tall_vjp(F, gQ_X, gR1, Q, R1), F.matmul(Q, gR2))


def _qr_jvp(F, t, out, mode):
    Q, R = out
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        Q1, Q2 = Q[..., :, :n], Q[..., :, n:]
        dQ1, dR1 = _qr_tall_jvp(F, t, Q1, R[..., :n, :])
        dQ2 = -F.matmul(Q1, F.matmul(F.mT(dQ1), Q2))
        return _join_cols(F, dQ1, dQ2), F.matmul(F.eye(m, n, dtype=R.dtype), dR1)
    if m >= n:
        return _qr_tall_jvp(F, t, Q, R)
    R1, R2 = R[..., :, :m], R[..., :, m:]
    dQ, dR1 = _qr_tall_jvp(F, t[..., :, :m], Q, R1)
    dR2 = F.matmul(F.mT(dQ), F.matmul(Q, R2)) + F.matmul(F.mT(Q), t[..., :, m:])
    return dQ, _join_cols(F, dR1, dR2)


QR = defop(
    "linalg_qr", _qr_forward, ("A",), attrs=("mode",), nout=2,
    vjp={"A": _qr_vjp}, jvp={"A": _qr_jvp},
    math={"A": "m >= n: grad_A = (grad_Q + Q copyltu(M)) R^-T, M = R grad_R^T - grad_Q^T Q, "
               "copyltu(M) = tril(M) + tril(M, -1)^T; m < n: A = [X | Y], X = Q R1, "
               "R2 = Q^T Y: grad_Y = Q grad_R2, grad_X = the m >= n rule with "
               "grad_Q + Y grad_R2^T and grad_R1; mode='complete', m > n: "
               "grad_Q1 - Q2 grad_Q2^T Q1 (raises if skew(Q2^T grad_Q2) != 0)",
          "out": "X = Q^T dA R^-1, C = tril(X, -1) - tril(X, -1)^T: dR = (X - C) R, "
                 "dQ = dA R^-1 - Q (X - C); m < n: dR2 = dQ^T Y + Q^T dY"},
    source="Seeger et al. (2017), Auto-differentiating linear algebra, arXiv:1710.08717, "
           "sec. 3; Walter and Lehmann, Algorithmic differentiation of linear algebra functions "
           "with application in optimum experimental design (extended version), "
           "arXiv:1001.1654 (QR, m >= n); wide case by splitting A = [X | Y] as in Liao et "
           "al. (2019), Differentiable programming tensor networks, Phys. Rev. X 9, 031041",
    node_name="LinalgQrBackward0",
)


# --- eigh -----------------------------------------------------------------------------


@xp_kernel
def _eigh_forward(xp, A, UPLO):
    if xp is NUMPY.xp:
        return np.linalg.eigh(A, UPLO=UPLO)
    # the Array API's eigh reads the lower triangle: read the upper one through A^T
    w, V = _linalg(xp, "eigh", "linalg.eigh")(
        xp.matrix_transpose(A) if UPLO == "U" else A)
    return w, V


def _or(a, b):
    if a is None:
        return b
    return a if b is None else a | b


def _eigenvalue_cotangent_on_pair(near, gL):
    """Mask (..., k, k) of (nearly) equal pairs (i, j) where the eigenvalue cotangent of i
    or j is not zero, or None. There a loss that also reads the eigenvectors (their
    cotangent is zero on columns i, j) is typically a spectral function V f(L) V^T with
    f(lambda) = 0 (at A = 0, say): its cotangent on the eigenvectors vanishes, yet its
    derivative is the divided difference f'(lambda) on the pair, not the 0 that the chain
    rule's 0/0 would give. The rule puts nan there (as PyTorch, whose 0/0 is nan)."""
    if gL is None or not _maybe(near):
        return None
    d = _data(gL)
    xp = _xp(d)[0]
    scale = xp.sqrt(xp.sum(d * d, axis=-1, keepdims=True))
    big = xp.abs(d) > float(np.sqrt(_eps(d))) * scale
    return near & (big[..., :, None] | big[..., None, :])


def _eigh_vjp(F, g, out, UPLO):
    gL, gV = g
    L, V = out
    if gL is None and gV is None:
        return None
    if gV is None:  # eigenvalues only: no eigenvalue gaps, finite for repeated eigenvalues
        inner = _diag_embed(F, gL)
    else:
        near = _near_equal(L)
        lam = _data(L)

        def explain(idx, size):
            b, i, j = idx[:-2], idx[-2], idx[-1]
            return (
                f"linalg.eigh backward: eigenvalues {i} and {j}{_batch_index(b)} are (nearly) "
                f"equal ({lam[b + (i,)]:.6g} and {lam[b + (j,)]:.6g}) and the loss depends on "
                f"their eigenvectors (cotangent of size {size:.3g}). Eigenvectors of a "
                "repeated eigenvalue are defined only up to a rotation within the eigenspace, "
                "and the chain rule through them divides by the eigenvalue gap (PyTorch "
                "returns nan). Use the eigenvalues only (eigvalsh), compute the quantity "
                "without eigenvectors, or perturb A to split the eigenvalues"
            )

        bad = _check_degenerate(near, _col_norms(gV, L), _fro(gV), _eps(L), explain)
        bad = _or(bad, _eigenvalue_cotangent_on_pair(near, gL))
        VtgV = F.matmul(F.mT(V), gV)
        E = F.unsqueeze(L, -2) - F.unsqueeze(L, -1)          # E_ij = lambda_j - lambda_i
        inner = 0.5 * (VtgV - F.mT(VtgV)) * _inverse_gaps(F, E, near, bad)
        if gL is not None:
            inner = inner + _diag_embed(F, gL)
    return F.matmul(V, F.matmul(inner, F.mT(V)))


def _eigh_jvp(F, t, out, UPLO):
    L, V = out
    X = F.matmul(F.mT(V), F.matmul(_sym(F, t), V))
    E = F.unsqueeze(L, -2) - F.unsqueeze(L, -1)
    near = _near_equal(L)
    undefined = _rows_mask(near & _big(_data(X), _fro(X)), X) if _maybe(near) else None
    dV = F.matmul(V, X * _inverse_gaps(F, E, near, undefined))
    return F.diagonal(X, 0, -2, -1), dV


EIGH = defop(
    "linalg_eigh", _eigh_forward, ("A",), attrs=("UPLO",), nout=2,
    vjp={"A": _eigh_vjp}, jvp={"A": _eigh_jvp},
    math={"A": "grad_A = V (diag(grad_L) + skew(V^T grad_V) / E) V^T, E_ij = L_j - L_i "
               "(0 on the diagonal; where E_ij ~ 0: 0 if columns i, j of grad_V and "
               "grad_L_i, grad_L_j are 0, nan if only grad_L_i or grad_L_j is not (a "
               "spectral function V f(L) V^T with f(L_i) = 0), else RuntimeError); only "
               "grad_L: V diag(grad_L) V^T, no gaps; symmetric, "
               "as in PyTorch",
          "out": "X = V^T sym(dA) V: dL = diagonal(X), dV = V (X / E)  (where E_ij ~ 0: 0 "
                 "if X_ij ~ 0, else nan: the eigenvectors are not differentiable there)"},
    source="Giles (2008), An extended collection of matrix derivative results for forward "
           "and reverse mode AD: eigenvalues and eigenvectors; Seeger et al. (2017), "
           "Auto-differentiating linear algebra, arXiv:1710.08717, sec. 3 (symmetric "
           "eigendecomposition)",
    node_name="LinalgEighBackward0",
)


# --- svd ------------------------------------------------------------------------------


@xp_kernel
def _svd_forward(xp, A, full_matrices):
    U, S, Vh = _linalg(xp, "svd", "linalg.svd")(A, full_matrices=full_matrices)
    return U, S, Vh


def _svd_thin(F, U, gU, Vh, gVh, k):
    """Thin factors and cotangents from full ones (complement columns folded in)."""
    m, n = U.shape[-2], Vh.shape[-1]
    if m > k:
        U1 = U[..., :, :k]
        if gU is not None:
            gU = _fold_complement(F, U1, U[..., :, k:], gU[..., :, :k], gU[..., :, k:],
                                  "linalg.svd(full_matrices=True)", "columns of U")
        U = U1
    if n > k:
        V, V1 = F.mT(Vh), F.mT(Vh[..., :k, :])
        if gVh is not None:
            gV = F.mT(gVh)
            gV = _fold_complement(F, V1, V[..., :, k:], gV[..., :, :k], gV[..., :, k:],
                                  "linalg.svd(full_matrices=True)", "rows of Vh")
            gVh = F.mT(gV)
        Vh = F.mT(V1)
    return U, gU, Vh, gVh


def _inverse_singular(F, S, small, undefined=None):
    keep = ~small
    inv = F.where(keep, 1.0 / F.where(keep, S, 1.0), 0.0)
    if undefined is not None and _maybe(undefined):
        inv = F.where(undefined, float("nan"), inv)
    return inv


def _small_singular(S):
    """Bool mask (..., k) of (nearly) zero singular values."""
    return _data(S) <= _tol(S)[..., 0]


def _svd_gaps(F, S):
    """Masks and the two gap matrices of Townsend's rule, split so that only the first
    divides by a difference of singular values:
    1 / (s_j^2 - s_i^2) (a s_j + b s_i) = (a + b) / 2 (s_j - s_i) + (a - b) / 2 (s_j + s_i)."""
    s_row, s_col = F.unsqueeze(S, -2), F.unsqueeze(S, -1)
    near = _near_equal(S)                                   # s_i ~ s_j
    s = _data(S)
    both_zero = near & ((s[..., None, :] + s[..., :, None]) <= _tol(S))
    return near, both_zero, s_row - s_col, s_row + s_col


def _svd_vjp(F, g, out, full_matrices):
    gU, gS, gVh = g
    U, S, Vh = out
    k = S.shape[-1]
    if full_matrices:
        U, gU, Vh, gVh = _svd_thin(F, U, gU, Vh, gVh, k)
    if gU is None and gVh is None:
        if gS is None:
            return None
        return F.matmul(U * F.unsqueeze(gS, -2), Vh)        # U diag(gS) V^T: no gaps
    m, n = U.shape[-2], Vh.shape[-1]
    s = _data(S)
    near, both_zero, minus, plus = _svd_gaps(F, S)
    gV = None if gVh is None else F.mT(gVh)

    def explain(idx, size):
        b, i, j = idx[:-2], idx[-2], idx[-1]
        return (
            f"linalg.svd backward: singular values {i} and {j}{_batch_index(b)} are (nearly) "
            f"equal ({s[b + (i,)]:.6g} and {s[b + (j,)]:.6g}) and the loss depends on their "
            f"singular vectors (cotangent of size {size:.3g}). Singular vectors of a repeated "
            "singular value are defined only up to a common rotation, and the chain rule "
            "through them divides by the gap (PyTorch returns nan). Use the singular values "
            "only (svdvals), compute the quantity without singular vectors, or perturb A"
        )

    bad = _check_degenerate(near, _col_norms(gU, S) + _col_norms(gV, S),
                            _fro(gU) + _fro(gV), _eps(S), explain)
    bad = _or(bad, _eigenvalue_cotangent_on_pair(near, gS))
    J = None  # J_U = U^T gU - gU^T U and J_V = V^T gV - gV^T V, as (J_U + J_V, J_U - J_V)
    if gU is not None:
        UtgU = F.matmul(F.mT(U), gU)
        JU = UtgU - F.mT(UtgU)
        J = (JU, JU)
    if gV is not None:
        VtgV = F.matmul(Vh, gV)
        JV = VtgV - F.mT(VtgV)
        J = (JV, -JV) if J is None else (J[0] + JV, J[1] - JV)
    inner = (0.5 * J[0] * _inverse_gaps(F, minus, near, bad)
             + 0.5 * J[1] * _inverse_gaps(F, plus, both_zero))
    if gS is not None:
        inner = inner + _diag_embed(F, gS)
    gA = F.matmul(U, F.matmul(inner, Vh))
    small = _small_singular(S)

    def explain_small(idx, size):
        b, i = idx[:-2], idx[-1]
        return (
            f"linalg.svd backward: singular value {i}{_batch_index(b)} is (nearly) zero "
            f"({s[b + (i,)]:.3g}) and the cotangent of {'U' if m > k else 'Vh'} has a "
            f"component of size {size:.3g} outside the span of the factor; the singular "
            "vectors of a zero singular value of a rectangular matrix are not unique, so "
            "this loss has no gradient there"
        )

    if m > k and gU is not None:  # (I - U U^T) gU S^-1 V^T
        P = gU - F.matmul(U, F.matmul(F.mT(U), gU))
        if _maybe(small):
            norms = _col_norms(P, S)[..., None, :]
            gA = _poison(F, gA, _raise_where(small[..., None, :] & _big(norms, _fro(gU)),
                                             norms, explain_small))
        gA = gA + F.matmul(P * F.unsqueeze(_inverse_singular(F, S, small), -2), Vh)
    if n > k and gVh is not None:  # U S^-1 gVh (I - V V^T)
        P = gVh - F.matmul(F.matmul(gVh, F.mT(Vh)), Vh)
        if _maybe(small):
            norms = _col_norms(F.mT(P), S)[..., None, :]
            gA = _poison(F, gA, _raise_where(small[..., None, :] & _big(norms, _fro(gVh)),
                                             norms, explain_small))
        gA = gA + F.matmul(U, F.unsqueeze(_inverse_singular(F, S, small), -1) * P)
    return gA


def _svd_jvp(F, t, out, full_matrices):
    U, S, Vh = out
    k = S.shape[-1]
    Uf, Vf = U, F.mT(Vh)
    if full_matrices:
        U, Vh = U[..., :, :k], Vh[..., :k, :]
    m, n = U.shape[-2], Vh.shape[-1]
    V = F.mT(Vh)
    dP = F.matmul(F.mT(U), F.matmul(t, V))                 # U^T dA V
    near, both_zero, minus, plus = _svd_gaps(F, S)
    sym, skew = dP + F.mT(dP), dP - F.mT(dP)
    scale = _fro(dP)
    inv_minus = _inverse_gaps(F, minus, near,
                              _rows_mask(near & _big(_data(sym), scale), sym)
                              if _maybe(near) else None)
    inv_plus = _inverse_gaps(F, plus, both_zero,
                             _rows_mask(both_zero & _big(_data(skew), scale), skew)
                             if _maybe(both_zero) else None)
    # (dP S + S dP^T) / E and (S dP + dP^T S) / E, E_ij = s_j^2 - s_i^2, split as in the VJP
    dU = F.matmul(U, 0.5 * (sym * inv_minus + skew * inv_plus))
    dV = F.matmul(V, 0.5 * (sym * inv_minus - skew * inv_plus))
    small = _small_singular(S)
    if m > k:
        dAV = F.matmul(t, V)
        P = dAV - F.matmul(U, F.matmul(F.mT(U), dAV))
        undefined = _rows_mask(small & _big(_col_norms(P, S)[..., None, :], _fro(P))[..., 0, :],
                               P)
        dU = dU + P * F.unsqueeze(_inverse_singular(F, S, small, undefined), -2)
    if n > k:
        dAtU = F.matmul(F.mT(t), U)
        P = dAtU - F.matmul(V, F.matmul(Vh, dAtU))
        undefined = _rows_mask(small & _big(_col_norms(P, S)[..., None, :], _fro(P))[..., 0, :],
                               P)
        dV = dV + P * F.unsqueeze(_inverse_singular(F, S, small, undefined), -2)
    if full_matrices and m > k:  # complement: U1^T dU2 = -dU1^T U2, U2^T dU2 = 0
        U2 = Uf[..., :, k:]
        dU = _join_cols(F, dU, -F.matmul(U, F.matmul(F.mT(dU), U2)))
    if full_matrices and n > k:
        V2 = Vf[..., :, k:]
        dV = _join_cols(F, dV, -F.matmul(V, F.matmul(F.mT(dV), V2)))
    return dU, F.diagonal(dP, 0, -2, -1), F.mT(dV)


SVD = defop(
    "linalg_svd", _svd_forward, ("A",), attrs=("full_matrices",), nout=3,
    vjp={"A": _svd_vjp}, jvp={"A": _svd_jvp},
    math={"A": "grad_A = U [(J_U S + S J_V) / E + diag(grad_S)] V^T "
               "+ (I - U U^T) grad_U S^-1 V^T + U S^-1 grad_V^T (I - V V^T), "
               "J_U = U^T grad_U - grad_U^T U, J_V = V^T grad_V - grad_V^T V, "
               "E_ij = S_j^2 - S_i^2, computed as (J_U + J_V)_ij / 2 (S_j - S_i) + "
               "(J_U - J_V)_ij / 2 (S_j + S_i) (0 on the diagonal; where S_i ~ S_j: 0 if "
               "columns i, j of grad_U, grad_V and grad_S_i, grad_S_j are 0, nan if only "
               "grad_S_i or grad_S_j is not, else RuntimeError); the last two terms "
               "only when m > k resp. n > k; only grad_S: U diag(grad_S) V^T, no gaps; "
               "full_matrices: grad_U1 - U2 grad_U2^T U1 (RuntimeError if "
               "skew(U2^T grad_U2) != 0), likewise for V",
          "out": "dP = U^T dA V: dS = diagonal(dP), dU = U ((dP S + S dP^T) / E) "
                 "+ (I - U U^T) dA V S^-1, dV = V ((S dP + dP^T S) / E) "
                 "+ (I - V V^T) dA^T U S^-1  (split as in the VJP; nan where a tangent "
                 "splits a repeated singular value); full_matrices: dU2 = -U1 dU1^T U2"},
    source="Townsend (2016), Differentiating the singular value decomposition (tech. note), "
           "reverse rule for A-bar and forward rule for dU, dS, dV; as PyTorch's svd_backward "
           "and JAX's svd_jvp_rule",
    node_name="LinalgSvdBackward0",
)


# --- public functions -----------------------------------------------------------------

QRResult = collections.namedtuple("linalg_qr", ["Q", "R"])
EighResult = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SVDResult = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])


def _check_input(name, A, square):
    """The array behind ``A``, after checking its shape and dtype (naming ``name``)."""
    data = A._data if isinstance(A, Tensor) else np.asarray(A)
    if data.ndim < 2:
        raise ShapeError(f"linalg.{name}: A must have at least 2 dimensions (a matrix or a "
                         f"batch of matrices), got shape {tuple(data.shape)}")
    if square and data.shape[-1] != data.shape[-2]:
        raise ShapeError(f"linalg.{name}: A must be a square matrix or a batch of square "
                         f"matrices (..., n, n), got shape {tuple(data.shape)}")
    if numpy_dtype(data.dtype) not in (np.float32, np.float64):
        raise TypeError(f"linalg.{name}: A must be float32 or float64, got {data.dtype}")
    return data


def _needs_grad(A):
    """Whether a derivative of ``A`` may be asked for: it requires grad (and grad mode is
    on), or it carries a forward-mode tangent. Then the factors the rules need are computed
    and recorded, as PyTorch's ``_may_require_fw_or_bw_grad``."""
    if not isinstance(A, Tensor):
        return False
    if A._requires_grad and _state.STATE.enabled:
        return True
    tangent_of = _dual.tangent_of
    return bool(STATE.dual_level) and tangent_of(A) is not None


@documented(CHOLESKY)
def cholesky(A, *, upper=False):
    """Cholesky factor of a symmetric positive-definite matrix: ``A = L L^T``.

    Only the lower triangle of ``A`` is read (the upper one with ``upper=True``), as in
    ``torch.linalg.cholesky``. The gradient is PyTorch's: the symmetric matrix ``G`` with
    ``<G, dA> = d(loss)`` for every symmetric ``dA``. It is the right gradient when ``A`` is
    built symmetric (``B @ B.mT``, ``(B + B.mT) / 2``); it is not the gradient of the
    function that reads one triangle (that would be ``tril(2 G) - diag(G)``).

    Parameters
    ----------
    A : Tensor, shape (..., n, n), float32 or float64
        Symmetric positive-definite matrices.
    upper : bool, default False
        Return the upper factor ``U = L^T`` (``A = U^T U``), read from the upper triangle.

    Returns
    -------
    Tensor, shape (..., n, n)
        ``L`` (lower triangular, positive diagonal), or ``U`` when ``upper``.

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions or is not square (naming the shape).
    TypeError
        When ``A`` is not float32 or float64.
    LinAlgError
        When a matrix is not positive-definite; the message names the leading minor that
        fails and the batch index. It is a ``numpy.linalg.LinAlgError`` and a RuntimeError.
    NotImplementedError
        For higher-order derivatives, unless ``chainrule.linalg.solve_triangular`` exists.
    """
    _check_input("cholesky", A, square=True)
    return apply(CHOLESKY, (A,), (bool(upper),))


@documented(QR)
def qr(A, mode="reduced"):
    """QR decomposition ``A = Q R``, ``Q`` with orthonormal columns, ``R`` upper triangular.

    Values are LAPACK's (Householder; the diagonal of ``R`` may be negative), as in
    ``torch.linalg.qr``; the gradient is that of this (locally smooth) choice. Tall, square
    and wide ``A`` are all differentiable. ``mode="complete"`` with ``m > n``: the last
    ``m - n`` columns of ``Q`` are any orthonormal basis of the complement of the range of
    ``A``; a loss that depends on them only through that subspace (``Q2 @ Q2.mT``) has a
    gradient, one that depends on the choice of basis raises a RuntimeError in backward
    (PyTorch raises for every use of mode='complete' with m > n). ``mode="r"`` returns an
    empty ``Q``, like PyTorch, but ``R`` stays differentiable (PyTorch raises in backward).

    Parameters
    ----------
    A : Tensor, shape (..., m, n), float32 or float64
    mode : {"reduced", "complete", "r"}, default "reduced"
        With ``k = min(m, n)``: ``"reduced"`` gives ``Q`` (..., m, k) and ``R`` (..., k, n);
        ``"complete"`` gives ``Q`` (..., m, m) and ``R`` (..., m, n); ``"r"`` gives an empty
        ``Q`` (shape (0,)) and ``R`` (..., k, n).

    Returns
    -------
    (Q, R) : named tuple ``linalg_qr``

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions, or for an unknown ``mode``.
    TypeError
        When ``A`` is not float32 or float64.
    RuntimeError
        In backward, for a mode='complete' loss that depends on the basis of the complement,
        and when a diagonal entry of ``R`` is (nearly) zero (the leading ``min(m, n)``
        columns of ``A`` are linearly dependent: no derivative there).
    """
    data = _check_input("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ShapeError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    if mode == "r":
        xp, dev = _xp(data)
        empty = wrap(xp.empty((0,), dtype=data.dtype, **dev))
        if _needs_grad(A) or xp is not NUMPY.xp:
            return QRResult(empty, apply(QR, (A,), ("reduced",))[1])
        return QRResult(empty, wrap(np.linalg.qr(data, mode="r")))
    return QRResult(*apply(QR, (A,), (mode,)))


def _check_uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise ShapeError(f"linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}")


@documented(EIGH)
def eigh(A, UPLO="L"):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix:
    ``A = V diag(L) V^T``.

    Only the lower triangle of ``A`` is read (the upper one with ``UPLO="U"``), as in
    ``torch.linalg.eigh``; the gradient is PyTorch's symmetric one (see :func:`cholesky`).
    Eigenvectors are defined up to sign (the rule handles that: use losses that do not
    depend on the sign), and up to a rotation within the eigenspace of a repeated
    eigenvalue. Only the eigenvector cotangent makes the backward divide by eigenvalue gaps:
    where two eigenvalues are (nearly) equal and the loss depends on their eigenvectors,
    backward raises a RuntimeError naming both eigenvalues (PyTorch returns nan). Losses of
    the eigenvalues alone, or of eigenvectors of simple eigenvalues only, keep a finite,
    exact gradient for repeated eigenvalues. The JVP of such eigenvectors is nan when the
    tangent splits their eigenspace.

    Parameters
    ----------
    A : Tensor, shape (..., n, n), float32 or float64
    UPLO : {"L", "U"}, default "L"
        Which triangle of ``A`` is read.

    Returns
    -------
    (eigenvalues, eigenvectors) : named tuple ``linalg_eigh``
        Shapes (..., n) and (..., n, n); eigenvector ``i`` is column ``i``.

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions or is not square, or ``UPLO`` is unknown.
    TypeError
        When ``A`` is not float32 or float64.
    RuntimeError
        In backward, when the loss depends on eigenvectors of a (nearly) repeated eigenvalue
        (the message names both eigenvalues).
    """
    _check_input("eigh", A, square=True)
    _check_uplo("eigh", UPLO)
    return EighResult(*apply(EIGH, (A,), (UPLO,)))


@documented(EIGH)
def eigvalsh(A, UPLO="L"):
    """Eigenvalues (ascending) of a symmetric matrix, reading one triangle (see :func:`eigh`).

    When ``A`` requires grad this records ``linalg_eigh`` (``LinalgEighBackward0``, as in
    PyTorch); its gradient ``V diag(grad) V^T`` divides by no gap, so it is finite for
    repeated eigenvalues (there it is one valid choice of subgradient; it is the gradient
    whenever ``grad`` is equal on each group of equal eigenvalues).

    Parameters
    ----------
    A : Tensor, shape (..., n, n), float32 or float64
    UPLO : {"L", "U"}, default "L"

    Returns
    -------
    Tensor, shape (..., n)

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions or is not square, or ``UPLO`` is unknown.
    TypeError
        When ``A`` is not float32 or float64.
    """
    data = _check_input("eigvalsh", A, square=True)
    _check_uplo("eigvalsh", UPLO)
    if _needs_grad(A) or not _on_host(data):
        return apply(EIGH, (A,), (UPLO,))[0]
    return wrap(np.linalg.eigvalsh(data, UPLO=UPLO))


@documented(SVD)
def svd(A, full_matrices=True, *, driver=None):
    """Singular value decomposition ``A = U diag(S) Vh``, singular values descending.

    Tall, square and wide ``A``. Singular vectors are defined up to a common sign of
    ``u_i, v_i`` (the rule handles that), and up to a common rotation within the subspace
    of a repeated singular value: where two singular values are (nearly) equal and the loss
    depends on their singular vectors, backward raises a RuntimeError naming them (PyTorch
    returns nan); likewise for a (nearly) zero singular value of a rectangular ``A`` when
    the cotangent of ``U``/``Vh`` has a component outside their span. Losses of ``S`` alone
    keep a finite gradient. ``full_matrices=True`` (the default, as in PyTorch): the extra
    columns of ``U`` / rows of ``Vh`` are any orthonormal basis of a complement; their
    cotangent is folded into the thin factors when the loss does not depend on that basis
    (``U2 @ U2.mT``) and raises otherwise (PyTorch silently drops it).

    Parameters
    ----------
    A : Tensor, shape (..., m, n), float32 or float64
    full_matrices : bool, default True
        With ``k = min(m, n)``: True gives ``U`` (..., m, m) and ``Vh`` (..., n, n); False
        gives ``U`` (..., m, k) and ``Vh`` (..., k, n). ``S`` is (..., k).
    driver : None
        Accepted for PyTorch compatibility (a CUDA-only choice there); ignored.

    Returns
    -------
    (U, S, Vh) : named tuple ``linalg_svd``

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions.
    TypeError
        When ``A`` is not float32 or float64.
    RuntimeError
        In backward, for a cotangent that depends on the choice of singular vectors (see
        above); the message names the singular values.
    """
    _check_input("svd", A, square=False)
    return SVDResult(*apply(SVD, (A,), (bool(full_matrices),)))


@documented(SVD)
def svdvals(A, *, driver=None):
    """Singular values of ``A`` (..., m, n), descending, shape (..., min(m, n)).

    When ``A`` requires grad this records ``linalg_svd`` (``LinalgSvdBackward0``, as in
    PyTorch) with thin factors; its gradient ``U diag(grad) V^T`` divides by no gap, so it
    is finite for repeated singular values (e.g. ``I`` for ``sum(svdvals(A))`` at
    ``A = I``).

    Parameters
    ----------
    A : Tensor, shape (..., m, n), float32 or float64
    driver : None
        Accepted for PyTorch compatibility; ignored.

    Returns
    -------
    Tensor, shape (..., min(m, n))

    Raises
    ------
    ValueError
        When ``A`` has fewer than 2 dimensions.
    TypeError
        When ``A`` is not float32 or float64.
    """
    data = _check_input("svdvals", A, square=False)
    if _needs_grad(A) or not _on_host(data):
        return apply(SVD, (A,), (False,))[1]
    return wrap(np.linalg.svd(data, compute_uv=False))
