"""More of PyTorch's names: nn.functional's shrink/gate/margin functions, top-level
layer_norm/group_norm/rms_norm, torch.qr/svd, Tensor.H/mH and in-place addmm_-style
methods; values against NumPy formulas written here, gradients by gradcheck, and against
torch where installed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn.functional as F
from chainrule.autograd import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None

RNG = np.random.default_rng(3)
X = RNG.uniform(-2, 2, (4, 6))
X[np.abs(np.abs(X) - 0.5) < 0.05] += 0.2  # away from the shrink thresholds


def t(a, grad=True):
    return cr.tensor(np.asarray(a, dtype=float), requires_grad=grad)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


CASES = {
    "glu": (lambda x: F.glu(x, -1), lambda x: x[:, :3] * sigmoid(x[:, 3:]), [X]),
    "hardshrink": (F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0.0), [X]),
    "softshrink": (F.softshrink,
                   lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)), [X]),
    "threshold": (lambda x: F.threshold(x, 0.1, 20.0), lambda x: np.where(x > 0.1, x, 20.0),
                  [X]),
    "prelu": (F.prelu, lambda x, w: np.where(x > 0, x, w[None, :] * x),
              [X, RNG.uniform(0.1, 0.3, 6)]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (6,), w, eps=1e-6),
                 lambda x, w: x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6) * w,
                 [X, RNG.uniform(0.5, 1.5, 6)]),
    "soft_margin_loss": (lambda x: F.soft_margin_loss(x, cr.tensor(np.sign(X))),
                         lambda x: np.log1p(np.exp(-np.sign(X) * x)).mean(), [X]),
    "multilabel_soft_margin_loss": (
        lambda x: F.multilabel_soft_margin_loss(x, cr.tensor((X > 0) * 1.0)),
        lambda x: (-((X > 0) * np.log(sigmoid(x)) + (X <= 0) * np.log(sigmoid(-x)))
                   ).mean(1).mean(), [X]),
    "multi_margin_loss": (
        lambda x: F.multi_margin_loss(x, cr.tensor(np.array([0, 2, 5, 1]))),
        lambda x: np.mean([sum(max(0.0, 1 - x[n, y] + x[n, i]) for i in range(6) if i != y) / 6
                           for n, y in enumerate([0, 2, 5, 1])]), [X]),
    "layer_norm": (lambda x: cr.layer_norm(x, (6,), eps=1e-5),
                   lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True)
                                                                         + 1e-5), [X]),
    "renorm": (lambda x: cr.renorm(x, 2, 0, 1.5),
               lambda x: x * np.where(np.linalg.norm(x, axis=1, keepdims=True) > 1.5,
                                      1.5 / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-7),
                                      1.0), [X]),
    "rsub": (lambda x: cr.rsub(x, 2.0, alpha=3), lambda x: 2.0 - 3 * x, [X]),
    "ger": (cr.ger, np.outer, [X[0], X[1]]),
    "adjoint": (cr.adjoint, lambda x: x.T, [X]),
}


# torch's functions of the same names (called only where torch is installed)
TORCH_CASES = {
    "glu": lambda x: torch.nn.functional.glu(x, -1),
    "hardshrink": lambda x: torch.nn.functional.hardshrink(x),
    "softshrink": lambda x: torch.nn.functional.softshrink(x),
    "prelu": lambda x, w: torch.nn.functional.prelu(x, w),
    "rms_norm": lambda x, w: torch.nn.functional.rms_norm(x, (6,), w, eps=1e-6),
    "soft_margin_loss": lambda x: torch.nn.functional.soft_margin_loss(
        x, torch.tensor(np.sign(X))),
    "multilabel_soft_margin_loss": lambda x: torch.nn.functional.multilabel_soft_margin_loss(
        x, torch.tensor((X > 0) * 1.0)),
    "multi_margin_loss": lambda x: torch.nn.functional.multi_margin_loss(
        x, torch.tensor([0, 2, 5, 1])),
}


@pytest.mark.parametrize("name", list(CASES))
def test_value_and_gradient(name):
    ours, reference, arrays = CASES[name]
    np.testing.assert_allclose(ours(*[t(a, False) for a in arrays]).numpy(),
                               reference(*arrays), rtol=1e-10, atol=1e-12)
    assert gradcheck(ours, tuple(t(a) for a in arrays))
    if torch is not None and name in TORCH_CASES:
        _compare_with_torch(torch, CASES[name], TORCH_CASES[name], name)


def test_deprecated_qr_and_svd_spellings():
    A = t(RNG.standard_normal((4, 3)), False)
    Q, R = cr.qr(A)
    np.testing.assert_allclose((Q @ R).numpy(), A.numpy(), atol=1e-14)
    assert Q.shape == (4, 3) and cr.qr(A, some=False).Q.shape == (4, 4)
    U, S, V = cr.svd(A)  # V, not V^T
    np.testing.assert_allclose((U * S @ V.mT).numpy(), A.numpy(), atol=1e-14)
    np.testing.assert_allclose(A.svd(compute_uv=False).S.numpy(),
                               np.linalg.svd(A.numpy(), compute_uv=False))


def test_H_and_mH_of_real_tensors_are_transposes():
    A = t(X, False)
    np.testing.assert_array_equal(A.H.numpy(), X.T)
    np.testing.assert_array_equal(t(np.stack([X, X]), False).mH.numpy(), np.stack([X.T, X.T]))
    with pytest.raises(RuntimeError, match="tensor.H is only supported on matrices"):
        _ = t(np.stack([X, X]), False).H
    with pytest.raises(RuntimeError, match="Got 1-D tensor"):  # as PyTorch
        _ = t(X[0], False).H


def test_in_place_addmm_family_matches_out_of_place():
    a, b = t(RNG.standard_normal((4, 2))), t(RNG.standard_normal((2, 6)))
    base = t(X)
    y = base * 1.0
    version = y._version
    y.addmm_(a, b, beta=0.5, alpha=2.0)
    assert y._version == version + 1
    expected = cr.addmm(base, a, b, beta=0.5, alpha=2.0)
    np.testing.assert_allclose(y.detach().numpy(), expected.detach().numpy())
    g = cr.autograd.grad(y.sum(), [base, a, b])
    ge = cr.autograd.grad(expected.sum(), [base, a, b])
    for u, w in zip(g, ge):
        np.testing.assert_allclose(u.numpy(), w.numpy())


def _compare_with_torch(torch, case, theirs, name):
    """Values against torch and against the NumPy reference; the VJP of a random cotangent
    against torch's."""
    ours, reference, arrays = case
    xs = [t(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(out.detach().numpy(), reference(*arrays), atol=1e-12)
    cot = RNG.standard_normal(tuple(out.shape))
    for g, r in zip(cr.autograd.grad((out * cr.tensor(cot)).sum(), xs),
                    torch.autograd.grad((ref * torch.tensor(cot)).sum(), ts)):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-10, err_msg=name)


# --- ops/torch_more.py --------------------------------------------------------------------

MORE = {
    "positive": (cr.positive, lambda x: x, [X]),
    "float_power": (lambda x: cr.float_power(x, 3), lambda x: x ** 3.0, [X]),
    "ldexp": (lambda x: cr.ldexp(x, cr.tensor(np.array([1, 2, -1, 0, 3, 1]))),
              lambda x: x * 2.0 ** np.array([1, 2, -1, 0, 3, 1]), [X]),
    "dstack": (lambda a, b: cr.dstack([a, b]), lambda a, b: np.dstack([a, b]), [X, X * 2]),
    "split_with_sizes": (lambda x: cr.split_with_sizes(x, [2, 4], 1)[1],
                         lambda x: x[:, 2:], [X]),
    "sum_to_size": (lambda x: x.sum_to_size(1, 6), lambda x: x.sum(0, keepdims=True), [X]),
    "select_scatter": (lambda x, s: cr.select_scatter(x, s, 1, 2),
                       lambda x, s: np.concatenate([x[:, :2], s[:, None], x[:, 3:]], 1),
                       [X, X[:, 0] * 3]),
    "slice_scatter": (lambda x, s: cr.slice_scatter(x, s, 1, 0, 6, 2),
                      lambda x, s: np.stack([s[:, 0], x[:, 1], s[:, 1], x[:, 3], s[:, 2],
                                             x[:, 5]], 1), [X, X[:, :3] * 2]),
    "repeat_interleave": (lambda x: cr.repeat_interleave(x, cr.tensor(np.array([1, 0, 2, 1])),
                                                         dim=0),
                          lambda x: np.repeat(x, [1, 0, 2, 1], axis=0), [X]),
    "combinations": (lambda x: cr.combinations(x, 2),
                     lambda x: np.array([[x[i], x[j]] for i in range(6)
                                         for j in range(i + 1, 6)]), [X[0]]),
    "constant_pad_nd": (lambda x: cr.constant_pad_nd(x, (1, -2, 0, 1), 7.0),
                        lambda x: np.pad(x[:, :4], ((0, 1), (1, 0)), constant_values=7.0),
                        [X]),
    "frexp": (lambda x: cr.frexp(x).mantissa, lambda x: np.frexp(x)[0], [X]),
}


TORCH_MORE = {  # called only where torch is installed
    "float_power": lambda x: torch.float_power(x, 3),
    "sum_to_size": lambda x: x.sum_to_size(1, 6),
    "repeat_interleave": lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 2, 1]),
                                                           dim=0),
    "combinations": lambda x: torch.combinations(x, 2),
    "constant_pad_nd": lambda x: torch.constant_pad_nd(x, (1, -2, 0, 1), 7.0),
    "frexp": lambda x: torch.frexp(x).mantissa,
}


