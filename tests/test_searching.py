"""Indices, counts and truth values (ops/searching.py): values derived from their
definitions with NumPy, PyTorch's where installed; float results computed from an input
that requires grad raise at backward, never a silent zero gradient."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # the comparisons with torch are skipped; the rest runs
    torch = None

X = np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 1.0]])


def _programs(m):
    t = m.tensor
    x = t(X)
    out = {
        "nonzero": m.nonzero(x), "nonzero_tuple": m.nonzero(x, as_tuple=True),
        "argwhere": m.argwhere(x), "unique": m.unique(t([3, 1, 3, 2]), return_inverse=True,
                                                       return_counts=True),
        "unique_dim": m.unique(t([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True),
        "unique_consecutive": m.unique_consecutive(t([1, 1, 2, 2, 3, 1, 1, 2]),
                                                   return_inverse=True, return_counts=True),
        "bincount": m.bincount(t([0, 1, 1, 3]), minlength=6),
        "bincount_w": m.bincount(t([0, 1, 1, 3]), weights=t([0.5, 1.0, 1.0, 2.0])),
        "histc": m.histc(t([1.0, 2.0, 1.0, 7.0]), bins=4, min=0, max=3),
        "searchsorted": m.searchsorted(t([[1, 3, 5, 7, 9], [2, 4, 6, 8, 10]]),
                                       t([[3, 6, 9], [3, 6, 9]]), right=True),
        "bucketize": m.bucketize(t([[1, 3, 9], [3, 6, 9]]), t([1, 3, 5, 7, 9])),
        "isin": m.isin(x, t([1.0, 3.0])), "tril": m.tril_indices(3, 4, -1),
        "triu": m.triu_indices(3, 3, 1), "and": m.logical_and(x, t([1.0, 0.0, 1.0])),
        "or": m.logical_or(x, t([0.0, 0.0, 1.0])), "xor": m.logical_xor(x, x > 1),
        "signbit": m.signbit(t([-0.0, 0.0, -1.0])),
        "heaviside": m.heaviside(t([-1.0, 0.0, 2.0]), t([0.5])),
        "method": x.nonzero(), "nonzero_0d": m.nonzero(t(3.0)),
        "nonzero_0d_zero": m.nonzero(t(0.0)),
    }
    return {k: tuple(np.asarray(v) for v in r) if isinstance(r, tuple) else np.asarray(r)
            for k, r in out.items()}


def test_values_from_their_definitions():
    r = _programs(cr)
    np.testing.assert_array_equal(r["nonzero"], np.argwhere(X))
    np.testing.assert_array_equal(r["nonzero_tuple"][1], np.nonzero(X)[1])
    np.testing.assert_array_equal(r["unique"][0], [1, 2, 3])
    np.testing.assert_array_equal(r["unique"][1], [2, 0, 2, 1])     # values[inverse] == input
    np.testing.assert_array_equal(r["unique"][2], [1, 1, 2])
    np.testing.assert_array_equal(r["unique_dim"][0], [[0, 5], [1, 2]])
    np.testing.assert_array_equal(r["unique_consecutive"][0], [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(r["unique_consecutive"][2], [2, 2, 1, 2, 1])
    np.testing.assert_array_equal(r["bincount"], [1, 2, 0, 1, 0, 0])
    np.testing.assert_array_equal(r["bincount_w"], [0.5, 2.0, 0.0, 2.0])
    np.testing.assert_array_equal(r["histc"], [0, 2, 1, 0])          # 7 is outside [0, 3]
    np.testing.assert_array_equal(r["searchsorted"], [[2, 3, 5], [1, 3, 4]])
    np.testing.assert_array_equal(r["bucketize"], [[0, 1, 4], [1, 3, 4]])
    np.testing.assert_array_equal(r["isin"], np.isin(X, [1.0, 3.0]))
    np.testing.assert_array_equal(r["tril"], np.stack(np.tril_indices(3, -1, 4)))
    np.testing.assert_array_equal(r["signbit"], [True, False, True])
    np.testing.assert_array_equal(r["heaviside"], [0.0, 0.5, 1.0])
    assert r["method"].dtype == np.int64
    assert r["nonzero_0d"].shape == (1, 0) and r["nonzero_0d_zero"].shape == (0, 0)
    np.testing.assert_array_equal(r["method"], np.argwhere(X))
    np.testing.assert_array_equal(r["argwhere"], np.argwhere(X))
    np.testing.assert_array_equal(r["nonzero_tuple"][0], np.nonzero(X)[0])
    # rows [1, 2], [1, 2], [0, 5] sort to [0, 5], [1, 2]: each row's place among them
    np.testing.assert_array_equal(r["unique_dim"][1], [1, 1, 0])
    # the runs 1 1 | 2 2 | 3 | 1 1 | 2: each entry's run
    np.testing.assert_array_equal(r["unique_consecutive"][1], [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(r["triu"], np.stack(np.triu_indices(3, 1, 3)))
    np.testing.assert_array_equal(r["and"], np.logical_and(X, [1.0, 0.0, 1.0]))
    np.testing.assert_array_equal(r["or"], np.logical_or(X, [0.0, 0.0, 1.0]))
    np.testing.assert_array_equal(r["xor"], np.logical_xor(X, X > 1))
    if torch is not None:
        theirs = _programs(torch)
        assert r.keys() == theirs.keys()
        for k in r:
            a, b = r[k], theirs[k]
            for u, v in zip(a if isinstance(a, tuple) else (a,),
                            b if isinstance(b, tuple) else (b,)):
                np.testing.assert_array_equal(u, v, err_msg=k)
                assert np.shape(u) == np.shape(v), k


def test_no_silent_gradients():
    x = cr.tensor([3.0, 1.0, 3.0], requires_grad=True)
    for out in (cr.unique(x), cr.heaviside(x, cr.tensor([0.5])),
                cr.bincount(cr.tensor([0, 1, 1]), weights=x)):
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="derivative for '.*' is not implemented"):
            out.sum().backward()
    assert not cr.nonzero(x).requires_grad and not cr.histc(x).requires_grad
    with pytest.raises(RuntimeError, match="bincount: expected a 1-D integer tensor"):
        cr.bincount(cr.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="bucketize: boundaries tensor must be 1 dimension"):
        cr.bucketize(cr.tensor([1.0]), cr.ones(2, 2))


def test_random_fills_in_place():
    cr.manual_seed(0)
    t = cr.empty(2000)
    assert t.uniform_(-2.0, 3.0) is t
    assert -2.0 <= float(t.min()) and float(t.max()) < 3.0
    v = t._version
    t.normal_(1.0, 0.5)
    assert t._version == v + 1 and abs(float(t.mean()) - 1.0) < 0.05
    assert set(np.unique(np.asarray(cr.empty(500, dtype=cr.int64).random_(3)))) == {0, 1, 2}
    assert set(np.unique(np.asarray(cr.ones(500).bernoulli_(0.5)))) == {0.0, 1.0}
    assert float(cr.empty(500).exponential_(2.0).min()) >= 0
    p = cr.nn.Parameter(cr.zeros(3))
    with pytest.raises(RuntimeError, match="normal_: a leaf Variable that requires grad"):
        p.normal_()
    with cr.no_grad():
        p.uniform_(0.5, 0.6, generator=cr.Generator().manual_seed(1))
    assert float(p.min()) >= 0.5 and p.requires_grad and p.grad_fn is None


def test_variable_is_a_detached_leaf():
    from chainrule.autograd import Variable

    x = cr.ones(2, requires_grad=True)
    v = Variable(x * 2, requires_grad=True)
    assert v.is_leaf and v.requires_grad and isinstance(x, Variable)
    assert not Variable(x).requires_grad
    (v * 3).sum().backward()
    np.testing.assert_array_equal(np.asarray(v.grad), [3.0, 3.0])
    assert x.grad is None
