"""nn modules_more (activations, dropouts, losses, padding, pixel shuffle), the new
functionals (dropout1d, pixel_shuffle, pixel_unshuffle), nn.utils.rnn and PackedSequence
through RNN/LSTM/GRU: NumPy or hand-computed references, gradcheck, and PyTorch when
installed."""

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.nn import functional as F
from chainrule.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(7)
gradcheck = cr.autograd.gradcheck


def _t(a, grad=False):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def _torch_module(name, *args, **kwargs):
    return getattr(torch.nn, name)(*args, **kwargs)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# --- activations -------------------------------------------------------------------------

ACTIVATIONS = [  # (name, args, kwargs, numpy reference, repr)
    ("GLU", (), {}, lambda x: x[..., :2] * _sigmoid(x[..., 2:]), "GLU(dim=-1)"),
    ("GLU", (0,), {}, lambda x: x[:1] * _sigmoid(x[1:]), "GLU(dim=0)"),
    ("Threshold", (0.1, 20.0), {}, lambda x: np.where(x > 0.1, x, 20.0),
     "Threshold(threshold=0.1, value=20.0)"),
    ("Threshold", (0.1, 20), {"inplace": True}, lambda x: np.where(x > 0.1, x, 20.0),
     "Threshold(threshold=0.1, value=20, inplace=True)"),
    ("Softshrink", (), {}, lambda x: np.where(x > .5, x - .5, np.where(x < -.5, x + .5, 0)),
     "Softshrink(0.5)"),
    ("Hardshrink", (0.3,), {}, lambda x: np.where(np.abs(x) > .3, x, 0), "Hardshrink(0.3)"),
    ("RReLU", (0.1, 0.3), {}, lambda x: np.where(x >= 0, x, 0.2 * x),
     "RReLU(lower=0.1, upper=0.3)"),
    ("Softmax2d", (), {}, lambda x: np.exp(x) / np.exp(x).sum(-3, keepdims=True),
     "Softmax2d()"),
]


@pytest.mark.parametrize("name,args,kwargs,ref,rep", ACTIVATIONS)
def test_activation_modules(name, args, kwargs, ref, rep):
    x = RNG.standard_normal((2, 3, 4))
    m = getattr(nn, name)(*args, **kwargs).eval()
    np.testing.assert_allclose(m(_t(x)).numpy(), ref(x), rtol=1e-12, atol=1e-12)
    assert repr(m) == rep
    x0 = _t(x + 0.05 * np.sign(x), grad=True)  # away from the kinks
    assert gradcheck(lambda a: m(a * 1), (x0,))  # a non-leaf: inplace=True writes into it
    if torch is not None:
        tm = _torch_module(name, *args, **kwargs).eval()
        np.testing.assert_allclose(m(_t(x)).numpy(), tm(torch.tensor(x)).numpy(), atol=1e-12)
        assert repr(tm) == rep


def test_activation_errors_and_rrelu_training():
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        nn.GLU()(cr.zeros(2, 3))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(cr.zeros(2, 3))
    m = nn.RReLU()
    assert m.training
    x = -np.abs(RNG.standard_normal((50,))) - 0.1
    cr.manual_seed(3)
    y = m(_t(x)).numpy()
    slope = y / x
    assert np.all((slope >= 1 / 8) & (slope <= 1 / 3)) and np.unique(slope).size > 40
    cr.manual_seed(3)
    np.testing.assert_array_equal(m(_t(x)).numpy(), y)  # reproducible
    np.testing.assert_array_equal(m(_t(-x)).numpy(), -x)  # positives pass through
    m.eval()
    np.testing.assert_allclose(m(_t(x)).numpy(), x * (1 / 8 + 1 / 3) / 2)


# --- dropouts ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,shape", [("Dropout1d", (4, 6, 5)), ("Dropout1d", (6, 5)),
                                        ("Dropout2d", (3, 6, 2, 2)),
                                        ("Dropout3d", (2, 6, 2, 2, 2))])
