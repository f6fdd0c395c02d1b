"""More of PyTorch's API: bitwise ops and operators, torch.Tensor(...) and the legacy typed
constructors, small dtypes, truth-value functions, logspace/multinomial/poisson/asarray,
thread and device settings, Tensor.stride/unfold/fill_diagonal_/resize_ and kin, post-
accumulate-grad hooks, only_inputs, and cat/stack promotion. Expected values come from NumPy
or by hand; compared with torch where it is installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import gradcheck

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

INTS = [np.int64, np.int32, np.int16, np.int8, np.uint8]


def same(ours, theirs):
    """Values and dtype of a chainrule tensor equal to a torch tensor's."""
    assert np.dtype(ours.dtype).name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def same_np(ours, want):
    """Values and dtype of a chainrule tensor equal to a NumPy array's."""
    want = np.asarray(want)
    assert ours.dtype == want.dtype, (ours.dtype, want.dtype)
    np.testing.assert_array_equal(ours.numpy(), want)


def scalar_dtype(d):
    """PyTorch's dtype for a tensor of dtype ``d`` with a Python int: the tensor's, except
    that bool (a lower category than integer) becomes the default integer dtype, int64."""
    return np.dtype(np.int64) if np.dtype(d) == np.bool_ else np.dtype(d)


def promote(da, db):
    """PyTorch's promotion of two tensors' dtypes: across the categories bool < integer <
    floating the higher category's dtype; within one, the dtype holding both (NumPy's)."""
    da, db = np.dtype(da), np.dtype(db)
    rank = {"b": 0, "i": 1, "u": 1, "f": 2}
    if rank[da.kind] != rank[db.kind]:
        return da if rank[da.kind] > rank[db.kind] else db
    return np.promote_types(da, db)


# --- 1. bitwise ------------------------------------------------------------------------

def test_integer_operators_are_bitwise():
    a, b = cr.tensor([6, 5, 12]), cr.tensor([3, 3, 10])
    for got, want in ((a & b, [2, 1, 8]), (a | b, [7, 7, 14]), (a ^ b, [5, 6, 6]),
                      (a & 1, [0, 1, 0]), (1 & a, [0, 1, 0]), (a | 1, [7, 5, 13]),
                      (a ^ 1, [7, 4, 13]), (2 ^ a, [4, 7, 14]), (a << 1, [12, 10, 24]),
                      (a >> 1, [3, 2, 6]), (1 << b, [8, 8, 1024]), (64 >> b, [8, 8, 0])):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal((~a).numpy(), [-7, -6, -13])


def test_bool_operators_stay_logical():
    p, q = cr.tensor([True, True, False]), cr.tensor([True, False, False])
    assert (p & q).dtype == np.bool_
    np.testing.assert_array_equal((p & q).numpy(), [True, False, False])
    np.testing.assert_array_equal((p | q).numpy(), [True, True, False])
    np.testing.assert_array_equal((p ^ q).numpy(), [False, True, False])
    np.testing.assert_array_equal((~p).numpy(), [False, False, True])
    np.testing.assert_array_equal((True & q).numpy(), [True, False, False])
    # bool with an int promotes to the int (PyTorch: tensor([1, 0]))
    out = p & 1
    assert out.dtype == np.int64 and out.tolist() == [1, 1, 0]


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_functions_keep_the_tensor_dtype(dtype):
    x = cr.tensor(np.array([0, 3, 5, 100], dtype=dtype))
    y = cr.tensor(np.array([1, 6, 4, 27], dtype=dtype))
    xa, ya = x.numpy(), y.numpy()
    for name, ref in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                      ("bitwise_xor", np.bitwise_xor)):
        out = getattr(cr, name)(x, y)
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.numpy(), ref(xa, ya))
        np.testing.assert_array_equal(getattr(x, name)(3).numpy(), ref(xa, dtype(3)))
    np.testing.assert_array_equal(cr.bitwise_not(x).numpy(), np.invert(xa))
    shifted = cr.bitwise_left_shift(x, 1)
    assert shifted.dtype == dtype
    np.testing.assert_array_equal(shifted.numpy(), np.left_shift(xa, dtype(1)))
    np.testing.assert_array_equal(cr.bitwise_right_shift(x, 2).numpy(),
                                  np.right_shift(xa, dtype(2)))


