"""Custom ``autograd.Function`` and ``gradcheck``.

Each Function's backward is the analytic VJP of its forward; the expected gradients are
written out from the math.
"""

import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule import autograd
from chainrule.autograd import Function, GradcheckError, gradcheck
from functions import Cube, Exp, MatVec

try:
    import torch
except ImportError:  # CI has no torch: the comparison with it is skipped, the rest runs
    torch = None


def leaf(a, dtype=np.float64):
    return cr.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def arr(t):
    return np.asarray(t)


A0 = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
X0 = np.array([0.3, -0.7, 1.1])


# --- basic use ---------------------------------------------------------------------------


def test_function_forward_value_and_gradients():
    A, x = leaf(A0), leaf(X0)
    y = MatVec.apply(A, x)
    np.testing.assert_allclose(arr(y), A0 @ X0)
    u = np.array([2.0, -1.0])
    y.backward(cr.tensor(u))
    np.testing.assert_allclose(arr(A.grad), np.outer(u, X0))
    np.testing.assert_allclose(arr(x.grad), A0.T @ u)


def test_function_output_has_named_grad_fn():
    A, x = leaf(A0), leaf(X0)
    y = MatVec.apply(A, x)
    assert y.grad_fn.name() == "MatVecBackward"
    assert not y.is_leaf and y.requires_grad
    assert Cube.apply(x).grad_fn.name() == "CubeBackward"
    (na, _), (nx, _) = y.grad_fn.next_functions
    assert na.variable is A and nx.variable is x


def test_function_composes_with_builtin_ops():
    x = leaf([0.5, -1.0, 2.0])
    y = (Cube.apply(x.tanh()) * 2).sum()
    y.backward()
    t = np.tanh([0.5, -1.0, 2.0])
    np.testing.assert_allclose(arr(x.grad), 2 * 3 * t**2 * (1 - t**2))


def test_function_input_from_other_node_and_used_twice():
    x = leaf([1.0, 2.0])
    h = x * 2
    y = (Cube.apply(h) + Cube.apply(h)).sum()
    y.backward()
    np.testing.assert_allclose(arr(x.grad), 2 * 3 * (2 * np.array([1.0, 2.0])) ** 2 * 2)


def test_function_without_grad_inputs_builds_no_graph():
    y = Cube.apply(cr.tensor([2.0]))
    assert y.grad_fn is None and not y.requires_grad
    np.testing.assert_allclose(arr(y), [8.0])
    with cr.no_grad():
        z = Cube.apply(leaf([2.0]))
    assert z.grad_fn is None and not z.requires_grad


def test_function_cannot_be_instantiated():
    with pytest.raises(RuntimeError, match="apply"):
        Cube()


def test_grad_mode_is_off_inside_forward_and_backward():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["forward"] = cr.is_grad_enabled()
            inner = x * 2
            seen["inner_requires_grad"] = inner.requires_grad
            seen["inner_grad_fn"] = inner.grad_fn
            return inner

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = cr.is_grad_enabled()
            return g * 2

    x = leaf([1.0])
    y = Probe.apply(x)
    assert seen["forward"] is False
    assert seen["inner_requires_grad"] is False and seen["inner_grad_fn"] is None
    assert cr.is_grad_enabled()
    assert y.requires_grad and y.grad_fn.name() == "ProbeBackward"
    y.sum().backward()
    assert seen["backward"] is False
    np.testing.assert_allclose(arr(x.grad), [2.0])


def test_save_for_backward_and_saved_tensors():
    saved = {}

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b, None)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b, nothing = ctx.saved_tensors
            saved["values"] = (arr(a).copy(), arr(b).copy(), nothing)
            return g * b, g * a

    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    Mul.apply(a, b).sum().backward()
    np.testing.assert_array_equal(saved["values"][0], [1.0, 2.0])
    np.testing.assert_array_equal(saved["values"][1], [3.0, 4.0])
    assert saved["values"][2] is None
    np.testing.assert_allclose(arr(a.grad), [3.0, 4.0])
    np.testing.assert_allclose(arr(b.grad), [1.0, 2.0])


