"""Custom Functions shared by the tests (correct ones; tests derive broken variants)."""

from __future__ import annotations

import chainrule as cr
from chainrule.autograd import Function


class MatVec(Function):
    """``A @ x`` with its hand-written VJP (and JVP, for forward mode)."""

    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        return cr.outer(g, x), A.t() @ g  # grad_A = g x^T, grad_x = A^T g

    @staticmethod
    def jvp(ctx, dA, dx):  # a tangent is None for an input without one
        A, x = ctx.saved_tensors
        return (0 if dA is None else dA @ x) + (0 if dx is None else A @ dx)


class Cube(Function):
    """``x ** 3`` elementwise; no jvp (tests add one where they need it)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class Exp(Function):
    """PyTorch's tutorial Function: ``exp(x)``, saving its output and using it in backward."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y
