"""The eigendecomposition of a general (non-symmetric) real matrix with a real spectrum:
eig, eigvals.

``A V = V diag(L)`` with eigenvectors of unit norm (LAPACK's geev, as PyTorch). chainrule
computes in real arithmetic: where ``A`` has complex eigenvalues, eig raises (PyTorch
returns complex tensors, which chainrule does not have).

Primitive declared here (table name, graph node, public functions):

- ``linalg_eig`` (``LinalgEigBackward0``): eig, eigvals

The rules, from ``dA V + A dV = dV diag(L) + V diag(dL)``: with ``dP = V^-1 dA V`` and
``E_ij = L_j - L_i``, ``dL = diagonal(dP)`` and ``dV = V C``, ``C`` off the diagonal
``dP / E``, on it fixed by the unit norm (``v_i^T dv_i = 0``). The adjoint:
``grad_A = V^-T (diag(grad_L) + offdiag(W / E)) V^T``, ``W = V^T grad_V - V^T V
diag(diagonal(V^T grad_V))``.
"""

from __future__ import annotations

import collections

from .._dispatch import apply
from .._table import defop, documented
from ..backend import dtype_kind, xp_kernel
from ._common import _as_input
from .decomp import (
    _batch_index,
    _check_degenerate,
    _check_input,
    _col_norms,
    _data,
    _diag_embed,
    _eps,
    _fro,
    _inverse_gaps,
    _linalg,
    _maybe,
    _near_equal,
    _poison,
    _xp,
)

__all__ = ["eig", "eigvals"]

EigResult = collections.namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])


@xp_kernel
def _eig_forward(xp, A):
    L, V = _linalg(xp, "eig", "linalg.eig")(A)
    if dtype_kind(L.dtype) == "c" or dtype_kind(V.dtype) == "c":
        # NumPy returns real arrays exactly when every eigenvalue is real; a library that
        # always returns complex ones (CuPy's) is read as real when the imaginary parts are
        # 0 (on a GPU, a wait for the device)
        imag = xp.abs(xp.imag(L))
        if bool(xp.any(imag > 0)) or bool(xp.any(xp.imag(V) != 0)):
            raise ValueError(f"linalg.eig: A (shape {tuple(A.shape)}) has complex "
                             f"eigenvalues (largest imaginary part {float(xp.max(imag)):.3g})"
                             "; chainrule computes in real arithmetic and supports eig only "
                             "for a real spectrum (use eigh for a symmetric A)")
        L, V = xp.real(L), xp.real(V)
    return L, V


def _defective(L, V):
    """Mask (..., k, k) of (numerically) equal eigenvalue pairs whose eigenvectors are
    (numerically) parallel: a defective A (a Jordan block), where no eigenvalue is
    differentiable (they move like sqrt(dA)) and V^-1 in the rules is rounding noise. None
    when there is none (known on the host)."""
    near = _near_equal(L)
    if not _maybe(near):
        return None
    v = _data(V)
    xp = _xp(v)[0]
    norms = xp.sqrt(xp.sum(v * v, axis=-2))
    cos = xp.abs(xp.matmul(xp.matrix_transpose(v), v)) / (
        norms[..., :, None] * norms[..., None, :])
    bad = near & (cos > 1 - _eps(L) ** 0.5)
    return bad if _maybe(bad) else None


def _eig_vjp(F, g, out):
    gL, gV = g
    L, V = out
    if gL is None and gV is None:
        return None
    return _poison(F, _eig_vjp_formula(F, gL, gV, L, V), _defective(L, V))