def test_save_for_backward_rejects_non_tensors():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(np.ones(2))
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward"):
        Bad.apply(leaf([1.0]))


def test_saved_tensor_modified_inplace_raises_at_backward():
    A, x = leaf(A0), cr.tensor(X0)
    y = MatVec.apply(A, x)
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_output_modified_inplace_raises_at_backward():
    # PyTorch: "... which is output 0 of Exp, is at version 1; expected version 0".
    x = leaf([0.0, 1.0])
    y = Exp.apply(x)
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_saved_output_used_without_modification_gives_correct_grad():
    x = leaf([0.0, 1.0])
    (Exp.apply(x) * 2.0).sum().backward()
    np.testing.assert_allclose(arr(x.grad), 2 * np.exp([0.0, 1.0]))


def test_function_backward_twice_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(arr(x.grad), 2 * 3 * np.array([1.0, 4.0]))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_needs_input_grad():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen["forward"] = ctx.needs_input_grad
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ctx.needs_input_grad
            return g, None, None

    a = leaf([1.0])
    b = cr.tensor([2.0])
    Probe.apply(a, b, 3.0).sum().backward()
    assert seen["forward"] == (True, False, False)
    assert seen["backward"] == (True, False, False)


def test_non_tensor_arguments_get_none_gradients():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor, name):
            ctx.factor = factor
            assert name == "label"
            return x * factor

        @staticmethod
        def backward(ctx, g):
            return g * ctx.factor, None, None

    x = leaf([1.0, 2.0])
    y = Scale.apply(x, 2.5, "label")
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.5, 2.5])


def test_gradient_for_non_tensor_argument_raises():
    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor):
            return x * factor

        @staticmethod
        def backward(ctx, g):
            return g * 2, g.sum()

    with pytest.raises(RuntimeError, match="input 1"):
        Scale.apply(leaf([1.0]), 2.0).sum().backward()


def test_none_gradient_for_input_that_requires_grad_gives_no_grad():
    class FirstOnly(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, None

    a, b = leaf([1.0]), leaf([2.0])
    FirstOnly.apply(a, b).sum().backward()
    np.testing.assert_allclose(arr(a.grad), [1.0])
    assert b.grad is None


# --- several outputs, non-differentiable outputs, materialize_grads ---------------------


class SinCos(Function):
    received = []

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, gs, gc):
        SinCos.received.append((gs, gc))
        (x,) = ctx.saved_tensors
        total = 0
        if gs is not None:
            total = total + gs * x.cos()
        if gc is not None:
            total = total - gc * x.sin()
        return total


def test_several_outputs_both_used():
    x0 = np.array([0.2, 1.0])
    x = leaf(x0)
    s, c = SinCos.apply(x)
    np.testing.assert_allclose(arr(s), np.sin(x0))
    np.testing.assert_allclose(arr(c), np.cos(x0))
    assert s.grad_fn is c.grad_fn
    assert (s.output_nr, c.output_nr) == (0, 1)
    (2 * s + 3 * c).sum().backward()
    np.testing.assert_allclose(arr(x.grad), 2 * np.cos(x0) - 3 * np.sin(x0))


def test_unused_output_gets_zeros_by_default():
    SinCos.received.clear()
    x = leaf([0.5])
    s, _ = SinCos.apply(x)
    s.sum().backward()
    gs, gc = SinCos.received[-1]
    assert isinstance(gc, cr.Tensor)
    np.testing.assert_array_equal(arr(gc), [0.0])
    np.testing.assert_allclose(arr(x.grad), np.cos([0.5]))


