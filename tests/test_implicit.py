"""Implicit differentiation of roots and fixed points (``chainrule.autograd.implicit``).

Expected gradients come from the implicit function theorem written out by hand (closed
forms for elementwise and linear problems), from differentiating an unrolled solver
written in chainrule ops, and from gradcheck's central differences with a SciPy re-solve
at every perturbed parameter.
"""

import importlib.util
import pathlib

import numpy as np
import pytest
import scipy.optimize

import chainrule as cr
from chainrule import autograd
from chainrule.autograd.implicit import custom_root, fixed_point, root


def leaf(a):
    return cr.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def arr(t):
    return np.asarray(t.detach() if isinstance(t, cr.Tensor) else t)


# --- problem 1: x = tanh(W x + b), a coupled nonlinear system (||W||_2 < 1: contraction) --


RNG = np.random.default_rng(7)
N = 4
W0 = RNG.standard_normal((N, N))
W0 *= 0.6 / np.linalg.norm(W0, 2)
B0 = RNG.standard_normal(N)
C0 = RNG.standard_normal(N)  # loss L = sum(C0 * x)


def F_tanh(x, W, b):
    return x - cr.tanh(W @ x + b)


def T_tanh(x, W, b):
    return cr.tanh(W @ x + b)


def scipy_tanh(W, b):
    W, b = arr(W), arr(b)
    def fun(x):
        return x - np.tanh(W @ x + b)

    sol = scipy.optimize.root(fun, np.zeros(len(b)), tol=1e-14)
    assert np.abs(fun(sol.x)).max() < 1e-13  # hybr may report "xtol too small" at a root
    return sol.x


def unrolled_tanh(W, b, iters=80):
    x = cr.zeros(len(b), dtype=cr.float64)
    for _ in range(iters):  # contraction factor <= 0.6: 0.6**80 ~ 1e-18
        x = cr.tanh(W @ x + b)
    return x


def ift_tanh_grads(W, b, c):
    """The implicit function theorem by hand: with D = diag(1 - tanh^2(W x + b)),
    dF/dx = I - D W, dF/db = -D, dF/dW_ij = -D_i x_j e_i."""
    x = scipy_tanh(W, b)
    d = 1 - np.tanh(W @ x + b) ** 2
    lam = np.linalg.solve((np.eye(len(b)) - d[:, None] * W).T, c)
    return np.outer(d * lam, x), d * lam