def _eig_vjp_formula(F, gL, gV, L, V):
    inner = 0.0
    if gV is not None:
        near = _near_equal(L)
        lam = _data(L)

        def explain(idx, size):
            b, i, j = idx[:-2], idx[-2], idx[-1]
            return (f"linalg.eig backward: eigenvalues {i} and {j}{_batch_index(b)} are "
                    f"(nearly) equal ({lam[b + (i,)]:.6g} and {lam[b + (j,)]:.6g}) and the "
                    f"loss depends on their eigenvectors (cotangent of size {size:.3g}); the "
                    "chain rule divides by their gap there (PyTorch returns nan)")

        bad = _check_degenerate(near, _col_norms(gV, L), _fro(gV), _eps(L), explain)
        VtgV = F.matmul(F.mT(V), gV)
        W = VtgV - F.matmul(F.matmul(F.mT(V), V), _diag_embed(F, F.diagonal(VtgV, 0, -2, -1)))
        E = F.unsqueeze(L, -2) - F.unsqueeze(L, -1)  # E_ij = L_j - L_i
        inner = W * _inverse_gaps(F, E, near, bad)
    if gL is not None:
        inner = inner + _diag_embed(F, gL)
    # grad_A = V^-T inner V^T
    return F.solve(F.mT(V), F.matmul(inner, F.mT(V)))


def _eig_jvp(F, t, out):
    L, V = out
    dP = F.solve(V, F.matmul(t, V))  # V^-1 dA V
    E = F.unsqueeze(L, -2) - F.unsqueeze(L, -1)
    near = _near_equal(L)
    C = dP * _inverse_gaps(F, E, near)
    VC = F.matmul(V, C)
    # unit norm: v_i^T dv_i = 0 fixes C_ii = -(V^T V C)_ii
    dV = VC - V * F.unsqueeze(F.diagonal(F.matmul(F.mT(V), VC), 0, -2, -1), -2)
    defective = _defective(L, V)
    if defective is not None:  # no derivative there: nan, not V^-1's rounding noise
        dL = _poison(F, F.unsqueeze(F.diagonal(dP, 0, -2, -1), -1), defective)[..., 0]
        return dL, _poison(F, dV, defective)
    return F.diagonal(dP, 0, -2, -1), dV


EIG = defop(
    "linalg_eig", _eig_forward, ("A",), nout=2,
    vjp={"A": _eig_vjp}, jvp={"A": _eig_jvp},
    math={"A": "grad_A = V^-T (diag(grad_L) + offdiag(W / E)) V^T, W = V^T grad_V - V^T V "
               "diag(diagonal(V^T grad_V)), E_ij = L_j - L_i (where E_ij ~ 0 and grad_V "
               "reaches columns i, j: RuntimeError); nan for a defective A (equal "
               "eigenvalues with parallel eigenvectors: no eigenvalue is differentiable)",
          "out": "dP = V^-1 dA V: dL = diagonal(dP), dV = V C - V diag(diagonal(V^T V C)), "
                 "C = offdiag(dP / E)  (nan for a defective A)"},
    source="Giles (2008), An extended collection of matrix derivative results for forward "
           "and reverse mode AD, sec. 3.1 (eigenvalues and eigenvectors), with the unit-norm "
           "normalisation of PyTorch's linalg_eig_backward / linalg_eig_jvp",
    node_name="LinalgEigBackward0",
)


@documented(EIG)
def eig(A):
    """Eigenvalues and unit-norm eigenvectors of a square real ``A`` with a real spectrum,
    as ``torch.linalg.eig`` but real-valued.

    Parameters
    ----------
    A : Tensor, shape (..., n, n), float32 or float64

    Returns
    -------
    (eigenvalues, eigenvectors) : named tuple ``linalg_eig``, (..., n) and (..., n, n), in
    LAPACK's order; each eigenvector has norm 1 (its sign is LAPACK's).

    Raises
    ------
    ValueError
        ``A`` is not a batch of square float matrices, or it has complex eigenvalues.
    RuntimeError
        In backward, when the loss depends on the eigenvectors of a repeated eigenvalue.
    """
    _check_input("eig", A, square=True)
    return EigResult(*apply(EIG, (_as_input(A),)))


def eigvals(A):
    """The eigenvalues of :func:`eig` (..., n): differentiable, with no eigenvalue gaps in
    their gradient ``V^-T diag(grad) V^T``."""
    return eig(A)[0]
