"""matrix_norm, linalg.norm and cond: compositions of svdvals, abs/sum/amax and inv."""

from __future__ import annotations

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import gradcheck

try:
    import torch
except ImportError:  # PyTorch is optional: the comparisons with it are skipped
    torch = None

RNG = np.random.default_rng(11)
ORDS = ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf]


def T(a, grad=True):
    return cr.tensor(np.array(a, dtype=float), requires_grad=grad)


@pytest.mark.parametrize("ord", ORDS, ids=str)
def test_matrix_norm_values_match_numpy_and_gradients_pass_gradcheck(ord):
    A = RNG.standard_normal((2, 4, 3))
    out = cr.linalg.matrix_norm(T(A, False), ord)
    expected = [np.linalg.norm(a, ord) for a in A]
    assert np.allclose(out.numpy(), expected)
    assert gradcheck(lambda a: cr.linalg.matrix_norm(a, ord), (T(A),))
    if torch is not None:  # and the gradient of the batch's sum is torch's
        a = T(A)
        cr.linalg.matrix_norm(a, ord).sum().backward()
        t = torch.tensor(A, requires_grad=True)
        torch.linalg.matrix_norm(t, ord).sum().backward()
        assert np.allclose(a.grad.numpy(), t.grad.numpy())


def test_matrix_norm_dim_and_keepdim():
    A = RNG.standard_normal((3, 2, 4))
    out = cr.linalg.matrix_norm(T(A, False), 1, dim=(0, 2), keepdim=True)
    assert out.shape == (1, 2, 1)
    assert np.allclose(out.numpy().ravel(), [np.linalg.norm(A[:, i, :], 1) for i in range(2)])


@pytest.mark.parametrize("p", [None, 2, -2, 1, "fro", math.inf])
def test_cond_matches_numpy_and_passes_gradcheck(p):
    A = RNG.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    assert np.allclose(cr.linalg.cond(T(A, False), p).numpy(), np.linalg.cond(A, p))
    assert gradcheck(lambda a: cr.linalg.cond(a, p), (T(A),))
    if torch is None:
        return
    a = T(A)
    cr.linalg.cond(a, p).sum().backward()
    t = torch.tensor(A, requires_grad=True)
    if p in (None, 2, -2):
        torch.linalg.cond(t, p).sum().backward()
    else:  # torch 2.13's cond backward fails for these p (an in-place error inside torch),
        # so compare with its definition, evaluated by torch
        (torch.linalg.matrix_norm(t, p) * torch.linalg.matrix_norm(torch.linalg.inv(t), p)
         ).sum().backward()
    assert np.allclose(a.grad.numpy(), t.grad.numpy())


def test_linalg_norm_dispatches_like_torch():
    x, A = RNG.standard_normal(5), RNG.standard_normal((3, 4))
    assert np.isclose(cr.linalg.norm(T(x, False)).item(), np.linalg.norm(x))
    assert np.isclose(cr.linalg.norm(T(A, False)).item(), np.linalg.norm(A))
    assert np.isclose(cr.linalg.norm(T(A, False), "nuc").item(), np.linalg.norm(A, "nuc"))
    assert np.allclose(cr.linalg.norm(T(A, False), 3, dim=1).numpy(),
                       np.linalg.norm(A, 3, axis=1))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="at least 2 dims"):
        cr.linalg.matrix_norm(T([1.0, 2.0]))
    with pytest.raises(ValueError, match="unknown ord"):
        cr.linalg.matrix_norm(T(np.eye(2)), 3)
    with pytest.raises(ValueError, match="at least 2 dims"):
        cr.linalg.cond(T([1.0, 2.0]))

