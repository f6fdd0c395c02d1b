"""Regressions found by differential fuzzing against PyTorch of mixed dtypes, Python
scalars, 0-d tensors and indexing. Expected dtypes and values come from PyTorch's documented
promotion rules (by hand); compared with torch where it is installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None


def T(values, dtype):
    return cr.tensor(np.array(values, dtype=dtype))


def name(dtype):
    return np.dtype(dtype).name


def check_torch(ours, fn, *specs):
    """``fn(torch, *built)`` gives the same dtype and values as ``ours``."""
    if torch is None:
        return
    args = [torch.tensor(np.array(v, dtype=d)) for v, d in specs]
    theirs = fn(torch, *args)
    assert name(ours.dtype) == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


# --- promotion: complex with float, 0-d tensors, comparisons --------------------------

def test_complex_promotion_keeps_the_float_precision():
    # torch.promote_types(complex64, float64) is complex128: a complex takes the float's
    # precision; a 0-d complex beside a float32 tensor gives float32's complex, complex64
    assert name(cr.promote_types(np.complex64, np.float64)) == "complex128"
    assert name(cr.promote_types(np.int64, np.complex64)) == "complex64"
    a = T([1.0, 2.0], np.float64)
    z = T(1 + 1j, np.complex64)
    assert name((a + z).dtype) == "complex128"
    assert name((T([1.0], np.float32) + T(1j, np.complex128)).dtype) == "complex64"
    assert name(cr.cat([T([1.0], np.float64), T([1j], np.complex64)]).dtype) == "complex128"
    assert name(cr.result_type(T([1.0], np.float32), 1j)) == "complex64"  # float32 kept
    assert name(cr.result_type(T(1.0, np.float64), 1j)) == "complex128"
    check_torch(a + z, lambda L, x, y: x + y, ([1.0, 2.0], np.float64), (1 + 1j, np.complex64))
    if torch is not None:
        assert torch.promote_types(torch.complex64, torch.float64) == torch.complex128


def test_comparison_with_0d_tensor_uses_the_tensor_dtype():
    # float32 [0.1] == float64 0-d 0.1: compared in float32 (the 0-d tensor does not promote)
    got = T([0.1, 0.3], np.float32) == T(0.1, np.float64)
    assert got.tolist() == [True, False]
    check_torch(got, lambda L, x, y: x == y, ([0.1, 0.3], np.float32), (0.1, np.float64))


def test_sum_and_prod_with_dtype_give_that_dtype():
    # sum(dtype=int32) of int8 is int32 (NumPy would sum small ints in int64)
    s = T([1, 2, 3], np.int8).sum(dtype=cr.int32)
    p = T([True, False], np.bool_).prod(dtype=cr.int32)
    assert name(s.dtype) == "int32" and s.item() == 6
    assert name(p.dtype) == "int32" and p.item() == 0
    check_torch(s, lambda L, x: x.sum(dtype=L.int32), ([1, 2, 3], np.int8))


# --- Python ints out of a small dtype's range wrap, as PyTorch's ------------------------

def test_out_of_range_python_int_wraps_into_the_dtype():
    u = T([2, 5], np.uint8)
    # 300 is 44 as uint8: 2 + 44 = 46; -1 is 255: 2 * 255 = 510 = 254 (mod 256)
    assert (u + 300).tolist() == [46, 49] and name((u + 300).dtype) == "uint8"
    assert (u * -1).tolist() == [254, 251]
    assert (T([2, 5], np.int8) + 1000).tolist() == [-22, -19]
    check_torch(u + 300, lambda L, x: x + 300, ([2, 5], np.uint8))
    check_torch(u * -1, lambda L, x: x * -1, ([2, 5], np.uint8))


# --- in-place updates: PyTorch's casting rule and message -----------------------------

def test_inplace_integer_update_casts_within_integers():
    # uint8 * int8 computes in int16 (-2, -15) and is written back wrapped (254, 241)
    x = T([2, 5], np.uint8)
    x.mul_(T([-1, -3], np.int8))
    assert x.tolist() == [254, 241] and name(x.dtype) == "uint8"
    y = T([1, 2], np.uint8)
    y += T(3, np.int32)
    assert y.tolist() == [4, 5]
    z = T([1, 2], np.uint8)
    z.clamp_(min=T([True, False], np.bool_))
    assert z.tolist() == [1, 2]
    assert cr.can_cast(cr.int16, cr.uint8) and not cr.can_cast(cr.float32, cr.int64)
    if torch is not None:
        tx = torch.tensor([2, 5], dtype=torch.uint8)
        tx.mul_(torch.tensor([-1, -3], dtype=torch.int8))
        assert tx.tolist() == x.tolist()
        assert torch.can_cast(torch.int16, torch.uint8)


def test_inplace_float_into_int_raises_with_torch_message():
    x = T([1, 2], np.int64)
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired "
                                           "output type Long"):
        x.add_(T([0.5, 0.5], np.float64))
    if torch is not None:
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
            torch.tensor([1, 2]).add_(torch.tensor([0.5, 0.5], dtype=torch.float64))


# --- complex values with gradients raise (chainrule is real-valued) --------------------

@pytest.mark.parametrize("make", [
    lambda x, c: x * (1 + 2j),
    lambda x, c: x * c,
    lambda x, c: cr.where(cr.tensor([True, False]), x, c),
    lambda x, c: cr.cat([x, c]),
    lambda x, c: x.to(np.complex128),
    lambda x, c: c.clone().copy_(x),
])
def test_complex_result_of_a_tensor_requiring_grad_raises(make):
    # the gradient of |x c|^2 is 2 |c|^2 x; chainrule gave a wrong one (or none) before
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    c = T([1 + 2j, 3 - 1j], np.complex128)
    with pytest.raises(RuntimeError, match="complex"):
        make(x, c)
    with cr.no_grad():  # without recording, the values are computed
        assert (x * (1 + 2j)).tolist() == [1 + 2j, 2 + 4j]


# --- indexing -----------------------------------------------------------------------

def test_uint8_index_is_a_mask():
    x = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.warns(UserWarning, match="uint8"):
        y = x[T([1, 0, 1], np.uint8)]
    assert y.tolist() == [1.0, 3.0]
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 1.0]
    if torch is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.tensor([1.0, 2.0, 3.0])[torch.tensor([1, 0, 1], dtype=torch.uint8)]
        assert t.tolist() == y.tolist()


def test_negative_step_raises():
    x = cr.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 0.0
    assert cr.flip(x, 0).tolist() == [3.0, 2.0, 1.0]  # flip still works
    if torch is not None:
        with pytest.raises(ValueError, match="step must be greater than zero"):
            torch.tensor([1.0, 2.0])[::-1]


def test_int_and_tensor_index_apart_follow_torch_order():
    # PyTorch applies the int first: x[0, :, idx] of a (2, 3, 4) tensor is (3, 2), the
    # advanced dim in place; NumPy would put it first, (2, 3)
    a = np.arange(24.0).reshape(2, 3, 4)
    x = cr.tensor(a, requires_grad=True)
    y = x[0, :, cr.tensor([1, 2])]
    assert tuple(y.shape) == (3, 2)
    np.testing.assert_array_equal(y.detach().numpy(), a[0][:, [1, 2]])
    y.sum().backward()
    assert x.grad.numpy().sum() == 6.0
    assert tuple(x[-2, ..., cr.tensor([[2], [0]])].shape) == (3, 2, 1)
    if torch is not None:
        assert tuple(torch.tensor(a)[0, :, torch.tensor([1, 2])].shape) == (3, 2)


# --- single ops -----------------------------------------------------------------------

def test_square_of_bool_is_int64():
    got = cr.square(T([True, False], np.bool_))
    assert name(got.dtype) == "int64" and got.tolist() == [1, 0]
    check_torch(got, lambda L, x: x.square(), ([True, False], np.bool_))


def test_angle_and_float_power_of_complex():
    z = T([1j, -1 + 0j], np.complex64)
    got = z.angle()
    assert name(got.dtype) == "float32"
    np.testing.assert_allclose(got.numpy(), [np.pi / 2, np.pi], rtol=1e-6)
    # 2 ** 1j = exp(1j log 2) = cos(log 2) + 1j sin(log 2), in complex128
    p = cr.float_power(T([2.0], np.float32), T([1j], np.complex64))
    assert name(p.dtype) == "complex128"
    np.testing.assert_allclose(p.numpy(), [np.cos(np.log(2)) + 1j * np.sin(np.log(2))])
    check_torch(p, lambda L, x, y: L.float_power(x, y), ([2.0], np.float32), ([1j], np.complex64))


def test_clamp_bounds_do_not_widen():
    # a NumPy float64 bound is a number (float32 stays float32); a bool tensor bound beside
    # uint8 stays uint8
    a = cr.clamp(T([2.0, 0.1], np.float32), min=np.float64(0.7))
    b = cr.clamp(T([2, 3], np.uint8), max=T(False, np.bool_))
    assert name(a.dtype) == "float32" and name(b.dtype) == "uint8" and b.tolist() == [0, 0]
    assert name(cr.clamp(T([-2, 4], np.int8), max=np.int64(3)).dtype) == "int8"
    check_torch(b, lambda L, x, y: L.clamp(x, max=y), ([2, 3], np.uint8), (False, np.bool_))


def test_copysign_of_integers_is_the_default_float():
    got = cr.copysign(T([2, -4], np.int8), T([-1, 1], np.int8))
    assert name(got.dtype) == "float64" and got.tolist() == [-2.0, 4.0]
    check_torch(got.float(), lambda L, x, y: L.copysign(x, y).float(), ([2, -4], np.int8),
                ([-1, 1], np.int8))


def test_addcmul_computes_in_the_common_dtype():
    # float64 input, float32 0-d t1 (1.51 as float32), int8 t2: PyTorch multiplies in float64
    t1 = np.float32(1.51)
    got = cr.addcmul(T([1.0], np.float64), T(t1, np.float32), T([5], np.int8), value=2)
    assert got.item() == 1.0 + 2 * float(t1) * 5
    check_torch(got, lambda L, x, y, z: L.addcmul(x, y, z, value=2), ([1.0], np.float64),
                (t1, np.float32), ([5], np.int8))


def test_is_complex_and_type_names():
    z = T([1j], np.complex128)
    assert z.is_complex() and not T([1.0], np.float64).is_complex()
    assert z.type() == "torch.ComplexDoubleTensor"
    assert T([1j], np.complex64).type() == "torch.ComplexFloatTensor"


def test_complex_conjugates_and_parts_are_computed():
    # conj/mH/H/adjoint/real/vdot of a complex tensor returned it unchanged (silently
    # wrong); a complex tensor cannot require grad, so these are values with no history
    a = np.array([[1 + 2j, 3 - 4j], [5 + 6j, -7 + 8j]])
    k = cr.tensor(a)
    np.testing.assert_array_equal(k.conj().numpy(), [[1 - 2j, 3 + 4j], [5 - 6j, -7 - 8j]])
    np.testing.assert_array_equal(cr.conj_physical(k).numpy(), a.conj())
    np.testing.assert_array_equal(k.conj().resolve_conj().numpy(), a.conj())
    for t in (k.mH, k.H, cr.adjoint(k)):
        np.testing.assert_array_equal(t.numpy(), [[1 - 2j, 5 - 6j], [3 + 4j, -7 - 8j]])
    np.testing.assert_array_equal(cr.real(k).numpy(), [[1, 3], [5, -7]])
    np.testing.assert_array_equal(k.imag.numpy(), [[2, -4], [6, 8]])
    assert k.real.dtype == cr.float64 and not k.is_conj()
    # vdot conjugates its first argument: conj(1+2j)(5+6j) + conj(3-4j)(-7+8j) = -36-8j
    assert complex(cr.vdot(k[0], k[1]).item()) == -36 - 8j
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        _ = cr.ones(2).imag
    # real tensors: conj and real are the tensor itself, mH its transpose (differentiable)
    x = cr.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.conj() is x and x.real is x
    (x.mH * cr.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 3.0], [2.0, 4.0]]
    if torch is not None:
        tk = torch.tensor(a)
        np.testing.assert_array_equal(tk.mH.resolve_conj().numpy(), k.mH.numpy())
        assert complex(torch.vdot(tk[0], tk[1])) == -36 - 8j


def test_complex_and_wide_unsigned_dtypes_are_named_at_the_top_level():
    # cr.complex64 / cfloat / cdouble / uint16..uint64 raised AttributeError
    assert cr.zeros(2, dtype=cr.complex64).dtype == np.complex64
    assert cr.cfloat == cr.complex64 and cr.cdouble == cr.complex128
    for name, np_dtype in (("uint16", np.uint16), ("uint32", np.uint32),
                           ("uint64", np.uint64)):
        assert cr.tensor([1, 2]).to(getattr(cr, name)).dtype == np_dtype
    if torch is not None:
        assert str(torch.cdouble) == "torch.complex128"


def test_0d_float32_tensor_with_a_python_complex_keeps_its_precision():
    # a 0-d float32 tensor times 1j was complex128 (its value was read as a Python float on
    # the way to a complex op), so .imag/.real came back float64; PyTorch: complex64
    x = cr.tensor(2.0, dtype=cr.float32)
    assert (x * 1j).dtype == np.complex64 and (1j * x).dtype == np.complex64
    assert (x * 1j).exp().imag.dtype == np.float32
    assert (x + (1 + 2j)).item() == 3 + 2j
    assert (cr.tensor(2.0) * 1j).dtype == np.complex128
    if torch is not None:
        assert (torch.tensor(2.0) * 1j).dtype == torch.complex64


def test_masked_fill_keeps_the_input_dtype_with_a_0d_value_of_another():
    # a 0-d float32 input filled with a 0-d float64 value came back float64 (where
    # promoted both 0-d operands); PyTorch's masked_fill keeps the input's dtype
    a = cr.ones((), dtype=cr.float32)
    assert a.masked_fill(cr.tensor(True), cr.tensor(0.25)).dtype == cr.float32
    v = cr.tensor(0.25, requires_grad=True)
    out = cr.ones(3, dtype=cr.float32).masked_fill(cr.tensor([True, False, True]), v)
    assert out.dtype == cr.float32 and out.tolist() == [0.25, 1.0, 0.25]
    out.sum().backward()
    assert v.grad.item() == 2.0 and v.grad.dtype == cr.float64  # two masked entries
    if torch is not None:
        t = torch.ones((), dtype=torch.float32)
        assert t.masked_fill(torch.tensor(True), torch.tensor(0.25, dtype=torch.float64)
                             ).dtype == torch.float32
