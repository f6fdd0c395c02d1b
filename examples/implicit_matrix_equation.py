"""Differentiating the solution of a Riccati-type matrix equation solved by SciPy.

For parameters ``A`` (n, n) and ``Q`` (n, n), ``X`` (n, n) solves

    F(X, A, Q) = A X + X A^T + X X - Q = 0,

found here by ``scipy.optimize.root`` (MINPACK's hybrid method on the n^2 entries), which
chainrule cannot see into. The implicit function theorem still gives the gradients: for
the cotangent ``G`` of ``X`` (here ``G = dL/dX`` of ``L = sum(W * X)``),

    solve (dF/dX)^T Lam = G,   then   dL/dA = -(dF/dA)^T Lam,   dL/dQ = -(dF/dQ)^T Lam = Lam,

where every product with a transposed Jacobian is a VJP of ``F`` (one backward pass of the
residual), and no iteration of the solver is differentiated (Blondel et al. 2022,
"Efficient and Modular Implicit Differentiation"; Griewank & Walther, "Evaluating
Derivatives", ch. 15). ``chainrule.autograd.implicit.custom_root`` wraps the SciPy solver
so that its output is attached to the graph of ``A`` and ``Q``; ``gradcheck`` then compares
these gradients with central differences, re-solving with SciPy at every perturbed ``A``
and ``Q``.

Run it with ``python examples/implicit_matrix_equation.py``.
"""

import sys

import numpy as np
import scipy.linalg
import scipy.optimize

import chainrule as cr
from chainrule.autograd.implicit import custom_root

N = 3


def residual(X, A, Q):
    """``F(X, A, Q) = A X + X A^T + X X - Q``, shape (n, n), in chainrule ops."""
    return A @ X + X @ A.t() + X @ X - Q


def scipy_solve(A, Q):
    """Solve ``A X + X A^T + X X = Q`` with ``scipy.optimize.root``, to ~1e-14.

    Starts from the Lyapunov solution (``A X + X A^T = Q``). Raises RuntimeError when SciPy
    reports failure.
    """
    A, Q = np.asarray(A, dtype=float), np.asarray(Q, dtype=float)
    n = A.shape[0]

    def fun(x):
        X = x.reshape(n, n)
        return (A @ X + X @ A.T + X @ X - Q).ravel()

    x0 = scipy.linalg.solve_continuous_lyapunov(A, Q)
    sol = scipy.optimize.root(fun, x0.ravel(), method="hybr", tol=1e-14)
    if not sol.success:
        raise RuntimeError(f"scipy.optimize.root failed: {sol.message}")
    return sol.x.reshape(n, n)


# The same SciPy solver, differentiable through the implicit function theorem, with the
# transposed Jacobian (n^2 x n^2) built densely or applied matrix-free inside GMRES.
solve_dense = custom_root(residual, solve="dense")(scipy_solve)
solve_gmres = custom_root(residual, solve="gmres", tol=1e-12)(scipy_solve)


def main():
    """Solve, differentiate, compare dense with GMRES, and gradcheck against SciPy re-solves.

    Returns
    -------
    bool
        True when the residual is tiny, dense and GMRES gradients agree and gradcheck passes
        for both (gradcheck raises a GradcheckError otherwise).
    """
    rng = np.random.default_rng(0)
    A = cr.tensor(2.0 * np.eye(N) + 0.3 * rng.standard_normal((N, N)), requires_grad=True)
    S = rng.standard_normal((N, N))
    Q = cr.tensor(S @ S.T + np.eye(N), requires_grad=True)
    W = cr.tensor(rng.standard_normal((N, N)))

    X = solve_dense(A, Q)
    res = np.abs(np.asarray(residual(X, A, Q).detach())).max()
    print(f"X solving A X + X A^T + X X = Q (grad_fn: {X.grad_fn.name()}):")
    print(np.asarray(X.detach()).round(6))
    print(f"max |A X + X A^T + X X - Q| = {res:.2e}")

    (X * W).sum().backward()
    gA, gQ = np.asarray(A.grad), np.asarray(Q.grad)
    print("dL/dA for L = sum(W * X):")
    print(gA.round(6))
    print("dL/dQ:")
    print(gQ.round(6))

    A.grad = Q.grad = None
    (solve_gmres(A, Q) * W).sum().backward()
    diff = max(np.abs(np.asarray(A.grad) - gA).max(), np.abs(np.asarray(Q.grad) - gQ).max())
    print(f"max |dense - gmres| over both gradients = {diff:.2e}")

    ok_dense = cr.autograd.gradcheck(solve_dense, (A, Q))
    ok_gmres = cr.autograd.gradcheck(solve_gmres, (A, Q))
    print(f"gradcheck(solve_dense, (A, Q)): {ok_dense}")
    print(f"gradcheck(solve_gmres, (A, Q)): {ok_gmres}")
    return bool(res < 1e-10 and diff < 1e-8 and ok_dense and ok_gmres)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
