"""Samples for chainrule.linalg decompositions (see tests/samples.py).

Structure is built inside each function, so that every entry of the input is a free
variable for the finite differences: symmetric inputs as ``A + A^T``, positive-definite ones
as ``A A^T + n I``. Eigenvector and singular-vector outputs go through functions that do not
depend on their sign (``V * V``, ``U @ Vh``, projectors ``v v^T``), nor on the basis chosen
for the extra columns of ``full_matrices`` / ``mode="complete"`` factors (``U2 @ U2^T``).
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import Sample

RNG = np.random.default_rng(4321)
S = Sample
linalg = cr.linalg


def randn(*shape):
    return RNG.standard_normal(shape)


def spd(A):
    n = A.shape[-1]
    return A @ A.mT + n * cr.eye(n, dtype=A.dtype, device=A.device)


def sym(A):
    return A + A.mT


def _eigh_parts(A, UPLO="L"):
    w, V = linalg.eigh(sym(A), UPLO=UPLO)
    return w, V * V


def _eigh_projector(A):
    w, V = linalg.eigh(sym(A), UPLO="U")
    v = V[..., :, 0:1]
    return v @ v.mT


def _eigh_function(A):
    w, V = linalg.eigh(sym(A))
    return (V * w.exp().unsqueeze(-2)) @ V.mT  # expm(A + A^T)


def _svd_parts(A):
    U, s, Vh = linalg.svd(A, full_matrices=False)
    return s, U @ Vh, U * U, Vh * Vh


def _svd_full(A):
    U, s, Vh = linalg.svd(A)  # full_matrices=True by default, as in PyTorch
    k = s.shape[-1]
    U1, U2, V2 = U[..., :, :k], U[..., :, k:], Vh[..., k:, :]
    return s, U1 * U1, U2 @ U2.mT, V2.mT @ V2


def _qr_complete(A):
    Q, R = linalg.qr(A, mode="complete")
    n = A.shape[-1]
    Q2 = Q[..., :, n:]
    return Q[..., :, :n], R, Q2 @ Q2.mT


SAMPLES = [
    # cholesky
    S("linalg_cholesky", lambda A: linalg.cholesky(spd(A)), [randn(3, 3)]),
    S("linalg_cholesky", lambda A: linalg.cholesky(spd(A), upper=True), [randn(2, 3, 3)],
      "upper_batched"),
    # qr: tall, square, wide, complete, r
    S("linalg_qr", lambda A: tuple(linalg.qr(A)), [randn(4, 3)], "tall"),
    S("linalg_qr", lambda A: tuple(linalg.qr(A)), [randn(2, 3, 3)], "square_batched"),
    S("linalg_qr", lambda A: tuple(linalg.qr(A)), [randn(2, 2, 4)], "wide_batched"),
    S("linalg_qr", _qr_complete, [randn(5, 3)], "complete_tall"),
    S("linalg_qr", lambda A: tuple(linalg.qr(A, mode="complete")), [randn(2, 4)],
      "complete_wide"),
    S("linalg_qr", lambda A: linalg.qr(A, mode="r").R, [randn(2, 4, 3)], "r_batched"),
    # eigh / eigvalsh
    S("linalg_eigh", _eigh_parts, [randn(3, 3)]),
    S("linalg_eigh", _eigh_projector, [randn(2, 3, 3)], "projector_upper_batched"),
    S("linalg_eigh", _eigh_function, [randn(3, 3) * 0.5], "matrix_function"),
    S("linalg_eigh", lambda A: linalg.eigvalsh(sym(A)), [randn(2, 4, 4)], "eigvalsh_batched"),
    # svd / svdvals: tall, square, wide
    S("linalg_svd", _svd_parts, [randn(4, 3)], "tall"),
    S("linalg_svd", _svd_parts, [randn(2, 3, 3)], "square_batched"),
    S("linalg_svd", _svd_parts, [randn(2, 2, 4)], "wide_batched"),
    S("linalg_svd", _svd_full, [randn(5, 3)], "full_tall"),
    S("linalg_svd", _svd_full, [randn(2, 2, 5)], "full_wide_batched"),
    S("linalg_svd", lambda A: linalg.svdvals(A), [randn(2, 4, 3)], "svdvals_tall_batched"),
    S("linalg_svd", lambda A: linalg.svdvals(A), [randn(2, 4)], "svdvals_wide"),
]
