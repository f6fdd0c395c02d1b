"""Parity of the autograd core with PyTorch: cases found by a differential fuzzer.

Each test asserts a value derived without PyTorch (by hand, a finite difference or an
invariant) and, when PyTorch is importable, also compares with it.
"""

import numpy as np
import pytest

import chainrule

try:
    import torch
except ImportError:  # pragma: no cover - PyTorch is optional
    torch = None


def _np(t):
    return np.asarray(t.detach().numpy())


# --- cat: PyTorch's legacy skip of 1-D empty tensors --------------------------------------

def test_cat_skipped_empty_tensor_still_promotes_dtype_and_gets_a_grad():
    a = chainrule.tensor(np.ones((1, 2), np.float32), requires_grad=True)
    e = chainrule.tensor(np.zeros(0), requires_grad=True)  # float64, shape (0,)
    y = chainrule.cat([a, e], dim=1)
    # the empty float64 tensor takes part in the dtype promotion though it is skipped
    assert y.dtype == chainrule.float64 and tuple(y.shape) == (1, 2)
    y.sum().backward()
    np.testing.assert_array_equal(_np(a.grad), np.ones((1, 2), np.float32))
    assert e.grad is not None and tuple(e.grad.shape) == (0,)
    # a requires_grad empty tensor alone makes the result require grad
    e2 = chainrule.tensor(np.zeros(0), requires_grad=True)
    y2 = chainrule.cat([e2, chainrule.tensor(np.ones((2, 2))), e2], dim=-2)
    assert y2.requires_grad and tuple(y2.shape) == (2, 2)
    if torch is not None:
        ta = torch.tensor(np.ones((1, 2), np.float32), requires_grad=True)
        te = torch.tensor(np.zeros(0), requires_grad=True)
        ty = torch.cat([ta, te], dim=1)
        assert str(ty.dtype) == "torch." + str(y.dtype)
        ty.sum().backward()
        assert tuple(te.grad.shape) == tuple(e.grad.shape)


# --- in-place writes of a tensor that requires grad into an int or bool tensor -------------

@pytest.mark.parametrize("dtype", [np.bool_, np.int64])
def test_inplace_write_into_non_float_tensor_records_nothing(dtype):
    x = chainrule.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    b = chainrule.tensor(np.zeros((2, 3), dtype))
    b[0].copy_(x)          # through a view
    b[1] = x * 2           # setitem
    c = chainrule.tensor(np.zeros(3, dtype))
    c.copy_(x)             # directly
    for t in (b, c):
        # an int or bool tensor cannot require grad: the values are written, no history
        assert not t.requires_grad and t.grad_fn is None and t.is_leaf
    expect = np.array([[1, 2, 3], [2, 4, 6]]).astype(dtype)
    np.testing.assert_array_equal(_np(b), expect)
    if torch is not None:
        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        tb = torch.tensor(np.zeros((2, 3), dtype))
        tb[0].copy_(tx)
        tb[1] = tx * 2
        assert tb.requires_grad == b.requires_grad
        np.testing.assert_array_equal(tb.numpy(), _np(b))


# --- chunk of an empty dim ---------------------------------------------------------------

def test_chunk_of_empty_dim_gives_chunks_empty_pieces():
    x = chainrule.tensor(np.zeros((0, 2)), requires_grad=True)
    pieces = x.chunk(3)
    assert len(pieces) == 3 and all(tuple(p.shape) == (0, 2) for p in pieces)
    sum(p.sum() for p in pieces).backward()
    assert tuple(x.grad.shape) == (0, 2)
    assert len(chainrule.zeros(2, 0).chunk(2, dim=1)) == 2
    assert len(chainrule.zeros(4).chunk(3)) == 2  # non-empty: ceil(4 / 3) = 2 per piece
    if torch is not None:
        assert len(torch.zeros(0, 2).chunk(3)) == len(pieces)
        assert len(torch.zeros(4).chunk(3)) == 2


