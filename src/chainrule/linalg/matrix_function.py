"""Functions of a matrix whose gradients stay right at repeated eigenvalues: matrix_function,
sqrtm, logm, expm_sym, powm.

Primitives declared here (table name, graph node, public functions):

- ``linalg_matrix_function`` (``LinalgMatrixFunctionBackward0``): matrix_function,
  expm_sym, powm, and sqrtm / logm of a symmetric matrix. ``Y = V f(L) V^T`` from the
  eigendecomposition of ``sym(A) = (A + A^T) / 2``; its derivative is the Daleckii-Krein
  formula ``L_f(A, E) = V (D ∘ (V^T sym(E) V)) V^T`` with the first divided differences
  ``D_ij = f[l_i, l_j]``, which is finite and exact where eigenvalues coincide
  (``D_ii = f'(l_i)``), unlike the chain rule through ``eigh``'s eigenvectors.
- ``linalg_sqrtm`` (``LinalgSqrtmBackward0``) and ``linalg_logm`` (``LinalgLogmBackward0``):
  sqrtm / logm of a general square matrix (SciPy's kernels), differentiated through the
  block-triangular identity ``f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]]``
  (Higham 2008, thm 3.6 / eq. 3.16) and the adjoint ``L_f(A, .)* = L_f(A^T, .)``.

The rule namespace ``F`` gains ``matrix_function_frechet``, ``sqrtm_frechet`` and
``logm_frechet``. Forward kernels compute with NumPy / SciPy only (other backends raise
NotImplementedError naming the op).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg

from .._dispatch import apply
from .._ns import register
from .._state import enable_grad, no_grad
from .._table import defop, documented
from .._tensor import Tensor, wrap
from ._common import _as_input, _check_square
from .decomp import _data as _host

__all__ = ["matrix_function", "sqrtm", "logm", "expm_sym", "powm", "MatrixDomainError"]


class MatrixDomainError(ValueError):
    """A matrix outside the domain of a matrix function: a negative eigenvalue for sqrtm /
    powm, a non-positive one for logm, no real principal square root or logarithm."""


# --- the scalar function and its divided differences ----------------------------------


class ScalarFunction:
    """A scalar function applied to eigenvalues: ``f`` (elementwise, on chainrule tensors),
    its derivative ``df`` (None: by chainrule's autograd), ``divided(a, b)`` the first
    divided difference in a stable closed form (None: the generic one), ``domain``
    (None, ``"psd"``: eigenvalues >= 0, ``"pd"``: > 0) and the public name for messages."""

    __slots__ = ("name", "f", "df", "divided", "domain", "general")

    def __init__(self, name, f, df=None, divided=None, domain=None, general=None):
        self.name, self.f, self.df, self.divided, self.domain = name, f, df, divided, domain
        # f of a general square matrix through differentiable primitives (matrix_exp, the
        # Schur sqrtm/logm), or None: the Frechet derivative is then recorded through it
        self.general = general

    def __repr__(self):
        return f"<{self.name} f={getattr(self.f, '__name__', self.f)!s}>"


def _tensor_like(y, x):
    """``y`` (the result of a user callable) as a tensor with ``x``'s dtype."""
    if isinstance(y, Tensor):
        if y.dtype == x.dtype:
            return y
        from ..ops.elementwise import to_dtype

        return to_dtype(y, x.dtype)
    return wrap(np.asarray(y, dtype=x.dtype) * np.ones(x.shape, dtype=x.dtype))


def _derivative(fn, x):
    """f'(x) elementwise: ``fn.df``, or chainrule's autograd of ``sum(f(x))`` (recorded when
    ``x`` requires grad, so that it is differentiable again)."""
    if fn.df is not None:
        return _tensor_like(fn.df(x), x)
    from ..autograd import grad

    with enable_grad():
        recorded = x.requires_grad
        leaf = x if recorded else x.detach().requires_grad_()
        y = _tensor_like(fn.f(leaf), leaf)
        (d,) = grad(y.sum(), leaf, create_graph=recorded, allow_unused=True)
    if d is None:
        return x * 0.0
    return d if recorded else d.detach()


def _cbrt_eps(dtype):
    return float(np.finfo(dtype).eps) ** (1.0 / 3.0)


def _generic_divided(fn, w, fw):
    """D_ij = (f(l_i) - f(l_j)) / (l_i - l_j), and f'((l_i + l_j) / 2) where the two are
    closer than c * max(|l_i|, |l_j|, c * max|l|), c = eps^(1/3): there the difference
    quotient would lose more digits (eps |f| / gap) than the midpoint rule does
    (gap^2 |f'''| / 24)."""
    lam = _host(w)
    c = _cbrt_eps(lam.dtype)
    la, lb = lam[..., :, None], lam[..., None, :]
    big = np.max(np.abs(lam), axis=-1, keepdims=True)[..., None] if lam.shape[-1] else 0.0
    scale = np.maximum(np.maximum(np.abs(la), np.abs(lb)), c * big)
    close = np.abs(la - lb) <= c * scale
    a, b = w.unsqueeze(-1), w.unsqueeze(-2)
    fa, fb = fw.unsqueeze(-1), fw.unsqueeze(-2)
    from ..ops import where

    quotient = (fa - fb) / where(close, 1.0, a - b)
    if not close.any():
        return quotient
    return where(close, _derivative(fn, 0.5 * (a + b)), quotient)


def _pairs(w):
    """(lo, hi, exact-tie mask) of every pair of eigenvalues, shapes (..., n, n)."""
    from ..ops import maximum, minimum

    a, b = w.unsqueeze(-1), w.unsqueeze(-2)
    lam = _host(w)
    return minimum(a, b), maximum(a, b), lam[..., :, None] == lam[..., None, :]


def _dd_exp(w):
    """exp[a, b] = e^hi * expm1(lo - hi) / (lo - hi): no cancellation, no overflow."""
    from ..ops import where

    lo, hi, tie = _pairs(w)
    d = lo - hi
    safe = where(tie, 1.0, d)
    return hi.exp() * where(tie, 1.0, safe.expm1() / safe)


def _dd_log(w):
    """log[a, b] = log1p(t) / t / lo with t = (hi - lo) / lo (a, b > 0)."""
    from ..ops import where

    lo, hi, tie = _pairs(w)
    t = (hi - lo) / lo
    safe = where(tie, 1.0, t)
    return where(tie, 1.0, safe.log1p() / safe) / lo


def _dd_sqrt(w):
    """sqrt[a, b] = 1 / (sqrt(a) + sqrt(b))."""
    a, b = w.unsqueeze(-1), w.unsqueeze(-2)
    return 1.0 / (a.sqrt() + b.sqrt())


def _dd_power(p):
    """power[a, b] = lo^(p-1) expm1(p log1p(t)) / t, t = (hi - lo) / lo (lo > 0); where lo
    is 0: hi^(p-1), and p 0^(p-1) where both are."""
    def divided(w):
        from ..ops import where

        lo, hi, tie = _pairs(w)
        pos = _host(lo) > 0
        lo1 = where(pos, lo, 1.0)
        t = (hi - lo1) / lo1
        safe = where(tie, 1.0, t)
        ratio = where(tie, float(p), (p * safe.log1p()).expm1() / safe)
        stable = lo1 ** (p - 1.0) * ratio
        if pos.all():
            return stable
        hpos = _host(hi) > 0
        hi1 = where(hpos, hi, 1.0)
        at_zero = hi1 ** (p - 1.0) if hpos.any() else hi1 * 0.0
        with np.errstate(divide="ignore"):
            both = float(p * np.float64(0.0) ** (p - 1.0)) if p != 0 else 0.0
        return where(pos, stable, where(hpos, at_zero, both))

    return divided


def _divided_differences(fn, w):
    """The symmetric matrix D (..., n, n) of first divided differences of f at ``w``."""
    if fn.divided is not None:
        D = fn.divided(w)
    else:
        D = _generic_divided(fn, w, _tensor_like(fn.f(w), w))
    return 0.5 * (D + D.mT)


# --- kernels ----------------------------------------------------------------------------


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _sym_np(A):
    return 0.5 * (A + _mT(A))


def _tol(lam):
    scale = np.max(np.abs(lam), axis=-1) if lam.shape[-1] else np.zeros(lam.shape[:-1])
    return 100.0 * max(lam.shape[-1], 1) * float(np.finfo(lam.dtype).eps) * scale


def _domain(fn, lam, check):
    """Check the eigenvalues against ``fn.domain`` (raise MatrixDomainError naming the op
    and the smallest eigenvalue) and clip tiny negative ones to 0 for ``"psd"``."""
    if fn.domain is None or lam.shape[-1] == 0:
        return lam
    smallest = lam[..., 0]  # eigh: ascending
    psd = fn.domain == "psd"
    # psd: eigenvalues down to -100 n eps max|l| are rounding errors of 0 (clipped); pd:
    # an eigenvalue below n eps max|l| cannot be told from 0
    tol = _tol(lam)
    bad = smallest < -tol if psd else smallest <= tol / 100.0
    if check and np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if np.ndim(bad) else ()
        where = f" (matrix at batch index {idx})" if idx else ""
        kind, need = ("semidefinite", ">= 0") if psd else ("definite", "> 0")
        raise MatrixDomainError(
            f"{fn.name}: A must be symmetric positive {kind} (eigenvalues {need}), but its "
            f"smallest eigenvalue is {float(smallest[idx]):.6g}{where}")
    return np.maximum(lam, 0) if psd else lam


def _eigh_np(A, fn, check):
    lam, V = np.linalg.eigh(_sym_np(A))
    return _domain(fn, lam, check), V


def _f_np(fn, lam):
    with no_grad():
        return _tensor_like(fn.f(wrap(lam)), wrap(lam))._data


def _matrix_function_kernel(A, fn):
    lam, V = _eigh_np(A, fn, check=True)
    Y = (V * _f_np(fn, lam)[..., None, :]) @ _mT(V)
    return Y.astype(A.dtype, copy=False)


def _frechet_raw(A, E, fn):
    """L_f(A, E) = V (D ∘ (V^T sym(E) V)) V^T on arrays (the Daleckii-Krein formula)."""
    lam, V = _eigh_np(A, fn, check=False)
    with no_grad():
        D = _divided_differences(fn, wrap(lam))._data
    X = _mT(V) @ _sym_np(E) @ V
    return (V @ (D * X) @ _mT(V)).astype(np.result_type(A.dtype, E.dtype), copy=False)


def _as_tensor(x):
    return x if isinstance(x, Tensor) else wrap(np.asarray(x))


def _frechet_differentiable(A, E, fn):
    """The same derivative, recorded so that it can be differentiated again. For the named
    functions (exp, sqrt, log, powers) through the block-triangular identity
    ``f([[A, E], [0, A]])`` with the general-matrix primitives, whose own rules are Frechet
    derivatives of the same kind: finite to every order, repeated eigenvalues included.
    For a user's ``f``, through eigh and the divided differences (where the eigenvalues
    are distinct)."""
    from .decomp import eigh

    A, E = _as_tensor(A), _as_tensor(E)
    if fn.general is not None:
        try:
            return _block_frechet(0.5 * (A + A.mT), 0.5 * (E + E.mT), fn.general)
        except MatrixDomainError:  # e.g. a singular PSD matrix: no general sqrtm of the block
            pass
    lam, V = eigh(0.5 * (A + A.mT))
    if fn.domain == "psd":
        lam = lam.clamp(min=0.0)
    D = _divided_differences(fn, lam)
    X = V.mT @ (0.5 * (E + E.mT)) @ V
    return V @ (D * X) @ V.mT


def _scipy_kernel(name, what, scipy_fn):
    """A NumPy kernel running ``scipy_fn`` on each matrix of a batch; a complex result
    (no real principal ``what``) or a non-finite one raises MatrixDomainError."""
    def kernel(A):
        n = A.shape[-1]
        flat = A.reshape((-1, n, n))
        out = np.empty(flat.shape, dtype=A.dtype)
        for k, a in enumerate(flat):
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                r = scipy_fn(np.asarray(a, dtype=np.float64))
            at = f" (matrix at batch index {np.unravel_index(k, A.shape[:-2])})" \
                if A.ndim > 2 else ""
            if np.iscomplexobj(r):
                if np.abs(r.imag).max(initial=0.0) > 1e3 * np.finfo(float).eps * max(
                        np.abs(r).max(initial=0.0), 1.0):
                    ev = np.linalg.eigvals(a)
                    neg = ev[(np.abs(ev.imag) <= 1e-12 * max(np.abs(ev).max(), 1.0))
                             & (ev.real <= 0)].real
                    why = (f"eigenvalue(s) {', '.join(f'{v:.6g}' for v in np.sort(neg))} on "
                           "the closed negative real axis" if neg.size else
                           "SciPy returned a complex result")
                    raise MatrixDomainError(
                        f"{name}: A has no real principal {what}{at}: {why} (chainrule "
                        "computes in real arithmetic)")
                r = r.real
            if not np.all(np.isfinite(r)):
                raise MatrixDomainError(f"{name}: A has no principal {what}{at}: SciPy's "
                                        "result is not finite (is A singular?)")
            out[k] = r
        return out.reshape(A.shape)

    return kernel


_sqrtm_kernel = _scipy_kernel("linalg.sqrtm", "square root", scipy.linalg.sqrtm)
_logm_kernel = _scipy_kernel("linalg.logm", "logarithm", scipy.linalg.logm)


def _scale(A, E):
    """Per matrix ``||A|| / ||E||`` (1 where either is 0), (..., 1, 1): L_f(A, E) is linear
    in E, and a direction of the size of A keeps the block matrix well scaled."""
    na = np.sqrt(np.sum(A * A, axis=(-2, -1), keepdims=True))
    ne = np.sqrt(np.sum(E * E, axis=(-2, -1), keepdims=True))
    ok = (na > 0) & (ne > 0) & np.isfinite(ne)
    return np.where(ok, na / np.where(ok, ne, 1.0), 1.0).astype(np.result_type(A, E))


def _block_raw(kernel):
    def frechet(A, E):
        """L_f(A, E): the top-right block of f([[A, sE], [0, A]]), divided by s."""
        n = A.shape[-1]
        batch = np.broadcast_shapes(A.shape[:-2], E.shape[:-2])
        A = np.broadcast_to(A, batch + (n, n))
        E = np.broadcast_to(E, batch + (n, n))
        s = _scale(A, E)
        top = np.concatenate([A, s * E], axis=-1)
        M = np.concatenate([top, np.concatenate([np.zeros_like(A), A], axis=-1)], axis=-2)
        return (kernel(M)[..., :n, n:] / s).astype(np.result_type(A.dtype, E.dtype))

    return frechet


def _block_frechet(A, E, f):
    """``L_f(A, E)``, the top-right block of ``f([[A, sE], [0, A]])`` divided by ``s``, with
    ``f`` a differentiable function of a general matrix (recorded)."""
    from .._creation import zeros_like
    from ..ops import broadcast_to, cat

    A, E = _as_tensor(A), _as_tensor(E)
    n = A.shape[-1]
    batch = np.broadcast_shapes(A.shape[:-2], E.shape[:-2])
    A = broadcast_to(A, batch + (n, n))
    E = broadcast_to(E, batch + (n, n))
    s = _scale(_host(A), _host(E)).astype(_host(A).dtype)
    M = cat([cat([A, E * s], -1), cat([zeros_like(A), A], -1)], -2)
    return f(M)[..., :n, n:] / s


def _block_differentiable(op):
    def frechet(A, E):
        return _block_frechet(A, E, lambda M: apply(op, (M,)))

    return frechet


def _register():
    """Declare the names the rules below use (before the ops)."""
    register("matrix_function_frechet", _frechet_raw,
             lambda A, E, fn: _frechet_differentiable(A, E, fn), batch="leading")
    register("sqrtm_frechet", _block_raw(_sqrtm_kernel),
             lambda A, E: _block_differentiable(SQRTM)(A, E), batch="leading")
    register("logm_frechet", _block_raw(_logm_kernel),
             lambda A, E: _block_differentiable(LOGM)(A, E), batch="leading")


_register()


MATRIX_FUNCTION = defop(
    "linalg_matrix_function", _matrix_function_kernel, ("A",), attrs=("fn",),
    vjp={"A": lambda F, g, A, fn: F.matrix_function_frechet(A, g, fn)},
    jvp={"A": lambda F, t, A, fn: F.matrix_function_frechet(A, t, fn)},
    math={"A": "grad_A = V (D ∘ (V^T sym(grad) V)) V^T, sym(A) = V diag(l) V^T, "
               "D_ij = (f(l_i) - f(l_j)) / (l_i - l_j), D_ij = f'(l_i) where l_i = l_j "
               "(stable closed forms for exp, log, sqrt, power; f' at the midpoint for "
               "close pairs of a generic f)",
          "out": "dY = V (D ∘ (V^T sym(dA) V)) V^T"},
    source="the Daleckii-Krein formula: Daleckii & Krein (1965), Integration and "
           "differentiation of functions of Hermitian operators and applications to the "
           "theory of perturbations, AMS Transl. (2) 47; Bhatia (1997), Matrix Analysis, "
           "thm V.3.3; Higham (2008), Functions of Matrices, thm 3.11 (Frechet derivative "
           "of a function of a normal matrix through divided differences)",
    node_name="LinalgMatrixFunctionBackward0",
)


_BLOCK_SOURCE = (
    "Higham (2008), Functions of Matrices: Theory and Computation, SIAM, thm 3.6 / eq. "
    "3.16: f([[A, E], [0, A]]) = [[f(A), L_f(A, E)], [0, f(A)]]; for f with real Taylor "
    "coefficients the adjoint of L_f(A, .) is L_f(A^T, .) (Higham & Relton (2016), Higher "
    "order Frechet derivatives of matrix functions and the level-2 condition number, sec. "
    "2); forward: Deadman, Higham & Ralha (2013) blocked Schur sqrtm, Al-Mohy & Higham "
    "(2012) inverse scaling and squaring logm (scipy.linalg)")

SQRTM = defop(
    "linalg_sqrtm", _sqrtm_kernel, ("A",),
    vjp={"A": lambda F, g, A: F.sqrtm_frechet(F.mT(A), g)},
    jvp={"A": lambda F, t, A: F.sqrtm_frechet(A, t)},
    math={"A": "grad_A = L_sqrt(A^T, grad) = top-right block of "
               "sqrtm([[A^T, grad], [0, A^T]])",
          "out": "dY = L_sqrt(A, dA) = top-right block of sqrtm([[A, dA], [0, A]])"},
    source=_BLOCK_SOURCE,
    node_name="LinalgSqrtmBackward0",
)

LOGM = defop(
    "linalg_logm", _logm_kernel, ("A",),
    vjp={"A": lambda F, g, A: F.logm_frechet(F.mT(A), g)},
    jvp={"A": lambda F, t, A: F.logm_frechet(A, t)},
    math={"A": "grad_A = L_log(A^T, grad) = top-right block of "
               "logm([[A^T, grad], [0, A^T]])",
          "out": "dY = L_log(A, dA) = top-right block of logm([[A, dA], [0, A]])"},
    source=_BLOCK_SOURCE,
    node_name="LinalgLogmBackward0",
)


# --- public functions -------------------------------------------------------------------


def _sqrt_df(x):
    return 0.5 / x.sqrt()


def _log_df(x):
    return 1.0 / x


def _exp(x):
    return x.exp()


def _sqrt(x):
    return x.sqrt()


def _log(x):
    return x.log()


def _general_exp(M):
    from .matrix_functions import matrix_exp

    return matrix_exp(M)


_SQRT = ScalarFunction("linalg.sqrtm", _sqrt, _sqrt_df, _dd_sqrt, "psd",
                       general=lambda M: apply(SQRTM, (M,)))
_LOG = ScalarFunction("linalg.logm", _log, _log_df, _dd_log, "pd",
                      general=lambda M: apply(LOGM, (M,)))
_EXP = ScalarFunction("linalg.expm_sym", _exp, _exp, _dd_exp, general=_general_exp)


def _symmetric(A, symmetric):
    """Whether to take the symmetric (eigh) path: ``symmetric``, or when None an exact
    symmetry test of every matrix (on the host; elsewhere the general path)."""
    if symmetric is not None:
        return bool(symmetric)
    d = _host(A._data if isinstance(A, Tensor) else A)
    if not isinstance(d, np.ndarray):
        return False
    return bool(np.array_equal(d, np.swapaxes(d, -1, -2)))


@documented(MATRIX_FUNCTION)
def matrix_function(A, f, df=None):
    """``f(A) = V diag(f(l)) V^T`` for a symmetric ``A = V diag(l) V^T``, with a gradient
    that is finite and exact at repeated eigenvalues.

    ``A`` is read as ``sym(A) = (A + A^T) / 2`` (so the result and its gradient are those of
    ``f(sym(A))``; the gradient is symmetric). The derivative is the Daleckii-Krein formula
    ``V (D ∘ (V^T sym(E) V)) V^T`` with ``D_ij = (f(l_i) - f(l_j)) / (l_i - l_j)`` and
    ``D_ij = f'(l_i)`` where eigenvalues coincide: no division by an eigenvalue gap, so
    none of eigh's NaN (or its RuntimeError) at the identity, a projector, or equal blocks.
    Pairs closer than ``eps^(1/3) * max(|l_i|, |l_j|, eps^(1/3) max|l|)`` use ``f'`` at
    their midpoint. The first-order rules compute with NumPy; differentiated again
    (``create_graph=True``) they go through :func:`eigh`, so second derivatives are right
    where the eigenvalues are distinct (at repeated ones eigh's backward raises).

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        float32 or float64; symmetric (its symmetric part is used).
    f : callable
        Elementwise, on chainrule tensors (``chainrule.exp``, ``lambda x: x.tanh() * x``).
    df : callable, optional
        Its derivative, elementwise on tensors; by default computed by chainrule's
        autograd of ``f``.

    Returns
    -------
    Tensor of shape (*, n, n)

    Raises
    ------
    ValueError
        If ``A`` has fewer than 2 dimensions or is not square.
    """
    _check_square("linalg.matrix_function", "A", A)
    if not callable(f) or (df is not None and not callable(df)):
        raise TypeError("linalg.matrix_function: f and df must be callables on tensors")
    return apply(MATRIX_FUNCTION, (_as_input(A),),
                 (ScalarFunction("linalg.matrix_function", f, df),))


@documented(MATRIX_FUNCTION, SQRTM)
def sqrtm(A, *, symmetric=None):
    """Principal square root ``Y`` with ``Y @ Y = A`` (real).

    Symmetric ``A`` (``symmetric=True``, or ``None`` and ``A`` exactly symmetric): through
    :func:`matrix_function` with ``1 / (sqrt(l_i) + sqrt(l_j))`` as divided differences;
    ``A`` must be positive semidefinite (eigenvalues down to ``-100 n eps max|l|`` are
    taken as 0; the gradient is infinite along a null space). The gradient is the
    symmetric one (as for eigh). Otherwise SciPy's Schur method, differentiated through
    the Frechet derivative ``L(A, E)``, the top-right block of ``sqrtm([[A, E], [0, A]])``.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
    symmetric : bool or None, keyword-only

    Returns
    -------
    Tensor of shape (*, n, n)

    Raises
    ------
    MatrixDomainError (a ValueError)
        Symmetric ``A`` with a negative eigenvalue (the message gives the smallest), or a
        general ``A`` without a real principal square root (eigenvalues on the negative
        real axis).
    """
    _check_square("linalg.sqrtm", "A", A)
    A = _as_input(A)
    if _symmetric(A, symmetric):
        return apply(MATRIX_FUNCTION, (A,), (_SQRT,))
    return apply(SQRTM, (A,))


@documented(MATRIX_FUNCTION, LOGM)
def logm(A, *, symmetric=None):
    """Principal logarithm ``Y`` with ``expm(Y) = A`` (real).

    Symmetric ``A`` (``symmetric=True``, or ``None`` and ``A`` exactly symmetric): through
    :func:`matrix_function` with ``log1p(t) / t / l_lo``, ``t = (l_hi - l_lo) / l_lo`` as
    divided differences; ``A`` must be positive definite. Otherwise SciPy's inverse
    scaling and squaring, differentiated through the top-right block of
    ``logm([[A, E], [0, A]])``.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
    symmetric : bool or None, keyword-only

    Returns
    -------
    Tensor of shape (*, n, n)

    Raises
    ------
    MatrixDomainError (a ValueError)
        Symmetric ``A`` with an eigenvalue <= 0 (the message gives the smallest), or a
        general ``A`` without a real principal logarithm.
    """
    _check_square("linalg.logm", "A", A)
    A = _as_input(A)
    if _symmetric(A, symmetric):
        return apply(MATRIX_FUNCTION, (A,), (_LOG,))
    return apply(LOGM, (A,))


@documented(MATRIX_FUNCTION)
def expm_sym(A):
    """``expm(sym(A))`` through the eigendecomposition, with the divided differences
    ``e^hi expm1(lo - hi) / (lo - hi)`` (no cancellation at close eigenvalues).

    Parameters
    ----------
    A : Tensor of shape (*, n, n), symmetric (its symmetric part is used)

    Returns
    -------
    Tensor of shape (*, n, n)
    """
    _check_square("linalg.expm_sym", "A", A)
    return apply(MATRIX_FUNCTION, (_as_input(A),), (_EXP,))


_POWERS = {}


@documented(MATRIX_FUNCTION)
def powm(A, p):
    """``sym(A)^p = V diag(l^p) V^T`` for a real exponent ``p``, with the divided
    differences ``lo^(p-1) expm1(p log1p(t)) / t``, ``t = (hi - lo) / lo``.

    Parameters
    ----------
    A : Tensor of shape (*, n, n)
        Symmetric positive semidefinite for ``p > 0``, positive definite for ``p <= 0``.
    p : float

    Returns
    -------
    Tensor of shape (*, n, n)

    Raises
    ------
    MatrixDomainError (a ValueError)
        When an eigenvalue is outside the domain (the message gives the smallest).
    """
    _check_square("linalg.powm", "A", A)
    p = float(p)
    fn = _POWERS.get(p)
    if fn is None:
        fn = _POWERS[p] = ScalarFunction(
            "linalg.powm", lambda x: x ** p, lambda x: p * x ** (p - 1.0), _dd_power(p),
            "psd" if p > 0 else "pd",
            general=lambda M: _general_exp(p * apply(LOGM, (M,))))  # M^p = exp(p log M)
    return apply(MATRIX_FUNCTION, (_as_input(A),), (fn,))
