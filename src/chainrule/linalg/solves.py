"""Linear solves: solve, solve_triangular, cholesky_solve, solve_sylvester.

Their rules follow from ``d(A^-1) = -A^-1 dA A^-1`` (Giles 2008, the matrix inverse
product) by the product rule, and for Sylvester's equation from the adjoint of
``X -> A X + X B``.

Primitives declared here (table name, graph node, public functions):

- ``linalg_solve`` (``LinalgSolveExBackward0``): solve
- ``linalg_solve_triangular`` (``LinalgSolveTriangularBackward0``): solve_triangular,
  cholesky_solve
- ``solve_sylvester`` (``SolveSylvesterBackward0``): solve_sylvester

``cholesky_solve`` is an exact composition of two triangular solves. The rule namespace
``F`` gains ``solve`` (matrix right-hand side), ``solve_triangular`` (one kernel, used by
the cholesky and qr rules too) and ``solve_sylvester``.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import apply
from .._ns import register
from .._table import defop, documented
from ..backend import NUMPY, broadcast_batch, xp_kernel
from ._common import (
    GILES,
    _as_input,
    _batch,
    _batch_prefix,
    _check_square,
    _col,
    _first_zero_pivot,
    _is_vector_rhs,
    _provided,
    _shape,
    _shape_error,
    _transpose,
    _uncol,
)
from ._errors import LinAlgError

__all__ = ["solve", "solve_triangular", "cholesky_solve", "solve_sylvester"]


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
    if xp is not NUMPY.xp:  # some libraries' solve (CuPy's) wants equal batch dimensions
        A, B = broadcast_batch(xp, A, B)
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
    if 0 in batch:  # SciPy's solver refuses an empty batch: its solution is empty too
        return np.empty(C.shape, dtype=np.result_type(A, B, C))
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


def _register():
    """Declare the names the rules below use (before the ops). On NumPy the raw versions
    check (a singular matrix raises LinAlgError naming it); elsewhere they compute through
    the backend's namespace and its provider table."""
    register("solve", lambda A, B: _solve_matrix(A, B, "solve (in a derivative rule): "),
             lambda A, B: apply(SOLVE, (A, B), (True, False)),
             lambda xp, dev, lazy: lambda A, B: xp.linalg.solve(*broadcast_batch(xp, A, B)),
             batch="leading")
    # One kernel for the triangular solve: the op's own (decomp's cholesky and qr rules use
    # it too).
    register("solve_triangular",
             lambda A, B, *, upper, left=True, unitriangular=False: _solve_tri_numpy(
                 A, B, upper, left, unitriangular, "solve_triangular (in a derivative rule): "),
             lambda *a, **k: solve_triangular(*a, **k), _provided("solve_triangular"),
             batch="leading")
    register("solve_sylvester",
             lambda A, B, C: _sylvester_kernel(A, B, C, "solve_sylvester (in a derivative "
                                                        "rule): "),
             lambda A, B, C: apply(SOLVE_SYLVESTER, (A, B, C)), _provided("solve_sylvester"),
             batch="leading")


_register()


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
