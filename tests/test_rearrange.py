"""Rearranging functions (compositions of primitives): values against NumPy's functions of
the same meaning, gradients by gradcheck, and PyTorch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import gradcheck

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None

RNG = np.random.default_rng(21)
A = RNG.standard_normal((3, 4))
B3 = RNG.standard_normal((2, 3, 4))

CASES = [  # (name, chainrule function, NumPy reference, input)
    ("flip", lambda t: cr.flip(t, (0, 2)), lambda a: np.flip(a, (0, 2)), B3),
    ("fliplr", cr.fliplr, np.fliplr, A),
    ("flipud", cr.flipud, np.flipud, A),
    ("roll", lambda t: cr.roll(t, (1, -2), (0, 1)), lambda a: np.roll(a, (1, -2), (0, 1)), A),
    ("roll_flat", lambda t: cr.roll(t, 5), lambda a: np.roll(a, 5), A),
    ("rot90", lambda t: cr.rot90(t), np.rot90, A),
    ("rot90_k3", lambda t: cr.rot90(t, 3, (1, 2)), lambda a: np.rot90(a, 3, (1, 2)), B3),
    ("rot90_k2", lambda t: cr.rot90(t, 2), lambda a: np.rot90(a, 2), A),
    ("narrow", lambda t: t.narrow(1, -3, 2), lambda a: a[:, 1:3], A),
    ("select", lambda t: t.select(1, 2), lambda a: a[:, 2], B3),
    ("unflatten", lambda t: t.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 2), A),
    ("tile", lambda t: cr.tile(t, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)), A),
    ("repeat", lambda t: t.repeat(2, 1, 3), lambda a: np.tile(a, (2, 1, 3)), A),
    ("swapdims", lambda t: cr.swapdims(t, 0, 2), lambda a: np.swapaxes(a, 0, 2), B3),
    ("moveaxis", lambda t: cr.moveaxis(t, 0, -1), lambda a: np.moveaxis(a, 0, -1), B3),
    ("hstack", lambda t: cr.hstack([t, 2 * t]), lambda a: np.hstack([a, 2 * a]), A),
    ("vstack", lambda t: cr.vstack([t[0], t[1]]), lambda a: np.vstack([a[0], a[1]]), A),
    ("column_stack", lambda t: cr.column_stack([t[0], t[1]]),
     lambda a: np.column_stack([a[0], a[1]]), A),
]


@pytest.mark.parametrize("name, fn, ref, a", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients(name, fn, ref, a):
    np.testing.assert_array_equal(fn(cr.tensor(a)).numpy(), ref(a))
    assert gradcheck(fn, (cr.tensor(a, requires_grad=True),))


def test_tensor_split_meshgrid_and_like_methods():
    x = np.arange(7.0)
    for sections in (3, [2, 5], [4, 2]):
        parts = cr.tensor_split(cr.tensor(x), sections)
        expected = np.array_split(x, sections) if isinstance(sections, int) else \
            np.split(x, sections)
        assert len(parts) == len(expected)
        for p, e in zip(parts, expected):
            np.testing.assert_array_equal(p.numpy(), e)
    u, v = np.arange(2.0), np.arange(3.0)
    for indexing in ("ij", "xy"):
        got = cr.meshgrid(cr.tensor(u), cr.tensor(v), indexing=indexing)
        for g, e in zip(got, np.meshgrid(u, v, indexing=indexing)):
            np.testing.assert_array_equal(g.numpy(), e)
    t = cr.tensor(A)
    assert t.new_zeros(2, 5).shape == (2, 5) and t.new_ones((3,)).dtype == t.dtype
    np.testing.assert_array_equal(t.new_full((2,), 7.0).numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(t.new_tensor([1, 2]).numpy(), [1.0, 2.0])
    assert t.new_tensor([1, 2]).dtype == np.float64
    assert t.type_as(cr.ones(1, dtype=cr.float32)).dtype == np.float32
    assert t.view_as(cr.ones(4, 3)).shape == (4, 3) and t.reshape_as(cr.ones(12)).shape == (12,)
    assert t.expand_as(cr.ones(2, 3, 4)).shape == (2, 3, 4)
    assert t.is_floating_point() and not cr.tensor([1, 2]).is_floating_point()
    with pytest.raises(IndexError, match="narrow"):
        t.narrow(1, 3, 2)
    with pytest.raises(RuntimeError, match="repeat"):
        t.repeat(2)


def test_rot90_repeat_roll_meshgrid_tensor_split_against_numpy_and_torch():
    # NumPy's functions of the same meaning: rot90 with k = -1 is a clockwise turn,
    # Tensor.repeat(2, 2) is np.tile(a, (2, 2)), roll without dims rolls the flattened
    # tensor, meshgrid's "xy" is NumPy's default, tensor_split(7, 3) gives 3, 2, 2 entries
    ours = (cr.rot90(cr.tensor(A), -1), cr.tensor(A).repeat(2, 2), cr.roll(cr.tensor(A), 2),
            cr.meshgrid(cr.tensor(A[0]), cr.tensor(A[1]), indexing="xy")[0])
    for got, want in zip(ours, (np.rot90(A, -1), np.tile(A, (2, 2)), np.roll(A, 2),
                                np.meshgrid(A[0], A[1], indexing="xy")[0])):
        np.testing.assert_array_equal(got.numpy(), want)
    sizes = [p.shape[0] for p in cr.tensor_split(cr.arange(7.0), 3)]
    assert sizes == [len(p) for p in np.array_split(np.arange(7.0), 3)] == [3, 2, 2]
    if torch is not None:
        ta = torch.tensor(A)
        theirs = (torch.rot90(ta, -1), ta.repeat(2, 2), torch.roll(ta, 2),
                  torch.meshgrid(ta[0], ta[1], indexing="xy")[0])
        for got, want in zip(ours, theirs):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert sizes == [p.shape[0] for p in torch.tensor_split(torch.arange(7.0), 3)]