def test_shift_past_the_width_and_negative_shifts():
    # PyTorch and NumPy: a left shift by >= the bit width (or < 0) gives 0, a right shift
    # the sign fill
    x = cr.tensor([1, 2, -8, 8])
    np.testing.assert_array_equal((x << cr.tensor([64, -1, 70, 1])).numpy(), [0, 0, 0, 16])
    np.testing.assert_array_equal((x >> cr.tensor([64, -1, 70, 1])).numpy(), [0, 0, -1, 4])


def test_bitwise_promotion():
    i32 = cr.tensor(np.array([6, 5], dtype=np.int32))
    assert (i32 & 3).dtype == np.int32  # a Python int does not widen
    assert (i32 & cr.tensor(3)).dtype == np.int32  # nor does a 0-d tensor
    assert (i32 & cr.tensor([3, 3])).dtype == np.int64
    u8, i8 = cr.tensor(np.array([5], np.uint8)), cr.tensor(np.array([3], np.int8))
    out = u8 & i8
    assert out.dtype == np.int16 and out.tolist() == [1]


def test_bitwise_rejects_floats():
    f = cr.tensor([1.0, 2.0])
    for op in (lambda: f & 1, lambda: cr.tensor([1, 2]) & 1.5, lambda: f | f,
               lambda: f ^ cr.tensor([1, 2]), lambda: f << 1, lambda: cr.tensor([1]) >> f,
               lambda: cr.bitwise_not(f), lambda: cr.bitwise_and(cr.tensor([1]), f)):
        with pytest.raises(NotImplementedError, match="not implemented for 'Double'"):
            op()
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~f  # noqa: B018
    with pytest.raises(NotImplementedError, match="'Bool'"):
        cr.tensor([True]) << cr.tensor([True])


def test_in_place_bitwise():
    a = cr.tensor([6, 5, 12])
    same_object = a
    a &= cr.tensor([3, 3, 10])
    assert a is same_object and a.tolist() == [2, 1, 8]
    a |= 4
    assert a.tolist() == [6, 5, 12]
    a ^= 1
    a <<= 1
    a >>= 2
    assert a.tolist() == [3, 2, 6]
    b = cr.tensor(np.array([7, 1], dtype=np.int32))
    b.bitwise_and_(cr.tensor([5, 3]))  # an int64 result written into int32
    assert b.dtype == np.int32 and b.tolist() == [5, 1]
    b.bitwise_not_()
    assert b.tolist() == [-6, -2]
    m = cr.tensor([True, False])
    m |= cr.tensor([False, True])
    assert m.tolist() == [True, True]
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        m &= cr.tensor([1, 0])