def test_set_materialize_grads_false_passes_none_for_unused_outputs():
    received = []

    class SinCosLazy(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return x.sin(), x.cos()

        @staticmethod
        def backward(ctx, gs, gc):
            received.append((gs, gc))
            (x,) = ctx.saved_tensors
            return -gc * x.sin()

    x = leaf([0.5, 1.5])
    _, c = SinCosLazy.apply(x)
    c.sum().backward()
    gs, gc = received[-1]
    assert gs is None
    np.testing.assert_array_equal(arr(gc), [1.0, 1.0])
    np.testing.assert_allclose(arr(x.grad), -np.sin([0.5, 1.5]))


def test_mark_non_differentiable():
    class MaxWithIndex(Function):
        @staticmethod
        def forward(ctx, x):
            i = x.argmax()
            flag = x > 0
            v = x.amax()
            ctx.mark_non_differentiable(flag)
            ctx.save_for_backward(x)
            ctx.index = int(i.item())
            return v, i, flag

        @staticmethod
        def backward(ctx, gv, gi, gflag):
            (x,) = ctx.saved_tensors
            grad = cr.zeros_like(x)
            grad[ctx.index] = gv
            return grad

    x = leaf([0.5, -3.0, 2.0])
    v, i, flag = MaxWithIndex.apply(x)
    assert v.requires_grad and v.grad_fn.name() == "MaxWithIndexBackward"
    assert not flag.requires_grad and flag.grad_fn is None
    assert not i.requires_grad  # integer outputs never require grad
    assert flag.tolist() == [True, False, True]
    assert i.item() == 2
    v.backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0, 1.0])


