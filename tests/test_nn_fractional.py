"""Fractional max pooling: ``F.fractional_max_pool2d/3d`` (+ ``_with_indices``) and
``nn.FractionalMaxPool2d/3d``: values by hand from given samples, a loop reference of
PyTorch's interval rule and window maxima on random configurations (and its checks of the
sizes), gradients to the selected maxima, and (when PyTorch is installed) exact equality
with PyTorch's values, indices, gradients and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn.functional as F
from chainrule import nn

try:
    import torch
except ImportError:
    torch = None



def _starts(u, n, m, k):
    """PyTorch's interval formula, written out in Python floats (float64 inputs)."""
    if m == 1:
        return [n - k]
    alpha = (n - k) / (m - 1)
    return [int((i + u) * alpha) - int(u * alpha) for i in range(m - 1)] + [n - k]


def test_by_hand_2d():
    # H starts from u_H = 0.3: alpha = 5/2, [0, 3, 5]; W starts from u_W = 0.5: [0, 2, 5]
    assert _starts(0.3, 7, 3, 2) == [0, 3, 5] and _starts(0.5, 7, 3, 2) == [0, 2, 5]
    x = cr.arange(49.0).reshape(1, 1, 7, 7)
    samples = cr.tensor([[[0.5, 0.3]]])  # (W's, H's), as PyTorch
    values, indices = F.fractional_max_pool2d(x, 2, output_size=3, return_indices=True,
                                              _random_samples=samples)
    expected = [[(h + 1) * 7 + (w + 1) for w in (0, 2, 5)] for h in (0, 3, 5)]
    assert values.tolist() == [[expected]]
    assert indices.tolist() == [[expected]] and indices.dtype == np.int64
    v2, i2 = F.fractional_max_pool2d_with_indices(x, 2, (3, 3), _random_samples=samples)
    assert v2.tolist() == values.tolist() and i2.tolist() == indices.tolist()
    assert F.fractional_max_pool2d(x[0], 2, 3, _random_samples=samples).shape == (1, 3, 3)


def test_by_hand_3d_and_ratio():
    x = cr.arange(5.0 * 6 * 7).reshape(1, 1, 5, 6, 7)
    u = (0.2, 0.6, 0.9)  # (T's, H's, W's)
    out, kernel = (3, 2, 4), (2, 3, 2)
    values, indices = F.fractional_max_pool3d(x, kernel, out, return_indices=True,
                                              _random_samples=cr.tensor([[u]]))
    starts = [_starts(u[d], x.shape[2 + d], out[d], kernel[d]) for d in range(3)]
    expected = [[[(t + 1) * 42 + (h + 2) * 7 + (w + 1) for w in starts[2]] for h in starts[1]]
                for t in starts[0]]
    assert values.tolist() == [[expected]] and indices.tolist() == [[expected]]
    # output_ratio: int(size * ratio)
    y = F.fractional_max_pool2d(cr.randn(2, 3, 10, 9), 2, output_ratio=(0.5, 0.7))
    assert y.shape == (2, 3, 5, 6)


def test_ties_nan_and_gradient():
    x = cr.tensor([[[[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]])
    s = cr.tensor([[[0.0, 0.0]]])
    _, idx = F.fractional_max_pool2d(x, 2, 2, return_indices=True, _random_samples=s)
    assert idx[0, 0, 0, 0].item() == 0  # the first maximum, row-major
    x = cr.tensor([[[[np.nan, 1.0], [np.nan, 5.0]]]])
    v, idx = F.fractional_max_pool2d(x, 2, 1, return_indices=True, _random_samples=s)
    assert idx.item() == 2 and np.isnan(v.item())  # the last NaN
    x = cr.tensor(np.random.default_rng(0).standard_normal((2, 3, 8, 7)), requires_grad=True)
    s = cr.rand(2, 3, 2, dtype=cr.float64)
    v, idx = F.fractional_max_pool2d(x, 3, (4, 3), return_indices=True, _random_samples=s)
    v.sum().backward()
    expected = np.zeros((2, 3, 56))  # (a maximum selected by two windows gets 2)
    for b in range(2):
        for c in range(3):
            np.add.at(expected[b, c], idx.numpy()[b, c].ravel(), 1.0)
    assert np.array_equal(x.grad.numpy().reshape(2, 3, -1), expected)
    assert cr.autograd.gradcheck(
        lambda t: F.fractional_max_pool2d(t, 3, (4, 3), _random_samples=s), (x,))


def test_module():
    s = cr.rand(1, 2, 2, dtype=cr.float64)
    m = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=s)
    assert repr(m) == "FractionalMaxPool2d()" and list(m.state_dict()) == ["_random_samples"]
    assert (m.kernel_size, m.output_size, m.output_ratio) == ((2, 2), (3, 3), None)
    x = cr.randn(1, 2, 6, 6)
    assert m(x).tolist() == F.fractional_max_pool2d(x, 2, 3, _random_samples=s).tolist()
    m3 = nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True)
    assert m3.output_ratio == (0.5, 0.5, 0.5)
    v, i = m3(cr.randn(2, 2, 6, 6, 6))
    assert v.shape == i.shape == (2, 2, 3, 3, 3)


