"""chainrule.nn transposed convolution, interpolate, instance norm, unfold/fold and conv
padding modes: adjoint identities, hand-computed values and gradcheck without torch; values
and gradients against torch (float64) when it is installed."""

import copy
import functools
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.autograd import gradcheck, gradgradcheck
from chainrule.nn import functional as F
from test_nn_conv import np_conv

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(31)


def t(a, grad=False):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def inner(a, b):
    return float((a * b).sum().item())


# --- transposed convolution without torch --------------------------------------------------

@pytest.mark.parametrize("n, stride, padding, dilation, groups", [
    (1, 1, 0, 1, 1), (1, 2, 1, 1, 2), (1, 3, 2, 2, 1), (2, (2, 1), (1, 0), (1, 2), 1),
    (2, 2, 1, 1, 3), (2, (1, 3), (0, 2), 2, 2),
])
def test_conv_transpose_is_the_adjoint_of_conv(n, stride, padding, dilation, groups):
    """<conv_transpose(y, w), x> == <y, conv(x, w)>, output_padding making the shapes meet."""
    k = (3, 2)[:n]
    x = RNG.standard_normal((2, 2 * groups) + (7, 6)[:n])
    w = RNG.standard_normal((3 * groups, 2) + k)  # conv: (C_out, C_in/g, k)
    conv = F.conv1d if n == 1 else F.conv2d
    convt = F.conv_transpose1d if n == 1 else F.conv_transpose2d
    y_np = conv(t(x), t(w), None, stride, padding, dilation, groups).numpy()
    y = RNG.standard_normal(y_np.shape)
    s, p, d = (np.broadcast_to(v, (n,)) for v in (stride, padding, dilation))
    op = tuple(int((L + 2 * pi - di * (ki - 1) - 1) % si)
               for L, pi, di, ki, si in zip(x.shape[2:], p, d, k, s))
    xt = convt(t(y), t(w), None, stride, padding, op, groups, dilation)
    assert xt.shape == x.shape
    lhs = inner(xt, t(x))
    rhs = inner(t(y), conv(t(x), t(w), None, stride, padding, dilation, groups))
    assert lhs == pytest.approx(rhs, rel=1e-12)


def test_conv_transpose_hand_values():
    # stride 2 spreads each input entry times the kernel, overlaps adding up
    out = F.conv_transpose1d(t([[[1.0, 10.0]]]), t([[[1.0, 2.0, 3.0]]]), stride=2)
    assert out.numpy().ravel().tolist() == [1, 2, 13, 20, 30]
    out = F.conv_transpose1d(t([[[1.0, 10.0]]]), t([[[1.0, 2.0, 3.0]]]), t([0.5]), stride=2,
                             padding=1, output_padding=1)
    assert out.numpy().ravel().tolist() == [2.5, 13.5, 20.5, 30.5]
    y = F.conv_transpose2d(cr.ones(1, 1, 2, 2), cr.ones(1, 1, 2, 2))
    assert y.numpy()[0, 0].tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    assert F.conv_transpose2d(cr.ones(2, 2, 3), cr.ones(2, 3, 2, 2)).shape == (3, 3, 4)


def test_conv_transpose_gradcheck():
    x, w, b = t(RNG.standard_normal((1, 2, 3)), True), t(RNG.standard_normal((2, 2, 2)), True), \
        t(RNG.standard_normal(4), True)
    assert gradcheck(lambda x, w, b: F.conv_transpose1d(x, w, b, 2, 1, 1, 2), (x, w, b))
    x2 = t(RNG.standard_normal((1, 2, 2, 3)), True)
    w2 = t(RNG.standard_normal((2, 1, 2, 2)), True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, None, (2, 1), 0, (1, 0), 1, (1, 2)),
                     (x2, w2))
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2), (x2, w2))


def test_conv_transpose_module():
    cr.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert m.weight.shape == (4, 3, 3, 2) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(3 * 3 * 2)  # fan_in = weight.shape[1] * k, as PyTorch
    for p in (m.weight, m.bias):
        top = np.abs(p.detach().numpy()).max()
        assert 0.5 * bound < top <= bound
    x = cr.randn(2, 4, 3, 3)
    assert m(x).shape == (2, 6, 6, 5)
    assert m(x, output_size=(5, 4)).shape == (2, 6, 5, 4)
    assert m(x, output_size=[2, 6, 6, 4]).shape == (2, 6, 6, 4)
    assert m(x[0], output_size=(5, 4)).shape == (6, 5, 4)
    with pytest.raises(ValueError, match=r"requested an output size of \[7, 4\], but valid "
                       r"sizes range from \[5, 4\] to \[6, 5\]"):
        m(x, output_size=(7, 4))
    with pytest.raises(ValueError, match="ConvTranspose2D: for 4D input, output_size must have"):
        m(x, output_size=(5,))
    assert repr(m) == ("ConvTranspose2d(4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1),"
                       " output_padding=(1, 1), groups=2)")
    m1 = nn.ConvTranspose1d(2, 3, 3, bias=False, dilation=2, dtype=cr.float32)
    assert m1.bias is None and m1.weight.shape == (2, 3, 3) and m1.weight.dtype == np.float32
    assert m1(cr.randn(2, 4, dtype=cr.float32)).shape == (3, 8)
    assert repr(m1) == "ConvTranspose1d(2, 3, kernel_size=(3,), stride=(1,), dilation=(2,), " \
        "bias=False)"
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for '
                       'ConvTranspose1d'):
        nn.ConvTranspose1d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.ConvTranspose1d(2, 3, 3, groups=2)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), output_padding=1),
     RuntimeError, "conv_transpose1d: output padding must be smaller than either stride or "
     "dilation"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), padding=5), RuntimeError,
     r"Calculated output size per channel: \(-3\). Output size is too small"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(3, 3, 3)), RuntimeError,
     r"expected input\[1, 2, 5\] to have 3 channels, but got 2 channels instead"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), cr.randn(2)),
     RuntimeError, "expected bias to be 1-dimensional with 3 elements"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), stride=0), RuntimeError,
     "non-positive stride is not supported"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda: F.conv_transpose1d(cr.randn(5), cr.randn(2, 3, 3)), RuntimeError,
     "conv_transpose1d: expected input with 2 or 3 dimensions"),
    (lambda: F.conv_transpose2d(cr.randn(1, 3, 4, 4), cr.randn(3, 1, 2, 2), groups=2),
     RuntimeError, "groups=2 must be positive and divide"),
    (lambda: F.conv_transpose1d(cr.randn(1, 2, 5), cr.randn(2, 3, 3), padding="same"),
     TypeError, "padding"),
])
def test_conv_transpose_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- unfold / fold without torch ------------------------------------------------------------