def test_mark_non_differentiable_float_output():
    class Pair(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x * 2, x * 3
            ctx.mark_non_differentiable(b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2

    x = leaf([1.0])
    a, b = Pair.apply(x)
    assert a.requires_grad and not b.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        b.sum().backward()


# --- errors from backward -----------------------------------------------------------------


def test_wrong_number_of_gradients_raises():
    class MatVec(Function):  # noqa: F811 - same name on purpose: the message uses it
        @staticmethod
        def forward(ctx, A, x):
            ctx.save_for_backward(A, x)
            return A @ x

        @staticmethod
        def backward(ctx, grad):
            A, x = ctx.saved_tensors
            return A.t() @ grad

    A, x = leaf(A0), leaf(X0)
    y = MatVec.apply(A, x).sum()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    msg = str(info.value)
    assert "MatVec.backward returned 1 gradient, expected 2" in msg
    assert "one per input of forward" in msg
    assert A.grad is None and x.grad is None


def test_too_many_gradients_raises():
    class Extra(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g, g

    with pytest.raises(RuntimeError, match="Extra.backward returned 3 gradients, expected 1"):
        Extra.apply(leaf([1.0])).sum().backward()


def test_trailing_none_gradients_are_accepted():
    class Trailing(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None

    x = leaf([1.0])
    Trailing.apply(x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0])


def test_gradient_with_wrong_shape_raises():
    class WrongShape(Function):
        @staticmethod
        def forward(ctx, A, x):
            return A @ x

        @staticmethod
        def backward(ctx, g):
            return g, cr.ones(5)

    A, x = leaf(A0), leaf(X0)
    with pytest.raises(RuntimeError) as info:
        WrongShape.apply(A, x).sum().backward()
    msg = str(info.value)
    assert "WrongShape" in msg
    assert "input 0" in msg
    assert "(2,)" in msg and "(2, 3)" in msg
    assert A.grad is None and x.grad is None


def test_gradient_with_wrong_shape_names_second_input():
    class WrongShape2(Function):
        @staticmethod
        def forward(ctx, A, x):
            return A @ x

        @staticmethod
        def backward(ctx, g):
            return cr.outer(g, cr.ones(3)), cr.ones(4, 1)

    with pytest.raises(RuntimeError) as info:
        WrongShape2.apply(leaf(A0), leaf(X0)).sum().backward()
    msg = str(info.value)
    assert "WrongShape2" in msg and "input 1" in msg
    assert "(4, 1)" in msg and "(3,)" in msg


def test_non_tensor_gradient_raises():
    class ReturnsArray(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return np.asarray(g) * 2

    with pytest.raises(TypeError) as info:
        ReturnsArray.apply(leaf([1.0, 2.0])).sum().backward()
    msg = str(info.value)
    assert "ReturnsArray" in msg and "input 0" in msg and "ndarray" in msg


def test_forward_returning_non_tensor_raises():
    class ReturnsList(Function):
        @staticmethod
        def forward(ctx, x):
            return [1.0, 2.0]

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="ReturnsList"):
        ReturnsList.apply(leaf([1.0]))


def test_float32_gradient_keeps_input_dtype():
    x = leaf([1.0, 2.0], dtype=np.float32)
    Cube.apply(x).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(arr(x.grad), [3.0, 12.0])


def test_autograd_grad_through_function():
    A, x = leaf(A0), leaf(X0)
    y = MatVec.apply(A, x)
    u = np.array([1.0, 3.0])
    gA, gx = autograd.grad(y, [A, x], grad_outputs=cr.tensor(u))
    np.testing.assert_allclose(arr(gA), np.outer(u, X0))
    np.testing.assert_allclose(arr(gx), A0.T @ u)
    assert A.grad is None


# --- gradcheck -------------------------------------------------------------------------


class BadCube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x  # wrong: should be 3 x^2


class BadMatVec(Function):
    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, grad):
        A, x = ctx.saved_tensors
        return cr.outer(grad, x), A.t() @ grad * 1.5  # wrong for x


def test_gradcheck_passes_for_correct_functions():
    assert gradcheck(MatVec.apply, (leaf(A0), leaf(X0))) is True
    assert gradcheck(Cube.apply, (leaf([0.5, -1.0, 2.0]),)) is True
    assert gradcheck(lambda x: SinCos.apply(x), (leaf([0.1, 0.7]),)) is True


def test_gradcheck_with_non_differentiable_input():
    assert gradcheck(MatVec.apply, (cr.tensor(A0), leaf(X0))) is True


def test_gradcheck_raises_for_wrong_function():
    with pytest.raises(GradcheckError) as info:
        gradcheck(BadCube.apply, (leaf([0.5, -1.0, 2.0]),))
    err = info.value
    msg = str(err)
    assert isinstance(err, RuntimeError)
    assert "output 0" in msg and "input 0" in msg
    assert "largest error" in msg
    # The largest error is at x = 2: analytic 2 x^2 = 8, numerical 3 x^2 = 12.
    assert err.output_index == 0 and err.input_index == 0
    out_idx, in_idx, analytic, numerical = err.worst
    assert out_idx == (2,) and in_idx == (2,)
    np.testing.assert_allclose(analytic, 8.0)
    np.testing.assert_allclose(numerical, 12.0, rtol=1e-6)


def test_gradcheck_names_the_wrong_input():
    with pytest.raises(GradcheckError) as info:
        gradcheck(BadMatVec.apply, (leaf(A0), leaf(X0)))
    assert info.value.input_index == 1
    assert "input 1" in str(info.value)
    # Analytic Jacobian wrt x is 1.5 A, numerical is A.
    np.testing.assert_allclose(info.value.analytic, 1.5 * A0)
    np.testing.assert_allclose(info.value.numerical, A0, atol=1e-6)


def test_gradcheck_returns_false_without_raising():
    assert gradcheck(BadCube.apply, (leaf([0.5, 2.0]),), raise_exception=False) is False


def test_gradcheck_warns_for_float32_inputs():
    with pytest.warns(UserWarning, match="float64"):
        gradcheck(Cube.apply, (leaf([0.5, 1.0], dtype=np.float32),), eps=1e-3, atol=1e-2,
                  rtol=1e-2)


def test_gradcheck_does_not_warn_for_float64():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(Cube.apply, (leaf([0.5, 1.0]),))


def test_gradcheck_without_grad_inputs_raises():
    with pytest.raises(ValueError, match="requires grad"):
        gradcheck(Cube.apply, (cr.tensor([1.0]),))


def test_gradcheck_leaves_inputs_and_grads_untouched():
    x = leaf([0.5, -1.0])
    gradcheck(Cube.apply, (x,))
    np.testing.assert_array_equal(arr(x), [0.5, -1.0])
    assert x.grad is None


def test_gradcheck_of_builtin_composite():
    a = leaf(np.array([[0.3, -0.2], [0.5, 1.0]]))
    b = leaf(np.array([0.7, -0.4]))
    assert gradcheck(lambda p, q: (cr.tanh(p @ q) * q).exp(), (a, b))


# --- PyTorch 2's Function API: setup_context, vjp, save_for_forward, mark_dirty ----------


class MulConstant(Function):
    """PyTorch's "Extending" example: forward without ctx, then setup_context."""

    @staticmethod
    def forward(tensor, constant):
        return tensor * constant

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, constant = inputs
        ctx.constant = constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


class ExpSaved(Function):
    """exp with its output saved for backward (as vjp) and for forward (jvp)."""

    @staticmethod
    def forward(x):
        return x.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def vjp(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out

    @staticmethod
    def jvp(ctx, t):
        (out,) = ctx.saved_tensors
        return t * out


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1.0)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_forward_without_ctx_and_setup_context():
    x = leaf([1.0, 2.0])
    y = MulConstant.apply(x, 3.0)
    assert y.grad_fn.name() == "MulConstantBackward"
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])  # d(3x)/dx
    gradcheck(lambda t: MulConstant.apply(t, -2.5), (leaf([0.3, -1.2]),))


