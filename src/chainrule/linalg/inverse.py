"""Inverses, determinants and solves: inv, det, slogdet, logdet, solve, solve_triangular,
cholesky_solve, pinv, lstsq, matrix_exp, matrix_power, cross, multi_dot, solve_sylvester.

Every derivative rule is written in matrix form. The key identity is the differential of
the inverse, ``d(A^-1) = -A^-1 dA A^-1`` (Giles 2008, the inverse), from which the rules of
``solve`` and friends follow by the product rule; a VJP is then read off from
``<G, dY> = <grad_A, dA>`` with ``<X, Y> = tr(X^T Y)``.

Primitives declared here (table name, graph node, public functions):

- ``linalg_inv`` (``LinalgInvExBackward0``): inv, matrix_power with n < 0
- ``linalg_det`` (``LinalgDetBackward0``): det
- ``linalg_cofactor`` (``LinalgCofactorBackward0``): det's gradient ``det(A) A^-T``, recorded
  when det is differentiated with ``create_graph=True``
- ``linalg_slogdet`` (``LinalgSlogdetBackward0``): slogdet, logdet
- ``linalg_solve`` (``LinalgSolveExBackward0``): solve
- ``linalg_solve_triangular`` (``LinalgSolveTriangularBackward0``): solve_triangular,
  cholesky_solve
- ``linalg_pinv`` (``LinalgPinvBackward0``): pinv, lstsq
- ``linalg_matrix_exp`` (``LinalgMatrixExpBackward0``): matrix_exp
- ``linalg_cross`` (``LinalgCrossBackward0``): cross
- ``solve_sylvester`` (``SolveSylvesterBackward0``): solve_sylvester

``logdet``, ``cholesky_solve``, ``lstsq``, ``matrix_power`` and ``multi_dot`` are exact
compositions of these and of ``matmul``/``where``.

The rule namespace ``F`` gains (see :func:`chainrule._ns.register`): ``inv``,
``inv_ext`` (inv with +-inf at singular matrices), ``solve`` (matrix right-hand side),
``cofactor``, ``det_hvp``,
``matrix_exp_frechet``, ``cross`` and ``solve_sylvester``.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np
import scipy.linalg

from .._dispatch import ShapeError, apply
from .._ns import RAW, register
from .._table import defop, documented
from .._tensor import Tensor, wrap
from ..backend import NUMPY, backend_of, native_dtype, numpy_dtype, on_device_of, xp_kernel
from ._errors import LinAlgError  # one class for all of linalg: NumPy's and a RuntimeError

__all__ = [
    "LinAlgError", "inv", "det", "slogdet", "logdet", "solve", "solve_triangular",
    "cholesky_solve", "pinv", "lstsq", "matrix_exp", "matrix_power", "cross", "multi_dot",
    "solve_sylvester",
]


GILES = "Giles (2008), An extended collection of matrix derivative results for forward and " \
        "reverse mode automatic differentiation"

slogdet_return = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])
lstsq_return = collections.namedtuple(
    "linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# --- argument checks ---------------------------------------------------------------------


def _is_array(x):
    return isinstance(x, (Tensor, np.ndarray)) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _data(x):
    if isinstance(x, Tensor):
        return x._data
    return x if _is_array(x) else np.asarray(x)


def _shape(x):
    return tuple(x.shape) if _is_array(x) else np.shape(x)


def _as_input(x):
    """Tensors and arrays of any backend pass through; array-likes become NumPy arrays."""
    return x if _is_array(x) else np.asarray(x)


def _describe(names, shapes):
    return " and ".join(f"{n} of shape {tuple(s)}" for n, s in zip(names, shapes))


def _shape_error(op, problem, names, shapes):
    return ShapeError(f"{op}: {problem}, got {_describe(names, shapes)}")


def _check_square(op, name, x, names=None, shapes=None):
    """``x`` must be ``(*, n, n)``; the message names every argument's shape."""
    s = _shape(x)
    names = names or (name,)
    shapes = shapes or (s,)
    if len(s) < 2:
        raise _shape_error(op, f"{name} must have at least 2 dimensions", names, shapes)
    if s[-1] != s[-2]:
        raise _shape_error(op, f"{name} must be a batch of square matrices, but they are "
                               f"{s[-2]} by {s[-1]} matrices", names, shapes)
    return s


def _batch(op, names, shapes, batches):
    try:
        return np.broadcast_shapes(*batches)
    except ValueError:
        raise _shape_error(op, "the batch dimensions " + " and ".join(
            str(tuple(b)) for b in batches) + " cannot be broadcast", names, shapes) from None


def _mT(x):
    return np.swapaxes(x, -1, -2)


