"""nn parity fixes found by a second round of differential fuzzing against PyTorch (ties,
kinks, empty bags, degenerate shapes). Each test checks a value derived by hand (or an
invariant) and, where PyTorch is importable, PyTorch's own answer."""

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F

try:
    import torch
except ImportError:
    torch = None


def _grad(out, x):
    return cr.autograd.grad(out, x)[0].numpy()


# --- group_norm: one value per group ------------------------------------------------------

@pytest.mark.parametrize("shape,groups", [((1, 3), 3), ((1, 2, 1), 2), ((1, 1, 1), 1)])
def test_group_norm_one_value_per_group_raises(shape, groups):
    # N * C / G * prod(spatial) == 1: each group's variance is of a single value
    x = cr.tensor(np.ones(shape))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.group_norm(x, groups)
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.GroupNorm(groups, shape[1])(x)
    # two values per group is fine: normalised to -1, 1
    y = F.group_norm(cr.tensor(np.array([[1.0, 3.0]])), 1, eps=0.0)
    assert np.allclose(y.numpy(), [[-1.0, 1.0]])
    if torch is not None:
        with pytest.raises(ValueError):
            torch.nn.functional.group_norm(torch.ones(shape), groups)


# --- embedding_bag, mode="max" ------------------------------------------------------------

def test_embedding_bag_max_empty_bag_stays_in_the_graph():
    w = cr.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    # every entry of the bag is padding: the bag is empty, its output zeros
    out = F.embedding_bag(cr.tensor([[2, 2]]), w, mode="max", padding_idx=2)
    assert np.array_equal(out.detach().numpy(), np.zeros((1, 2)))
    assert out.requires_grad  # backward works and gives zero gradients, as PyTorch's
    assert np.array_equal(_grad(out.sum(), w), np.zeros((3, 2)))
    # no bags at all: a (0, D) output, still differentiable
    none = F.embedding_bag(cr.tensor([1]), w, cr.tensor([0]), mode="max",
                           include_last_offset=True)
    assert tuple(none.shape) == (0, 2) and none.requires_grad
    if torch is not None:
        tw = torch.tensor(w.detach().numpy(), requires_grad=True)
        to = torch.nn.functional.embedding_bag(torch.tensor([[2, 2]]), tw, mode="max",
                                               padding_idx=2)
        assert to.requires_grad
        assert np.array_equal(torch.autograd.grad(to.sum(), tw)[0].numpy(), np.zeros((3, 2)))


def test_embedding_bag_max_ties_go_to_the_first_row_in_the_bag():
    wn = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.5]])
    w = cr.tensor(wn, requires_grad=True)
    bags = [[3, 0, 2], [2, 0, 1]]
    out = F.embedding_bag(cr.tensor(bags), w, mode="max")
    assert np.array_equal(out.detach().numpy(), [[1.0, 0.5], [1.0, 0.0]])
    # bag 0: column 0 ties rows 0 and 2 -> row 0 (first in the bag); column 1 -> row 3.
    # bag 1: column 0 ties rows 2 and 0 -> row 2; column 1 ties rows 2, 0, 1 -> row 2.
    expected = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    g = _grad(out.sum(), w)
    assert np.array_equal(g, expected)
    assert g.sum() == out.numel()  # one unit per output entry, not shared among ties
    if torch is not None:
        tw = torch.tensor(wn, requires_grad=True)
        to = torch.nn.functional.embedding_bag(torch.tensor(bags), tw, mode="max")
        assert np.array_equal(torch.autograd.grad(to.sum(), tw)[0].numpy(), expected)


# --- kinks: which side a gradient takes at the exact breakpoint ---------------------------

def test_rrelu_eval_gradient_at_zero_is_the_slope():
    lower, upper = 0.1, 0.3
    x = cr.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y = F.rrelu(x, lower, upper, training=False)
    assert np.allclose(y.detach().numpy(), [-0.2, 0.0, 2.0])
    # eval rrelu is leaky_relu with slope (lower + upper) / 2: x <= 0 takes the slope
    g = _grad(y.sum(), x)
    assert np.allclose(g, [0.2, 0.2, 1.0])
    assert np.allclose(g, _grad(F.leaky_relu(x, 0.2).sum(), x))
    if torch is not None:
        tx = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
        ty = torch.nn.functional.rrelu(tx, lower, upper, training=False)
        assert np.allclose(torch.autograd.grad(ty.sum(), tx)[0].numpy(), g)