def test_bitwise_has_no_gradient():
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    k = cr.tensor([3, 1]) & cr.tensor([1, 1])
    assert not k.requires_grad
    (x * k).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_bitwise_against_numpy_and_torch():
    # NumPy's functions on arrays of the promoted dtype (PyTorch's promotion, written out in
    # promote and scalar_dtype above); shifts by 0 to 6 bits stay inside every dtype here
    rng = np.random.default_rng(0)
    pairs = [(np.int64, np.int64), (np.int32, np.int64), (np.uint8, np.int8),
             (np.int16, np.int16), (np.bool_, np.bool_), (np.bool_, np.int64)]
    for da, db in pairs:
        a = rng.integers(0, 100, 7).astype(da)
        b = rng.integers(0, 7, 7).astype(db)
        ca, cb = cr.tensor(a), cr.tensor(b)
        dab, dsa, dsb = promote(da, db), scalar_dtype(da), scalar_dtype(db)
        for op, ref in (("__and__", np.bitwise_and), ("__or__", np.bitwise_or),
                        ("__xor__", np.bitwise_xor)):
            same_np(getattr(ca, op)(cb), ref(a.astype(dab), b.astype(dab)))
            same_np(getattr(ca, op)(3), ref(a.astype(dsa), np.array(3, dsa)))
            same_np(getattr(cb, "__r" + op[2:])(5), ref(np.array(5, dsb), b.astype(dsb)))
        if np.dtype(da).kind != "b" and np.dtype(db).kind != "b":
            same_np(ca << cb, np.left_shift(a.astype(dab), b.astype(dab)))
            same_np(ca >> cb, np.right_shift(a.astype(dab), b.astype(dab)))
            same_np(cr.bitwise_left_shift(3, cb), np.left_shift(np.array(3, dsb), b))
        same_np(~ca, np.invert(a))  # logical not for bool
        if torch is None:
            continue
        ta, tb = torch.tensor(a), torch.tensor(b)
        for op in ("__and__", "__or__", "__xor__"):
            same(getattr(ca, op)(cb), getattr(ta, op)(tb))
            same(getattr(ca, op)(3), getattr(ta, op)(3))
            same(getattr(cb, "__r" + op[2:])(5), getattr(tb, "__r" + op[2:])(5))
        if np.dtype(da).kind != "b" and np.dtype(db).kind != "b":
            same(ca << cb, ta << tb)
            same(ca >> cb, ta >> tb)
            same(cr.bitwise_left_shift(3, cb), torch.bitwise_left_shift(3, tb))
        same(~ca, ~ta)


# --- 2. torch.Tensor(...) and the typed constructors -------------------------------------

def test_tensor_constructor_forms():
    x = cr.Tensor([1, 2])
    assert x.dtype == cr.get_default_dtype() and x.tolist() == [1.0, 2.0]
    assert cr.Tensor(2, 3).shape == (2, 3) and cr.Tensor(2, 3).dtype == np.float64
    assert cr.Tensor(4).shape == (4,)
    assert cr.Tensor(cr.Size([2, 5])).shape == (2, 5)
    assert cr.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data
    assert cr.Tensor().shape == (0,)
    assert cr.Tensor([[]]).shape == (1, 0)
    assert cr.Tensor(np.array([1, 2])).dtype == np.float64
    assert cr.Tensor([True, False]).tolist() == [1.0, 0.0]
    assert cr.Tensor([1, 2], dtype=np.float32).dtype == np.float32  # chainrule's keyword
    src = cr.tensor([1, 2])
    alias = cr.Tensor(src)  # shares the storage and keeps the dtype (as PyTorch)
    assert alias.dtype == np.int64 and np.shares_memory(alias.numpy(), src.numpy())
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        cr.Tensor(-1)
    with pytest.raises(TypeError):
        cr.Tensor(2, 3.0)


def test_typed_constructors_and_isinstance():
    cases = [(cr.FloatTensor, np.float32), (cr.DoubleTensor, np.float64),
             (cr.LongTensor, np.int64), (cr.IntTensor, np.int32), (cr.BoolTensor, np.bool_),
             (cr.ByteTensor, np.uint8), (cr.CharTensor, np.int8), (cr.ShortTensor, np.int16),
             (cr.HalfTensor, np.float16)]
    for cls, dtype in cases:
        t = cls([1, 0])
        assert isinstance(t, cr.Tensor) and t.dtype == dtype
        assert isinstance(t, cls) and cls.dtype == dtype
        assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype == dtype
        assert t.type() == "torch." + cls.__name__
        assert all(not isinstance(t, other) for other, d in cases if d != dtype)
    assert cr.LongTensor([1.7, 2]).tolist() == [1, 2]  # truncated
    assert not isinstance(np.zeros(2, np.float32), cr.FloatTensor)
    y = cr.tensor([1, 2]).type(cr.FloatTensor)
    assert y.dtype == np.float32 and y.tolist() == [1.0, 2.0]
    with pytest.raises(TypeError):
        cr.FloatTensor(cr.tensor([1, 2]))  # another dtype's tensor (PyTorch: TypeError)


