"""What a gradcheck failure looks like: ``X @ X`` with a deliberately wrong backward.

``2 * X * grad`` is the derivative of the *elementwise* square ``X * X``, a common slip when
deriving the matrix square by analogy with ``d(x^2)/dx = 2x``. The correct vector-Jacobian
product is ``G @ X.T + X.T @ G`` (see ``custom_matmul_square.py``). ``gradcheck`` compares
the Jacobian built from this backward with central finite differences and reports the
mismatch; this script catches the error, prints it and exits 0 (the failure is the point).

Run it with ``python examples/wrong_backward.py``.
"""

import sys

import chainrule as cr


class WrongMatSquare(cr.autograd.Function):
    """``X @ X`` whose backward is (wrongly) that of the elementwise ``X * X``."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, grad):
        (X,) = ctx.saved_tensors
        return 2 * X * grad  # WRONG: should be grad @ X.t() + X.t() @ grad


def main():
    """Gradcheck ``WrongMatSquare`` and print the failure a user would see.

    Returns
    -------
    chainrule.autograd.GradcheckError or None
        The error gradcheck raised, or None if (unexpectedly) it passed.
    """
    cr.manual_seed(3)
    X = cr.randn(2, 2, dtype=cr.float64, requires_grad=True)
    try:
        cr.autograd.gradcheck(WrongMatSquare.apply, (X,))
    except cr.autograd.GradcheckError as err:
        print(f"gradcheck caught the wrong backward ({type(err).__name__}):")
        print(err)
        return err
    print("gradcheck unexpectedly passed")
    return None


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