def test_unfold_fold_hand_values_and_adjoint():
    x = t(np.arange(9.0).reshape(1, 1, 3, 3))
    cols = F.unfold(x, 2)
    assert cols.shape == (1, 4, 4)
    assert cols.numpy()[0].tolist() == [[0, 1, 3, 4], [1, 2, 4, 5], [3, 4, 6, 7], [4, 5, 7, 8]]
    counts = F.fold(F.unfold(cr.ones(1, 1, 3, 3), 2), (3, 3), 2)
    assert counts.numpy()[0, 0].tolist() == [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    np.testing.assert_allclose(F.fold(cols, (3, 3), 2).numpy(), x.numpy() * counts.numpy())
    for kw in (dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1)),
               dict(kernel_size=3, stride=2, padding=(0, 1))):
        xr = t(RNG.standard_normal((2, 3, 6, 7)))
        u = F.unfold(xr, **kw)
        c = t(RNG.standard_normal(u.shape))
        assert inner(u, c) == pytest.approx(inner(xr, F.fold(c, (6, 7), **kw)), rel=1e-12)
    assert F.unfold(cr.randn(2, 4, 5), 2).shape == (8, 12)  # unbatched (C, H, W)
    assert F.fold(cr.randn(8, 12), (4, 5), 2).shape == (2, 4, 5)


def test_unfold_fold_gradcheck_and_modules():
    x = t(RNG.standard_normal((1, 2, 3, 4)), True)
    assert gradcheck(lambda x: F.unfold(x, (2, 2), 1, 1, 2), (x,))
    c = t(RNG.standard_normal((1, 4, 6)), True)
    assert gradcheck(lambda c: F.fold(c, (3, 4), 2), (c,))
    u, f = nn.Unfold(2, stride=2), nn.Fold((4, 4), 2, stride=2)
    y = cr.randn(2, 3, 4, 4)
    np.testing.assert_allclose(f(u(y)).numpy(), y.numpy())  # non-overlapping: a round trip
    assert repr(u) == "Unfold(kernel_size=2, dilation=1, padding=0, stride=2)"
    assert repr(f) == "Fold(output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=2)"


