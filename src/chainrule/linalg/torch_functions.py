"""PyTorch's top-level linear-algebra functions (``torch.inverse``, ``torch.kron``,
``torch.addmm``, ...), as aliases of ``chainrule.linalg`` or exact compositions of the
table's primitives: their gradients, to any order, come from those rules. Exported at the
top level (``chainrule.kron``) and as Tensor methods where PyTorch has them.
"""

from __future__ import annotations

import collections
import math
import warnings

import numpy as np

from .._creation import zeros
from .._tensor import Tensor
from ..backend import numpy_dtype
from ..ops import diagonal_scatter, movedim
from ..ops._dims import number_arg
from ..ops.torch_more import _t
from . import decomp, pseudoinverse, solves
from . import lu_family as _lu
from .inverse import det, logdet, matrix_power
from .inverse import inv as inverse
from .inverse import slogdet as _slogdet
from .matrix_functions import cross as _linalg_cross
from .matrix_functions import matrix_exp, multi_dot
from .norms import matrix_norm

__all__ = [
    "inverse", "det", "logdet", "slogdet", "cholesky", "cholesky_solve", "cholesky_inverse",
    "triangular_solve", "lu", "lu_solve", "lu_unpack", "pinverse", "kron", "tensordot",
    "cross", "cdist", "addmm", "addmv", "addr", "addbmm", "baddbmm", "chain_matmul",
    "diag_embed", "diagflat", "block_diag", "cartesian_prod", "vdot", "matrix_power",
    "matrix_exp", "qr", "svd", "orgqr", "adjoint", "ger", "spmm", "rsub", "renorm", "row_stack",
    "ormqr", "svd_lowrank", "pca_lowrank", "vander", "nuclear_norm",
]

QRResult = collections.namedtuple("qr", ["Q", "R"])
SVDResult = collections.namedtuple("svd", ["U", "S", "V"])

TriangularSolveResult = collections.namedtuple("triangular_solve",
                                               ["solution", "cloned_coefficient"])
SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])

lu_unpack = _lu.lu_unpack


def slogdet(A):
    """``(sign, logabsdet)`` of ``A`` (..., n, n), as ``torch.slogdet``."""
    return SlogdetResult(*_slogdet(A))


def cholesky(A, upper=False):
    """The Cholesky factor (lower, or upper with ``upper=True``), as ``torch.cholesky``."""
    return decomp.cholesky(A, upper=upper)


def cholesky_solve(B, L, upper=False):
    """``A^-1 B`` for ``A = L L^T`` (``U^T U`` with ``upper``), as ``torch.cholesky_solve``
    (``B`` first, then the factor)."""
    return solves.cholesky_solve(B, L, upper=upper)


def cholesky_inverse(L, upper=False):
    """``A^-1`` for ``A = L L^T`` (``U^T U`` with ``upper``), as ``torch.cholesky_inverse``."""
    from .._creation import eye

    L = _t(L)
    n = L.shape[-1]
    return solves.cholesky_solve(eye(n, dtype=L.dtype, device=L.device).expand(*L.shape), L,
                                 upper=upper)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """``(X, A.clone())`` with ``A X = b`` (``A^T X = b`` with ``transpose``), A triangular,
    as the deprecated ``torch.triangular_solve`` (note: ``b`` first, ``upper=True``)."""
    A = _t(A)
    M = A.mT if transpose else A
    X = solves.solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())


def lu(A, pivot=True, get_infos=False):
    """``(LU, pivots)`` (and ``infos`` with ``get_infos``), as the deprecated ``torch.lu``;
    see :func:`chainrule.linalg.lu_factor`."""
    result = _lu.lu_factor_ex(A, pivot=pivot)
    return tuple(result) if get_infos else (result.LU, result.pivots)


def lu_solve(b, LU_data, LU_pivots):
    """``A^-1 b`` from ``torch.lu``'s factors, as the deprecated ``torch.lu_solve``."""
    return _lu.lu_solve(LU_data, LU_pivots, b)