def test_multilabel_margin_loss_no_gradient_exactly_at_the_hinge():
    # target class 0; x_0 - x_1 = 1 exactly (hinge 0), x_0 - x_2 = 0.5 (hinge 0.5)
    xn = np.array([[1.0, 0.0, 0.5]])
    x = cr.tensor(xn, requires_grad=True)
    loss = F.multilabel_margin_loss(x, cr.tensor([[0, -1, -1]]), reduction="sum")
    assert np.isclose(loss.item(), 0.5 / 3)
    # only the active pair (0, 2) has gradient: d/dx of (1 - x_0 + x_2) / 3
    expected = np.array([[-1 / 3, 0.0, 1 / 3]])
    assert np.allclose(_grad(loss, x), expected)
    if torch is not None:
        tx = torch.tensor(xn, requires_grad=True)
        tl = torch.nn.functional.multilabel_margin_loss(tx, torch.tensor([[0, -1, -1]]),
                                                        reduction="sum")
        assert np.allclose(torch.autograd.grad(tl, tx)[0].numpy(), expected)


def test_multi_margin_loss_p1_no_gradient_exactly_at_the_hinge():
    # target class 0; margin - x_0 + x_1 = 0 exactly, margin - x_0 + x_2 = 0.5
    xn = np.array([[1.0, 0.0, 0.5]])
    x = cr.tensor(xn, requires_grad=True)
    loss = F.multi_margin_loss(x, cr.tensor([0]), p=1, margin=1.0, reduction="sum")
    assert np.isclose(loss.item(), 0.5 / 3)
    expected = np.array([[-1 / 3, 0.0, 1 / 3]])
    assert np.allclose(_grad(loss, x), expected)
    if torch is not None:
        tx = torch.tensor(xn, requires_grad=True)
        tl = torch.nn.functional.multi_margin_loss(tx, torch.tensor([0]), p=1,
                                                   reduction="sum")
        assert np.allclose(torch.autograd.grad(tl, tx)[0].numpy(), expected)


# --- soft_margin_loss with a bool target --------------------------------------------------

def test_soft_margin_loss_accepts_a_bool_target():
    xn = np.array([[0.5, -1.0], [2.0, 0.0]])
    yn = np.array([[True, False], [False, True]])
    x = cr.tensor(xn, requires_grad=True)
    loss = F.soft_margin_loss(x, cr.tensor(yn), reduction="none")
    expected = np.log1p(np.exp(-xn * yn))  # y = False counts as 0: log 2
    assert np.allclose(loss.detach().numpy(), expected)
    # d/dx log(1 + exp(-y x)) = -y sigmoid(-y x): zero where y is False
    g = _grad(loss.sum(), x)
    assert np.allclose(g, -(yn * 1.0) / (1 + np.exp(xn * yn)))
    if torch is not None:  # PyTorch's forward accepts it too
        tl = torch.nn.functional.soft_margin_loss(torch.tensor(xn), torch.tensor(yn),
                                                  reduction="none")
        assert np.allclose(tl.numpy(), expected)


# --- class indices that would wrap around -------------------------------------------------

def test_multi_margin_loss_rejects_targets_outside_the_classes():
    x = cr.tensor([[0.1, 0.5, -0.3]])
    # -2 would silently pick class 1 (numpy wrap-around): PyTorch raises
    for bad in ([-2], [3]):
        with pytest.raises(RuntimeError, match="out of range"):
            F.multi_margin_loss(x, cr.tensor(bad))
    with pytest.raises(RuntimeError, match="1-D"):
        F.multi_margin_loss(x, cr.tensor([[1]]))
    with pytest.raises(RuntimeError, match="integer"):
        F.multi_margin_loss(x, cr.tensor([1.0]))
    # a valid target: sum_{i != 1} max(0, 1 - 0.5 + x_i) / 3 = (0.6 + 0.2) / 3
    assert np.isclose(F.multi_margin_loss(x, cr.tensor([1])).item(), 0.8 / 3)
    assert np.isclose(F.multi_margin_loss(x[0], cr.tensor(1)).item(), 0.8 / 3)
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.nn.functional.multi_margin_loss(torch.tensor([[0.1, 0.5, -0.3]]),
                                                  torch.tensor([-2]))


