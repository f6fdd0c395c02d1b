"""Matrix products and matrix-structure ops: matmul, mm, mv, bmm, dot, outer, trace, diag,
diagonal, diagonal_scatter, tril, triu.

The rules are the matrix-calculus identities: for ``C = A @ B``, ``dC = dA B + A dB`` and
``<G, dC> = <G B^T, dA> + <A^T G, dB>``.
"""

from __future__ import annotations

import numpy as np

from .._dispatch import IN_PLACE, ShapeError, apply
from .._table import defop, documented
from .._tensor import Tensor
from ..backend import row_major, xp_kernel
from .elementwise import clone

__all__ = ["matmul", "mm", "mv", "bmm", "dot", "inner", "outer", "trace", "diag", "diagonal",
           "diagonal_scatter", "tril", "triu"]

GILES = ("Giles (2008), An extended collection of matrix derivative results, Report NA-08/01: "
         "the matrix product")

MM = defop(
    "mm", "matmul", ("self", "mat2"),
    vjp={"self": lambda F, g, mat2: F.matmul(g, F.mT(mat2)),
         "mat2": lambda F, g, self: F.matmul(F.mT(self), g)},
    jvp={"self": lambda F, t, mat2: F.matmul(t, mat2),
         "mat2": lambda F, t, self: F.matmul(self, t)},
    math={"self": "grad_A = grad @ B^T", "mat2": "grad_B = A^T @ grad",
          "out": "dC = dA @ B + A @ dB"},
    source=GILES,
)


def _matmul_self(F, g, self, other):
    if other.ndim == 1:
        if self.ndim == 1:  # dot product: g is a scalar
            return g * other
        return F.unsqueeze(g, -1) * other  # (..., m, 1) * (k,) = (..., m, k)
    if self.ndim == 1:  # (k,) @ (..., k, n): the engine sums the batch dims away
        return F.squeeze(F.matmul(other, F.unsqueeze(g, -1)), -1)
    return F.matmul(g, F.mT(other))


def _matmul_other(F, g, self, other):
    if self.ndim == 1:
        if other.ndim == 1:
            return g * self
        return F.unsqueeze(self, -1) * F.unsqueeze(g, -2)  # (k, 1) * (..., 1, n)
    if other.ndim == 1:  # (..., m, k) @ (k,)
        if self.ndim == 2:  # A^T g, written g @ A: one product, no reshapes
            return F.matmul(g, self)
        return F.squeeze(F.matmul(F.mT(self), F.unsqueeze(g, -1)), -1)
    return F.matmul(F.mT(self), g)


MATMUL = defop(
    "matmul", "matmul", ("self", "other"),
    vjp={"self": _matmul_self, "other": _matmul_other},
    jvp={"self": lambda F, t, other: F.matmul(t, other),
         "other": lambda F, t, self: F.matmul(self, t)},
    math={"self": "grad_A = grad @ B^T  (1-D operands promoted as in NumPy, broadcast batch "
                  "dims summed)",
          "other": "grad_B = A^T @ grad", "out": "dC = dA @ B + A @ dB"},
    source=GILES + "; NumPy's matmul promotion and batch broadcasting",
)


@documented(MM, MATMUL)
def matmul(input, other, *, out=None):
    """Matrix product with NumPy's rules: 1-D operands are promoted (and the added dim
    removed), leading batch dims broadcast. Two 2-D operands record ``mm``
    (``MmBackward0`` with ``_saved_self`` and ``_saved_mat2``), as PyTorch does.

    Shapes: ``(..., n, k) @ (..., k, m) -> (..., n, m)``; a ValueError names both shapes
    when the inner dimensions differ or an operand is 0-d. ``out=``: the result written
    into that tensor (PyTorch's; no gradient).
    """
    if out is not None:
        return IN_PLACE.write_out(out, matmul(input, other), "matmul")
    a = input._data if isinstance(input, Tensor) else np.asarray(input)
    b = other._data if isinstance(other, Tensor) else np.asarray(other)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {a.shape} and "
            f"{b.shape}; use * for scaling"
        )
    if a.ndim == 2 and b.ndim == 2:
        return apply(MM, (input, other))
    return apply(MATMUL, (input, other))


def _check_ndim(name, arg, x, ndim):
    shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    if len(shape) != ndim:
        raise ShapeError(f"{name}: {arg} must be {ndim}-D, got shape {tuple(shape)}")