def pinverse(input, rcond=1e-15):
    """The pseudoinverse, singular values below ``rcond * s_max`` dropped, as
    ``torch.pinverse``."""
    return pseudoinverse.pinv(input, rtol=rcond)


def kron(input, other):
    """The Kronecker product, as ``torch.kron``: for shapes ``a`` and ``b`` (padded with
    leading 1s to one length) the result has shape ``a_i * b_i``; a broadcast product of
    the two with their dims interleaved, then merged."""
    a, b = _t(input), _t(other)
    nd = max(a.ndim, b.ndim)
    a = a.reshape((1,) * (nd - a.ndim) + tuple(a.shape))
    b = b.reshape((1,) * (nd - b.ndim) + tuple(b.shape))
    ea = a.reshape(tuple(x for d in a.shape for x in (d, 1)))
    eb = b.reshape(tuple(x for d in b.shape for x in (1, d)))
    return (ea * eb).reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a vector, as ``torch.vander``.

    Parameters
    ----------
    x : Tensor (n,)
        One dimension; bool and integer vectors give int64 matrices.
    N : int, optional
        The number of columns (n by default); 0 gives an (n, 0) matrix.
    increasing : bool
        False (the default, as NumPy's and PyTorch's): columns ``x^(N-1), ..., x, 1``;
        True: ``1, x, ..., x^(N-1)``.

    Returns
    -------
    Tensor (n, N). Column ``x ** k`` is the table's power, so the gradient is
    ``sum_k k x^(k-1) G[:, k]`` to any order.

    Raises
    ------
    RuntimeError
        ``x`` not one-dimensional, or ``N`` negative (PyTorch's errors).
    """
    from .._creation import ones_like
    from ..ops import stack

    x = _t(x)
    if x.ndim != 1:
        raise RuntimeError(f"vander: x must be a one-dimensional tensor, got shape "
                           f"{tuple(x.shape)}")
    N = x.shape[0] if N is None else number_arg(N, "vander", "N")
    if N < 0:
        raise RuntimeError(f"vander: N must be non-negative, got N={N}")
    if numpy_dtype(x.dtype).kind in "biu":
        x = x.to(np.dtype(np.int64))
    if N == 0:
        return zeros((x.shape[0], 0), dtype=x.dtype)
    columns = [ones_like(x)] + [x ** k for k in range(1, N)]
    return stack(columns if increasing else columns[::-1], 1)


def tensordot(a, b, dims=2, out=None):
    """Contract the last ``dims`` dims of ``a`` with the first ``dims`` of ``b`` (or the
    dims listed in ``dims = (dims_a, dims_b)``), as ``torch.tensordot``: a permute, a
    reshape and one ``matmul``."""
    from ..ops import matmul, permute

    a, b = _t(a), _t(b)
    dims = number_arg(dims, "tensordot", "dims") if getattr(dims, "ndim", 1) == 0 else dims
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if isinstance(da, Tensor) or isinstance(db, Tensor):
            da, db = [int(v) for v in np.ravel(da)], [int(v) for v in np.ravel(db)]
    da = [d % a.ndim for d in da]
    db = [d % b.ndim for d in db]
    if len(da) != len(db):
        raise RuntimeError(f"tensordot: both dimension lists should have the same length, got "
                           f"{len(da)} and {len(db)}")
    for x, y in zip(da, db):  # a contracted dim of size 1 broadcasts, as in PyTorch
        if a.shape[x] == 1 and b.shape[y] != 1:
            a = a.expand(*[b.shape[y] if i == x else s for i, s in enumerate(a.shape)])
        elif b.shape[y] == 1 and a.shape[x] != 1:
            b = b.expand(*[a.shape[x] if i == y else s for i, s in enumerate(b.shape)])
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"tensordot: contracted dimensions need to match, but first has "
                               f"size {a.shape[x]} in dim {x} and second has size "
                               f"{b.shape[y]} in dim {y}")
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    A = permute(a, free_a + da).reshape(math.prod(a.shape[d] for d in free_a), k)
    B = permute(b, db + free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    result = matmul(A, B).reshape(tuple(a.shape[d] for d in free_a) +
                                  tuple(b.shape[d] for d in free_b))
    if out is None:
        return result
    from .._inplace import write_out

    return write_out(out, result, "tensordot")


def cross(input, other, dim=None):
    """The cross product of 3-vectors along ``dim`` (default: the first dim of size 3, as
    ``torch.cross``); see :func:`chainrule.linalg.cross`."""
    a, b = _t(input), _t(other)
    if dim is None:
        shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input (shapes {tuple(a.shape)} and "
                               f"{tuple(b.shape)})")
    return _linalg_cross(a, b, dim=dim)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise ``p``-norm distances between the rows of ``x1`` (..., P, M) and ``x2``
    (..., R, M): (..., P, R), as ``torch.cdist``; the gradient at a zero distance is 0 (the
    norm's subgradient), as PyTorch's."""
    from ..ops import vector_norm

    x1, x2 = _t(x1), _t(x2)
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"cdist: X1 and X2 must have at least 2 dimensions and the same "
                           f"number of columns, got shapes {tuple(x1.shape)} and "
                           f"{tuple(x2.shape)}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    return vector_norm(diff, p, -1)


def _scaled(beta, x, alpha, y):
    """``beta * x + alpha * y``; beta == 0 ignores ``x`` (nan and inf in it do not pass),
    as PyTorch's addmm family."""
    ay = y if alpha == 1 else alpha * y
    if beta == 0:
        return ay + 0 * ay if not isinstance(x, Tensor) else ay.expand(
            *np.broadcast_shapes(tuple(x.shape), tuple(ay.shape)))
    return (x if beta == 1 else beta * x) + ay


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, as ``torch.addmm``."""
    from ..ops import mm

    return _scaled(beta, _t(input), alpha, mm(mat1, mat2))


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``, as ``torch.addmv``."""
    from ..ops import mv

    return _scaled(beta, _t(input), alpha, mv(mat, vec))


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``, as ``torch.addr``."""
    from ..ops import outer

    return _scaled(beta, _t(input), alpha, outer(vec1, vec2))


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, as ``torch.addbmm``."""
    from ..ops import bmm

    return _scaled(beta, _t(input), alpha, bmm(batch1, batch2).sum(0))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)``, batched, as ``torch.baddbmm``."""
    from ..ops import bmm

    return _scaled(beta, _t(input), alpha, bmm(batch1, batch2))


def chain_matmul(*matrices):
    """The product of the matrices, as the deprecated ``torch.chain_matmul`` (see
    :func:`chainrule.linalg.multi_dot`)."""
    if len(matrices) == 1:
        return _t(matrices[0]) * 1
    return multi_dot(list(matrices))


def vdot(input, other):
    """``sum(conj(input) * other)`` of two 1-D tensors (real tensors: their dot product),
    as ``torch.vdot``."""
    from ..ops import conj, dot

    return dot(conj(_t(input)), other)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices with the last dim of ``input`` on their diagonal ``offset``, placed in dims
    ``dim1``, ``dim2`` of the result, as ``torch.diag_embed``: the entries written on the
    diagonal of zeros (``diagonal_scatter``), so an inf or NaN entry stays on the diagonal
    (a product with an identity would put inf * 0 = NaN beside it, and send a NaN
    cotangent of an off-diagonal entry into the gradient)."""
    x = _t(input)
    n = x.shape[-1]
    m = n + abs(offset)
    batch = tuple(x.shape[:-1])
    D = diagonal_scatter(zeros(*batch, m, m, dtype=x.dtype, device=x.device), x, offset, -2, -1)
    nd = D.ndim
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise RuntimeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, "
                           f"{dim2}")
    return movedim(D, [nd - 2, nd - 1], [d1, d2])


