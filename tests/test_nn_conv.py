"""chainrule.nn convolution and pooling: NumPy-loop references, gradcheck, modules, errors;
torch comparisons (outputs and gradients, ties, a small CNN) when torch is installed."""

import copy
import functools
import itertools
import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn
from chainrule.autograd import gradcheck, gradgradcheck
from chainrule.nn import functional as F

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(2024)


def _pair(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# --- NumPy references (loops over output positions) ---------------------------------------

def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Direct loop: out[n, o, pos] = sum_{c in o's group, taps} x[n, c, pos*s + tap*d - p] w."""
    n = w.ndim - 2
    s, d = _pair(stride, n), _pair(dilation, n)
    k = w.shape[2:]
    if padding == "same":
        tot = [di * (ki - 1) for ki, di in zip(k, d)]
        pads = [(t // 2, t - t // 2) for t in tot]
    elif padding == "valid":
        pads = [(0, 0)] * n
    else:
        pads = [(p, p) for p in _pair(padding, n)]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads)
    outs = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    c_out, cg = w.shape[:2]
    dg = c_out // groups
    out = np.zeros((x.shape[0], c_out, *outs))
    for bi, o, pos in itertools.product(range(x.shape[0]), range(c_out), np.ndindex(*outs)):
        g = o // dg
        acc = 0.0
        for c in range(cg):
            for tap in np.ndindex(*k):
                idx = tuple(pi * si + ti * di for pi, si, ti, di in zip(pos, s, tap, d))
                acc += xp[(bi, g * cg + c) + idx] * w[(o, c) + tap]
        out[(bi, o) + pos] = acc + (0.0 if b is None else b[o])
    return out


def np_pool_windows(L, k, s, p, d, ceil_mode):
    """Window starts (in input coordinates, may be negative) by enumeration: floor mode keeps
    windows that end inside the padded input; ceil mode also keeps a last partial one that
    starts inside the input or the left padding."""
    starts, t = [], -p
    while True:
        end = t + d * (k - 1)
        if not (end <= L + p - 1 or (ceil_mode and t < L and end - s < L + p - 1)):
            return starts
        starts.append(t)
        t += s


def np_pool(x, kind, k, s=None, p=0, d=1, ceil_mode=False, count_include_pad=True,
            divisor_override=None):
    """Max / average pooling of (N, C, *S) by loops; returns (out, flat argmax indices)."""
    n = x.ndim - 2
    k = _pair(k, n)
    s = k if s is None else _pair(s, n)
    p, d = _pair(p, n), _pair(d, n)
    starts = [np_pool_windows(x.shape[2 + i], k[i], s[i], p[i], d[i], ceil_mode)
              for i in range(n)]
    outs = tuple(len(st) for st in starts)
    out = np.zeros(x.shape[:2] + outs)
    arg = np.zeros(x.shape[:2] + outs, dtype=np.int64)
    plane = x.shape[2:]
    for bc in np.ndindex(*x.shape[:2]):
        for pos in np.ndindex(*outs):
            vals, flats, incl = [], [], 1
            for tap in np.ndindex(*k):
                idx = tuple(starts[i][pos[i]] + tap[i] * d[i] for i in range(n))
                if all(0 <= j < L for j, L in zip(idx, plane)):
                    vals.append(x[bc + idx])
                    flats.append(int(np.ravel_multi_index(idx, plane)))
            for i in range(n):  # taps inside the padded input (count_include_pad)
                st = starts[i][pos[i]]
                incl *= min(st + k[i], plane[i] + p[i]) - st
            if kind == "max":
                j = int(np.argmax(vals))
                out[bc + pos], arg[bc + pos] = vals[j], flats[j]
            else:
                div = divisor_override or (incl if count_include_pad else len(vals))
                out[bc + pos] = sum(vals) / div
    return out, arg


def np_adaptive(x, out_size, kind, return_indices=False):
    """Adaptive pooling by loops: window o spans floor(o L / O) .. ceil((o + 1) L / O); max
    also returns the flat index (in the plane) of the first maximum, row-major."""
    plane = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(out_size))
    arg = np.zeros(x.shape[:2] + tuple(out_size), dtype=np.int64)
    for pos in np.ndindex(*out_size):
        sl = tuple(slice(math.floor(o * L / O), math.ceil((o + 1) * L / O))
                   for o, L, O in zip(pos, plane, out_size))
        win = x[(Ellipsis,) + sl].reshape(x.shape[:2] + (-1,))
        out[(Ellipsis,) + pos] = win.max(-1) if kind == "max" else win.mean(-1)
        local = np.unravel_index(win.argmax(-1), tuple(s.stop - s.start for s in sl))
        arg[(Ellipsis,) + pos] = np.ravel_multi_index(
            tuple(j + s.start for j, s in zip(local, sl)), plane)
    return (out, arg) if return_indices else out


def np_scatter_grad(shape, idx, g):
    """The gradient of a max pooling: each output's cotangent added at its argmax."""
    grad = np.zeros(shape[:2] + (math.prod(shape[2:]),))
    for bc in np.ndindex(*shape[:2]):
        np.add.at(grad[bc], idx[bc].ravel(), g[bc].ravel())
    return grad.reshape(shape)


def t(a, grad=False):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


# --- convolution without torch ------------------------------------------------------------

CONV2D_CASES = [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1)),
    dict(padding="same", dilation=2, groups=2),
    dict(padding="valid", groups=4, stride=(2, 1)),
]