# --- add / sub with alpha and a Python number ----------------------------------------------

def test_add_sub_alpha_with_a_number_keeps_a_0d_float32_dtype():
    a = chainrule.tensor(np.float32(1.0), requires_grad=True)
    y = chainrule.sub(a, 3.0, alpha=2)        # 1 - 3 * 2
    z = chainrule.add(a, 3.0, alpha=2)        # 1 + 3 * 2
    assert y.dtype == chainrule.float32 and z.dtype == chainrule.float32
    assert float(y) == -5.0 and float(z) == 7.0
    (y + z).backward()
    assert float(a.grad) == 2.0
    # an int tensor with a float number: the float's default dtype, as without alpha
    w = chainrule.add(chainrule.tensor(np.array([1, 2])), 1.5, alpha=2)
    np.testing.assert_array_equal(_np(w), [4.0, 5.0])
    if torch is not None:
        ta = torch.tensor(np.float32(1.0))
        assert torch.sub(ta, 3.0, alpha=2).dtype == torch.float32


# --- flatten with nothing to merge returns its input --------------------------------------

def test_flatten_with_nothing_to_merge_returns_the_input_itself():
    x = chainrule.ones(2, 3, requires_grad=True)
    for args in [(1,), (0, 0), (-1,), (0, -2)]:
        assert x.flatten(*args) is x
    v = chainrule.ones(3, requires_grad=True)
    assert v.flatten() is v and v.flatten().is_leaf
    y = x.flatten()                       # something merged: a new tensor with history
    assert tuple(y.shape) == (6,) and y.grad_fn is not None
    z = chainrule.tensor(2.0, requires_grad=True).flatten()  # 0-d: a (1,) view
    assert tuple(z.shape) == (1,) and z.grad_fn is not None
    if torch is not None:
        tx = torch.ones(2, 3, requires_grad=True)
        assert tx.flatten(1) is tx and tx.flatten().grad_fn is not None


# --- logsumexp over an empty dim ------------------------------------------------------------

@pytest.mark.parametrize("shape,dim,expect", [((0,), 0, ()), ((2, 0), 1, (2,)),
                                              ((0, 3), 0, (3,)), ((0, 3), 1, (0,))])
def test_logsumexp_over_an_empty_dim_is_minus_inf(shape, dim, expect):
    x = chainrule.zeros(shape, requires_grad=True)
    y = chainrule.logsumexp(x, dim)
    assert tuple(y.shape) == expect
    assert np.all(_np(y) == -np.inf)      # log of an empty sum of exp: log 0
    y.sum().backward()
    assert tuple(x.grad.shape) == shape
    if torch is not None:
        ty = torch.logsumexp(torch.zeros(shape), dim)
        np.testing.assert_array_equal(ty.numpy(), _np(y))


# --- erfinv and sinc recompute f(x) in backward (the output may be changed in place) ------

@pytest.mark.parametrize("name", ["erfinv", "sinc"])
def test_erfinv_sinc_output_changed_in_place_keeps_the_backward_valid(name):
    xs = np.array([0.3, -0.6, 0.45])
    x = chainrule.tensor(xs, requires_grad=True)
    y = getattr(chainrule, name)(x)
    y.mul_(2)                             # PyTorch saves only x: no version error
    y.sum().backward()
    f = getattr(chainrule, name)
    eps = 1e-6
    fd = (_np(f(chainrule.tensor(xs + eps))) - _np(f(chainrule.tensor(xs - eps)))) / (2 * eps)
    np.testing.assert_allclose(_np(x.grad), 2 * fd, rtol=1e-6)
    if torch is not None:
        tx = torch.tensor(xs, requires_grad=True)
        ty = getattr(torch, name)(tx)
        ty.mul_(2)
        ty.sum().backward()
        np.testing.assert_allclose(tx.grad.numpy(), _np(x.grad), rtol=1e-10)


# --- xlogy / xlog1py with a Python number keep a float32 tensor's dtype ------------------