def diagflat(input, offset=0):
    """A 2-D matrix with the flattened ``input`` on diagonal ``offset``, as
    ``torch.diagflat``."""
    return diag_embed(_t(input).reshape(-1), offset)


def block_diag(*tensors):
    """The block-diagonal matrix of the given 0-, 1- or 2-D tensors (a 1-D one is a row),
    as ``torch.block_diag``."""
    from ..ops import cat

    blocks = []
    for k, t in enumerate(tensors):
        t = _t(t)
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, -1) if t.ndim < 2 else t)
    if not blocks:
        return zeros(1, 0)
    dtype = np.result_type(*[numpy_dtype(b.dtype) for b in blocks])
    dev = blocks[0].device
    cols = sum(b.shape[1] for b in blocks)
    rows, start = [], 0
    for b in blocks:
        r, c = b.shape
        parts = [zeros(r, start, dtype=dtype, device=dev), b.to(dtype),
                 zeros(r, cols - start - c, dtype=dtype, device=dev)]
        rows.append(cat(parts, 1))
        start += c
    return cat(rows, 0)


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors, (N, len(tensors)) rows in lexicographic order
    (a single tensor is returned as it is), as ``torch.cartesian_prod``."""
    from ..ops import meshgrid, stack

    ts = [_t(t) for t in tensors]
    for k, t in enumerate(ts):
        if t.ndim != 1:
            raise RuntimeError(f"cartesian_prod: Expect a 1D vector, but got shape "
                               f"{tuple(t.shape)} for input {k}")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def qr(input, some=True):
    """``(Q, R)``, reduced when ``some`` (the deprecated ``torch.qr``; see
    :func:`chainrule.linalg.qr`)."""
    return QRResult(*decomp.qr(input, mode="reduced" if some else "complete"))


def svd(input, some=True, compute_uv=True):
    """``(U, S, V)`` with ``A = U diag(S) V^T`` (note: ``V``, not ``V^T``), thin when ``some``,
    as the deprecated ``torch.svd``; without ``compute_uv``, ``U`` and ``V`` are zeros."""
    A = _t(input)
    if not compute_uv:
        m, n = A.shape[-2], A.shape[-1]
        batch = tuple(A.shape[:-2])
        return SVDResult(zeros(*batch, m, m if not some else min(m, n), dtype=A.dtype,
                               device=A.device), decomp.svdvals(A),
                         zeros(*batch, n, n if not some else min(m, n), dtype=A.dtype,
                               device=A.device))
    U, S, Vh = decomp.svd(A, full_matrices=not some)
    return SVDResult(U, S, Vh.mT)


def orgqr(input, tau):
    """Alias of :func:`chainrule.linalg.householder_product` (``torch.orgqr``)."""
    from .extras import householder_product

    return householder_product(input, tau)


def adjoint(input):
    """The conjugate transpose of the last two dims; for real tensors ``input.mT`` (a
    view), as ``torch.adjoint``."""
    return _t(input).mH


def ger(input, vec2):
    """Alias of ``outer`` (the deprecated ``torch.ger``)."""
    from ..ops import outer

    return outer(input, vec2)


def spmm(input, mat2):
    """``torch.spmm`` for the dense (strided) matrices chainrule has: the product ``mm``
    (PyTorch's spmm of two strided matrices is ``mm``; there is no sparse layout here)."""
    from ..ops import mm

    return mm(input, mat2)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (``torch.rsub``)."""
    return other - (input if alpha == 1 else alpha * input)


def renorm(input, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (times ``maxnorm / (norm + 1e-7)``, as PyTorch), as ``torch.renorm``."""
    from ..ops import vector_norm, where

    x = _t(input)
    d = dim % x.ndim
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = vector_norm(x, p, others, True)
    return x * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)