# --- kernels (NumPy arrays in, arrays out) ---------------------------------------------


def _first_zero_pivot(A):
    """(batch index, 1-based diagonal index of U) of the first matrix of ``A`` whose LU
    factorization has an exactly zero pivot (what LAPACK's getrf reports), or None."""
    n = A.shape[-1]
    for b, a in enumerate(A.reshape(-1, n, n)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu, _ = scipy.linalg.lu_factor(a, check_finite=False)
        zero = np.flatnonzero(np.diagonal(lu) == 0)
        if zero.size:
            return b, int(zero[0]) + 1
    return None


def _batch_prefix(A, b):
    return f"(Batch element {b}): " if A.ndim > 2 else ""


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


def _solve_matrix(A, B, prefix=""):
    """X = A^-1 B for A (*, n, n), B (*, n, k), batch dims broadcast."""
    try:
        return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
        full = np.broadcast_to(A, batch + A.shape[-2:])
        where = _first_zero_pivot(full)
        b = where[0] if where is not None else 0
        raise LinAlgError(f"{prefix}{_batch_prefix(full, b)}The solver failed because the "
                          "input matrix is singular.") from None


@xp_kernel
def _solve_kernel(xp, A, B, left, vector):
    solve = _solve_matrix if xp is NUMPY.xp else xp.linalg.solve
    mT = xp.matrix_transpose
    if vector:
        B = B[..., None]
    X = solve(A, B) if left else mT(solve(mT(A), mT(B)))
    return X[..., 0] if vector else X


def _check_triangular_diagonal(A, prefix=""):
    diag = np.diagonal(A, 0, -2, -1)
    zero = diag == 0
    if np.any(zero):
        n = A.shape[-1]
        flat = zero.reshape(-1, n)
        b = int(np.flatnonzero(flat.any(axis=1))[0])
        k = int(np.flatnonzero(flat[b])[0]) + 1
        raise LinAlgError(
            f"{prefix}{_batch_prefix(A, b)}The diagonal element {k} is zero, the triangular "
            "solve could not be completed because the input matrix is singular.")


def _solve_tri_numpy(A, B, upper, left, unitriangular, prefix=""):
    """X = A'^-1 B (left) or B A'^-1 (right), A' the referenced triangle of A (with a unit
    diagonal when ``unitriangular``). Only that triangle of A is read. On NumPy a zero on
    the diagonal raises LinAlgError naming it."""
    if not unitriangular:
        _check_triangular_diagonal(A, prefix)
    return NUMPY.xp.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


@xp_kernel
def _solve_tri_kernel(xp, A, B, upper, left, unitriangular):
    if xp is NUMPY.xp:
        return _solve_tri_numpy(A, B, upper, left, unitriangular)
    return xp.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


@xp_kernel
def _det_kernel(xp, A):
    return xp.linalg.det(A)


@xp_kernel
def _slogdet_kernel(xp, A):
    sign, logabsdet = xp.linalg.slogdet(A)
    return xp.asarray(sign), xp.asarray(logabsdet)


def _exact(xp, kernel, shape, arrays, general):
    """A NumPy ``kernel`` that handles the singular cases (through an SVD, a branch per
    matrix): run as it is on NumPy, as one lazy task on Dask (``numpy_task``); elsewhere
    ``general(xp, *arrays)``, the formula for invertible matrices (inf/nan at singular
    ones: telling them apart would need the values on the host)."""
    if xp is NUMPY.xp:
        return kernel(*arrays)
    if xp._backend == "dask":
        return xp.numpy_task(kernel, list(arrays), shape)
    return general(xp, *arrays)


@xp_kernel
def _cofactor_op(xp, A):
    """The cofactor matrix ``det(A) A^-T``, also at singular A (see :func:`_exact`)."""
    return _exact(xp, _cofactor, A.shape, (A,), lambda xp, A: xp.linalg.det(A)[..., None, None]
                  * xp.matrix_transpose(xp.linalg.inv(A)))


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


@xp_kernel
def _pinv_kernel(xp, A, atol, rtol, hermitian):
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


@xp_kernel
def _expm_kernel(xp, A):
    return xp.astype(xp.asarray(xp.expm(A)), A.dtype)


def _block_upper(xp, A, E):
    """[[A, E], [0, A]] for A, E (*, n, n), batch dims broadcast."""
    batch = np.broadcast_shapes(A.shape[:-2], E.shape[:-2])
    A = xp.broadcast_to(A, batch + A.shape[-2:])
    E = xp.broadcast_to(E, batch + E.shape[-2:])
    top = xp.concat([A, E], axis=-1)
    return xp.concat([top, xp.concat([xp.zeros_like(A), A], axis=-1)], axis=-2)


def _frechet(xp, A, E):
    """L(A, E), the Frechet derivative of expm at A in direction E: the top-right block of
    expm([[A, E], [0, A]])."""
    n = A.shape[-1]
    return _expm_kernel(xp, _block_upper(xp, A, E))[..., :n, n:]


@xp_kernel
def _cross_kernel(xp, a, b, dim):
    a, b = xp.broadcast_arrays(a, b)
    return xp.cross(a, b, axis=dim)


@xp_kernel
def _sylvester_op(xp, A, B, C):
    if xp is NUMPY.xp:
        return _sylvester_kernel(A, B, C)
    return xp.solve_sylvester(A, B, C)  # no check off the host: a singular pair gives nan


def _sylvester_kernel(A, B, C, prefix=""):
    """X with A X + X B = C, for A (*, m, m), B (*, n, n), C (*, m, n) (NumPy arrays),
    raising LinAlgError when A and -B share an eigenvalue."""
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    A = np.broadcast_to(A, batch + A.shape[-2:])
    B = np.broadcast_to(B, batch + B.shape[-2:])
    C = np.broadcast_to(C, batch + C.shape[-2:])
    # A unique solution exists iff A and -B share no eigenvalue.
    la = np.linalg.eigvals(A)
    lb = np.linalg.eigvals(B)
    gap = np.abs(la[..., :, None] + lb[..., None, :])
    eps = np.finfo(np.result_type(A, B, C, np.float32)).eps
    scale = np.max(np.abs(la), axis=-1, initial=0) + np.max(np.abs(lb), axis=-1, initial=0)
    singular = np.min(gap, axis=(-2, -1), initial=np.inf) <= 10 * eps * np.maximum(scale, 1)
    if np.any(singular):
        b = int(np.flatnonzero(np.reshape(singular, -1))[0])
        raise LinAlgError(
            f"{prefix}{_batch_prefix(A, b)}A and -B have a common eigenvalue, so "
            "A X + X B = C has no unique solution.")
    X = NUMPY.xp.solve_sylvester(A, B, C)
    return np.asarray(X, dtype=np.result_type(A, B, C))


# --- rules -------------------------------------------------------------------------------


def _col(F, x, vector):
    return F.unsqueeze(x, -1) if vector else x


def _uncol(F, x, vector):
    return F.squeeze(x, -1) if vector else x


def _batched_trace_of_product(F, X, Y):
    """tr(X Y) over the last two dims."""
    return F.sum(X * F.mT(Y), (-2, -1), False)


def _scalar_to_matrix(F, s):
    return F.unsqueeze(F.unsqueeze(s, -1), -1)


def _linalg_name(name):
    return lambda xp, dev, lazy: getattr(xp.linalg, name)


def _provided(name):
    return lambda xp, dev, lazy: getattr(xp, name)


def _kernel_of(kernel):
    """The rule-namespace version of an xp kernel ``kernel(xp, *args)`` on a backend."""
    return lambda xp, dev, lazy: lambda *args: kernel(xp, *args)


def _det_hvp_xp(xp, A, E):
    """The Hessian of det at A applied to E, also at singular A (see :func:`_exact`)."""
    shape = np.broadcast_shapes(A.shape, E.shape)
    return _exact(xp, _det_hvp, shape, (A, E), _det_hvp_invertible)


def _det_hvp_invertible(xp, A, E):
    """det(A) (tr(A^-1 E) A^-T - A^-T E^T A^-T), for an invertible A."""
    AiT = xp.matrix_transpose(xp.linalg.inv(A))
    tr = xp.sum(AiT * E, axis=(-2, -1))[..., None, None]
    d = xp.linalg.det(A)[..., None, None]
    return d * (tr * AiT - xp.matmul(xp.matmul(AiT, xp.matrix_transpose(E)), AiT))


def _register():
    """Declare the names the linalg rules use (before any op that uses them; the
    differentiable versions are looked up when called). On NumPy the raw versions check
    (a singular matrix raises LinAlgError naming it); elsewhere they compute through the
    backend's namespace and its provider table."""
    register("inv", lambda A: _inv_kernel(A, "inv (in a derivative rule): "),
             lambda A: inv(A), _linalg_name("inv"))
    register("inv_ext", _inv_ext, lambda A: inv(A), _linalg_name("inv"))
    register("solve", lambda A, B: _solve_matrix(A, B, "solve (in a derivative rule): "),
             lambda A, B: apply(SOLVE, (A, B), (True, False)), _linalg_name("solve"))
    register("cofactor", _cofactor, lambda A: apply(COFACTOR, (A,)), _kernel_of(_cofactor_op))
    register("det_hvp", _det_hvp, lambda A, E: _det_hvp_differentiable(A, E),
             _kernel_of(_det_hvp_xp))
    register("matrix_exp_frechet", lambda A, E: _frechet(NUMPY.xp, A, E),
             lambda A, E: _frechet_differentiable(A, E), _kernel_of(_frechet))
    # One kernel for the triangular solve: the op's own (decomp's cholesky and qr rules use
    # it too).
    register("solve_triangular",
             lambda A, B, *, upper, left=True, unitriangular=False: _solve_tri_numpy(
                 A, B, upper, left, unitriangular, "solve_triangular (in a derivative rule): "),
             lambda *a, **k: solve_triangular(*a, **k), _provided("solve_triangular"))
    register("cross", lambda a, b, dim: _cross_kernel(NUMPY.xp, a, b, dim),
             lambda a, b, dim: apply(CROSS, (a, b), (dim,)), _kernel_of(_cross_kernel))
    register("solve_sylvester",
             lambda A, B, C: _sylvester_kernel(A, B, C, "solve_sylvester (in a derivative "
                                                        "rule): "),
             lambda A, B, C: apply(SOLVE_SYLVESTER, (A, B, C)), _provided("solve_sylvester"))


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


def _solve_vjp_B(F, g, A, left, vector):
    G = _col(F, g, vector)
    if left:  # X = A^-1 B: grad_B = A^-T G
        gB = F.solve(F.mT(A), G)
    else:  # X = B A^-1: grad_B = G A^-T = (A^-1 G^T)^T
        gB = F.mT(F.solve(A, F.mT(G)))
    return _uncol(F, gB, vector)


def _solve_vjp_A(F, g, A, out, left, vector):
    gB = _col(F, _solve_vjp_B(F, g, A, left, vector), vector)
    X = _col(F, out, vector)
    if left:
        return -F.matmul(gB, F.mT(X))
    return -F.matmul(F.mT(X), gB)


def _solve_jvp_B(F, t, A, left, vector):
    T = _col(F, t, vector)
    dX = F.solve(A, T) if left else F.mT(F.solve(F.mT(A), F.mT(T)))
    return _uncol(F, dX, vector)


def _solve_jvp_A(F, t, A, out, left, vector):
    X = _col(F, out, vector)
    if left:  # dX = -A^-1 dA X
        dX = -F.solve(A, F.matmul(t, X))
    else:  # dX = -X dA A^-1
        dX = -F.mT(F.solve(F.mT(A), F.mT(F.matmul(X, t))))
    return _uncol(F, dX, vector)


SOLVE = defop(
    "linalg_solve", _solve_kernel, ("A", "B"), attrs=("left", "vector"),
    node_name="LinalgSolveExBackward0",
    vjp={"A": _solve_vjp_A, "B": _solve_vjp_B},
    jvp={"A": _solve_jvp_A, "B": _solve_jvp_B},
    math={"B": "left: grad_B = A^-T grad;  left=False (X A = B): grad_B = grad A^-T",
          "A": "left: grad_A = -grad_B X^T;  left=False: grad_A = -X^T grad_B",
          "out": "left: dX = A^-1 (dB - dA X);  left=False: dX = (dB - X dA) A^-1"},
    source=GILES + ": the matrix inverse product; PyTorch's linalg_solve_backward for left=False",
)


def _tri_mask(F, M, upper, unitriangular):
    """The part of M in the referenced triangle (strict when the diagonal is implicit)."""
    if upper:
        return F.triu(M, 1 if unitriangular else 0)
    return F.tril(M, -1 if unitriangular else 0)


def _tri_vjp_B(F, g, self, upper, left, unitriangular):
    # The transpose of an upper triangular matrix is lower triangular.
    return F.solve_triangular(F.mT(self), g, upper=not upper, left=left,
                              unitriangular=unitriangular)


def _tri_vjp_A(F, g, self, out, upper, left, unitriangular):
    gB = _tri_vjp_B(F, g, self, upper, left, unitriangular)
    full = -F.matmul(gB, F.mT(out)) if left else -F.matmul(F.mT(out), gB)
    return _tri_mask(F, full, upper, unitriangular)


def _tri_jvp_A(F, t, self, out, upper, left, unitriangular):
    dA = _tri_mask(F, t, upper, unitriangular)
    rhs = F.matmul(dA, out) if left else F.matmul(out, dA)
    return -F.solve_triangular(self, rhs, upper=upper, left=left, unitriangular=unitriangular)


SOLVE_TRIANGULAR = defop(
    "linalg_solve_triangular", _solve_tri_kernel, ("self", "B"),
    attrs=("upper", "left", "unitriangular"),
    vjp={"self": _tri_vjp_A, "B": _tri_vjp_B},
    jvp={"self": _tri_jvp_A,
         "B": lambda F, t, self, upper, left, unitriangular:
         F.solve_triangular(self, t, upper=upper, left=left, unitriangular=unitriangular)},
    math={"B": "left: grad_B = A^-T grad;  left=False: grad_B = grad A^-T",
          "self": "left: grad_A = triu(-grad_B X^T) (tril when lower);  left=False: "
                  "grad_A = triu(-X^T grad_B); the strict triangle (triu(., 1) / tril(., -1)) "
                  "when unitriangular: only the entries the solve reads get a gradient",
          "out": "left: dX = A^-1 (dB - P(dA) X);  left=False: dX = (dB - X P(dA)) A^-1, "
                 "P the projection on the referenced triangle"},
    source=GILES + ": the matrix inverse product, restricted to the triangle read (the VJP of "
           "a masking projection is the same mask); PyTorch's linalg_solve_triangular_backward",
)


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
MATRIX_EXP = defop(
    "linalg_matrix_exp", _expm_kernel, ("self",),
    vjp={"self": lambda F, g, self: F.matrix_exp_frechet(F.mT(self), g)},
    jvp={"self": lambda F, t, self: F.matrix_exp_frechet(self, t)},
    math={"self": "grad_A = L(A^T, grad) = top-right n x n block of "
                  "expm([[A^T, grad], [0, A^T]])",
          "out": "dY = L(A, dA) = top-right block of expm([[A, dA], [0, A]])"},
    source="the block-triangular formula expm([[A, E], [0, A]]) = [[e^A, L(A, E)], [0, e^A]] "
           "of Najfeld & Havel (1995), Derivatives of the matrix exponential and their "
           "computation, Adv. Appl. Math. 16, and Al-Mohy & Higham (2009), Computing the "
           "Frechet derivative of the matrix exponential, SIAM J. Matrix Anal. Appl. 30(4); "
           "L(A, E) = int_0^1 e^{sA} E e^{(1-s)A} ds, so the adjoint of L(A, .) is L(A^T, .)",
)
CROSS = defop(
    "linalg_cross", _cross_kernel, ("self", "other"), attrs=("dim",),
    vjp={"self": lambda F, g, other, dim: F.cross(other, g, dim),
         "other": lambda F, g, self, dim: F.cross(g, self, dim)},
    jvp={"self": lambda F, t, other, dim: F.cross(t, other, dim),
         "other": lambda F, t, self, dim: F.cross(self, t, dim)},
    math={"self": "grad_a = b x grad", "other": "grad_b = grad x a",
          "out": "dc = da x b + a x db"},
    source="bilinearity and the scalar triple product g . (da x b) = da . (b x g)",
)


def _syl_vjp_C(F, g, A, B):
    # The adjoint of X -> A X + X B is Y -> A^T Y + Y B^T.
    return F.solve_sylvester(F.mT(A), F.mT(B), g)


SOLVE_SYLVESTER = defop(
    "solve_sylvester", _sylvester_op, ("A", "B", "C"),
    vjp={"C": _syl_vjp_C,
         "A": lambda F, g, A, B, out: -F.matmul(_syl_vjp_C(F, g, A, B), F.mT(out)),
         "B": lambda F, g, A, B, out: -F.matmul(F.mT(out), _syl_vjp_C(F, g, A, B))},
    jvp={"C": lambda F, t, A, B: F.solve_sylvester(A, B, t),
         "A": lambda F, t, A, B, out: -F.solve_sylvester(A, B, F.matmul(t, out)),
         "B": lambda F, t, A, B, out: -F.solve_sylvester(A, B, F.matmul(out, t))},
    math={"C": "grad_C = Y, where A^T Y + Y B^T = grad (the adjoint Sylvester equation)",
          "A": "grad_A = -Y X^T", "B": "grad_B = -X^T Y",
          "out": "A dX + dX B = dC - dA X - X dB"},
    source="differentiating A X + X B = C gives A dX + dX B = dC - dA X - X dB; the "
           "operator X -> A X + X B has adjoint Y -> A^T Y + Y B^T, so <G, dX> = "
           "<Y, dC - dA X - X dB> (the implicit-function/adjoint method, e.g. Kao & "
           "Hennequin (2020), Automatic differentiation of Sylvester, Lyapunov, and "
           "algebraic Riccati equations, arXiv:2011.11430, sec. 2)",
)


# --- the rule namespace ------------------------------------------------------------------


def _det_hvp_differentiable(A, E):
    """The Hessian of det applied to E, on Tensors (third derivatives of det; A must be
    invertible): det(A) (tr(A^-1 E) A^-T - A^-T E^T A^-T)."""
    from ..ops import matmul, sum, transpose, unsqueeze

    AiT = transpose(inv(A), -1, -2)
    tr = unsqueeze(unsqueeze(sum(AiT * E, (-2, -1)), -1), -1)
    d = unsqueeze(unsqueeze(det(A), -1), -1)
    return d * (tr * AiT - matmul(matmul(AiT, transpose(E, -1, -2)), AiT))


def _frechet_differentiable(A, E):
    from .._creation import zeros_like
    from ..ops import broadcast_to, cat

    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], E.shape[:-2])
    A = broadcast_to(A, batch + (n, n))
    E = broadcast_to(E, batch + (n, n))
    M = cat([cat([A, E], -1), cat([zeros_like(A), A], -1)], -2)
    return matrix_exp(M)[..., :n, n:]


