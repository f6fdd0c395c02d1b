"""Samples for chainrule.linalg inverses and solves (see tests/samples.py).

Matrices are drawn well conditioned (``randn(n, n) + n I``); triangular solves get full
random matrices, of which only the referenced triangle is read (so the gradcheck also checks
that the other triangle gets a zero gradient).
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from chainrule._dispatch import apply
from chainrule.linalg.inverse import COFACTOR
from samples import Sample, randn

L = cr.linalg
S = Sample


def well(*shape):
    """Well-conditioned square matrices: randn + n I."""
    n = shape[-1]
    return randn(*shape) + n * np.eye(n)


def negdet(*shape):
    """Well-conditioned matrices with a negative determinant (first row negated)."""
    a = well(*shape)
    a[..., 0, :] *= -1
    return a


def spd_factor(*shape):
    """A lower-triangular Cholesky-like factor with a positive diagonal."""
    n = shape[-1]
    return np.tril(randn(*shape)) + n * np.eye(n)


# rank 2, exactly singular in floating point (LU eliminates exactly): det = 0 exactly
SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])

SAMPLES = [
    # inv
    S("linalg_inv", lambda a: L.inv(a), [well(3, 3)]),
    S("linalg_inv", lambda a: L.inv(a), [well(2, 3, 3)], "batched"),
    S("linalg_inv", lambda a: L.inv(a) @ a.sin(), [well(2, 2)], "reused"),
    # det
    S("linalg_det", lambda a: L.det(a), [well(3, 3)]),
    S("linalg_det", lambda a: L.det(a), [well(2, 3, 3)], "batched"),
    S("linalg_det", lambda a: L.det(a), [negdet(3, 3)], "negative"),
    S("linalg_det", lambda a: L.det(a), [SINGULAR.copy()], "singular"),
    S("linalg_det", lambda a: L.det(a), [SINGULAR[[0, 1, 0]] * 1.0], "rank1"),
    # cofactor: det's gradient (recorded when det is differentiated with create_graph)
    S("linalg_cofactor", lambda a: apply(COFACTOR, (a,)), [well(3, 3)]),
    S("linalg_cofactor", lambda a: apply(COFACTOR, (a,)), [well(2, 3, 3)], "batched"),
    # slogdet / logdet
    S("linalg_slogdet", lambda a: L.slogdet(a).logabsdet, [well(3, 3)]),
    S("linalg_slogdet", lambda a: L.slogdet(a), [well(3, 3)], "tuple_with_sign"),
    S("linalg_slogdet", lambda a: L.slogdet(a)[1], [negdet(2, 3, 3)], "batched_negative"),
    S("linalg_slogdet", lambda a: L.logdet(a), [well(2, 3, 3)], "logdet"),
    # solve
    S("linalg_solve", lambda a, b: L.solve(a, b), [well(3, 3), randn(3, 2)]),
    S("linalg_solve", lambda a, b: L.solve(a, b), [well(3, 3), randn(3)], "vector"),
    S("linalg_solve", lambda a, b: L.solve(a, b), [well(2, 3, 3), randn(2, 3)],
      "batched_vector"),
    S("linalg_solve", lambda a, b: L.solve(a, b), [well(2, 1, 3, 3), randn(2, 3, 2)],
      "broadcast"),
    S("linalg_solve", lambda a, b: L.solve(a, b, left=False), [well(2, 3, 3), randn(2, 4, 3)],
      "right"),
    S("linalg_solve", lambda a: L.solve(a, a.exp()), [well(3, 3)], "same_input"),
    # solve_triangular (full random A: only the referenced triangle is read)
    S("linalg_solve_triangular", lambda a, b: L.solve_triangular(a, b, upper=True),
      [well(3, 3), randn(3, 2)]),
    S("linalg_solve_triangular", lambda a, b: L.solve_triangular(a, b, upper=False),
      [well(2, 3, 3), randn(2, 3, 2)], "lower_batched"),
    S("linalg_solve_triangular",
      lambda a, b: L.solve_triangular(a, b, upper=True, left=False),
      [well(2, 3, 3), randn(4, 3)], "right_broadcast"),
    S("linalg_solve_triangular",
      lambda a, b: L.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
      [well(3, 3), randn(2, 3)], "right_unit"),
    S("linalg_solve_triangular",
      lambda a, b: L.solve_triangular(a, b, upper=True, unitriangular=True),
      [randn(2, 3, 3), randn(3, 1)], "unit"),
    S("linalg_solve_triangular",
      lambda a, b: L.solve_triangular(a.tril(), b, upper=False),
      [well(3, 3), randn(3, 2)], "tril_input"),
    S("linalg_solve_triangular", lambda b, l: L.cholesky_solve(b, l),
      [randn(2, 3, 2), spd_factor(3, 3)], "cholesky_solve"),
    S("linalg_solve_triangular", lambda b, l: L.cholesky_solve(b, l, upper=True),
      [randn(3, 2), spd_factor(2, 3, 3).swapaxes(-1, -2)], "cholesky_solve_upper"),
    # pinv / lstsq (full rank)
    S("linalg_pinv", lambda a: L.pinv(a), [randn(4, 3)], "tall"),
    S("linalg_pinv", lambda a: L.pinv(a), [randn(2, 2, 4)], "wide_batched"),
    S("linalg_pinv", lambda a: L.pinv(a), [well(3, 3)], "square"),
    S("linalg_pinv", lambda a, b: L.lstsq(a, b).solution, [randn(5, 3), randn(5, 2)],
      "lstsq"),
    S("linalg_pinv", lambda a, b: L.lstsq(a, b).solution, [randn(2, 2, 4), randn(2, 2)],
      "lstsq_wide_vector"),
    S("linalg_pinv", lambda a, b: L.lstsq(a, b, driver="gelsd").residuals,
      [randn(2, 5, 2), randn(2, 5, 2)], "lstsq_residuals"),
    # matrix_exp
    S("linalg_matrix_exp", lambda a: L.matrix_exp(a), [randn(3, 3)]),
    S("linalg_matrix_exp", lambda a: L.matrix_exp(a), [randn(2, 2, 2) * 2], "batched"),
    S("linalg_matrix_exp", lambda a: L.matrix_exp(a), [np.diag([1.0, 1.0, 2.0])
                                                      + np.triu(randn(3, 3), 1) * 0.5],
      "repeated_eigenvalue"),
    # matrix_power (composition of matmul and inv)
    S("linalg_inv", lambda a: L.matrix_power(a, -3), [well(3, 3)], "matrix_power_neg"),
    S("linalg_inv", lambda a: L.matrix_power(a, -1), [well(2, 2, 2)], "matrix_power_m1"),
    S("matmul", lambda a: L.matrix_power(a, 5), [randn(2, 3, 3) * 0.5], "matrix_power_5"),
    S("mm", lambda a: L.matrix_power(a, 2), [randn(3, 3)], "matrix_power_2"),
    S("where", lambda a: L.matrix_power(a, 0) + a, [randn(3, 3)], "matrix_power_0"),
    # cross
    S("linalg_cross", lambda a, b: L.cross(a, b), [randn(4, 3), randn(4, 3)]),
    S("linalg_cross", lambda a, b: L.cross(a, b, dim=0), [randn(3, 2), randn(3, 1)],
      "dim0_broadcast"),
    S("linalg_cross", lambda a: L.cross(a, a.sin()), [randn(2, 3)], "same_input"),
    # multi_dot (composition of mm)
    S("mm", lambda a, b, c: L.multi_dot([a, b, c]), [randn(3, 5), randn(5, 2), randn(2, 4)],
      "multi_dot"),
    S("mm", lambda a, b, c, d: L.multi_dot([a, b, c, d]),
      [randn(4), randn(4, 3), randn(3, 5), randn(5)], "multi_dot_vector_ends"),
    # solve_sylvester
    S("solve_sylvester", lambda a, b, c: L.solve_sylvester(a, b, c),
      [well(3, 3), well(2, 2), randn(3, 2)]),
    S("solve_sylvester", lambda a, b, c: L.solve_sylvester(a, b, c),
      [well(2, 2, 2), well(3, 3), randn(2, 3)], "batched_broadcast"),
    S("solve_sylvester", lambda a, c: L.solve_sylvester(a, a.mT, c),
      [well(3, 3), randn(3, 3)], "lyapunov"),
]