def test_channel_dropouts(name, shape):
    m = getattr(nn, name)(p=0.4)
    assert repr(m) == f"{name}(p=0.4, inplace=False)"
    y = m(cr.ones(*shape)).numpy()
    lead = 2 if len(shape) == {"Dropout1d": 3, "Dropout2d": 4, "Dropout3d": 5}[name] else 1
    per_channel = y.reshape(shape[:lead] + (-1,))
    # every channel is all zeros or all 1 / (1 - p)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(per_channel).round(12)) <= {0.0, round(1 / 0.6, 12)}
    m.eval()
    np.testing.assert_array_equal(m(cr.ones(*shape)).numpy(), np.ones(shape))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        getattr(nn, name)(1.5)
    if torch is not None:
        assert repr(_torch_module(name, p=0.4)) == repr(m)


def test_dropout1d_functional_checks_dims():
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received "
                                           "a 4D input"):
        F.dropout1d(cr.zeros(2, 2, 2, 2))
    assert F.dropout1d(cr.ones(2, 3), training=False).numpy().sum() == 6


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropouts(name):
    p = 0.25
    m = getattr(nn, name)(p)
    assert repr(m) == f"{name}(p={p}, inplace=False)"
    x = RNG.standard_normal((3, 4, 5))
    y = m(_t(x)).numpy()
    # SELU's negative saturation; a, b restore zero mean and unit variance (hand computed)
    alpha = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = ((1 - p) * (1 + p * alpha ** 2)) ** -0.5
    b = -a * alpha * p
    kept = np.isclose(y, a * x + b)
    np.testing.assert_allclose(y[~kept], a * alpha + b)
    assert kept.any() and (~kept).any()
    if name == "FeatureAlphaDropout":  # whole channels dropped together
        assert np.all(kept.all(-1) | (~kept).all(-1))
    m.eval()
    np.testing.assert_array_equal(m(_t(x)).numpy(), x)
    if torch is not None:
        assert repr(_torch_module(name, p)) == repr(m)


# --- losses ------------------------------------------------------------------------------

def _np_multi_margin(x, y, p=1, margin=1.0, w=None):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != y[i]:
                term = max(0.0, margin - x[i, y[i]] + x[i, j]) ** p
                out[i] += term * (1.0 if w is None else w[y[i]])
    return out / c


def _np_multilabel_margin(x, y):
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        targets = []
        for t in y[i]:
            if t < 0:
                break
            targets.append(t)
        for j in targets:
            for k in range(c):
                if k not in targets:
                    out[i] += max(0.0, 1 - (x[i, j] - x[i, k]))
    return out / c


X = RNG.standard_normal((4, 3))
SIGNS = np.array([[1, -1, 1], [-1, -1, 1], [1, 1, -1], [-1, 1, 1]], dtype=np.float64)
LABELS = (SIGNS > 0).astype(np.float64)
CLASSES = np.array([0, 2, 1, 2])
ML_TARGET = np.array([[0, 2, -1], [1, -1, 0], [2, 1, 0], [-1, 0, 0]])
W3 = np.array([0.5, 1.0, 2.0])
A, P_, N_ = (RNG.standard_normal((4, 3)) for _ in range(3))


def _np_triplet(a, p, n, margin=1.0, swap=False):
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=-1)  # noqa: E731
    dn = d(a, n) if not swap else np.minimum(d(a, n), d(p, n))
    return np.maximum(d(a, p) - dn + margin, 0)


LOSSES = [  # (name, kwargs, inputs, numpy per-sample losses, repr)
    ("SoftMarginLoss", {}, (X, SIGNS), np.log1p(np.exp(-SIGNS * X)), "SoftMarginLoss()"),
    ("MultiLabelSoftMarginLoss", {}, (X, LABELS),
     -(LABELS * np.log(_sigmoid(X)) + (1 - LABELS) * np.log(_sigmoid(-X))).mean(1),
     "MultiLabelSoftMarginLoss()"),
    ("MultiLabelSoftMarginLoss", {"weight": W3}, (X, LABELS),
     -(W3 * (LABELS * np.log(_sigmoid(X)) + (1 - LABELS) * np.log(_sigmoid(-X)))).mean(1),
     "MultiLabelSoftMarginLoss()"),
    ("MultiMarginLoss", {}, (X, CLASSES), _np_multi_margin(X, CLASSES), "MultiMarginLoss()"),
    ("MultiMarginLoss", {"p": 2, "margin": 0.7, "weight": W3}, (X, CLASSES),
     _np_multi_margin(X, CLASSES, 2, 0.7, W3), "MultiMarginLoss()"),
    ("MultiLabelMarginLoss", {}, (X, ML_TARGET), _np_multilabel_margin(X, ML_TARGET),
     "MultiLabelMarginLoss()"),
    ("TripletMarginWithDistanceLoss", {}, (A, P_, N_), _np_triplet(A, P_, N_),
     "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"),
    ("TripletMarginWithDistanceLoss", {"margin": 2.0, "swap": True}, (A, P_, N_),
     _np_triplet(A, P_, N_, 2.0, True),
     "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"),
]


