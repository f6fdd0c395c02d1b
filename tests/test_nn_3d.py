"""chainrule.nn's 3-d convolution, pooling, normalisation, resampling and padding: checks
without torch in every test (NumPy-loop references, shifted inputs, depth-constant inputs
against the 2-d ops, finite differences), and outputs and gradients (input, weight, bias)
against torch in float64 when torch is installed."""

import math
import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.autograd import gradcheck, gradgradcheck
from chainrule.nn import functional as F
from test_nn_conv import _compare, np_adaptive, np_conv, np_pool, t

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = TF = None

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 2, 4, 5, 6))


def _depth_constant(x2d, depth):
    """(N, C, H, W) repeated along a new depth dim: (N, C, depth, H, W)."""
    return np.repeat(x2d[:, :, None], depth, axis=2)


def _vs_torch(fc, ft, arrays, *args, **kwargs):
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch's 'same' padding note
            _compare(torch, fc, ft, arrays, *args, **kwargs)


# --- convolution ---------------------------------------------------------------------------

CONV3D_CASES = [
    dict(),
    dict(stride=(1, 2, 1), padding=(1, 0, 2), dilation=(2, 1, 1)),
    dict(stride=2, padding=1),
    dict(padding="same", groups=2),
    dict(padding="valid", dilation=(1, 2, 2), groups=2),
]