@pytest.mark.parametrize("name", list(MORE))
def test_more_torch_names(name):
    ours, reference, arrays = MORE[name]
    np.testing.assert_allclose(ours(*[t(a, False) for a in arrays]).numpy(),
                               reference(*arrays), rtol=1e-12, atol=1e-12)
    assert gradcheck(ours, tuple(t(a) for a in arrays))
    if torch is not None and name in TORCH_MORE:
        _compare_with_torch(torch, MORE[name], TORCH_MORE[name], name)


def test_mode_nextafter_and_broadcast_tensors():
    x = cr.tensor(np.array([[1.0, 2.0, 2.0, 3.0], [5.0, 4.0, 5.0, 4.0]]), requires_grad=True)
    values, indices = cr.mode(x, 1)
    np.testing.assert_array_equal(values.detach().numpy(), [2.0, 4.0])  # ties: the smallest
    np.testing.assert_array_equal(indices.numpy(), [2, 3])  # its last occurrence
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 1, 0], [0, 0, 0, 1]])
    a = t([1.0, 2.0])
    n = cr.nextafter(a, cr.tensor([2.0, 0.0]))
    np.testing.assert_array_equal(n.detach().numpy(), np.nextafter([1.0, 2.0], [2.0, 0.0]))
    n.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0])  # PyTorch's convention
    p, q = cr.broadcast_tensors(cr.ones(3, 1), cr.zeros(4))
    assert p.shape == q.shape == (3, 4)


