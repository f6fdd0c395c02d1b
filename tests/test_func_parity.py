"""Regression tests for the differences a differential fuzzer of ``chainrule.func`` and
``chainrule.autograd.functional`` against ``torch.func`` found. Each test asserts a value
derived without torch (a hand-derived derivative, central differences, an invariant);
where torch is importable the same call is compared with it too."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import chainrule as cr
from chainrule import _creation
from chainrule import func as F
from chainrule.autograd import forward_ad as fwAD
from chainrule.autograd import functional as AF

try:
    import torch
    import torch.autograd.functional as TAF
except ImportError:  # the tests' own assertions do not need it
    torch = TAF = None

RNG = np.random.default_rng(11)


def T(a, requires_grad=False):
    return cr.tensor(np.asarray(a, dtype=float), requires_grad=requires_grad)


def central_jacobian(f, x, eps=1e-6):
    """d f / d x by central differences, for f: array -> array."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        e = e.reshape(x.shape)
        cols.append(((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps)).reshape(-1))
    out = np.asarray(f(x))
    return np.stack(cols, -1).reshape(out.shape + x.shape)


# --- forward-mode state shared by threads ------------------------------------------------


def test_another_threads_last_dual_level_keeps_this_threads_node_tangents():
    """Forward-over-reverse reads the tangents recorded on the graph's nodes while the
    level is active; another thread leaving its own last level must not drop them (the
    Hessian-vector product then silently lost terms)."""
    x0, v0 = RNG.standard_normal(4), RNG.standard_normal(4)
    # f(x) = sum(sin(x) * x^2): grad = cos(x) x^2 + 2 x sin(x), H = diag(h),
    # h = -sin(x) x^2 + 4 x cos(x) + 2 sin(x)
    h = -np.sin(x0) * x0 ** 2 + 4 * x0 * np.cos(x0) + 2 * np.sin(x0)
    with fwAD.dual_level():
        x = fwAD.make_dual(T(x0, requires_grad=True), T(v0))
        y = (cr.sin(x) * x * x).sum()  # nodes recorded with their tangents

        def other():
            F.jvp(lambda a: a.sin() * 2, (T(x0),), (T(v0),))  # enters and leaves a level

        t = threading.Thread(target=other)
        t.start()
        t.join()
        (g,) = cr.autograd.grad(y, x, create_graph=True)
        hv = fwAD.unpack_dual(g).tangent
    assert hv is not None
    np.testing.assert_allclose(hv.detach().numpy(), h * v0, rtol=1e-10, atol=1e-12)


def test_hessians_in_threads_beside_jvps_are_right():
    """The same race through the transforms: jacfwd(jacrev(f)) in one thread while another
    thread runs jvp after jvp; each Hessian equals the central differences of the
    gradient."""
    a = RNG.standard_normal((4, 4))

    def f(x):
        return (cr.tanh(T(a) @ x) * x).sum() + (x ** 3).sum()

    def grad_np(x):
        return F.grad(f)(T(x)).numpy()

    x0 = RNG.standard_normal(4)
    expected = central_jacobian(grad_np, x0)
    stop = threading.Event()

    def noise():
        while not stop.is_set():
            F.jvp(lambda z: z.sin() * 2, (T(x0),), (T(x0),))

    t = threading.Thread(target=noise)
    t.start()
    try:
        results = [F.hessian(f)(T(x0)).numpy() for _ in range(25)]
    finally:
        stop.set()
        t.join()
    for H in results:
        np.testing.assert_allclose(H, expected, rtol=1e-6, atol=1e-6)


# --- vmap's randomness="error" and other threads ------------------------------------------


