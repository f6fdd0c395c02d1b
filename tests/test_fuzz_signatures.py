"""Regressions from a signature sweep against PyTorch (argument handling: keywords, dims,
keepdim, dtype=, out=, aliasing of results, return types). Expected values are derived by
hand; each is also compared with torch where it is installed."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None


def same(ours, theirs):
    """Values, shape and dtype of a chainrule tensor equal to a torch tensor's."""
    assert np.dtype(ours.dtype).name == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


# --- out= -------------------------------------------------------------------------------

def test_tensordot_writes_out_and_returns_it():
    a = cr.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = cr.empty(0)
    got = cr.tensordot(a, a, dims=2, out=out)
    assert got is out  # the out= tensor, resized to the 0-d result: 1 + 4 + 9 + 16
    assert out.shape == () and out.item() == 30.0
    out2 = cr.zeros(5)
    cr.tensordot(a, a, dims=1, out=out2)  # a @ a, into a resized out
    np.testing.assert_array_equal(out2.numpy(), [[7.0, 10.0], [15.0, 22.0]])
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        cr.tensordot(a.clone().requires_grad_(), a, dims=2, out=cr.empty(0))
    if torch is not None:
        t = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)
        tout = torch.empty(0, dtype=torch.float64)
        torch.tensordot(t, t, dims=2, out=tout)
        same(out, tout)


def test_max_min_take_other_and_out():
    x = cr.tensor([[1.0, 5.0], [3.0, 2.0]])
    y = cr.tensor([[2.0, 2.0], [2.0, 2.0]])
    np.testing.assert_array_equal(cr.max(x, other=y).numpy(), [[2.0, 5.0], [3.0, 2.0]])
    np.testing.assert_array_equal(x.min(other=y).numpy(), [[1.0, 2.0], [2.0, 2.0]])
    values, indices = cr.empty(0), cr.empty(0, dtype=cr.int64)
    got = cr.max(x, 1, out=(values, indices))
    assert got.values is values and got.indices is indices
    np.testing.assert_array_equal(values.numpy(), [5.0, 3.0])
    np.testing.assert_array_equal(indices.numpy(), [1, 0])
    whole = cr.empty(0)
    assert cr.min(x, out=whole) is whole and whole.item() == 1.0
    if torch is not None:
        tx, ty = torch.tensor(x.numpy()), torch.tensor(y.numpy())
        same(cr.max(x, other=y), torch.max(tx, other=ty))
        same(cr.min(x, other=y), torch.min(tx, other=ty))


# --- keepdim / dtype= -----------------------------------------------------------------------

def test_argmax_keepdim_without_dim_keeps_every_dim():
    x = cr.tensor([[1, 5], [7, 2]])
    got = cr.argmax(x, keepdim=True)
    assert got.shape == (1, 1) and got.item() == 2  # flat index of 7
    got = x.argmin(keepdim=True)
    assert got.shape == (1, 1) and got.item() == 0
    if torch is not None:
        same(got, torch.tensor([[1, 5], [7, 2]]).argmin(keepdim=True))


def test_cumsum_cumprod_keep_the_dtype_asked_for():
    b = cr.tensor([True, True, False, True])
    got = cr.cumsum(b, 0, dtype=cr.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [1, 2, 2, 3])
    got = cr.tensor([2, 3, 4], dtype=cr.int8).cumprod(dim=0, dtype=cr.int16)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got.numpy(), [2, 6, 24])
    assert cr.cumsum(b, 0).dtype == np.int64  # no dtype: int64, as before
    if torch is not None:
        same(cr.cumsum(b, 0, dtype=cr.int32),
             torch.cumsum(torch.tensor([True, True, False, True]), 0, dtype=torch.int32))


def test_nanmean_keeps_the_dtype_asked_for():
    x = cr.tensor([[1.0, float("nan")], [2.0, 3.0]])
    got = cr.nanmean(x, 1, dtype=cr.float32)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), [1.0, 2.5])
    if torch is not None:
        same(got, torch.nanmean(torch.tensor(x.numpy()), 1, dtype=torch.float32))


# --- dtypes of results ----------------------------------------------------------------

def test_bincount_of_integer_weights_is_float64():
    i = cr.tensor([0, 1, 1])
    got = cr.bincount(i, cr.tensor([1, 2, 3]))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got.numpy(), [1.0, 5.0])
    assert cr.bincount(i, cr.tensor([True, False, True])).dtype == np.float64
    assert cr.bincount(i, cr.tensor([1.0, 2.0, 3.0], dtype=cr.float32)).dtype == np.float32
    if torch is not None:
        same(got, torch.bincount(torch.tensor([0, 1, 1]), torch.tensor([1, 2, 3])))


