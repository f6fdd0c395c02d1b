"""chainrule.nn.functional: values against NumPy formulas written out here, gradients by
gradcheck (float64, points away from kinks), and, when torch is installed, values and
gradients against torch.nn.functional."""

import math
import warnings

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn.functional as F
from chainrule.autograd import gradcheck

RNG = np.random.default_rng(1234)


def _torch():
    """torch, or None when it is not installed (the caller's torch checks are then left
    out; each test checks something without it first)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def away_from_kinks(shape, kinks=(0.0,), gap=0.1, scale=2.0):
    x = RNG.standard_normal(shape) * scale
    for k in kinks:
        close = np.abs(x - k) < gap
        x[close] = k + np.where(x[close] >= k, gap, -gap) * 2
    return x


def T(a, grad=False):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def np_erf(x):
    return np.vectorize(math.erf)(x)


# --- activations -------------------------------------------------------------------------

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

ACTIVATIONS = {
    # name: (chainrule call, NumPy reference, kinks)
    "relu": (F.relu, lambda x: np.maximum(x, 0), (0,)),
    "relu6": (F.relu6, lambda x: np.minimum(np.maximum(x, 0), 6), (0, 6)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), (0,)),
    "elu": (lambda x: F.elu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * (np.exp(x) - 1)), (0,)),
    "selu": (F.selu, lambda x: SELU_S * np.where(x > 0, x, SELU_A * (np.exp(x) - 1)), (0,)),
    "celu": (lambda x: F.celu(x, 0.7),
             lambda x: np.maximum(0, x) + np.minimum(0, 0.7 * (np.exp(x / 0.7) - 1)), (0,)),
    "gelu": (F.gelu, lambda x: x * 0.5 * (1 + np_erf(x / np.sqrt(2))), ()),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
                  ()),
    "silu": (F.silu, lambda x: x * sigmoid(x), ()),
    "mish": (F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), ()),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0), lambda x: np_softplus(x, 2.0, 3.0), (1.5,)),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x)), (0,)),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5),
                 (-0.5, 1.5)),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, (-3, 3)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, (-3, 3)),
    "logsigmoid": (F.logsigmoid, lambda x: np.log(sigmoid(x)), ()),
    "tanhshrink": (F.tanhshrink, lambda x: x - np.tanh(x), ()),
    "sigmoid": (F.sigmoid, sigmoid, ()),
    "tanh": (F.tanh, np.tanh, ()),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_gradcheck(name):
    fn, ref, kinks = ACTIVATIONS[name]
    x = away_from_kinks((3, 5), kinks, scale=3.0)
    out = fn(T(x))
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-12, atol=1e-12)
    assert out.shape == x.shape and out.dtype == np.float64
    assert gradcheck(fn, (T(x, True),))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_keeps_float32(name):
    fn, ref, _ = ACTIVATIONS[name]
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    out = fn(cr.tensor(x))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_activations_hand_values():
    x = T([-2.0, -0.5, 0.0, 0.5, 4.0, 7.0])
    assert F.relu6(x).tolist() == [0.0, 0.0, 0.0, 0.5, 4.0, 6.0]
    assert F.hardsigmoid(x).tolist() == [1 / 6, 2.5 / 6, 0.5, 3.5 / 6, 1.0, 1.0]
    assert F.leaky_relu(x).tolist() == [-0.02, -0.005, 0.0, 0.5, 4.0, 7.0]
    assert F.softsign(T([1.0, -3.0])).tolist() == [0.5, -0.75]
    # the stable forms do not overflow
    big = T([-800.0, 800.0])
    np.testing.assert_allclose(F.logsigmoid(big).numpy(), [-800.0, 0.0])
    assert np.isfinite(F.elu(big).numpy()).all() and np.isfinite(F.mish(big).numpy()).all()


def test_stable_activations_have_finite_gradients_far_out():
    for fn in (F.elu, F.selu, F.celu, F.logsigmoid, F.silu, F.mish):
        x = T([-800.0, -30.0, 30.0, 800.0], True)
        fn(x).sum().backward()
        assert np.isfinite(x.grad.numpy()).all(), fn.__name__


def test_kink_gradients_match_torch_convention():
    x = T([0.0, 6.0, -3.0, 3.0], True)
    (F.relu6(x) + F.hardsigmoid(x)).sum().backward()
    # relu6 passes the gradient strictly inside (0, 6): 0 at 0 and 6, 1 at 3;
    # hardsigmoid strictly inside (-3, 3): 1/6 at 0, 0 at -3 and 3
    assert x.grad.tolist() == [1 / 6, 0.0, 0.0, 1.0]


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="gelu: approximate argument must be either none or "
                                         "tanh"):
        F.gelu(T([1.0]), approximate="erf")


def test_activations_second_derivative():
    x = T([0.3, -1.2, 2.0], True)
    (g,) = cr.autograd.grad(F.gelu(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    xs = x.detach().numpy()
    pdf = np.exp(-xs ** 2 / 2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(h.numpy(), 2 * pdf - xs * xs * pdf, rtol=1e-12)


# --- softmax family ----------------------------------------------------------------------

def np_softmax(x, dim):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family(dim):
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(F.softmax(T(x), dim).numpy(), np_softmax(x, dim), rtol=1e-12)
    np.testing.assert_allclose(F.log_softmax(T(x), dim=dim).numpy(),
                               np.log(np_softmax(x, dim)), rtol=1e-12)
    np.testing.assert_allclose(F.softmin(T(x), dim).numpy(), np_softmax(-x, dim), rtol=1e-12)
    assert gradcheck(lambda t: F.softmin(t, dim), (T(x, True),))


def test_softmax_dtype_and_implicit_dim():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    out = F.softmax(cr.tensor(x), dim=1, dtype=cr.float64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), np_softmax(x.astype(np.float64), 1), rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        implicit = F.softmax(cr.tensor(x))
    np.testing.assert_allclose(implicit.numpy(), np_softmax(x, 1), rtol=1e-6)


# --- distances ---------------------------------------------------------------------------

def test_normalize_and_cosine_similarity():
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(F.normalize(T(x)).numpy(),
                               x / np.linalg.norm(x, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(F.normalize(T(x), p=1, dim=0).numpy(),
                               x / np.abs(x).sum(0, keepdims=True), rtol=1e-12)
    cos = (x * y).sum(1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(F.cosine_similarity(T(x), T(y)).numpy(), cos, rtol=1e-12)
    # broadcasting and a zero vector (eps floor)
    out = F.cosine_similarity(T(x), T(np.zeros((1, 3))))
    assert out.shape == (4,) and np.all(out.numpy() == 0)
    assert gradcheck(F.cosine_similarity, (T(x, True), T(y, True)))
    assert gradcheck(F.normalize, (T(x, True),))


def test_pairwise_distance_and_pdist():
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(F.pairwise_distance(T(x), T(y)).numpy(),
                               np.linalg.norm(x - y + 1e-6, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(F.pairwise_distance(T(x), T(y), p=1, keepdim=True).numpy(),
                               np.abs(x - y + 1e-6).sum(-1, keepdims=True), rtol=1e-12)
    d = F.pdist(T(x))
    expected = [np.linalg.norm(x[i] - x[j]) for i in range(4) for j in range(i + 1, 4)]
    np.testing.assert_allclose(d.numpy(), expected, rtol=1e-12)
    assert gradcheck(F.pdist, (T(x, True),))
    with pytest.raises(RuntimeError, match=r"pdist: only supports 2D tensors, got: 1D"):
        F.pdist(T([1.0, 2.0]))


# --- dropout -----------------------------------------------------------------------------

def test_dropout_reproducible_and_scaled():
    x = cr.ones(2000, dtype=cr.float64)
    cr.manual_seed(7)
    a = F.dropout(x, 0.25)
    cr.manual_seed(7)
    b = F.dropout(x, 0.25)
    assert np.array_equal(a.numpy(), b.numpy())
    vals = set(np.unique(a.numpy()).tolist())
    assert vals == {0.0, 1 / 0.75}
    assert abs((a.numpy() == 0).mean() - 0.25) < 0.04
    assert F.dropout(x, 0.25, training=False) is x
    assert np.all(F.dropout(x, 1.0).numpy() == 0)


def test_dropout_gradient_is_the_mask():
    x = T(np.ones(50), True)
    cr.manual_seed(3)
    out = F.dropout(x, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out.detach().numpy())


def test_dropout_rejects_bad_p():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        F.dropout(T([1.0]), 1.5)


# --- normalisation -----------------------------------------------------------------------

def test_layer_norm():
    x = RNG.standard_normal((2, 3, 4))
    w, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    mu = x.mean(axis=(1, 2), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(1, 2), keepdims=True)
    expected = (x - mu) / np.sqrt(var + 1e-5) * w + b
    np.testing.assert_allclose(F.layer_norm(T(x), (3, 4), T(w), T(b)).numpy(), expected,
                               rtol=1e-10)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, [4], w, b),
                     (T(x, True), T(w[0], True), T(b[0], True)))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[3\], expected input with "
                                           r"shape \[\*, 3\], but got input of size\[2, 3, 4\]"):
        F.layer_norm(T(x), (3,))


def test_group_norm():
    x = RNG.standard_normal((2, 6, 3))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    g = x.reshape(2, 3, 6)
    mu, var = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    expected = ((g - mu) / np.sqrt(var + 1e-5)).reshape(2, 6, 3) * w[:, None] + b[:, None]
    np.testing.assert_allclose(F.group_norm(T(x), 3, T(w), T(b)).numpy(), expected, rtol=1e-10)
    assert gradcheck(lambda x, w: F.group_norm(x, 2, w), (T(x, True), T(w, True)))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(T(x), 4)


def test_batch_norm_training_updates_running_stats():
    x = RNG.standard_normal((5, 3)) * 2 + 1
    rm, rv = cr.zeros(3, dtype=cr.float64), cr.ones(3, dtype=cr.float64)
    out = F.batch_norm(T(x), rm, rv, training=True, momentum=0.2)
    mu, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(out.numpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-10)
    np.testing.assert_allclose(rm.numpy(), 0.2 * mu, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var(0, ddof=1), rtol=1e-12)
    assert not rm.requires_grad and rm.grad_fn is None
    ev = F.batch_norm(T(x), rm, rv, T([1.0, 2.0, 3.0]), T([0.0, 1.0, 0.0]))
    np.testing.assert_allclose(ev.numpy(), (x - rm.numpy()) / np.sqrt(rv.numpy() + 1e-5)
                               * [1, 2, 3] + [0, 1, 0], rtol=1e-12)
    assert gradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, True),
                     (T(x, True), T([1.0, 2.0, 3.0], True)))


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(T(np.ones((1, 3))), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(T(np.ones((2, 3))), cr.zeros(4), cr.ones(3), training=True)


# --- embedding, one_hot, pad -------------------------------------------------------------

def test_embedding_and_padding_idx_gradient():
    W = RNG.standard_normal((5, 3))
    idx = np.array([[0, 2, 2], [4, 1, 0]])
    w = T(W, True)
    out = F.embedding(cr.tensor(idx), w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), W[idx])
    out.sum().backward()
    counts = np.bincount(idx.ravel(), minlength=5).astype(float)
    counts[2] = 0
    np.testing.assert_array_equal(w.grad.numpy(), np.repeat(counts[:, None], 3, 1))
    with pytest.raises(IndexError, match="embedding: index out of range"):
        F.embedding(cr.tensor([5]), w)


def test_embedding_max_norm_renormalizes_in_place():
    W = np.array([[3.0, 4.0], [0.3, 0.4]])
    w = T(W, True)
    out = F.embedding(cr.tensor([0, 1]), w, max_norm=1.0)
    np.testing.assert_allclose(w.detach().numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)
    np.testing.assert_allclose(out.detach().numpy(), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


def test_one_hot():
    out = F.one_hot(cr.tensor([0, 2, 1]))
    assert out.dtype == np.int64
    assert out.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(cr.tensor([[1]]), 4).tolist() == [[[0, 1, 0, 0]]]
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        F.one_hot(cr.tensor([1, 5]), 3)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_against_numpy(mode):
    x = RNG.standard_normal((2, 3, 4))
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    out = F.pad(T(x), (1, 2, 2, 1), mode=mode)  # last dim (1, 2), then dim 1 (2, 1)
    expected = np.pad(x, ((0, 0), (2, 1), (1, 2)), mode=np_mode)
    np.testing.assert_allclose(out.numpy(), expected)
    assert gradcheck(lambda t: F.pad(t, (1, 2), mode=mode), (T(x, True),))


def test_pad_constant_value_and_negative():
    x = T(np.arange(6.0).reshape(2, 3))
    assert F.pad(x, (1, 0), value=-1.0).tolist() == [[-1, 0, 1, 2], [-1, 3, 4, 5]]
    assert F.pad(x, (-1, 1)).tolist() == [[1, 2, 0], [4, 5, 0]]
    with pytest.raises(ValueError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding "
                                           "input dimension"):
        F.pad(x, (3, 0), mode="reflect")


# --- regression losses -------------------------------------------------------------------

def _red(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_losses(reduction):
    x, y = RNG.standard_normal((3, 4)) * 2, RNG.standard_normal((3, 4))
    d = x - y
    cases = {
        F.mse_loss: d ** 2,
        F.l1_loss: np.abs(d),
        lambda a, b, reduction: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5):
            np.where(np.abs(d) < 0.5, 0.5 * d ** 2 / 0.5, np.abs(d) - 0.25),
        lambda a, b, reduction: F.huber_loss(a, b, reduction=reduction, delta=0.5):
            np.where(np.abs(d) < 0.5, 0.5 * d ** 2, 0.5 * (np.abs(d) - 0.25)),
    }
    for fn, per in cases.items():
        np.testing.assert_allclose(fn(T(x), T(y), reduction=reduction).numpy(),
                                   _red(per, reduction), rtol=1e-12)


def test_regression_loss_gradients():
    x = away_from_kinks((3, 4), (0.0, 0.5, -0.5))
    y = np.zeros((3, 4))
    for fn in (F.mse_loss, F.l1_loss, lambda a, b: F.smooth_l1_loss(a, b, beta=0.5),
               lambda a, b: F.huber_loss(a, b, delta=0.5)):
        assert gradcheck(fn, (T(x, True), T(y, True)))


def test_weighted_mse_and_l1():
    x, y, w = RNG.standard_normal(5), RNG.standard_normal(5), RNG.random(5)
    np.testing.assert_allclose(F.mse_loss(T(x), T(y), weight=T(w)).item(),
                               (w * (x - y) ** 2).sum() / w.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.l1_loss(T(x), T(y), weight=T(w), reduction="sum").item(),
                               (w * np.abs(x - y)).sum(), rtol=1e-12)


def test_regression_loss_errors():
    with pytest.warns(UserWarning, match=r"mse_loss: Using a target size \(\[3, 1\]\) that is "
                                         r"different to the input size \(\[3, 4\]\)"):
        out = F.mse_loss(T(np.zeros((3, 4))), T(np.ones((3, 1))))
    assert out.item() == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match=r"mse_loss: the size of input \[3, 4\] does not "
                                               r"broadcast with the size of target \[5, 3\]"):
            F.mse_loss(T(np.zeros((3, 4))), T(np.zeros((5, 3))))
    with pytest.raises(ValueError, match="l1_loss: avg is not a valid value for reduction"):
        F.l1_loss(T([1.0]), T([1.0]), reduction="avg")
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values"):
        F.huber_loss(T([1.0]), T([1.0]), delta=0)


def test_legacy_reduction_arguments():
    x, y = T([1.0, 3.0]), T([0.0, 0.0])
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert F.mse_loss(x, y, size_average=False).item() == 10.0
    with pytest.warns(UserWarning):
        assert F.mse_loss(x, y, reduce=False).tolist() == [1.0, 9.0]


# --- classification losses ---------------------------------------------------------------

def np_log_softmax(x, dim=1):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


def np_cross_entropy(x, t, w=None, ignore=-100, reduction="mean", ls=0.0):
    """Class-index cross-entropy of (N, C) logits, written from the formula."""
    n, c = x.shape
    lp = np_log_softmax(x)
    w = np.ones(c) if w is None else w
    keep = t != ignore
    ts = np.where(keep, t, 0)
    nll = -w[ts] * lp[np.arange(n), ts] * keep
    smooth = -(lp * w).sum(1) * keep
    denom = (w[ts] * keep).sum()
    if reduction == "none":
        return (1 - ls) * nll + ls / c * smooth
    if reduction == "sum":
        return (1 - ls) * nll.sum() + ls / c * smooth.sum()
    return (1 - ls) * nll.sum() / denom + ls / c * smooth.sum() / denom


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_class_indices(reduction, weighted, ls):
    x = RNG.standard_normal((5, 4))
    t = np.array([0, 3, -100, 1, 3])
    w = RNG.random(4) + 0.5 if weighted else None
    out = F.cross_entropy(T(x), cr.tensor(t), weight=None if w is None else T(w),
                          reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(out.numpy(), np_cross_entropy(x, t, w, -100, reduction, ls),
                               rtol=1e-12)
    assert gradcheck(lambda a: F.cross_entropy(a, cr.tensor(t), weight=None if w is None
                                               else T(w), reduction=reduction,
                                               label_smoothing=ls), (T(x, True),))


def test_cross_entropy_fast_path_and_spatial():
    x = RNG.standard_normal((4, 3))
    t = np.array([2, 0, 1, 1])
    np.testing.assert_allclose(F.cross_entropy(T(x), cr.tensor(t)).item(),
                               np_cross_entropy(x, t), rtol=1e-12)
    x4 = RNG.standard_normal((2, 3, 2, 2))
    t4 = RNG.integers(0, 3, (2, 2, 2))
    flat = np.moveaxis(x4, 1, -1).reshape(-1, 3)
    np.testing.assert_allclose(F.cross_entropy(T(x4), cr.tensor(t4), label_smoothing=0.1).item(),
                               np_cross_entropy(flat, t4.ravel(), ls=0.1), rtol=1e-12)
    # 1-D input with a 0-D target (one sample)
    np.testing.assert_allclose(F.cross_entropy(T(x[0]), cr.tensor(2)).item(),
                               -np_log_softmax(x[:1])[0, 2], rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probabilities(reduction):
    x = RNG.standard_normal((3, 4))
    p = RNG.random((3, 4))
    p /= p.sum(1, keepdims=True)
    w = RNG.random(4) + 0.5
    ls = 0.3
    q = p * (1 - ls) + ls / 4
    per = -(np_log_softmax(x) * w * q).sum(1)
    expected = {"mean": per.sum() / 3, "sum": per.sum(), "none": per}[reduction]
    out = F.cross_entropy(T(x), T(p), weight=T(w), reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    assert gradcheck(lambda a, b: F.cross_entropy(a, b, reduction=reduction),
                     (T(x, True), T(p, True)))


def test_cross_entropy_errors():
    x = T(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"cross_entropy: Expected input batch_size \(3\) to "
                                         r"match target batch_size \(2\)"):
        F.cross_entropy(x, cr.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"cross_entropy: probability target of shape "
                                           r"\[3, 5\] does not match input of shape \[3, 4\]"):
        F.cross_entropy(x, T(np.zeros((3, 5))))
    with pytest.raises(IndexError, match="cross_entropy: Target 7 is out of bounds"):
        F.cross_entropy(x, cr.tensor([1, 7, 0]), label_smoothing=0.1)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point"):
        F.cross_entropy(x, T(np.zeros((3, 4))), ignore_index=1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    lp = np_log_softmax(RNG.standard_normal((4, 3)))
    t = np.array([2, -100, 0, 2])
    w = np.array([0.5, 1.0, 2.0])
    keep = t != -100
    picked = np.array([lp[i, t[i]] if keep[i] else 0.0 for i in range(4)])
    wt = np.where(keep, w[np.where(keep, t, 0)], 0.0)
    per = -wt * picked
    expected = {"mean": per.sum() / wt.sum(), "sum": per.sum(), "none": per}[reduction]
    out = F.nll_loss(T(lp), cr.tensor(t), weight=T(w), reduction=reduction)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    assert gradcheck(lambda a: F.nll_loss(a, cr.tensor(t), reduction=reduction), (T(lp, True),))


def test_nll_loss_errors():
    with pytest.raises(IndexError, match="nll_loss: Target 3 is out of bounds"):
        F.nll_loss(T(np.zeros((2, 3))), cr.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="nll_loss: weight tensor should be defined either "
                                           "for all 3 classes"):
        F.nll_loss(T(np.zeros((2, 3))), cr.tensor([0, 1]), weight=T([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="expected input of an integer dtype|expected target "
                                           "of an integer dtype"):
        F.nll_loss(T(np.zeros((2, 3))), T([0.0, 1.0]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction):
    p = RNG.uniform(0.05, 0.95, (3, 4))
    t = RNG.random((3, 4))
    w = RNG.random(4)
    per = -w * (t * np.log(p) + (1 - t) * np.log(1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy(T(p), T(t), T(w), reduction=reduction)
                               .numpy(), _red(per, reduction), rtol=1e-12)
    x = RNG.standard_normal((3, 4)) * 3
    pw = RNG.random(4) + 0.5
    s = sigmoid(x)
    per = -w * (pw * t * np.log(s) + (1 - t) * np.log(1 - s))
    out = F.binary_cross_entropy_with_logits(T(x), T(t), T(w), reduction=reduction,
                                             pos_weight=T(pw))
    np.testing.assert_allclose(out.numpy(), _red(per, reduction), rtol=1e-10)
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
                     (T(p, True), T(t, True)))
    assert gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(
        a, b, reduction=reduction, pos_weight=T(pw)), (T(x, True), T(t, True)))


def test_binary_cross_entropy_edges_and_errors():
    # log clamped at -100: p = 0 with t = 1 costs 100, not inf
    assert F.binary_cross_entropy(T([0.0]), T([1.0])).item() == 100.0
    assert np.isfinite(F.binary_cross_entropy_with_logits(T([-1000.0]), T([1.0])).item())
    with pytest.raises(ValueError, match=r"binary_cross_entropy: Using a target size \(\[2\]\) "
                                         r"that is different to the input size \(\[3\]\)"):
        F.binary_cross_entropy(T([0.5] * 3), T([0.5] * 2))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(T([1.5]), T([1.0]))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(T([0.5, np.nan]), T([1.0, 0.0]))  # nan is not in [0, 1]
    with pytest.raises(ValueError, match=r"Target size \(\[2\]\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(T([0.5] * 3), T([0.5] * 2))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    lp = np_log_softmax(RNG.standard_normal((3, 4)))
    q = np_softmax(RNG.standard_normal((3, 4)), 1)
    if log_target:
        tgt = np.log(q)
        per = q * (tgt - lp)
    else:
        q[0, 1] = 0.0  # 0 log 0 = 0
        tgt = q
        per = np.where(q > 0, q * np.log(np.where(q > 0, q, 1)), 0) - q * lp
    expected = per.sum() / 3 if reduction == "batchmean" else _red(per, reduction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.kl_div(T(lp), T(tgt), reduction=reduction, log_target=log_target)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    if not log_target:
        assert gradcheck(lambda a: F.kl_div(a, T(tgt), reduction="batchmean"), (T(lp, True),))


def test_poisson_and_gaussian_nll():
    x = RNG.standard_normal((3, 4))
    k = RNG.poisson(3, (3, 4)).astype(float)
    full = np.where(k > 1, k * np.log(np.maximum(k, 1)) - k + 0.5 * np.log(2 * np.pi
                                                                            * np.maximum(k, 1)),
                    0)
    np.testing.assert_allclose(F.poisson_nll_loss(T(x), T(k), full=True).item(),
                               (np.exp(x) - k * x + full).mean(), rtol=1e-12)
    r = RNG.uniform(0.5, 2, (3, 4))
    np.testing.assert_allclose(F.poisson_nll_loss(T(r), T(k), log_input=False,
                                                  reduction="sum").item(),
                               (r - k * np.log(r + 1e-8)).sum(), rtol=1e-12)
    assert gradcheck(lambda a: F.poisson_nll_loss(a, T(k)), (T(x, True),))
    y, v = RNG.standard_normal((3, 4)), RNG.uniform(0.5, 2, (3, 4))
    per = 0.5 * (np.log(v) + (x - y) ** 2 / v) + 0.5 * np.log(2 * np.pi)
    np.testing.assert_allclose(F.gaussian_nll_loss(T(x), T(y), T(v), full=True).item(),
                               per.mean(), rtol=1e-12)
    homo = F.gaussian_nll_loss(T(x), T(y), T(v[:, 0]), reduction="none")
    np.testing.assert_allclose(homo.numpy(), 0.5 * (np.log(v[:, :1]) + (x - y) ** 2 / v[:, :1]),
                               rtol=1e-12)
    assert gradcheck(F.gaussian_nll_loss, (T(x, True), T(y, True), T(v, True)))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(T(x), T(y), T(-v))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(T(x), T(y), T(v[:2]))


def test_margin_hinge_triplet_cosine_losses():
    a, b = RNG.standard_normal(6), RNG.standard_normal(6)
    y = np.array([1, -1, 1, 1, -1, -1.0])
    np.testing.assert_allclose(F.margin_ranking_loss(T(a), T(b), T(y), margin=0.2).item(),
                               np.maximum(0, -y * (a - b) + 0.2).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.hinge_embedding_loss(T(a), T(y), margin=0.5,
                                                      reduction="none").numpy(),
                               np.where(y == 1, a, np.maximum(0, 0.5 - a)), rtol=1e-12)
    A, P, N = (RNG.standard_normal((4, 3)) for _ in range(3))
    dap = np.linalg.norm(A - P + 1e-6, axis=1)
    dan = np.linalg.norm(A - N + 1e-6, axis=1)
    dpn = np.linalg.norm(P - N + 1e-6, axis=1)
    np.testing.assert_allclose(F.triplet_margin_loss(T(A), T(P), T(N)).item(),
                               np.maximum(dap - dan + 1, 0).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.triplet_margin_loss(T(A), T(P), T(N), swap=True,
                                                     reduction="sum").item(),
                               np.maximum(dap - np.minimum(dan, dpn) + 1, 0).sum(), rtol=1e-12)
    y4 = np.array([1, -1, -1, 1.0])
    cos = (A * P).sum(1) / np.sqrt(((A * A).sum(1) + 1e-12) * ((P * P).sum(1) + 1e-12))
    np.testing.assert_allclose(F.cosine_embedding_loss(T(A), T(P), T(y4), margin=-0.5).item(),
                               np.where(y4 == 1, 1 - cos, np.maximum(0, cos + 0.5)).mean(),
                               rtol=1e-12)
    assert gradcheck(lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=5.0),
                     (T(A, True), T(P, True), T(N, True)))
    assert gradcheck(lambda a, p: F.cosine_embedding_loss(a, p, T(y4), margin=-2.0),
                     (T(A, True), T(P, True)))
    with pytest.raises(RuntimeError, match="margin_ranking_loss : |margin_ranking_loss: All "
                                           "input tensors should have same dimension"):
        F.margin_ranking_loss(T(a), T(b), T([[1.0]]))
    with pytest.raises(RuntimeError, match="anchor 2D, positive 2D, and negative 1D"):
        F.triplet_margin_loss(T(A), T(P), T(N[0]))


# --- linear, bilinear, attention ---------------------------------------------------------

def test_linear_and_bilinear():
    x, W, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    np.testing.assert_allclose(F.linear(T(x), T(W), T(b)).numpy(), x @ W.T + b, rtol=1e-12)
    assert gradcheck(F.linear, (T(x, True), T(W, True), T(b, True)))
    with pytest.raises(RuntimeError, match=r"linear: mat1 and mat2 shapes cannot be multiplied "
                                           r"\(6x4 and 3x5\)"):
        F.linear(T(x), T(W[:, :3]))
    x1, x2 = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 4))
    A = RNG.standard_normal((5, 2, 4))
    expected = np.stack([np.einsum("ni,ij,nj->n", x1, A[k], x2) for k in range(5)], 1) + b
    np.testing.assert_allclose(F.bilinear(T(x1), T(x2), T(A), T(b)).numpy(), expected,
                               rtol=1e-12)
    assert gradcheck(F.bilinear, (T(x1, True), T(x2, True), T(A, True)))


def np_attention(q, k, v, bias, scale):
    s = q @ np.swapaxes(k, -1, -2) * scale + bias
    return np_softmax(s, -1) @ v


def test_scaled_dot_product_attention():
    q, k, v = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 4, 5)), \
        RNG.standard_normal((2, 4, 6))
    out = F.scaled_dot_product_attention(T(q), T(k), T(v))
    np.testing.assert_allclose(out.numpy(), np_attention(q, k, v, 0.0, 1 / np.sqrt(5)),
                               rtol=1e-12)
    mask = np.array([[True, False, True, True], [True, True, False, False],
                     [False, True, True, True]])
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=cr.tensor(mask), scale=0.5)
    np.testing.assert_allclose(out.numpy(), np_attention(q, k, v, np.where(mask, 0, -np.inf),
                                                         0.5), rtol=1e-12)
    causal = np.where(np.tril(np.ones((3, 4), bool)), 0, -np.inf)
    out = F.scaled_dot_product_attention(T(q), T(k), T(v), is_causal=True)
    np.testing.assert_allclose(out.numpy(), np_attention(q, k, v, causal, 1 / np.sqrt(5)),
                               rtol=1e-12)
    fbias = RNG.standard_normal((3, 4))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=T(fbias)),
                     (T(q, True), T(k, True), T(v, True)))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when "
                                           "is_causal=True"):
        F.scaled_dot_product_attention(T(q), T(k), T(v), attn_mask=cr.tensor(mask),
                                       is_causal=True)


# --- against torch -----------------------------------------------------------------------

def _both(torch, arrays, grad=True):
    ours = [T(a, grad) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=grad) for a in arrays]
    return ours, theirs


def _compare(torch, ours_fn, torch_fn, arrays, rtol=1e-10, atol=1e-12, grad_rtol=None):
    ours, theirs = _both(torch, arrays)
    a, b = ours_fn(*ours), torch_fn(*theirs)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
    seed = RNG.standard_normal(tuple(a.shape))
    a.backward(T(seed))
    b.backward(torch.tensor(seed))
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=grad_rtol or rtol,
                                   atol=atol)


TORCH_ACTIVATIONS = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "gelu", "silu",
                     "mish", "softplus", "softsign", "hardtanh", "hardswish", "hardsigmoid",
                     "logsigmoid", "tanhshrink"]


@pytest.mark.parametrize("name", TORCH_ACTIVATIONS)
def test_activation_against_torch(name):
    x = away_from_kinks((4, 5), (0, 6, -3, 3, -1, 1), scale=4.0)
    ours = getattr(F, name)(T(x))
    assert ours.shape == (4, 5)  # and the NumPy reference above covers the values
    torch = _torch()
    if torch is None:
        return
    # torch's hardsigmoid backward multiplies by 1/6 rounded to float32
    _compare(torch, getattr(F, name), getattr(torch.nn.functional, name), [x],
             grad_rtol=1e-7 if name == "hardsigmoid" else None)
    _compare(torch, lambda t: F.gelu(t, approximate="tanh"),
             lambda t: torch.nn.functional.gelu(t, approximate="tanh"), [x])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_against_torch(reduction):
    x, y = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    t = np.array([1, 0, 4, -100])
    w = RNG.random(5) + 0.1
    p = RNG.uniform(0.05, 0.95, (4, 5))
    pt = np_softmax(RNG.standard_normal((4, 5)), 1)
    v = RNG.uniform(0.5, 2.0, (4, 5))
    sgn = np.sign(RNG.standard_normal(4))
    assert F.mse_loss(T(x), T(y), reduction=reduction).shape == ((4, 5) if reduction == "none"
                                                                  else ())
    torch = _torch()
    if torch is None:
        return
    TF = torch.nn.functional
    r = {"reduction": reduction}
    cases = [
        (lambda a, b: F.mse_loss(a, b, **r), lambda a, b: TF.mse_loss(a, b, **r), [x, y]),
        (lambda a, b: F.l1_loss(a, b, **r), lambda a, b: TF.l1_loss(a, b, **r), [x, y]),
        (lambda a, b: F.smooth_l1_loss(a, b, beta=0.7, **r),
         lambda a, b: TF.smooth_l1_loss(a, b, beta=0.7, **r), [x, y]),
        (lambda a, b: F.huber_loss(a, b, delta=0.7, **r),
         lambda a, b: TF.huber_loss(a, b, delta=0.7, **r), [x, y]),
        (lambda a: F.cross_entropy(a, cr.tensor(t), T(w), label_smoothing=0.1, **r),
         lambda a: TF.cross_entropy(a, torch.tensor(t), torch.tensor(w), label_smoothing=0.1,
                                    **r), [x]),
        (lambda a: F.cross_entropy(a, cr.tensor(t), **r),
         lambda a: TF.cross_entropy(a, torch.tensor(t), **r), [x]),
        (lambda a, b: F.cross_entropy(a, b, label_smoothing=0.2, **r),
         lambda a, b: TF.cross_entropy(a, b, label_smoothing=0.2, **r), [x, pt]),
        (lambda a: F.nll_loss(F.log_softmax(a, 1), cr.tensor(t), T(w), **r),
         lambda a: TF.nll_loss(TF.log_softmax(a, 1), torch.tensor(t), torch.tensor(w), **r),
         [x]),
        (lambda a, b: F.binary_cross_entropy(a, b, T(w), **r),
         lambda a, b: TF.binary_cross_entropy(a, b, torch.tensor(w), **r), [p, pt]),
        (lambda a, b: F.binary_cross_entropy_with_logits(a, b, T(w), pos_weight=T(w), **r),
         lambda a, b: TF.binary_cross_entropy_with_logits(a, b, torch.tensor(w),
                                                          pos_weight=torch.tensor(w), **r),
         [x, pt]),
        (lambda a, b: F.kl_div(F.log_softmax(a, 1), b, **r),
         lambda a, b: TF.kl_div(TF.log_softmax(a, 1), b, **r), [x, pt]),
        (lambda a, b: F.kl_div(a, b, log_target=True, **r),
         lambda a, b: TF.kl_div(a, b, log_target=True, **r), [x, y]),
        (lambda a, b: F.poisson_nll_loss(a, b, full=True, **r),
         lambda a, b: TF.poisson_nll_loss(a, b, full=True, **r), [x, v * 2]),
        (lambda a, b, c: F.gaussian_nll_loss(a, b, c, full=True, **r),
         lambda a, b, c: TF.gaussian_nll_loss(a, b, c, full=True, **r), [x, y, v]),
        (lambda a, b: F.margin_ranking_loss(a, b, T(sgn), margin=0.1, **r),
         lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(sgn), margin=0.1, **r),
         [x[:, 0], y[:, 0]]),
        (lambda a: F.hinge_embedding_loss(a, T(np.sign(y)), margin=0.5, **r),
         lambda a: TF.hinge_embedding_loss(a, torch.tensor(np.sign(y)), margin=0.5, **r), [x]),
        (lambda a, b, c: F.triplet_margin_loss(a, b, c, swap=True, margin=3.0, **r),
         lambda a, b, c: TF.triplet_margin_loss(a, b, c, swap=True, margin=3.0, **r),
         [x, y, v]),
        (lambda a, b: F.cosine_embedding_loss(a, b, T(sgn), margin=-0.9, **r),
         lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(sgn), margin=-0.9, **r),
         [x, y]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ours, theirs, arrays in cases:
            _compare(torch, ours, theirs, arrays)


def test_layers_and_misc_against_torch():
    x = RNG.standard_normal((4, 6, 3))
    w6 = RNG.standard_normal(6)
    out = F.group_norm(T(x), 3, T(w6))
    assert out.shape == x.shape
    torch = _torch()
    if torch is None:
        return
    TF = torch.nn.functional
    _compare(torch, lambda a, w: F.group_norm(a, 3, w), lambda a, w: TF.group_norm(a, 3, w),
             [x, w6])
    _compare(torch, lambda a, w, b: F.layer_norm(a, (6, 3), w, b),
             lambda a, w, b: TF.layer_norm(a, (6, 3), w, b), [x, x[0], x[1]])
    _compare(torch, lambda a, w: F.batch_norm(a, None, None, w, None, True),
             lambda a, w: TF.batch_norm(a, None, None, w, None, True), [x, w6])
    for mode in ("constant", "reflect", "replicate", "circular"):
        _compare(torch, lambda a, m=mode: F.pad(a, (2, 1, 1, 0), mode=m),
                 lambda a, m=mode: TF.pad(a, (2, 1, 1, 0), mode=m), [x])
    _compare(torch, lambda a, b: F.cosine_similarity(a, b, dim=2),
             lambda a, b: TF.cosine_similarity(a, b, dim=2), [x, x[::-1].copy()])
    _compare(torch, F.normalize, TF.normalize, [x])
    _compare(torch, F.pdist, TF.pdist, [x[0]])
    _compare(torch, lambda a, b: F.pairwise_distance(a, b, p=3),
             lambda a, b: TF.pairwise_distance(a, b, p=3), [x[0], x[1]])
    _compare(torch, lambda a, b: F.softmax(a, 1) + F.log_softmax(b, 0) + F.softmin(a, 2),
             lambda a, b: TF.softmax(a, 1) + TF.log_softmax(b, 0) + TF.softmin(a, 2), [x, x])
    q, k, v = (RNG.standard_normal((2, 2, 4, 3)) for _ in range(3))
    mask = RNG.random((4, 4)) > 0.4
    np.fill_diagonal(mask, True)
    _compare(torch, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, cr.tensor(mask)),
             lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, torch.tensor(mask)),
             [q, k, v])
    _compare(torch, lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
             lambda a, b, c: TF.scaled_dot_product_attention(a, b, c, is_causal=True),
             [q, k, v])
    x1, x2, A = RNG.standard_normal((3, 2)), RNG.standard_normal((3, 4)), \
        RNG.standard_normal((5, 2, 4))
    _compare(torch, F.bilinear, TF.bilinear, [x1, x2, A])
    E = RNG.standard_normal((6, 3))
    idx = np.array([[1, 2, 1], [0, 5, 1]])
    _compare(torch, lambda e: F.embedding(cr.tensor(idx), e, padding_idx=1),
             lambda e: TF.embedding(torch.tensor(idx), e, padding_idx=1), [E])
    rm, rv = cr.zeros(6, dtype=cr.float64), cr.ones(6, dtype=cr.float64)
    trm, trv = torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)
    F.batch_norm(T(x), rm, rv, training=True, momentum=0.3)
    TF.batch_norm(torch.tensor(x), trm, trv, training=True, momentum=0.3)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-12)
    assert F.one_hot(cr.tensor([3, 0])).tolist() == TF.one_hot(torch.tensor([3, 0])).tolist()


def test_binary_cross_entropy_gradient_at_saturated_probabilities():
    # PyTorch's backward: grad (x - t) / max(x (1 - x), 1e-12); a prediction of exactly 0 or
    # 1 (sigmoid(20) in float32) gets a finite gradient, 0 when it is right (was NaN)
    x = T([1.0, 0.0, 1.0, 0.25])
    x.requires_grad_(True)
    t = T([1.0, 0.0, 0.0, 1.0])
    F.binary_cross_entropy(x, t, reduction="sum").backward()
    eps = float(np.float32(1e-12))  # PyTorch's floor, a C float
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 0.0, 1 / eps, (0.25 - 1) / (0.25 * 0.75)],
                               rtol=1e-15)
    w = cr.tensor(20.0, dtype=cr.float32, requires_grad=True)
    F.binary_cross_entropy(w.sigmoid(), cr.tensor(1.0, dtype=cr.float32)).backward()
    assert w.grad.item() == 0.0 and w.grad.dtype == cr.float32
    torch = _torch()
    if torch is not None:
        tx = torch.tensor([1.0, 0.0, 1.0, 0.25], dtype=torch.float64, requires_grad=True)
        torch.nn.functional.binary_cross_entropy(
            tx, torch.tensor(t.numpy()), reduction="sum").backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)


INPLACE_CASES = {
    "relu": (lambda h: F.relu(h, inplace=True), lambda v: np.maximum(v, 0), lambda v: v > 0),
    "relu_": (lambda h: F.relu_(h), lambda v: np.maximum(v, 0), lambda v: v > 0),
    "leaky_relu": (lambda h: F.leaky_relu(h, 0.2, True), lambda v: np.where(v > 0, v, 0.2 * v),
                   lambda v: np.where(v > 0, 1.0, 0.2)),
    "hardtanh": (lambda h: F.hardtanh(h, -0.5, 0.5, True), lambda v: np.clip(v, -0.5, 0.5),
                 lambda v: (v > -0.5) & (v < 0.5)),
    "ReLU": (lambda h: cr.nn.ReLU(inplace=True)(h), lambda v: np.maximum(v, 0),
             lambda v: v > 0),
    "Threshold": (lambda h: cr.nn.Threshold(0.1, 20.0, inplace=True)(h),
                  lambda v: np.where(v > 0.1, v, 20.0), lambda v: v > 0.1),
    "Dropout_eval": (lambda h: cr.nn.Dropout(0.3, inplace=True).eval()(h), lambda v: v,
                     lambda v: np.ones_like(v)),
}


@pytest.mark.parametrize("name", sorted(INPLACE_CASES))
def test_inplace_true_updates_the_input_and_its_history(name):
    # h = 1.5 x is replaced by f(h); (h * h).sum() then has gradient 2 f(h) f'(h) 1.5 in x
    fn, f, df = INPLACE_CASES[name]
    values = np.array([-1.0, 2.0, 0.5, -0.25])
    x = cr.tensor(values, requires_grad=True)
    h = x * 1.5
    assert fn(h) is h
    v = 1.5 * values
    np.testing.assert_allclose(h.detach().numpy(), f(v), rtol=1e-15)
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * f(v) * df(v) * 1.5, rtol=1e-15)
    leaf = cr.tensor(values, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(leaf)
    np.testing.assert_array_equal(leaf.detach().numpy(), values)  # left as it was
    torch = _torch()
    if torch is not None:
        tx = torch.tensor(values, requires_grad=True)
        th = tx * 1.5
        tfn = {"relu": lambda t: torch.nn.functional.relu(t, inplace=True),
               "relu_": torch.nn.functional.relu_,
               "leaky_relu": lambda t: torch.nn.functional.leaky_relu(t, 0.2, True),
               "hardtanh": lambda t: torch.nn.functional.hardtanh(t, -0.5, 0.5, True),
               "ReLU": torch.nn.ReLU(inplace=True),
               "Threshold": torch.nn.Threshold(0.1, 20.0, inplace=True),
               "Dropout_eval": torch.nn.Dropout(0.3, inplace=True).eval()}[name]
        tfn(th)
        (th * th).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-15)
