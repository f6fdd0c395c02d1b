"""Differentiating through solvers (implicit function theorem).

A solver returns ``x*`` with ``F(x*, params) = 0``. Differentiating ``F(x*(p), p) = 0``
with respect to ``p`` gives ``dF/dx dx*/dp + dF/dp = 0``, so

    dx*/dp = -(dF/dx)^{-1} dF/dp,

and for a cotangent ``g`` of ``x*`` the vector-Jacobian product is

    g^T dx*/dp = -lam^T dF/dp,   where   (dF/dx)^T lam = g.

Both products with ``dF/dx`` and ``dF/dp`` are VJPs of ``F`` at ``(x*, params)``
(``autograd.grad`` of the residual with ``grad_outputs``): one linear solve with the
transposed Jacobian, then one VJP. The solver's iterations are never recorded or
differentiated, so any solver works (Newton, ``scipy.optimize.root``, a fixed-point loop)
and memory does not grow with the number of iterations.

References: the implicit function theorem, Griewank & Walther, "Evaluating Derivatives"
(2nd ed., SIAM 2008), ch. 15; Blondel et al., "Efficient and Modular Implicit
Differentiation", NeurIPS 2022, sec. 2 (jaxopt's ``custom_root``).

>>> import chainrule as cr
>>> from chainrule.autograd.implicit import root
>>> y = cr.tensor([2.0], requires_grad=True)
>>> x = root(lambda x, y: x * x - y, [2.0 ** 0.5], y)   # x* = sqrt(y)
>>> x.backward(cr.tensor([1.0]))
>>> round(float(y.grad[0]), 6)                            # 1 / (2 sqrt(2))
0.353553
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse.linalg as spla

from .. import _state
from .._tensor import Tensor, wrap
from ..backend import backend_of
from .function import Function

__all__ = ["root", "custom_root", "fixed_point"]

_SOLVES = ("dense", "gmres", "cg")


def _residual(F, x, params):
    """``F(x, *params)``, checked to be a Tensor of x's shape."""
    r = F(x, *params)
    if not isinstance(r, Tensor):
        raise TypeError(f"F(x, *params) returned a {type(r).__name__}; it must return a Tensor "
                        "built from chainrule ops (so that it can be differentiated)")
    if r.shape != x.shape:
        raise ValueError(
            f"F(x, *params) returned a residual of shape {tuple(r.shape)} for x of shape "
            f"{tuple(x.shape)}: the residual must have x's shape (one equation per unknown), "
            "so that dF/dx is square"
        )
    return r


class ImplicitRoot(Function):
    """Identity on ``x_star`` whose backward applies the implicit function theorem."""

    @staticmethod
    def forward(ctx, x, *params, F, solve, tol, maxiter, residual_tol):
        x = wrap(np.array(x._data))  # a copy: changes to the user's array do not reach it
        r = _residual(F, x, params)
        worst = float(np.max(np.abs(r._data))) if r._data.size else 0.0
        if residual_tol is not None and not worst <= residual_tol:
            raise ValueError(
                f"x_star is not a root: max |F(x_star, *params)| = {worst:.3g} exceeds "
                f"residual_tol={residual_tol:g} (residual shape {tuple(r.shape)}). The solver "
                "has probably not converged; the implicit gradient holds only at a root. Solve "
                "more tightly, or pass residual_tol=None to skip this check."
            )
        ctx.save_for_backward(x, *(p if isinstance(p, Tensor) else None for p in params))
        ctx.others = params
        ctx.F, ctx.solve, ctx.tol, ctx.maxiter = F, solve, tol, maxiter
        ctx.svd = None  # the dense Jacobian's SVD, kept for later backward calls
        return x

    @staticmethod
    def backward(ctx, g):
        from ._grad import grad

        x, *saved = ctx.saved_tensors
        needs = ctx.needs_input_grad[1:]
        params = [s if s is not None else o for s, o in zip(saved, ctx.others)]
        params = [p.detach().requires_grad_(True) if need else p
                  for p, need in zip(params, needs)]
        xd = x.detach().requires_grad_(True)
        with _state.enable_grad():
            r = _residual(ctx.F, xd, params)
        if not r._requires_grad:  # F depends on neither x nor a param needing a gradient
            r = None

        def vjp_x(v):  # (dF/dx)^T v, on flat float64 arrays
            if r is None:
                return np.zeros(x._data.size)
            (gx,) = grad(r, [xd], grad_outputs=v.reshape(x.shape).astype(x.dtype),
                         retain_graph=True, allow_unused=True)
            return np.zeros(x._data.size) if gx is None else gx._data.astype(float).ravel()

        lam = _solve_transposed(ctx, vjp_x, np.asarray(g._data, dtype=float).ravel(), x)
        wanted = [p for p, need in zip(params, needs) if need]
        if r is None or not wanted:
            return (None,) * (1 + len(params))
        grads = iter(grad(r, wanted, grad_outputs=(-lam).reshape(x.shape).astype(r.dtype),
                          allow_unused=True))
        return (None, *(next(grads) if need else None for need in needs))


