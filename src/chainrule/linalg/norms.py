"""Matrix norms and condition numbers, composed from primitives with their own rules.

- ``"fro"``: the vector 2-norm of the entries.
- ``"nuc"``, ``2``, ``-2``: the sum, largest and smallest singular value (``svdvals``, whose
  VJP ``U diag(g) V^T`` stays finite when singular values repeat).
- ``1``, ``-1``, ``inf``, ``-inf``: the largest or smallest absolute column sum (1) or row
  sum (inf).

Every one of them is differentiable wherever the norm is (a subgradient at ties, shared
evenly, as ``amax`` does).
"""

from __future__ import annotations

import math

import numpy as np

from .._creation import zeros
from .._dispatch import ShapeError
from .._tensor import Tensor
from ..ops import reduction
from ..ops.elementwise import abs as _abs
from ..ops.shape import movedim, unsqueeze
from .extras import inv_ex

__all__ = ["matrix_norm", "norm", "cond"]


def _amax(x):
    """``x.amax(-1)``, 0 over an empty last dim (a norm of no entries, as torch); amin
    raises there, as in torch."""
    if x.shape[-1] == 0:
        return reduction.sum(x, -1)
    return x.amax(-1)


def _ndim(x):
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _to_last_two(A, dim):
    """Move the two matrix dims ``dim`` to the end (rows, then columns)."""
    nd = _ndim(A)
    if nd < 2:
        raise ShapeError(f"matrix_norm: expected a tensor with at least 2 dims, got shape "
                         f"{tuple(A.shape)}")
    r, c = (d % nd for d in dim)
    if r == c:
        raise ShapeError(f"matrix_norm: dim must name two different dims, got {dim}")
    if (r, c) != (nd - 2, nd - 1):
        A = movedim(movedim(A, r, -1), c if c < r else c - 1, -1)
    return A, (r, c)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """Matrix norm of the matrices formed by dims ``dim`` of ``A`` (shape (..., m, n)).

    Parameters
    ----------
    ord : {"fro", "nuc", 2, -2, 1, -1, inf, -inf}
    dim : pair of int
    keepdim : bool
        Keep the two reduced dims, with size 1.

    Returns
    -------
    Tensor, shape (...) (or with two size-1 dims when ``keepdim``).

    Raises
    ------
    ValueError
        Fewer than 2 dims, an unknown ``ord``, or ``dim`` naming one dim twice.

    Notes
    -----
    Compositions: ``"fro"`` is ``vector_norm(A, 2, dim)``; ``"nuc"``/``2``/``-2`` reduce
    ``svdvals`` (Townsend 2016: the VJP of the singular values is ``U diag(g) V^T``);
    ``1``/``inf`` (and their negatives) reduce absolute column/row sums with ``amax``/
    ``amin``. Source: Golub and Van Loan, Matrix Computations (4th ed.), sec. 2.3.
    """
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        _to_last_two(A, dim)  # validates the dims
        return reduction.vector_norm(A, 2, dim, keepdim)
    A, (r, c) = _to_last_two(A, dim)
    if ord in ("nuc", 2, -2):
        from .decomp import svdvals

        s = svdvals(A)
        out = s.sum(-1) if ord == "nuc" else (_amax(s) if ord == 2 else s.amin(-1))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = _abs(A).sum(dim=-2 if abs(ord) == 1 else -1)
        out = _amax(sums) if ord > 0 else sums.amin(-1)
    else:
        raise ShapeError(f"matrix_norm: unknown ord {ord!r}; expected 'fro', 'nuc', 2, -2, 1, "
                         "-1, inf or -inf")
    if keepdim:
        for d in sorted((r, c)):
            out = unsqueeze(out, d)
    return out


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``torch.linalg.norm``: a vector norm when ``dim`` is an int or ``A`` is 1-D (or
    ``ord`` is None and ``dim`` is None: the 2-norm of all entries), a matrix norm when
    ``dim`` is a pair or ``A`` is 2-D with a matrix ``ord``."""
    nd = _ndim(A)
    if isinstance(dim, int) or (dim is None and (nd == 1 or ord is None)):
        return reduction.vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None:
        if nd != 2:
            raise ShapeError(f"linalg.norm: ord={ord!r} needs a 1-D or 2-D input or dim, got "
                             f"shape {tuple(A.shape)}")
        dim = (-2, -1)
    return matrix_norm(A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype=dtype)


def cond(A, p=None):
    """Condition number of square (or, for ``p`` in (None, 2, -2), any) matrices ``A``.

    ``p`` None or 2: ``s_max / s_min``; ``-2``: ``s_min / s_max``; otherwise
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)``, ``inf`` for a singular matrix (an exactly
    zero pivot; its gradient is 0 there) and 0 for empty matrices, as torch. Differentiable
    through ``svdvals`` and ``inv``. Raises ValueError for fewer than 2 dims or an unknown
    ``p``.
    """
    if _ndim(A) < 2:
        raise ShapeError(f"cond: expected a tensor with at least 2 dims, got shape "
                         f"{tuple(A.shape)}")
    if p in (None, 2, -2):
        from .decomp import svdvals

        if A.shape[-1] == 0 or A.shape[-2] == 0:  # no singular values: 0, as torch
            return zeros(*A.shape[:-2], dtype=A.dtype, device=A.device)
        s = svdvals(A)
        big, small = s.amax(-1), s.amin(-1)
        return big / small if p in (None, 2) else small / big
    from ..ops import where

    if A.shape[-1] == 0 and A.shape[-2] == 0:  # 0x0 matrices: 0, as torch
        return zeros(*A.shape[:-2], dtype=A.dtype, device=A.device)
    inverse, info = inv_ex(A)
    # a singular matrix (an exactly zero pivot): inf, as torch, rather than an error; its
    # NaN inverse is replaced by 0 first (an SVD of NaN fails), so its gradient is 0
    singular = info._data[...] > 0
    inverse = where(singular[..., None, None], 0.0, inverse)
    return where(singular, float("inf"), matrix_norm(A, p) * matrix_norm(inverse, p))


reduction.MATRIX_NORM[0] = matrix_norm  # torch.norm(p="nuc") in the ops layer uses it
