"""Adversarial inputs found by fuzzing chainrule against PyTorch.

Each test asserts what is derived without PyTorch (a hand-computed value, or the error
class, that the message names the op, and that a failing call leaves the random state
alone); where PyTorch is importable it is also compared with.
"""

import math
import pickle

import numpy as np
import pytest

import chainrule as cr
import chainrule.nn.functional as F

try:
    import torch
except ImportError:  # the assertions without torch still run
    torch = None

NAN, INF = math.nan, math.inf


def arr(t):
    return np.asarray(t.detach().numpy())


def rng_state():
    return pickle.dumps(cr.get_rng_state())


def torch_of(a):
    return torch.tensor(np.asarray(a))


# --- NaN and infinity ------------------------------------------------------------------


def test_hardshrink_and_softshrink_pass_nan_through():
    x = [NAN, INF, -INF, 1.0, 0.2, -0.7]
    hard = arr(F.hardshrink(cr.tensor(x)))
    soft = arr(F.softshrink(cr.tensor(x)))
    np.testing.assert_array_equal(hard, [NAN, INF, -INF, 1.0, 0.0, -0.7])
    np.testing.assert_allclose(soft, [NAN, INF, -INF, 0.5, 0.0, -0.2])
    if torch is not None:
        tf = torch.nn.functional
        np.testing.assert_allclose(hard, tf.hardshrink(torch_of(x)).numpy())
        np.testing.assert_allclose(soft, tf.softshrink(torch_of(x)).numpy())


def test_hardshrink_gradient_unchanged():
    x = cr.tensor([-1.0, 0.1, 2.0], requires_grad=True)
    F.hardshrink(x).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 0.0, 1.0])


def test_nextafter_from_an_infinity_is_the_largest_finite_float():
    big = np.finfo(np.float64).max
    out = arr(cr.nextafter(cr.tensor([NAN, INF, -INF, 1.0]), cr.tensor([1.0, -2.0, 3.0, 2.0])))
    np.testing.assert_array_equal(out, [NAN, big, -big, np.nextafter(1.0, 2.0)])
    if torch is not None:
        t = torch.nextafter(torch.tensor([NAN, INF, -INF, 1.0], dtype=torch.float64),
                            torch.tensor([1.0, -2.0, 3.0, 2.0], dtype=torch.float64))
        np.testing.assert_array_equal(out, t.numpy())


def test_zero_of_nan_and_inf_is_zero():
    x = cr.tensor([NAN, INF, -INF, 1.0])
    cr.zero_(x)
    np.testing.assert_array_equal(arr(x), [0.0, 0.0, 0.0, 0.0])
    y = cr.tensor([NAN, 2.0], requires_grad=True) * 1
    cr.zero_(y)
    assert y.requires_grad
    np.testing.assert_array_equal(arr(y), [0.0, 0.0])
    b = cr.tensor([True, False])
    cr.zero_(b)
    assert b.dtype == cr.bool and not arr(b).any()


def test_kl_div_negative_target_is_nan():
    x = cr.tensor([[2.0, 1.0, 0.0]])
    t = cr.tensor([[-1.0, 0.0, 0.5]])
    out = arr(F.kl_div(x, t, reduction="none"))
    assert np.isnan(out[0, 0])
    np.testing.assert_allclose(out[0, 1:], [0.0, 0.5 * math.log(0.5) - 0.0])
    if torch is not None:
        ref = torch.nn.functional.kl_div(torch_of(arr(x)), torch_of(arr(t)), reduction="none")
        np.testing.assert_allclose(out, ref.numpy())


# --- dtypes ----------------------------------------------------------------------------


def test_gaussian_nll_loss_float_var_with_an_integer_input():
    x = cr.tensor([[0, 1, 2], [3, 4, 5]])
    t = cr.tensor([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]])
    out = float(F.gaussian_nll_loss(x, t, 2.5))  # var 2.5, not int(2.5) = 2
    assert out == pytest.approx(0.5 * (math.log(2.5) + 0.25 / 2.5))
    if torch is not None:
        ref = torch.nn.functional.gaussian_nll_loss(torch_of(arr(x)), torch_of(arr(t)), 2.5)
        assert out == pytest.approx(float(ref))


@pytest.mark.parametrize("fn", [cr.sum, cr.prod, cr.nansum])
def test_sum_and_prod_of_uint8_are_int64(fn):
    x = cr.tensor(np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8))
    out = fn(x)
    assert out.dtype == cr.int64
    assert int(out) == (21 if fn is not cr.prod else 720)
    assert fn(x, 0).dtype == cr.int64
    assert cr.sum(cr.tensor(np.array([2**63], dtype=np.uint64))).dtype == np.uint64  # stays