def test_xlogy_xlog1py_with_a_number_keep_float32():
    xs = np.array([0.5, 1.5], np.float32)
    x = chainrule.tensor(xs, requires_grad=True)
    y = chainrule.xlogy(x, 3.0)
    assert y.dtype == chainrule.float32
    np.testing.assert_allclose(_np(y), xs * np.log(3.0), rtol=1e-6)
    y.sum().backward()
    assert x.grad.dtype == chainrule.float32
    np.testing.assert_allclose(_np(x.grad), np.full(2, np.log(3.0)), rtol=1e-6)
    assert chainrule.xlogy(3.0, x).dtype == chainrule.float32
    z = chainrule.special.xlog1py(x, 3)
    assert z.dtype == chainrule.float32
    np.testing.assert_allclose(_np(z), xs * np.log1p(3.0), rtol=1e-6)
    # an int tensor with a float number: the default float dtype
    assert chainrule.xlogy(chainrule.tensor(np.array([1, 2])), 3.0).dtype == chainrule.float64
    if torch is not None:
        assert torch.xlogy(torch.tensor(xs), 3.0).dtype == torch.float32


# --- masked_fill keeps an int or bool input's dtype ----------------------------------------

def test_masked_fill_of_int_and_bool_tensors_keeps_their_dtype():
    m = chainrule.tensor(np.array([True, False, False]))
    i = chainrule.tensor(np.array([1, 2, 3]))
    out = i.masked_fill(m, 2.5)               # the value is cast: 2.5 -> 2
    assert out.dtype == chainrule.int64 and out.tolist() == [2, 2, 3]
    i.masked_fill_(m, 0.0)
    assert i.dtype == chainrule.int64 and i.tolist() == [0, 2, 3]
    b = chainrule.tensor(np.array([True, False, True]))
    b.masked_fill_(m, 0.0)
    assert b.dtype == chainrule.bool and b.tolist() == [False, False, True]
    v = chainrule.tensor(-2.5, requires_grad=True)
    out2 = chainrule.tensor(np.array([1, 2, 3])).masked_fill(m, v)
    assert out2.tolist() == [-2, 2, 3] and not out2.requires_grad
    # a float input: the 0-d value takes part in the gradient as before
    f = chainrule.tensor(np.array([0.5, 1.5]), requires_grad=True)
    w = chainrule.tensor(4.0, requires_grad=True)
    f.masked_fill(m[:2], w).sum().backward()
    assert float(w.grad) == 1.0 and _np(f.grad).tolist() == [0.0, 1.0]
    if torch is not None:
        ti = torch.tensor([1, 2, 3])
        tm = torch.tensor([True, False, False])
        assert ti.masked_fill(tm, 2.5).tolist() == out.tolist()


# --- diag_embed keeps inf / NaN on the diagonal --------------------------------------------

def test_diag_embed_keeps_inf_on_the_diagonal_and_nan_cotangents_off_it():
    y = chainrule.diag_embed(chainrule.tensor([np.inf, 1.0]))
    np.testing.assert_array_equal(_np(y), [[np.inf, 0.0], [0.0, 1.0]])  # not inf * 0 = NaN
    x = chainrule.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    y = chainrule.diag_embed(x, offset=1, dim1=0, dim2=2)    # (3, 2, 3)
    assert tuple(y.shape) == (3, 2, 3)
    np.testing.assert_array_equal(_np(y[:, 1, :]), [[0, 3, 0], [0, 0, 4], [0, 0, 0]])
    g = np.full((3, 2, 3), np.nan)                            # NaN off the diagonal only
    g[0, :, 1], g[1, :, 2] = [10.0, 30.0], [20.0, 40.0]
    y.backward(chainrule.tensor(g))
    np.testing.assert_array_equal(_np(x.grad), [[10.0, 20.0], [30.0, 40.0]])
    if torch is not None:
        tx = torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64, requires_grad=True)
        ty = torch.diag_embed(tx, offset=1, dim1=0, dim2=2)
        ty.backward(torch.tensor(g))
        np.testing.assert_array_equal(tx.grad.numpy(), _np(x.grad))
        np.testing.assert_array_equal(ty.detach().numpy(), _np(y))