# --- public functions --------------------------------------------------------------------


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
    return where(sign._data == -1, float("nan"), logabsdet)


def _is_vector_rhs(a_shape, b_shape):
    # PyTorch's rule: B is a (batch of) vector(s) if it is 1-D, or if it has exactly A's
    # shape without the last dimension.
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1
                                 and tuple(b_shape) == tuple(a_shape[:-1]))


@documented(SOLVE)
def solve(A, B, *, left=True):
    """Solve ``A X = B`` (``left=True``) or ``X A = B`` (``left=False``) for ``X``.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        Invertible matrices, float32 or float64.
    B : Tensor of shape (*, n, k) or (*, n)
        Right-hand sides: a matrix, or a vector when ``B`` is 1-D or has exactly the shape
        ``A.shape[:-1]`` (PyTorch's rule). Batch dimensions broadcast with ``A``'s.
        With ``left=False``, ``B`` is (*, k, n).
    left : bool, keyword-only
        Solve ``A X = B`` (True) or ``X A = B`` (False).

    Returns
    -------
    Tensor of shape (*, n, k) or (*, n)
        ``X = A^-1 B`` (or ``B A^-1``), batch dimensions broadcast.

    Raises
    ------
    ValueError
        If ``A`` is not a batch of square matrices, if ``B`` does not fit ``A`` or if the
        batch dimensions do not broadcast; the message gives both shapes.
    LinAlgError
        If a matrix ``A`` is exactly singular ("The solver failed because the input matrix
        is singular."), naming the batch element. Inputs are left unchanged.
    """
    a, b = _shape(A), _shape(B)
    names, shapes = ("A", "B"), (a, b)
    _check_square("linalg.solve", "A", A, names, shapes)
    if len(b) < 1:
        raise _shape_error("linalg.solve", "B must have at least 1 dimension", names, shapes)
    vector = _is_vector_rhs(a, b)
    bm = tuple(b) + (1,) if vector else tuple(b)
    n = a[-1]
    fits = bm[-2] == n if left else bm[-1] == n
    if not fits:
        eq = "AX = B" if left else "XA = B"
        raise _shape_error("linalg.solve", f"incompatible shapes of A and B for the "
                                           f"equation {eq} ({n}x{n} and {bm[-2]}x{bm[-1]})",
                           names, shapes)
    _batch("linalg.solve", names, shapes, (a[:-2], bm[:-2]))
    return apply(SOLVE, (_as_input(A), _as_input(B)), (bool(left), vector))


