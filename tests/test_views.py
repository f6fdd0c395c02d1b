"""Views and in-place updates with PyTorch's semantics.

A view shares its base's storage, version counter and history; an in-place update through
a view rewrites the base's history (PyTorch's CopySlices), whichever side requires grad.
Expected gradients are derived by hand in the comments; where torch is installed the same
program also runs on torch.
"""

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # CI has no torch: the comparisons with it are skipped, the rest runs
    torch = None


def _x(*shape, start=1.0):
    return np.arange(start, start + np.prod(shape)).reshape(shape)


# Each program takes the module m (chainrule or torch) and returns the gradients it checks.
def copy_into_buffer(m):
    # buf[0] = 2 y; loss = sum(buf * w)  =>  dloss/dy = 2 w[0]
    y = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    w = m.tensor(_x(2, 3), dtype=m.float64)
    buf = m.zeros(2, 3, dtype=m.float64)
    buf[0].copy_(y * 2)
    (buf * w).sum().backward()
    return (y.grad,)


def mul_row_of_nonleaf(m):
    # y = x; y[0] *= 3; loss = sum(y^2)  =>  row 0: 2 (3x) 3 = 18 x, row 1: 2 x
    x = m.tensor(_x(2, 3), dtype=m.float64, requires_grad=True)
    y = x * 1
    y[0].mul_(3)
    (y * y).sum().backward()
    return (x.grad,)


def add_to_column(m):
    # y = 2x; y[:, 0] += 1; loss = sum(y^2)  =>  column 0: 4 (2x + 1), else 8x
    x = m.tensor(_x(2, 3), dtype=m.float64, requires_grad=True)
    y = x * 2
    y[:, 0] += 1
    (y * y).sum().backward()
    return (x.grad,)


def zero_diagonal(m):
    # y = x; diag(y) = 0; loss = sum(y^2)  =>  2x off the diagonal, 0 on it
    x = m.tensor(_x(3, 3), dtype=m.float64, requires_grad=True)
    y = x * 1
    y.diagonal().zero_()
    (y * y).sum().backward()
    return (x.grad,)


def view_taken_before_update(m):
    # v = y[1:] taken before y *= 2: v follows y's new history; loss = sum(v^2) = sum(4 x^2)
    x = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64, requires_grad=True)
    y = x * 1
    v = y[1:]
    y.mul_(2)
    (v * v).sum().backward()
    return (x.grad,)


def reshape_that_copied(m):
    # b.t().reshape(-1) copies: a later b *= 10 does not change it; loss = sum(r^2) => 2x
    a = m.tensor(_x(2, 3), dtype=m.float64, requires_grad=True)
    b = a * 1
    r = b.t().reshape(-1)
    b.mul_(10)
    (r * r).sum().backward()
    return (a.grad,)


def retain_grad_then_update(m):
    # y = 2x; y *= 3: y.grad is the gradient of y's current value (1), x.grad = 6
    x = m.tensor([1.0, 2.0, 3.0], dtype=m.float64, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    return y.grad, x.grad


def copy_into_view_then_new_view(m):
    # buf = [0, y0, y1]; loss = 2 buf[0] + 3 buf[1] = 3 y0
    buf = m.zeros(3, dtype=m.float64)
    v = buf[1:]
    y = m.tensor([5.0, 7.0], dtype=m.float64, requires_grad=True)
    v.copy_(y)
    (buf[:2] * m.tensor([2.0, 3.0], dtype=m.float64)).sum().backward()
    return (y.grad,)


def setitem_with_grad_value(m):
    # x[0, 1] = 3y; loss = sum(x^2)  =>  dloss/dy = 2 (3y) 3 = 18 y
    x = m.tensor(_x(2, 3), dtype=m.float64)
    y = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    x[0, 1] = y * 3
    (x ** 2).sum().backward()
    return (y.grad,)


def view_of_view_update(m):
    # y = x; y.view(3, 2)[1] += y[0, :2]^2 where y[0, :2] was not saved by anything that
    # the update changes; z[1] covers flat entries 2, 3 of y. loss = sum(y):
    # d/dx = 1 everywhere, plus 2 x[0, j] from the added squares (j = 0, 1)
    x = m.tensor(_x(2, 3), dtype=m.float64, requires_grad=True)
    y = x * 1
    sq = (y[0, :2] * 1) ** 2  # saves a copy, not the view of y
    y.view(3, 2)[1].add_(sq)
    y.sum().backward()
    return (x.grad,)


def update_of_transposed_view(m):
    # y = x; y.t()[0] *= 5 scales column 0 of y; loss = sum(y * c)
    x = m.tensor(_x(2, 3), dtype=m.float64, requires_grad=True)
    c = m.tensor(_x(2, 3, start=2.0), dtype=m.float64)
    y = x * 1
    y.t()[0].mul_(5)
    (y * c).sum().backward()
    return (x.grad,)


PROGRAMS = {
    copy_into_buffer: [[2.0, 4.0, 6.0]],
    mul_row_of_nonleaf: [[[18.0, 36.0, 54.0], [8.0, 10.0, 12.0]]],
    add_to_column: [[[12.0, 16.0, 24.0], [36.0, 40.0, 48.0]]],
    zero_diagonal: [[[0.0, 4.0, 6.0], [8.0, 0.0, 12.0], [14.0, 16.0, 0.0]]],
    view_taken_before_update: [[0.0, 16.0, 24.0, 32.0]],
    reshape_that_copied: [[[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]],
    retain_grad_then_update: [[1.0, 1.0, 1.0], [6.0, 6.0, 6.0]],
    copy_into_view_then_new_view: [[3.0, 0.0]],
    setitem_with_grad_value: [36.0],
    view_of_view_update: [[[3.0, 5.0, 1.0], [1.0, 1.0, 1.0]]],
    update_of_transposed_view: [[[10.0, 3.0, 4.0], [25.0, 6.0, 7.0]]],
}


@pytest.mark.parametrize("program", list(PROGRAMS), ids=lambda f: f.__name__)
def test_view_program_gradients(program):
    got = program(cr)
    assert len(got) == len(PROGRAMS[program])
    for g, want in zip(got, PROGRAMS[program]):
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12)
    if torch is not None:  # the same program on torch
        theirs = program(torch)
        assert len(theirs) == len(got)
        for g, w in zip(got, theirs):
            np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-12)