def _as_input(a, k):
    return _t(a) if k == 0 or a.dtype.kind == "f" else cr.tensor(a)


@pytest.mark.parametrize("name,kwargs,inputs,ref,rep", LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_modules(name, kwargs, inputs, ref, rep, reduction):
    cls = getattr(nn, name)
    kw = dict(kwargs)
    if "weight" in kw:
        kw["weight"] = _t(kw["weight"])
    m = cls(reduction=reduction, **kw)
    assert repr(m) == rep
    cr_inputs = [_as_input(a, k) for k, a in enumerate(inputs)]
    if name == "TripletMarginWithDistanceLoss":
        cr_inputs = [_t(a) for a in inputs]
    out = m(*cr_inputs).numpy()
    want = {"mean": ref.mean(), "sum": ref.sum(), "none": ref}[reduction]
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12)
    if reduction == "sum":
        n_diff = 3 if name == "TripletMarginWithDistanceLoss" else 1
        args = tuple(_t(a, grad=k < n_diff) if k < n_diff else cr_inputs[k]
                     for k, a in enumerate(inputs))
        assert gradcheck(lambda *xs: m(*xs, *args[n_diff:]), args[:n_diff])
    if torch is not None:
        tkw = dict(kwargs)
        if "weight" in tkw:
            tkw["weight"] = torch.tensor(tkw["weight"])
        tm = _torch_module(name, reduction=reduction, **tkw)
        assert repr(tm) == rep
        t_inputs = [torch.tensor(a) for a in inputs]
        np.testing.assert_allclose(out, tm(*t_inputs).numpy(), rtol=1e-10, atol=1e-12)


def test_loss_module_errors_and_custom_distance():
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
        nn.MultiMarginLoss(weight=cr.ones(2, 2))
    with pytest.raises(ValueError, match="expected margin to be greater than 0, got 0"):
        nn.TripletMarginWithDistanceLoss(margin=0)
    l1 = lambda u, v: (u - v).abs().sum(-1)  # noqa: E731
    m = nn.TripletMarginWithDistanceLoss(distance_function=l1, reduction="none")
    want = np.maximum(np.abs(A - P_).sum(-1) - np.abs(A - N_).sum(-1) + 1.0, 0)
    np.testing.assert_allclose(m(_t(A), _t(P_), _t(N_)).numpy(), want)
    assert repr(m) == "TripletMarginWithDistanceLoss()"


# --- padding -----------------------------------------------------------------------------

NP_MODE = {"Zero": "constant", "Constant": "constant", "Reflection": "reflect",
           "Replication": "edge", "Circular": "wrap"}


def _np_padding(padding, n):
    padding = (padding,) * (2 * n) if isinstance(padding, int) else padding
    pairs = [(padding[2 * k], padding[2 * k + 1]) for k in range(n)]
    return pairs[::-1]  # numpy lists dims first to last


@pytest.mark.parametrize("kind", list(NP_MODE))
@pytest.mark.parametrize("n,padding", [(1, 2), (1, (1, 2)), (2, (1, 0, 2, 1)), (3, 1),
                                       (3, (1, 0, 0, 1, 1, 1))])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_modules(kind, n, padding, batched):
    shape = (2, 3) + (3,) * n if batched else (3,) + (3,) * n
    x = RNG.standard_normal(shape)
    name = f"{kind}Pad{n}d"
    args = (padding, 1.5) if kind == "Constant" else (padding,)
    m = getattr(nn, name)(*args)
    tup = (padding,) * (2 * n) if isinstance(padding, int) else padding
    assert m.padding == tup
    assert repr(m) == (f"{name}(padding={tup}, value=1.5)" if kind == "Constant"
                       else f"{name}({tup})")
    width = [(0, 0)] * (x.ndim - n) + _np_padding(padding, n)
    kw = {"constant_values": 1.5 if kind == "Constant" else 0.0} if kind in ("Zero", "Constant") \
        else {}
    np.testing.assert_allclose(m(_t(x)).numpy(), np.pad(x, width, mode=NP_MODE[kind], **kw))
    if torch is not None:
        tm = _torch_module(name, *args)
        assert repr(tm) == repr(m)
        np.testing.assert_allclose(m(_t(x)).numpy(), tm(torch.tensor(x)).numpy())


