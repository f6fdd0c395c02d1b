"""Custom autograd Functions to try the validator on: input for ``python -m chainrule check``.

Run::

    python -m chainrule check examples/check_me.py                 # every Function here
    python -m chainrule check examples/check_me.py:MatVec --double # one, with gradgradcheck
    python -m chainrule check examples/check_me.py:MatSquare --shapes 4x4

Two of the Functions are right and one is wrong on purpose, so the command prints a table
with a FAIL row and exits 1 (as it would in CI):

- ``MatVec``: ``y = A @ x``, with ``backward`` (reverse mode) and ``jvp`` (forward mode), so
  the adjoint identity ``<u, J v> = <u^T J, v>`` between them is checked too;
- ``MatSquare``: ``Y = X @ X``, backward ``G X^T + X^T G``;
- ``WrongMatSquare``: ``Y = X @ X`` with the backward of the *elementwise* square,
  ``2 * X * G``, a common slip.

Each has a static ``example_inputs()`` returning the tuple of arguments of ``apply``; the
``check`` command calls it (after seeding with ``--seed``) unless ``--shapes`` is given.
The same checks from Python: ``chainrule.autograd.validate.validate(MatVec, A, x)``.
"""

import chainrule as cr


class MatVec(cr.autograd.Function):
    """``A @ x`` for a matrix ``A`` (m, n) and a vector ``x`` (n,)."""

    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, grad):
        # grad: the cotangent of y, shape (m,). y_i = sum_j A_ij x_j, so
        # dL/dA_ij = grad_i x_j and dL/dx_j = sum_i A_ij grad_i.
        A, x = ctx.saved_tensors
        return cr.outer(grad, x), A.t() @ grad

    @staticmethod
    def jvp(ctx, dA, dx):
        # Forward mode: the tangent of y for tangents dA, dx (None when an input has none).
        A, x = ctx.saved_tensors
        out = 0
        if dA is not None:
            out = out + dA @ x
        if dx is not None:
            out = out + A @ dx
        return out

    @staticmethod
    def example_inputs():
        return cr.randn(2, 3, dtype=cr.float64), cr.randn(3, dtype=cr.float64)


class MatSquare(cr.autograd.Function):
    """``X @ X`` for a square matrix ``X``."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, G):
        # dY = dX X + X dX, so <G, dY> = <G X^T, dX> + <X^T G, dX>.
        (X,) = ctx.saved_tensors
        return G @ X.t() + X.t() @ G

    @staticmethod
    def example_inputs():
        return (cr.randn(3, 3, dtype=cr.float64),)


class WrongMatSquare(cr.autograd.Function):
    """``X @ X`` whose backward is (wrongly) that of the elementwise ``X * X``."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, G):
        (X,) = ctx.saved_tensors
        return 2 * X * G  # WRONG: should be G @ X.t() + X.t() @ G

    @staticmethod
    def example_inputs():
        return (cr.randn(2, 2, dtype=cr.float64),)