# --- advanced indexing gives a contiguous tensor (so .view works on it) --------------------

def test_advanced_indexing_result_is_contiguous_and_viewable():
    x = chainrule.tensor(np.arange(12.0).reshape(1, 4, 3), requires_grad=True)
    idx = chainrule.tensor(np.array([0, 2]))
    for y in (x[..., idx], x[..., idx, None], x[:, :, [True, False, True]]):
        assert y.is_contiguous()
    y = x[..., idx]
    flat = y.view(-1)                      # NumPy's fancy indexing left it strided
    np.testing.assert_array_equal(_np(flat), np.arange(12.0).reshape(4, 3)[:, [0, 2]].ravel())
    flat.sum().backward()
    np.testing.assert_array_equal(_np(x.grad)[0], np.tile([1.0, 0.0, 1.0], (4, 1)))
    if torch is not None:
        tx = torch.arange(12.0).reshape(1, 4, 3)
        assert tx[..., torch.tensor([0, 2])].is_contiguous()


# --- casts and clones of expanded tensors are contiguous; long() of int64 is the tensor ---

def test_cast_and_clone_of_an_expanded_tensor_are_contiguous():
    b = chainrule.tensor(np.array([[True], [False]]))
    x = chainrule.tensor(np.array([[1.0], [2.0]]))
    for y in (b.expand(2, 3).t().double(), x.expand(2, 3).t().clone(),
              x.expand(2, 3).t().long(), x.expand(2, 3).t().bool(),
              x.expand(4, 2, 3).permute(2, 0, 1).float()):
        assert y.is_contiguous()
    # so reshape gives a view of it, and a write through that view shows in it
    y = b.expand(2, 2, 3).double()
    flat = y.reshape(12)
    flat.zero_()
    assert np.all(_np(y) == 0.0)
    # a dense input keeps its layout (a transpose stays a transpose), as PyTorch's
    assert not chainrule.ones(2, 3).t().clone().is_contiguous()
    if torch is not None:
        tx = torch.tensor([[1.0], [2.0]])
        assert tx.expand(2, 3).t().clone().is_contiguous()
        assert not torch.ones(2, 3).t().clone().is_contiguous()


def test_long_int_bool_of_a_tensor_of_that_dtype_return_it():
    i = chainrule.tensor(np.array([1, 2]))
    j = i.long()
    assert j is i
    j += 1                                  # writes into i, as PyTorch's
    assert i.tolist() == [2, 3]
    m = chainrule.tensor(np.array([True, False]))
    assert m.bool() is m
    f = chainrule.tensor(np.array([1.7, -2.2]), requires_grad=True)
    k = f.long()                            # a new int tensor without history
    assert k.tolist() == [1, -2] and not k.requires_grad and k.is_leaf
    assert chainrule.tensor(np.array([1, 2], np.int32)).int().dtype == chainrule.int32
    if torch is not None:
        ti = torch.tensor([1, 2])
        assert ti.long() is ti


# --- addcmul's value does not widen the tensors' dtype; ldexp's dtype ---------------------

def test_addcmul_value_is_a_scalar_of_the_tensors_dtype():
    f32 = chainrule.tensor(np.array([1.0], np.float32), requires_grad=True)
    two, three = chainrule.tensor(np.array([2])), chainrule.tensor(np.array([3]))
    y = chainrule.addcmul(f32, two, three, value=0.5)       # 1 + 0.5 * 6
    assert y.dtype == chainrule.float32 and y.tolist() == [4.0]
    y.sum().backward()
    assert f32.grad.tolist() == [1.0]
    z = chainrule.addcmul(chainrule.tensor(np.array([1])), two, three, value=0.5)
    assert z.dtype == chainrule.int64 and z.tolist() == [1]  # 0.5 truncated to 0
    assert chainrule.addcmul(chainrule.tensor(np.array([1])), two, three, value=2).tolist() == [13]
    if torch is not None:
        tz = torch.addcmul(torch.tensor([1]), torch.tensor([2]), torch.tensor([3]), value=0.5)
        assert tz.tolist() == z.tolist()
        ty = torch.addcmul(torch.tensor([1.0]), torch.tensor([2]), torch.tensor([3]), value=0.5)
        assert ty.dtype == torch.float32


