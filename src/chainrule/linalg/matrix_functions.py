"""Matrix functions and products: matrix_exp, cross, multi_dot.

Primitives declared here (table name, graph node, public functions):

- ``linalg_matrix_exp`` (``LinalgMatrixExpBackward0``): matrix_exp
- ``linalg_cross`` (``LinalgCrossBackward0``): cross

``multi_dot`` is a chain of ``matmul`` in the cheapest order. The rule namespace ``F``
gains ``matrix_exp_frechet`` and ``cross``.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import ShapeError, apply
from .._ns import register
from .._table import defop, documented
from ..backend import NUMPY, xp_kernel
from ._common import (
    _as_input,
    _batch,
    _check_square,
    _kernel_of,
    _shape,
    _shape_error,
)

__all__ = ["matrix_exp", "cross", "multi_dot"]


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


def _register():
    """Declare the names the rules below use (before the ops)."""
    register("matrix_exp_frechet", lambda A, E: _frechet(NUMPY.xp, A, E),
             lambda A, E: _frechet_differentiable(A, E), _kernel_of(_frechet), batch="leading")
    register("cross", lambda a, b, dim: _cross_kernel(NUMPY.xp, a, b, dim),
             lambda a, b, dim: apply(CROSS, (a, b), (dim,)), _kernel_of(_cross_kernel),
             batch=("leading", (2, "dim")))


_register()


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


def _frechet_differentiable(A, E):
    from .._creation import zeros_like
    from ..ops import broadcast_to, cat

    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], E.shape[:-2])
    A = broadcast_to(A, batch + (n, n))
    E = broadcast_to(E, batch + (n, n))
    M = cat([cat([A, E], -1), cat([zeros_like(A), A], -1)], -2)
    return matrix_exp(M)[..., :n, n:]


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