def _solve_transposed(ctx, matvec, b, x):
    """Solve ``(dF/dx)^T lam = b`` (flat arrays of size ``x.size``) with ``ctx.solve``."""
    n, shape = b.size, tuple(x.shape)
    if not b.any():
        return np.zeros(n)
    if callable(ctx.solve):
        lam = np.asarray(ctx.solve(matvec, b), dtype=float).reshape(n)
    elif ctx.solve == "dense":
        if ctx.svd is None:
            # Row i of J = dF/dx is e_i^T J, one VJP; the SVD decides singularity and solves.
            J = np.stack([matvec(e) for e in np.eye(n)])
            if not np.isfinite(J).all():
                raise RuntimeError(f"implicit differentiation: the Jacobian dF/dx of the "
                                   f"residual of shape {shape} is not finite at x_star")
            svd = np.linalg.svd(J)
            s = svd[1]
            if not s[-1] > s[0] * n * np.finfo(x.dtype).eps:
                cond = s[0] / s[-1] if s[-1] > 0 else np.inf
                raise RuntimeError(
                    f"implicit differentiation: the Jacobian dF/dx of the residual of shape "
                    f"{shape} ({n} x {n}) is singular at x_star (condition number {cond:.3g}, "
                    f"largest singular value {s[0]:.3g}, smallest {s[-1]:.3g}), so x_star is "
                    "not an isolated root and does not depend smoothly on the params"
                )
            ctx.svd = svd
        U, s, Vt = ctx.svd  # J = U diag(s) Vt, so J^T lam = b gives lam = U diag(1/s) Vt b
        lam = U @ ((Vt @ b) / s)
    else:
        op = spla.LinearOperator((n, n), matvec=matvec, dtype=float)
        method = spla.gmres if ctx.solve == "gmres" else spla.cg
        lam, info = method(op, b, rtol=ctx.tol, atol=0.0, maxiter=ctx.maxiter)
        rel = np.linalg.norm(matvec(lam) - b) / np.linalg.norm(b)
        if info != 0 or not rel <= 10 * ctx.tol + 1e-12:
            hint = (" cg needs a symmetric positive definite Jacobian; try solve='gmres'."
                    if ctx.solve == "cg" else "")
            raise RuntimeError(
                f"implicit differentiation: {ctx.solve} did not converge on "
                f"(dF/dx)^T lam = g for the residual of shape {shape} ({n} unknowns): "
                f"relative residual {rel:.3g} > tol={ctx.tol:g} (scipy info={info}, "
                f"maxiter={ctx.maxiter}). The Jacobian may be singular or ill-conditioned; "
                f"raise maxiter or tol, or use solve='dense' for small problems.{hint}"
            )
    if not np.isfinite(lam).all():
        raise RuntimeError(f"implicit differentiation: solving (dF/dx)^T lam = g for the "
                           f"residual of shape {shape} gave non-finite values; the Jacobian "
                           "is singular or F is not finite at x_star")
    return lam