@pytest.mark.parametrize("kw", CONV3D_CASES)
def test_conv3d_matches_numpy_loop_and_torch(kw):
    g = kw.get("groups", 1)
    w = RNG.standard_normal((4, 2 // g, 2, 3, 2))
    b = RNG.standard_normal(4)
    out = F.conv3d(t(X), t(w), t(b), **kw)
    np.testing.assert_allclose(out.numpy(), np_conv(X, w, b, **kw), rtol=1e-12, atol=1e-12)
    assert F.conv3d(t(X[1]), t(w), **kw).shape == out.shape[1:]  # unbatched
    _vs_torch(F.conv3d, TF and TF.conv3d, (X, w, b), **kw)
    _vs_torch(F.conv3d, TF and TF.conv3d, (X[0], w, None), **kw)


def test_conv3d_one_hot_kernel_shifts_the_input():
    for tap in ((0, 0, 0), (1, 2, 0), (2, 1, 1)):
        w = np.zeros((1, 1, 3, 3, 2))
        w[(0, 0) + tap] = 1.0
        out = F.conv3d(t(X[:, :1]), t(w)).numpy()
        d, h, wd = tap
        np.testing.assert_array_equal(out, X[:, :1, d:d + 2, h:h + 3, wd:wd + 5])


def test_conv3d_of_a_depth_constant_input_is_conv2d_per_slice():
    x2 = X[:, :, 0]
    w = RNG.standard_normal((3, 2, 1, 3, 3))
    out = F.conv3d(t(_depth_constant(x2, 3)), t(w), padding=(0, 1, 1), stride=(1, 2, 1))
    ref = F.conv2d(t(x2), t(w[:, :, 0]), padding=1, stride=(2, 1)).numpy()
    for d in range(3):
        np.testing.assert_allclose(out.numpy()[:, :, d], ref, rtol=1e-13, atol=1e-13)


def test_conv3d_gradcheck_and_gradgradcheck():
    x = t(RNG.standard_normal((1, 2, 3, 3, 2)), True)
    w = t(RNG.standard_normal((2, 1, 2, 2, 1)), True)
    b = t(RNG.standard_normal(2), True)

    def f(x, w, b):
        return F.conv3d(x, w, b, stride=(1, 2, 1), padding=(1, 0, 0), groups=2)

    assert gradcheck(f, (x, w, b))  # central finite differences
    assert gradgradcheck(f, (x, w, b))


CONVT3D_CASES = [
    dict(),
    dict(stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1)),
    dict(stride=2, dilation=(1, 2, 1), groups=2),
]


@pytest.mark.parametrize("kw", CONVT3D_CASES)
def test_conv_transpose3d_is_the_adjoint_of_conv3d_and_matches_torch(kw):
    g = kw.get("groups", 1)
    w = RNG.standard_normal((2, 4 // g, 2, 3, 2))
    b = RNG.standard_normal(4)
    y = F.conv_transpose3d(t(X), t(w), None, **kw)
    # <conv_transpose(x), z> == <x, conv(z)> for the same weight, stride, padding, dilation
    z = RNG.standard_normal(y.shape)
    conv_kw = {k: v for k, v in kw.items() if k != "output_padding"}
    lhs = float((y.numpy() * z).sum())
    rhs = float((X * np_conv(z, w, None, **conv_kw)).sum())
    assert math.isclose(lhs, rhs, rel_tol=1e-11)
    _vs_torch(F.conv_transpose3d, TF and TF.conv_transpose3d, (X, w, b), **kw)
    _vs_torch(F.conv_transpose3d, TF and TF.conv_transpose3d, (X[1], w, None), **kw)


# --- pooling -------------------------------------------------------------------------------

MAXPOOL3D_CASES = [
    dict(k=2),
    dict(k=(2, 3, 2), s=(1, 2, 2), p=1, d=(1, 1, 2), ceil_mode=True),
    dict(k=3, s=2, p=1, ceil_mode=True),
    dict(k=(1, 2, 3), s=(2, 1, 3), d=(2, 2, 1)),
]


@pytest.mark.parametrize("kw", MAXPOOL3D_CASES)
def test_max_pool3d_matches_numpy_loop_and_torch(kw):
    args = (kw["k"], kw.get("s"), kw.get("p", 0), kw.get("d", 1), kw.get("ceil_mode", False))
    out, idx = F.max_pool3d(t(X), *args, return_indices=True)
    ref, ref_idx = np_pool(X, "max", **kw)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    assert idx.dtype == np.int64
    v, i = F.max_pool3d_with_indices(t(X[0]), *args)  # unbatched, PyTorch's other name
    np.testing.assert_array_equal(i.numpy(), ref_idx[0])
    _vs_torch(F.max_pool3d, TF and TF.max_pool3d, (X,), *args, return_indices=True)
    _vs_torch(F.max_pool3d, TF and TF.max_pool3d, (X[1],), *args)


def test_max_pool3d_of_a_known_array():
    x = t(np.arange(64.0).reshape(1, 1, 4, 4, 4), True)
    out, idx = F.max_pool3d(x, 2, return_indices=True)
    # each 2x2x2 window's maximum is its last (largest) entry
    expected = np.arange(64).reshape(4, 4, 4)[1::2, 1::2, 1::2]
    np.testing.assert_array_equal(out.detach().numpy()[0, 0], expected)
    np.testing.assert_array_equal(idx.numpy()[0, 0], expected)
    out.sum().backward()
    grad = np.zeros(64)
    grad[expected.ravel()] = 1
    np.testing.assert_array_equal(x.grad.numpy().ravel(), grad)
    # max_unpool3d puts the maxima back at their indices, zeros elsewhere
    up = F.max_unpool3d(out, idx, 2)
    np.testing.assert_array_equal(up.detach().numpy().ravel(), np.arange(64) * grad)


def test_max_pool3d_gradcheck():
    x = t(RNG.permutation(2 * 4 * 3 * 3).reshape(1, 2, 4, 3, 3) / 7.0, True)  # no ties
    assert gradcheck(lambda x: F.max_pool3d(x, 2, 1, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool3d(x, (3, 2, 2)), (x,))


AVGPOOL3D_CASES = [
    dict(k=2),
    dict(k=(2, 3, 2), s=(1, 2, 2), p=1, ceil_mode=True),
    dict(k=3, s=2, p=1, ceil_mode=True),
    dict(k=(1, 2, 3), s=(2, 1, 3)),
]


@pytest.mark.parametrize("kw", AVGPOOL3D_CASES)
def test_avg_pool3d_matches_numpy_loop_and_torch(kw):
    args = (kw["k"], kw.get("s"), kw.get("p", 0), kw.get("ceil_mode", False))
    for cip, div in ((True, None), (False, None), (True, 5), (False, 3)):
        out = F.avg_pool3d(t(X), *args, cip, div)
        ref, _ = np_pool(X, "avg", **kw, count_include_pad=cip, divisor_override=div)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-14)
        _vs_torch(F.avg_pool3d, TF and TF.avg_pool3d, (X,), *args, cip, div)
    _vs_torch(F.avg_pool3d, TF and TF.avg_pool3d, (X[0],), *args)


def test_avg_pool3d_of_a_depth_constant_input_is_avg_pool2d_per_slice():
    x2 = X[:, :, 1]
    out = F.avg_pool3d(t(_depth_constant(x2, 4)), (2, 3, 2), (2, 2, 1), (1, 1, 0),
                       count_include_pad=False)
    ref = F.avg_pool2d(t(x2), (3, 2), (2, 1), (1, 0), count_include_pad=False).numpy()
    assert out.shape[2] == 3
    for d in range(3):
        np.testing.assert_allclose(out.numpy()[:, :, d], ref, rtol=1e-13, atol=1e-14)


def test_avg_pool3d_gradcheck_and_gradgradcheck():
    x = t(RNG.standard_normal((1, 1, 3, 3, 2)), True)

    def f(x):
        return F.avg_pool3d(x, 2, 1, 1, ceil_mode=True, count_include_pad=False)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.parametrize("size", [(3, 2, 4), 2, (None, 3, None), 1, (4, 5, 6)])
def test_adaptive_pools_3d(size):
    full = tuple(L if o is None else o for L, o in
                 zip(X.shape[2:], size if isinstance(size, tuple) else (size,) * 3))
    np.testing.assert_allclose(F.adaptive_avg_pool3d(t(X), size).numpy(),
                               np_adaptive(X, full, "avg"), rtol=1e-12)
    out, idx = F.adaptive_max_pool3d(t(X), size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), np_adaptive(X, full, "max"))
    flat = X.reshape(2, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 2, -1), 2),
                                  out.numpy().reshape(2, 2, -1))
    v, i = F.adaptive_max_pool3d_with_indices(t(X[0]), size)
    np.testing.assert_array_equal(i.numpy(), idx.numpy()[0])
    _vs_torch(F.adaptive_avg_pool3d, TF and TF.adaptive_avg_pool3d, (X,), size)
    _vs_torch(F.adaptive_max_pool3d, TF and TF.adaptive_max_pool3d, (X,), size, True)
    _vs_torch(F.adaptive_max_pool3d, TF and TF.adaptive_max_pool3d, (X[1],), size)