def test_vjp_is_backward_and_save_for_forward_feeds_jvp():
    from chainrule.autograd import forward_ad as fwAD

    a = np.array([0.0, 1.0, -0.5])
    x = leaf(a)
    ExpSaved.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(a))  # d exp = exp
    with fwAD.dual_level():
        d = fwAD.make_dual(cr.tensor(a), cr.tensor([1.0, 2.0, 3.0]))
        t = fwAD.unpack_dual(ExpSaved.apply(d)).tangent
    np.testing.assert_allclose(t.numpy(), np.exp(a) * [1.0, 2.0, 3.0])
    assert autograd.validate(ExpSaved, leaf(a)).passed


def test_defining_both_backward_and_vjp_is_refused():
    class Both(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g

        @staticmethod
        def vjp(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="both 'backward' and 'vjp'"):
        Both.apply(leaf([1.0])).sum().backward()


def test_mark_dirty_keeps_the_tensor_and_gives_it_the_node():
    a = leaf([1.0, 2.0])
    b = a * 2
    c = AddOneInPlace.apply(b)
    assert c is b and c.grad_fn.name() == "AddOneInPlaceBackward"
    (c * c).sum().backward()
    # c = 2a + 1, loss = sum(c^2): d loss / da = 2c * 2
    np.testing.assert_allclose(a.grad.numpy(), 4 * (2 * np.array([1.0, 2.0]) + 1))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOneInPlace.apply(leaf([1.0]))


def test_non_tensor_outputs_pass_through():
    class WithInfo(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, "info", 3

        @staticmethod
        def backward(ctx, g, g_info, g_n):
            assert g_info is None and g_n is None  # one cotangent per output, None here
            return g * 2

    x = leaf([1.0, -1.0])
    y, info, n = WithInfo.apply(x)
    assert (info, n) == ("info", 3)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_the_new_api_matches_torch():
    a = np.array([0.5, -2.0, 3.0])
    x = leaf(a)
    (MulConstant.apply(x, 1.5) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 1.5 ** 2 * a)  # d(1.5 a)^2 / da
    assert autograd.gradcheck(lambda t: MulConstant.apply(t, 1.5), (leaf(a),))
    if torch is not None:
        class TorchMulConstant(torch.autograd.Function):
            @staticmethod
            def forward(tensor, constant):
                return tensor * constant

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.constant = inputs[1]

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output * ctx.constant, None

        tx = torch.tensor(a, requires_grad=True)
        (TorchMulConstant.apply(tx, 1.5) ** 2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# --- gradcheck with PyTorch's keywords ------------------------------------------------


class ScaleWrongJvp(Function):
    """y = 3x with a right backward and a jvp off by a factor 2."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3

    @staticmethod
    def jvp(ctx, t):
        return t * 6


def test_gradcheck_checks_forward_mode_and_diagnoses_it():
    x = leaf([0.5, -1.0, 2.0])
    assert gradcheck(func=lambda t: ScaleWrongJvp.apply(t), inputs=(x,))  # backward only
    with pytest.raises(GradcheckError, match="Jacobian computed with forward mode mismatch "
                                             "for output 0 with respect to input 0") as info:
        gradcheck(ScaleWrongJvp.apply, (x,), check_forward_ad=True, check_backward_ad=False)
    assert any(d.startswith("constant factor") and "2 x numerical" in d
               for d in info.value.diagnosis), info.value.diagnosis
    assert gradcheck(ExpSaved.apply, (x,), check_forward_ad=True)  # both modes agree
    with pytest.raises(ValueError, match="at least one of check_forward_ad"):
        gradcheck(ExpSaved.apply, (x,), check_backward_ad=False)


def test_gradcheck_nondet_tol_and_undefined_grads():
    rng = np.random.default_rng(0)

    class Noisy(Function):  # backward right to 1e-8, but not the same twice
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + cr.tensor(1e-8 * rng.standard_normal(g.shape))

    x = leaf([1.0, 2.0])
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Noisy.apply, (x,))
    assert gradcheck(Noisy.apply, (x,), nondet_tol=1e-6, check_undefined_grad=False)

    class NoneUnsafe(Function):  # given None (materialize_grads off), g * 2 raises
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(NoneUnsafe.apply, (x,))
    assert gradcheck(NoneUnsafe.apply, (x,), check_undefined_grad=False)


def test_gradcheck_batched_checks_and_gradgradcheck_keywords():
    x = leaf([0.3, -0.7, 1.1])
    assert gradcheck(lambda t: (t * t).tanh(), (x,), check_batched_grad=True,
                     check_forward_ad=True, check_batched_forward_grad=True)
    assert autograd.gradgradcheck(lambda t: (t * t).tanh(), (x,), check_fwd_over_rev=True,
                                  gen_non_contig_grad_outputs=True)


def test_a_function_with_several_outputs_through_every_transform():
    from chainrule.func import grad, hessian, jacfwd, jacrev, vmap

    class SinAndSquare(Function):  # outputs s sin(x), x^2 and a label; s needs no grad
        generate_vmap_rule = True

        @staticmethod
        def forward(ctx, x, scale, label):
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x.sin() * scale, x * x, label

        @staticmethod
        def backward(ctx, g1, g2, g_label):
            (x,) = ctx.saved_tensors
            return g1 * x.cos() * ctx.scale + g2 * 2 * x, None, None

        @staticmethod
        def jvp(ctx, t, t_scale, t_label):
            (x,) = ctx.saved_tensors
            return t * x.cos() * ctx.scale, 2 * x * t, None

    def f(x):
        s, q, label = SinAndSquare.apply(x, 2.0, "label")
        assert label == "label"
        return s + q  # 2 sin x + x^2

    a = np.array([0.3, -0.5, 1.0])
    J = np.diag(2 * np.cos(a) + 2 * a)
    np.testing.assert_allclose(jacrev(f)(cr.tensor(a)).numpy(), J)
    np.testing.assert_allclose(jacfwd(f)(cr.tensor(a)).numpy(), J)
    np.testing.assert_allclose(grad(lambda x: f(x).sum())(cr.tensor(a)).numpy(), np.diag(J))
    np.testing.assert_allclose(hessian(lambda x: f(x).sum())(cr.tensor(a)).numpy(),
                               np.diag(2 - 2 * np.sin(a)))
    np.testing.assert_allclose(vmap(f)(cr.tensor(np.stack([a, 2 * a]))).numpy(),
                               np.stack([2 * np.sin(a) + a * a, 2 * np.sin(2 * a) + 4 * a * a]))


def test_functions_under_vmap_need_a_vmap_rule():
    import chainrule.func as F

    class NumpySin(Function):  # leaves the library in forward, and has no vmap rule
        @staticmethod
        def forward(x):
            return cr.tensor(np.sin(x.detach().numpy()))

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    rules = []

    class RuledSin(NumpySin):  # its own vmap rule: NumPy's sin on the whole batch at once
        @staticmethod
        def vmap(info, in_dims, x):
            rules.append(info.batch_size)
            return RuledSin.apply(x.movedim(in_dims[0], 0)), 0

    class OpsSin(NumpySin):  # written in chainrule ops: runs on the whole batch
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin()

    X = np.random.default_rng(2).standard_normal((4, 3))
    with pytest.raises(RuntimeError, match="NumpySin: To use autograd.Function with vmap"):
        F.vmap(NumpySin.apply)(cr.tensor(X))
    with pytest.raises(RuntimeError, match="NumpySin: To use autograd.Function with vmap"):
        F.vmap(F.grad(lambda x: NumpySin.apply(x).sum()))(cr.tensor(X))
    for cls in (RuledSin, OpsSin):
        calls = []

        def loss(x, cls=cls, calls=calls):
            calls.append(1)
            return cls.apply(x).sum()

        np.testing.assert_allclose(F.vmap(cls.apply)(cr.tensor(X)).numpy(), np.sin(X))
        out = F.vmap(F.grad(loss))(cr.tensor(X))
        np.testing.assert_allclose(out.numpy(), np.cos(X))  # d sum(sin x) = cos x
        assert len(calls) == 1  # evaluated once, on the whole batch
        # the transposed batch: in_dims=1 reaches the rule as a batch dim moved first
        np.testing.assert_allclose(F.vmap(cls.apply, in_dims=1)(cr.tensor(X.T)).numpy(),
                                   np.sin(X))
    assert rules == [4, 4, 4]
    # jacrev through the rule's Function: its backward takes the batch of rows at once
    J = F.jacrev(RuledSin.apply)(cr.tensor(X[0]))
    np.testing.assert_allclose(J.numpy(), np.diag(np.cos(X[0])))


def test_a_vmap_rule_with_out_dims_and_unbatched_inputs():
    import chainrule.func as F

    class ScaledOuter(Function):  # (x, s) -> outer(x, x) * s, its rule puts the batch last
        @staticmethod
        def forward(x, s):
            return (x[:, None] * x[None, :]) * s

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not differentiated here")

        @staticmethod
        def vmap(info, in_dims, x, s):
            assert in_dims == (0, None) and s == 3.0
            out = (x[:, :, None] * x[:, None, :]) * s  # (B, n, n)
            return out.permute(1, 2, 0), 2

    X = np.arange(6.0).reshape(2, 3)
    out = F.vmap(ScaledOuter.apply, in_dims=(0, None))(cr.tensor(X), 3.0)
    np.testing.assert_allclose(out.numpy(), 3.0 * X[:, :, None] * X[:, None, :])


class _BatchableSin(Function):
    """sin written in chainrule ops, so its backward and jvp may take a whole batch."""

    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * x.cos()


@pytest.mark.parametrize("transform, fallback", [("jacrev", "_vjp_rows_one_by_one"),
                                                 ("jacfwd", "_jvp_columns_one_by_one")])
def test_jacobians_through_a_function_with_generate_vmap_rule_are_one_batched_pass(
        transform, fallback, monkeypatch):
    import chainrule.autograd.batched as AB
    from chainrule import func

    one_by_one = []
    original = getattr(AB, fallback)

    def spy(*args, **kwargs):
        one_by_one.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(AB, fallback, spy)
    a = np.array([0.1, 0.5, -1.0])
    A = np.random.default_rng(0).standard_normal((3, 3))
    J = getattr(func, transform)(lambda x: _BatchableSin.apply(cr.tensor(A) @ x))(cr.tensor(a))
    np.testing.assert_allclose(J.numpy(), np.cos(A @ a)[:, None] * A)  # diag(cos(Ax)) A
    assert one_by_one == []