def test_unsafe_split_chunk_fill_zero_and_put():
    x = t(X)
    for a, b in zip(cr.unsafe_split(x, 4, 1), cr.split(x, 4, 1)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert [c.shape for c in x.unsafe_chunk(3, 1)] == [c.shape for c in x.chunk(3, 1)]
    v = t(2.5)
    filled = cr.fill(x, v)
    np.testing.assert_array_equal(filled.detach().numpy(), np.full(X.shape, 2.5))
    (gx, gv) = cr.autograd.grad(filled.sum(), [x, v], allow_unused=True)
    assert gx is None and float(gv) == X.size  # the value gets every entry's gradient
    y = x * 1.0
    version = y._version
    cr.zero_(y)
    assert y._version == version + 1 and not y.detach().numpy().any()
    (g,) = cr.autograd.grad((y * 3).sum(), [x])
    assert not g.numpy().any()
    idx = np.array([0, 7, 7, 23])
    src = t([1.0, 2.0, 3.0, 4.0])
    ref = X.copy().ravel()
    np.add.at(ref, idx, [1.0, 2.0, 3.0, 4.0])
    out = cr.put(x, cr.tensor(idx), src, accumulate=True)
    np.testing.assert_allclose(out.detach().numpy().ravel(), ref)
    assert gradcheck(lambda a, s: cr.put(a, cr.tensor(idx), s, accumulate=True), (t(X), src))


def test_index_reduce():
    x = t(X)
    src = t(RNG.standard_normal((4, 3)))
    idx = cr.tensor(np.array([0, 2, 2]))
    out = cr.index_reduce(x, 1, idx, src, "mean", include_self=True)
    ref = X.copy()
    ref[:, 0] = (X[:, 0] + src.detach().numpy()[:, 0]) / 2
    ref[:, 2] = (X[:, 2] + src.detach().numpy()[:, 1] + src.detach().numpy()[:, 2]) / 3
    np.testing.assert_allclose(out.detach().numpy(), ref)
    assert gradcheck(lambda a, s: cr.index_reduce(a, 1, idx, s, "mean"), (t(X), src))


def test_bernoulli_and_normal_are_seeded_and_normal_is_reparametrized():
    cr.manual_seed(3)
    a = cr.bernoulli(cr.full((1000,), 0.3))
    cr.manual_seed(3)
    b = cr.bernoulli(cr.full((1000,), 0.3))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert set(np.unique(a.numpy())) <= {0.0, 1.0} and abs(a.numpy().mean() - 0.3) < 0.06
    mean, std = t([0.5, -1.0]), t([2.0, 0.1])
    z = cr.normal(mean, std)
    gm, gs = cr.autograd.grad(z.sum(), [mean, std])
    np.testing.assert_array_equal(gm.numpy(), [1.0, 1.0])
    noise = (z.detach().numpy() - [0.5, -1.0]) / [2.0, 0.1]
    np.testing.assert_allclose(gs.numpy(), noise)


def test_the_other_dropouts_and_rrelu():
    cr.manual_seed(0)
    x = cr.ones(8, 16, 3, 3, dtype=cr.float64)
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1))  # whole channels
    assert F.dropout2d(x, 0.5, training=False) is x
    assert F.dropout3d(cr.ones(2, 4, 2, 2, 2), 0.5).shape == (2, 4, 2, 2, 2)
    big = cr.tensor(RNG.standard_normal(200000))
    out = F.alpha_dropout(big, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1.0) < 0.02  # SELU's moments kept
    assert F.alpha_dropout(big, 0.2) is big  # training=False by default, as PyTorch
    neg = cr.tensor(-np.ones(1000))
    np.testing.assert_allclose(F.rrelu(neg).numpy(), -(1 / 8 + 1 / 3) / 2)
    slopes = -F.rrelu(neg, training=True).numpy()
    assert slopes.min() >= 1 / 8 and slopes.max() <= 1 / 3


