"""The matrix square ``Y = X @ X`` as a custom autograd Function, gradchecked.

``backward`` does not receive the Jacobian ``dY/dX`` (an (n*n) x (n*n) array); it receives
the cotangent ``G = dL/dY`` (same shape as ``Y``) and returns the vector-Jacobian product
``dL/dX``. From ``dY = dX X + X dX``::

    dL = <G, dX X> + <G, X dX> = <G X^T, dX> + <X^T G, dX>   so   dL/dX = G X^T + X^T G

Run it with ``python examples/custom_matmul_square.py``.
"""

import sys

import chainrule as cr


class MatSquare(cr.autograd.Function):
    """``X @ X`` for a square matrix ``X``."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, G):
        # G is the cotangent dL/dY, shaped like Y = X @ X, not the Jacobian dY/dX: backward
        # computes the vector-Jacobian product G^T J without ever forming J.
        (X,) = ctx.saved_tensors
        return G @ X.t() + X.t() @ G


def main():
    """Compare ``MatSquare`` with the built-in ``X @ X`` and gradcheck it.

    Returns
    -------
    bool
        True when the gradients agree and gradcheck passes (gradcheck raises otherwise).
    """
    cr.manual_seed(2)
    X = cr.randn(3, 3, dtype=cr.float64, requires_grad=True)

    MatSquare.apply(X).sum().backward()
    custom = X.grad.numpy().copy()
    X.grad = None
    (X @ X).sum().backward()
    builtin = X.grad.numpy()
    print("dL/dX for L = sum(X @ X), i.e. G = ones:")
    print(custom.round(4))
    print(f"same as the built-in matmul's gradient: {bool(abs(custom - builtin).max() < 1e-12)}")

    ok = cr.autograd.gradcheck(MatSquare.apply, (X,))
    print(f"gradcheck(MatSquare.apply, (X,)): {ok}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
