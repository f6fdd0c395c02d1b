"""Regressions found by the random-program differential fuzzer (chainrule vs PyTorch).

Each expected value is derived without torch (by hand or by central finite differences);
where torch imports, the same program is also run through it and compared.
"""

import warnings

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def _central_fd(f, x, h=1e-6):
    """Central finite differences of a scalar function of one array."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[idx] += h
        b[idx] -= h
        g[idx] = (f(a) - f(b)) / (2 * h)
    return g


# --- cat/stack of expanded (broadcast) inputs: NumPy kept the inputs' odd layout, so the
# result was not contiguous and .view(-1) of it raised where PyTorch's works -------------

def _stack_view_program(mod, x, w):
    e = x.expand(3, 2)  # (1, 2) -> (3, 2), stride 0 along dim 0
    s = mod.stack([e, 2 * e], 1)  # (3, 2, 2)
    c = mod.cat([e, e], 1)  # (3, 4)
    return (s.view(-1) * w[:12]).sum() + (c.view(-1) * w[12:]).sum(), s, c


def test_stack_and_cat_of_expanded_inputs_are_contiguous_and_viewable():
    w = np.arange(24, dtype=np.float64) / 7.0
    x0 = np.array([[0.5, -1.25]])
    x = cr.tensor(x0, requires_grad=True)
    loss, s, c = _stack_view_program(cr, x, cr.tensor(w))
    assert s.is_contiguous() and c.is_contiguous()
    assert s.stride() == (4, 2, 1) and c.stride() == (4, 1)
    loss.backward()
    # by hand: s[i, 0, j] = x_j, s[i, 1, j] = 2 x_j; c[i, j] = c[i, j + 2] = x_j
    ws, wc = w[:12].reshape(3, 2, 2), w[12:].reshape(3, 4)
    expected = (ws[:, 0, :] + 2 * ws[:, 1, :]).sum(0) + (wc[:, :2] + wc[:, 2:]).sum(0)
    np.testing.assert_allclose(x.grad.numpy(), expected[None], rtol=1e-12)
    np.testing.assert_allclose(float(loss), (s.detach().numpy().ravel() * w[:12]).sum()
                               + (c.detach().numpy().ravel() * w[12:]).sum(), rtol=1e-12)
    if torch is not None:
        xt = torch.tensor(x0, requires_grad=True)
        lt, st, ct = _stack_view_program(torch, xt, torch.tensor(w))
        lt.backward()
        assert st.stride() == s.stride() and ct.stride() == c.stride()
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)


# --- .mT / .mH / adjoint of a 0-d tensor: PyTorch's are the identity (deprecated), chainrule
# raised "Dimension out of range" -------------------------------------------------------------

@pytest.mark.parametrize("name", ["mT", "mH", "adjoint"])
def test_matrix_transpose_of_0d_is_identity(name):
    x = cr.tensor(0.75, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x.adjoint() if name == "adjoint" else getattr(x, name)
    assert y.shape == () and float(y) == 0.75
    (y * 3.0).backward()
    assert float(x.grad) == 3.0  # d(3 x)/dx
    if torch is not None:
        xt = torch.tensor(0.75, dtype=torch.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yt = xt.adjoint() if name == "adjoint" else getattr(xt, name)
        (yt * 3.0).backward()
        assert float(xt.grad) == float(x.grad)


def test_matrix_transpose_of_1d_still_raises():
    with pytest.raises(IndexError):
        _ = cr.ones(3).mT


# --- x[mask] = v with v of shape (1, 1) (leading size-1 dims): PyTorch drops them, chainrule
# raised NumPy's "boolean array indexing assignment requires a 0 or 1-dimensional input" ----

def _mask_assign(mod, x0, v0, w):
    x = mod.tensor(x0, requires_grad=True)
    v = mod.tensor(v0, requires_grad=True)
    y = x * 1
    y[y > 0.5] = v
    (y * mod.tensor(w)).sum().backward()
    return y.detach().numpy(), x.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize("vshape", [(1, 1), (1, 1, 1)])
def test_mask_setitem_value_with_leading_unit_dims(vshape):
    x0 = np.array([[0.3, 0.9], [0.8, 0.1]])
    v0 = np.full(vshape, 2.0)
    w = np.array([[1.0, 2.0], [3.0, 4.0]])
    y, gx, gv = _mask_assign(cr, x0, v0, w)
    # by hand: the two entries above 0.5 are replaced by v, so x's gradient there is 0 and
    # v's gradient is the sum of their weights (2 + 3)
    np.testing.assert_array_equal(y, [[0.3, 2.0], [2.0, 0.1]])
    np.testing.assert_array_equal(gx, [[1.0, 0.0], [0.0, 4.0]])
    np.testing.assert_array_equal(gv, np.full(vshape, 5.0))
    # also without recording (a plain tensor)
    z = cr.ones(1, 1)
    z[z > 0.5] = cr.full(vshape, 2.0)
    assert z.tolist() == [[2.0]]
    if torch is not None:
        yt, gxt, gvt = _mask_assign(torch, x0, v0, w)
        np.testing.assert_array_equal(y, yt)
        np.testing.assert_array_equal(gx, gxt)
        np.testing.assert_array_equal(gv, gvt)


# --- einsum with a letter broadcast between operands (sizes 4 and 1): the gradient of the
# size-4 operand came back with the other's size 1 (shape (1,) for a (4,) input), and the
# size-1 operand's was not summed: a silently wrong .grad ------------------------------------

@pytest.mark.parametrize("eq, sa, sb", [("i,i->", (4,), (1,)), ("i,i->", (1,), (4,)),
                                        ("ij,kj->ik", (1, 4), (2, 1)),
                                        ("bij,bjk->bik", (1, 2, 3), (4, 3, 2))])
def test_einsum_gradient_with_broadcast_letters(eq, sa, sb):
    rs = np.random.RandomState(0)
    a0, b0 = rs.randn(*sa), rs.randn(*sb)
    w = rs.randn(*np.einsum(eq, a0, b0).shape)

    def loss(a, b):
        return float((np.einsum(eq, a, b) * w).sum())

    a, b = cr.tensor(a0, requires_grad=True), cr.tensor(b0, requires_grad=True)
    (cr.einsum(eq, a, b) * cr.tensor(w)).sum().backward()
    assert a.grad.shape == sa and b.grad.shape == sb
    np.testing.assert_allclose(a.grad.numpy(), _central_fd(lambda x: loss(x, b0), a0), atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), _central_fd(lambda x: loss(a0, x), b0), atol=1e-6)
    jac = cr.func.jacrev(lambda x: (cr.einsum(eq, x, cr.tensor(b0)) * cr.tensor(w)).sum())(
        cr.tensor(a0))
    np.testing.assert_allclose(jac.numpy(), a.grad.numpy(), atol=1e-12)
    if torch is not None:
        at = torch.tensor(a0, requires_grad=True)
        bt = torch.tensor(b0, requires_grad=True)
        (torch.einsum(eq, at, bt) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), at.grad.numpy(), atol=1e-12)
        np.testing.assert_allclose(b.grad.numpy(), bt.grad.numpy(), atol=1e-12)


def test_vmap_inplace_of_a_captured_tensor_with_a_batched_value_raises():
    # outer.add_(x) inside vmap: each sample would update `outer` in turn (vmap evaluated
    # once per sample and accumulated: [[1, 2], [4, 6], [9, 12]], outer left at [9, 12]);
    # torch raises, and so does chainrule now, leaving `outer` as it was
    from chainrule import func

    X = cr.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    outer = cr.zeros(2)
    for update in (lambda x: outer.add_(x) * 1, lambda x: outer.copy_(x) * 1,
                   lambda x: outer.__setitem__(0, x.sum()) or x):
        with pytest.raises(RuntimeError, match="inplace arithmetic"):
            func.vmap(update)(X)
        assert outer.tolist() == [0.0, 0.0]
    # in-place updates of the function's own (batched) values, and of unbatched ones with
    # unbatched values, are fine
    assert func.vmap(lambda x: x.clone().add_(x))(X).tolist() == (2 * X).tolist()
    count = cr.zeros(())
    func.vmap(lambda x: (count.add_(1), x.sin())[1])(X)
    assert count.item() == 1.0
    if torch is not None:
        t_outer = torch.zeros(2, dtype=torch.float64)
        with pytest.raises(RuntimeError, match="inplace arithmetic|broadcast shape"):
            torch.func.vmap(lambda x: t_outer.add_(x) * 1)(torch.tensor(X.numpy()))


def test_sign_of_nan_is_zero_as_pytorch():
    # torch.sign is (0 < x) - (x < 0): 0 at NaN (NumPy's sign gives NaN); the gradient is 0
    x = cr.tensor([float("nan"), -0.0, 0.0, 1.5, -2.0], requires_grad=True)
    y = cr.sign(x)
    np.testing.assert_array_equal(y.detach().numpy(), [0.0, 0.0, 0.0, 1.0, -1.0])
    np.testing.assert_array_equal(x.sgn().detach().numpy(), y.detach().numpy())
    assert cr.sign(x.detach().float()).dtype == cr.float32
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(5))
    if torch is not None:
        t = torch.tensor([float("nan"), -0.0, 0.0, 1.5, -2.0], dtype=torch.float64)
        np.testing.assert_array_equal(torch.sign(t).numpy(), y.detach().numpy())


def test_an_in_place_update_with_a_result_without_gradient_cuts_the_old_history():
    # an update whose new value has no gradient (a comparison, a random fill) replaces a
    # value that had one: the gradient through it is zero (PyTorch's EqBackward0 /
    # UniformBackward0); keeping the old history gave d(y*y)/dx = 8 here
    from chainrule import _inplace

    x = cr.ones(3, requires_grad=True)
    y = x * 2
    _inplace.update(y, lambda old: (old > 1).double(), "gt_")
    assert y.requires_grad
    (y * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    np.testing.assert_array_equal(y.detach().numpy(), np.ones(3))


def test_short_row_sums_agree_with_numpy_and_math_fsum():
    # sums over the last axis of short rows take einsum's loop (NumPy's reduction pays per
    # row): values within rounding of NumPy's and of an exactly rounded sum, keepdim kept
    import math

    from chainrule.backend import numpy_sum

    rng = np.random.default_rng(3)
    for shape in [(5, 7), (2, 3, 128), (4, 1), (3, 129)]:
        for dt in (np.float64, np.float32):
            a = rng.standard_normal(shape).astype(dt)
            exact = np.array([math.fsum(r) for r in a.reshape(-1, shape[-1]).astype(float)])
            for axis in (-1, len(shape) - 1, (-1,)):
                got = numpy_sum(a, axis=axis)
                assert got.dtype == dt and got.shape == shape[:-1]
                tol = 1e-14 if dt == np.float64 else 1e-5
                np.testing.assert_allclose(got.reshape(-1), exact, rtol=tol, atol=tol)
            assert numpy_sum(a, axis=-1, keepdims=True).shape == shape[:-1] + (1,)
            np.testing.assert_allclose(cr.tensor(a).sum(-1).numpy(), a.sum(-1), rtol=tol, atol=tol)
