"""Gathers, scatters and the index/mask ops (chainrule.ops.scatter, take_along_dim).

Values are checked against NumPy written independently (take_along_axis, put_along_axis,
ufunc.at, explicit loops), gradients by gradcheck in float64, the in-place variants
against their out-of-place op, the errors against PyTorch's wording; and, where PyTorch is
importable, values and gradients against it (each such test checks NumPy first, so it
asserts something without PyTorch too).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(77)


def _torch():
    try:
        import torch
    except ImportError:  # the checks against NumPy still run
        return None
    return torch


def randn(*shape):
    return RNG.standard_normal(shape)


def leaf(a):
    return cr.tensor(np.array(a, dtype=float), requires_grad=True)


I34 = np.array([[0, 2, 2], [1, 1, 0], [3, 0, 3]])  # into (3, 4) along dim 1, repeats


# --- values against NumPy -----------------------------------------------------------------


def _loop_gather(x, dim, idx):
    out = np.empty(idx.shape)
    for pos in itertools.product(*map(range, idx.shape)):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = x[tuple(src)]
    return out


def _loop_scatter(x, dim, idx, src, combine):
    out = x.copy()
    for pos in itertools.product(*map(range, idx.shape)):
        dst = list(pos)
        dst[dim] = idx[pos]
        out[tuple(dst)] = combine(out[tuple(dst)], src[pos])
    return out


def test_gather_equals_take_along_axis_and_a_loop():
    x = randn(3, 4)
    np.testing.assert_array_equal(cr.gather(cr.tensor(x), 1, I34).numpy(),
                                  np.take_along_axis(x, I34, 1))
    y = randn(3, 2, 4)
    idx = np.array([[[1, 0]], [[2, 0]]])  # smaller than y apart from dim 0
    out = cr.tensor(y).gather(0, idx)
    assert out.shape == (2, 1, 2)
    np.testing.assert_array_equal(out.numpy(), _loop_gather(y, 0, idx))
    np.testing.assert_array_equal(cr.gather(cr.tensor(y), -1, np.array([[[3]]])).numpy(),
                                  [[[y[0, 0, 3]]]])


def test_scatter_equals_put_along_axis_and_last_write_wins():
    x, src = randn(3, 4), randn(3, 3)
    idx = np.array([[0, 2, 1], [3, 1, 0], [2, 0, 3]])
    expected = x.copy()
    np.put_along_axis(expected, idx, src, 1)
    np.testing.assert_array_equal(cr.scatter(cr.tensor(x), 1, idx, cr.tensor(src)).numpy(),
                                  expected)
    # repeated positions: the last write in index's C order wins (a documented choice)
    last = _loop_scatter(x, 1, I34, src, lambda old, new: new)
    np.testing.assert_array_equal(cr.tensor(x).scatter(1, I34, cr.tensor(src)).numpy(), last)
    # a number fills the addressed positions
    filled = _loop_scatter(x, 1, I34, np.full(I34.shape, 7.0), lambda old, new: new)
    np.testing.assert_array_equal(cr.scatter(cr.tensor(x), 1, I34, 7.0).numpy(), filled)
    np.testing.assert_array_equal(cr.scatter(cr.tensor(x), 1, I34, value=7.0).numpy(), filled)


def test_scatter_add_equals_add_at():
    x, src = randn(3, 4), randn(3, 5)  # src larger than index: only index's part is used
    expected = x.copy()
    rows = np.broadcast_to(np.arange(3)[:, None], I34.shape)
    np.add.at(expected, (rows, I34), src[:, :3])
    np.testing.assert_allclose(cr.scatter_add(cr.tensor(x), 1, I34, cr.tensor(src)).numpy(),
                               expected, rtol=1e-14)
    np.testing.assert_allclose(
        cr.scatter(cr.tensor(x), 1, I34, cr.tensor(src), reduce="add").numpy(), expected,
        rtol=1e-14)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_equals_a_loop(reduce, include_self):
    x, src = randn(3, 4), randn(3, 3)
    lists = {pos: ([x[pos]] if include_self else []) for pos in np.ndindex(3, 4)}
    for i, j in np.ndindex(*I34.shape):
        lists[(i, I34[i, j])].append(src[i, j])
    fn = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}
    expected = np.array([[fn[reduce](lists[(i, j)]) if lists[(i, j)] else x[i, j]
                          for j in range(4)] for i in range(3)])
    got = cr.scatter_reduce(cr.tensor(x), 1, I34, cr.tensor(src), reduce,
                            include_self=include_self)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-13)


def test_index_select_add_copy_fill_against_numpy():
    x = randn(3, 4)
    idx = np.array([3, 0, 3])
    np.testing.assert_array_equal(cr.index_select(cr.tensor(x), 1, idx).numpy(),
                                  np.take(x, idx, axis=1))
    np.testing.assert_array_equal(cr.tensor(x).index_select(0, np.array(2)).numpy(), x[2:3])
    src = randn(3, 3)
    added = x.copy()
    for k, j in enumerate(idx):
        added[:, j] += 2.0 * src[:, k]
    np.testing.assert_allclose(cr.index_add(cr.tensor(x), 1, idx, cr.tensor(src),
                                            alpha=2.0).numpy(), added, rtol=1e-14)
    copied = x.copy()
    for k, j in enumerate(idx):  # the last copy of a repeated index wins
        copied[:, j] = src[:, k]
    np.testing.assert_array_equal(cr.index_copy(cr.tensor(x), 1, idx, cr.tensor(src)).numpy(),
                                  copied)
    filled = x.copy()
    filled[:, [1, 3]] = -5.0
    np.testing.assert_array_equal(cr.index_fill(cr.tensor(x), 1, np.array([1, -1]),
                                                -5.0).numpy(), filled)


def test_mask_ops_and_take_against_numpy():
    x = randn(3, 4)
    mask = x > 0.2
    np.testing.assert_array_equal(cr.masked_fill(cr.tensor(x), mask, 9.0).numpy(),
                                  np.where(mask, 9.0, x))
    np.testing.assert_array_equal(cr.masked_select(cr.tensor(x), mask).numpy(), x[mask])
    row_mask = np.array([True, False, False, True])  # broadcast against x
    np.testing.assert_array_equal(cr.tensor(x).masked_select(row_mask).numpy(),
                                  x[np.broadcast_to(row_mask, x.shape)])
    src = randn(12)
    expected = x.copy()
    expected[mask] = src[:mask.sum()]
    np.testing.assert_array_equal(cr.masked_scatter(cr.tensor(x), mask, cr.tensor(src)).numpy(),
                                  expected)
    flat_idx = np.array([[0, -1], [5, 11]])
    np.testing.assert_array_equal(cr.take(cr.tensor(x), flat_idx).numpy(),
                                  np.take(x.ravel(), flat_idx))


def test_take_along_dim_broadcasts_the_index_as_torch():
    x = randn(2, 3)
    idx = np.array([[0, 2]])  # (1, 2): broadcast to x's 2 rows
    want = np.take_along_axis(x, np.broadcast_to(idx, (2, 2)), 1)
    np.testing.assert_array_equal(cr.take_along_dim(cr.tensor(x), idx, 1).numpy(), want)
    col = randn(3, 1)  # the input broadcasts too
    got = cr.take_along_dim(cr.tensor(col), np.array([[0, 0, 0, 0]]), 0)
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(col[0, 0], (1, 4)))
    np.testing.assert_array_equal(cr.take_along_dim(cr.tensor(x), np.array([5, -6])).numpy(),
                                  x.ravel()[[5, 0]])
    np.testing.assert_array_equal(cr.tensor(x).take_along_dim(np.array([[-1], [0]]), 1).numpy(),
                                  x[:, [2, 0]].diagonal()[:, None])
    a = leaf(x)
    cr.take_along_dim(a, idx, 1).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [[1, 0, 1], [1, 0, 1]])
    torch = _torch()
    if torch is not None:
        np.testing.assert_array_equal(
            torch.take_along_dim(torch.tensor(x), torch.tensor(idx), 1).numpy(), want)


def test_where_with_python_scalars_on_either_side():
    x = leaf(randn(3, 4))
    mask = x.detach().numpy() > 0
    y = cr.where(mask, x, 0.0) + cr.where(mask, 1.0, x)
    np.testing.assert_array_equal(y.detach().numpy(), np.where(mask, x.detach().numpy() + 1,
                                                               x.detach().numpy()))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))
    f32 = cr.tensor(randn(3).astype(np.float32))
    assert cr.where(np.array([True, False, True]), f32, 0.0).dtype == np.float32


# --- gradients ------------------------------------------------------------------------------

GRADCHECKED = [
    ("gather", lambda a: cr.gather(a, 1, I34), [(3, 4)]),
    ("scatter", lambda a, b: cr.scatter(a, 1, I34, b), [(3, 4), (3, 5)]),
    ("scatter_add", lambda a, b: cr.scatter_add(a, 0, I34[:2], b), [(4, 4), (2, 3)]),
    ("scatter_reduce_mean", lambda a, b: cr.scatter_reduce(a, 1, I34, b, "mean",
                                                           include_self=False),
     [(3, 4), (3, 3)]),
    ("index_select", lambda a: cr.index_select(a, 0, np.array([2, 2, 0])), [(3, 4)]),
    ("index_add", lambda a, b: a.index_add(0, np.array([1, 1]), b, alpha=-3.0),
     [(3, 4), (2, 4)]),
    ("index_copy", lambda a, b: a.index_copy(1, np.array([1, 1, 3]), b), [(2, 4), (2, 3)]),
    ("index_fill", lambda a, v: a.index_fill(0, np.array([0, 2, 0]), v), [(3, 2), ()]),
    ("masked_fill", lambda a, v: a.masked_fill(np.array([True, False]), v), [(3, 2), ()]),
    ("masked_scatter", lambda a, b: a.masked_scatter(np.eye(3, dtype=bool), b), [(3, 3), (5,)]),
    ("take", lambda a: cr.take(a, np.array([[1, 1], [-1, 0]])), [(2, 3)]),
    ("take_along_dim", lambda a: cr.take_along_dim(a, np.array([[[2], [0]]]), 2),
     [(3, 2, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRADCHECKED, ids=[g[0] for g in GRADCHECKED])
def test_gradcheck_and_gradgradcheck(name, fn, shapes):
    inputs = [leaf(randn(*s)) for s in shapes]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_repeated_indices_add_up_in_the_gradient_of_gather():
    x = leaf(randn(2, 3))
    out = cr.gather(x, 1, np.array([[0, 0, 0, 2], [1, 1, 2, 2]]))
    out.backward(cr.tensor(np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])))
    np.testing.assert_array_equal(x.grad.numpy(), [[6.0, 0.0, 4.0], [0.0, 11.0, 15.0]])
    x.grad = None
    cr.index_select(x, 1, np.array([2, 2, 2])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0, 3.0], [0.0, 0.0, 3.0]])


def test_scatter_gives_the_gradient_to_the_last_write_only():
    x, src = leaf(randn(1, 3)), leaf(randn(1, 4))
    cr.scatter(x, 1, np.array([[1, 1, 0, 1]]), src).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[0.0, 0.0, 1.0, 1.0]])
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 0.0, 1.0]])


def test_amax_and_amin_share_the_gradient_evenly_among_ties():
    x = leaf([[1.0, 5.0, 2.0]])
    src = leaf([[5.0, 0.0, 5.0, 2.0]])
    idx = np.array([[1, 0, 1, 2]])
    out = cr.scatter_reduce(x, 1, idx, src, "amax")
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 5.0, 2.0]])
    out.backward(cr.tensor(np.array([[1.0, 3.0, 4.0]])))
    # position 1: three entries equal 5 (x and two of src): 1 each; position 2: a tie of two
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 1.0, 2.0]])
    np.testing.assert_array_equal(src.grad.numpy(), [[1.0, 0.0, 1.0, 2.0]])
    y, s = leaf([[1.0, 5.0]]), leaf([[1.0, 1.0]])
    cr.scatter_reduce(y, 1, np.array([[0, 0]]), s, "amin", include_self=False).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [[0.0, 1.0]])  # the written one takes none
    np.testing.assert_array_equal(s.grad.numpy(), [[0.5, 0.5]])
    torch = _torch()
    if torch is not None:
        tx = torch.tensor([[1.0, 5.0, 2.0]], requires_grad=True)
        ts = torch.tensor([[5.0, 0.0, 5.0, 2.0]], requires_grad=True)
        torch.scatter_reduce(tx, 1, torch.tensor(idx), ts, "amax").backward(
            torch.tensor([[1.0, 3.0, 4.0]]))
        np.testing.assert_array_equal(tx.grad.numpy(), x.grad.numpy())
        np.testing.assert_array_equal(ts.grad.numpy(), src.grad.numpy())


def test_scatter_reduce_gradients_by_gradcheck():
    idx = np.array([[0, 2, 2], [1, 1, 0]])
    values = RNG.permutation(14).astype(float).reshape(2, 7) * 0.3 + 0.5  # distinct, > 0
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            inputs = [leaf(values[:, :4]), leaf(values[:, 4:] - 0.1)]

            def f(a, b, reduce=reduce, include_self=include_self):
                return cr.scatter_reduce(a, 1, idx, b, reduce, include_self=include_self)

            assert gradcheck(f, inputs), (reduce, include_self)
            assert gradgradcheck(f, inputs), (reduce, include_self)


def test_prod_gradient_is_exact_with_zeros():
    # positions: 0 <- [1]; 1 <- [0 (x), 3, 0 (src)]: two zeros; 2 <- [2, 4]; 3 <- [0 (x), 5]
    x = leaf([[1.0, 0.0, 2.0, 0.0]])
    src = leaf([[3.0, 4.0, 0.0, 5.0]])
    idx = np.array([[1, 2, 1, 3]])
    out = cr.scatter_reduce(x, 1, idx, src, "prod")
    np.testing.assert_array_equal(out.detach().numpy(), [[1.0, 0.0, 8.0, 0.0]])
    out.backward(cr.tensor(np.array([[1.0, 2.0, 3.0, 4.0]])))
    # d/de = grad * (product of the other entries at e's position)
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0.0, 12.0, 20.0]])
    np.testing.assert_array_equal(src.grad.numpy(), [[0.0, 6.0, 0.0, 0.0]])
    three = np.array([[1, 2, 1, 1, 3]])  # position 1 gets three zeros with include_self
    for index, extra in ((idx, []), (three, [0.0])):
        for include_self in (True, False):
            def f(a, b, index=index, include_self=include_self):
                return cr.scatter_reduce(a, 1, index, b, "prod", include_self=include_self)

            inputs = [leaf(x.detach().numpy()),
                      leaf(np.concatenate([src.detach().numpy()[0, :3], extra,
                                           src.detach().numpy()[0, 3:]])[None])]
            assert gradcheck(f, inputs), (index, include_self)
            assert gradgradcheck(f, inputs), (index, include_self)
    torch = _torch()
    if torch is not None:  # one zero per position, where PyTorch's formula is exact
        tx = torch.tensor([[1.0, 0.0, 2.0, 0.0]], requires_grad=True)
        ts = torch.tensor([[3.0, 4.0, 7.0, 5.0]], requires_grad=True)
        torch.scatter_reduce(tx, 1, torch.tensor(idx), ts, "prod").sum().backward()
        a, b = leaf(tx.detach().numpy()), leaf(ts.detach().numpy())
        cr.scatter_reduce(a, 1, idx, b, "prod").sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), tx.grad.numpy(), rtol=1e-14)
        np.testing.assert_allclose(b.grad.numpy(), ts.grad.numpy(), rtol=1e-14)


def test_forward_mode_and_vmap():
    import chainrule.autograd.forward_ad as fwAD
    from chainrule.func import jacrev, vmap

    x, t = randn(3, 4), randn(3, 4)
    with fwAD.dual_level():
        out = cr.gather(fwAD.make_dual(cr.tensor(x), cr.tensor(t)), 1, I34)
        np.testing.assert_array_equal(fwAD.unpack_dual(out).tangent.numpy(),
                                      np.take_along_axis(t, I34, 1))
    rows = vmap(lambda r: cr.gather(r, 0, np.array([3, 3, 1])))(cr.tensor(x))
    np.testing.assert_array_equal(rows.numpy(), x[:, [3, 3, 1]])
    J = jacrev(lambda a: cr.scatter_add(a, 1, I34, cr.tensor(np.ones((3, 3)))))(cr.tensor(x))
    np.testing.assert_array_equal(J.numpy().reshape(12, 12), np.eye(12))


def test_float32_stays_float32():
    x = cr.tensor(randn(3, 4).astype(np.float32), requires_grad=True)
    s = cr.tensor(randn(3, 3).astype(np.float32), requires_grad=True)
    for out in (cr.gather(x, 1, I34), cr.scatter(x, 1, I34, s), cr.scatter_add(x, 1, I34, s),
                cr.scatter_reduce(x, 1, I34, s, "mean"), cr.scatter(x, 1, I34, 2.0)):
        assert out.dtype == np.float32
        grads = cr.autograd.grad(out.sum(), [x], allow_unused=True)
        assert grads[0].dtype == np.float32


# --- in place -------------------------------------------------------------------------------

INPLACE = [
    ("scatter", (1, I34, "src")),
    ("scatter_add", (1, I34, "src")),
    ("scatter_reduce", (1, I34, "src", "amax")),
    ("index_add", (1, np.array([0, 3, 3]), "src")),
    ("index_copy", (1, np.array([0, 3, 2]), "src")),
    ("index_fill", (1, np.array([0, 3]), "value")),
    ("masked_fill", (np.array([True, False, True, False]), "value")),
    ("masked_scatter", (np.array([True, False, True, False]), "src")),
    ("index_put", ((np.array([0, 2]), np.array([1, 1])), "value")),
]


def _args(spec, src, value):
    def pick(a):
        if isinstance(a, str) and a in ("src", "value"):
            return src if a == "src" else value
        return a

    return [pick(a) for a in spec]


@pytest.mark.parametrize("name,spec", INPLACE, ids=[n for n, _ in INPLACE])
def test_inplace_variant_matches_the_out_of_place_op(name, spec):
    x0, s0, v0 = randn(3, 4), randn(3, 3), np.array(0.25)
    # recorded: values, gradients (to the leaf under the clone and to src/value) and version
    a, s, v = leaf(x0), leaf(s0), leaf(v0)
    y = a * 1.0
    before = y._version
    out = getattr(y, name + "_")(*_args(spec, s, v))
    assert out is y and y._version == before + 1
    w = cr.tensor(randn(3, 4))
    (y * w).sum().backward()
    b, s2, v2 = leaf(x0), leaf(s0), leaf(v0)
    ref = getattr(b * 1.0, name)(*_args(spec, s2, v2))
    np.testing.assert_array_equal(y.detach().numpy(), ref.detach().numpy())
    (ref * w).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    used = [(p, q) for key, p, q in (("src", s, s2), ("value", v, v2))
            if any(isinstance(a, str) and a == key for a in spec)]
    for p, q in used:
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    # not recorded: the data is written in place and the version bumped
    plain = cr.tensor(x0.copy())
    data = plain._data
    before = plain._version
    getattr(plain, name + "_")(*_args(spec, cr.tensor(s0), cr.tensor(v0)))
    assert plain._data is data and plain._version == before + 1
    np.testing.assert_array_equal(plain.numpy(), ref.detach().numpy())
    # a leaf that requires grad refuses, untouched
    with pytest.raises(RuntimeError, match="leaf Variable"):
        getattr(leaf(x0), name + "_")(*_args(spec, s0, 0.25))


def test_a_failed_inplace_update_leaves_the_data_untouched():
    x = cr.tensor(randn(3, 4))
    before, version = x.numpy().copy(), x._version
    with pytest.raises(IndexError, match="scatter_add: index 4 is out of bounds"):
        x.scatter_add_(1, np.array([[0, 4]]), cr.tensor(randn(1, 2)))
    with pytest.raises(RuntimeError, match="masked_fill: only supports boolean masks"):
        x.masked_fill_(np.array([1, 0, 1, 0]), 2.0)
    y = cr.tensor(randn(3, 4), requires_grad=True) * 2.0
    y_before = y.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="Index tensor must have the same number"):
        y.scatter_(1, np.array([0, 1]), 1.0)
    np.testing.assert_array_equal(x.numpy(), before)
    assert x._version == version
    np.testing.assert_array_equal(y.detach().numpy(), y_before)


# --- errors ---------------------------------------------------------------------------------


def test_errors_name_the_op_the_argument_and_the_shapes():
    x = cr.tensor(randn(2, 3))
    cases = [
        (lambda: cr.gather(x, 1, np.array([[0.0, 1.0]])), RuntimeError,
         r"gather: Expected dtype int32/int64 for index, got float64"),
        (lambda: cr.gather(x, 1, np.array([0, 1])), RuntimeError,
         r"gather: Index tensor must have the same number of dimensions as input tensor "
         r"\(index \[2\], input \[2, 3\]\)"),
        (lambda: cr.gather(x, 1, np.zeros((3, 2), np.int64)), RuntimeError,
         r"gather: Expected index \[3, 2\] to be no larger than self \[2, 3\] apart from "
         r"dimension 1"),
        (lambda: cr.gather(x, 1, np.array([[0, 3]])), IndexError,
         r"gather: index 3 is out of bounds for dimension 1 with size 3"),
        (lambda: cr.gather(x, 1, np.array([[0, -1]])), IndexError, r"index -1 is out of bounds"),
        (lambda: cr.gather(x, 2, np.array([[0]])), IndexError,
         r"gather: Dimension out of range \(expected to be in range of \[-2, 1\], but "
         r"got 2\)"),
        (lambda: cr.scatter(x, 1, np.array([[0, 1]]), cr.tensor(np.ones((1, 1)))),
         RuntimeError, r"scatter: Expected index \[1, 2\] .* no larger size than src "
                       r"\[1, 1\]"),
        (lambda: cr.scatter(x, 1, np.array([[0]]), cr.tensor(np.ones((1, 1), np.float32))),
         RuntimeError, r"scatter: Expected self.dtype to be equal to src.dtype"),
        (lambda: cr.scatter(x, 1, np.array([[0]]), 1.0, reduce="max"), RuntimeError,
         r"reduce argument must be either add or multiply"),
        (lambda: cr.scatter_reduce(x, 1, np.array([[0]]), x, "max"), RuntimeError,
         r"reduce argument must be either sum, prod, mean, amax or amin, got max"),
        (lambda: cr.scatter_add(x, 0, np.array([[0]]), cr.tensor(np.ones(1))), RuntimeError,
         r"scatter_add: Index tensor must have the same number of dimensions as src"),
        (lambda: cr.index_select(x, 1, np.array([[0, 1]])), IndexError,
         r"index_select: Index is supposed to be a vector"),
        (lambda: cr.index_select(x, 1, np.array([0.0])), RuntimeError,
         r"index_select: Expected dtype int32/int64 for index"),
        (lambda: cr.index_select(x, 1, np.array([0, 5])), IndexError,
         r"index_select: index 5 is out of bounds for dimension 1 with size 3"),
        (lambda: cr.index_add(x, 1, np.array([0, 0]), cr.tensor(np.ones((2, 3)))),
         RuntimeError, r"index_add: source of shape \[2, 3\] does not match the self shape "
                       r"\[2, 3\] with 2 indices along dimension 1 \(expected \[2, 2\]\)"),
        (lambda: cr.index_copy(x, 1, np.array([0], np.int32), cr.tensor(np.ones((2, 1)))),
         RuntimeError, r"index_copy: Expected a long tensor for index, but got int32"),
        (lambda: cr.index_fill(x, 1, np.array([0], np.int32), 1.0), RuntimeError,
         r"index_fill: Expected dtype int64 for index"),
        (lambda: cr.index_fill(x, 1, np.array([3]), 1.0), IndexError,
         r"index_fill: index 3 is out of bounds"),
        (lambda: x.masked_fill(np.array([True, False, True]), cr.tensor(np.ones(2))),
         RuntimeError, r"masked_fill: only supports a 0-dimensional value tensor, but got "
                       r"tensor with 1 dimension\(s\)"),
        (lambda: x.masked_fill(np.array([True, False]), 1.0), RuntimeError,
         r"masked_fill: mask of shape \(2,\) does not broadcast with the input's shape "
         r"\(2, 3\)"),
        (lambda: cr.masked_select(x, np.array([1, 0, 1])), RuntimeError,
         r"masked_select: expected BoolTensor for mask"),
        (lambda: x.masked_scatter(np.ones((2, 3), bool), cr.tensor(np.ones(5))), RuntimeError,
         r"masked_scatter: Number of elements of source < number of ones in mask \(5 < 6\)"),
        (lambda: cr.take(x, np.array([6])), IndexError,
         r"take: index 6 is out of bounds for dimension 0 with size 6"),
        (lambda: cr.take(x, np.array([0.0])), RuntimeError,
         r"take: Expected a long tensor for index, but got float64"),
        (lambda: cr.take_along_dim(x, np.array([[0, 1], [1, 1], [0, 0]]), 1), RuntimeError,
         r"take_along_dim: the shapes of input \[2, 3\] and indices \[3, 2\] do not "
         r"broadcast apart from dimension 1"),
        (lambda: cr.take_along_dim(x, np.array([[[0]]]), 1), RuntimeError,
         r"take_along_dim: input and indices should have the same number of dimensions"),
        (lambda: cr.take_along_dim(x, np.array([[0.0]]), 1), RuntimeError,
         r"take_along_dim: dtype of indices should be int64"),
    ]
    for fn, kind, pattern in cases:
        with pytest.raises(kind, match=pattern):
            fn()


def test_torch_raises_the_same_kinds_of_errors():
    x = np.arange(6.0).reshape(2, 3)
    bad = [
        ("gather", (1, np.array([[0.0, 1.0]]))),
        ("gather", (1, np.array([0, 1]))),
        ("gather", (1, np.zeros((3, 2), np.int64))),
        ("gather", (1, np.array([[0, 3]]))),
        ("index_select", (1, np.array([0.0]))),
        ("take", (np.array([0.0]),)),
    ]
    ours = []
    for name, args in bad:
        with pytest.raises((RuntimeError, IndexError)) as info:
            getattr(cr, name)(cr.tensor(x), *args)
        ours.append(info.type)
    assert RuntimeError in ours
    torch = _torch()
    if torch is not None:
        for name, args in bad:
            targs = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
            with pytest.raises((RuntimeError, IndexError)):
                getattr(torch, name)(torch.tensor(x), *targs)


# --- against PyTorch ------------------------------------------------------------------------

AGAINST_TORCH = [
    ("gather", lambda m, a: m.gather(a, 1, I34)),
    ("scatter", lambda m, a, b: m.scatter(a, 1, np.array([[0, 2, 1], [3, 1, 0], [2, 0, 3]]),
                                          b)),
    ("scatter_value", lambda m, a: m.scatter(a, 1, I34, 1.5)),
    ("scatter_add", lambda m, a, b: m.scatter_add(a, 1, I34, b)),
    ("scatter_reduce_sum", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "sum",
                                                            include_self=False)),
    ("scatter_reduce_mean", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "mean")),
    ("scatter_reduce_mean_ex", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "mean",
                                                                include_self=False)),
    ("scatter_reduce_prod", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "prod")),
    ("scatter_reduce_amax", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "amax")),
    ("scatter_reduce_amin_ex", lambda m, a, b: m.scatter_reduce(a, 1, I34, b, "amin",
                                                                include_self=False)),
    ("index_select", lambda m, a: m.index_select(a, 1, np.array([3, 0, 3]))),
    ("index_add", lambda m, a, b: m.index_add(a, 1, np.array([0, 3, 3]), b, alpha=2.0)),
    ("index_copy", lambda m, a, b: m.index_copy(a, 1, np.array([0, 3, 1]), b)),
    ("index_fill", lambda m, a, v: m.index_fill(a, 1, np.array([0, 2, 0]), v)),
    ("masked_fill", lambda m, a, v: m.masked_fill(a, np.array([True, False, True, False]), v)),
    ("masked_select", lambda m, a: m.masked_select(a, np.array([True, False, True, False]))),
    ("masked_scatter", lambda m, a, b: m.masked_scatter(
        a, np.array([[True], [False], [True]]), b)),
    ("take", lambda m, a: m.take(a, np.array([[0, -1], [5, 5]]))),
    ("take_along_dim", lambda m, a: m.take_along_dim(a, np.array([[0, 3, 3]]), 1)),
]
SHAPES = {"a": (3, 4), "b": (3, 3), "v": ()}


def _call(module, fn, arrays, convert):
    return fn(module, *[convert(a) for a in arrays])


@pytest.mark.parametrize("name,fn", AGAINST_TORCH, ids=[n for n, _ in AGAINST_TORCH])
def test_values_and_gradients_against_torch(name, fn):
    n = fn.__code__.co_argcount - 1
    keys = "abv"[:n] if "v" not in fn.__code__.co_varnames[1:n + 1] else "av"
    arrays = [RNG.uniform(0.5, 2.0, SHAPES[k]) * RNG.choice([-1, 1], SHAPES[k]) for k in keys]
    ours = [leaf(a) for a in arrays]
    out = _call(cr, fn, ours, lambda t: t)
    w = randn(*out.shape)
    (out * cr.tensor(w)).sum().backward()
    assert all(t.grad is not None and np.isfinite(t.grad.numpy()).all() for t in ours)
    assert gradcheck(lambda *xs: _call(cr, fn, xs, lambda t: t), [leaf(a) for a in arrays])
    torch = _torch()
    if torch is None:
        return

    class T:  # the same calls on torch (NumPy index arrays as tensors)
        def __getattr__(self, attr):
            f = getattr(torch, attr)

            def call(*args, **kwargs):
                return f(*[torch.tensor(a) if isinstance(a, np.ndarray) else a
                           for a in args], **kwargs)
            return call

    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    tout = _call(T(), fn, theirs, lambda t: t)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-13)
    (tout * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)