def test_clamp_integer_tensor_by_one_integer_tensor_bound_stays_integer():
    x = cr.tensor([[0, 1, 2], [3, 4, 5]])
    lo = cr.clamp(x, min=cr.tensor(2))
    hi = cr.clamp(x, max=cr.tensor([1, 3, 9]))
    assert lo.dtype == cr.int64 and hi.dtype == cr.int64
    np.testing.assert_array_equal(arr(lo), [[2, 2, 2], [3, 4, 5]])
    np.testing.assert_array_equal(arr(hi), [[0, 1, 2], [1, 3, 5]])
    u = cr.clamp(cr.tensor(np.arange(4, dtype=np.uint8)), min=cr.tensor(np.uint8(2)))
    assert u.dtype == np.uint8
    assert cr.clamp(x, min=cr.tensor(2.5)).dtype == cr.float64  # a float bound: float
    if torch is not None:
        assert torch.clamp(torch.tensor(arr(x)), min=torch.tensor(2)).dtype == torch.int64


def test_logsumexp_of_bool_and_int_is_float():
    b = cr.tensor([[True, False, True]])
    expect = math.log(2 * math.e + 1)
    np.testing.assert_allclose(arr(cr.logsumexp(b, -1)), [expect])
    np.testing.assert_allclose(arr(cr.logsumexp(b.long(), -1)), [expect])
    if torch is not None:
        np.testing.assert_allclose(arr(cr.logsumexp(b, -1)),
                                   torch.logsumexp(torch.tensor([[True, False, True]]), -1))


def test_sign_of_bool_is_itself():
    b = cr.tensor([True, False])
    for out in (cr.sign(b), cr.sgn(b), b.sign()):
        assert out.dtype == cr.bool
        np.testing.assert_array_equal(arr(out), [True, False])


# --- arguments PyTorch takes -----------------------------------------------------------


def test_nan_to_num_none_is_zero_and_non_numbers_raise():
    x = cr.tensor([NAN, 1.0])
    np.testing.assert_array_equal(arr(cr.nan_to_num(x, None)), [0.0, 1.0])
    np.testing.assert_array_equal(arr(x.nan_to_num(None)), [0.0, 1.0])
    np.testing.assert_array_equal(arr(cr.nan_to_num(x, cr.tensor(2.0))), [2.0, 1.0])
    for args in (("s",), (0.0, "s"), (0.0, None, [1])):
        with pytest.raises(TypeError, match="nan_to_num"):
            cr.nan_to_num(x, *args)


def test_cumulative_trapezoid_of_an_empty_dim_is_empty():
    out = cr.cumulative_trapezoid(cr.zeros(0))
    assert tuple(out.shape) == (0,) and out.dtype == cr.float64
    assert tuple(cr.cumulative_trapezoid(cr.zeros(2, 0)).shape) == (2, 0)
    if torch is not None:
        assert tuple(torch.cumulative_trapezoid(torch.zeros(2, 0)).shape) == (2, 0)


def test_softmax_dtype_positional():
    x = cr.ones(2, 3)
    np.testing.assert_allclose(arr(cr.softmax(x, 0, None)), np.full((2, 3), 0.5))
    assert cr.log_softmax(x, 1, cr.float32).dtype == cr.float32


def test_where_with_only_a_condition_is_nonzero():
    rows, cols = cr.where(cr.tensor([[1.0, 0.0], [0.0, 2.0]]))
    np.testing.assert_array_equal(arr(rows), [0, 1])
    np.testing.assert_array_equal(arr(cols), [0, 1])
    with pytest.raises(TypeError, match="where"):  # one of input and other: PyTorch's too
        cr.where(cr.ones(2) > 0, cr.ones(2))


# --- errors, and what a failing call must leave alone ----------------------------------


@pytest.mark.parametrize("data, cls", [(None, RuntimeError), ([None], RuntimeError),
                                       ("abc", TypeError)])
@pytest.mark.parametrize("fn", [cr.tensor, cr.as_tensor, cr.asarray])
def test_tensor_of_non_numeric_data_raises(fn, data, cls):
    with pytest.raises(cls, match=fn.__name__):
        fn(data)
    with pytest.raises(TypeError):  # an op given None: PyTorch's TypeError
        fn(data)
    if torch is not None:
        with pytest.raises((RuntimeError, TypeError)):
            getattr(torch, fn.__name__)(data)