def test_vmap_randomness_error_is_per_thread_and_restores_the_generator():
    """While a vmap (randomness="error") runs in one thread, another thread may draw
    random numbers; and two vmaps of two threads overlapping (entered A, B; left A, B)
    leave the real generator in place (it was left as the raising stand-in)."""
    real = _creation.default_generator
    x = T(RNG.standard_normal((3, 2)))
    a_inside, b_inside, a_may_leave, b_may_leave = (threading.Event() for _ in range(4))
    seen = {}

    def in_a(row):
        a_inside.set()
        a_may_leave.wait(10)
        return row * 2

    def in_b(row):
        b_inside.set()
        b_may_leave.wait(10)
        with pytest.raises(RuntimeError, match="randomness error mode"):
            cr.randn(2)  # this thread is inside vmap(randomness="error")
        return row + 1

    def run_a():
        seen["a"] = F.vmap(in_a)(x).numpy()

    def run_b():
        seen["b"] = F.vmap(in_b)(x).numpy()

    ta = threading.Thread(target=run_a)
    ta.start()
    assert a_inside.wait(10)
    drawn = cr.randn(5)  # this thread is not inside any vmap
    assert tuple(drawn.shape) == (5,)
    tb = threading.Thread(target=run_b)
    tb.start()
    assert b_inside.wait(10)
    a_may_leave.set()  # A leaves first, while B is still inside
    ta.join(10)
    b_may_leave.set()
    tb.join(10)
    np.testing.assert_allclose(seen["a"], x.numpy() * 2)
    np.testing.assert_allclose(seen["b"], x.numpy() + 1)
    assert _creation.default_generator is real
    assert tuple(cr.randn(3).shape) == (3,)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda r: r + cr.randn(2))(x)
    assert _creation.default_generator is real


# --- autograd.functional strict mode ------------------------------------------------------


def _two_outputs(m):
    def f(x, y):
        return m.tanh(y @ x) * x, m.sin(y).sum(0)  # output 1 does not depend on x
    return f


def test_jacobian_strict_raises_for_an_output_independent_of_one_input():
    x0, y0 = RNG.standard_normal(3), RNG.standard_normal((3, 3))
    f = _two_outputs(cr)
    # not strict: the block of output 1 by x is zero, the others match central differences
    J = AF.jacobian(f, (T(x0), T(y0)))
    np.testing.assert_array_equal(J[1][0].numpy(), np.zeros((3, 3)))
    expected = central_jacobian(lambda y: np.sin(y).sum(0), y0)
    np.testing.assert_allclose(J[1][1].numpy(), expected, atol=1e-7)
    expected = central_jacobian(lambda x: np.tanh(y0 @ x) * x, x0)
    np.testing.assert_allclose(J[0][0].numpy(), expected, atol=1e-7)
    for create_graph in (False, True):
        with pytest.raises(RuntimeError, match="Output 1 of the user-provided function is "
                                               "independent of input 0"):
            AF.jacobian(f, (T(x0), T(y0)), strict=True, create_graph=create_graph)
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not "
                                           "supported together"):
        AF.jacobian(f, (T(x0), T(y0)), strict=True, vectorize=True)
    with pytest.raises(RuntimeError, match='`strict=True` and `strategy="forward-mode"`'):
        AF.jacobian(f, (T(x0), T(y0)), strict=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="`create_graph=True` and"):
        AF.jacobian(f, (T(x0), T(y0)), create_graph=True, strategy="forward-mode")
    # with create_graph, a block that does not depend on the inputs (a linear map) raises
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0"):
        AF.jacobian(lambda x: x * 2, T(x0), strict=True, create_graph=True)
    J = AF.jacobian(lambda x: x * 2, T(x0), strict=True)
    np.testing.assert_array_equal(J.numpy(), 2 * np.eye(3))
    if torch is not None:
        tf = _two_outputs(torch)
        tx, ty = torch.tensor(x0), torch.tensor(y0)
        with pytest.raises(RuntimeError, match="independent of input 0"):
            TAF.jacobian(tf, (tx, ty), strict=True)
        with pytest.raises(RuntimeError, match="not supported together"):
            TAF.jacobian(tf, (tx, ty), strict=True, vectorize=True)
        tj = TAF.jacobian(tf, (tx, ty))
        for a, b in zip(AF.jacobian(f, (T(x0), T(y0))), tj):
            for u, v in zip(a, b):
                np.testing.assert_allclose(u.numpy(), v.numpy(), atol=1e-12)