def test_constructors_against_numpy_and_torch():
    # torch.Tensor(data) is the data in the default float dtype (float64 in chainrule); a
    # typed constructor converts to its dtype as NumPy's astype does (floats truncate toward
    # zero, nonzero is True)
    for args in ([[1, 2]], [[[1.5], [2.0]]], [[True, False]], [(2, 3)], []):
        ours = cr.Tensor(*args)
        same_np(ours, np.array(args[0] if args else [], dtype=np.float64))
        if torch is not None:
            same(ours, torch.Tensor(*args).double())
    assert cr.Tensor(2, 3).shape == (2, 3)
    if torch is not None:
        assert tuple(torch.Tensor(2, 3).shape) == cr.Tensor(2, 3).shape
    for name, dtype in (("FloatTensor", np.float32), ("DoubleTensor", np.float64),
                        ("LongTensor", np.int64), ("IntTensor", np.int32),
                        ("BoolTensor", np.bool_), ("ByteTensor", np.uint8)):
        ours = getattr(cr, name)([1.7, 0, 3])
        same_np(ours, np.array([1.7, 0, 3]).astype(dtype))
        # a float64 tensor is a DoubleTensor only
        assert isinstance(cr.tensor([1.0]), getattr(cr, name)) == (name == "DoubleTensor")
        if torch is not None:
            same(ours, getattr(torch, name)([1.7, 0, 3]))
            assert isinstance(cr.tensor([1.0]), getattr(cr, name)) == \
                isinstance(torch.tensor([1.0], dtype=torch.float64), getattr(torch, name))


# --- 3. dtypes -----------------------------------------------------------------------------

def test_small_dtypes_and_conversions():
    assert (cr.uint8, cr.int8, cr.int16, cr.short, cr.half, cr.float16) == \
        (np.uint8, np.int8, np.int16, np.int16, np.float16, np.float16)
    x = cr.tensor([1.7, -2.2, 300.0])
    assert x.short().dtype == np.int16 and x.short().tolist() == [1, -2, 300]
    assert x.char().dtype == np.int8 and x.char().tolist()[:2] == [1, -2]
    assert x.byte().dtype == np.uint8 and x.byte().tolist()[0] == 1
    assert x.half().dtype == np.float16
    assert cr.zeros(2, dtype=cr.uint8).dtype == np.uint8


# --- 4. top-level functions ------------------------------------------------------------

def test_all_any_and_inf_tests():
    x = cr.tensor([[1.0, 0.0], [2.0, 3.0]])
    assert not bool(cr.all(x)) and bool(cr.any(x))
    np.testing.assert_array_equal(cr.all(x, dim=1).numpy(), [False, True])
    np.testing.assert_array_equal(cr.any(x, 0, keepdim=True).numpy(), [[True, True]])
    assert bool(cr.any(x, dim=(0, 1)))
    u = cr.all(cr.tensor(np.array([1, 2], np.uint8)))
    assert u.dtype == np.uint8 and u.item() == 1  # PyTorch keeps uint8
    v = cr.tensor([1.0, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(cr.isinf(v).numpy(), np.isinf(v.numpy()))
    np.testing.assert_array_equal(v.isposinf().numpy(), [False, True, False, False])
    np.testing.assert_array_equal(cr.isneginf(v).numpy(), [False, False, True, False])
    np.testing.assert_array_equal(cr.isreal(v).numpy(), [True] * 4)
    np.testing.assert_array_equal(cr.isinf(cr.tensor([1, 2])).numpy(), [False, False])


def test_logspace_and_asarray():
    np.testing.assert_allclose(cr.logspace(0, 2, 3).numpy(), [1.0, 10.0, 100.0])
    np.testing.assert_allclose(cr.logspace(0, 2, 3, base=2).numpy(), [1.0, 2.0, 4.0])
    ints = cr.logspace(0, 2, 3, dtype=cr.int64)
    assert ints.dtype == np.int64 and ints.tolist() == [1, 10, 100]
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = cr.asarray(a)
    assert t.dtype == np.float32 and np.shares_memory(t.numpy(), a)
    assert not np.shares_memory(cr.asarray(a, copy=True).numpy(), a)
    assert cr.asarray([1, 2]).dtype == np.int64 and cr.asarray([1.0]).dtype == np.float64
    src = cr.tensor([1.0])
    assert cr.asarray(src) is src and cr.asarray(src, dtype=cr.float32).dtype == np.float32


def test_multinomial():
    g = cr.Generator().manual_seed(0)
    probs = cr.tensor([0.0, 1.0, 3.0, 0.0])
    draws = cr.multinomial(probs, 2000, replacement=True, generator=g)
    assert draws.dtype == np.int64 and draws.shape == (2000,)
    counts = np.bincount(draws.numpy(), minlength=4)
    assert counts[0] == counts[3] == 0 and abs(counts[2] / 2000 - 0.75) < 0.05
    rows = cr.multinomial(cr.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 5.0]]), 3, generator=g)
    assert rows.shape == (2, 3)
    for row in rows.numpy():
        assert sorted(row) == [0, 1, 2]  # without replacement: each category once
    assert rows.numpy()[1, 0] == 2
    # once the weighted categories are used up, zero-weight ones follow, lowest first
    assert cr.multinomial(cr.tensor([0.0, 1.0, 0.0]), 2).tolist() == [1, 0]
    assert probs.multinomial(1).item() in (1, 2)
    for bad, text in ((lambda: cr.multinomial(probs, 5), "without replacement"),
                      (lambda: cr.multinomial(cr.tensor([1.0, -1.0]), 1), "element < 0"),
                      (lambda: cr.multinomial(cr.zeros(3), 1), "sum of probabilities"),
                      (lambda: cr.multinomial(cr.tensor([1, 2]), 1), "floating-point"),
                      (lambda: cr.multinomial(probs, 0), "n_sample <= 0")):
        with pytest.raises(RuntimeError, match=text):
            bad()