def row_stack(tensors):
    """Alias of ``vstack`` (``torch.row_stack``)."""
    from ..ops import vstack

    return vstack(tensors)


def ormqr(input, tau, other, left=True, transpose=False):
    """``Q C`` (``C Q`` when not ``left``; ``Q^T`` with ``transpose``) for ``Q`` the full
    product ``H_1 ... H_k`` of the Householder reflectors stored in ``input`` and ``tau``
    (LAPACK's ormqr), as ``torch.ormqr``: the reflectors applied one by one, so it is
    differentiable in all three inputs."""
    from .._creation import eye, zeros
    from ..ops import cat, matmul, tril, unsqueeze

    A, tau, C = _t(input), _t(tau), _t(other)
    m = C.shape[-2] if left else C.shape[-1]
    k = tau.shape[-1]
    if k > min(m, A.shape[-1]) or A.shape[-2] != m:
        raise RuntimeError(f"ormqr: input {tuple(A.shape)}, tau {tuple(tau.shape)} and other "
                           f"{tuple(C.shape)} do not fit (left={left})")
    ncols = A.shape[-1]
    V = tril(A, -1) + eye(m, ncols, dtype=A.dtype, device=A.device)
    if ncols < m:
        V = cat([V, zeros(*A.shape[:-2], m, m - ncols, dtype=A.dtype, device=A.device)], -1)
    order = list(range(k))
    if left != transpose:  # Q C = H_1 (... (H_k C)): the last reflector first
        order.reverse()
    for i in order:
        v = V[..., :, i:i + 1]
        t = unsqueeze(unsqueeze(tau[..., i], -1), -1)
        if left:
            C = C - t * matmul(v, matmul(v.mT, C))
        else:
            C = C - t * matmul(matmul(C, v), v.mT)
    return C