@pytest.mark.parametrize("p, kw", [(2, dict(kernel_size=2)),
                                   (3, dict(kernel_size=(2, 2, 3), stride=(1, 2, 2),
                                            ceil_mode=True)),
                                   (1.5, dict(kernel_size=(1, 3, 2), stride=1)),
                                   (math.inf, dict(kernel_size=2)),
                                   (-math.inf, dict(kernel_size=(2, 1, 3), stride=2))])
def test_lp_pool3d(p, kw):
    xp = np.abs(X) + 0.1  # positive, so fractional powers stay real
    out = F.lp_pool3d(t(xp), p, **kw)
    k = kw["kernel_size"]
    s, ceil = kw.get("stride"), kw.get("ceil_mode", False)
    if math.isinf(p):  # max (or min) of |x|
        ref, _ = np_pool(np.sign(p) * xp, "max", k, s, ceil_mode=ceil)
        ref = np.sign(p) * ref
    else:  # (sum over the window of x^p)^(1/p)
        ref, _ = np_pool(xp ** p, "avg", k, s, ceil_mode=ceil)
        ref = (ref * math.prod(k if isinstance(k, tuple) else (k,) * 3)) ** (1 / p)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)
    _vs_torch(F.lp_pool3d, TF and TF.lp_pool3d, (xp,), p, **kw)


@pytest.mark.parametrize("n", [1, 2])
def test_lp_pool_inf_norm_is_max_pool_of_abs_in_1d_and_2d(n):
    # (a bug in lp_pool1d/2d: x ** inf averaged, then ** 0, gave ones)
    x = X[0, :, 0, :, 1] if n == 1 else X[0, :, 0]
    lp, mp = getattr(F, f"lp_pool{n}d"), getattr(F, f"max_pool{n}d")
    np.testing.assert_array_equal(lp(t(x), math.inf, 2).numpy(), mp(t(np.abs(x)), 2).numpy())
    np.testing.assert_array_equal(lp(t(x), -math.inf, 2).numpy(),
                                  -mp(t(-np.abs(x)), 2).numpy())
    if torch is not None:
        tlp = getattr(TF, f"lp_pool{n}d")
        for p in (math.inf, -math.inf):
            _vs_torch(lp, tlp, (x,), p, 2)


