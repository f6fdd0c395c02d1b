"""Samples for chainrule.linalg matrix functions (see tests/samples.py): matrix_function
(a generic f, with and without df), sqrtm / logm / expm_sym / powm of symmetric matrices,
and sqrtm / logm of general ones.

Symmetric inputs are built inside each function as ``A + A^T`` (exactly symmetric, so that
every entry of the input is a free variable and perturbations keep the symmetry), positive
definite ones as ``A + A^T + c I`` with ``c`` large enough. General inputs are ``3 I + A``
with a small ``A``: eigenvalues near 3, real principal square root and logarithm.
"""

from __future__ import annotations

import numpy as np

import chainrule as cr
from samples import Sample

RNG = np.random.default_rng(2468)
S = Sample
linalg = cr.linalg


def randn(*shape):
    return RNG.standard_normal(shape)


def sym(A):
    return A + A.mT


def spd(A):
    n = A.shape[-1]
    return sym(A) + 2.0 * n * cr.eye(n, dtype=A.dtype, device=A.device)


def general(A):
    n = A.shape[-1]
    return 3.0 * cr.eye(n, dtype=A.dtype, device=A.device) + A


def _tanh_df(x):
    return 1.0 - x.tanh() ** 2


SAMPLES = [
    S("linalg_matrix_function", lambda A: linalg.matrix_function(sym(A), cr.tanh, _tanh_df),
      [randn(3, 3) * 0.5], "tanh"),
    S("linalg_matrix_function", lambda A: linalg.matrix_function(sym(A), lambda x: x.sin()),
      [randn(2, 3, 3) * 0.5], "default_df_batched"),
    S("linalg_matrix_function", lambda A: linalg.sqrtm(spd(A)), [randn(3, 3) * 0.5], "sqrtm"),
    S("linalg_matrix_function", lambda A: linalg.logm(spd(A)), [randn(2, 3, 3) * 0.5],
      "logm_batched"),
    S("linalg_matrix_function", lambda A: linalg.expm_sym(sym(A)), [randn(3, 3) * 0.5],
      "expm_sym"),
    S("linalg_matrix_function", lambda A: linalg.powm(spd(A), -0.7), [randn(3, 3) * 0.5],
      "powm"),
    S("linalg_sqrtm", lambda A: linalg.sqrtm(general(A)), [randn(3, 3) * 0.4]),
    S("linalg_sqrtm", lambda A: linalg.sqrtm(general(A)), [randn(2, 3, 3) * 0.4], "batched"),
    S("linalg_logm", lambda A: linalg.logm(general(A)), [randn(3, 3) * 0.4]),
    S("linalg_logm", lambda A: linalg.logm(general(A)), [randn(2, 2, 2) * 0.4], "batched"),
]