def test_ctc_loss_rejects_labels_outside_the_classes_or_blank():
    lp = cr.tensor(np.log(np.full((4, 1, 3), 1 / 3)))
    for bad in ([[1, -1]], [[1, 3]], [[1, 0]]):  # -1 would wrap to class 2; 0 is blank
        with pytest.raises(RuntimeError, match="target labels"):
            F.ctc_loss(lp, cr.tensor(bad), cr.tensor([4]), cr.tensor([2]))
    # padding past the target length may hold anything (here the blank)
    one = F.ctc_loss(lp, cr.tensor([[1, 0]]), cr.tensor([4]), cr.tensor([1]), reduction="sum")
    # uniform 1/3 over T = 4 steps: every path has probability 3^-4; the paths that
    # collapse to "1" are the alignments of b*1+b* with repeats: 10 of them
    assert np.isclose(one.item(), -np.log(10 / 81))
    if torch is not None:
        tl = torch.nn.functional.ctc_loss(torch.log(torch.full((4, 1, 3), 1 / 3)),
                                          torch.tensor([[1, 0]]), torch.tensor([4]),
                                          torch.tensor([1]), reduction="sum")
        assert np.isclose(tl.item(), one.item())


def test_top_level_adaptive_max_pool1d_returns_values_and_indices():
    # torch.adaptive_max_pool1d (top level) returns (values, indices); it returned the
    # values alone, so `v, i = ...` silently split the batch of two instead
    x = cr.tensor([[[1.0, 5.0, 2.0, 0.0, 3.0, 4.0]], [[6.0, 1.0, 0.0, 2.0, 9.0, 3.0]]])
    v, i = cr.adaptive_max_pool1d(x, 2)  # windows [0, 3) and [3, 6)
    assert v.tolist() == [[[5.0, 4.0]], [[6.0, 9.0]]]
    assert i.tolist() == [[[1, 5]], [[0, 4]]]
    assert isinstance(F.adaptive_max_pool1d(x, 2), cr.Tensor)  # nn.functional: values
    if torch is not None:
        tv, ti = torch.adaptive_max_pool1d(torch.tensor(x.numpy()), 2)
        assert tv.tolist() == v.tolist() and ti.tolist() == i.tolist()


def test_elu_family_slope_far_left_and_threshold_of_nan():
    # d/dx alpha (exp(x) - 1) = alpha exp(x): expm1's rule took it as y + 1, which cancels
    # (1.7e-4 off at x = -30, 0 below -37)
    for x in (-30.0, -40.0, -700.0):
        a = cr.tensor([x], requires_grad=True)
        F.elu(a, alpha=2.0).sum().backward()
        np.testing.assert_allclose(a.grad.item(), 2.0 * math.exp(x), rtol=1e-15)
        s = cr.tensor([x], requires_grad=True)
        F.selu(s).sum().backward()
        np.testing.assert_allclose(s.grad.item(), 1.0507009873554805 * 1.6732632423543772
                                   * math.exp(x), rtol=1e-14)
    e = cr.tensor([-30.0], requires_grad=True)
    cr.expm1(e).sum().backward()
    assert e.grad.item() == math.exp(-30.0)
    # threshold is value where x <= threshold, else x: a NaN stays NaN, with gradient 1
    t = cr.tensor([math.nan, 0.5, 2.0], requires_grad=True)
    y = F.threshold(t, 1.0, -5.0)
    assert math.isnan(y[0].item()) and y[1:].tolist() == [-5.0, 2.0]
    y.sum().backward()
    assert t.grad.tolist() == [1.0, 0.0, 1.0]
    if torch is not None:
        tt = torch.tensor([math.nan, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
        torch.nn.functional.threshold(tt, 1.0, -5.0).sum().backward()
        assert tt.grad.tolist() == t.grad.tolist()
        te = torch.tensor([-30.0], dtype=torch.float64, requires_grad=True)
        torch.nn.functional.elu(te, alpha=2.0).sum().backward()
        np.testing.assert_allclose(te.grad.item(), 2.0 * math.exp(-30.0), rtol=1e-15)
