"""Differential fuzzing of the custom ``autograd.Function`` API and ``gradcheck``.

Each program is written once against a module ``T`` (``chainrule``, and ``torch`` when it is
installed) and checked against values derived by hand; where torch is installed, its answer
(value or error type) must be the same.
"""

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # pragma: no cover - torch is optional
    torch = None

MODULES = [cr] + ([torch] if torch is not None else [])
X0 = np.array([0.3, -0.7, 1.1])
T0 = np.array([0.5, 2.0, -1.5])


def vec(T, a, requires_grad=False):
    return T.tensor(np.array(a, dtype=np.float64), dtype=T.float64,
                    requires_grad=requires_grad)


def np_of(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def jvp_function(T, jvp, nout=1, nondiff=False):
    """``x -> 2x`` (and ``3x`` as a second output) with the given jvp."""

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if nout == 1:
                return x * 2
            b = x * 3
            if nondiff:
                ctx.mark_non_differentiable(b)
            return x * 2, b

        @staticmethod
        def backward(ctx, *grads):
            return grads[0] * 2 + (grads[1] * 3 if nout == 2 and not nondiff else 0)

        @staticmethod
        def jvp(ctx, t):
            return jvp(t)

    return F


def forward_tangents(T, F, x=X0, t=T0):
    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        out = F.apply(fwAD.make_dual(vec(T, x), vec(T, t)))
        outs = out if isinstance(out, tuple) else (out,)
        return [None if tan is None else np_of(tan)
                for tan in (fwAD.unpack_dual(o).tangent for o in outs)]


# --- forward mode: what jvp returns is checked and is the only tangent ----------------------


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("bad", ["sum", "first", "nout"])
def test_a_jvp_tangent_of_the_wrong_shape_or_count_raises(T, bad):
    # before: the tangent was kept with the wrong shape ([] or [1] for a [3] output), or a
    # lone tangent for two outputs was split along its rows: silently wrong tangents
    if bad == "nout":
        F = jvp_function(T, lambda t: t * 2, nout=2)
    else:
        F = jvp_function(T, (lambda t: t.sum()) if bad == "sum" else (lambda t: t[:1] * 2))
    with pytest.raises(RuntimeError):
        forward_tangents(T, F)


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_a_jvp_returning_too_many_tangents_raises(T):
    F = jvp_function(T, lambda t: (t * 2, t * 3, t), nout=2)
    with pytest.raises(RuntimeError, match="number of forward gradients"):
        forward_tangents(T, F)


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_a_one_tuple_from_jvp_for_one_output_is_its_tangent(T):
    # before: the tangent kept the tuple's extra dim, shape (1, 3)
    (tangent,) = forward_tangents(T, jvp_function(T, lambda t: (t * 2,)))
    assert tangent.shape == (3,)
    np.testing.assert_allclose(tangent, 2 * T0)


def test_an_output_whose_jvp_tangent_is_none_has_no_tangent():
    # before: forward ran with forward mode on, and the tangent its own ops computed (3t)
    # stood for the None jvp returned
    F = jvp_function(cr, lambda t: (t * 2, None), nout=2)
    t1, t2 = forward_tangents(cr, F)
    np.testing.assert_allclose(t1, 2 * T0)
    assert t2 is None


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_a_jvp_tangent_for_a_non_differentiable_output_raises(T):
    # before: the non-differentiable output silently got a tangent
    F = jvp_function(T, lambda t: (t * 2, t * 3), nout=2, nondiff=True)
    with pytest.raises(RuntimeError, match="not a differentiable"):
        forward_tangents(T, F)


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_an_in_place_function_in_forward_mode_takes_the_jvp_tangent_once(T):
    # x *= 2 in place: the tangent is 2t. Before: 4t (forward's mul_ doubled the dual's
    # tangent, then jvp's doubled it again)
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            t.mul_(2)
            return t

    fwAD = T.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(vec(T, X0), vec(T, T0))
        y = Double.apply(d)
        assert y is d
        np.testing.assert_allclose(np_of(fwAD.unpack_dual(y).tangent), 2 * T0)
        np.testing.assert_allclose(np_of(fwAD.unpack_dual(y).primal), 2 * X0)


def test_an_input_returned_as_is_keeps_its_own_tangent():
    # before: jvp's tangent for the output was written onto the input too (they were one
    # tensor); PyTorch refuses this Function (its jvp must return a view), so no comparison
    class Identity(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    fwAD = cr.autograd.forward_ad
    with fwAD.dual_level():
        d = fwAD.make_dual(vec(cr, X0), vec(cr, T0))
        y = Identity.apply(d)
        np.testing.assert_allclose(np_of(fwAD.unpack_dual(y).tangent), 2 * T0)
        np.testing.assert_allclose(np_of(fwAD.unpack_dual(d).tangent), T0)


# --- mark_dirty -------------------------------------------------------------------------


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("how", ["data", "nothing"])
def test_mark_dirty_bumps_the_version_so_stale_saved_values_raise(T, how):
    # forward changes x through .data (or claims to): sin saved x before, so its backward
    # would use the new value (before: cos(2 x) silently instead of an error)
    class Double(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if how == "data":
                x.data.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = vec(T, X0, requires_grad=True)
    y = x * 1
    z = y.sin()
    version = y._version
    Double.apply(y)
    assert y._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_a_dirty_tensor_saved_by_forward_is_saved_as_its_output(T):
    # exp_ in place, the result saved: d/dx sum(exp(x)) = exp(x), second derivative too;
    # the version mark_dirty adds must not make the saved output look stale. Before, a
    # value saved from the input (by sin) was used after the Function changed it: its
    # backward silently gave cos(exp(x)) exp(x) for cos(x)
    class ExpInPlace(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.data.exp_()
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (r,) = ctx.saved_tensors
            return g * r

    x = vec(T, X0, requires_grad=True)
    y = x * 1
    z = y.sin()
    ExpInPlace.apply(y)
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(np_of(g), np.exp(X0))
    (gg,) = T.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(np_of(gg), np.exp(X0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        T.autograd.grad(z.sum(), x)


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_a_dirty_input_that_is_not_returned_raises(T):
    # before: a's in-place change was invisible to autograd, x.grad silently 1 instead of 2
    class ScaleFirst(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.mul_(2)
            ctx.mark_dirty(a)
            return b * 2

        @staticmethod
        def backward(ctx, g):
            return None, g * 2

    x = vec(T, X0, requires_grad=True)
    with pytest.raises(RuntimeError, match="marked as dirty"):
        ScaleFirst.apply(x * 1, vec(T, T0, requires_grad=True))


# --- gradcheck --------------------------------------------------------------------------


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_fails_a_function_whose_outputs_lost_their_gradient(T, fast_mode):
    # before: no output required grad, so nothing was compared and gradcheck passed
    x = vec(T, X0, requires_grad=True)
    assert T.autograd.gradcheck(lambda a: a.detach() * 2, (x,), fast_mode=fast_mode,
                                raise_exception=False) is False
    with pytest.raises(RuntimeError):  # GradcheckError is a RuntimeError in both
        T.autograd.gradcheck(lambda a: a.detach() * 2, (x,), fast_mode=fast_mode)
    # a function that is constant near x passes, as it should
    assert T.autograd.gradcheck(lambda a: (a.detach() > 100).double(), (x,),
                                fast_mode=fast_mode) is True


def test_gradcheck_says_why_outputs_without_gradient_fail():
    x = vec(cr, X0, requires_grad=True)
    with pytest.raises(cr.autograd.GradcheckError, match="no output requires grad"):
        cr.autograd.gradcheck(lambda a: a.detach() * 2, (x,))


# --- grad_fn of a custom Function is its ctx ----------------------------------------------


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_grad_fn_reads_the_ctx_and_is_named_after_the_function(T):
    class Scale(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, k):
            ctx.k = k
            ctx.save_for_backward(a)
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    a = vec(T, X0, requires_grad=True)
    y = Scale.apply(a, 3.0)
    node = y.grad_fn
    assert type(node).__name__ == "ScaleBackward"
    assert node.k == 3.0
    assert node.needs_input_grad == (True, False)
    np.testing.assert_allclose(np_of(node.saved_tensors[0]), X0)
    with pytest.raises(AttributeError):
        node.not_set_on_ctx  # noqa: B018
    y.sum().backward()
    np.testing.assert_allclose(np_of(a.grad), [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError):  # freed by the backward
        node.saved_tensors  # noqa: B018


@pytest.mark.parametrize("T", MODULES, ids=lambda m: m.__name__)
def test_gradcheck_fast_mode_fails_a_backward_not_linear_in_its_grad_output(T):
    # backward 3 x^2 g^2: right for the one-hot cotangents of the full check, wrong for any
    # other. Before: the fast projection failed, the full check passed, gradcheck returned
    # True with a warning
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g * g

    x = vec(T, X0, requires_grad=True)
    assert T.autograd.gradcheck(Cube.apply, (x,), fast_mode=True, raise_exception=False) is False
    with pytest.raises(RuntimeError, match="linear in its grad_output" if T is cr else ""):
        T.autograd.gradcheck(Cube.apply, (x,), fast_mode=True)


class _ViewOfInput(cr.autograd.Function):
    """Returns a view of its input; its backward deliberately scales by 10."""

    @staticmethod
    def forward(ctx, x):
        return x.view(-1)[:2]

    @staticmethod
    def backward(ctx, g):
        out = cr.zeros(3, dtype=g.dtype)
        out[:2] = 10 * g
        return out


def test_a_custom_function_view_of_an_input_refuses_in_place_changes_as_pytorch():
    # the view's history is the custom backward: replaying view ops on its changed base
    # would silently skip it (the gradient was [2, 2, 0] instead of an error)
    x = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = _ViewOfInput.apply(x * 1)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0, 0.0])
    a = x * 1
    y = _ViewOfInput.apply(a)
    a.mul_(2)
    with pytest.raises(RuntimeError, match="base or another view of its base has been "
                                           "modified inplace"):
        y.sum()
    y = _ViewOfInput.apply(x * 1)
    with pytest.raises(RuntimeError, match="is being modified inplace"):
        y.mul_(2)
    # an input returned as it is counts too; a fresh output does not
    Same = type("Same", (cr.autograd.Function,), {
        "forward": staticmethod(lambda ctx, t: t),
        "backward": staticmethod(lambda ctx, g: 3 * g)})
    a = x * 1
    z = Same.apply(a)
    with cr.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="custom Function"):
        z.sum().backward()
    z = Same.apply(x * 1)
    z.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [13.0, 13.0, 3.0])
    if torch is not None:
        class TV(torch.autograd.Function):
            @staticmethod
            def forward(ctx, t):
                return t.view(-1)[:2]

            @staticmethod
            def backward(ctx, g):
                return torch.cat([10 * g, g.new_zeros(1)])
        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        ta = tx * 1
        ty = TV.apply(ta)
        ta.mul_(2)
        with pytest.raises(RuntimeError, match="base or another view of its base"):
            ty.sum()


class _CubeNoJvp(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


def test_functional_hessian_and_hvp_use_double_backward_as_pytorch():
    # autograd.functional.hessian's default outer_jacobian_strategy is "reverse-mode", and
    # hvp / vhp use double backward: a Function without jvp works (H = diag(6x))
    f = lambda x: _CubeNoJvp.apply(x).sum()  # noqa: E731
    x = cr.tensor([1.0, 2.0])
    np.testing.assert_array_equal(cr.autograd.functional.hessian(f, x).numpy(),
                                  np.diag([6.0, 12.0]))
    v = cr.tensor([1.0, -1.0])
    np.testing.assert_array_equal(cr.autograd.functional.hvp(f, x, v)[1].numpy(), [6.0, -12.0])
    np.testing.assert_array_equal(cr.autograd.functional.vhp(f, x, v)[1].numpy(), [6.0, -12.0])
    # forward-mode outer Jacobian needs the jvp (a plain function: the same Hessian)
    h = cr.autograd.functional.hessian(lambda t: (t ** 3).sum(), x,
                                       outer_jacobian_strategy="forward-mode", vectorize=True)
    np.testing.assert_array_equal(h.numpy(), np.diag([6.0, 12.0]))