def test_atan2_of_integers_and_bools_is_the_default_float():
    got = cr.atan2(cr.tensor([1, 0], dtype=cr.int8), cr.tensor([1, 1], dtype=cr.int8))
    assert got.dtype == np.float64  # not NumPy's float16
    np.testing.assert_allclose(got.numpy(), [np.pi / 4, 0.0])
    assert cr.atan2(cr.tensor([True]), cr.tensor([False])).dtype == np.float64
    assert cr.tensor([1]).arctan2(cr.tensor([2])).dtype == np.float64
    assert cr.atan2(cr.tensor([1.0], dtype=cr.float32), cr.tensor([2])).dtype == np.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        cr.tensor([1]).atan2_(cr.tensor([2]))
    if torch is not None:
        old = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            same(got, torch.atan2(torch.tensor([1, 0], dtype=torch.int8),
                                  torch.tensor([1, 1], dtype=torch.int8)))
        finally:
            torch.set_default_dtype(old)


def test_binary_functions_take_torch_keyword_names():
    x = cr.tensor([5.0, -1.0])
    np.testing.assert_array_equal(cr.fmod(x, other=3.0).numpy(), [2.0, -1.0])
    np.testing.assert_array_equal(cr.remainder(input=x, other=3.0).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.fmax(other=cr.tensor([1.0, 1.0])).numpy(), [5.0, 1.0])
    if torch is not None:
        same(cr.remainder(input=x, other=3.0),
             torch.remainder(input=torch.tensor([5.0, -1.0], dtype=torch.float64), other=3.0))


def test_clamp_of_bools_by_bool_tensors_stays_bool():
    b = cr.tensor([True, False])
    got = cr.clamp(b, cr.tensor([False, True]))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got.numpy(), [True, True])
    got = cr.clamp(b, None, cr.tensor([False, True]))
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got.numpy(), [False, False])
    assert cr.clamp(b, cr.tensor([2, 3])).dtype == np.int64
    b.clamp_(cr.tensor([False, True]))  # in place: no cast error any more
    np.testing.assert_array_equal(b.numpy(), [True, True])
    if torch is not None:
        same(cr.clamp(cr.tensor([True, False]), cr.tensor([False, True])),
             torch.clamp(torch.tensor([True, False]), torch.tensor([False, True])))


# --- values ----------------------------------------------------------------------------

def test_histc_with_min_equal_max_uses_the_data_range():
    x = cr.tensor([1.0, 2.0, 3.0, 4.0])
    # min == max == 1 (not both 0): the data's range [1, 4] in 2 bins: [1, 2.5), [2.5, 4]
    np.testing.assert_array_equal(cr.histc(x, 2, 1, 1).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(x.histc(bins=2, min=5, max=5).numpy(), [2.0, 2.0])
    # constant data: [c - 1, c + 1]
    np.testing.assert_array_equal(cr.histc(cr.ones(3), 2, 5, 5).numpy(), [0.0, 3.0])
    if torch is not None:
        same(cr.histc(x, 2, 1, 1), torch.histc(torch.tensor(x.numpy()), 2, 1, 1))


def test_tensor_split_negative_indices_count_from_the_end():
    x = cr.arange(5)
    a, b = cr.tensor_split(x, [-1])  # x[:-1], x[-1:]
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(b.numpy(), [4])
    parts = cr.tensor_split(x, [-7, 2])  # x[:-7] (empty), x[-7:2], x[2:]
    assert [p.tolist() for p in parts] == [[], [0, 1], [2, 3, 4]]
    m = cr.ones(2, 3)
    assert cr.hsplit(m, (-1,))[0].shape == (2, 2)
    assert cr.vsplit(cr.ones(3, 2), [-1])[0].shape == (2, 2)
    if torch is not None:
        theirs = torch.tensor_split(torch.arange(5), [-7, 2])
        assert [p.tolist() for p in parts] == [p.tolist() for p in theirs]


def test_stride_of_an_empty_tensor_is_row_major():
    assert cr.zeros(0, 3).stride() == (3, 1)
    assert cr.zeros(0).stride() == (1,)
    assert cr.zeros(2, 0, 4).stride(0) == 4
    if torch is not None:
        assert cr.zeros(0, 3).stride() == torch.zeros(0, 3).stride()


# --- aliasing ----------------------------------------------------------------------------

def test_ravel_of_a_non_contiguous_tensor_is_a_copy():
    base = cr.tensor(np.arange(12.0).reshape(2, 6))
    x = base[:, ::2]  # (2, 3) with steps: NumPy could view it flat, PyTorch copies
    flat = x.ravel()
    x.add_(1)
    np.testing.assert_array_equal(flat.numpy(), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0])
    y = cr.arange(4.0)
    view = cr.ravel(y)  # a contiguous input: a view, as PyTorch's
    y.add_(1)
    np.testing.assert_array_equal(view.numpy(), [1.0, 2.0, 3.0, 4.0])
    if torch is not None:
        tb = torch.arange(12.0).reshape(2, 6)
        tx = tb[:, ::2]
        tflat = tx.ravel()
        tx.add_(1)
        np.testing.assert_array_equal(flat.numpy(), tflat.numpy())