def test_max_unpool3d_matches_torch():
    out, idx = F.max_pool3d(t(X), 2, (1, 2, 2), return_indices=True)
    up = F.max_unpool3d(out, idx, 2, (1, 2, 2), output_size=(4, 5, 7))
    assert up.shape == (2, 2, 4, 5, 7)
    flat = up.numpy().reshape(2, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 2, -1), 2),
                                  out.numpy().reshape(2, 2, -1))
    assert np.count_nonzero(flat) <= idx.numpy()[0, 0].size * 4
    if torch is not None:
        ti = torch.tensor(idx.numpy())
        _vs_torch(lambda v: F.max_unpool3d(v, idx, 2, (1, 2, 2), output_size=(4, 5, 7)),
                  lambda v: TF.max_unpool3d(v, ti, 2, (1, 2, 2), output_size=(4, 5, 7)),
                  (out.numpy(),))
        _vs_torch(lambda v: F.max_unpool3d(v, idx[0], 2, (1, 2, 2), output_size=X.shape[2:]),
                  lambda v: TF.max_unpool3d(v, ti[0], 2, (1, 2, 2), output_size=X.shape[2:]),
                  (out.numpy()[0],))


# --- interpolate, pad, grid_sample ---------------------------------------------------------

INTERP_CASES = [
    ("trilinear", dict(size=(5, 7, 9), align_corners=False)),
    ("trilinear", dict(size=(3, 2, 4), align_corners=True)),
    ("trilinear", dict(scale_factor=(1.7, 0.6, 2.3), align_corners=False)),
    ("trilinear", dict(scale_factor=2, align_corners=True)),
    ("nearest", dict(size=(5, 7, 9))),
    ("nearest", dict(scale_factor=(2.0, 0.6, 1.5))),
    ("nearest-exact", dict(size=(3, 8, 4))),
    ("nearest-exact", dict(scale_factor=(1.1, 1.3, 2.2))),
    ("area", dict(size=(2, 3, 4))),
    ("area", dict(scale_factor=0.7)),
]


@pytest.mark.parametrize("mode, kw", INTERP_CASES)
def test_interpolate_5d(mode, kw):
    # without torch: a depth-constant input resampled to the same depth is the 2-d mode
    # on each slice
    x2 = X[:, :, 0]
    size = kw.get("size")
    kw2 = dict(kw)
    if size is not None:
        kw2["size"] = size[1:]
        kw3 = dict(kw, size=(4,) + size[1:])
    else:
        sf = kw["scale_factor"]
        sf = sf if isinstance(sf, tuple) else (sf,) * 3
        kw2["scale_factor"] = sf[1:]
        kw3 = dict(kw, scale_factor=(1.0,) + sf[1:])
    mode2 = {"trilinear": "bilinear"}.get(mode, mode)
    out = F.interpolate(t(_depth_constant(x2, 4)), mode=mode, **kw3).numpy()
    ref = F.interpolate(t(x2), mode=mode2, **kw2).numpy()
    for d in range(4):
        np.testing.assert_allclose(out[:, :, d], ref, rtol=1e-13, atol=1e-13)
    _vs_torch(F.interpolate, TF and TF.interpolate, (X,), mode=mode, **kw)