def root(F, x_star, *params, solve="dense", tol=1e-10, maxiter=None, residual_tol=1e-6):
    """Attach a root ``x_star`` of ``F(x, *params) = 0`` to the graph of ``params``.

    The value returned equals ``x_star``; its backward gives each param that requires grad
    the gradient of ``x*(params)`` from the implicit function theorem (Griewank & Walther,
    "Evaluating Derivatives", ch. 15; Blondel et al. 2022, sec. 2): for the cotangent ``g``
    of the output,

        solve (dF/dx)^T lam = g,     then     grad_param = -(dF/dparam)^T lam,

    with both products computed as VJPs of ``F`` at ``(x_star, params)``. How ``x_star``
    was found does not matter and is not differentiated.

    Parameters
    ----------
    F : callable
        ``F(x, *params) -> Tensor`` of ``x``'s shape, built from chainrule ops: the
        residual. Several unknowns must be stacked into one tensor ``x``.
    x_star : Tensor or array_like, shape ``S``
        A root (from any solver). It is treated as a constant: its own history, if any,
        is ignored. Non-float data is converted to float64.
    *params : Tensor or any value
        Passed to ``F`` unchanged. Tensors with ``requires_grad=True`` receive gradients;
        other tensors and non-tensors receive none.
    solve : {"dense", "gmres", "cg"} or callable
        How to solve with the transposed Jacobian ``(dF/dx)^T`` (``n = x_star.size``):

        - ``"dense"``: build ``dF/dx`` from ``n`` VJPs and solve through its SVD (for small
          ``n``; the SVD is reused by later backward calls on the same output);
        - ``"gmres"``: ``scipy.sparse.linalg.gmres`` on a ``LinearOperator`` whose matvec
          is one VJP of ``F`` (for large ``n``; ``maxiter`` counts restart cycles);
        - ``"cg"``: ``scipy.sparse.linalg.cg``, likewise; only valid when ``dF/dx`` is
          symmetric positive definite (e.g. ``F`` is the gradient of a strictly convex
          function of ``x``);
        - a callable ``solve(matvec, b) -> lam`` on flat float64 arrays of size ``n``,
          where ``matvec(v) = (dF/dx)^T v``.
    tol : float
        Relative residual tolerance of ``gmres``/``cg`` (ignored by ``"dense"``).
    maxiter : int, optional
        Iteration limit of ``gmres``/``cg`` (SciPy's default when None).
    residual_tol : float or None
        ``max |F(x_star, *params)|`` above this raises (the gradient formula holds only at
        a root); None skips the check.

    Returns
    -------
    Tensor, shape ``S``
        A copy of ``x_star``, with ``grad_fn`` ``ImplicitRootBackward`` when a param
        requires grad and grad mode is on.

    Raises
    ------
    TypeError
        ``F`` does not return a Tensor.
    NotImplementedError
        ``x_star`` or a param lives on another backend than NumPy (a GPU, Dask): the
        backward's solves run on NumPy and SciPy.
    ValueError
        The residual's shape is not ``S``; ``x_star`` is not a root (``residual_tol``);
        ``solve`` is unknown.
    RuntimeError
        During backward: ``dF/dx`` is singular (dense: smallest singular value at most
        ``n * eps`` times the largest), or ``gmres``/``cg`` did not reach ``tol``; the
        message names the residual's shape and the condition.
    """
    if not callable(solve) and solve not in _SOLVES:
        raise ValueError(f"solve must be one of {_SOLVES} or a callable solve(matvec, b), "
                         f"got {solve!r}")
    data = x_star._data if isinstance(x_star, Tensor) else np.asarray(x_star)
    for d in [data] + [p._data for p in params if isinstance(p, Tensor)]:
        if not isinstance(d, (np.ndarray, np.generic)):
            raise NotImplementedError(
                f"root: implicit differentiation solves with NumPy and SciPy only, so it "
                f"cannot run on the {backend_of(d).name} backend; move x_star and params to "
                "the CPU (.cpu()) and the result back")
    if data.dtype.kind != "f":
        data = data.astype(np.float64)
    options = dict(solve=solve, tol=tol, maxiter=maxiter, residual_tol=residual_tol)
    return ImplicitRoot.apply(wrap(data), *params, F=F, **options)


