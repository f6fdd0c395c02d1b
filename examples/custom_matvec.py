"""A matrix-vector product ``y = A @ x`` as a custom autograd Function, gradchecked.

``backward`` receives the cotangent ``g = dL/dy`` (shape ``(m,)``) and returns one gradient
per input of ``forward``:

- ``dL/dA = outer(g, x)``  (shape ``(m, n)``, since ``y_i = sum_j A_ij x_j``);
- ``dL/dx = A^T g``        (shape ``(n,)``).

Run it with ``python examples/custom_matvec.py``.
"""

import sys

import chainrule as cr


class MatVec(cr.autograd.Function):
    """``A @ x`` for a matrix ``A`` (m, n) and a vector ``x`` (n,)."""

    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, grad):
        A, x = ctx.saved_tensors
        return cr.outer(grad, x), A.t() @ grad


def main():
    """Check ``MatVec`` against ``A @ x`` and gradcheck it.

    Returns
    -------
    bool
        True when the forward matches and gradcheck passes (gradcheck raises otherwise).
    """
    cr.manual_seed(1)
    A = cr.randn(4, 3, dtype=cr.float64, requires_grad=True)
    x = cr.randn(3, dtype=cr.float64, requires_grad=True)

    y = MatVec.apply(A, x)
    print(f"MatVec.apply(A, x) = {y.detach().numpy().round(4)}   (grad_fn: {y.grad_fn.name()})")
    print(f"A @ x              = {(A @ x).detach().numpy().round(4)}")

    y.sum().backward()  # cotangent g = ones(4): A.grad = outer(1, x), x.grad = column sums
    same = bool((A.grad.numpy() == x.detach().numpy()).all())
    print(f"after y.sum().backward(): every row of A.grad equals x: {same}")
    print(f"                          x.grad = A^T 1 = {x.grad.numpy().round(4)}")

    ok = cr.autograd.gradcheck(MatVec.apply, (A, x))
    print(f"gradcheck(MatVec.apply, (A, x)): {ok}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