def test_interpolate_5d_nearest_picks_and_gradient():
    # PyTorch's 3-d nearest kernel uses the 1-d rule (floor(i / scale) in the input's
    # type, no copy when the output is as long as the input): scale 1.1 over 4 entries
    x = t(np.arange(4.0).reshape(1, 1, 4, 1, 1), True)
    out = F.interpolate(x, scale_factor=(1.1, 1.0, 1.0), mode="nearest")
    np.testing.assert_array_equal(out.detach().numpy().ravel(), [0, 0, 1, 2])
    out.backward(cr.ones(out.shape))
    np.testing.assert_array_equal(x.grad.numpy().ravel(), [2, 1, 1, 0])
    if torch is not None:  # the values agree; PyTorch's backward takes a shortcut here
        ref = TF.interpolate(torch.arange(4.0, dtype=torch.float64).reshape(1, 1, 4, 1, 1),
                             scale_factor=(1.1, 1.0, 1.0), mode="nearest")
        np.testing.assert_array_equal(out.detach().numpy(), ref.numpy())
        ref = TF.interpolate(torch.tensor(X), scale_factor=(1.1, 1.3, 2.2), mode="nearest")
        np.testing.assert_array_equal(
            F.interpolate(t(X), scale_factor=(1.1, 1.3, 2.2), mode="nearest").numpy(),
            ref.numpy())


def test_trilinear_gradcheck_and_upsample_module():
    x = t(RNG.standard_normal((1, 1, 2, 3, 2)), True)
    assert gradcheck(lambda x: F.interpolate(x, size=(3, 4, 3), mode="trilinear",
                                             align_corners=True), (x,))
    up = nn.Upsample(scale_factor=2, mode="trilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='trilinear')"
    assert up(t(X)).shape == (2, 2, 8, 10, 12)
    _vs_torch(up, torch and torch.nn.Upsample(scale_factor=2, mode="trilinear"), (X,))
    up = nn.Upsample(size=(3, 4, 5), mode="trilinear", align_corners=True)
    _vs_torch(up, torch and torch.nn.Upsample(size=(3, 4, 5), mode="trilinear",
                                              align_corners=True), (X,))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_5d(mode):
    pad = (1, 2, 0, 1, 2, 1)
    out = F.pad(t(X), pad, mode=mode).numpy()
    np_mode = {"replicate": "edge", "circular": "wrap"}.get(mode, mode)
    ref = np.pad(X, [(0, 0), (0, 0), (2, 1), (0, 1), (1, 2)], mode=np_mode)
    np.testing.assert_array_equal(out, ref)
    _vs_torch(F.pad, TF and TF.pad, (X,), pad, mode=mode)
    _vs_torch(F.pad, TF and TF.pad, (X[0],), pad, mode=mode)  # unbatched (C, D, H, W)
    name = {"constant": "ConstantPad3d", "reflect": "ReflectionPad3d",
            "replicate": "ReplicationPad3d", "circular": "CircularPad3d"}[mode]
    args = (pad, 0.0) if mode == "constant" else (pad,)
    np.testing.assert_array_equal(getattr(nn, name)(*args)(t(X)).numpy(), ref)
    if mode == "constant":
        np.testing.assert_array_equal(nn.ZeroPad3d(pad)(t(X)).numpy(), ref)


@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_and_grid_sample_5d(align_corners):
    # the identity map samples the input back (align_corners: exactly the voxel centres)
    eye = np.tile(np.eye(3, 4), (2, 1, 1))
    grid = F.affine_grid(t(eye), (2, 2, 4, 5, 6), align_corners=align_corners)
    assert grid.shape == (2, 4, 5, 6, 3)
    for mode in ("bilinear", "nearest"):
        back = F.grid_sample(t(X), grid, mode=mode, align_corners=align_corners)
        np.testing.assert_allclose(back.numpy(), X, rtol=1e-12, atol=1e-12)
    # a grid constant along depth on a depth-constant input: the 2-d sampler per slice
    g2 = RNG.uniform(-1.1, 1.1, (2, 3, 4, 2))
    g3 = np.concatenate([np.repeat(g2[:, None], 2, 1), np.zeros((2, 2, 3, 4, 1))], -1)
    x2 = X[:, :, 0]
    for pm in ("zeros", "border", "reflection"):
        out = F.grid_sample(t(_depth_constant(x2, 3)), t(g3), padding_mode=pm,
                            align_corners=align_corners).numpy()
        ref = F.grid_sample(t(x2), t(g2), padding_mode=pm,
                            align_corners=align_corners).numpy()
        for d in range(2):
            np.testing.assert_allclose(out[:, :, d], ref, rtol=1e-12, atol=1e-12)
    if torch is not None:
        theta = RNG.standard_normal((2, 3, 4))
        _vs_torch(F.affine_grid, TF.affine_grid, (theta,), (2, 3, 3, 4, 5),
                  align_corners=align_corners)
        g = RNG.uniform(-1.2, 1.2, (2, 3, 2, 4, 3))
        for mode in ("bilinear", "nearest"):
            for pm in ("zeros", "border", "reflection"):
                _vs_torch(F.grid_sample, TF.grid_sample, (X, g), mode=mode, padding_mode=pm,
                          align_corners=align_corners)


def test_grid_sample_5d_gradcheck():
    x = t(RNG.standard_normal((1, 1, 2, 3, 2)), True)
    g = t(RNG.uniform(-0.9, 0.9, (1, 2, 1, 2, 3)), True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, align_corners=False), (x, g))
    theta = t(RNG.standard_normal((1, 3, 4)), True)
    assert gradcheck(lambda th: F.affine_grid(th, (1, 1, 2, 2, 3), align_corners=True),
                     (theta,))