def custom_root(F, solve="dense", tol=1e-10, maxiter=None, residual_tol=1e-6):
    """Decorator: make ``solver(*params) -> x_star`` differentiable through :func:`root`.

    As jaxopt's ``custom_root`` (Blondel et al. 2022): the solver runs on detached params
    (nothing it does is recorded, whether it uses chainrule ops, NumPy or SciPy) and its
    result is attached to the graph of ``params`` by the implicit function theorem.

    Parameters
    ----------
    F : callable
        ``F(x, *params) -> Tensor`` of ``x``'s shape, zero at the solver's output.
    solve, tol, maxiter, residual_tol
        As in :func:`root`.

    Returns
    -------
    callable
        A decorator; the decorated ``solver(*params)`` returns ``root(F, solver(...),
        *params, ...)``.

    Examples
    --------
    >>> import numpy as np, chainrule as cr
    >>> @custom_root(lambda x, y: x * x * x - y)
    ... def cube_root(y):
    ...     return np.cbrt(np.asarray(y))
    >>> y = cr.tensor([8.0], requires_grad=True)
    >>> cube_root(y).sum().backward()
    >>> float(y.grad[0])   # 1 / (3 x^2) at x = 2
    0.08333333333333333
    """

    def decorator(solver):
        @functools.wraps(solver)
        def solved(*params):
            x_star = solver(*(p.detach() if isinstance(p, Tensor) else p for p in params))
            return root(F, x_star, *params, solve=solve, tol=tol, maxiter=maxiter,
                        residual_tol=residual_tol)

        return solved

    return decorator


def fixed_point(T, x_star, *params, solve="dense", tol=1e-10, maxiter=None,
                residual_tol=1e-6):
    """Attach a fixed point ``x_star = T(x_star, *params)`` to the graph of ``params``.

    :func:`root` with the residual ``F(x, *params) = x - T(x, *params)``, so
    ``dF/dx = I - dT/dx``: ``lam`` solves ``(I - dT/dx)^T lam = g`` and
    ``grad_param = (dT/dparam)^T lam`` (Blondel et al. 2022, sec. 2). The sign is chosen
    so that ``solve="cg"`` applies when ``dT/dx`` is symmetric with eigenvalues below 1
    (e.g. a gradient step ``T(x) = x - eta * grad f(x)`` on a strictly convex ``f``). The
    Jacobian is singular when ``dT/dx`` has an eigenvalue 1.

    Parameters
    ----------
    T : callable
        ``T(x, *params) -> Tensor`` of ``x``'s shape (ValueError otherwise).
    x_star, *params, solve, tol, maxiter, residual_tol
        As in :func:`root`; ``residual_tol`` bounds ``max |x_star - T(x_star, *params)|``.

    Returns
    -------
    Tensor
        A copy of ``x_star`` attached to the graph (see :func:`root`).
    """

    def F(x, *p):
        t = T(x, *p)
        if not isinstance(t, Tensor) or t.shape != x.shape:
            got = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"fixed_point: T(x, *params) returned {got} for x of shape "
                             f"{tuple(x.shape)}; T must return a Tensor of x's shape")
        return x - t

    return root(F, x_star, *params, solve=solve, tol=tol, maxiter=maxiter,
                residual_tol=residual_tol)
