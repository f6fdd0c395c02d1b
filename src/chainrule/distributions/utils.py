"""``chainrule.distributions.utils``, as ``torch.distributions.utils``: ``broadcast_all``,
``logits_to_probs``, ``probs_to_logits``, ``clamp_probs``, ``lazy_property``,
``tril_matrix_to_vec``, ``vec_to_tril_matrix`` and ``euler_constant``."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .. import _creation
from .. import ops as _ops
from .._tensor import Tensor
from ..backend import numpy_dtype
from .distribution import broadcast_all, clamp_probs, logits_to_probs, probs_to_logits

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]

euler_constant = 0.57721566490153286060  # Euler Mascheroni constant
lazy_property = cached_property  # computed on first access, then stored on the instance


def _tril_mask(n, diag):
    arange = np.arange(n)
    return arange < arange.reshape(-1, 1) + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries of the lower triangle of ``mat`` (on and below the ``diag``-th diagonal)
    in row order, as a vector per matrix. Raises ValueError for ``diag`` outside
    ``[-n, n - 1]``."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = np.nonzero(_tril_mask(n, diag))
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    index = _creation.tensor(rows * n + cols, dtype=np.int64, device=mat.device)
    return _ops.index_select(flat, -1, index)


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of :func:`tril_matrix_to_vec`: a lower-triangular ``n x n`` matrix per
    vector (zeros elsewhere). Raises ValueError when the length is not that of such a
    triangle."""
    m = vec.shape[-1]
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = float(np.finfo(numpy_dtype(vec.dtype)).eps) if isinstance(vec, Tensor) else 1e-15
    if abs(round(n) - n) > eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         f"the lower triangular part of a square D x D matrix.")
    n = round(n.item()) if isinstance(n, Tensor) else round(n)
    rows, cols = np.nonzero(_tril_mask(n, diag))
    position = np.full(n * n, m, dtype=np.int64)  # index m: the appended zero
    position[rows * n + cols] = np.arange(len(rows))
    batch = tuple(vec.shape[:-1])
    padded = _ops.cat([vec, _creation.zeros(batch + (1,), dtype=vec.dtype, device=vec.device)],
                      -1)
    index = _creation.tensor(position, dtype=np.int64, device=vec.device)
    return _ops.index_select(padded, -1, index).reshape(batch + (n, n))