def test_poisson():
    cr.manual_seed(1)
    rates = cr.tensor([0.0, 2.0, 50.0], requires_grad=True)
    s = cr.poisson(rates)
    assert s.dtype == np.float64 and s[0].item() == 0.0
    assert np.all(s.detach().numpy() == np.round(s.detach().numpy()))
    s.sum().backward()
    np.testing.assert_array_equal(rates.grad.numpy(), [0.0, 0.0, 0.0])  # PyTorch's rule
    big = cr.poisson(cr.full((4000,), 3.0), generator=cr.Generator().manual_seed(2))
    assert abs(big.mean().item() - 3.0) < 0.15
    with pytest.raises(RuntimeError, match="non-negative"):
        cr.poisson(cr.tensor([-1.0]))
    with pytest.raises(NotImplementedError, match="'Long'"):
        cr.poisson(cr.tensor([1]))


def test_threads_and_default_device():
    cr.set_num_threads(3)
    assert cr.get_num_threads() == 3
    cr.set_num_interop_threads(2)
    assert cr.get_num_interop_threads() == 2
    with pytest.raises(RuntimeError, match="positive integer"):
        cr.set_num_threads(0)
    cr.set_default_device("cpu")
    cr.set_default_device(None)
    assert cr.get_default_device() == "cpu"
    with pytest.raises(RuntimeError, match="only 'cpu'"):
        cr.set_default_device("cuda")


# --- 5. Tensor methods ---------------------------------------------------------------------

def test_sizes_strides_and_devices():
    x = cr.zeros(3, 4)
    assert x.nelement() == 12 and x.ndimension() == 2
    assert x.stride() == (4, 1) and x.stride(0) == 4 and x.stride(-1) == 1
    assert x.t().stride() == (1, 4)
    assert x[:, ::2].stride() == (4, 2)
    assert cr.zeros(3, 1).expand(3, 4).stride() == (1, 0)
    assert cr.zeros(()).stride() == ()
    assert x.flip(0).stride() == (4, 1)
    assert x.element_size() == 8 and x.float().element_size() == 4
    assert cr.tensor([1], dtype=cr.int16).element_size() == 2
    assert x.get_device() == -1