def test_root_of_scipy_solution_matches_hand_derived_and_unrolled_gradients():
    W, b = leaf(W0), leaf(B0)
    x = root(F_tanh, scipy_tanh(W0, B0), W, b)
    assert x.grad_fn.name() == "ImplicitRootBackward"
    np.testing.assert_allclose(arr(x), scipy_tanh(W0, B0))
    (x * cr.tensor(C0)).sum().backward()

    gW, gb = ift_tanh_grads(W0, B0, C0)
    np.testing.assert_allclose(arr(W.grad), gW, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(arr(b.grad), gb, rtol=1e-10, atol=1e-12)

    W2, b2 = leaf(W0), leaf(B0)
    xu = unrolled_tanh(W2, b2)
    np.testing.assert_allclose(arr(xu), arr(x), atol=1e-12)
    (xu * cr.tensor(C0)).sum().backward()
    np.testing.assert_allclose(arr(W.grad), arr(W2.grad), atol=1e-6)
    np.testing.assert_allclose(arr(b.grad), arr(b2.grad), atol=1e-6)


@pytest.mark.parametrize("solve", ["dense", "gmres"])
def test_gradcheck_with_scipy_resolve(solve):
    def fn(W, b):
        return root(F_tanh, scipy_tanh(W, b), W, b, solve=solve, tol=1e-12)

    assert autograd.gradcheck(fn, (leaf(W0), leaf(B0)))


def test_gradcheck_detects_a_wrong_residual():
    # The declared residual (b doubled) is not the equation the solver solves, so its
    # implicit gradient belongs to another problem: gradcheck's SciPy re-solves notice.
    def fn(b):
        x = scipy_tanh(W0, b)
        return root(lambda x, b: x - cr.tanh(cr.tensor(W0) @ x + 2 * b), x, b,
                    residual_tol=None)

    with pytest.raises(autograd.GradcheckError):
        autograd.gradcheck(fn, (leaf(B0),))


# --- problem 2: x + a x^3 = y elementwise; Newton unrolled in chainrule ops ----------------


Y0 = np.array([-2.0, -0.3, 0.0, 0.7, 3.0])
A0 = 0.8


def F_cubic(x, a, y):
    return x + a * x * x * x - y


def scipy_cubic(a, y):
    a, y = float(arr(a)), arr(y)
    def fun(x):
        return x + a * x**3 - y

    sol = scipy.optimize.root(fun, y.copy(), tol=1e-14)
    assert np.abs(fun(sol.x)).max() < 1e-13
    return sol.x


def test_elementwise_root_matches_closed_form_and_unrolled_newton():
    a, y = leaf(A0), leaf(Y0)
    x = root(F_cubic, scipy_cubic(A0, Y0), a, y)
    x.sum().backward()
    xs = scipy_cubic(A0, Y0)
    denom = 1 + 3 * A0 * xs**2  # dF/dx, diagonal
    np.testing.assert_allclose(arr(y.grad), 1 / denom, rtol=1e-12)  # dx/dy = 1 / F_x
    np.testing.assert_allclose(arr(a.grad), np.sum(-(xs**3) / denom), rtol=1e-12)

    a2, y2 = leaf(A0), leaf(Y0)
    xn = y2 * 1.0
    for _ in range(30):  # Newton: x <- x - F / F_x
        xn = xn - F_cubic(xn, a2, y2) / (1 + 3 * a2 * xn * xn)
    np.testing.assert_allclose(arr(xn), xs, atol=1e-13)
    xn.sum().backward()
    np.testing.assert_allclose(arr(y.grad), arr(y2.grad), atol=1e-6)
    np.testing.assert_allclose(arr(a.grad), arr(a2.grad), atol=1e-6)


def test_scalar_unknown_and_non_tensor_params():
    # x^2 = y, x > 0: x = sqrt(y), dx/dy = 1 / (2 sqrt(y)); the exponent is a Python int.
    y = leaf(3.0)
    x = root(lambda x, y, k: x**k - y, np.sqrt(3.0), y, 2)
    assert x.shape == ()
    x.backward()
    np.testing.assert_allclose(arr(y.grad), 1 / (2 * np.sqrt(3.0)), rtol=1e-12)


# --- linear problems: closed forms, dense vs gmres vs cg -----------------------------------


def spd(n, seed):
    M = np.random.default_rng(seed).standard_normal((n, n))
    return M @ M.T / n + np.eye(n)


def test_linear_root_gives_the_solve_gradients():
    # A x = b: grad_b = A^-T c, grad_A = -outer(A^-T c, x).
    rng = np.random.default_rng(1)
    A0_, b0, c = rng.standard_normal((3, 3)) + 3 * np.eye(3), rng.standard_normal(3), \
        rng.standard_normal(3)
    A, b = leaf(A0_), leaf(b0)
    xs = np.linalg.solve(A0_, b0)
    (root(lambda x, A, b: A @ x - b, xs, A, b) * cr.tensor(c)).sum().backward()
    lam = np.linalg.solve(A0_.T, c)
    np.testing.assert_allclose(arr(b.grad), lam, rtol=1e-12)
    np.testing.assert_allclose(arr(A.grad), -np.outer(lam, xs), rtol=1e-12)


@pytest.mark.parametrize("solve", ["gmres", "cg"])
def test_iterative_solves_agree_with_dense(solve):
    # F = A x + x^3 / 3 - b with A SPD: dF/dx = A + diag(x^2) is SPD, so cg applies too.
    n = 30
    A0_ = spd(n, 2)
    b0 = np.random.default_rng(3).standard_normal(n)
    c = np.random.default_rng(4).standard_normal(n)

    def F(x, A, b):
        return A @ x + x * x * x / 3 - b

    sol = scipy.optimize.root(lambda x: A0_ @ x + x**3 / 3 - b0, np.zeros(n), tol=1e-14)
    grads = {}
    for method in ("dense", solve):
        A, b = leaf(A0_), leaf(b0)
        (root(F, sol.x, A, b, solve=method, tol=1e-12) * cr.tensor(c)).sum().backward()
        grads[method] = arr(A.grad), arr(b.grad)
    lam = np.linalg.solve(A0_ + np.diag(sol.x**2), c)  # symmetric Jacobian: J^T = J
    np.testing.assert_allclose(grads["dense"][1], lam, rtol=1e-10)
    np.testing.assert_allclose(grads[solve][0], grads["dense"][0], atol=1e-9)
    np.testing.assert_allclose(grads[solve][1], grads["dense"][1], atol=1e-9)


def test_custom_linear_solve_callable():
    calls = []

    def solve(matvec, b):
        n = b.size
        J_T = np.stack([matvec(e) for e in np.eye(n)], axis=1)  # columns: (dF/dx)^T e_i
        calls.append(n)
        return np.linalg.solve(J_T, b)

    a, y = leaf(A0), leaf(Y0)
    root(F_cubic, scipy_cubic(A0, Y0), a, y, solve=solve).sum().backward()
    assert calls == [5]
    np.testing.assert_allclose(arr(y.grad), 1 / (1 + 3 * A0 * scipy_cubic(A0, Y0) ** 2),
                               rtol=1e-12)


# --- fixed points ---------------------------------------------------------------------


def test_fixed_point_matches_closed_form():
    # x = 0.5 cos(x) + p elementwise: dx/dp = 1 / (1 + 0.5 sin x).
    p0 = np.array([-1.0, 0.2, 1.5])
    xs = np.zeros(3)
    for _ in range(200):
        xs = 0.5 * np.cos(xs) + p0
    p = leaf(p0)
    fixed_point(lambda x, p: 0.5 * cr.cos(x) + p, xs, p).sum().backward()
    np.testing.assert_allclose(arr(p.grad), 1 / (1 + 0.5 * np.sin(xs)), rtol=1e-12)


def test_fixed_point_equals_root_and_unrolled_loop():
    xs = scipy_tanh(W0, B0)
    W, b = leaf(W0), leaf(B0)
    (fixed_point(T_tanh, xs, W, b) * cr.tensor(C0)).sum().backward()
    gW, gb = ift_tanh_grads(W0, B0, C0)
    np.testing.assert_allclose(arr(W.grad), gW, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(arr(b.grad), gb, rtol=1e-10, atol=1e-12)
    W2, b2 = leaf(W0), leaf(B0)
    (unrolled_tanh(W2, b2) * cr.tensor(C0)).sum().backward()
    np.testing.assert_allclose(arr(W.grad), arr(W2.grad), atol=1e-6)


def test_fixed_point_of_gradient_step_with_cg():
    # T(x) = x - eta (A x - b): x* = A^-1 b, and I - dT/dx = eta A is SPD, so cg applies.
    # grad_b of sum(c * x*) = A^-1 c.
    n, eta = 12, 0.1
    A0_ = spd(n, 5)
    b0, c = np.arange(n) / n, np.linspace(-1, 1, n)
    b = leaf(b0)
    xs = np.linalg.solve(A0_, b0)
    A = cr.tensor(A0_)
    x = fixed_point(lambda x, A, b: x - eta * (A @ x - b), xs, A, b, solve="cg", tol=1e-12)
    (x * cr.tensor(c)).sum().backward()
    np.testing.assert_allclose(arr(b.grad), np.linalg.solve(A0_, c), rtol=1e-9)
    assert A.grad is None


# --- custom_root ------------------------------------------------------------------------


def test_custom_root_decorator_with_scipy_solver():
    seen = []

    @custom_root(F_tanh)
    def solve(W, b):
        seen.append((W.requires_grad, b.requires_grad))
        return scipy_tanh(W, b)

    W, b = leaf(W0), leaf(B0)
    x = solve(W, b)
    assert seen == [(False, False)]  # the solver gets detached params
    assert solve.__name__ == "solve"
    (x * cr.tensor(C0)).sum().backward()
    gW, gb = ift_tanh_grads(W0, B0, C0)
    np.testing.assert_allclose(arr(W.grad), gW, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(arr(b.grad), gb, rtol=1e-10, atol=1e-12)
    assert autograd.gradcheck(solve, (leaf(W0), leaf(B0)))


def test_custom_root_does_not_record_the_solver_iterations():
    @custom_root(F_tanh, solve="gmres")
    def solve(W, b):
        return unrolled_tanh(W, b)  # chainrule ops, but on detached params

    W, b = leaf(W0), leaf(B0)
    x = solve(W, b)
    # The graph is one node whose inputs are the leaves themselves.
    assert x.grad_fn.name() == "ImplicitRootBackward"
    assert [type(n).__name__ for n, _ in x.grad_fn.next_functions] == \
        ["NoneType", "AccumulateGrad", "AccumulateGrad"]
    (x * cr.tensor(C0)).sum().backward()
    np.testing.assert_allclose(arr(b.grad), ift_tanh_grads(W0, B0, C0)[1], rtol=1e-8)


# --- which params get gradients ------------------------------------------------------------


def test_params_without_requires_grad_get_no_gradient():
    W = cr.tensor(W0)  # a constant
    b = leaf(B0)
    x = root(F_tanh, scipy_tanh(W0, B0), W, b)
    (x * cr.tensor(C0)).sum().backward()
    assert W.grad is None
    np.testing.assert_allclose(arr(b.grad), ift_tanh_grads(W0, B0, C0)[1], rtol=1e-10)
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(root(F_tanh, scipy_tanh(W0, B0), W, b).sum(), [W])


def test_no_param_requires_grad_gives_a_plain_tensor():
    x = root(F_tanh, scipy_tanh(W0, B0), cr.tensor(W0), cr.tensor(B0))
    assert x.grad_fn is None and not x.requires_grad
    np.testing.assert_allclose(arr(x), scipy_tanh(W0, B0))
    b = leaf(B0)
    with cr.no_grad():
        assert root(F_tanh, scipy_tanh(W0, B0), cr.tensor(W0), b).grad_fn is None


def test_unused_param_and_repeated_param():
    # F ignores u: no gradient. The same tensor passed twice gets both contributions:
    # x - tanh(W x + b + b) has the root of b' = 2b, so grad_b = 2 * grad at 2b.
    W, b, u = leaf(W0), leaf(B0), leaf([1.0])
    x = root(lambda x, W, b1, b2, u: x - cr.tanh(W @ x + b1 + b2), scipy_tanh(W0, 2 * B0),
             W, b, b, u)
    gb, gu = autograd.grad((x * cr.tensor(C0)).sum(), [b, u], allow_unused=True)
    assert gu is None
    np.testing.assert_allclose(arr(gb), 2 * ift_tanh_grads(W0, 2 * B0, C0)[1], rtol=1e-10)


def test_x_star_history_is_ignored_and_output_is_a_copy():
    b = leaf(B0)
    xs = unrolled_tanh(cr.tensor(W0), b)  # has a graph back to b
    data = arr(xs).copy()
    x = root(F_tanh, xs, cr.tensor(W0), b)
    x.sum().backward()  # only the implicit gradient reaches b (not the unrolled one too)
    np.testing.assert_allclose(arr(b.grad), ift_tanh_grads(W0, B0, np.ones(N))[1],
                               rtol=1e-10)
    src = scipy_tanh(W0, B0)
    y = root(F_tanh, src, cr.tensor(W0), b)
    src[:] = 0
    np.testing.assert_allclose(arr(y), data, atol=1e-12)


def test_backward_twice_needs_retain_graph_and_reuses_the_jacobian():
    a, y = leaf(A0), leaf(Y0)
    x = root(F_cubic, scipy_cubic(A0, Y0), a, y)
    g1 = autograd.grad(x.sum(), [y], retain_graph=True)[0]
    g2 = autograd.grad((2 * x).sum(), [y], retain_graph=True)[0]
    np.testing.assert_allclose(arr(g2), 2 * arr(g1), rtol=1e-14)
    x.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        x.sum().backward()


# --- errors -----------------------------------------------------------------------------


def test_singular_jacobian_raises_naming_shape_and_condition():
    # Both equations say x0 + x1 = p: a line of roots, dF/dx = [[1, 1], [2, 2]] is singular.
    p = leaf(2.0)
    x = root(lambda x, p: cr.stack([x.sum() - p, 2 * (x.sum() - p)]), [1.0, 1.0], p)
    with pytest.raises(RuntimeError, match=r"dF/dx of the residual of shape \(2,\).*singular"):
        x.backward(cr.tensor([1.0, 0.0]))


def test_gmres_not_converging_raises():
    n = 60
    rng = np.random.default_rng(0)
    A0_ = np.diag(np.logspace(0, 4, n)) + 0.1 * rng.standard_normal((n, n))
    b0 = rng.standard_normal(n)
    b = leaf(b0)
    x = root(lambda x, A, b: A @ x - b, np.linalg.solve(A0_, b0), cr.tensor(A0_), b,
             solve="gmres", maxiter=1, tol=1e-12, residual_tol=1e-8)
    with pytest.raises(RuntimeError, match=r"gmres did not converge.*shape \(60,\)") as e:
        x.sum().backward()
    assert "maxiter=1" in str(e.value)
    assert b.grad is None


def test_cg_on_a_nonsymmetric_jacobian_raises_with_a_hint():
    W, b = leaf(W0), leaf(B0)
    x = root(F_tanh, scipy_tanh(W0, B0), W, b, solve="cg")
    with pytest.raises(RuntimeError, match=r"cg did not converge.*shape \(4,\).*try "
                       "solve='gmres'"):
        x.sum().backward()


def test_param_changed_in_place_before_backward_raises():
    b = leaf(B0)
    x = root(F_tanh, scipy_tanh(W0, B0), cr.tensor(W0), b)
    with cr.no_grad():
        b.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        x.sum().backward()


def test_float32():
    W = cr.tensor(W0.astype(np.float32), requires_grad=True)
    b = cr.tensor(B0.astype(np.float32), requires_grad=True)
    x = root(F_tanh, scipy_tanh(W0, B0).astype(np.float32), W, b)
    assert x.dtype == np.float32
    (x * cr.tensor(C0.astype(np.float32))).sum().backward()
    assert b.grad.dtype == np.float32
    np.testing.assert_allclose(arr(b.grad), ift_tanh_grads(W0, B0, C0)[1], atol=1e-5)


def test_solution_that_is_not_a_root_raises():
    # The user's solver stopped early: 3 fixed-point steps are far from converged.
    W, b = leaf(W0), leaf(B0)
    early = arr(unrolled_tanh(cr.tensor(W0), cr.tensor(B0), iters=3))
    with pytest.raises(ValueError, match=r"x_star is not a root.*residual shape \(4,\)"):
        root(F_tanh, early, W, b)
    assert root(F_tanh, early, W, b, residual_tol=None).grad_fn is not None


def test_residual_of_the_wrong_shape_raises():
    p = leaf(1.0)
    with pytest.raises(ValueError, match=r"residual of shape \(\) for x of shape \(3,\)"):
        root(lambda x, p: (x * x).sum() - p, np.ones(3) / np.sqrt(3), p)
    # fixed_point checks T itself: x - T would broadcast a (1,)-shaped T silently.
    with pytest.raises(ValueError, match=r"T\(x, \*params\) returned \(1,\) for x of shape"):
        fixed_point(lambda x, p: p.reshape(1) * 1.0, np.ones(3), p)


def test_bad_arguments_raise():
    p = leaf(1.0)
    with pytest.raises(ValueError, match="solve must be one of"):
        root(lambda x, p: x - p, 1.0, p, solve="lu")
    with pytest.raises(TypeError, match="must return a Tensor"):
        root(lambda x, p: np.zeros(()), 1.0, p)


# --- the example -------------------------------------------------------------------------


def test_matrix_equation_example(capsys):
    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / \
        "implicit_matrix_equation.py"
    if not path.exists():
        pytest.skip("examples/ folder not present")
    spec = importlib.util.spec_from_file_location("example_implicit_matrix_equation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() is True
    out = capsys.readouterr().out
    assert "gradcheck(solve_dense, (A, Q)): True" in out
    assert "gradcheck(solve_gmres, (A, Q)): True" in out