# --- modules -------------------------------------------------------------------------------

MODULES = [
    ("Conv3d", (2, 4, 3), dict(padding="same", padding_mode="reflect"),
     "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=same, "
     "padding_mode=reflect)"),
    ("Conv3d", (2, 4, (1, 2, 3)), dict(stride=2, groups=2, bias=False, dilation=(1, 2, 1),
                                       padding=(0, 1, 2), padding_mode="circular"),
     "Conv3d(2, 4, kernel_size=(1, 2, 3), stride=(2, 2, 2), padding=(0, 1, 2), "
     "dilation=(1, 2, 1), groups=2, bias=False, padding_mode=circular)"),
    ("Conv3d", (2, 3, 2), dict(padding=1, padding_mode="replicate"),
     "Conv3d(2, 3, kernel_size=(2, 2, 2), stride=(1, 1, 1), padding=(1, 1, 1), "
     "padding_mode=replicate)"),
    ("ConvTranspose3d", (2, 4, 3), dict(stride=2, output_padding=1),
     "ConvTranspose3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2), "
     "output_padding=(1, 1, 1))"),
    ("MaxPool3d", (2,), dict(stride=1, padding=1),
     "MaxPool3d(kernel_size=2, stride=1, padding=1, dilation=1, ceil_mode=False)"),
    ("AvgPool3d", ((1, 2, 3),), dict(padding=(0, 1, 1), ceil_mode=True, divisor_override=2),
     "AvgPool3d(kernel_size=(1, 2, 3), stride=(1, 2, 3), padding=(0, 1, 1))"),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, "AdaptiveAvgPool3d(output_size=(2, None, 3))"),
    ("AdaptiveMaxPool3d", (2,), {}, "AdaptiveMaxPool3d(output_size=2)"),
    ("LPPool3d", (2, 3), dict(stride=1),
     "LPPool3d(norm_type=2, kernel_size=3, stride=1, ceil_mode=False)"),
    ("BatchNorm3d", (2,), {},
     "BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=True)"),
    ("InstanceNorm3d", (2,), dict(affine=True, track_running_stats=True),
     "InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, "
     "track_running_stats=True)"),
    ("InstanceNorm3d", (2,), {},
     "InstanceNorm3d(2, eps=1e-05, momentum=0.1, affine=False, bias=False, "
     "track_running_stats=False)"),
]


@pytest.mark.parametrize("name, args, kw, rep", MODULES)
def test_modules_3d_repr_state_dict_and_forward(name, args, kw, rep):
    cr.manual_seed(0)
    m = getattr(nn, name)(*args, **kw).double()
    assert repr(m) == rep
    x = np.abs(X) + 0.1 if name == "LPPool3d" else X
    if torch is None:
        assert m(t(x)).ndim == 5
        return
    tm = getattr(torch.nn, name)(*args, **kw).double()
    assert repr(tm) == rep
    sd = tm.state_dict()
    assert list(m.state_dict()) == list(sd)
    m.load_state_dict({k: cr.tensor(v.numpy().copy()) for k, v in sd.items()})
    for train in (True, False):
        m.train(train)
        tm.train(train)
        _vs_torch(m, tm, (x,))
        _vs_torch(m, tm, (x[0],)) if name not in ("BatchNorm3d",) else None
        for k, v in tm.state_dict().items():  # running statistics follow torch's
            np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), rtol=1e-10)
        for (pn, p), (_, tp) in zip(m.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=pn)