@documented(MM)
def mm(input, mat2):
    """Matrix product of two 2-D tensors: ``(n, k) @ (k, m) -> (n, m)``."""
    _check_ndim("mm", "input", input, 2)
    _check_ndim("mm", "mat2", mat2, 2)
    return apply(MM, (input, mat2))


def mv(input, vec):
    """Matrix-vector product ``(n, k) @ (k,) -> (n,)`` (recorded as ``matmul``)."""
    _check_ndim("mv", "input", input, 2)
    _check_ndim("mv", "vec", vec, 1)
    return apply(MATMUL, (input, vec))


def bmm(input, mat2):
    """Batched product ``(b, n, k) @ (b, k, m) -> (b, n, m)`` (recorded as ``matmul``)."""
    _check_ndim("bmm", "input", input, 3)
    _check_ndim("bmm", "mat2", mat2, 3)
    return apply(MATMUL, (input, mat2))


def dot(input, tensor):
    """Inner product of two 1-D tensors of the same length (recorded as ``matmul``)."""
    _check_ndim("dot", "input", input, 1)
    _check_ndim("dot", "tensor", tensor, 1)
    return apply(MATMUL, (input, tensor))


def inner(input, other):
    """The inner product over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``
    (a product when either is 0-d), as ``torch.inner``; an einsum."""
    from .einsum import einsum
    from .elementwise import mul

    a_nd = input.ndim if isinstance(input, Tensor) else np.ndim(input)
    b_nd = other.ndim if isinstance(other, Tensor) else np.ndim(other)
    if a_nd == 0 or b_nd == 0:
        return mul(input, other)
    a_shape, b_shape = np.shape(input), np.shape(other)
    if a_shape[-1] != b_shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {tuple(a_shape)} and {tuple(b_shape)}")
    if a_nd == 1 and b_nd == 1:
        return dot(input, other)
    letters = "abcdefghjklmnopqrstuvwxyz"
    a = letters[:a_nd - 1]
    b = letters[a_nd - 1:a_nd + b_nd - 2]
    return einsum(f"{a}i,{b}i->{a}{b}", input, other)


def outer(input, vec2):
    """Outer product ``(n,) x (m,) -> (n, m)``, as a broadcast product."""
    from .elementwise import mul
    from .shape import unsqueeze

    _check_ndim("outer", "input", input, 1)
    _check_ndim("outer", "vec2", vec2, 1)
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


TRACE = defop(
    "trace", "trace", ("self",),
    vjp={"self": lambda F, g, self_shape: g * F.eye(*self_shape, dtype=g.dtype)},
    jvp={"self": lambda F, t: F.trace(t)},
    math={"self": "grad_X = grad * I", "out": "dy = tr(dX)"},
    source="Petersen and Pedersen, The Matrix Cookbook (2012), eq. 100",
)


@documented(TRACE)
def trace(input):
    """Sum of the main diagonal of a 2-D tensor; for a batch of matrices (..., n, m) the
    trace of each, shape (...) (PyTorch's trace takes 2-D input only; a batch is summed
    along ``diagonal(input, 0, -2, -1)``, an exact composition)."""
    nd = input.ndim if isinstance(input, Tensor) else np.ndim(input)
    if nd > 2:
        from .reduction import sum as _sum

        return _sum(diagonal(input, 0, -2, -1), -1)
    _check_ndim("trace", "input", input, 2)
    return apply(TRACE, (input,))