@pytest.mark.parametrize("call, error", [
    (lambda: nn.FractionalMaxPool2d(2), ValueError),
    (lambda: nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError),
    (lambda: nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError),
    (lambda: nn.FractionalMaxPool3d(0, output_size=2), ValueError),
    (lambda: F.fractional_max_pool2d(cr.randn(1, 1, 4, 4), 2), ValueError),
    (lambda: F.fractional_max_pool2d(cr.randn(1, 1, 4, 4), 4, 2), RuntimeError),
    (lambda: F.fractional_max_pool2d(cr.randn(1, 1, 1, 4, 4), 2, 2), RuntimeError),
    (lambda: F.fractional_max_pool2d(cr.randn(1, 1, 4, 4), 2, 2,
                                     _random_samples=cr.rand(1, 1, 2, dtype=cr.float32)),
     RuntimeError),
    (lambda: F.fractional_max_pool3d(cr.randn(1, 1, 4, 4, 4), 2, 3), RuntimeError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()


def _np_fractional(x, kernel, out, samples):
    """Fractional max pooling by loops, as PyTorch's CPU kernel defines it: the window starts
    of each spatial dim from ``_starts`` computed in the samples' dtype (2-d: the samples
    are (W's, H's); 3-d: (T's, H's, W's)), then in each window (row-major) the first
    maximum, or the last NaN. Returns (values, flat indices within the spatial plane)."""
    n = len(kernel)
    unbatched = x.ndim == n + 1
    xb = x[None] if unbatched else x
    sizes = xb.shape[2:]
    order = (1, 0) if n == 2 else (0, 1, 2)
    dt = samples.dtype.type
    values = np.zeros(xb.shape[:2] + tuple(out), dtype=x.dtype)
    indices = np.zeros(xb.shape[:2] + tuple(out), dtype=np.int64)
    for b, c in np.ndindex(*xb.shape[:2]):
        starts = []
        for d in range(n):
            size, m, k, u = sizes[d], out[d], kernel[d], samples[b, c, order[d]]
            if m == 0:
                starts.append([])
            elif m == 1:
                starts.append([size - k])
            else:
                alpha = dt(size - k) / dt(m - 1)
                starts.append([int((dt(i) + u) * alpha) - int(u * alpha)
                               for i in range(m - 1)] + [size - k])
        for pos in np.ndindex(*out):
            first = tuple(starts[d][pos[d]] for d in range(n))
            best, where = -np.inf, first
            for tap in np.ndindex(*kernel):
                at = tuple(f + t for f, t in zip(first, tap))
                v = xb[(b, c) + at]
                if v > best or np.isnan(v):
                    best, where = v, at
            values[(b, c) + pos] = best
            indices[(b, c) + pos] = np.ravel_multi_index(where, sizes)
    if unbatched:
        return values[0], indices[0]
    return values, indices


def _too_large(sizes, kernel, out):
    """The words of PyTorch's check of a pool too large for the output size, or None: 2-d
    wants out + k - 1 <= size, 3-d (checked in the order time, width, height) < size."""
    n = len(kernel)
    words = ("height", "width") if n == 2 else ("time", "height", "width")
    for d in (0, 1) if n == 2 else (0, 2, 1):
        last = out[d] + kernel[d] - 1
        if last > sizes[d] or (n == 3 and last == sizes[d]):
            return f"pool {words[d]} {kernel[d]} too large relative to input {words[d]} " \
                   f"{sizes[d]}"
    return None


def _both(fn_name, x, *args, **kwargs):
    """chainrule's and (when installed) PyTorch's results (or exceptions)."""
    samples = kwargs.pop("_random_samples")
    out = []
    libs = ((cr, F),) + (((torch, torch.nn.functional),) if torch is not None else ())
    for lib, F_ in libs:
        try:
            out.append(getattr(F_, fn_name)(lib.tensor(x), *args, return_indices=True,
                                            _random_samples=lib.tensor(samples), **kwargs))
        except Exception as e:  # noqa: BLE001
            out.append(e)
    return out


def test_random_configs_against_loops_and_torch():
    rng = np.random.default_rng(1)
    checked = raised = 0
    for trial in range(120):
        n = 2 + trial % 2
        dtype = np.float32 if trial % 3 == 0 else np.float64
        batch, channels = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        sizes = tuple(int(v) for v in rng.integers(2, 10 if n == 2 else 7, size=n))
        kernel = tuple(int(rng.integers(1, s + 1)) for s in sizes)
        out = tuple(int(rng.integers(0, s - k + 2)) for s, k in zip(sizes, kernel))
        shape = ((batch,) if trial % 5 else ()) + (channels,) + sizes
        x = rng.standard_normal(shape).astype(dtype)
        if trial % 7 == 0:
            x = np.round(x)
        if trial % 11 == 0:
            x.flat[rng.integers(0, x.size, 3)] = np.nan
        samples = rng.random((batch, channels, n)).astype(dtype)
        mine, *theirs = _both(f"fractional_max_pool{n}d", x, kernel, out,
                              _random_samples=samples)
        # without torch: the loops, or the error PyTorch's checks give
        words = _too_large(sizes, kernel, out)
        if words is not None:
            assert isinstance(mine, RuntimeError) and words in str(mine), trial
            raised += 1
        else:
            values, indices = _np_fractional(x, kernel, out, samples)
            assert mine[0].dtype == dtype and mine[1].dtype == np.int64
            assert np.array_equal(mine[0].numpy(), values, equal_nan=True), trial
            assert np.array_equal(mine[1].numpy(), indices), trial
            checked += 1
        if theirs:
            theirs, = theirs
            if isinstance(theirs, Exception):
                assert type(mine) is type(theirs) and str(mine) == str(theirs), trial
                continue
            assert np.array_equal(mine[0].numpy(), theirs[0].numpy(), equal_nan=True), trial
            assert np.array_equal(mine[1].numpy(), theirs[1].numpy()), trial
    assert checked > 60 and raised > 20


def test_gradient_and_errors_against_loops_and_torch():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5, 6, 7))
    s = rng.random((2, 3, 3))
    g = rng.standard_normal((2, 3, 3, 2, 4))
    cx = cr.tensor(x, requires_grad=True)
    F.fractional_max_pool3d(cx, 2, (3, 2, 4), _random_samples=cr.tensor(s)).backward(
        cr.tensor(g))
    # without torch: each output's gradient lands on the maximum the loops select
    _, idx = _np_fractional(x, (2, 2, 2), (3, 2, 4), s)
    expected = np.zeros((2, 3, 5 * 6 * 7))
    for b, c in np.ndindex(2, 3):
        np.add.at(expected[b, c], idx[b, c].ravel(), g[b, c].ravel())
    np.testing.assert_allclose(cx.grad.numpy(), expected.reshape(x.shape), rtol=0, atol=1e-12)
    if torch is not None:
        tx = torch.tensor(x, requires_grad=True)
        torch.nn.functional.fractional_max_pool3d(
            tx, 2, (3, 2, 4), _random_samples=torch.tensor(s)).backward(torch.tensor(g))
        np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=0, atol=1e-10)
    x = rng.standard_normal((2, 3, 7, 6))
    # (what is wrong with each call, as PyTorch's checks say it)
    for kwargs, words in (
            ({"kernel_size": 5, "output_size": 4}, _too_large((7, 6), (5, 5), (4, 4))),
            ({"kernel_size": 2, "output_size": 8}, _too_large((7, 6), (2, 2), (8, 8))),
            ({"kernel_size": (2, 2, 2), "output_size": 3}, "kernel_size must either be"),
            ({"kernel_size": 2, "output_size": (3, 3, 3)}, "output_size must either be")):
        mine, *theirs = _both("fractional_max_pool2d", x,
                              _random_samples=rng.random((2, 3, 2)), **kwargs)
        assert isinstance(mine, RuntimeError) and words in str(mine)
        if theirs:
            assert type(mine) is type(theirs[0]) and str(mine) == str(theirs[0])
    for samples, words in ((rng.random((1, 3, 2)), "size(0) no less then input batch size"),
                           (rng.random((2, 2, 2)), "size(1) equals to input channel size"),
                           (rng.random((2, 3, 3)), "size(2) equals to 2; got 3"),
                           (rng.random((2, 3, 2)).astype(np.float32), "the same dtype")):
        mine, *theirs = _both("fractional_max_pool2d", x, 2, 3, _random_samples=samples)
        assert isinstance(mine, RuntimeError) and words in str(mine)
        if theirs:
            assert type(mine) is type(theirs[0]) and str(mine) == str(theirs[0])
    assert repr(nn.FractionalMaxPool3d(2, output_size=(3, 4, 3))) == "FractionalMaxPool3d()"
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.nn.FractionalMaxPool3d(2, output_size=(3, 4, 3), return_indices=True)
        assert repr(nn.FractionalMaxPool3d(2, output_size=(3, 4, 3))) == repr(t)