@pytest.mark.parametrize("call, match", [
    (lambda: F.unfold(cr.randn(1, 1, 1, 5), 2), r"calculated shape of the array of sliding "
     r"blocks as \(0, 4\), but its components must be at least one"),
    (lambda: F.unfold(cr.randn(1, 1, 3, 5), 2, stride=0), "stride should be greater than zero"),
    (lambda: F.unfold(cr.randn(1, 1, 3, 5), 2, padding=-1), "padding should be non-negative"),
    (lambda: F.unfold(cr.randn(5, 5), 2), "unfold: expected input with 3 or 4 dimensions"),
    (lambda: F.fold(cr.randn(1, 8, 6), (3, 5), 2), r"expected size of input's dimension 2 to "
     r"match the calculated number of sliding blocks 2 \* 4 = 8, but got input.size\(2\)=6"),
    (lambda: F.fold(cr.randn(1, 7, 6), (3, 4), 2), "divisible by the product of kernel_size"),
    (lambda: F.fold(cr.randn(2, 1, 7, 6), (3, 4), 2), "Expected 2D or 3D"),
])
def test_unfold_fold_errors(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


# --- interpolate without torch --------------------------------------------------------------

def test_interpolate_hand_values():
    x = t([[[0.0, 1.0, 2.0]]])
    assert F.interpolate(x, size=6).numpy().ravel().tolist() == [0, 0, 1, 1, 2, 2]
    assert F.interpolate(x, size=4).numpy().ravel().tolist() == [0, 0, 1, 2]  # floor(i 3/4)
    assert F.interpolate(x, size=4, mode="nearest-exact").numpy().ravel().tolist() == \
        [0, 1, 1, 2]  # floor((i + 1/2) 3/4)
    assert F.interpolate(x, scale_factor=0.5).numpy().ravel().tolist() == [0.0]
    two = t([[[0.0, 4.0]]])
    assert F.interpolate(two, size=3, mode="linear", align_corners=True).numpy().ravel() \
        .tolist() == [0, 2, 4]
    # pixel centres: sources max(0, (i + 1/2) / 2 - 1/2) = 0, 0.25, 0.75, 1.25 (clamped)
    assert F.interpolate(two, scale_factor=2, mode="linear").numpy().ravel().tolist() == \
        [0, 1, 3, 4]
    img = t(RNG.standard_normal((1, 2, 3, 4)))
    up = F.interpolate(img, size=(5, 7), mode="bilinear", align_corners=True)
    cols = F.interpolate(img.reshape(6, 1, 4), size=7, mode="linear", align_corners=True)
    cols = cols.reshape(1, 2, 3, 7).transpose(2, 3).reshape(14, 1, 3)
    both = F.interpolate(cols, size=5, mode="linear", align_corners=True)
    both = both.reshape(1, 2, 7, 5).transpose(2, 3)
    np.testing.assert_allclose(up.numpy(), both.numpy(), rtol=1e-13, atol=1e-14)  # separable
    np.testing.assert_allclose(up.numpy()[..., ::2, ::2], img.numpy(), atol=1e-14)  # corners
    area = F.interpolate(img, size=(1, 2), mode="area")
    np.testing.assert_allclose(area.numpy()[..., 0, 0], img.numpy()[..., :2].mean((2, 3)))


def test_interpolate_gradcheck():
    x = t(RNG.standard_normal((1, 2, 4)), True)
    assert gradcheck(lambda x: F.interpolate(x, size=7, mode="linear"), (x,))
    assert gradcheck(lambda x: F.interpolate(x, scale_factor=2.5, mode="nearest"), (x,))
    x2 = t(RNG.standard_normal((1, 1, 3, 3)), True)
    assert gradcheck(lambda x: F.interpolate(x, size=(4, 5), mode="bilinear",
                                             align_corners=True), (x2,))
    assert gradcheck(lambda x: F.interpolate(x, scale_factor=(0.7, 1.6), mode="bilinear"),
                     (x2,))
    assert gradcheck(lambda x: F.interpolate(x, size=2, mode="area"), (x2,))


def test_upsample_modules():
    x = cr.randn(1, 2, 3, 3)
    m = nn.Upsample(scale_factor=2)
    np.testing.assert_array_equal(m(x).numpy(), np.repeat(np.repeat(x.numpy(), 2, 2), 2, 3))
    assert repr(m) == "Upsample(scale_factor=2.0, mode='nearest')"
    assert repr(nn.Upsample(size=(3, 4), mode="bilinear")) == \
        "Upsample(size=(3, 4), mode='bilinear')"
    assert repr(nn.Upsample(scale_factor=(2, 3))) == \
        "Upsample(scale_factor=(2.0, 3.0), mode='nearest')"
    bil = nn.UpsamplingBilinear2d(size=5)
    assert repr(bil) == "UpsamplingBilinear2d(size=5, mode='bilinear')"
    np.testing.assert_allclose(bil(x).numpy(), F.interpolate(x, size=5, mode="bilinear",
                                                             align_corners=True).numpy())
    assert repr(nn.UpsamplingNearest2d(scale_factor=2)) == \
        "UpsamplingNearest2d(scale_factor=2.0, mode='nearest')"
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        assert F.upsample_nearest(x, scale_factor=2).shape == (1, 2, 6, 6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, scale_factor=2), ValueError,
     "only one of size or scale_factor should be defined"),
    (lambda: F.interpolate(cr.randn(1, 1, 4)), ValueError,
     "either size or scale_factor should be defined"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, align_corners=True), ValueError,
     "align_corners option can only be set with the interpolating modes"),
    (lambda: F.interpolate(cr.randn(1, 1, 4, 4), size=(2, 3, 4)), ValueError,
     "Input and output must have the same number of spatial dimensions"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2.5), TypeError, "expected size"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, recompute_scale_factor=True),
     ValueError, "recompute_scale_factor is not meaningful with an explicit size"),
    (lambda: F.interpolate(cr.randn(1, 1, 4, 4), size=2, mode="linear"), NotImplementedError,
     "Got 4D input, but linear mode needs 3D input"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, mode="bilinear"), NotImplementedError,
     "Got 3D input, but bilinear mode needs 4D input"),
    (lambda: F.interpolate(cr.randn(1, 1, 2, 2), size=2, mode="lanczos"),
     NotImplementedError, "mode='lanczos' is not implemented"),
    (lambda: F.interpolate(cr.randn(1, 1, 2, 2), size=2, mode="trilinear"),
     NotImplementedError, "Got 4D input, but trilinear mode needs 5D input"),
    (lambda: F.interpolate(cr.randn(1, 4), size=2), NotImplementedError,
     r"Only 3D, 4D and 5D input Tensors supported \(got 2D\)"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, mode="cubic"), NotImplementedError,
     r"\(got cubic\)"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), size=2, antialias=True), ValueError,
     "Anti-alias option is restricted"),
    (lambda: F.interpolate(cr.randn(1, 1, 4), scale_factor=0.1), RuntimeError,
     r"Input and output sizes should be greater than 0, but got input \(W: 4\) and output "
     r"\(W: 0\)"),
])
def test_interpolate_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- instance norm without torch ------------------------------------------------------------

def _np_instance_norm(x, w=None, b=None, eps=1e-5):
    dims = tuple(range(2, x.ndim))
    out = (x - x.mean(dims, keepdims=True)) / np.sqrt(x.var(dims, keepdims=True) + eps)
    shape = (-1,) + (1,) * len(dims)
    if w is not None:
        out = out * w.reshape(shape)
    if b is not None:
        out = out + b.reshape(shape)
    return out


def test_instance_norm_values_running_stats_and_gradcheck():
    x = RNG.standard_normal((3, 2, 4, 5))
    w, b = RNG.standard_normal(2), RNG.standard_normal(2)
    np.testing.assert_allclose(F.instance_norm(t(x), weight=t(w), bias=t(b)).numpy(),
                               _np_instance_norm(x, w, b), rtol=1e-12, atol=1e-12)
    rm, rv = cr.zeros(2), cr.ones(2)
    F.instance_norm(t(x), rm, rv, momentum=0.2)
    np.testing.assert_allclose(rm.numpy(), 0.2 * x.mean((2, 3)).mean(0), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var((2, 3), ddof=1).mean(0),
                               rtol=1e-12)
    out = F.instance_norm(t(x), rm, rv, use_input_stats=False, eps=0.0)
    np.testing.assert_allclose(out.numpy(), (x - rm.numpy()[:, None, None])
                               / np.sqrt(rv.numpy()[:, None, None]), rtol=1e-12)
    xg = t(RNG.standard_normal((2, 2, 3)), True)
    wg, bg = t(RNG.standard_normal(2), True), t(RNG.standard_normal(2), True)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (xg, wg, bg))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        F.instance_norm(cr.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="Expected running_mean and running_var"):
        F.instance_norm(cr.randn(2, 3, 4), use_input_stats=False)
    with pytest.raises(RuntimeError, match="weight should contain 6 elements not 4"):
        F.instance_norm(cr.randn(2, 3, 4), weight=cr.ones(2))


