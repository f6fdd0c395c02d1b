"""Regressions found by differential fuzzing of forward mode and second derivatives through
``chainrule.nn.functional`` (expected values from finite differences of chainrule's own
first derivatives; torch compared where it imports)."""

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

F = cr.nn.functional


def _ce_case():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 4))
    u = rng.standard_normal((3, 4))
    target = np.array([0, 2, 1])
    return x, v, u, target


def _ce_jvp_value(x, v, target, reduction):
    _, t = cr.func.jvp(lambda a: F.cross_entropy(a, cr.tensor(target), reduction=reduction),
                       (cr.tensor(x),), (cr.tensor(v),))
    return t.numpy()


def _fd_second(x, v, u, target, reduction, w):
    """d/ds <w, J(x + s u) v> at s = 0, by central differences of the exact JVP."""
    h = 1e-5
    plus = _ce_jvp_value(x + h * u, v, target, reduction)
    minus = _ce_jvp_value(x - h * u, v, target, reduction)
    return float((w * (plus - minus)).sum() / (2 * h))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_class_index_reverse_through_forward_ad(reduction):
    # the fused cross_entropy's JVP rule ran differentiably on a raw NumPy class-index
    # target: TypeError ('numpy.ndarray' object has no attribute '_data')
    x, v, u, target = _ce_case()
    w = np.random.default_rng(4).standard_normal(3) if reduction == "none" else 1.0
    xs = cr.tensor(x).requires_grad_(True)
    with fwAD.dual_level():
        out = F.cross_entropy(fwAD.make_dual(xs, cr.tensor(v)), cr.tensor(target),
                              reduction=reduction)
        tangent = fwAD.unpack_dual(out).tangent
    (g,) = cr.autograd.grad((tangent * cr.tensor(w)).sum(), xs)
    got = float((g.numpy() * u).sum())
    assert got == pytest.approx(_fd_second(x, v, u, target, reduction, w), rel=1e-5, abs=1e-7)
    assert abs(got) > 1e-3  # a real second-order term, not a trivially zero one
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        tf = lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(target),  # noqa: E731
                                                         reduction=reduction)
        _, tt = torch.func.jvp(tf, (tx,), (torch.tensor(v),))
        (tg,) = torch.autograd.grad((tt * torch.tensor(w)).sum(), tx)
        np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-6, atol=1e-9)


def test_cross_entropy_class_index_nested_dual_levels():
    x, v, u, target = _ce_case()
    with fwAD.dual_level():
        outer = fwAD.make_dual(cr.tensor(x), cr.tensor(u))
        with fwAD.dual_level():
            out = F.cross_entropy(fwAD.make_dual(outer, cr.tensor(v)), cr.tensor(target))
            tangent = fwAD.unpack_dual(out).tangent
        second = fwAD.unpack_dual(tangent).tangent
    assert float(second) == pytest.approx(_fd_second(x, v, u, target, "mean", 1.0),
                                          rel=1e-5, abs=1e-7)


def test_cross_entropy_class_index_numpy_target_reverse_through_jvp():
    # a NumPy target (not a tensor) takes the same path
    x, v, u, target = _ce_case()

    def jv(a):
        return cr.func.jvp(lambda b: F.cross_entropy(b, target), (a,), (cr.tensor(v),))[1]

    g = cr.func.grad(jv)(cr.tensor(x))
    got = float((g.numpy() * u).sum())
    assert got == pytest.approx(_fd_second(x, v, u, target, "mean", 1.0), rel=1e-5, abs=1e-7)


def test_ctc_loss_second_order_and_forward_mode_raise():
    # ctc_loss's gradient is the recursion's G at these log_probs: it was added as
    # lp * G - (lp * G).detach(), so its second derivatives came out 0 and its JVP along a
    # tangent that is not a log_softmax's was wrong (-0.30 against -0.25), silently; now a
    # once-differentiable Function without forward mode (as PyTorch: both raise)
    from chainrule.nn import functional as F

    rng = np.random.default_rng(0)
    a = cr.tensor(rng.standard_normal((5, 2, 4)), requires_grad=True)
    tg, il, tl = cr.tensor([[1, 2], [3, 1]]), [5, 5], [2, 2]
    loss = F.ctc_loss(F.log_softmax(a, -1), tg, il, tl)
    (g,) = cr.autograd.grad(loss, a, create_graph=True)
    v = rng.standard_normal((5, 2, 4))

    def value(x):
        return F.ctc_loss(F.log_softmax(cr.tensor(x), -1), tg, il, tl).item()

    eps, x0 = 1e-6, a.detach().numpy()
    fd = (value(x0 + eps * v) - value(x0 - eps * v)) / (2 * eps)  # first order still right
    np.testing.assert_allclose((g * cr.tensor(v)).sum().item(), fd, rtol=1e-6)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        cr.autograd.grad((g * cr.tensor(v)).sum(), a)
    with pytest.raises(RuntimeError, match="forward-mode AD"):
        with fwAD.dual_level():
            d = fwAD.make_dual(F.log_softmax(a.detach(), -1), cr.tensor(v))
            F.ctc_loss(d, tg, il, tl)