def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)`` of the ``q`` largest singular triplets of ``A - M``, as
    ``torch.svd_lowrank``; computed exactly (a thin SVD, truncated) rather than by
    randomized subspace iteration, so ``niter`` is accepted and unused."""
    X = _t(A) if M is None else _t(A) - M
    q = min(6 if q is None else q, X.shape[-2], X.shape[-1])
    U, S, Vh = decomp.svd(X, full_matrices=False)
    return U[..., :q], S[..., :q], Vh[..., :q, :].mT


def pca_lowrank(A, q=None, center=True, niter=2):
    """``svd_lowrank`` of ``A`` with its columns centred (``center``), ``q`` defaulting to
    ``min(6, m, n)``, as ``torch.pca_lowrank`` (exact, not randomized)."""
    X = _t(A)
    if center:
        X = X - X.mean(-2, keepdim=True)
    return svd_lowrank(X, q=min(6, X.shape[-2], X.shape[-1]) if q is None else q)


NUCLEAR_DEPRECATED = (
    "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be "
    "removed in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, "
    "keepdim)` instead")


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of the matrices of dims ``dim`` (the last two when
    not given; ``nuclear_norm(input, keepdim)`` as PyTorch's overload), with PyTorch's
    deprecation warning."""
    warnings.warn(NUCLEAR_DEPRECATED, UserWarning, stacklevel=3)
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


def _name_errors():
    """Errors raised while these prepare their arguments name the function (as every
    public function of chainrule does)."""
    from .._dispatch import name_errors

    for name in __all__:
        fn = globals()[name]
        if getattr(fn, "__module__", None) == __name__:
            globals()[name] = name_errors(fn, name)


_name_errors()


def _install_methods():
    """PyTorch's Tensor methods for these (``A.inverse()``, ``A.kron(B)``, ...); the
    tensor layer does not import linalg, so linalg attaches them."""
    same = ["inverse", "det", "logdet", "slogdet", "cholesky", "cholesky_solve",
            "cholesky_inverse", "triangular_solve", "lu", "lu_solve", "pinverse", "kron",
            "cross", "addmm", "addmv", "addr", "addbmm", "baddbmm", "diag_embed", "vdot",
            "matrix_power", "matrix_exp", "qr", "svd", "orgqr", "adjoint", "ger", "renorm",
            "diagflat", "ormqr"]
    for name in same:
        setattr(Tensor, name, globals()[name])
    from .._inplace import update

    def inplace(name):
        fn = globals()[name]

        def method(self, *args, **kwargs):
            return update(self, lambda old: fn(old, *args, **kwargs), name + "_", *args,
                          *kwargs.values())

        method.__name__ = name + "_"
        method.__doc__ = f"In-place version of :func:`{name}`."
        return method

    for name in ("addmm", "addmv", "addr", "addbmm", "baddbmm", "renorm"):
        setattr(Tensor, name + "_", inplace(name))


_install_methods()