def test_strides_against_numpy_and_torch():
    # a contiguous (3, 4, 5) tensor steps (20, 5, 1) elements per index; views permute or
    # drop those steps: NumPy's strides of the same views, in elements
    ours, a = cr.zeros(3, 4, 5), np.zeros((3, 4, 5))
    assert ours.stride() == (20, 5, 1)
    for view, ref in ((ours, a), (ours.permute(2, 0, 1), a.transpose(2, 0, 1)),
                      (ours.transpose(0, 1), a.swapaxes(0, 1)), (ours[:, 1], a[:, 1])):
        assert view.stride() == tuple(s // a.itemsize for s in ref.strides)
    if torch is None:
        return
    for ours, theirs in ((cr.zeros(3, 4, 5), torch.zeros(3, 4, 5)),):
        assert ours.stride() == theirs.stride()
        assert ours.permute(2, 0, 1).stride() == theirs.permute(2, 0, 1).stride()
        assert ours.transpose(0, 1).stride() == theirs.transpose(0, 1).stride()
        assert ours[:, 1].stride() == theirs[:, 1].stride()


def test_fill_diagonal():
    x = cr.zeros(3, 4).fill_diagonal_(5.0)
    want = np.zeros((3, 4))
    np.fill_diagonal(want, 5.0)
    np.testing.assert_array_equal(x.numpy(), want)
    tall = cr.zeros(7, 3).fill_diagonal_(5.0, wrap=True).numpy()
    assert tall[:3].trace() == 15 and not tall[3].any() and tall[4:].trace() == 15
    assert cr.zeros(7, 3).fill_diagonal_(5.0).numpy()[3:].sum() == 0
    assert cr.zeros(3, 3, 3).fill_diagonal_(5.0).sum().item() == 15.0
    with pytest.raises(RuntimeError, match="equal length"):
        cr.zeros(3, 3, 4).fill_diagonal_(1.0)
    with pytest.raises(RuntimeError, match="larger than 1"):
        cr.zeros(3).fill_diagonal_(1.0)


def test_resize():
    x = cr.arange(6.0)
    assert x.resize_(2, 3) is x
    np.testing.assert_array_equal(x.numpy(), [[0, 1, 2], [3, 4, 5]])
    x.resize_((2, 2))
    np.testing.assert_array_equal(x.numpy(), [[0, 1], [2, 3]])
    assert x.resize_(3, 3).shape == (3, 3)
    with pytest.raises(RuntimeError, match="require grad"):
        cr.arange(6.0, requires_grad=True).resize_(2, 3)


def test_unfold_values_and_gradient():
    x = np.arange(12.0).reshape(3, 4)
    out = cr.tensor(x).unfold(1, 3, 1)
    assert out.shape == (3, 2, 3)
    want = np.stack([x[:, 0:3], x[:, 1:4]], axis=1)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(cr.arange(7.0).unfold(0, 2, 2).numpy(),
                                  [[0, 1], [2, 3], [4, 5]])
    assert cr.tensor(5.0).unfold(0, 1, 1).tolist() == [5.0]
    assert cr.arange(7.0).unfold(0, 0, 2).shape == (4, 0)
    a = cr.tensor(np.random.default_rng(0).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: t.unfold(0, 2, 1), (a,))
    assert gradcheck(lambda t: t.unfold(-1, 3, 2), (a,))
    cr.arange(5.0, requires_grad=True).unfold(0, 3, 1).sum().backward()
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 0 is 7"):
        cr.arange(7.0).unfold(0, 8, 2)
    with pytest.raises(RuntimeError, match="step is 0"):
        cr.arange(7.0).unfold(0, 2, 0)


def test_unfold_gradient_counts_overlaps():
    x = cr.arange(5.0, requires_grad=True)
    x.unfold(0, 3, 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 2, 3, 2, 1])  # windows covering each


def test_unfold_against_numpy_and_torch():
    # Tensor.unfold(dim, size, step): the windows of ``size`` along ``dim`` starting every
    # ``step``, each window a new last dimension: NumPy's sliding_window_view, every step-th
    a = np.arange(24.0).reshape(2, 3, 4)
    for dim, size, step in ((2, 2, 1), (1, 2, 1), (0, 1, 1), (-1, 3, 2)):
        ours = cr.tensor(a).unfold(dim, size, step)
        windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
        axis = dim % a.ndim  # of the input, before the windows' last dimension
        same_np(ours, np.take(windows, range(0, windows.shape[axis], step), axis=axis))
        if torch is not None:
            same(ours, torch.tensor(a).unfold(dim, size, step))