@pytest.mark.parametrize("kw", CONV2D_CASES)
def test_conv2d_matches_numpy_loop(kw):
    g = kw.get("groups", 1)
    x = RNG.standard_normal((2, 4, 6, 5))
    w = RNG.standard_normal((4, 4 // g, 3, 2))
    b = RNG.standard_normal(4)
    out = F.conv2d(t(x), t(w), t(b), **kw)
    np.testing.assert_allclose(out.numpy(), np_conv(x, w, b, **kw), rtol=1e-12, atol=1e-12)
    # unbatched input: same numbers without the batch dim; bias None
    out1 = F.conv2d(t(x[1]), t(w), None, **kw)
    np.testing.assert_allclose(out1.numpy(), np_conv(x[1:], w, None, **kw)[0], rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("kw", [dict(), dict(stride=3, padding=2, dilation=2),
                                dict(padding="same", groups=3), dict(padding="same",
                                                                     dilation=3)])
def test_conv1d_matches_numpy_loop(kw):
    g = kw.get("groups", 1)
    x = RNG.standard_normal((2, 3, 11))
    w = RNG.standard_normal((6, 3 // g, 4))
    b = RNG.standard_normal(6)
    out = F.conv1d(t(x), t(w), t(b), **kw)
    np.testing.assert_allclose(out.numpy(), np_conv(x, w, b, **kw), rtol=1e-12, atol=1e-12)
    assert F.conv1d(t(x[0]), t(w), **kw).shape == out.shape[1:]


def test_conv_output_shapes_and_dtype():
    x = cr.randn(2, 3, 9, 8, dtype=cr.float32)
    for k, d in ((3, 1), (4, 1), (3, 2), (2, 3)):
        w = cr.randn(5, 3, k, k, dtype=cr.float32)
        assert F.conv2d(x, w, padding="same", dilation=d).shape == (2, 5, 9, 8)
        assert F.conv2d(x, w, padding="valid", dilation=d).shape == \
            (2, 5, 9 - d * (k - 1), 8 - d * (k - 1))
    out = F.conv2d(x, cr.randn(4, 3, 3, 3, dtype=cr.float32), stride=2, padding=1)
    assert out.shape == (2, 4, 5, 4) and out.dtype == np.float32
    assert F.conv1d(cr.randn(3, 10), cr.randn(2, 3, 3), stride=4).shape == (2, 2)


def test_conv2d_gradcheck_and_gradgradcheck():
    x, w, b = t(RNG.standard_normal((2, 4, 5, 4)), True), \
        t(RNG.standard_normal((2, 2, 3, 2)), True), t(RNG.standard_normal(2), True)

    def f(x, w, b):
        return F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)

    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding="same"),
                     (t(RNG.standard_normal((1, 2, 6)), True),
                      t(RNG.standard_normal((3, 2, 3)), True)))


# --- pooling without torch ----------------------------------------------------------------

MAXPOOL_CASES = [
    dict(k=2),
    dict(k=3, s=2, p=1, ceil_mode=True),
    dict(k=(3, 2), s=(2, 1), p=(1, 1), d=(2, 1)),
    dict(k=3, s=2, ceil_mode=True),
    dict(k=(2, 3), s=(3, 2), p=(1, 0), ceil_mode=True),
]


@pytest.mark.parametrize("kw", MAXPOOL_CASES)
def test_max_pool2d_matches_numpy_loop(kw):
    x = RNG.standard_normal((2, 3, 7, 8))
    out, idx = F.max_pool2d(t(x), kw["k"], kw.get("s"), kw.get("p", 0), kw.get("d", 1),
                            kw.get("ceil_mode", False), return_indices=True)
    ref, ref_idx = np_pool(x, "max", **kw)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    assert idx.dtype == np.int64


@pytest.mark.parametrize("kw", MAXPOOL_CASES)
def test_avg_pool2d_matches_numpy_loop(kw):
    if "d" in kw:
        kw = {**kw, "d": 1}
    x = RNG.standard_normal((2, 2, 7, 8))
    for cip, div in ((True, None), (False, None), (True, 5)):
        out = F.avg_pool2d(t(x), kw["k"], kw.get("s"), kw.get("p", 0),
                           kw.get("ceil_mode", False), cip, div)
        ref, _ = np_pool(x, "avg", **kw, count_include_pad=cip, divisor_override=div)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("k, s, p, d, ceil", [(3, 2, 1, 1, True), (2, None, 0, 1, False),
                                              (3, 3, 1, 2, True), (4, 3, 2, 1, True)])
def test_pool1d_matches_numpy_loop(k, s, p, d, ceil):
    x = RNG.standard_normal((2, 3, 10))
    out, idx = F.max_pool1d(t(x), k, s, p, d, ceil, return_indices=True)
    ref, ref_idx = np_pool(x, "max", k, s, p, d, ceil)
    np.testing.assert_array_equal(out.numpy(), ref)
    np.testing.assert_array_equal(idx.numpy(), ref_idx)
    for cip in (True, False):
        out = F.avg_pool1d(t(x[0]), k, s, p, ceil, cip)  # unbatched
        ref, _ = np_pool(x[:1], "avg", k, s, p, 1, ceil, cip)
        np.testing.assert_allclose(out.numpy(), ref[0], rtol=1e-12)


def test_pool_ceil_mode_shapes():
    x = cr.randn(1, 1, 5, 5)
    assert F.max_pool2d(x, 2).shape == (1, 1, 2, 2)
    assert F.max_pool2d(x, 2, ceil_mode=True).shape == (1, 1, 3, 3)
    # the last window would start in the right padding only: dropped
    assert F.max_pool2d(x, 2, 2, padding=1, ceil_mode=True).shape == (1, 1, 3, 3)
    assert F.avg_pool2d(cr.randn(1, 6, 6), 3, 2, 1, ceil_mode=True).shape == (1, 4, 4)
    assert F.avg_pool1d(cr.randn(1, 1, 6), 4, 3, ceil_mode=True).shape == (1, 1, 2)


def test_adaptive_pools_match_numpy_loop():
    x = RNG.standard_normal((2, 3, 7, 5))
    for size in ((3, 2), (7, 5), (4, 4), (1, 1), (2, 5)):
        np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), size).numpy(),
                                   np_adaptive(x, size, "avg"), rtol=1e-12)
        np.testing.assert_array_equal(F.adaptive_max_pool2d(t(x), size).numpy(),
                                      np_adaptive(x, size, "max"))
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(x[0, :, :, 0]), 3).numpy(),
                               np_adaptive(x[:1, :, :, 0], (3,), "avg")[0], rtol=1e-12)
    assert F.adaptive_avg_pool2d(t(x), (None, 2)).shape == (2, 3, 7, 2)