@pytest.mark.parametrize("call", [
    lambda: F.dropout(None),
    lambda: F.dropout2d(None),
    lambda: F.dropout3d(None),
    lambda: F.gumbel_softmax(cr.tensor([True, False])),
    lambda: F.gumbel_softmax(cr.tensor([1, 2])),
    lambda: cr.rand_like(cr.ones(2), [[1.0]]),
    lambda: cr.randn_like(cr.ones(2), "x"),
    lambda: cr.rand(2, dtype="nonsense"),
    lambda: cr.normal(cr.ones(2), None),
    lambda: cr.normal("a", 1.0),
], ids=["dropout", "dropout2d", "dropout3d", "gumbel_bool", "gumbel_int", "rand_like",
        "randn_like", "rand", "normal_std", "normal_mean"])
def test_failing_random_call_leaves_the_random_state(call):
    before = rng_state()
    with pytest.raises((TypeError, RuntimeError)):
        call()
    assert rng_state() == before


@pytest.mark.parametrize("name, args", [
    ("normal_", ()), ("uniform_", ()), ("bernoulli_", ()), ("cauchy_", ()),
    ("exponential_", ()), ("log_normal_", ()), ("random_", (0, 5)),
])
def test_in_place_sampler_on_an_expanded_tensor_leaves_the_random_state(name, args):
    x = cr.ones(1, 3).expand(2, 3)
    before = rng_state()
    with pytest.raises(RuntimeError):
        getattr(x, name)(*args)
    assert rng_state() == before
    np.testing.assert_array_equal(arr(x), np.ones((2, 3)))


@pytest.mark.parametrize("name, args", [
    ("exponential_", (0,)),  # 1 / 0 in the sampler's scale
    ("uniform_", (1.0, math.inf)),  # NumPy's OverflowError
    ("normal_", (0.0, -1.0)),  # NumPy's ValueError
])
def test_in_place_sampler_bad_parameter_is_a_runtime_error_naming_it(name, args):
    x = cr.ones(3)
    before = rng_state()
    with pytest.raises(RuntimeError, match=name):
        getattr(x, name)(*args)
    assert rng_state() == before
    np.testing.assert_array_equal(arr(x), np.ones(3))
    if torch is not None:
        with pytest.raises(RuntimeError):
            getattr(torch.ones(3), name)(*args)


@pytest.mark.parametrize("name", ["view_as", "reshape_as", "expand_as", "type_as"])
def test_as_methods_need_a_tensor(name):
    with pytest.raises(TypeError, match=name):
        getattr(cr.ones(2), name)([1.0, 2.0])


def test_group_norm_zero_groups_names_the_op():
    x = cr.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"group_norm.*num_groups.*\[2, 4\]"):
        F.group_norm(x, 0)
    with pytest.raises(TypeError, match="group_norm"):
        F.group_norm(x, cr.tensor(2))


def test_deg2rad_of_none_is_a_type_error():
    with pytest.raises(TypeError):
        cr.deg2rad(None)


@pytest.mark.parametrize("call, name", [
    (lambda: cr.full((2,), None), "full"),
    (lambda: cr.full((0,), "a"), "full"),
    (lambda: cr.logical_and(cr.ones(2), None), "logical_and"),
    (lambda: cr.ones(2).logical_or(None), "logical_or"),
    (lambda: cr.argmax(None), "argmax"),
    (lambda: cr.argmin("abc"), "argmin"),
])
def test_none_or_string_is_not_a_number(call, name):
    with pytest.raises(TypeError, match=name):
        call()


def test_full_and_logical_and_still_take_numbers_and_tensors():
    np.testing.assert_array_equal(arr(cr.full((2,), cr.tensor(2.0))), [2.0, 2.0])
    assert cr.full((2,), 3).dtype == cr.int64
    np.testing.assert_array_equal(arr(cr.logical_and(cr.tensor([1.0, 0.0]), 1)), [True, False])
    assert int(cr.argmax([1.0, 3.0, 2.0])) == 1


def test_polygamma_and_mvlgamma_out_of_range_order_is_a_runtime_error():
    x = cr.tensor([1.5, 2.5])
    with pytest.raises(RuntimeError, match="polygamma"):
        cr.polygamma(-1, x)
    with pytest.raises(RuntimeError, match="mvlgamma"):
        cr.mvlgamma(x, 0)
    with pytest.raises(ValueError, match="mvlgamma"):  # also a ValueError, as before
        cr.special.multigammaln(x, 0)
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.polygamma(-1, torch.tensor([1.5]))


def test_sampler_with_a_bad_device_leaves_the_random_state():
    before = rng_state()
    with pytest.raises(RuntimeError):
        cr.rand_like(cr.ones(2, 3), None, cr.ones(2, 3))  # a tensor as the device
    with pytest.raises(RuntimeError):
        cr.randn(2, device="no_such.device")
    assert rng_state() == before