def test_instance_norm_modules():
    x = cr.randn(2, 3, 5)
    m = nn.InstanceNorm1d(3)
    assert m.weight is None and m.running_mean is None
    np.testing.assert_allclose(m(x).numpy(), _np_instance_norm(x.numpy()), atol=1e-12)
    np.testing.assert_allclose(m(x[0]).numpy(), _np_instance_norm(x.numpy()[:1])[0],
                               atol=1e-12)  # unbatched
    assert repr(m) == ("InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, "
                       "track_running_stats=False)")
    m2 = nn.InstanceNorm2d(3, affine=True, track_running_stats=True)
    assert [n for n, _ in m2.named_parameters()] == ["weight", "bias"]
    assert sorted(m2.state_dict()) == ["bias", "num_batches_tracked", "running_mean",
                                       "running_var", "weight"]
    x2 = cr.randn(2, 3, 3, 4)
    m2(x2)
    np.testing.assert_allclose(m2.running_mean.numpy(), 0.1 * x2.numpy().mean((2, 3)).mean(0),
                               rtol=1e-12)
    assert m2.num_batches_tracked.item() == 0  # as PyTorch: instance norm does not count
    m2.eval()
    rm, rv = m2.running_mean.numpy().copy(), m2.running_var.numpy().copy()
    np.testing.assert_allclose(m2(x2).detach().numpy(), (x2.numpy() - rm[:, None, None])
                               / np.sqrt(rv[:, None, None] + 1e-5), rtol=1e-12)
    assert np.array_equal(m2.running_mean.numpy(), rm)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        m(x2)
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                       r"num_features \(3\), but got: 4"):
        m2(cr.randn(2, 4, 3, 3))
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(x)


# --- padding_mode without torch -------------------------------------------------------------

def test_conv_padding_modes():
    x = RNG.standard_normal((2, 2, 5))
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")):
        m = nn.Conv1d(2, 3, 3, padding=2, padding_mode=mode)
        ref = F.conv1d(t(np.pad(x, [(0, 0), (0, 0), (2, 2)], mode=np_mode)), m.weight, m.bias)
        np.testing.assert_allclose(m(t(x)).detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        assert f"padding_mode={mode}" in repr(m)
    m2 = nn.Conv2d(2, 2, (3, 2), padding="same", padding_mode="circular", bias=False)
    x2 = RNG.standard_normal((1, 2, 4, 4))
    # 'same' with kernel (3, 2): H padded (1, 1), W padded (0, 1)
    xp = np.pad(x2, [(0, 0), (0, 0), (1, 1), (0, 1)], mode="wrap")
    np.testing.assert_allclose(m2(t(x2)).detach().numpy(),
                               F.conv2d(t(xp), m2.weight).detach().numpy(), rtol=1e-12)
    assert repr(m2) == ("Conv2d(2, 2, kernel_size=(3, 2), stride=(1, 1), padding=same, "
                        "bias=False, padding_mode=circular)")
    xg = t(RNG.standard_normal((1, 1, 4)), True)
    mg = nn.Conv1d(1, 1, 3, padding=1, padding_mode="reflect")
    assert gradcheck(lambda x: mg(x), (xg,))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        nn.Conv1d(1, 1, 3, padding=4, padding_mode="reflect")(cr.randn(1, 1, 4))


# --- NumPy references for the random configurations -----------------------------------------

def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def np_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation):
    """By its definition, batched x: input entry (c, pos) adds x * w[c, o] at output
    positions pos * s + tap * d (in a buffer as long as (L - 1) s + d (k - 1) + 1 +
    output_padding), then `padding` entries are cut from both ends."""
    n = w.ndim - 2
    s, p, op, d = (_tup(v, n) for v in (stride, padding, output_padding, dilation))
    k = w.shape[2:]
    cin_g, cout_g = x.shape[1] // groups, w.shape[1]
    full = [(L - 1) * si + di * (ki - 1) + 1 + opi
            for L, si, di, ki, opi in zip(x.shape[2:], s, d, k, op)]
    buf = np.zeros((x.shape[0], cout_g * groups, *full))
    for c, pos, tap in itertools.product(range(x.shape[1]), np.ndindex(*x.shape[2:]),
                                         np.ndindex(*k)):
        g = c // cin_g
        at = tuple(pi * si + ti * di for pi, si, ti, di in zip(pos, s, tap, d))
        buf[(slice(None), slice(g * cout_g, (g + 1) * cout_g)) + at] += \
            x[(slice(None), c) + pos][:, None] * w[(c, slice(None)) + tap]
    out = buf[(Ellipsis,) + tuple(slice(pi, f - pi) for pi, f in zip(p, full))]
    if b is not None:
        out = out + b.reshape((-1,) + (1,) * n)
    return out


def _windows(x, k, d, p, s):
    """(padded x, output positions, taps) of the sliding blocks of (N, C, H, W)."""
    k, d, p, s = (_tup(v, 2) for v in (k, d, p, s))
    xp = np.pad(x, [(0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])])
    outs = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    return xp, list(np.ndindex(*outs)), list(np.ndindex(*k)), k, d, p, s


def np_unfold(x, k, d, p, s):
    """cols[n, c * kh * kw + tap, block] = padded x at block * s + tap * d."""
    xp, blocks, taps, k, d, p, s = _windows(x, k, d, p, s)
    cols = np.zeros((x.shape[0], x.shape[1] * len(taps), len(blocks)))
    for c, (ti, tap), (bi, blk) in itertools.product(range(x.shape[1]), enumerate(taps),
                                                     enumerate(blocks)):
        cols[:, c * len(taps) + ti, bi] = xp[:, c, blk[0] * s[0] + tap[0] * d[0],
                                             blk[1] * s[1] + tap[1] * d[1]]
    return cols


