"""Samples for the LU factorization and the general eigendecomposition (see
tests/samples.py)."""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import RNG, Sample, randn

L = cr.linalg
S = Sample


def real_spectrum(*shape):
    """Non-symmetric matrices ``S diag(d) S^-1`` with well-separated real eigenvalues."""
    n = shape[-1]
    out = np.empty(shape)
    for idx in np.ndindex(*shape[:-2]):
        basis = RNG.standard_normal((n, n)) + n * np.eye(n)
        out[idx] = basis @ np.diag(np.arange(1.0, n + 1) * 1.3 - 2.0) @ np.linalg.inv(basis)
    return out


SAMPLES = [
    # lu: A = P L U (P piecewise constant: L and U are the differentiable outputs)
    S("linalg_lu", lambda a: tuple(L.lu(a)[1:]), [randn(4, 4)], "square"),
    S("linalg_lu", lambda a: tuple(L.lu(a)[1:]), [randn(3, 5)], "wide"),
    S("linalg_lu", lambda a: tuple(L.lu(a)[1:]), [randn(5, 3)], "tall"),
    S("linalg_lu", lambda a: tuple(L.lu(a)[1:]), [randn(2, 3, 3)], "batched"),
    S("linalg_lu", lambda a: L.lu_factor(a).LU, [randn(3, 3)], "lu_factor"),
    S("linalg_lu", lambda a, b: L.lu_solve(*L.lu_factor(a), b),
      [randn(3, 3) + 3 * np.eye(3), randn(3, 2)], "lu_solve"),
    # eig: a real spectrum; eigenvectors enter squared (their sign is LAPACK's choice)
    S("linalg_eig", lambda a: L.eigvals(a), [real_spectrum(3, 3)]),
    S("linalg_eig", lambda a: L.eig(a).eigenvectors ** 2, [real_spectrum(3, 3)], "vectors"),
    S("linalg_eig", lambda a: L.eigvals(a), [real_spectrum(2, 3, 3)], "batched"),
]