def test_hessian_strict_raises_for_a_gradient_independent_of_the_inputs():
    x0 = RNG.standard_normal(3)
    # linear: the gradient does not depend on x
    assert np.array_equal(AF.hessian(lambda x: (x * 2).sum(), T(x0)).numpy(), np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        AF.hessian(lambda x: (x * 2).sum(), T(x0), strict=True)
    # separable in (x, y): the off-diagonal blocks are zero, which strict mode refuses
    y0 = RNG.standard_normal(3)

    def sep(x, y):
        return (x ** 3).sum() + (y.sin()).sum()

    H = AF.hessian(sep, (T(x0), T(y0)))
    np.testing.assert_allclose(H[0][0].numpy(), np.diag(6 * x0), atol=1e-12)
    np.testing.assert_allclose(H[1][1].numpy(), np.diag(-np.sin(y0)), atol=1e-12)
    np.testing.assert_array_equal(H[0][1].numpy(), np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        AF.hessian(sep, (T(x0), T(y0)), strict=True)
    with pytest.raises(RuntimeError, match="not supported together"):
        AF.hessian(lambda x: (x ** 3).sum(), T(x0), strict=True, vectorize=True)
    # strict and coupled: the Hessian itself
    H = AF.hessian(lambda x: (x ** 3).sum() * x.sum(), T(x0), strict=True)
    s, c = x0.sum(), x0 ** 2
    expected = np.diag(6 * x0 * s) + 3 * c[:, None] + 3 * c[None, :]
    np.testing.assert_allclose(H.numpy(), expected, atol=1e-10)
    if torch is not None:
        tx, ty = torch.tensor(x0), torch.tensor(y0)
        with pytest.raises(RuntimeError, match="independent of the input"):
            TAF.hessian(lambda x: (x * 2).sum(), tx, strict=True)
        with pytest.raises(RuntimeError, match="independent of input 1"):
            TAF.hessian(lambda x, y: (x ** 3).sum() + y.sin().sum(), (tx, ty), strict=True)
        th = TAF.hessian(lambda x: (x ** 3).sum() * x.sum(), tx, strict=True)
        np.testing.assert_allclose(H.numpy(), th.numpy(), atol=1e-10)


# --- custom Functions inside jacfwd -------------------------------------------------------


class _SortWithIndex(cr.autograd.Function):
    """(sorted x, argmax x): the index output is not differentiable; the jvp gathers the
    tangent with the permutation it saved for forward mode."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.sort(-1).values, x.argmax(-1)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.mark_non_differentiable(output[1])
        perm = x.sort(-1).indices
        ctx.save_for_backward(perm)
        ctx.save_for_forward(perm)

    @staticmethod
    def backward(ctx, g, _):
        (perm,) = ctx.saved_tensors
        return cr.zeros_like(g).scatter(-1, perm, g)

    @staticmethod
    def jvp(ctx, t):
        (perm,) = ctx.saved_tensors
        return t.gather(-1, perm), None


def test_jacfwd_through_a_custom_jvp_that_gathers_with_a_saved_index():
    """jacfwd hands the custom jvp the whole batch of one-hot tangents; gathering it with a
    saved index tensor raised TypeError ('DiagBatched' object has no attribute 'device')
    instead of giving the permutation matrix."""
    x0 = np.array([0.3, -1.2, 2.0, 0.1])
    perm = np.argsort(x0)
    expected = np.eye(4)[perm]  # d sort(x)_i / d x_j = [j == perm_i]
    J = F.jacfwd(lambda x: _SortWithIndex.apply(x)[0])(T(x0))
    np.testing.assert_array_equal(J.numpy(), expected)
    np.testing.assert_array_equal(F.jacrev(lambda x: _SortWithIndex.apply(x)[0])(T(x0)).numpy(),
                                  expected)
    xs = RNG.standard_normal((3, 4))
    Jb = F.vmap(F.jacfwd(lambda x: _SortWithIndex.apply(x)[0]))(T(xs)).numpy()
    for b in range(3):  # vmap equals the per-sample loop
        np.testing.assert_array_equal(Jb[b], np.eye(4)[np.argsort(xs[b])])
    if torch is not None:
        class TSort(torch.autograd.Function):
            generate_vmap_rule = True

            @staticmethod
            def forward(x):
                return x.sort(-1).values, x.argmax(-1)

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.mark_non_differentiable(output[1])
                ctx.save_for_forward(inputs[0].sort(-1).indices)

            @staticmethod
            def backward(ctx, g, _):
                raise AssertionError("not used by jacfwd")

            @staticmethod
            def jvp(ctx, t):
                (p,) = ctx.saved_tensors
                return t.gather(-1, p), None

        tj = torch.func.jacfwd(lambda x: TSort.apply(x)[0])(torch.tensor(x0))
        np.testing.assert_array_equal(J.numpy(), tj.numpy())


# --- argnums and inputs that cannot be differentiated -------------------------------------


def test_argnums_and_integer_inputs_raise_as_torch_func():
    """A repeated or empty argnums, a list or a float, and an integer input to a reverse
    transform raise RuntimeError (before, a repeated argnum gave the gradient twice, an
    empty one returned (), and an integer input got an integer 'gradient')."""
    x, y = T([1.0, 2.0, 3.0]), T([0.5, -1.0, 2.0])

    def f(a, b):
        return (a * b * b).sum()

    np.testing.assert_allclose(F.grad(f, argnums=(0, 1))(x, y)[1].numpy(),
                               2 * x.numpy() * y.numpy())  # d/db sum(a b^2) = 2 a b
    np.testing.assert_allclose(F.grad(f, argnums=-1)(x, y).numpy(), 2 * x.numpy() * y.numpy())
    for argnums, message in (((0, 0), "argnums elements must be unique"),
                             ((1, -1), "argnums elements must be unique"),
                             ((), "argnums must be non-empty"),
                             ([0], "argnums must be int or Tuple"),
                             (0.0, "argnums must be int or Tuple"),
                             (2, "Got argnum=2, but only 2 positional inputs")):
        for transform in (F.grad, F.jacrev, F.jacfwd, F.hessian):
            with pytest.raises(RuntimeError, match=message):
                transform(f, argnums=argnums)(x, y)
    ints = cr.tensor(np.array([1, 2, 3]))
    for transform in (F.grad, F.jacrev, F.jacfwd):
        with pytest.raises(RuntimeError, match="floating point"):
            transform(lambda a: (a * 2).sum())(ints)
    with pytest.raises(RuntimeError, match="floating point"):
        F.vjp(lambda a: a * 2, ints)
    if torch is not None:
        tf = torch.func
        for argnums in ((0, 0), (), [0]):
            with pytest.raises(RuntimeError):
                tf.grad(lambda a, b: (a * b).sum(), argnums=argnums)(torch.ones(2),
                                                                       torch.ones(2))
        with pytest.raises(RuntimeError):
            tf.grad(lambda a: (a * 2).sum())(torch.tensor([1, 2, 3]))


def test_unknown_randomness_raises_runtime_error_and_known_ones_work():
    x = T(RNG.standard_normal((3, 2)))
    for transform in (lambda: F.vmap(lambda r: r, randomness="bad"),
                      lambda: F.jacfwd(lambda r: r, randomness="bad")):
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            transform()(x)
    cr.manual_seed(0)
    same = F.vmap(lambda r: r * 0 + cr.rand(2), randomness="same")(x).numpy()
    np.testing.assert_array_equal(same, np.broadcast_to(same[0], same.shape))
    different = F.vmap(lambda r: r * 0 + cr.rand(2), randomness="different")(x).numpy()
    assert not np.array_equal(different[0], different[1])
    if torch is not None:
        with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
            torch.func.vmap(lambda r: r, randomness="bad")(torch.ones(3, 2))


def test_jacrev_of_a_constant_output_has_the_inputs_dtype():
    """The Jacobian of an output that does not depend on the input is zero, in the input's
    dtype as every other jacrev block (it came back float64 for a float32 input)."""
    x = cr.ones(3, dtype=cr.float32)
    c = cr.ones(2, dtype=cr.float32)
    for J in (F.jacrev(lambda z: c * 2)(x), AF.jacobian(lambda z: c * 2, x)):
        assert J.dtype == cr.float32
        assert tuple(J.shape) == (2, 3)
        np.testing.assert_array_equal(J.numpy(), np.zeros((2, 3), np.float32))
    live = F.jacrev(lambda z: z * 2)(x)  # the same dtype as a block that depends on x
    assert live.dtype == cr.float32
    np.testing.assert_array_equal(live.numpy(), 2 * np.eye(3, dtype=np.float32))
    if torch is not None:
        tc = torch.ones(2, dtype=torch.float32)
        assert torch.func.jacrev(lambda z: tc * 2)(torch.ones(3)).dtype == torch.float32


# --- transforms called under no_grad ------------------------------------------------------


def test_transforms_under_no_grad_compute_derivatives_but_are_not_tracked():
    """Under ``no_grad`` a transform still differentiates ``func`` (it is a function
    transform), but its result is a constant for the outer graph even when the input or a
    closed-over tensor requires grad (before, the result required grad and kept a graph)."""
    x0, w0 = np.array([0.5, 1.5, -2.0]), np.array([0.3, -0.7, 1.1])
    x, w = T(x0, requires_grad=True), T(w0, requires_grad=True)

    def f(z):
        return (cr.tanh(z * w) ** 2).sum()

    # d/dz sum(tanh(w z)^2) = 2 tanh(w z) (1 - tanh(w z)^2) w
    th = np.tanh(w0 * x0)
    expected = 2 * th * (1 - th ** 2) * w0
    with cr.no_grad():
        results = {
            "grad": F.grad(f)(x),
            "vjp": F.vjp(lambda z: cr.sin(z * w), x)[1](cr.ones(3))[0],
            "jacrev": F.jacrev(lambda z: cr.sin(z * w))(x),
            "jacfwd": F.jacfwd(lambda z: cr.sin(z * w))(x),
            "jvp": F.jvp(lambda z: cr.sin(z * w), (x,), (cr.ones(3),))[1],
            "hvp": F.jvp(F.grad(f), (x,), (cr.ones(3),))[1],
            "hessian": F.hessian(f)(x),
        }
    np.testing.assert_allclose(results["grad"].numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(results["vjp"].numpy(), np.cos(w0 * x0) * w0, rtol=1e-12)
    np.testing.assert_allclose(results["jvp"].numpy(), np.cos(w0 * x0) * w0, rtol=1e-12)
    np.testing.assert_allclose(results["jacrev"].numpy(), np.diag(np.cos(w0 * x0) * w0))
    np.testing.assert_allclose(results["jacfwd"].numpy(), np.diag(np.cos(w0 * x0) * w0))
    hess = central_jacobian(lambda z: F.grad(f)(T(z)).detach().numpy(), x0)
    np.testing.assert_allclose(results["hessian"].numpy(), hess, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(results["hvp"].numpy(), hess.sum(1), rtol=1e-6, atol=1e-8)
    for name, r in results.items():
        assert not r.requires_grad, name
    # with grad mode on, the same results stay connected (gradient penalty style)
    g = F.grad(f)(x)
    assert g.requires_grad
    if torch is not None:
        tx = torch.tensor(x0, requires_grad=True)
        tw = torch.tensor(w0, requires_grad=True)
        with torch.no_grad():
            tg = torch.func.grad(lambda z: (torch.tanh(z * tw) ** 2).sum())(tx)
        assert not tg.requires_grad
        np.testing.assert_allclose(tg.numpy(), expected, rtol=1e-12)


# --- has_aux outputs ----------------------------------------------------------------------


def test_aux_keeps_the_graph_to_closed_over_parameters_and_drops_inner_work():
    """An aux output that depends on a closed-over parameter (and not the outputs) keeps
    its graph to that parameter, so an outer backward reaches it (it was detached, and the
    backward raised); an aux computed from a nested transform's inner work comes back
    without that graph (it required grad)."""
    x0 = np.array([0.5, 1.0, -1.0])
    for name in ("jacfwd", "jacrev", "grad", "vjp", "jvp"):
        w = T([1.0, 2.0, 3.0], requires_grad=True)

        def g(z, w=w):
            return z.sin().sum(), (w * z.detach() * 2).sum()

        x = T(x0)
        if name in ("jacfwd", "jacrev"):
            _, aux = getattr(F, name)(g, has_aux=True)(x)
        elif name == "grad":
            _, aux = F.grad(g, has_aux=True)(x)
        elif name == "vjp":
            _, _, aux = F.vjp(g, x, has_aux=True)
        else:
            _, _, aux = F.jvp(g, (x,), (cr.ones(3),), has_aux=True)
        assert aux.requires_grad, name
        aux.backward()
        np.testing.assert_allclose(w.grad.numpy(), 2 * x0, err_msg=name)  # d/dw sum(2 w x)

    def f(z):
        return (z.sin() ** 3).sum()

    x = T(x0)
    jac, aux = F.jacfwd(lambda z: (F.grad(f)(z), F.grad(f)(z) * 2), has_aux=True)(x)
    _, _, aux2 = F.jvp(lambda z: (F.grad(f)(z), F.grad(f)(z) * 2), (x,), (cr.ones(3),),
                       has_aux=True)
    grad = 3 * np.sin(x0) ** 2 * np.cos(x0)
    for a in (aux, aux2):
        assert not a.requires_grad
        np.testing.assert_allclose(a.numpy(), 2 * grad, rtol=1e-12)
    hess = 6 * np.sin(x0) * np.cos(x0) ** 2 - 3 * np.sin(x0) ** 3
    np.testing.assert_allclose(jac.numpy(), np.diag(hess), rtol=1e-10, atol=1e-12)
    if torch is not None:
        tw = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
        _, ta = torch.func.jacrev(lambda z: (z.sin().sum(), (tw * z.detach() * 2).sum()),
                                  has_aux=True)(torch.tensor(x0))
        ta.backward()
        np.testing.assert_allclose(tw.grad.numpy(), 2 * x0)


def test_recorded_jacobian_block_of_an_independent_output_has_no_graph():
    """With create_graph, the Jacobian block of an output that does not depend on an input
    is zeros without a graph (it required grad: its rows came from a backward through every
    output with zero seeds); the other blocks match central differences and stay
    differentiable."""
    x0, y0 = RNG.standard_normal(3), RNG.standard_normal((3, 3))

    def f(x, y):
        return cr.tanh(y @ x) * x, cr.sin(y).sum(0)

    J = AF.jacobian(f, (T(x0, requires_grad=True), T(y0)), create_graph=True)
    assert not J[1][0].requires_grad
    np.testing.assert_array_equal(J[1][0].numpy(), np.zeros((3, 3)))
    assert J[0][0].requires_grad and J[0][1].requires_grad and J[1][1].requires_grad
    expected = central_jacobian(lambda x: np.tanh(y0 @ x) * x, x0)
    np.testing.assert_allclose(J[0][0].detach().numpy(), expected, atol=1e-7)
    np.testing.assert_allclose(J[1][1].detach().numpy(),
                               central_jacobian(lambda y: np.sin(y).sum(0), y0), atol=1e-7)
    if torch is not None:
        tj = TAF.jacobian(_two_outputs(torch), (torch.tensor(x0, requires_grad=True),
                                                torch.tensor(y0)), create_graph=True)
        assert not tj[1][0].requires_grad
        for a, b in zip(J, tj):
            for u, v in zip(a, b):
                np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(),
                                           atol=1e-12)