def test_padding_gradients_and_errors():
    x = _t(RNG.standard_normal((1, 2, 3, 3)), grad=True)
    for m in (nn.ReflectionPad2d((1, 2, 0, 1)), nn.CircularPad2d(1), nn.ReplicationPad2d(2),
              nn.ConstantPad2d(1, 3.0)):
        assert gradcheck(m, (x,))
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 1D input\)"):
        nn.CircularPad2d(1)(cr.zeros(3))
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D"):
        nn.ReflectionPad1d(1)(cr.zeros(2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        nn.ReflectionPad1d(3)(cr.zeros(1, 1, 3))


# --- pixel shuffle -----------------------------------------------------------------------

def _np_pixel_shuffle(x, r):
    *lead, c, h, w = x.shape
    out = np.empty((*lead, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., ch, i::r, j::r] = x[..., ch * r * r + i * r + j, :, :]
    return out


@pytest.mark.parametrize("shape,r", [((8, 2, 3), 2), ((2, 9, 2, 2), 3), ((2, 1, 4, 1, 1), 2)])
def test_pixel_shuffle_and_unshuffle(shape, r):
    x = RNG.standard_normal(shape)
    m, u = nn.PixelShuffle(r), nn.PixelUnshuffle(r)
    assert repr(m) == f"PixelShuffle(upscale_factor={r})"
    assert repr(u) == f"PixelUnshuffle(downscale_factor={r})"
    y = m(_t(x)).numpy()
    np.testing.assert_array_equal(y, _np_pixel_shuffle(x, r))
    np.testing.assert_array_equal(u(_t(y)).numpy(), x)  # the inverse
    assert gradcheck(lambda a: F.pixel_shuffle(a, r), (_t(x, grad=True),))
    assert gradcheck(lambda a: F.pixel_unshuffle(a, r), (_t(y, grad=True),))
    if torch is not None:
        np.testing.assert_array_equal(
            y, torch.nn.functional.pixel_shuffle(torch.tensor(x), r).numpy())
        np.testing.assert_array_equal(
            u(_t(y)).numpy(), torch.nn.functional.pixel_unshuffle(torch.tensor(y), r).numpy())


def test_pixel_shuffle_errors():
    with pytest.raises(RuntimeError, match="at least 3 dimensions, but got input with 2"):
        F.pixel_shuffle(cr.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=3 is not divisible by 4"):
        F.pixel_shuffle(cr.zeros(3, 2, 2), 2)
    with pytest.raises(RuntimeError, match="expects a positive upscale_factor, but got 0"):
        F.pixel_shuffle(cr.zeros(4, 2, 2), 0)
    with pytest.raises(RuntimeError, match=r"expects width to be divisible by downscale_factor, "
                                           r"but input.size\(-1\)=3"):
        F.pixel_unshuffle(cr.zeros(1, 4, 3), 2)


# --- nn.utils.rnn ------------------------------------------------------------------------

def test_utils_rnn_is_reachable_both_ways():
    import chainrule.nn.utils.rnn as rnn_mod

    assert nn.utils.rnn is rnn_mod and rnn_mod.pad_sequence is pad_sequence
    assert nn.utils.clip_grad_norm_ is not None  # the rest of nn.utils is untouched


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    seqs = [RNG.standard_normal((n, 2)) for n in (2, 4, 1)]
    out = pad_sequence([_t(s) for s in seqs], batch_first=batch_first, padding_value=-9.0,
                       padding_side=side).numpy()
    want = np.full((3, 4, 2), -9.0)
    for b, s in enumerate(seqs):
        if side == "right":
            want[b, :len(s)] = s
        else:
            want[b, 4 - len(s):] = s
    np.testing.assert_array_equal(out, want if batch_first else want.transpose(1, 0, 2))
    if torch is not None:
        t = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs],
                                            batch_first=batch_first, padding_value=-9.0,
                                            padding_side=side)
        np.testing.assert_array_equal(out, t.numpy())


def test_pad_sequence_errors():
    with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right"):
        pad_sequence([cr.zeros(2)], padding_side="up")
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="same trailing dims"):
        pad_sequence([cr.zeros(2, 3), cr.zeros(2, 4)])


def test_pack_padded_sequence_layout_by_hand():
    x = np.arange(12.0).reshape(4, 3)  # (T=4, B=3)
    p = pack_padded_sequence(_t(x), [4, 2, 1])
    assert isinstance(p, PackedSequence) and isinstance(p, tuple)
    # step 0 of all three, step 1 of the first two, steps 2 and 3 of the first only
    np.testing.assert_array_equal(p.data.numpy(), [0, 1, 2, 3, 4, 6, 9])
    np.testing.assert_array_equal(p.batch_sizes.numpy(), [3, 2, 1, 1])
    assert p.batch_sizes.dtype == np.int64 and p.sorted_indices is None
    q = pack_padded_sequence(_t(x.T), [2, 4, 1], batch_first=True, enforce_sorted=False)
    np.testing.assert_array_equal(q.sorted_indices.numpy(), [1, 0, 2])
    np.testing.assert_array_equal(q.unsorted_indices.numpy(), [1, 0, 2])
    np.testing.assert_array_equal(q.data.numpy(), [1, 0, 2, 4, 3, 7, 10])
    padded, lengths = pad_packed_sequence(q, batch_first=True, padding_value=-1,
                                          total_length=5)
    want = np.full((3, 5), -1.0)
    for b, n in enumerate([2, 4, 1]):
        want[b, :n] = x.T[b, :n]
    np.testing.assert_array_equal(padded.numpy(), want)
    np.testing.assert_array_equal(lengths.numpy(), [2, 4, 1])
    if torch is not None:
        tq = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x.T), [2, 4, 1],
                                                     batch_first=True, enforce_sorted=False)
        np.testing.assert_array_equal(q.data.numpy(), tq.data.numpy())
        np.testing.assert_array_equal(q.batch_sizes.numpy(), tq.batch_sizes.numpy())
        np.testing.assert_array_equal(q.sorted_indices.numpy(), tq.sorted_indices.numpy())
        tp, tl = torch.nn.utils.rnn.pad_packed_sequence(tq, batch_first=True,
                                                        padding_value=-1, total_length=5)
        np.testing.assert_array_equal(padded.numpy(), tp.numpy())
        np.testing.assert_array_equal(lengths.numpy(), tl.numpy())