DIAGONAL = defop(
    "diagonal", "diagonal", ("self",), attrs=("offset", "dim1", "dim2"), view=True,
    vjp={"self": lambda F, g, self_shape, offset, dim1, dim2: F.diagonal_scatter(
        F.zeros(self_shape, g.dtype), g, offset, dim1, dim2)},
    jvp={"self": lambda F, t, offset, dim1, dim2: F.diagonal(t, offset, dim1, dim2)},
    math={"self": "grad_X = zeros with grad written on the diagonal",
          "out": "dy = diagonal(dX)"},
    source="a selection (linear); its transpose scatters back",
)
DIAGONAL_SCATTER = defop(
    "diagonal_scatter", "diagonal_scatter", ("self", "src"), attrs=("offset", "dim1", "dim2"),
    vjp={"self": lambda F, g, src_shape, offset, dim1, dim2: F.diagonal_scatter(
        g, F.zeros(src_shape, g.dtype), offset, dim1, dim2),
        "src": lambda F, g, offset, dim1, dim2: F.diagonal(g, offset, dim1, dim2)},
    jvp={"self": lambda F, t, src_shape, offset, dim1, dim2: F.diagonal_scatter(
        t, F.zeros(src_shape, t.dtype), offset, dim1, dim2),
        "src": lambda F, t, self_shape, offset, dim1, dim2: F.diagonal_scatter(
        F.zeros(self_shape, t.dtype), t, offset, dim1, dim2)},
    math={"self": "grad_X = grad with its diagonal zeroed", "src": "grad_s = diagonal(grad)",
          "out": "dY = diagonal_scatter(dX, ds)"},
    source="a linear embedding; VJP by transposition",
)
DIAG = defop(
    "diag", "diag", ("self",), attrs=("diagonal",),
    vjp={"self": lambda F, g, diagonal: F.diagonal(g, diagonal, 0, 1)},
    jvp={"self": lambda F, t, diagonal: F.diag(t, diagonal)},
    math={"self": "grad_v = diagonal(grad, k)", "out": "dY = diag(dv, k)"},
    source="a linear embedding of a vector on a diagonal; VJP by transposition",
)


def _norm_dim(d, ndim):
    if not -ndim <= d < ndim:
        raise IndexError(f"dim {d} is out of range for a tensor with {ndim} dimensions")
    return d % ndim


@documented(DIAGONAL)
def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal ``offset`` of the planes ``(dim1, dim2)``, as the last dimension (a view)."""
    nd = input.ndim if isinstance(input, Tensor) else np.ndim(input)
    return apply(DIAGONAL, (input,), (offset, _norm_dim(dim1, nd), _norm_dim(dim2, nd)))


@documented(DIAGONAL_SCATTER)
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``src`` written on the diagonal ``(offset, dim1, dim2)``."""
    nd = input.ndim if isinstance(input, Tensor) else np.ndim(input)
    return apply(DIAGONAL_SCATTER, (input, src),
                 (offset, _norm_dim(dim1, nd), _norm_dim(dim2, nd)))


@documented(DIAG)
def diag(input, diagonal=0):
    """1-D input: a square matrix with ``input`` on diagonal ``diagonal``.
    2-D input: that diagonal, as a 1-D tensor (see :func:`diagonal`)."""
    nd = input.ndim if isinstance(input, Tensor) else np.ndim(input)
    if nd == 2:  # a copy of the diagonal (PyTorch's diag), not a view as diagonal is
        return clone(globals()["diagonal"](input, diagonal))
    if nd != 1:
        raise ShapeError(f"diag: input must be 1-D or 2-D, got {nd}-D")
    return apply(DIAG, (input,), (diagonal,))


TRIL = defop(
    "tril", xp_kernel(lambda xp, x, k: row_major(xp.tril(x, k=k))), ("self",), attrs=("diagonal",),
    vjp={"self": lambda F, g, diagonal: F.tril(g, diagonal)},
    jvp={"self": lambda F, t, diagonal: F.tril(t, diagonal)},
    math={"self": "grad_X = tril(grad, k)", "out": "dY = tril(dX, k)"},
    source="a masking projection: self-adjoint",
)
TRIU = defop(
    "triu", xp_kernel(lambda xp, x, k: row_major(xp.triu(x, k=k))), ("self",), attrs=("diagonal",),
    vjp={"self": lambda F, g, diagonal: F.triu(g, diagonal)},
    jvp={"self": lambda F, t, diagonal: F.triu(t, diagonal)},
    math={"self": "grad_X = triu(grad, k)", "out": "dY = triu(dX, k)"},
    source="a masking projection: self-adjoint",
)


@documented(TRIL)
def tril(input, diagonal=0):
    """Lower triangle (on and below diagonal ``diagonal``) of the last two dims."""
    if len(input.shape if isinstance(input, Tensor) else np.shape(input)) < 2:
        raise RuntimeError(f"tril: input tensor must have at least 2 dimensions, got shape "
                           f"{tuple(np.shape(input))}")
    return apply(TRIL, (input,), (diagonal,))


@documented(TRIU)
def triu(input, diagonal=0):
    """Upper triangle (on and above diagonal ``diagonal``) of the last two dims."""
    if len(input.shape if isinstance(input, Tensor) else np.shape(input)) < 2:
        raise RuntimeError(f"triu: input tensor must have at least 2 dimensions, got shape "
                           f"{tuple(np.shape(input))}")
    return apply(TRIU, (input,), (diagonal,))