def test_pool_gradcheck():
    x = t(RNG.permutation(2 * 2 * 6 * 5).reshape(2, 2, 6, 5) / 7.0, True)  # no ties
    assert gradcheck(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                            count_include_pad=False), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool2d(x, (4, 3)), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool2d(x, (4, 3)), (x,))


def test_max_pool_tie_gradient_goes_to_first_maximum():
    x = t([[[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]]], True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[1, 0, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(idx.numpy().ravel(), [0, 2])


# --- modules ------------------------------------------------------------------------------

def test_conv_modules_parameters_and_init():
    cr.manual_seed(0)
    m = nn.Conv2d(6, 8, (3, 2), stride=2, padding=1, groups=2)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert m.weight.shape == (8, 3, 3, 2) and m.bias.shape == (8,)
    assert m.weight.dtype == cr.get_default_dtype()
    bound = 1 / math.sqrt(3 * 3 * 2)  # kaiming_uniform_(a=sqrt(5)): U(-1/sqrt(fan_in), ...)
    for p in (m.weight, m.bias):
        top = np.abs(p.detach().numpy()).max()
        assert 0.5 * bound < top <= bound
    assert m(cr.randn(2, 6, 5, 5)).shape == (2, 8, 3, 3)
    m1 = nn.Conv1d(2, 4, 3, bias=False, padding="same", dtype=cr.float32)
    assert m1.bias is None and m1.weight.shape == (4, 2, 3) and m1.weight.dtype == np.float32
    assert m1(cr.randn(2, 7, dtype=cr.float32)).shape == (4, 7)
    assert repr(m) == "Conv2d(6, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), groups=2)"
    assert repr(m1) == "Conv1d(2, 4, kernel_size=(3,), stride=(1,), padding=same, bias=False)"


def test_module_errors():
    assert nn.Conv2d(2, 2, 3, padding_mode="reflect").padding_mode == "reflect"  # supported
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="4D input"):
        nn.BatchNorm2d(3)(cr.randn(2, 3, 4))


def test_pool_modules_and_batchnorm2d():
    x = cr.randn(2, 3, 8, 8)
    assert nn.MaxPool2d(2)(x).shape == (2, 3, 4, 4)
    out, idx = nn.MaxPool1d(3, 2, return_indices=True, ceil_mode=True)(x[0])
    assert out.shape == idx.shape == (3, 8, 4)
    assert nn.AvgPool2d(3, 2, 1, divisor_override=2)(x).shape == (2, 3, 4, 4)
    assert nn.AvgPool1d(2)(x[0]).shape == (3, 8, 4)
    assert nn.AdaptiveAvgPool2d((2, None))(x).shape == (2, 3, 2, 8)
    assert nn.AdaptiveAvgPool1d(3)(x[0]).shape == (3, 8, 3)
    assert nn.AdaptiveMaxPool2d(3)(x).shape == (2, 3, 3, 3)
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d(1)) == "AdaptiveAvgPool2d(output_size=1)"
    bn = nn.BatchNorm2d(3)
    y = bn(x)
    np.testing.assert_allclose(y.detach().numpy().mean(axis=(0, 2, 3)), 0, atol=1e-12)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.numpy().mean(axis=(0, 2, 3)))
    assert repr(bn) == ("BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                        "track_running_stats=True)")