def test_ldexp_dtype_follows_promotion_of_both_operands():
    x = chainrule.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = chainrule.ldexp(x, chainrule.tensor(np.array([1, 3])))
    assert y.dtype == chainrule.float32 and y.tolist() == [2.0, 16.0]   # int exponent
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 8.0]                                  # 2 ** e
    e64 = chainrule.tensor(np.array([1.0, 2.0]))                          # float64
    assert chainrule.ldexp(x, e64).dtype == chainrule.float64
    assert chainrule.ldexp(chainrule.tensor(1.0), x).dtype == chainrule.float32  # 0-d f64
    assert chainrule.ldexp(chainrule.tensor(np.array([1])), chainrule.tensor(np.array([3]))
                           ).dtype == chainrule.float64
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], dtype=torch.float32)
        assert torch.ldexp(tx, torch.tensor([1.0, 2.0], dtype=torch.float64)).dtype == \
            torch.float64
        assert torch.ldexp(torch.tensor(1.0, dtype=torch.float64), tx).dtype == torch.float32


# --- zero_ / fill_ / copy_ through a read-only view (diagonal) of an int or bool tensor ----

def test_fill_through_a_diagonal_of_an_int_or_bool_tensor_casts_the_value():
    i = chainrule.tensor(np.array([[1, 2], [3, 4]]))
    i.diagonal().zero_()
    assert i.tolist() == [[0, 2], [3, 0]]
    i.diagonal().fill_(2.5)                       # cast as PyTorch's: 2
    assert i.tolist() == [[2, 2], [3, 2]]
    i.diagonal().copy_(chainrule.tensor([1.5, -2.5]))
    assert i.tolist() == [[1, 2], [3, -2]]
    b = chainrule.tensor(np.array([[True, False], [True, True]]))
    b.diagonal().zero_()
    assert b.tolist() == [[False, False], [True, False]]
    if torch is not None:
        ti = torch.tensor([[1, 2], [3, 4]])
        ti.diagonal().fill_(2.5)
        assert ti.tolist() == [[2, 2], [3, 2]]


# --- remainder's gradient in y uses floor_divide (consistent with the forward) ------------

def test_remainder_grad_other_uses_the_same_quotient_as_the_forward():
    y = chainrule.tensor(np.array([0.2, -0.7]), requires_grad=True)
    x = chainrule.tensor(np.array([3.0, 2.0]))
    r = chainrule.remainder(x, y)
    # 3 = 14 * 0.2 + 0.2 (in floating point), so the quotient is 14, not floor(3 / 0.2) = 15
    np.testing.assert_allclose(_np(r), [3.0 - 14 * 0.2, 2.0 + 3 * -0.7], atol=1e-12)
    r.sum().backward()
    assert _np(y.grad).tolist() == [-14.0, 3.0]           # d/dy (x - q y) = -q
    assert np.floor_divide(3.0, 0.2) == 14.0
    if torch is not None:
        ty = torch.tensor([0.2, -0.7], dtype=torch.float64, requires_grad=True)
        torch.remainder(torch.tensor([3.0, 2.0], dtype=torch.float64), ty).sum().backward()
        assert ty.grad.tolist() == _np(y.grad).tolist()


# --- repeat always makes a new tensor ----------------------------------------------------