def test_diff_of_order_0_and_an_empty_pad_are_copies():
    x = cr.tensor([[1.0, 2.0, 4.0]])
    for got in (cr.diff(x, 0), x.diff(n=0), cr.constant_pad_nd(x, ())):
        assert got is not x
        x.add_(1)  # writes to the input do not reach the result
        np.testing.assert_array_equal(got.numpy(), x.numpy() - 1)
        x.sub_(1)
    g = cr.tensor([1.0, 2.0], requires_grad=True)
    (cr.diff(g, 0) * cr.tensor([3.0, 5.0])).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), [3.0, 5.0])
    if torch is not None:
        t = torch.tensor([[1.0, 2.0, 4.0]])
        r = torch.diff(t, 0)
        t.add_(1)
        assert r.tolist() == [[1.0, 2.0, 4.0]]


def test_methods_take_dims_as_varargs_and_sizes_by_keyword():
    # x.flip(0, 1), x.tile(1, 2), x.squeeze(0, 1), x.hsplit(1, 2) and PyTorch's keywords
    # (reshape(shape=), permute(dims=), expand(size=), view(size=)) raised TypeError
    x = cr.arange(12.0).reshape(1, 1, 3, 4)
    assert x.flip(2, 3).tolist() == cr.flip(x, (2, 3)).tolist()
    assert x.flip(2, 3)[0, 0, 0, 0].item() == 11.0  # the last entry comes first
    assert tuple(x.tile(1, 2).shape) == (1, 1, 3, 8)
    assert tuple(x.squeeze(0, 1).shape) == (3, 4)
    assert x.count_nonzero(0, 1).tolist() == [[0, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]
    assert [tuple(p.shape) for p in x[0, 0].hsplit(1, 2)] == [(3, 1), (3, 1), (3, 2)]
    assert tuple(x.reshape(shape=(3, 4)).shape) == (3, 4)
    assert tuple(x.permute(dims=(3, 2, 1, 0)).shape) == (4, 3, 1, 1)
    assert tuple(x.expand(size=(2, 1, 3, 4)).shape) == (2, 1, 3, 4)
    assert tuple(x.view(size=(12,)).shape) == (12,)
    # view(dtype): the same bytes read as another dtype of the same size (1.0 = 0x3FF0...)
    assert cr.ones(2).view(cr.int64).tolist() == [0x3FF0000000000000] * 2
    with pytest.raises(NotImplementedError, match="item size"):
        cr.ones(2).view(cr.float32)
    if torch is not None:
        t = torch.arange(12.0).reshape(1, 1, 3, 4)
        assert t.flip(2, 3).tolist() == x.flip(2, 3).tolist()
        assert t.count_nonzero(0, 1).tolist() == x.count_nonzero(0, 1).tolist()
        assert torch.ones(2, dtype=torch.float64).view(torch.int64).tolist() == \
            cr.ones(2).view(cr.int64).tolist()


def test_lerp_rounds_as_torch_at_large_weights():
    # |w| >= 0.5 takes end - (end - start)(1 - w): w = 1 gives end exactly, as PyTorch's
    # (start + 1 * (end - start) can be an ulp off: 1/3 + (0.9 - 1/3) = 0.8999999999999999)
    a, b = cr.tensor([1 / 3, -2.5, 1e-17]), cr.tensor([0.9, 3.3, 5.0])
    assert a.lerp(b, 1.0).tolist() == [0.9, 3.3, 5.0]
    assert 1 / 3 + (0.9 - 1 / 3) != 0.9  # the other form's rounding, for the record
    assert cr.lerp(a, b, cr.tensor([1.0, 1.0, 1.0])).tolist() == [0.9, 3.3, 5.0]
    assert cr.autograd.gradcheck(lambda x, y, w: cr.lerp(x, y, w),
                                 (cr.tensor([0.1, 2.0], requires_grad=True),
                                  cr.tensor([0.7, -1.0], requires_grad=True),
                                  cr.tensor([0.2, 0.9], requires_grad=True)))
    if torch is not None:
        ta = torch.tensor([1 / 3, -2.5, 1e-17], dtype=torch.float64)
        tb = torch.tensor([0.9, 3.3, 5.0], dtype=torch.float64)
        assert ta.lerp(tb, 1.0).tolist() == a.lerp(b, 1.0).tolist()


def test_normal_with_number_mean_and_std():
    # normal(0., 1., size) raised (no tensor to place the draw beside); a negative number
    # std drew silently
    cr.manual_seed(0)
    z = cr.normal(0.0, 1.0, (4,))
    assert tuple(z.shape) == (4,) and z.dtype == cr.get_default_dtype()
    assert cr.normal(0.0, 1.0, (2,), dtype=cr.float32).dtype == cr.float32
    g = cr.Generator().manual_seed(3)
    a = cr.normal(2.0, 0.5, (3,), generator=g)
    g.manual_seed(3)
    assert a.tolist() == cr.normal(2.0, 0.5, (3,), generator=g).tolist()
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        cr.normal(cr.zeros(2), -1.0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        cr.normal(0.0, -1.0, (2,))
    if torch is not None:
        with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
            torch.normal(0.0, -1.0, (2,))