def test_pack_errors_and_round_trips():
    x = cr.zeros(4, 3)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(RuntimeError, match="has to be greater than 0"):
        pack_padded_sequence(x, [3, 0, 0])
    with pytest.raises(RuntimeError, match=r"Expected `len\(lengths\)` to be equal to "
                                           r"batch_size, but got 2 \(batch_size=3\)"):
        pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="exceeds"):
        pack_padded_sequence(x, [5, 2, 1])
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 3"):
        pad_packed_sequence(pack_padded_sequence(x, [3, 2, 1]), total_length=2)
    seqs = [_t(RNG.standard_normal((n, 2))) for n in (1, 3, 2)]
    with pytest.raises(RuntimeError, match="must be sorted"):
        pack_sequence(seqs)
    back = unpack_sequence(pack_sequence(seqs, enforce_sorted=False))
    assert [b.shape for b in back] == [(1, 2), (3, 2), (2, 2)]
    for a, b in zip(seqs, back):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    padded = pad_sequence(seqs)
    for a, b in zip(seqs, unpad_sequence(padded, cr.tensor([1, 3, 2]))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_pack_pad_gradients():
    x = _t(RNG.standard_normal((3, 3, 2)), grad=True)

    def f(a):
        p = pack_padded_sequence(a, [1, 3, 2], enforce_sorted=False)
        return pad_packed_sequence(p, padding_value=0.5)[0] * 2.0

    assert gradcheck(f, (x,))
    y = f(x).sum()
    y.backward()
    mask = np.zeros((3, 3, 2))  # the gradient reaches the valid steps only
    for b, n in enumerate([1, 3, 2]):
        mask[:n, b] = 2.0
    np.testing.assert_array_equal(x.grad.numpy(), mask)


# --- PackedSequence through RNN / LSTM / GRU ---------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {}), ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("GRU", {"bidirectional": True, "batch_first": True}), ("LSTM", {"proj_size": 2})])
def test_rnn_packed_matches_each_sequence_alone(name, kwargs):
    cr.manual_seed(0)
    m = getattr(nn, name)(3, 4, **kwargs)
    lengths = [2, 5, 1, 4]
    seqs = [RNG.standard_normal((n, 3)) for n in lengths]
    packed = pack_sequence([_t(s) for s in seqs], enforce_sorted=False)
    out, h = m(packed)
    assert isinstance(out, PackedSequence)
    np.testing.assert_array_equal(out.batch_sizes.numpy(), packed.batch_sizes.numpy())
    padded, out_len = pad_packed_sequence(out, batch_first=kwargs.get("batch_first", False))
    np.testing.assert_array_equal(out_len.numpy(), lengths)
    if not kwargs.get("batch_first", False):
        padded = padded.transpose(0, 1)
    states = h if isinstance(h, tuple) else (h,)
    for b, s in enumerate(seqs):  # each sequence run alone, unbatched, gives the same
        o1, h1 = m(_t(s))
        np.testing.assert_allclose(padded[b, :lengths[b]].detach().numpy(),
                                   o1.detach().numpy(), atol=1e-12)
        np.testing.assert_array_equal(padded[b, lengths[b]:].detach().numpy(), 0.0)
        for st, st1 in zip(states, h1 if isinstance(h1, tuple) else (h1,)):
            np.testing.assert_allclose(st[:, b].detach().numpy(), st1.detach().numpy(),
                                       atol=1e-12)
    if torch is not None:
        tm = getattr(torch.nn, name)(3, 4, **kwargs, dtype=torch.float64)
        tm.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in m.state_dict().items()})
        tp = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs],
                                              enforce_sorted=False)
        tout, th = tm(tp)
        np.testing.assert_allclose(out.data.detach().numpy(), tout.data.detach().numpy(),
                                   atol=1e-12)
        for st, tst in zip(states, th if isinstance(th, tuple) else (th,)):
            np.testing.assert_allclose(st.detach().numpy(), tst.detach().numpy(), atol=1e-12)