def test_multilabel_margin_loss():
    x = t([[0.1, 0.2, 0.4, 0.8]])
    y = cr.tensor(np.array([[3, 0, -1, 1]]))  # targets 3 and 0 (the -1 ends the list)
    # by hand: sum over j in {3, 0}, i in {1, 2} of max(0, 1 - (x_j - x_i)), / 4
    expected = (max(0, 1 - (0.8 - 0.2)) + max(0, 1 - (0.8 - 0.4)) + max(0, 1 - (0.1 - 0.2))
                + max(0, 1 - (0.1 - 0.4))) / 4
    assert float(F.multilabel_margin_loss(x, y)) == pytest.approx(expected)  # 0.85
    assert gradcheck(lambda a: F.multilabel_margin_loss(a, y), (x,))


def test_in_place_shape_changes_keep_the_tensor_and_its_history():
    x = t(X)
    y = x * 2.0
    same = y
    y.unsqueeze_(0)
    assert y is same and y.shape == (1, 4, 6)
    y.squeeze_().t_().transpose_(0, 1)
    assert y.shape == (4, 6)
    (g,) = cr.autograd.grad((y * y).sum(), [x])
    np.testing.assert_allclose(g.numpy(), 8 * X)  # d sum((2x)^2) / dx
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        t(X).unsqueeze_(0)
    base = cr.tensor(X)
    view = base[0]
    with pytest.raises(NotImplementedError, match="unsqueeze_: changing the shape in place"):
        view.unsqueeze_(0)


def test_copy_variants_are_copies_with_the_views_gradient():
    x = t(X)
    c = cr.transpose_copy(x, 0, 1)
    assert c.shape == (6, 4) and not np.shares_memory(c.detach().numpy(), x.detach().numpy())
    (g,) = cr.autograd.grad((c * cr.tensor(X.T)).sum(), [x])
    np.testing.assert_allclose(g.numpy(), X)
    parts = cr.split_with_sizes_copy(x, [1, 3], 0)
    assert [p.shape for p in parts] == [(1, 6), (3, 6)]
    np.testing.assert_array_equal(cr.view_copy(x, (24,)).detach().numpy(), X.ravel())
    np.testing.assert_array_equal(x.narrow_copy(1, 2, 3).detach().numpy(), X[:, 2:5])


def test_complex_names_on_real_tensors():
    x = t(X)
    assert cr.conj(x) is x and x.conj() is x and cr.real(x) is x
    assert cr.resolve_conj(x) is x and x.resolve_neg() is x
    c = cr.conj_physical(x)
    assert c is not x and not np.shares_memory(c.detach().numpy(), X)
    np.testing.assert_array_equal(c.detach().numpy(), X)
    a = cr.angle(t([-2.0, 0.0, 3.0]))
    np.testing.assert_array_equal(a.detach().numpy(), [np.pi, 0.0, 0.0])
    y = t([-2.0, 3.0])
    (g,) = cr.autograd.grad(cr.angle(y).sum(), [y])
    assert not g.numpy().any()  # angle's gradient is 0 for real input, as PyTorch's