@documented(SOLVE_TRIANGULAR)
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """Solve the triangular system ``A X = B`` (``left=True``) or ``X A = B``.

    Only the upper (``upper=True``) or lower triangle of ``A`` is read, and only those
    entries get a gradient; with ``unitriangular=True`` the diagonal is taken to be ones
    and is not read either.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64.
    B : Tensor of shape (*, n, k) (``left=True``) or (*, k, n) (``left=False``)
        Batch dimensions broadcast with ``A``'s.
    upper : bool, keyword-only, required
        Whether ``A`` is upper (True) or lower (False) triangular.
    left : bool, keyword-only
        Solve ``A X = B`` (True) or ``X A = B`` (False).
    unitriangular : bool, keyword-only
        Assume a unit diagonal.

    Returns
    -------
    Tensor with the broadcast shape of ``B``.

    Raises
    ------
    ValueError
        If ``A`` is not square, ``B`` has fewer than 2 dimensions, the shapes do not fit or
        the batch dimensions do not broadcast (the message gives both shapes).
    LinAlgError
        If a diagonal element of ``A`` is exactly zero (and ``unitriangular`` is False).
        PyTorch returns inf/nan there instead.
    """
    a, b = _shape(A), _shape(B)
    names, shapes = ("A", "B"), (a, b)
    op = "linalg.solve_triangular"
    _check_square(op, "A", A, names, shapes)
    if len(b) < 2:
        raise _shape_error(op, "B must have at least 2 dimensions", names, shapes)
    n = a[-1]
    if (b[-2] if left else b[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise _shape_error(op, f"incompatible shapes of A and B for the equation {eq} "
                               f"({n}x{n} and {b[-2]}x{b[-1]})", names, shapes)
    _batch(op, names, shapes, (a[:-2], b[:-2]))
    return apply(SOLVE_TRIANGULAR, (_as_input(A), _as_input(B)),
                 (bool(upper), bool(left), bool(unitriangular)))


@documented(SOLVE_TRIANGULAR)
def cholesky_solve(B, L, upper=False):
    """Solve ``A X = B`` given the Cholesky factor of ``A``, as ``torch.cholesky_solve``
    (note the argument order: ``B`` first).

    ``A = L L^T`` (``upper=False``, ``L`` lower triangular) or ``A = U^T U``
    (``upper=True``). Computed as two triangular solves, ``X = L^-T (L^-1 B)``, so the
    graph records two ``linalg_solve_triangular`` nodes, and ``L`` gets a gradient only in
    the triangle that is read. (PyTorch's CholeskySolveBackward0 returns the gradient of the
    full matrix ``L`` in ``A = L L^T``; its referenced triangle equals ours.)

    Parameters
    ----------
    B : Tensor of shape (*, n, k)
    L : Tensor of shape (*, n, n)
        The triangular factor; batch dimensions broadcast with ``B``'s.
    upper : bool

    Returns
    -------
    Tensor of shape (*, n, k)

    Raises
    ------
    ValueError
        On shapes that do not fit (both shapes are given).
    LinAlgError
        If ``L`` has a zero on its diagonal.
    """
    b, l_shape = _shape(B), _shape(L)
    names, shapes = ("B", "L"), (b, l_shape)
    op = "cholesky_solve"
    _check_square(op, "L", L, names, shapes)
    if len(b) < 2 or b[-2] != l_shape[-1]:
        raise _shape_error(op, "B must be (*, n, k) for L of shape (*, n, n)", names, shapes)
    _batch(op, names, shapes, (b[:-2], l_shape[:-2]))
    L = _as_input(L)
    Lt = _transpose(L)
    if upper:  # A = U^T U: U^T Y = B, then U X = Y
        Y = solve_triangular(Lt, B, upper=False)
        return solve_triangular(L, Y, upper=True)
    Y = solve_triangular(L, B, upper=False)  # A = L L^T: L Y = B, then L^T X = Y
    return solve_triangular(Lt, Y, upper=True)


def _transpose(x):
    if isinstance(x, Tensor):
        return x.mT
    return _mT(np.asarray(x))


def _default_rtol(shape, dtype, atol_given):
    if atol_given:
        return 0.0
    return float(np.finfo(numpy_dtype(dtype)).eps) * max(shape[-2], shape[-1])


def _float_dtype(x):
    """The float dtype of ``x`` as NumPy's (float64 for integers)."""
    dtype = numpy_dtype(_data(x).dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


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


@documented(MATRIX_EXP)
def matrix_exp(A):
    """Matrix exponential ``expm(A) = sum_k A^k / k!`` (scipy.linalg.expm, scaling and
    squaring with Pade approximants).

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64.

    Returns
    -------
    Tensor of shape (*, n, n)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    """
    _check_square("linalg.matrix_exp", "A", A)
    return apply(MATRIX_EXP, (_as_input(A),))


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


@documented(CROSS)
def cross(input, other, *, dim=-1):
    """Cross product of 3-vectors along ``dim``, as ``torch.linalg.cross``.

    Parameters
    ----------
    input, other : Tensor
        Broadcastable, with size 3 along ``dim`` (of the broadcast shape).
    dim : int, keyword-only

    Returns
    -------
    Tensor with the broadcast shape.

    Raises
    ------
    ValueError
        If the shapes do not broadcast or ``dim`` does not have size 3 (both shapes are
        given).
    IndexError
        If ``dim`` is out of range.
    """
    a, b = _shape(input), _shape(other)
    names, shapes = ("input", "other"), (a, b)
    op = "linalg.cross"
    if len(a) != len(b):
        # PyTorch requires the same number of dimensions.
        raise _shape_error(op, "input and other must have the same number of dimensions",
                           names, shapes)
    full = _batch(op, names, shapes, (a, b))
    nd = len(full)
    if not -nd <= dim < nd:
        raise IndexError(f"{op}: dim {dim} is out of range for tensors with {nd} dimensions")
    d = dim % nd
    if a[d] != 3 or b[d] != 3:
        raise _shape_error(op, f"dimension {dim} must have length 3", names, shapes)
    return apply(CROSS, (_as_input(input), _as_input(other)), (d - nd,))


def _chain_order(dims):
    """Optimal parenthesization of a matrix chain with sizes dims[0] x dims[1] x ... (the
    classic O(k^3) dynamic program, Cormen et al. sec. 15.2). Returns the split table."""
    k = len(dims) - 1
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            best = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if best is None or c < best:
                    best, split[i][j] = c, s
            cost[i][j] = best
    return split


def multi_dot(tensors):
    """Product of a chain of matrices, multiplied in the cheapest order, as
    ``torch.linalg.multi_dot``.

    The first and last tensors may be 1-D (a row and a column vector; that dimension is
    removed from the result); the others must be 2-D. The graph records ``mm`` nodes (a
    composition: the gradient is that of the matrix products).

    Parameters
    ----------
    tensors : sequence of Tensor
        At least 2.

    Returns
    -------
    Tensor
        2-D, 1-D or 0-D depending on the ends.

    Raises
    ------
    ValueError
        Fewer than 2 tensors, a middle tensor that is not 2-D, or sizes that do not chain
        (naming the two tensors and their shapes).
    """
    from ..ops import matmul, reshape

    op = "linalg.multi_dot"
    tensors = [_as_input(t) for t in tensors]
    if len(tensors) < 2:
        raise ShapeError(f"{op}: expected at least 2 tensors but got {len(tensors)}")
    shapes = [_shape(t) for t in tensors]
    for i, s in enumerate(shapes):
        ends = i in (0, len(shapes) - 1)
        if len(s) != 2 and not (ends and len(s) == 1):
            raise ShapeError(f"{op}: tensor {i} must be 2-D" + (" or 1-D" if ends else "")
                             + f", got shape {tuple(s)}")
    first_vec, last_vec = len(shapes[0]) == 1, len(shapes[-1]) == 1
    if first_vec:
        tensors[0] = reshape(tensors[0], (1, shapes[0][0]))
    if last_vec:
        tensors[-1] = reshape(tensors[-1], (shapes[-1][0], 1))
    mats = [_shape(t) for t in tensors]
    for i in range(len(mats) - 1):
        if mats[i][1] != mats[i + 1][0]:
            raise ShapeError(
                f"{op}: tensors {i} and {i + 1} cannot be multiplied, got tensor {i} of shape "
                f"{tuple(shapes[i])} and tensor {i + 1} of shape {tuple(shapes[i + 1])}")
    dims = [mats[0][0]] + [s[1] for s in mats]
    split = _chain_order(dims)

    def product(i, j):
        if i == j:
            return tensors[i]
        s = split[i][j]
        return matmul(product(i, s), product(s + 1, j))

    out = product(0, len(tensors) - 1)
    keep = ([] if first_vec else [dims[0]]) + ([] if last_vec else [dims[-1]])
    return reshape(out, tuple(keep)) if first_vec or last_vec else out


@documented(SOLVE_SYLVESTER)
def solve_sylvester(A, B, C):
    """Solve the Sylvester equation ``A X + X B = C`` for ``X`` (scipy.linalg.
    solve_sylvester, Bartels-Stewart), as one primitive with an adjoint rule.

    Parameters
    ----------
    A : Tensor of shape (*, m, m)
    B : Tensor of shape (*, n, n)
    C : Tensor of shape (*, m, n)
        float32 or float64; batch dimensions broadcast.

    Returns
    -------
    Tensor of shape (*, m, n)

    Raises
    ------
    ValueError
        If ``A`` or ``B`` is not square, ``C`` is not ``m x n`` or the batch dimensions do
        not broadcast (all three shapes are given).
    LinAlgError
        If ``A`` and ``-B`` have a common eigenvalue (no unique solution).
    """
    a, b, c = _shape(A), _shape(B), _shape(C)
    names, shapes = ("A", "B", "C"), (a, b, c)
    op = "solve_sylvester"
    _check_square(op, "A", A, names, shapes)
    _check_square(op, "B", B, names, shapes)
    if len(c) < 2 or c[-2:] != (a[-1], b[-1]):
        raise _shape_error(op, f"C must be (*, {a[-1]}, {b[-1]})", names, shapes)
    _batch(op, names, shapes, (a[:-2], b[:-2], c[:-2]))
    return apply(SOLVE_SYLVESTER, (_as_input(A), _as_input(B), _as_input(C)))