def test_rnn_packed_initial_state_order_and_gradcheck():
    cr.manual_seed(1)
    m = nn.GRU(2, 3, bidirectional=True)
    seqs = [RNG.standard_normal((n, 2)) for n in (2, 3)]
    h0 = RNG.standard_normal((2, 2, 3))
    packed = pack_sequence([_t(s) for s in seqs], enforce_sorted=False)  # reorders the batch
    _, h = m(packed, _t(h0))
    for b, s in enumerate(seqs):  # h_0 and h_n are in the caller's batch order
        _, h1 = m(_t(s), _t(h0[:, b]))
        np.testing.assert_allclose(h[:, b].detach().numpy(), h1.detach().numpy(), atol=1e-12)

    def f(a, b, h):
        out, hn = m(pack_sequence([a, b], enforce_sorted=False), h)
        return out.data, hn

    args = (_t(seqs[0], grad=True), _t(seqs[1], grad=True), _t(h0, grad=True))
    assert gradcheck(f, args)


def test_reset_parameters_of_embeddings_norms_and_prelu():
    # every layer torch.nn gives a reset_parameters has one (a ported init loop calls it)
    emb = nn.Embedding(4, 3, padding_idx=1)
    layers = [emb, nn.EmbeddingBag(4, 2, padding_idx=0), nn.LayerNorm(3), nn.RMSNorm(3),
              nn.GroupNorm(1, 3), nn.PReLU(init=0.3)]
    for layer in layers:
        with cr.no_grad():
            for p in layer.parameters():
                p.fill_(7.0)
        layer.reset_parameters()
    assert emb.weight[1].tolist() == [0.0, 0.0, 0.0] and 7.0 not in emb.weight
    assert layers[1].weight[0].tolist() == [0.0, 0.0]
    for norm in layers[2:5]:
        assert norm.weight.tolist() == [1.0, 1.0, 1.0]
        assert getattr(norm, "bias", None) is None or norm.bias.tolist() == [0.0, 0.0, 0.0]
    assert layers[5].weight.tolist() == [0.3]
