"""``nn.AdaptiveLogSoftmaxWithLoss`` and ``nn.CrossMapLRN2d``: values derived by hand
(log_prob rows are distributions, the loss is -mean(log_prob[target]), the head/tail
structure; CrossMapLRN2d's channel windows) and, where PyTorch is importable, PyTorch's
outputs, gradients, state-dict keys, reprs and errors."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn.modules_extra import _cross_map_windows

try:
    import torch
except ImportError:
    torch = None


def _asm(seed=0, **kw):
    cr.manual_seed(seed)
    return nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 9, 15], div_value=2.0, **kw)


def test_asm_structure_and_names():
    m = _asm(head_bias=True)
    assert list(m.state_dict()) == ["head.weight", "head.bias", "tail.0.0.weight",
                                    "tail.0.1.weight", "tail.1.0.weight", "tail.1.1.weight",
                                    "tail.2.0.weight", "tail.2.1.weight"]
    assert m.cutoffs == [4, 9, 15, 20] and m.shortlist_size == 4 and m.n_clusters == 3
    assert tuple(m.head.weight.shape) == (7, 8)
    # hidden sizes 8 // 2, 8 // 4, 8 // 8; output sizes the cluster sizes
    assert [tuple(s[0].weight.shape) for s in m.tail] == [(4, 8), (2, 8), (1, 8)]
    assert [tuple(s[1].weight.shape) for s in m.tail] == [(5, 4), (6, 2), (5, 1)]
    assert _asm().head.bias is None
    assert repr(m).startswith("AdaptiveLogSoftmaxWithLoss(\n  (head): Linear(in_features=8, "
                              "out_features=7, bias=True)\n  (tail): ModuleList(")


def test_asm_log_prob_is_a_distribution_and_the_loss_its_mean():
    m = _asm(head_bias=True)
    rng = np.random.default_rng(0)
    x = cr.tensor(rng.standard_normal((12, 8)))
    target = np.array([0, 3, 4, 8, 9, 14, 15, 19, 2, 10, 16, 5])
    lp = m.log_prob(x).detach().numpy()
    assert lp.shape == (12, 20)
    np.testing.assert_allclose(np.exp(lp).sum(axis=1), 1.0, atol=1e-12)
    out = m(x, cr.tensor(target))
    assert type(out).__name__ == "_ASMoutput" and out._fields == ("output", "loss")
    np.testing.assert_allclose(out.output.detach().numpy(), lp[np.arange(12), target],
                               atol=1e-12)
    np.testing.assert_allclose(out.loss.item(), -lp[np.arange(12), target].mean(), atol=1e-12)
    # a cluster's class: head log-prob of the cluster + log-prob within the cluster
    head = m.head(x).detach().numpy()
    head_lp = head - np.log(np.exp(head).sum(axis=1, keepdims=True))
    tail = m.tail[1](x).detach().numpy()
    tail_lp = tail - np.log(np.exp(tail).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(lp[:, 9:15], head_lp[:, 5:6] + tail_lp, atol=1e-12)
    np.testing.assert_allclose(lp[:, :4], head_lp[:, :4], atol=1e-12)
    # unbatched
    one = m(x[3], cr.tensor(target[3]))
    assert one.output.shape == () and np.isclose(one.output.item(), lp[3, target[3]])


def test_asm_gradient_and_predict():
    m = _asm(head_bias=True)
    x = cr.tensor(np.random.default_rng(1).standard_normal((6, 8)), requires_grad=True)
    target = cr.tensor([0, 5, 12, 19, 3, 16])
    m(x, target).loss.backward()
    assert all(p.grad is not None for p in m.parameters())
    assert cr.autograd.gradcheck(lambda x: m(x, target).output, (x.detach().requires_grad_(),))
    # predict is the argmax of log_prob, on rows in and out of the shortlist
    with cr.no_grad():
        m.head.bias.copy_(cr.tensor([0.0, 0, 0, 0, 3.0, 0, 0]))
    xs = cr.tensor(np.random.default_rng(2).standard_normal((30, 8)) * 3)
    lp = m.log_prob(xs).detach().numpy()
    pred = m.predict(xs).numpy()
    assert np.array_equal(pred, lp.argmax(axis=1))
    assert (pred < 4).any() and (pred >= 4).any()


def test_asm_errors():
    for bad in ([], [4, 4], [0, 3], [5, 20], [3, 2], [2.5]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            nn.AdaptiveLogSoftmaxWithLoss(8, 20, bad)
    m = _asm()
    x = cr.randn(3, 8)
    with pytest.raises(RuntimeError, match="Input and target should have the same size"):
        m(x, cr.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 19\], but "
                                           r"values in range \[-1, 25\] were found. "):
        m(x, cr.tensor([-1, 2, 25]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        m(x, cr.tensor([[1], [2], [3]]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        m(x, cr.tensor(1))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        m(cr.randn(3, 2, 8), cr.tensor([1, 2, 3]))


def _np_log_softmax(a):
    return a - a.max(1, keepdims=True) - np.log(np.exp(a - a.max(1, keepdims=True))
                                                  .sum(1, keepdims=True))


def _np_asm_log_prob(m, x):
    """log_prob by its definition from the module's weights: the shortlist's log-probs are
    the head's; a class of cluster i has the head's log-prob of cluster i plus its
    log-prob within the cluster (the tail: two bias-free projections)."""
    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    head = x @ sd["head.weight"].T + sd.get("head.bias", 0.0)
    head_lp = _np_log_softmax(head)
    short = m.shortlist_size
    out = np.empty((x.shape[0], m.cutoffs[-1]))
    out[:, :short] = head_lp[:, :short]
    for i, (lo, hi) in enumerate(zip(m.cutoffs[:-1], m.cutoffs[1:])):
        tail = x @ sd[f"tail.{i}.0.weight"].T @ sd[f"tail.{i}.1.weight"].T
        out[:, lo:hi] = head_lp[:, short + i:short + i + 1] + _np_log_softmax(tail)
    return out


def test_asm_against_its_definition_and_torch():
    cm = _asm(head_bias=True)
    with cr.no_grad():
        cm.head.bias.copy_(cr.tensor([0.0, 0, 0, 0, 2.0, 1.0, 0]))
    if torch is not None:  # PyTorch's initial weights, by name
        torch.manual_seed(0)
        tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 9, 15], div_value=2.0,
                                                 head_bias=True, dtype=torch.float64)
        with torch.no_grad():
            tm.head.bias.copy_(torch.tensor([0.0, 0, 0, 0, 2.0, 1.0, 0]))
        assert list(tm.state_dict()) == list(cm.state_dict())
        cm.load_state_dict({k: cr.tensor(v.numpy()) for k, v in tm.state_dict().items()})
        assert repr(tm) == repr(cm)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((25, 8)) * 2
    y = rng.integers(0, 20, size=25)
    xc = cr.tensor(x, requires_grad=True)
    oc = cm(xc, cr.tensor(y))
    # without torch: the definition, and finite differences for every gradient
    lp = _np_asm_log_prob(cm, x)
    np.testing.assert_allclose(cm.log_prob(xc).detach().numpy(), lp, atol=1e-12)
    np.testing.assert_allclose(oc.output.detach().numpy(), lp[np.arange(25), y], atol=1e-12)
    np.testing.assert_allclose(oc.loss.item(), -lp[np.arange(25), y].mean(), atol=1e-12)
    pred = cm.predict(xc).numpy()
    assert np.array_equal(pred, lp.argmax(1)) and (pred >= 4).any() and (pred < 4).any()
    names = [n for n, _ in cm.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in cm.parameters()]
    yc = cr.tensor(y)
    assert cr.autograd.gradcheck(
        lambda x, *ps: nn.functional_call(cm, dict(zip(names, ps)), (x, yc)).loss,
        (xc.detach().requires_grad_(), *params), fast_mode=True)
    o1c = cm(xc[4], cr.tensor(y[4]))
    assert o1c.output.shape == ()
    np.testing.assert_allclose(o1c.output.item(), lp[4, y[4]], atol=1e-12)
    if torch is None:
        return
    xt = torch.tensor(x, requires_grad=True)
    ot = tm(xt, torch.tensor(y))
    np.testing.assert_allclose(oc.output.detach().numpy(), ot.output.detach().numpy(),
                               atol=1e-10)
    np.testing.assert_allclose(oc.loss.item(), ot.loss.item(), atol=1e-10)
    ot.loss.backward()
    oc.loss.backward()
    np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    for (name, pt), pc in zip(tm.named_parameters(), cm.parameters()):
        np.testing.assert_allclose(pc.grad.numpy(), pt.grad.numpy(), atol=1e-10, err_msg=name)
    np.testing.assert_allclose(cm.log_prob(xc).detach().numpy(),
                               tm.log_prob(xt).detach().numpy(), atol=1e-10)
    assert np.array_equal(pred, tm.predict(xt).numpy())
    o1t = tm(xt[4], torch.tensor(y[4]))
    assert o1c.output.shape == tuple(o1t.output.shape) == ()
    np.testing.assert_allclose(o1c.output.item(), o1t.output.item(), atol=1e-10)


# --- CrossMapLRN2d ----------------------------------------------------------------------


def test_cross_map_windows_as_torch_loop_takes_them():
    # size 3: pre_pad 2, channel c sums c - 1 .. c + 1 and channel 0 (never dropped)
    w = _cross_map_windows(5, 3)
    assert np.array_equal(w, [[1, 1, 0, 0, 0],
                              [1, 1, 1, 0, 0],
                              [1, 1, 1, 1, 0],
                              [1, 0, 1, 1, 1],
                              [1, 0, 0, 1, 1]])
    assert np.array_equal(_cross_map_windows(3, 1), [[1, 0, 0], [1, 1, 0], [1, 0, 1]])


def test_cross_map_lrn2d_by_hand():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 3, 4))
    m = nn.CrossMapLRN2d(3, alpha=0.6, beta=0.7, k=1.5)
    assert repr(m) == "CrossMapLRN2d(3, alpha=0.6, beta=0.7, k=1.5)"
    y = m(cr.tensor(x)).detach().numpy()
    scale = 1.5 + 0.6 / 3 * np.einsum("cj,njhw->nchw", _cross_map_windows(5, 3), x * x)
    np.testing.assert_allclose(y, x * scale ** -0.7, atol=1e-13)
    one = nn.CrossMapLRN2d(2)(cr.tensor(x[:, :1])).detach().numpy()
    np.testing.assert_allclose(one, x[:, :1] / (1 + 1e-4 / 2 * x[:, :1] ** 2) ** 0.75,
                               atol=1e-14)
    xg = cr.tensor(rng.standard_normal((1, 4, 2, 2)), requires_grad=True)
    assert cr.autograd.gradcheck(nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0), (xg,))
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D "
                                         "instead."):
        m(cr.randn(5, 3, 4))


def _np_windows(channels, size):
    """Which channels' squares each channel's scale sums, by the running-sum recurrence of
    PyTorch's (and Lua Torch's) SpatialCrossMapLRN: channel 0 sums channels < pre_pad;
    channel c starts from channel c - 1's sum, adds channel c + pre_pad - 1 while
    c < channels - pre_pad + 1 and drops channel c - pre_pad while c > pre_pad."""
    pre_pad = int((size - 1) / 2 + 1)
    w = np.zeros((channels, channels), dtype=int)
    w[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        w[c] = w[c - 1]
        if c < channels - pre_pad + 1:
            w[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            w[c, c - pre_pad] -= 1
    return w


def test_cross_map_lrn2d_configs_by_hand_and_torch():
    rng = np.random.default_rng(5)
    count = 0
    for size in (1, 2, 3, 4, 5, 7):
        for channels in (1, 2, 3, 6, 9):
            x = rng.standard_normal((2, channels, 3, 2))
            w = _np_windows(channels, size)
            assert np.array_equal(_cross_map_windows(channels, size), w)
            for alpha, beta, k in ((1e-4, 0.75, 1), (0.7, 0.5, 2.0), (2.0, 1.3, 0.5)):
                yc = nn.CrossMapLRN2d(size, alpha, beta, k)(cr.tensor(x))
                # without torch: x * (k + alpha / size * window sums of x^2) ** -beta
                scale = k + alpha / size * np.einsum("cj,njhw->nchw", w, x * x)
                np.testing.assert_allclose(yc.numpy(), x * scale ** -beta, atol=1e-12)
                if torch is not None:
                    yt = torch.nn.CrossMapLRN2d(size, alpha, beta, k)(torch.tensor(x))
                    np.testing.assert_allclose(yc.numpy(), yt.numpy(), atol=1e-10)
                count += 1
    assert count == 90
    assert repr(nn.CrossMapLRN2d(3)) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    # one channel: the gradient is the derivative of the forward (finite differences)
    x = rng.standard_normal((2, 1, 3, 3))
    xc = cr.tensor(x, requires_grad=True)
    lrn = nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)
    assert cr.autograd.gradcheck(lambda t: lrn(t).square().sum(), (xc,))
    lrn(xc).square().sum().backward()
    if torch is not None:
        assert repr(torch.nn.CrossMapLRN2d(3)) == repr(nn.CrossMapLRN2d(3))
        # PyTorch's hand-written backward is the derivative of its forward for one channel
        xt = torch.tensor(x, requires_grad=True)
        torch.nn.CrossMapLRN2d(3, 0.5, 0.75, 1.0)(xt).square().sum().backward()
        np.testing.assert_allclose(xc.grad.numpy(), xt.grad.numpy(), atol=1e-10)