# --- functional errors ---------------------------------------------------------------------

@pytest.mark.parametrize("call, exc, match", [
    (lambda: F.conv2d(cr.randn(1, 1, 2, 3, 3), cr.randn(1, 1, 2, 2)), RuntimeError,
     r"conv2d: expected input with 3 or 4 dimensions \(got 5-D input of shape "
     r"\[1, 1, 2, 3, 3\]\)"),
    (lambda: F.conv2d(cr.randn(1, 3, 5, 5), cr.randn(4, 3, 3, 3), groups=2), RuntimeError,
     r"conv2d: expected input\[1, 3, \.\.\.\] to have C_in=6 channels for weight of shape "
     r"\[4, 3, 3, 3\] and groups=2"),
    (lambda: F.conv2d(cr.randn(1, 1, 2, 2), cr.randn(1, 1, 3, 3)), RuntimeError,
     "Kernel size can't be greater"),
    (lambda: F.conv1d(cr.randn(1, 1, 5), cr.randn(1, 1, 3), stride=2, padding="same"),
     ValueError, "conv1d: padding='same' is not supported for strided"),
    (lambda: F.conv1d(cr.randn(1, 1, 5), cr.randn(1, 1, 3), padding="full"), ValueError,
     "Invalid padding string 'full'"),
    (lambda: F.conv1d(cr.randn(1, 2, 5), cr.randn(2, 2, 3), cr.randn(3)), RuntimeError,
     r"expected bias of shape \[2\]"),
    (lambda: F.max_pool2d(cr.randn(1, 5, 5), 3, padding=2), RuntimeError,
     "max_pool2d: pad should be at most half of effective kernel size, but got pad=2, "
     "kernel_size=3 and dilation=1"),
    (lambda: F.avg_pool1d(cr.randn(1, 1, 5), 2, padding=2), RuntimeError,
     "avg_pool1d: pad should be at most half"),
    (lambda: F.max_pool2d(cr.randn(1, 2, 2), 3), RuntimeError,
     r"Given input size: \(1x2x2\). Calculated output size: \(1x0x0\). Output size is too"),
    (lambda: F.max_pool1d(cr.randn(1, 1, 5), 2, stride=0), RuntimeError,
     "stride should be greater than zero"),
    (lambda: F.avg_pool2d(cr.randn(1, 4, 4), 2, divisor_override=0), RuntimeError,
     "avg_pool2d: divisor must be not zero"),
    (lambda: F.avg_pool2d(cr.randn(5, 5), 2), RuntimeError,
     "avg_pool2d: expected input with 3 or 4 dimensions"),
])
def test_functional_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- torch comparisons ---------------------------------------------------------------------