def _update_through_views(x):
    y = x.sin()
    z = y * 1
    z[1:, 0].mul_(y[0, 1:])          # a view of a non-leaf times other entries
    z.t()[2].add_(x[0] ** 2)          # through a transposed view
    z.view(-1)[::4].copy_(x.reshape(-1)[:3] * 3)
    return (z * z).sum()


def test_update_through_views_gradcheck_and_gradgradcheck():
    x = cr.tensor(_x(3, 3) / 7, dtype=cr.float64, requires_grad=True)
    assert cr.autograd.gradcheck(_update_through_views, (x,))
    assert cr.autograd.gradgradcheck(_update_through_views, (x,))
    if torch is not None:
        x = cr.tensor(_x(3, 3) / 7, dtype=cr.float64, requires_grad=True)
        _update_through_views(x).backward()
        xt = torch.tensor(_x(3, 3) / 7, requires_grad=True)
        _update_through_views(xt).backward()
        np.testing.assert_allclose(np.asarray(x.grad), xt.grad.numpy(), rtol=1e-12)


def test_view_shares_version_counter_and_base():
    x = cr.tensor(_x(2, 3))
    v = x[0]
    assert v._base is x and v._is_view()
    v.mul_(2)
    assert x._version == v._version == 1
    np.testing.assert_array_equal(np.asarray(x)[0], [2.0, 4.0, 6.0])


def test_reshape_that_copies_is_not_a_view():
    a = cr.tensor(_x(2, 3))
    r = a.t().reshape(-1)
    assert r._base is None
    a.mul_(10)
    assert r._version == 0
    np.testing.assert_array_equal(np.asarray(r), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
    assert a.reshape(-1)._base is a  # a contiguous reshape is a view


def test_view_that_would_copy_raises():
    x = cr.tensor(_x(2, 3))
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's "
                                           "size and stride"):
        x.t().view(6)
    assert x.view(3, 2)._base is x
    with pytest.raises(RuntimeError, match=r"shape '\[7\]' is invalid for input of size 6"):
        x.view(7)


def test_saved_value_changed_through_view_raises():
    # exp saves its output; zeroing its diagonal changes that saved value
    x = cr.tensor(_x(3, 3) / 9, dtype=cr.float64, requires_grad=True)
    y = x.exp()
    y.diagonal().zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (y * y).sum().backward()


def test_inplace_on_view_of_leaf_raises_and_changes_nothing():
    x = cr.tensor(_x(2, 3), dtype=cr.float64, requires_grad=True)
    before = np.array(x.detach())
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation"):
        x[0].mul_(2)
    np.testing.assert_array_equal(np.asarray(x.detach()), before)
    assert x._version == 0 and x.grad is None and cr.is_grad_enabled()
    with cr.no_grad():  # as an optimizer does
        x[0].mul_(2)
    np.testing.assert_array_equal(np.asarray(x.detach())[0], 2 * before[0])


def test_view_made_under_no_grad_cannot_be_updated_with_grad_mode():
    x = cr.tensor(_x(2, 3), dtype=cr.float64, requires_grad=True)
    y = x * 1
    with cr.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)


def test_overlapping_view_cannot_be_updated():
    x = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64, requires_grad=True)
    e = (x * 1).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        e.mul_(2)


def test_readonly_numpy_views_are_written_through_the_base():
    # NumPy's diagonal is a read-only view; the update goes to the base's memory
    a = cr.ones(3, 3)
    a.diagonal().fill_(5.0)
    a.diagonal().mul_(2)
    np.testing.assert_array_equal(np.asarray(a), np.ones((3, 3)) + 9 * np.eye(3))
    assert a._version == 2