def test_post_accumulate_grad_hook():
    w = cr.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (w * 3).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0], [3.0, 3.0])  # called after .grad was set
    w.register_hook(lambda g: g * 2)  # a tensor hook later keeps the post hook
    (w * 1).sum().backward()
    np.testing.assert_array_equal(seen[-1], [5.0, 5.0])
    handle.remove()
    (w * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        cr.zeros(2).register_post_accumulate_grad_hook(lambda t: None)


def test_optimizer_step_in_post_accumulate_hook():
    w = cr.tensor([1.0, -1.0], requires_grad=True)

    def step(t):
        with cr.no_grad():
            t -= 0.5 * t.grad
        t.grad = None

    w.register_post_accumulate_grad_hook(step)
    (w ** 2).sum().backward()
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 0.0])
    assert w.grad is None


def test_real_imag_and_contains():
    x = cr.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.real is x
    with pytest.raises(RuntimeError, match="non-complex"):
        x.imag  # noqa: B018
    assert 3 in x and 3.0 in x and 7 not in x
    assert cr.tensor([1.0, 2.0]) in x and cr.tensor([1.0, 5.0]) in x
    assert cr.tensor([5.0, 6.0]) not in x
    with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
        "a" in x  # noqa: B015


# --- 6. only_inputs --------------------------------------------------------------------------

def test_grad_only_inputs():
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (g,) = cr.autograd.grad((x * 2).sum(), x, only_inputs=True)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])
    with pytest.warns(FutureWarning, match="only_inputs argument is deprecated"):
        (g,) = cr.autograd.grad((x * 2).sum(), x, only_inputs=False)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0])


# --- 8. cat/stack promotion ------------------------------------------------------------------

def test_cat_and_stack_promote_like_torch():
    i = cr.tensor([1, 2])
    f = cr.tensor([0.5], dtype=cr.float32)
    out = cr.cat([i, f])
    assert out.dtype == np.float32 and out.tolist() == [1.0, 2.0, 0.5]
    s = cr.stack([i, cr.tensor([0.5, 1.5], dtype=cr.float32)])
    assert s.dtype == np.float32 and s.shape == (2, 2)
    assert cr.cat([cr.tensor([True]), i]).dtype == np.int64
    assert cr.cat([f, cr.tensor([1.0])]).dtype == np.float64
    assert cr.cat([cr.tensor(np.array([1], np.uint8)), cr.tensor(np.array([1], np.int8))]
                  ).dtype == np.int16
    assert cr.cat([cr.tensor([1], dtype=cr.float16), i]).dtype == np.float16
    # the float input keeps its gradient through the cast
    w = cr.tensor([0.5, 1.5], dtype=cr.float32, requires_grad=True)
    cr.cat([w, i]).sum().backward()
    assert w.grad.dtype == np.float32 and w.grad.tolist() == [1.0, 1.0]


def test_cat_promotion_against_numpy_and_torch():
    # PyTorch's promotion (promote above): int64 with float32 is float32, not NumPy's float64
    combos = [(np.int64, np.float32), (np.int32, np.float16), (np.bool_, np.int16),
              (np.uint8, np.int8), (np.float32, np.float64), (np.int64, np.int32)]
    for da, db in combos:
        a, b = np.array([1, 0], dtype=da), np.array([1, 1], dtype=db)
        d = promote(da, db)
        cat, stack = cr.cat([cr.tensor(a), cr.tensor(b)]), cr.stack([cr.tensor(a), cr.tensor(b)])
        same_np(cat, np.concatenate([a.astype(d), b.astype(d)]))
        same_np(stack, np.stack([a.astype(d), b.astype(d)]))
        if torch is not None:
            same(cat, torch.cat([torch.tensor(a), torch.tensor(b)]))
            same(stack, torch.stack([torch.tensor(a), torch.tensor(b)]))