@pytest.mark.parametrize("sizes", [(2, 1, 1), (3, 1), (2, 1)])
def test_repeat_result_does_not_alias_its_input(sizes):
    x = chainrule.tensor(np.array([[1.0, 2.0, 3.0]]), requires_grad=True)
    y = x * 1
    r = y.repeat(*sizes)
    assert r.is_contiguous()
    r.reshape(-1)[:3].mul_(10)          # write into the first copy only
    np.testing.assert_array_equal(_np(y), [[1.0, 2.0, 3.0]])   # the input is unchanged
    flat = _np(r).reshape(-1)
    np.testing.assert_array_equal(flat[:3], [10.0, 20.0, 30.0])
    np.testing.assert_array_equal(flat[3:6], [1.0, 2.0, 3.0])
    w = np.arange(r.numel(), dtype=np.float64).reshape(tuple(r.shape))
    (r * chainrule.tensor(w)).sum().backward()
    # d/dx: 10 * w on the first copy, w on the others, summed over the copies
    wf = w.reshape(-1, 3)
    np.testing.assert_allclose(_np(x.grad)[0], 10 * wf[0] + wf[1:].sum(0))
    if torch is not None:
        tx = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64, requires_grad=True)
        tr = (tx * 1).repeat(*sizes)
        tr.reshape(-1)[:3].mul_(10)
        (tr * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(tx.grad.numpy(), _np(x.grad))


def test_relu_of_an_int_tensor_stays_int():
    i = chainrule.tensor(np.array([1, -2]))
    assert chainrule.relu(i).dtype == chainrule.int64 and chainrule.relu(i).tolist() == [1, 0]
    i.relu_()
    assert i.tolist() == [1, 0]
    f = chainrule.tensor(np.array([1.5, -2.0], np.float32), requires_grad=True)
    y = chainrule.relu(f)
    assert y.dtype == chainrule.float32
    y.sum().backward()
    assert _np(f.grad).tolist() == [1.0, 0.0]
    if torch is not None:
        assert torch.relu(torch.tensor([1, -2])).dtype == torch.int64


def test_unflatten_infers_minus_one_from_the_dim_even_when_empty():
    x = chainrule.zeros(2, 0, 3, requires_grad=True)
    assert tuple(x.unflatten(1, (1, -1)).shape) == (2, 1, 0, 3)
    assert tuple(x.unflatten(1, (-1, 2)).shape) == (2, 0, 2, 3)
    y = chainrule.tensor(np.arange(12.0).reshape(2, 6), requires_grad=True)
    z = y.unflatten(1, (-1, 2))
    assert tuple(z.shape) == (2, 3, 2)
    np.testing.assert_array_equal(_np(z), np.arange(12.0).reshape(2, 3, 2))
    (z * chainrule.tensor(np.arange(12.0).reshape(2, 3, 2))).sum().backward()
    np.testing.assert_array_equal(_np(y.grad), np.arange(12.0).reshape(2, 6))
    with pytest.raises(RuntimeError):
        y.unflatten(1, (-1, 4))            # 4 does not divide 6
    if torch is not None:
        assert tuple(torch.zeros(2, 0, 3).unflatten(1, (1, -1)).shape) == (2, 1, 0, 3)


def test_softmax_and_log_softmax_take_a_dtype():
    x = chainrule.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    y = chainrule.softmax(x, 0, dtype=chainrule.float64)
    assert y.dtype == chainrule.float64
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(_np(y), e / e.sum())
    (y * chainrule.tensor([1.0, 3.0])).sum().backward()
    s = e / e.sum()                      # d/dx_j sum_i w_i s_i = s_j (w_j - sum_i w_i s_i)
    w = np.array([1.0, 3.0])
    assert x.grad.dtype == chainrule.float32
    np.testing.assert_allclose(_np(x.grad), s * (w - (w * s).sum()), rtol=1e-6)
    z = x.log_softmax(0, dtype=chainrule.float64)
    assert z.dtype == chainrule.float64
    np.testing.assert_allclose(_np(z), np.log(s))
    if torch is not None:
        tx = torch.tensor([1.0, 2.0], dtype=torch.float32)
        assert torch.softmax(tx, 0, dtype=torch.float64).dtype == torch.float64


# --- an unrecorded fill through an expanded view is allowed (one value everywhere) --------

def test_unrecorded_fill_through_an_expanded_view_writes_the_base():
    z = chainrule.tensor(np.array([1.0, 2.0, 3.0]))
    z.expand(2, 3).zero_()
    assert z.tolist() == [0.0, 0.0, 0.0]
    z[:, None].expand(3, 2).fill_(2.0)
    assert z.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(RuntimeError, match="single memory location"):
        z.expand(2, 3).add_(1)              # different results per copy: still refused
    x = chainrule.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = x * 1
    with pytest.raises(RuntimeError, match="single memory location"):
        y.expand(2, 3).zero_()              # recorded: refused, as PyTorch's
    with chainrule.no_grad():
        y.expand(2, 3).zero_()
    assert y.tolist() == [0.0, 0.0, 0.0]
    if torch is not None:
        tz = torch.tensor([1.0, 2.0, 3.0])
        tz.expand(2, 3).zero_()
        assert tz.tolist() == [0.0, 0.0, 0.0]


# --- pow's exponent gradient at a zero base: masked only where the exponent is >= 0 -------

def test_pow_exponent_grad_at_zero_base_masks_only_nonnegative_exponents():
    base = chainrule.tensor([0.0, 0.0, 2.0])
    p = chainrule.tensor([-1.5, 0.5, 1.5], requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = chainrule.pow(base, p)
        y.backward(chainrule.ones_like(y))
    g = _np(p.grad)
    # 0 ** -1.5 = inf, whose log-derivative inf * log(0) is -inf (not a masked 0);
    # 0 ** 0.5 = 0: the limit, 0; 2 ** 1.5 * log 2 elsewhere
    assert g[0] == -np.inf and g[1] == 0.0
    np.testing.assert_allclose(g[2], 2 ** 1.5 * np.log(2.0))
    if torch is not None:
        tp = torch.tensor([-1.5, 0.5, 1.5], dtype=torch.float64, requires_grad=True)
        torch.pow(torch.tensor([0.0, 0.0, 2.0], dtype=torch.float64), tp).sum().backward()
        np.testing.assert_array_equal(tp.grad.numpy(), g)


# --- a NaN cotangent of max(dim) / median() reaches the selected entries only -------------

def test_nan_cotangent_of_value_selecting_reductions_stays_at_the_selection():
    data = np.array([[1.0, 2.0, 2.0], [0.0, 2.0, 5.0]])
    x = chainrule.tensor(data, requires_grad=True)
    v, i = x.max(1)
    v.backward(chainrule.tensor([np.nan, 3.0]))
    g = _np(x.grad)
    # row 0: argmax is the first 2 (index 1); row 1: index 2
    assert np.isnan(g[0, 1]) and g[1, 2] == 3.0
    assert np.count_nonzero(np.isnan(g)) == 1 and g[0, 0] == g[0, 2] == 0.0
    x2 = chainrule.tensor(data, requires_grad=True)
    m = x2.median()                                # lower median: 2, held by three entries
    m.backward(chainrule.tensor(np.nan))
    g2 = _np(x2.grad)
    assert np.array_equal(np.isnan(g2), data == 2.0)
    assert np.all(g2[data != 2.0] == 0.0)
    x3 = chainrule.tensor(data, requires_grad=True)
    x3.median().backward(chainrule.tensor(3.0))    # finite: shared evenly by the ties
    np.testing.assert_allclose(_np(x3.grad), np.where(data == 2.0, 1.0, 0.0))
    if torch is not None:
        tx = torch.tensor(data, requires_grad=True)
        tx.max(1)[0].backward(torch.tensor([np.nan, 3.0], dtype=torch.float64))
        np.testing.assert_array_equal(np.isnan(tx.grad.numpy()), np.isnan(g))
