"""Fractional max pooling: ``F.fractional_max_pool2d/3d`` (+ ``_with_indices``) and
``nn.FractionalMaxPool2d/3d``: values by hand from given samples, gradients to the selected
maxima, and (when PyTorch is installed) exact equality with PyTorch's values, indices,
gradients and errors."""

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

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


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


def _both(fn_name, x, *args, **kwargs):
    samples = kwargs.pop("_random_samples")
    out = []
    for lib, F_ in ((cr, F), (torch, torch.nn.functional)):
        try:
            out.append(getattr(F_, fn_name)(lib.tensor(x), *args, return_indices=True,
                                            _random_samples=lib.tensor(samples), **kwargs))
        except Exception as e:  # noqa: BLE001
            out.append(e)
    return out


@needs_torch
def test_against_torch_values_and_indices():
    rng = np.random.default_rng(1)
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
        mine, theirs = _both(f"fractional_max_pool{n}d", x, kernel, out,
                             _random_samples=samples)
        if isinstance(theirs, Exception):
            assert type(mine) is type(theirs) and str(mine) == str(theirs), trial
            continue
        assert np.array_equal(mine[0].numpy(), theirs[0].numpy(), equal_nan=True), trial
        assert np.array_equal(mine[1].numpy(), theirs[1].numpy()), trial


@needs_torch
def test_against_torch_gradient_and_errors():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5, 6, 7))
    s = rng.random((2, 3, 3))
    g = rng.standard_normal((2, 3, 3, 2, 4))
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.fractional_max_pool3d(tx, 2, (3, 2, 4), _random_samples=torch.tensor(
        s)).backward(torch.tensor(g))
    cx = cr.tensor(x, requires_grad=True)
    F.fractional_max_pool3d(cx, 2, (3, 2, 4), _random_samples=cr.tensor(s)).backward(
        cr.tensor(g))
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=0, atol=1e-10)
    x = rng.standard_normal((2, 3, 7, 6))
    for kwargs in ({"kernel_size": 5, "output_size": 4}, {"kernel_size": 2, "output_size": 8},
                   {"kernel_size": (2, 2, 2), "output_size": 3},
                   {"kernel_size": 2, "output_size": (3, 3, 3)}):
        mine, theirs = _both("fractional_max_pool2d", x, _random_samples=rng.random((2, 3, 2)),
                             **kwargs)
        assert type(mine) is type(theirs) and str(mine) == str(theirs)
    for samples in (rng.random((1, 3, 2)), rng.random((2, 2, 2)), rng.random((2, 3, 3)),
                    rng.random((2, 3, 2)).astype(np.float32)):
        mine, theirs = _both("fractional_max_pool2d", x, 2, 3, _random_samples=samples)
        assert type(mine) is type(theirs) and str(mine) == str(theirs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.FractionalMaxPool3d(2, output_size=(3, 4, 3), return_indices=True)
    assert repr(nn.FractionalMaxPool3d(2, output_size=(3, 4, 3))) == repr(t)