def test_truth_and_reductions_against_numpy_and_torch():
    a = np.array([[1.0, np.inf], [-np.inf, 0.0]])
    for name, ref in (("isinf", np.isinf), ("isposinf", np.isposinf),
                      ("isneginf", np.isneginf), ("isreal", np.isreal)):
        same_np(getattr(cr, name)(cr.tensor(a)), ref(a))
        if torch is not None:
            same(getattr(cr, name)(cr.tensor(a)), getattr(torch, name)(torch.tensor(a)))
    for dim in (None, 0, 1):
        kw = {} if dim is None else {"dim": dim}
        same_np(cr.all(cr.tensor(a), **kw), np.all(a, axis=dim))  # bool, as PyTorch's
        same_np(cr.any(cr.tensor(a), **kw), np.any(a, axis=dim))
        if torch is not None:
            same(cr.all(cr.tensor(a), **kw), torch.all(torch.tensor(a), **kw))
            same(cr.any(cr.tensor(a), **kw), torch.any(torch.tensor(a), **kw))
    ours = cr.logspace(-1, 2, 4)  # 10 ** (-1, 0, 1, 2)
    assert ours.dtype == np.float64
    np.testing.assert_allclose(ours.numpy(), [0.1, 1.0, 10.0, 100.0], rtol=1e-15)
    if torch is not None:
        same(ours, torch.logspace(-1, 2, 4, dtype=torch.float64))


def test_number_arguments_take_one_element_tensors_that_need_no_grad():
    # PyTorch's argument parser reads a 0-d tensor as the number; chainrule too, but it
    # refuses one that requires grad (PyTorch would drop its gradient silently)
    x = cr.tensor([1.0, 2.0])
    expected = np.log1p(np.exp(2 * np.array([1.0, 2.0]))) / 2  # softplus with beta = 2
    np.testing.assert_allclose(cr.nn.functional.softplus(x, beta=cr.tensor(2.0)).numpy(),
                               expected, rtol=1e-12)
    np.testing.assert_allclose(cr.norm(x, p=cr.tensor(3.0)).item(), 9 ** (1 / 3), rtol=1e-12)
    assert cr.tensordot(x, x, dims=cr.tensor(1)).item() == 5.0
    with pytest.raises(RuntimeError, match="beta is a number that is not differentiated"):
        cr.nn.functional.softplus(x, beta=cr.tensor(2.0, requires_grad=True))
    with pytest.raises(TypeError, match="beta must be a number"):
        cr.nn.functional.softplus(x, beta=cr.tensor([2.0, 3.0]))


def test_dims_and_counts_given_as_integer_tensors():
    # torch.sort(x, dim=torch.tensor(-1)) and friends: a one-element integer tensor is read
    # as the int (round's decimals made a tensor of a tensor before; dropout's p failed)
    x = cr.tensor(np.arange(6.0).reshape(2, 3)[:, ::-1].copy())
    d = cr.tensor(-1)
    np.testing.assert_array_equal(cr.sort(x, dim=d).values.numpy(), cr.sort(x, -1).values.numpy())
    assert x.sum(cr.tensor(0)).tolist() == x.sum(0).tolist()
    assert cr.stack([x, x], dim=cr.tensor(1)).shape == (2, 2, 3)
    assert cr.flatten(x, start_dim=cr.tensor(0)).shape == (6,)
    np.testing.assert_allclose(cr.nn.functional.normalize(x, dim=cr.tensor(1)).numpy(),
                               cr.nn.functional.normalize(x, dim=1).numpy())
    assert cr.round(cr.tensor([1.26, 2.34]), decimals=cr.tensor(1)).tolist() == [1.3, 2.3]
    cr.manual_seed(3)
    a = cr.nn.functional.dropout(x, p=cr.tensor(0.5))
    cr.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), cr.nn.functional.dropout(x, p=0.5).numpy())
    with pytest.raises(TypeError, match="dim must be an int"):
        x.sum(cr.tensor(0.5))
    logp = cr.nn.functional.log_softmax(x, 1)
    target = cr.tensor([1, 2])
    assert cr.nn.functional.nll_loss(logp, target, ignore_index=cr.tensor(1)).item() == \
        cr.nn.functional.nll_loss(logp, target, ignore_index=1).item()