@pytest.mark.parametrize("cls, fan_in", [(lambda: nn.Conv3d(4, 6, (3, 2, 2), groups=2), 24),
                                         (lambda: nn.ConvTranspose3d(6, 4, 2, groups=2), 16)])
def test_conv3d_modules_init_as_torch(cls, fan_in):
    cr.manual_seed(0)
    m = cls()
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), ...)
    for p in (m.weight, m.bias):
        assert 0.5 * bound < np.abs(p.detach().numpy()).max() <= bound
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    if torch is not None:
        tm = {nn.Conv3d: torch.nn.Conv3d,
              nn.ConvTranspose3d: torch.nn.ConvTranspose3d}[type(m)]
        tw = tm(m.in_channels, m.out_channels, m.kernel_size, groups=m.groups).weight
        assert tuple(tw.shape) == m.weight.shape


def test_conv_transpose3d_module_output_size():
    m = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1)
    y = m(t(X), output_size=(8, 10, 12))
    assert y.shape == (2, 3, 8, 10, 12)
    with pytest.raises(ValueError, match="requested an output size"):
        m(t(X), output_size=(9, 10, 12))
    if torch is not None:
        tm = torch.nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1).double()
        m.load_state_dict({k: cr.tensor(v.detach().numpy().copy())
                           for k, v in tm.state_dict().items()})
        _vs_torch(lambda x: m(x, output_size=(8, 9, 12)),
                  lambda x: tm(x, output_size=(8, 9, 12)), (X,))


def test_pool_and_unpool_modules_3d():
    out, idx = nn.MaxPool3d(2, return_indices=True)(t(X))
    np.testing.assert_array_equal(out.numpy(), np_pool(X, "max", 2)[0])
    up = nn.MaxUnpool3d(2)
    assert repr(up) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"
    assert up(out, idx, output_size=(5, 5, 7)).shape == (2, 2, 5, 5, 7)
    o, i = nn.AdaptiveMaxPool3d(2, True)(t(X))
    assert o.shape == i.shape == (2, 2, 2, 2, 2)
    np.testing.assert_allclose(nn.AvgPool3d(2, divisor_override=1)(t(X)).numpy(),
                               np_pool(X, "avg", 2)[0] * 8, rtol=1e-12)
    # the 3-d modules are not subclasses of their 1-d/2-d namesakes (as PyTorch's)
    assert not isinstance(nn.AvgPool3d(2), (nn.AvgPool1d, nn.AvgPool2d))
    assert not isinstance(nn.AdaptiveMaxPool3d(2), (nn.AdaptiveMaxPool1d,
                                                    nn.AdaptiveMaxPool2d))
    assert not isinstance(nn.BatchNorm3d(2), nn.BatchNorm2d)
    assert not hasattr(nn.AvgPool1d(2), "divisor_override")  # (nor has PyTorch's)


