"""Regressions found by porting tutorial programs (yunjey/pytorch-tutorial, pytorch/examples,
pytorch/tutorials) to chainrule: each checks a value derived without torch, and agrees
with torch when it is installed."""

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


# --- grad_fn._raw_saved_<name>.register_hooks (notes/autograd.rst, "Hooks for saved tensors")

def _raw_saved_pow(lib):
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    y = x.pow(2)
    y.grad_fn._raw_saved_self.register_hooks(lambda t: t * 1, lambda t: t * 10)
    y.sum().backward()
    return x.grad.detach().numpy()


def test_raw_saved_register_hooks_unpack_feeds_backward():
    # d/dx sum(x^2) = 2 x, with the saved x unpacked as 10 x: 20 x
    g = _raw_saved_pow(cr)
    np.testing.assert_allclose(g, 20 * np.array([0.5, -1.0, 2.0]))
    if torch is not None:
        np.testing.assert_allclose(g, _raw_saved_pow(torch))


def test_raw_saved_result_and_errors():
    x = cr.tensor([0.1, 0.2], dtype=cr.float64, requires_grad=True)
    y = x.exp()
    seen = []
    y.grad_fn._raw_saved_result.register_hooks(lambda t: (seen.append(t.grad_fn), t)[1],
                                               lambda t: t * 3)
    assert seen == [None]  # the pack hook gets a tensor without history, as PyTorch's
    with pytest.raises(RuntimeError, match="already been set"):
        y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp([0.1, 0.2]))
    with pytest.raises(RuntimeError, match="freed"):
        y.grad_fn._raw_saved_result.register_hooks(lambda t: t, lambda t: t)
    z = x.sin()
    with pytest.raises(TypeError):
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t, 3)
    with pytest.raises(RuntimeError, match="in place"):
        z.grad_fn._raw_saved_self.register_hooks(lambda t: t.mul_(1), lambda t: t)
