"""Errors and the no-mutation guarantee.

- A shape mismatch raises ValueError naming the op and both shapes.
- Differentiating something that has no gradient raises a clear RuntimeError.
- No op (forward or backward) modifies its input arrays or the cotangent passed to it,
  and a failing op leaves the user's tensors as they were.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import chainrule as cr
from chainrule import autograd

try:
    import torch
except ImportError:  # the tests' own assertions do not need it
    torch = None


def leaf(a, dtype=np.float64):
    return cr.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def arr(t):
    return np.asarray(t)


# --- shape mismatches ----------------------------------------------------------------


def _shape_error(fn, *tensors):
    with pytest.raises(ValueError) as info:
        fn(*tensors)
    return str(info.value)


@pytest.mark.parametrize(
    "name, fn",
    [
        ("add", lambda x, y: x + y),
        ("add", cr.add),
        ("sub", lambda x, y: x - y),
        ("mul", lambda x, y: x * y),
        ("div", lambda x, y: x / y),
        ("pow", lambda x, y: x ** y),
        ("maximum", cr.maximum),
    ],
)
def test_elementwise_shape_mismatch_names_op_and_shapes(name, fn):
    x, y = cr.ones(2, 3), cr.ones(4)
    msg = _shape_error(fn, x, y)
    assert msg.startswith(name)
    assert "(2, 3)" in msg and "(4,)" in msg


def test_shape_mismatch_with_requires_grad_inputs_is_the_same_error():
    x, y = leaf(np.ones((2, 3))), leaf(np.ones(4))
    msg = _shape_error(lambda a, b: a + b, x, y)
    assert msg.startswith("add") and "(2, 3)" in msg and "(4,)" in msg
    assert x.grad is None and y.grad is None


def test_mm_shape_mismatch():
    msg = _shape_error(cr.mm, cr.ones(2, 3), cr.ones(4, 5))
    assert msg.startswith("mm") and "(2, 3)" in msg and "(4, 5)" in msg
    msg = _shape_error(lambda a, b: a @ b, cr.ones(2, 3), cr.ones(4, 5))
    assert "mm" in msg and "(2, 3)" in msg and "(4, 5)" in msg


def test_mm_requires_2d():
    msg = _shape_error(cr.mm, cr.ones(2, 3), cr.ones(3))
    assert msg.startswith("mm") and "(3,)" in msg


@pytest.mark.parametrize(
    "a, b",
    [((2, 2, 3), (2, 4, 5)), ((3,), (4,)), ((2, 3), (4,)), ((5,), (4, 2))],
)
def test_matmul_shape_mismatch(a, b):
    msg = _shape_error(cr.matmul, cr.ones(*a), cr.ones(*b))
    assert msg.startswith("matmul")
    assert str(a) in msg and str(b) in msg
    msg = _shape_error(lambda p, q: p @ q, cr.ones(*a), cr.ones(*b))
    assert str(a) in msg and str(b) in msg


def test_matmul_of_0d_raises():
    msg = _shape_error(cr.matmul, cr.tensor(2.0), cr.ones(3))
    assert "matmul" in msg and "()" in msg and "(3,)" in msg


def test_dot_shape_mismatch_names_both_shapes():
    msg = _shape_error(cr.dot, cr.ones(3), cr.ones(4))
    assert "dot" in msg or "matmul" in msg
    assert "(3,)" in msg and "(4,)" in msg


def test_cat_shape_mismatch():
    msg = _shape_error(cr.cat, [cr.ones(2, 3), cr.ones(2, 4)])
    assert msg.startswith("cat") and "(2, 3)" in msg and "(2, 4)" in msg


def test_cat_shape_mismatch_along_dim1():
    msg = _shape_error(lambda ts: cr.cat(ts, dim=1), [cr.ones(2, 3), cr.ones(4, 3)])
    assert msg.startswith("cat") and "(2, 3)" in msg and "(4, 3)" in msg


def test_stack_shape_mismatch():
    msg = _shape_error(cr.stack, [cr.ones(2, 3), cr.ones(2, 4)])
    assert msg.startswith("stack") and "(2, 3)" in msg and "(2, 4)" in msg


def test_reshape_size_mismatch():
    # PyTorch raises RuntimeError "shape '[4, 2]' is invalid for input of size 6"
    with pytest.raises(RuntimeError) as info:
        cr.ones(2, 3).reshape(4, 2)
    msg = str(info.value)
    assert msg.startswith("reshape") and "[4, 2]" in msg and "(2, 3)" in msg


def test_where_shape_mismatch():
    msg = _shape_error(cr.where, cr.ones(3) > 0, cr.ones(2, 3), cr.ones(4))
    assert msg.startswith("where") and "(2, 3)" in msg and "(4,)" in msg


def test_index_out_of_range_names_shape():
    with pytest.raises(IndexError) as info:
        cr.ones(2, 3)[5]
    assert "(2, 3)" in str(info.value)


# --- differentiating what has no gradient -------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x.argmax(),
        lambda x: (x > 0).sum(),
        lambda x: x.long().sum(),
        lambda x: x.max(0).indices,
    ],
    ids=["argmax", "bool_sum", "long", "max_indices"],
)
def test_backward_through_integer_output_raises_clearly(make):
    x = leaf([1.0, -2.0, 3.0])
    y = make(x)
    assert y.dtype.kind in "iub"
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError) as info:
        y.backward()
    msg = str(info.value)
    assert "does not require grad" in msg
    assert str(y.dtype) in msg
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(y, x)
    assert x.grad is None


def test_backward_of_tensor_not_requiring_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        cr.tensor([1.0, 2.0]).sum().backward()


def test_backward_of_detached_result_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).detach().sum().backward()


def test_backward_of_result_computed_under_no_grad_raises_and_mentions_no_grad():
    x = leaf([1.0])
    with cr.no_grad():
        y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="no_grad"):
        y.backward()


def test_converting_requires_grad_tensor_to_int_gives_no_grad():
    # PyTorch: x.to(int64) works and its result does not require grad (no gradient exists)
    x = leaf([1.5])
    out = x.to(np.int64)
    assert out.dtype == np.int64 and not out.requires_grad and x.requires_grad


def test_backward_of_non_tensor_raises_type_error():
    x = leaf([1.0])
    with pytest.raises(TypeError):
        autograd.grad(3.0, x)


# --- no op modifies its inputs (property-style) -----------------------------------------


GRID = np.arange(-8, 9) / 4.0  # values with exact zeros and ties


def _data(rng, shape, kind):
    a = rng.choice(GRID, size=shape)
    if kind == "pos":
        a = np.abs(a) + 0.5
    elif kind == "unit":
        a = np.clip(a / 4.0, -0.9, 0.9)
    return a


def _setitem_on_clone(x, v):
    y = x.clone()
    y[1] = v
    y[:, 0] = v[0] * 2
    return y


def _sort_like(x):
    order = np.argsort(np.asarray(x.detach()), axis=1, kind="stable")
    return cr.take_along_dim(x, cr.tensor(order), dim=1)


def _split_cat(x):
    parts = x.split(2, dim=1)
    return cr.cat([p * (i + 1) for i, p in enumerate(parts)], dim=1)


OPS = [
    ("add", lambda a, b: a + b, [((3, 4), "any"), ((4,), "any")]),
    ("sub", lambda a, b: a - b, [((3, 4), "any"), ((3, 1), "any")]),
    ("mul", lambda a, b: a * b, [((3, 4), "any"), ((3, 4), "any")]),
    ("div", lambda a, b: a / b, [((3, 4), "any"), ((4,), "pos")]),
    ("pow", lambda a, b: a ** b, [((3, 4), "pos"), ((3, 4), "any")]),
    ("pow_scalar", lambda a: a ** 3, [((3, 4), "any")]),
    ("exp", cr.exp, [((3, 4), "any")]),
    ("log", cr.log, [((3, 4), "pos")]),
    ("sqrt", cr.sqrt, [((3, 4), "pos")]),
    ("tanh", cr.tanh, [((3, 4), "any")]),
    ("sigmoid", cr.sigmoid, [((3, 4), "any")]),
    ("relu", cr.relu, [((3, 4), "any")]),
    ("abs", cr.abs, [((3, 4), "any")]),
    ("clamp", lambda a: a.clamp(-0.5, 0.5), [((3, 4), "any")]),
    ("maximum", cr.maximum, [((3, 4), "any"), ((3, 4), "any")]),
    ("where", lambda a, b: cr.where(a > b, a, b), [((3, 4), "any"), ((3, 4), "any")]),
    ("sum", lambda a: a.sum(1), [((3, 4), "any")]),
    ("mean", lambda a: a.mean(0, keepdim=True), [((3, 4), "any")]),
    ("prod", lambda a: a.prod(1), [((3, 4), "any")]),
    ("var", lambda a: a.var(1), [((3, 4), "any")]),
    ("std", lambda a: a.std(), [((3, 4), "pos")]),
    ("amax", lambda a: a.amax(1), [((3, 4), "any")]),
    ("max_dim", lambda a: a.max(1).values, [((3, 4), "any")]),
    ("min_dim", lambda a: a.min(0).values, [((3, 4), "any")]),
    ("max_all", lambda a: a.max(), [((3, 4), "any")]),
    ("logsumexp", lambda a: a.logsumexp(1), [((3, 4), "any")]),
    ("norm", lambda a: a.norm(), [((3, 4), "any")]),
    ("softmax", lambda a: a.softmax(1), [((3, 4), "any")]),
    ("log_softmax", lambda a: a.log_softmax(0), [((3, 4), "any")]),
    ("cross_entropy", lambda a: cr.cross_entropy(a, cr.tensor([0, 3, 1])), [((3, 4), "any")]),
    ("mm", cr.mm, [((3, 4), "any"), ((4, 2), "any")]),
    ("matmul_batched", cr.matmul, [((2, 3, 4), "any"), ((4, 2), "any")]),
    ("matmul_vec", cr.matmul, [((4,), "any"), ((2, 4, 3), "any")]),
    ("outer", cr.outer, [((3,), "any"), ((4,), "any")]),
    ("einsum", lambda a, b: cr.einsum("ij,jk->ik", a, b), [((3, 4), "any"), ((4, 2), "any")]),
    ("trace", cr.trace, [((4, 4), "any")]),
    ("diagonal", lambda a: a.diagonal(), [((4, 4), "any")]),
    ("tril", lambda a: a.tril(), [((4, 4), "any")]),
    ("reshape", lambda a: a.reshape(4, 3), [((3, 4), "any")]),
    ("transpose", lambda a: a.T * 2, [((3, 4), "any")]),
    ("permute", lambda a: a.permute(2, 0, 1), [((2, 3, 4), "any")]),
    ("expand", lambda a: a.expand(3, 4), [((1, 4), "any")]),
    ("unsqueeze", lambda a: a.unsqueeze(0).squeeze(0), [((3, 4), "any")]),
    ("flatten", lambda a: a.flatten(), [((3, 4), "any")]),
    ("cat", lambda a, b: cr.cat([a, b, a], dim=0), [((3, 4), "any"), ((2, 4), "any")]),
    ("stack", lambda a, b: cr.stack([a, b], dim=1), [((3, 4), "any"), ((3, 4), "any")]),
    ("split_cat", _split_cat, [((3, 5), "any")]),
    ("unbind", lambda a: a.unbind(1)[2] * a.unbind(0)[0][2], [((3, 4), "any")]),
    ("getitem_basic", lambda a: a[1:, ::2], [((3, 4), "any")]),
    ("getitem_int_array", lambda a: a[[0, 2, 0]], [((3, 4), "any")]),
    ("getitem_bool_mask", lambda a: a[a > 0], [((3, 4), "any")]),
    ("index_put", lambda a, v: cr.index_put(a, (np.array([0, 2]),), v),
     [((3, 4), "any"), ((4,), "any")]),
    ("index_put_acc", lambda a, v: cr.index_put(a, (np.array([0, 0, 1]),), v, accumulate=True),
     [((3, 4), "any"), ((3, 4), "any")]),
    ("setitem_on_clone", _setitem_on_clone, [((3, 4), "any"), ((4,), "any")]),
    ("sort_like", _sort_like, [((3, 4), "any")]),
    ("take_along_dim", lambda a: cr.take_along_dim(a, cr.tensor([[1], [0], [3]]), dim=1),
     [((3, 4), "any")]),
    ("to_float32", lambda a: a.float() * 2, [((3, 4), "any")]),
    ("clone", lambda a: a.clone(), [((3, 4), "any")]),
]


@pytest.mark.parametrize("name, fn, specs", OPS, ids=[o[0] for o in OPS])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_no_op_modifies_its_inputs_or_cotangent(name, fn, specs, seed):
    rng = np.random.default_rng(seed)
    arrays = [_data(rng, shape, kind) for shape, kind in specs]
    originals = [a.copy() for a in arrays]
    inputs = [cr.tensor(a, requires_grad=True) for a in arrays]
    views = [np.asarray(t) for t in inputs]
    snapshots = [v.copy() for v in views]

    out = fn(*inputs)
    for v, s in zip(views, snapshots):
        np.testing.assert_array_equal(v, s, err_msg=f"{name}: forward modified an input")
    assert all(t._version == 0 for t in inputs), f"{name}: forward bumped an input's version"

    u = rng.normal(size=out.shape).astype(out.dtype)
    u_before = u.copy()
    grads = autograd.grad(out, inputs, grad_outputs=u, retain_graph=True, allow_unused=True)
    np.testing.assert_array_equal(u, u_before, err_msg=f"{name}: backward modified the cotangent")
    for v, s in zip(views, snapshots):
        np.testing.assert_array_equal(v, s, err_msg=f"{name}: backward modified an input")
    for g, v in zip(grads, views):
        if g is not None:
            assert not np.shares_memory(np.asarray(g), v)
            assert not np.shares_memory(np.asarray(g), u)

    out_before = np.array(out.detach())
    out.backward(cr.tensor(u))
    np.testing.assert_array_equal(u, u_before, err_msg=f"{name}: backward modified the cotangent")
    np.testing.assert_array_equal(np.asarray(out.detach()), out_before,
                                  err_msg=f"{name}: backward modified the output")
    for t, v, s, g in zip(inputs, views, snapshots, grads):
        np.testing.assert_array_equal(v, s, err_msg=f"{name}: backward modified an input")
        np.testing.assert_array_equal(np.asarray(t), s, err_msg=f"{name}: input data replaced")
        assert t._version == 0 and t.is_leaf
        if g is not None:
            np.testing.assert_array_equal(np.asarray(t.grad), np.asarray(g))
            assert not np.shares_memory(np.asarray(t.grad), v)
    # The arrays the tensors were built from are untouched too (tensor() copies).
    for a, o in zip(arrays, originals):
        np.testing.assert_array_equal(a, o)


@pytest.mark.parametrize("name, fn, specs", OPS[:12], ids=[o[0] for o in OPS[:12]])
def test_ops_do_not_modify_ndarray_operands(name, fn, specs):
    rng = np.random.default_rng(0)
    arrays = [_data(rng, shape, kind) for shape, kind in specs]
    snapshots = [a.copy() for a in arrays]
    x = cr.tensor(arrays[0], requires_grad=True)
    out = fn(x, *arrays[1:])
    out.sum().backward()
    for a, s in zip(arrays, snapshots):
        np.testing.assert_array_equal(a, s)


def test_as_tensor_inputs_are_not_modified_by_ops():
    a = np.array([[1.0, -2.0], [0.5, 3.0]])
    before = a.copy()
    t = cr.as_tensor(a)
    for f in (cr.exp, cr.relu, lambda v: v.softmax(1), lambda v: v[0], lambda v: v @ v,
              lambda v: cr.index_put(v, (0,), cr.tensor([9.0, 9.0])), lambda v: v.T):
        f(t)
    np.testing.assert_array_equal(a, before)


# --- failing ops leave user data untouched --------------------------------------------------


def test_failing_binary_op_leaves_inputs_untouched():
    x = leaf(np.arange(6.0).reshape(2, 3))
    y = leaf(np.arange(4.0))
    with pytest.raises(ValueError):
        x * y
    np.testing.assert_array_equal(arr(x), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(arr(y), np.arange(4.0))
    assert x._version == 0 and y._version == 0
    assert x.grad is None and y.grad is None


def test_failing_inplace_update_leaves_tensor_untouched():
    t = cr.tensor([1.0, 2.0, 3.0])
    with pytest.raises((RuntimeError, ValueError)):
        t.add_(cr.ones(2))
    with pytest.raises((RuntimeError, ValueError)):
        t.mul_(cr.ones(2, 3))
    with pytest.raises((ValueError, IndexError)):
        t[0:2] = cr.tensor([1.0, 2.0, 3.0])
    with pytest.raises(IndexError):
        t[5] = 1.0
    np.testing.assert_array_equal(arr(t), [1.0, 2.0, 3.0])
    assert t._version == 0


def test_failing_recorded_inplace_update_leaves_tensor_and_graph_untouched():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2.0
    fn = h.grad_fn
    with pytest.raises((RuntimeError, ValueError)):
        h.add_(leaf(np.ones(2)))
    with pytest.raises((RuntimeError, ValueError)):
        h.mul_(leaf(np.ones((2, 3))))
    np.testing.assert_array_equal(arr(h), [2.0, 4.0, 6.0])
    assert h.grad_fn is fn and h._version == 0
    h.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0, 2.0])


def test_rejected_inplace_on_leaf_leaves_it_untouched():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError):
        x += 1.0
    np.testing.assert_array_equal(arr(x), [1.0, 2.0])
    assert x._version == 0 and x.is_leaf


def test_failing_backward_leaves_grads_and_graph_untouched():
    x = leaf([1.0, 2.0])
    y = x * 3
    with pytest.raises(RuntimeError):
        y.backward()  # non-scalar
    with pytest.raises(RuntimeError):
        y.backward(cr.ones(3))  # wrong shape
    assert x.grad is None
    y.backward(cr.ones(2))
    np.testing.assert_array_equal(arr(x.grad), [3.0, 3.0])


def test_error_message_does_not_alter_user_data_or_dtype():
    a = np.array([[1, 2, 3]], dtype=np.int32)
    b = np.array([1.5, 2.5], dtype=np.float32)
    ta, tb = cr.from_numpy(a), cr.from_numpy(b)
    with pytest.raises(ValueError) as info:
        ta + tb
    assert "(1, 3)" in str(info.value) and "(2,)" in str(info.value)
    assert a.dtype == np.int32 and b.dtype == np.float32
    np.testing.assert_array_equal(a, [[1, 2, 3]])
    np.testing.assert_array_equal(b, np.array([1.5, 2.5], dtype=np.float32))
    assert ta.dtype == np.int32 and tb.dtype == np.float32


def test_gradcheck_failure_leaves_inputs_untouched():
    class Bad(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf([0.5, 1.5])
    with pytest.raises(autograd.GradcheckError):
        autograd.gradcheck(Bad.apply, (x,))
    np.testing.assert_array_equal(arr(x), [0.5, 1.5])
    assert x.grad is None and x._version == 0


def _public_functions():
    skip = {"manual_seed", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
            "set_default_dtype", "get_default_dtype", "tensor", "as_tensor", "from_numpy",
            "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "rand", "randn",
            "randint", "default_generator",
            # files and global state: save(x, "a") would write a file named "a"
            "save", "load", "set_printoptions", "set_rng_state", "use_deterministic_algorithms"}
    return sorted(n for n in dir(cr) if not n.startswith("_") and n not in skip
                  and callable(getattr(cr, n)) and not isinstance(getattr(cr, n), type))


@pytest.mark.parametrize("name", _public_functions())
def test_bad_arguments_name_an_op_and_change_nothing(name):
    """Every public function given wrong argument types or shapes raises an error whose
    message starts with an op's name (this function's, or the primitive it called), and
    leaves the tensors it was given as they were."""
    fn = getattr(cr, name)
    x = cr.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    v = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for args in [(x, "a"), (v, x, v), ("text",), (x, [[1, 2]]), (x, (0, 7))]:
        try:
            fn(*args)
        except NotImplementedError:
            continue
        except Exception as err:  # noqa: BLE001 - any error type, as long as it is named
            # "op: ..." (chainrule's form) or "op() takes ..." (Python's own arity error)
            assert re.match(r"[A-Za-z_][\w.]*(: |\(\) )", str(err)), (
                name, args, f"{type(err).__name__}: {err}")
        np.testing.assert_array_equal(np.asarray(x.detach()), np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal(np.asarray(v.detach()), [1.0, 2.0, 3.0])
        assert x.grad is None and v.grad is None and cr.is_grad_enabled()


def test_an_extra_positional_argument_to_a_unary_op_raises_and_writes_nothing():
    # NumPy would take the array as out= and write exp(x) into it
    out = np.zeros(2)
    x = cr.tensor([0.0, 1.0])
    with pytest.raises(TypeError, match=r"exp\(\) takes 1 positional argument but 2"):
        cr.exp(x, out)
    with pytest.raises(TypeError, match=r"exp\(\) takes 1 positional argument but 2"):
        x.exp(out)
    assert np.array_equal(out, [0, 0]) and np.array_equal(x.numpy(), [0, 1])


@pytest.mark.parametrize("call, name", [
    (lambda x: x + None, "add"), (lambda x: cr.atan2(x, None), "atan2"),
    (lambda x: x * "a", "mul"), (lambda x: cr.clone(None), "clone"),
])
def test_none_or_a_string_as_an_operand_is_a_type_error_naming_the_op(call, name):
    x = cr.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=rf"^{name}: "):
        call(x)
    assert x.grad is None and np.array_equal(x.detach().numpy(), [1, 1])


@pytest.mark.parametrize("call", [
    lambda x: x.gather(0, cr.tensor([[0, -1, 1, 2]])),
    lambda x: x.scatter_add(0, cr.tensor([[0, 3, 1, 2]]), cr.ones(1, 4)),
    lambda x: x.index_add(0, cr.tensor([-1]), cr.ones(1, 4)),
    lambda x: x.narrow(0, 2, 2),
    lambda x: x.kthvalue(9, 0),
    lambda x: x.index_select(0, cr.tensor([3])),
], ids=["gather", "scatter_add", "index_add", "narrow", "kthvalue", "index_select"])
def test_an_index_outside_the_tensor_is_both_an_index_and_a_runtime_error(call):
    # PyTorch raises RuntimeError from gather/scatter/index_add/narrow/kthvalue and
    # IndexError from index_select: code written against either catches chainrule's
    x = cr.tensor(np.arange(12.0).reshape(3, 4))
    with pytest.raises(RuntimeError, match="out of (bounds|range)|exceeds"):
        call(x)
    with pytest.raises(IndexError):
        call(x)
    np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4))  # untouched


def test_median_and_mode_along_an_empty_dim_raise_as_pytorch():
    for call in (lambda: cr.zeros(0, 2).median(0), lambda: cr.tensor([]).mode(),
                 lambda: cr.zeros(2, 0).nanmedian(1)):
        with pytest.raises(IndexError, match="Expected reduction dim [01] to have non-zero"):
            call()
    # along a non-empty dim of an empty tensor: empty results, as PyTorch
    values, indices = cr.zeros(0, 2).median(1)
    assert tuple(values.shape) == (0,) and indices.dtype == cr.int64
    assert np.isnan(cr.tensor([]).median().item())  # the median of nothing is NaN


@pytest.mark.parametrize("call", [
    lambda m: m.eq(m.ones(2, 3), m.ones(3, 4)),
    lambda m: m.logical_and(m.ones(2, 3), m.ones(3, 4)),
    lambda m: m.dsplit(m.ones(2, 3), 2),
    lambda m: m.tensor_split(m.ones(2, 3), -1),
    lambda m: m.lu_unpack(m.ones(3), m.ones(3, dtype=m.int32)),
    lambda m: m.zeros(1, -1),
    lambda m: m.full((-1,), 2.0),
    lambda m: m.eye(-1),
], ids=["eq", "logical_and", "dsplit", "tensor_split", "lu_unpack", "zeros", "full", "eye"])
def test_shape_and_size_mistakes_are_runtime_errors_as_in_pytorch(call):
    # these raised a plain ValueError or IndexError (NumPy's), which code written for
    # PyTorch's RuntimeError did not catch; each is a RuntimeError now, and keeps its old
    # class as well where it had one
    with pytest.raises(RuntimeError) as info:
        call(cr)
    assert any(w in str(info.value) for w in ("broadcast", "dimension", "sections", "index",
                                              "must be"))
    if torch is not None:
        with pytest.raises(RuntimeError):
            call(torch)