def test_grad_fn_of_view_follows_base_history():
    x = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64, requires_grad=True)
    y = x * 1
    v = y[:2]
    first = v.grad_fn
    y.mul_(2)
    assert v.grad_fn is not first
    assert v.grad_fn.next_functions[0][0] is y.grad_fn


def test_contiguous_clone_copy():
    a = cr.tensor(_x(2, 3), dtype=cr.float64, requires_grad=True)
    assert a.is_contiguous() and not a.t().is_contiguous()
    c = a.t().contiguous()
    assert c.is_contiguous() and c.grad_fn.name() == "CloneBackward0"
    assert a.contiguous() is a
    (c * cr.tensor(_x(3, 2))).sum().backward()
    np.testing.assert_array_equal(np.asarray(a.grad), _x(3, 2).T)
    d = a.clone()
    assert d.grad_fn.name() == "CloneBackward0" and d._base is None
    # copy_ broadcasts and casts, and its gradient flows to the source
    buf = cr.zeros(2, 3, dtype=cr.float32)
    src = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64, requires_grad=True)
    buf.copy_(src)
    assert buf.dtype == np.float32
    buf.sum().backward()
    np.testing.assert_array_equal(np.asarray(src.grad), [2.0, 2.0, 2.0])


def _views_updated_twice(x):
    y = x * 1
    a, b = y[0], y[:, 0]          # two views of y; b is read after both updates
    a.mul_(x[1])                  # through a view: y's history is rewritten
    y.mul_(2)                     # the root itself: a and b follow
    return b * 1 + a.sum()


def _central_jacobian(fn, x, eps=1e-6):
    cols = []
    for i in range(x.size):
        d = np.zeros(x.size)
        d[i] = eps
        d = d.reshape(x.shape)
        plus = np.asarray(fn(cr.tensor(x + d)).detach())
        minus = np.asarray(fn(cr.tensor(x - d)).detach())
        cols.append((plus - minus).ravel() / (2 * eps))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("fn", [_update_through_views, _views_updated_twice],
                         ids=["update_through_views", "views_updated_twice"])
def test_forward_mode_and_jacobians_through_view_updates(fn):
    from chainrule import func
    from chainrule.autograd import forward_ad as fwAD

    x0 = _x(3, 3) / 7
    J = _central_jacobian(fn, x0)
    v = np.random.default_rng(0).standard_normal((3, 3))
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(cr.tensor(x0), cr.tensor(v)))
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(np.asarray(tangent).ravel(), J @ v.ravel(), atol=1e-8)
    for transform in (func.jacfwd, func.jacrev):
        got = np.asarray(transform(fn)(cr.tensor(x0))).reshape(J.shape)
        np.testing.assert_allclose(got, J, atol=1e-8)


INPLACE_VARIANTS = [
    ("neg", ()), ("abs", ()), ("sign", ()), ("exp", ()), ("log", ()), ("log1p", ()),
    ("expm1", ()), ("sqrt", ()), ("sin", ()), ("cos", ()), ("tan", ()), ("tanh", ()),
    ("sigmoid", ()), ("relu", ()), ("erf", ()), ("square", ()), ("reciprocal", ()),
    ("clamp", (0.3, 0.8)), ("clip", (0.3, 0.8)), ("pow", (3.0,)), ("tril", ()), ("triu", (1,)),
]


@pytest.mark.parametrize("name, args", INPLACE_VARIANTS, ids=[n for n, _ in INPLACE_VARIANTS])
def test_inplace_variant_equals_its_op(name, args):
    # y.fn_(*args) on a non-leaf, and through a view, gives fn's values and gradients
    x0 = np.array([[0.2, 0.5, 0.9], [0.4, 0.7, 0.1], [0.6, 0.35, 0.85]])
    w = cr.tensor(_x(3, 3))

    def out_of_place(x):
        return getattr(x * 1, name)(*args)

    def whole(x):
        y = x * 1
        assert getattr(y, name + "_")(*args) is y
        return y

    def through_view(x):
        y = x * 1
        getattr(y[1:], name + "_")(*args) if name not in ("tril", "triu") else \
            getattr(y.view(3, 3), name + "_")(*args)
        return y

    results = []
    for fn in (out_of_place, whole):
        x = cr.tensor(x0, requires_grad=True)
        y = fn(x)
        (y * w).sum().backward()
        results.append((np.asarray(y.detach()), np.asarray(x.grad)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-14)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-14)
    x = cr.tensor(x0, requires_grad=True)
    assert cr.autograd.gradcheck(lambda x: through_view(x) * w, (x,))


def test_inplace_variant_without_grad_writes_and_bumps_version():
    a = cr.tensor([[-1.0, 2.0], [3.0, -4.0]])
    a.relu_()
    a.diagonal().exp_()         # a read-only NumPy view: written through its base
    np.testing.assert_allclose(np.asarray(a), [[1.0, 2.0], [3.0, 1.0]])
    assert a._version == 2
    m = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    z = m * 1
    z.masked_fill_(cr.tensor([True, False, True]), 0.0)
    z.sum().backward()
    np.testing.assert_array_equal(np.asarray(m.grad), [0.0, 1.0, 0.0])