def np_fold(cols, size, k, d, p, s):
    """The adjoint of np_unfold: every column entry added back where unfold read it."""
    n, ck = cols.shape[:2]
    kk = math.prod(_tup(k, 2))
    xp, blocks, taps, k, d, p, s = _windows(np.zeros((n, ck // kk) + tuple(size)), k, d, p, s)
    for c, (ti, tap), (bi, blk) in itertools.product(range(ck // kk), enumerate(taps),
                                                     enumerate(blocks)):
        xp[:, c, blk[0] * s[0] + tap[0] * d[0], blk[1] * s[1] + tap[1] * d[1]] += \
            cols[:, c * kk + ti, bi]
    return xp[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


def _interp_matrix(L, o, mode, align_corners, sf, two_d):
    """The (o, L) matrix of one spatial dim of F.interpolate, from the definitions in exact
    rational arithmetic. The source scale is s = 1 / scale_factor when one is used, else
    L / o. nearest: source floor(i s) (PyTorch's 2-d kernel copies when o == L and takes
    i // 2 when o == 2 L); nearest-exact: floor((i + 1/2) s); linear: source
    max((i + 1/2) s - 1/2, 0) (align_corners: i (L - 1) / (o - 1)) between its two
    neighbours (an output as long as the input copies it); area: the mean over
    floor(i L / o) .. ceil((i + 1) L / o)."""
    M = np.zeros((o, L))
    s = Fraction(1) / sf if sf is not None else Fraction(L, o)
    for i in range(o):
        if mode == "area":
            lo, hi = math.floor(Fraction(i * L, o)), math.ceil(Fraction((i + 1) * L, o))
            M[i, lo:hi] = 1.0 / (hi - lo)
        elif mode == "nearest" and two_d and o in (L, 2 * L):
            M[i, i * L // o] = 1.0
        elif mode in ("nearest", "nearest-exact"):
            src = i * s if mode == "nearest" else (i + Fraction(1, 2)) * s
            M[i, min(math.floor(src), L - 1)] = 1.0
        elif o == L:
            M[i, i] = 1.0
        else:
            if align_corners:
                src = Fraction(i * (L - 1), o - 1) if o > 1 else Fraction(0)
            else:
                src = max((i + Fraction(1, 2)) * s - Fraction(1, 2), Fraction(0))
            i0 = min(math.floor(src), L - 1)
            lam = float(src - i0)
            M[i, i0] += 1.0 - lam
            M[i, min(i0 + 1, L - 1)] += lam
    return M


def _interp_matrices(shape, mode, align_corners=None, size=None, scale_factor=None,
                     recompute_scale_factor=None):
    """One _interp_matrix per spatial dim of an input of `shape`; output sizes
    floor(L scale_factor) (the scale factor itself is used unless recomputed)."""
    spatial = shape[2:]
    if size is not None:
        outs, sfs = _tup(size, len(spatial)), (None,) * len(spatial)
    else:
        sfs = tuple(Fraction(str(v)) for v in _tup(scale_factor, len(spatial)))
        outs = tuple(math.floor(L * f) for L, f in zip(spatial, sfs))
        if recompute_scale_factor or mode == "area":
            sfs = (None,) * len(spatial)
    mode = {"bilinear": "linear"}.get(mode, mode)
    return [_interp_matrix(L, o, mode, align_corners, f, len(spatial) == 2)
            for L, o, f in zip(spatial, outs, sfs)]


def _apply(mats, x):
    """The matrices applied along the trailing dims of x (the transposes apply the
    adjoint, the gradient of a linear map)."""
    for i, M in enumerate(mats):
        x = np.moveaxis(np.tensordot(M, np.moveaxis(x, 2 + i, 0), 1), 0, 2 + i)
    return x


def _check_linear_op(fc, x, mats):
    """fc(x) against the matrices, and its gradient for a random cotangent against the
    transposed matrices."""
    xc = t(x, True)
    y = fc(xc)
    np.testing.assert_allclose(y.detach().numpy(), _apply(mats, x), rtol=1e-12, atol=1e-13)
    g = RNG.standard_normal(y.shape)
    y.backward(t(g))
    np.testing.assert_allclose(xc.grad.numpy(), _apply([M.T for M in mats], g), rtol=1e-12,
                               atol=1e-13)


def _gradcheck_module(m, x, **kwargs):
    """Finite differences (one random projection) w.r.t. the input and every parameter of
    ``m(x, **kwargs)``."""
    names = [n for n, _ in m.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    assert gradcheck(lambda x, *ps: nn.functional_call(m, dict(zip(names, ps)), (x,), kwargs),
                     (t(x, True), *params), fast_mode=True)


# --- torch comparisons ----------------------------------------------------------------------

def _compare(fc, ft, arrays, *args, grads=True, **kwargs):
    """``fc(*arrays, ...)`` against ``ft``: values and the gradients of a random linear
    functional, in float64."""
    ct = [None if a is None else t(a, True) for a in arrays]
    tt = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    oc, ot = fc(*ct, *args, **kwargs), ft(*tt, *args, **kwargs)
    assert oc.shape == tuple(ot.shape)
    np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    if not grads:
        return
    g = RNG.standard_normal(oc.shape)
    (oc * t(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    for a, b in zip(ct, tt):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_conv_transpose_random_configs_vs_definition_and_torch():
    TF = None if torch is None else torch.nn.functional
    rng = np.random.default_rng(5)
    done = 0
    for trial in range(30):
        n = 1 + trial % 2
        g = int(rng.choice([1, 2, 3]))
        k = tuple(int(v) for v in rng.integers(1, 4, n))
        d = tuple(int(v) for v in rng.integers(1, 3, n))
        s = tuple(int(v) for v in rng.integers(1, 4, n))
        p = tuple(int(v) for v in rng.integers(0, 3, n))
        op = tuple(int(rng.integers(0, max(si, di))) for si, di in zip(s, d))
        x = rng.standard_normal((2, g * int(rng.integers(1, 3)))
                                + tuple(int(v) for v in rng.integers(2, 5, n)))
        w = rng.standard_normal((x.shape[1], int(rng.integers(1, 3))) + k)
        b = None if trial % 3 == 0 else rng.standard_normal(w.shape[1] * g)
        if trial % 5 == 0:
            x = x[0]
        fc = F.conv_transpose1d if n == 1 else F.conv_transpose2d
        # without torch: the definition (or its empty output), finite differences
        sizes = [(L - 1) * si - 2 * pi + di * (ki - 1) + opi + 1
                 for L, si, pi, di, ki, opi in zip(x.shape[-n:], s, p, d, k, op)]
        if min(sizes) < 1:  # an empty output
            with pytest.raises(RuntimeError, match="Output size is too small"):
                fc(t(x), t(w), None, s, p, op, g, d)
            if TF is not None:
                ft = TF.conv_transpose1d if n == 1 else TF.conv_transpose2d
                with pytest.raises(RuntimeError):
                    ft(torch.tensor(x), torch.tensor(w), None, s, p, op, g, d)
            continue
        xb = x if x.ndim == n + 2 else x[None]
        want = np_conv_transpose(xb, w, b, s, p, op, g, d)
        got = fc(t(x), t(w), None if b is None else t(b), s, p, op, g, d).numpy()
        np.testing.assert_allclose(got, want if x.ndim == n + 2 else want[0], rtol=1e-12,
                                   atol=1e-12)
        arrays = tuple(t(a, True) for a in (x, w) + (() if b is None else (b,)))
        conv = functools.partial(lambda fc, a, x, w, b=None: fc(x, w, b, *a), fc,
                                 (s, p, op, g, d))
        assert gradcheck(conv, arrays, fast_mode=True)
        if TF is not None:
            ft = TF.conv_transpose1d if n == 1 else TF.conv_transpose2d
            _compare(fc, ft, (x, w, b), s, p, op, g, d)
        done += 1
    assert done >= 20


def test_conv_transpose_modules_vs_definition_and_torch():
    for cls, shape, kw, size, text in (
            ("ConvTranspose1d", (2, 4, 5), dict(stride=3, padding=1, groups=2), (14,),
             "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(3,), padding=(1,), groups=2)"),
            ("ConvTranspose2d", (2, 2, 3, 4), dict(stride=(2, 1), dilation=(1, 2),
                                                   output_padding=(1, 0)), None,
             "ConvTranspose2d(2, 6, kernel_size=(3, 3), stride=(2, 1), dilation=(1, 2), "
             "output_padding=(1, 0))")):
        cm = getattr(nn, cls)(shape[1], 6, 3, **kw)
        assert repr(cm) == text
        x = RNG.standard_normal(shape)
        # without torch: the definition, output_size fixing the output padding (a 1-d
        # output is (5 - 1) 3 - 2 + 2 + 1 = 13 long without it), finite differences
        op = kw.get("output_padding", 0)
        if size is not None:
            op = tuple(o - ((L - 1) * kw["stride"] - 2 * kw["padding"] + 2 + 1)
                       for o, L in zip(size, shape[2:]))
            assert op == (1,)
        want = np_conv_transpose(x, cm.weight.detach().numpy(), cm.bias.detach().numpy(),
                                 kw.get("stride", 1), kw.get("padding", 0), op,
                                 kw.get("groups", 1), kw.get("dilation", 1))
        got = cm(t(x), output_size=size).detach().numpy()
        assert got.shape[:2] == (shape[0], 6) and (size is None or got.shape[2:] == size)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        _gradcheck_module(cm, x, output_size=size)
        if torch is None:
            continue
        tm = getattr(torch.nn, cls)(shape[1], 6, 3, **kw).double()
        cm.load_state_dict({k: cr.tensor(v.detach().numpy().copy())
                            for k, v in tm.state_dict().items()})
        assert repr(cm) == repr(tm)
        _compare(cm, tm, (x,), output_size=size)
        for (name, p), (_, tp) in zip(cm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=name)


def test_unfold_fold_vs_loops_and_torch():
    TF = None if torch is None else torch.nn.functional
    x = RNG.standard_normal((2, 3, 7, 6))
    for k, d, p, s in ((2, 1, 0, 1), ((2, 3), (1, 2), 1, (2, 1)), (3, 1, 1, 2),
                       ((1, 2), 1, (0, 1), (3, 2))):
        # without torch: the loops; each is the other's adjoint, so each one's gradient
        # is the other applied to the cotangent
        cols = np_unfold(x, k, d, p, s)
        for batch in (slice(None), 0):  # batched and unbatched
            xc = t(x[batch], True)
            u = F.unfold(xc, k, d, p, s)
            np.testing.assert_allclose(u.detach().numpy(), cols[batch], rtol=1e-12)
            gu = RNG.standard_normal(cols.shape)
            u.backward(t(gu[batch]))
            np.testing.assert_allclose(xc.grad.numpy(), np_fold(gu, (7, 6), k, d, p, s)[batch],
                                       rtol=1e-12, atol=1e-13)
            cc = t(cols[batch], True)
            f = F.fold(cc, (7, 6), k, d, p, s)
            np.testing.assert_allclose(f.detach().numpy(),
                                       np_fold(cols, (7, 6), k, d, p, s)[batch], rtol=1e-12,
                                       atol=1e-13)
            gf = RNG.standard_normal(x.shape)
            f.backward(t(gf[batch]))
            np.testing.assert_allclose(cc.grad.numpy(), np_unfold(gf, k, d, p, s)[batch],
                                       rtol=1e-12)
        if TF is not None:
            _compare(F.unfold, TF.unfold, (x,), k, d, p, s)
            _compare(F.unfold, TF.unfold, (x[0],), k, d, p, s)
            tcols = TF.unfold(torch.tensor(x), k, d, p, s).numpy()
            _compare(F.fold, TF.fold, (tcols,), (7, 6), k, d, p, s)
            _compare(F.fold, TF.fold, (tcols[0],), (7, 6), k, d, p, s)


def test_interpolate_vs_definition_and_torch():
    TF = None if torch is None else torch.nn.functional
    count = 0
    for L in (1, 3, 4, 7):
        x = RNG.standard_normal((2, 2, L))
        for mode in ("nearest", "nearest-exact", "linear", "area"):
            kws = [dict(size=o) for o in (1, 2, 5, 8, 11)]
            kws += [dict(scale_factor=sf) for sf in (0.5, 0.7, 1.5, 2.5, 3.0)]
            kws += [dict(scale_factor=1.7, recompute_scale_factor=True)]
            for kw in kws:
                if int(L * kw.get("scale_factor", 1)) < 1:
                    continue
                for ac in ((None,) if mode != "linear" else (False, True)):
                    # without torch: the definition as a matrix (values and gradient)
                    mats = _interp_matrices(x.shape, mode, ac, **kw)
                    _check_linear_op(functools.partial(F.interpolate, mode=mode,
                                                       align_corners=ac, **kw), x, mats)
                    count += 1
                    if TF is not None:
                        _compare(F.interpolate, TF.interpolate, (x,), mode=mode,
                                 align_corners=ac, **kw)
    # 11 sizes / scale factors for each of the 4 lengths, less the two L = 1 can't shrink
    # by; four modes, linear twice (align_corners False and True)
    assert count == (4 * 11 - 2) * (3 + 2)
    x = RNG.standard_normal((2, 2, 3, 5))
    for mode in ("nearest", "nearest-exact", "bilinear", "area"):
        for kw in (dict(size=(5, 3)), dict(size=7), dict(scale_factor=(1.5, 0.6)),
                   dict(scale_factor=2.3),
                   dict(scale_factor=(1.7, 2), recompute_scale_factor=True)):
            for ac in ((None,) if mode != "bilinear" else (False, True)):
                mats = _interp_matrices(x.shape, mode, ac, **kw)
                _check_linear_op(functools.partial(F.interpolate, mode=mode, align_corners=ac,
                                                   **kw), x, mats)
                if TF is not None:
                    _compare(F.interpolate, TF.interpolate, (x,), mode=mode, align_corners=ac,
                             **kw)
    for cm, text, mats in (
            (nn.Upsample(scale_factor=2, mode="bilinear"),
             "Upsample(scale_factor=2.0, mode='bilinear')",
             _interp_matrices(x.shape, "bilinear", False, scale_factor=2)),
            (nn.UpsamplingNearest2d(size=(4, 7)), "UpsamplingNearest2d(size=(4, 7), "
             "mode='nearest')", _interp_matrices(x.shape, "nearest", size=(4, 7))),
            (nn.UpsamplingBilinear2d(size=4), "UpsamplingBilinear2d(size=4, mode='bilinear')",
             _interp_matrices(x.shape, "bilinear", True, size=4))):
        assert repr(cm) == text
        _check_linear_op(cm, x, mats)
    if TF is None:
        return
    for m in (torch.nn.Upsample(scale_factor=2, mode="bilinear"),
              torch.nn.UpsamplingNearest2d(size=(4, 7)), torch.nn.UpsamplingBilinear2d(size=4)):
        cm = getattr(nn, type(m).__name__)(**{k: getattr(m, k) for k in ("size", "scale_factor")
                                              if getattr(m, k) is not None},
                                           **({"mode": m.mode} if type(m) is torch.nn.Upsample
                                              else {}))
        assert repr(cm) == repr(m)
        _compare(cm, m, (x,))


def test_interpolate_nearest_1d_where_torch_backward_disagrees_with_its_forward():
    """1-d 'nearest' with a scale factor whose output is as long as the input: PyTorch's
    forward picks floor(i / scale_factor) but its backward copies (a shortcut); chainrule's
    gradient is that of the forward it computes."""
    x = t([[[0.0, 1.0, 2.0]]], True)
    y = F.interpolate(x, scale_factor=1.2)
    # floor(3 * 1.2) = 3 outputs from sources floor(i / 1.2) = 0, 0, 1
    assert y.detach().numpy().tolist() == [[[0.0, 0.0, 1.0]]]
    if torch is not None:
        ty = torch.nn.functional.interpolate(torch.tensor([[[0.0, 1.0, 2.0]]]),
                                             scale_factor=1.2)
        assert ty.numpy().tolist() == [[[0.0, 0.0, 1.0]]]
    y.backward(t([[[1.0, 10.0, 100.0]]]))
    assert x.grad.numpy().ravel().tolist() == [11.0, 100.0, 0.0]


def _np_instance_norm_module(x, kw, state, train):
    """An InstanceNorm module's output and its state after the call, by the definition:
    with track_running_stats in eval mode the running stats normalise, else each instance's
    own (biased) statistics; training updates running = (1 - m) running + m stat (stat the
    batch mean of the instances' means and unbiased variances; momentum None counts as 0,
    as PyTorch's _InstanceNorm passes it); num_batches_tracked does not move."""
    xb = x
    dims = tuple(range(2, xb.ndim))
    shape = (-1,) + (1,) * len(dims)
    new = dict(state)
    if kw.get("track_running_stats") and not train:
        mu, var = state["running_mean"].reshape(shape), state["running_var"].reshape(shape)
    else:
        mu, var = xb.mean(dims, keepdims=True), xb.var(dims, keepdims=True)
        if kw.get("track_running_stats"):
            m = kw.get("momentum", 0.1) or 0.0
            new["running_mean"] = (1 - m) * state["running_mean"] + m * xb.mean(dims).mean(0)
            new["running_var"] = (1 - m) * state["running_var"] + \
                m * xb.var(dims, ddof=1).mean(0)
    y = (xb - mu) / np.sqrt(var + 1e-5)
    if kw.get("affine"):
        y = y * state["weight"].reshape(shape) + state["bias"].reshape(shape)
    return y, new


def test_instance_norm_vs_definition_and_torch():
    TF = None if torch is None else torch.nn.functional
    x = RNG.standard_normal((3, 2, 4, 3))
    w, b = RNG.standard_normal(2), RNG.standard_normal(2)
    rm, rv = RNG.standard_normal(2), RNG.random(2) + 0.5
    # without torch: the definitions, finite differences
    np.testing.assert_allclose(F.instance_norm(t(x), None, None, t(w), t(b)).numpy(),
                               _np_instance_norm(x, w, b), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, None, None, w, b),
                     (t(x, True), t(w, True), t(b, True)), fast_mode=True)
    fixed = lambda x, w: F.instance_norm(x, t(rm), t(rv), w, use_input_stats=False)  # noqa
    np.testing.assert_allclose(fixed(t(x), t(w)).numpy(),
                               (x - rm[:, None, None]) / np.sqrt(rv[:, None, None] + 1e-5)
                               * w[:, None, None], rtol=1e-12)
    assert gradcheck(fixed, (t(x, True), t(w, True)), fast_mode=True)
    if TF is not None:
        _compare(F.instance_norm, TF.instance_norm, (x, None, None, w, b))
        _compare(fixed, lambda x, w: TF.instance_norm(x, torch.tensor(rm), torch.tensor(rv), w,
                                                      use_input_stats=False), (x, w))
    for cls, shape in (("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 3, 4)),
                       ("InstanceNorm1d", (3, 5))):
        for kw in (dict(), dict(affine=True, track_running_stats=True, momentum=0.3),
                   dict(track_running_stats=True, momentum=None)):
            cm = getattr(nn, cls)(3, **kw)
            text = (f"{cls}(3, eps=1e-05, momentum={kw.get('momentum', 0.1)}, "
                    f"affine={kw.get('affine', False)}, bias={kw.get('affine', False)}, "
                    f"track_running_stats={kw.get('track_running_stats', False)})")
            assert repr(cm) == text
            tm = None
            if torch is not None:
                tm = getattr(torch.nn, cls)(3, **kw).double()
                assert repr(cm) == repr(tm)
            state = {k: v.detach().numpy().copy() for k, v in cm.state_dict().items()}
            if kw.get("affine"):  # affine parameters away from 1 and 0
                state["weight"], state["bias"] = RNG.standard_normal(3), RNG.standard_normal(3)
            if tm is not None:
                tm.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
            cm.load_state_dict({k: cr.tensor(v) for k, v in state.items()})
            for train in (True, False):
                cm.train(train)
                xi = RNG.standard_normal(shape)
                unbatched = len(shape) == 2
                want, state = _np_instance_norm_module(xi[None] if unbatched else xi, kw,
                                                       state, train)
                before = {k: v.detach().clone() for k, v in cm.state_dict().items()}
                np.testing.assert_allclose(cm(t(xi)).detach().numpy(),
                                           want[0] if unbatched else want, rtol=1e-12,
                                           atol=1e-12)
                for name, v in cm.state_dict().items():
                    np.testing.assert_allclose(v.detach().numpy(), state[name], rtol=1e-12,
                                               err_msg=name)
                _gradcheck_module(copy.deepcopy(cm), xi)  # (it moves the copy's stats)
                if tm is not None:  # one call each from the same state
                    tm.train(train)
                    cm.load_state_dict(before)
                    _compare(cm, tm, (xi,))
                    for name, v in tm.state_dict().items():
                        np.testing.assert_allclose(cm.state_dict()[name].detach().numpy(),
                                                   v.detach().numpy(), rtol=1e-12,
                                                   err_msg=name)


def test_conv_padding_modes_vs_definition_and_torch():
    for mode, np_mode in (("reflect", "reflect"), ("replicate", "edge"),
                          ("circular", "wrap")):
        for cls, shape, kw, pads, text in (
                ("Conv1d", (2, 2, 6), dict(padding=2, stride=2), [(2, 2)],
                 "kernel_size=(3,), stride=(2,), padding=(2,)"),
                ("Conv1d", (2, 5), dict(padding="same", dilation=2), [(2, 2)],
                 "kernel_size=(3,), stride=(1,), padding=same, dilation=(2,)"),
                ("Conv2d", (2, 2, 4, 5), dict(padding=(1, 2), groups=2), [(1, 1), (2, 2)],
                 "kernel_size=(3, 2), stride=(1, 1), padding=(1, 2), groups=2"),
                # 'same' with kernel (3, 2): H padded (1, 1), W (0, 1)
                ("Conv2d", (2, 2, 4, 5), dict(padding="same"), [(1, 1), (0, 1)],
                 "kernel_size=(3, 2), stride=(1, 1), padding=same")):
            k = (3, 2)[:1 if cls == "Conv1d" else 2]
            cm = getattr(nn, cls)(2, 4, k, padding_mode=mode, **kw)
            assert repr(cm) == f"{cls}(2, 4, {text}, padding_mode={mode})"
            x = RNG.standard_normal(shape)
            # without torch: the input padded by np.pad's mode, then a plain convolution
            xb = x if x.ndim == len(k) + 2 else x[None]
            xp = np.pad(xb, [(0, 0), (0, 0)] + pads, mode=np_mode)
            want = np_conv(xp, cm.weight.detach().numpy(), cm.bias.detach().numpy(),
                           stride=kw.get("stride", 1), dilation=kw.get("dilation", 1),
                           groups=kw.get("groups", 1))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                np.testing.assert_allclose(cm(t(x)).detach().numpy(),
                                           want if x.ndim == xb.ndim else want[0], rtol=1e-12,
                                           atol=1e-12)
                _gradcheck_module(cm, x)
            if torch is None:
                continue
            tm = getattr(torch.nn, cls)(2, 4, k, padding_mode=mode, **kw).double()
            cm.load_state_dict({k: cr.tensor(v.detach().numpy().copy())
                                for k, v in tm.state_dict().items()})
            assert repr(cm) == repr(tm)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's 'same' + even kernel warning
                _compare(cm, tm, (x,))
            for (name, p), (_, tp) in zip(cm.named_parameters(), tm.named_parameters()):
                np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10,
                                           atol=1e-12, err_msg=name)