def _compare(torch, fc, ft, arrays, *args, **kwargs):
    """``fc(*arrays, *args, **kwargs)`` against ``ft``: outputs (and int indices) and the
    gradients of a random linear functional."""
    ct = [None if a is None else t(a, True) for a in arrays]
    tt = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    oc, ot = fc(*ct, *args, **kwargs), ft(*tt, *args, **kwargs)
    if isinstance(ot, tuple):
        np.testing.assert_array_equal(oc[1].numpy(), ot[1].numpy())
        oc, ot = oc[0], ot[0]
    assert oc.shape == tuple(ot.shape)
    np.testing.assert_allclose(oc.detach().numpy(), ot.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    g = RNG.standard_normal(oc.shape)
    (oc * t(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    for a, b in zip(ct, tt):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


def _batched(a):
    """(a with a batch dim of 1 added, a function removing it again) for unbatched a."""
    return a[None], (lambda r: r[0])


def _max_grad(fc, x, *args):
    """chainrule's values, indices and the gradient of a random linear functional of a max
    pooling ``fc(x, *args, return_indices=True)``; and that functional's cotangent."""
    xc = t(x, True)
    out, idx = fc(xc, *args, return_indices=True)
    g = RNG.standard_normal(out.shape)
    (out * t(g)).sum().backward()
    return out.detach().numpy(), idx.numpy(), xc.grad.numpy(), g


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv_random_configs_vs_loops_and_torch():
    assert F.conv2d(cr.ones(1, 1, 3, 3), cr.ones(1, 1, 2, 2)).numpy().ravel().tolist() == \
        [4.0] * 4
    rng = np.random.default_rng(7)
    for trial in range(24):
        n = 1 + trial % 2
        g = int(rng.choice([1, 2, 3]))
        k = tuple(int(v) for v in rng.integers(1, 4, n))
        d = tuple(int(v) for v in rng.integers(1, 3, n))
        if trial % 4 == 0:
            s, p = 1, "same"
        else:
            s = tuple(int(v) for v in rng.integers(1, 3, n))
            p = tuple(int(v) for v in rng.integers(0, 3, n))
        shape = tuple(int(v) for v in rng.integers(5, 8, n))
        x = rng.standard_normal((2, g * int(rng.integers(1, 3))) + shape)
        w = rng.standard_normal((g * int(rng.integers(1, 3)), x.shape[1] // g) + k)
        b = None if trial % 3 == 0 else rng.standard_normal(w.shape[0])
        if trial % 5 == 0:
            x = x[0]  # unbatched
        kw = dict(stride=s, padding=p, dilation=d, groups=g)
        fc = F.conv1d if n == 1 else F.conv2d
        # without torch: the loop, and finite differences (exact: conv is bilinear)
        xb, unbatch = _batched(x) if x.ndim == n + 1 else (x, lambda r: r)
        np.testing.assert_allclose(fc(t(x), t(w), None if b is None else t(b), **kw).numpy(),
                                   unbatch(np_conv(xb, w, b, **kw)), rtol=1e-12, atol=1e-12)
        arrays = [t(a, True) for a in (x, w) + (() if b is None else (b,))]
        assert gradcheck(functools.partial(fc, **kw), tuple(arrays), fast_mode=True)
        if torch is not None:
            ft = torch.nn.functional.conv1d if n == 1 else torch.nn.functional.conv2d
            _compare(torch, fc, ft, (x, w, b), **kw)


def test_pools_random_configs_vs_loops_and_torch():
    out, _ = np_pool(np.array([[[0.0, 0.0, 2.0, 2.0]]]), "max", 2)
    assert F.max_pool1d(t([[[0.0, 0.0, 2.0, 2.0]]]), 2).numpy().tolist() == out.tolist()
    TF = None if torch is None else torch.nn.functional
    rng = np.random.default_rng(11)
    for trial in range(30):
        n = 1 + trial % 2
        k = tuple(int(v) for v in rng.integers(1, 4, n))
        s = tuple(int(v) for v in rng.integers(1, 4, n))
        d = tuple(int(v) for v in rng.integers(1, 3, n))
        p = tuple(int(rng.integers(0, ki // 2 + 1)) for ki in k)
        ceil = bool(trial % 3)
        x = np.maximum(rng.integers(-3, 3, (2, 3) + tuple(rng.integers(6, 9, n))), 0) * 1.0
        if trial % 4 == 1:
            x = x[0]
        xb, unbatch = _batched(x) if x.ndim == n + 1 else (x, lambda r: r)
        fm = F.max_pool1d if n == 1 else F.max_pool2d
        mp = p if all(pi <= ((ki - 1) * di + 1) // 2 for ki, pi, di in zip(k, p, d)) else 0
        # without torch: the loops; ties (many zeros) go to the first maximum, and so does
        # the gradient of each output
        out, idx, grad, g = _max_grad(fm, x, k, s, mp, d, ceil)
        ref, ref_idx = np_pool(xb, "max", k, s, mp, d, ceil)
        np.testing.assert_array_equal(out, unbatch(ref))
        np.testing.assert_array_equal(idx, unbatch(ref_idx))
        np.testing.assert_allclose(grad, unbatch(np_scatter_grad(xb.shape, ref_idx,
                                                                 g.reshape(ref.shape))))
        if TF is not None:
            tm = TF.max_pool1d if n == 1 else TF.max_pool2d
            _compare(torch, fm, tm, (x,), k, s, mp, d, ceil, return_indices=True)
        cip = bool(trial % 2)
        if n == 1:
            args = (k, s, p, ceil, cip)
            fa, ta, div = F.avg_pool1d, TF and TF.avg_pool1d, None
        else:
            div = None if trial % 4 else int(rng.integers(1, 5))
            args = (k, s, p, ceil, cip, div)
            fa, ta = F.avg_pool2d, TF and TF.avg_pool2d
        ref, _ = np_pool(xb, "avg", k, s, p, 1, ceil, cip, div)
        np.testing.assert_allclose(fa(t(x), *args).numpy(), unbatch(ref), rtol=1e-12,
                                   atol=1e-14)
        assert gradcheck(lambda x, fa=fa, args=args: fa(x, *args), (t(x, True),),
                         fast_mode=True)  # linear
        if TF is not None:
            _compare(torch, fa, ta, (x,), *args)
    x = np.maximum(rng.integers(-3, 3, (2, 3, 7, 6)), 0) * 1.0
    for size in ((3, 4), 5, (None, 2), 1):
        full = tuple(L if o is None else o for o, L in zip(_pair(size, 2), x.shape[2:]))
        np.testing.assert_allclose(F.adaptive_avg_pool2d(t(x), size).numpy(),
                                   np_adaptive(x, full, "avg"), rtol=1e-12)
        assert gradcheck(lambda x, size=size: F.adaptive_avg_pool2d(x, size), (t(x, True),),
                         fast_mode=True)
        out, idx, grad, g = _max_grad(F.adaptive_max_pool2d, x, size)
        ref, ref_idx = np_adaptive(x, full, "max", return_indices=True)
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(idx, ref_idx)
        np.testing.assert_allclose(grad, np_scatter_grad(x.shape, ref_idx, g))
        if TF is not None:
            _compare(torch, F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, (x,), size)
            _compare(torch, F.adaptive_max_pool2d, TF.adaptive_max_pool2d, (x,), size, True)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(t(x[0]), 4).numpy(),
                               np_adaptive(x[0], (4,), "avg"), rtol=1e-12)
    out, idx, grad, g = _max_grad(F.adaptive_max_pool1d, x[0], 4)
    ref, ref_idx = np_adaptive(x[0], (4,), "max", return_indices=True)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_allclose(grad, np_scatter_grad(x[0].shape, ref_idx, g))
    if TF is not None:
        _compare(torch, F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, (x[0],), 4)
        _compare(torch, F.adaptive_max_pool1d, TF.adaptive_max_pool1d, (x[0],), 4, True)


def _cnn(lib):
    m = lib.nn
    return m.Sequential(m.Conv2d(3, 6, 3, padding=1), m.ReLU(), m.MaxPool2d(2),
                        m.Conv2d(6, 8, 3, stride=1, groups=2), m.BatchNorm2d(8),
                        m.AdaptiveAvgPool2d((2, 2)), m.Flatten(), m.Linear(32, 5))


def _np_cnn(model, x):
    """The small CNN by the loops above, layer by layer; returns (output in training mode,
    output in eval mode with the running stats one training call leaves, the batch norm's
    running_var after that call)."""
    p = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    h = np.maximum(np_conv(x, p["0.weight"], p["0.bias"], padding=1), 0)
    h = np_pool(h, "max", 2)[0]
    h = np_conv(h, p["3.weight"], p["3.bias"], groups=2)
    mean, var = h.mean((0, 2, 3)), h.var((0, 2, 3))
    m = h[0, 0].size * h.shape[0]
    running_mean = 0.9 * p["4.running_mean"] + 0.1 * mean
    running_var = 0.9 * p["4.running_var"] + 0.1 * var * m / (m - 1)  # unbiased

    def head(mu, v):
        y = (h - mu[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5)
        y = y * p["4.weight"][:, None, None] + p["4.bias"][:, None, None]
        y = np_adaptive(y, (2, 2), "avg").reshape(len(x), -1)
        return y @ p["7.weight"].T + p["7.bias"]
    return head(mean, var), head(running_mean, running_var), running_var


def test_small_cnn_vs_loops_and_torch():
    cr.manual_seed(3)
    model = _cnn(cr)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "3.weight", "3.bias", "4.weight", "4.bias",
                     "7.weight", "7.bias"]
    x = np.maximum(RNG.standard_normal((4, 3, 10, 10)), 0)
    # without torch: the loops, and finite differences for the input and every parameter
    want_train, want_eval, want_var = _np_cnn(model, x)
    for train, want in ((True, want_train), (False, want_eval)):
        model.train(train)
        np.testing.assert_allclose(model(t(x)).detach().numpy(), want, rtol=1e-10,
                                   atol=1e-12)
        if train:
            np.testing.assert_allclose(model[4].running_var.numpy(), want_var, rtol=1e-12)
    params = [p.detach().clone().requires_grad_() for p in model.parameters()]
    for train in (True, False):
        probe = copy.deepcopy(model).train(train)  # (training calls move the running stats)
        f = functools.partial(lambda m, x, *ps: nn.functional_call(m, dict(zip(names, ps)),
                                                                   (x,)), probe)
        assert gradcheck(f, (t(x, True), *params), fast_mode=True)
    if torch is None:
        return
    cr.manual_seed(3)
    model = _cnn(cr)
    torch.manual_seed(3)
    tmodel = _cnn(torch).double()
    model.load_state_dict({k: cr.tensor(v.detach().numpy().copy())
                           for k, v in tmodel.state_dict().items()})
    for train in (True, False):
        model.train(train)
        tmodel.train(train)
        _compare(torch, model, tmodel, (x,))
        for (name, p), (tname, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
            assert name == tname
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=name)
            p.grad, tp.grad = None, None
        np.testing.assert_allclose(model[4].running_var.numpy(),
                                   tmodel[4].running_var.numpy(), rtol=1e-12)