def test_norms_3d_without_torch():
    bn = nn.BatchNorm3d(2).double()
    y = bn(t(X)).detach().numpy()
    mean = X.mean((0, 2, 3, 4), keepdims=True)
    ref = (X - mean) / np.sqrt(X.var((0, 2, 3, 4), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-12)
    count = X.size // 2
    np.testing.assert_allclose(bn.running_var.numpy(),
                               0.9 + 0.1 * X.var((0, 2, 3, 4)) * count / (count - 1))
    inorm = nn.InstanceNorm3d(2)
    y = inorm(t(X[0])).detach().numpy()  # unbatched (C, D, H, W)
    ref = (X[0] - X[0].mean((1, 2, 3), keepdims=True)) / np.sqrt(
        X[0].var((1, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-12)
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.BatchNorm3d(2)))
    assert type(sync[0]) is nn.SyncBatchNorm


def test_dropout3d_and_feature_alpha_dropout():
    cr.manual_seed(1)
    y = nn.Dropout3d(0.5)(t(np.ones((4, 6, 2, 3, 2)))).numpy()
    per_channel = y.reshape(4, 6, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()  # whole channels dropped
    assert repr(nn.Dropout3d()) == "Dropout3d(p=0.5, inplace=False)"
    m = nn.FeatureAlphaDropout(0.2)
    assert m(t(X)).shape == X.shape
    assert m.eval()(t(X)).numpy().tolist() == X.tolist()


# --- names and errors ----------------------------------------------------------------------

def test_top_level_names():
    for name in ("conv3d", "conv_transpose3d", "max_pool3d"):
        assert getattr(cr, name) is getattr(F, name)
        if torch is not None:
            assert hasattr(torch, name)
    for name in ("avg_pool3d", "adaptive_avg_pool3d", "lp_pool3d", "max_unpool3d"):
        if torch is not None:  # names torch has only under nn.functional
            assert hasattr(torch, name) == hasattr(cr, name)
    assert cr.conv3d(t(X), t(np.ones((1, 2, 1, 1, 1)))).shape == (2, 1, 4, 5, 6)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: F.conv3d(cr.randn(2, 3, 4), cr.randn(1, 2, 1, 1, 1)), RuntimeError,
     r"conv3d: expected input with 4 or 5 dimensions \(got 3-D input"),
    (lambda: F.conv3d(cr.randn(1, 2, 3, 3, 3), cr.randn(1, 2, 1, 1)), RuntimeError,
     "expected weight with 5 dimensions"),
    (lambda: F.conv_transpose3d(cr.randn(1, 1, 2, 2, 2, 2), cr.randn(1, 1, 1, 1, 1)),
     RuntimeError, r"conv_transpose3d: expected input with 4 or 5 dimensions \(got 6-D"),
    (lambda: F.max_pool3d(cr.randn(2, 3, 4), 2), RuntimeError,
     r"max_pool3d: expected input with 4 or 5 dimensions"),
    (lambda: F.avg_pool3d(cr.randn(2, 3, 4), 2), RuntimeError,
     r"avg_pool3d: expected input with 4 or 5 dimensions"),
    (lambda: F.adaptive_max_pool3d(cr.randn(2, 3, 4), 2), RuntimeError,
     r"adaptive_max_pool3d: expected input with 4 or 5 dimensions"),
    (lambda: F.max_unpool3d(cr.randn(2, 3, 4), cr.zeros(2, 3, 4, dtype=cr.int64), 2),
     RuntimeError, r"max_unpool3d: expected input with 4 or 5 dimensions"),
    (lambda: F.avg_pool3d(cr.randn(1, 1, 2, 2, 2), 2, divisor_override=0), RuntimeError,
     "divisor must be not zero"),
    (lambda: nn.BatchNorm3d(2)(cr.randn(2, 2, 3, 3)), ValueError,
     r"BatchNorm3d: expected 5D input \(got 4D input"),
    (lambda: nn.InstanceNorm3d(2)(cr.randn(2, 3, 4)), ValueError,
     r"expected 4D or 5D input \(got 3D input\)"),
    (lambda: F.interpolate(cr.randn(1, 1, 2, 2), size=2, mode="trilinear"),
     NotImplementedError, "Got 4D input, but trilinear mode needs 5D input"),
    (lambda: F.grid_sample(cr.randn(1, 1, 2, 2, 2), cr.zeros(1, 2, 2, 2, 2)), RuntimeError,
     "expected grid to have size 3 in last dimension"),
    (lambda: F.grid_sample(cr.randn(1, 1, 2, 2, 2), cr.zeros(1, 2, 2, 2)), RuntimeError,
     "expected 4D or 5D input and grid with same number of dimensions"),
    (lambda: F.grid_sample(cr.randn(1, 1, 2, 2, 2), cr.zeros(1, 2, 2, 2, 3), mode="bicubic"),
     RuntimeError, "bicubic interpolation only supports 4D input"),
    (lambda: F.affine_grid(cr.zeros(1, 2, 3), (1, 1, 2, 2, 2)), ValueError,
     "Expected a batch of 3D affine matrices of shape Nx3x4"),
    (lambda: F.affine_grid(cr.zeros(1, 3, 4), (1, 1, 2, 2, 2, 2)), NotImplementedError,
     "affine_grid only supports 4D and 5D sizes"),
])
def test_errors_3d(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
