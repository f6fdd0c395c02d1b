"""The reverse-mode engine: backward, autograd.grad, grad mode, graph inspection, hooks,
broadcasting, long chains and in-place updates.

Expected values are derived by hand (the derivative of the function), from an explicitly
built Jacobian, or from PyTorch in the tests that import it.
"""

import threading
import time

import numpy as np
import pytest

import chainrule as cr
from chainrule import autograd

try:
    import torch
except ImportError:  # CI has no torch: the comparisons with it are skipped, the rest runs
    torch = None


def leaf(a, dtype=np.float64):
    return cr.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def arr(t):
    return np.asarray(t)


# --- .grad accumulation and backward ----------------------------------------------------


def test_scalar_backward_gives_gradient():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 4.0, 6.0])


def test_grad_accumulates_across_backward_calls():
    x = leaf([1.0, -2.0])
    (x * 3).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), 3 + 2 * np.array([1.0, -2.0]))


def test_grad_can_be_reset_between_calls():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [5.0, 5.0])


def test_leaf_grad_has_leaf_dtype_and_shape():
    x = leaf(np.ones((2, 3)), dtype=np.float32)
    (x * 2).sum().backward()
    assert x.grad.shape == (2, 3)
    assert x.grad.dtype == np.float32
    assert not x.grad.requires_grad


def test_non_scalar_backward_without_gradient_raises():
    x = leaf([1.0, 2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        y.backward()
    assert x.grad is None


def test_one_element_non_0d_output_backward_works():
    x = leaf([3.0])
    (x * x).backward()
    np.testing.assert_allclose(arr(x.grad), [6.0])


def test_backward_gradient_of_wrong_shape_raises():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).backward(cr.tensor([1.0, 2.0, 3.0]))


def _jacobian_fd(f, x, eps=1e-6):
    """Central-difference Jacobian of f: R^n -> R^m (numpy in, numpy out), shape (m, n)."""
    x = np.asarray(x, dtype=np.float64)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append(((f(x + e) - f(x - e)) / (2 * eps)).ravel())
    return np.stack(cols, axis=1)


def test_backward_with_gradient_is_vector_jacobian_product_of_matmul():
    A = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
    x0 = np.array([0.3, -0.7, 1.1])
    u = np.array([2.0, -1.0])
    x = leaf(x0)
    y = cr.tensor(A) @ x
    y.backward(gradient=cr.tensor(u))
    # For y = A x, J = A exactly, so u^T J = A^T u.
    np.testing.assert_allclose(arr(x.grad), u @ A, rtol=1e-12)


def test_backward_with_gradient_is_vjp_of_elementwise_function():
    x0 = np.array([0.2, -0.5, 1.3, 0.8])
    u = np.array([1.0, -2.0, 0.5, 3.0])

    def f_np(v):
        return np.sin(v) * v + np.exp(-v) ** 2

    J = _jacobian_fd(f_np, x0)
    # The Jacobian of an elementwise function is diagonal: derivative cos(x) x + sin(x) - 2 e^-2x.
    J_exact = np.diag(np.cos(x0) * x0 + np.sin(x0) - 2 * np.exp(-2 * x0))
    np.testing.assert_allclose(J, J_exact, atol=1e-8)
    x = leaf(x0)
    y = cr.sin(x) * x + cr.exp(-x) ** 2
    y.backward(gradient=u)
    np.testing.assert_allclose(arr(x.grad), u @ J_exact, rtol=1e-10)


def test_backward_with_gradient_matches_full_jacobian_of_composite():
    W = np.array([[0.5, -1.0], [2.0, 0.25], [-0.3, 0.7]])
    x0 = np.array([0.4, -1.2])
    u = np.array([1.0, 2.0, -3.0])

    def f_np(v):
        return np.tanh(W @ v) * (W @ v)

    J = _jacobian_fd(f_np, x0)
    x = leaf(x0)
    h = cr.tensor(W) @ x
    (cr.tanh(h) * h).backward(cr.tensor(u))
    np.testing.assert_allclose(arr(x.grad), u @ J, rtol=1e-6, atol=1e-8)


def test_backward_on_several_outputs_sums_their_vjps():
    x = leaf([1.0, 2.0])
    a = (x * x).sum()
    b = (x * 3).sum()
    autograd.backward([a, b])
    np.testing.assert_allclose(arr(x.grad), 2 * np.array([1.0, 2.0]) + 3)


# --- freed graphs and retain_graph -------------------------------------------------------


def test_second_backward_through_freed_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = arr(x.grad).copy()
    y.backward()
    expected = np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0]))
    np.testing.assert_allclose(first, expected)
    np.testing.assert_allclose(arr(x.grad), 2 * expected)


def test_saved_values_of_freed_node_raise_on_access():
    a = leaf(np.eye(2))
    b = leaf(np.ones((2, 2)))
    y = a @ b
    y.sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        y.grad_fn._saved_self  # noqa: B018


# --- autograd.grad ---------------------------------------------------------------------


def test_autograd_grad_returns_vjps_without_touching_grad():
    x = leaf([1.0, 2.0, 3.0])
    w = leaf([0.5, -1.0, 2.0])
    y = (x * w).sum()
    gx, gw = autograd.grad(y, [x, w])
    np.testing.assert_allclose(arr(gx), [0.5, -1.0, 2.0])
    np.testing.assert_allclose(arr(gw), [1.0, 2.0, 3.0])
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_autograd_grad_with_grad_outputs():
    A = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x = leaf([1.0, -1.0])
    y = cr.tensor(A) @ x
    u = np.array([1.0, 0.0, -1.0])
    (g,) = autograd.grad(y, x, grad_outputs=cr.tensor(u))
    np.testing.assert_allclose(arr(g), A.T @ u)


def test_autograd_grad_single_input_returns_tuple():
    x = leaf(2.0)
    result = autograd.grad(x * x, x)
    assert isinstance(result, tuple) and len(result) == 1
    assert result[0].item() == 4.0


def test_autograd_grad_frees_graph_unless_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x.exp()).sum()
    (g1,) = autograd.grad(y, x, retain_graph=True)
    (g2,) = autograd.grad(y, x)
    np.testing.assert_allclose(arr(g1), arr(g2))
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        autograd.grad(y, x)


def test_autograd_grad_unused_input_raises_unless_allow_unused():
    x = leaf([1.0])
    z = leaf([2.0])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="allow_unused"):
        autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = autograd.grad(y, [x, z], allow_unused=True)
    np.testing.assert_allclose(arr(gx), [2.0])
    assert gz is None


def test_autograd_grad_materialize_grads_gives_zeros():
    x = leaf([1.0])
    z = leaf([2.0, 3.0])
    _, gz = autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    np.testing.assert_array_equal(arr(gz), [0.0, 0.0])


def test_autograd_grad_input_not_requiring_grad_raises():
    x = leaf([1.0])
    c = cr.tensor([2.0])
    y = (x * c).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(y, [x, c])


def test_autograd_grad_wrt_nonleaf_intermediate():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = autograd.grad(y, h, retain_graph=True)
    np.testing.assert_allclose(arr(gh), 2 * arr(h))
    gx, gh2 = autograd.grad(y, [x, h])
    np.testing.assert_allclose(arr(gx), 2 * arr(h) * 3)
    np.testing.assert_allclose(arr(gh2), arr(gh))
    assert x.grad is None


def test_autograd_grad_runs_only_nodes_leading_to_its_inputs():
    """Nodes on no path to an input never run: a branch to another leaf whose graph was
    freed does not raise, and hooks there are not called. With every leaf an input,
    everything runs."""
    x, z = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    calls = []
    b = z * 2
    b.register_hook(lambda g: calls.append("b"))
    y = (x * b).sum() + (x * x).sum()
    (gx,) = autograd.grad(y, x, retain_graph=True)
    np.testing.assert_allclose(arr(gx), 2 * arr(z) + 2 * arr(x))
    assert calls == []
    gx2, gz = autograd.grad(y, (x, z))
    np.testing.assert_allclose(arr(gx2), arr(gx))
    np.testing.assert_allclose(arr(gz), 2 * arr(x))
    assert calls == ["b"]
    # a branch through a freed graph: not needed for x, so grad still works
    x2, z2 = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    c = (z2 * z2).sum()
    y2 = (x2 * 5).sum() + c
    c.backward(retain_graph=False)
    (gx3,) = autograd.grad(y2, x2)
    np.testing.assert_allclose(arr(gx3), [5.0, 5.0])


def test_autograd_grad_of_output_not_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad(cr.tensor([1.0]).sum(), x)


# --- backward(inputs=...) --------------------------------------------------------------


def test_backward_inputs_only_accumulates_into_those():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    y = (x * w).sum()
    y.backward(inputs=[x])
    np.testing.assert_allclose(arr(x.grad), [3.0, 4.0])
    assert w.grad is None


def test_backward_inputs_single_tensor():
    x = leaf([1.0, 2.0])
    w = leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=w)
    np.testing.assert_allclose(arr(w.grad), [1.0, 2.0])
    assert x.grad is None


# --- grad mode -----------------------------------------------------------------------


def test_no_grad_builds_no_graph():
    x = leaf([1.0, 2.0])
    with cr.no_grad():
        y = x * 2 + x.exp()
        assert not cr.is_grad_enabled()
    assert cr.is_grad_enabled()
    assert y.grad_fn is None and not y.requires_grad and y.is_leaf


def test_no_graph_when_nothing_requires_grad():
    a = cr.tensor([1.0, 2.0])
    y = (a * 2).exp().sum()
    assert y.grad_fn is None and not y.requires_grad


def test_enable_grad_inside_no_grad():
    x = leaf([1.0])
    with cr.no_grad():
        with cr.enable_grad():
            y = x * 2
            assert cr.is_grad_enabled()
        z = x * 2
    assert y.requires_grad and y.grad_fn is not None
    assert not z.requires_grad


def test_no_grad_as_decorator():
    x = leaf([1.0])

    @cr.no_grad()
    def f(t):
        assert not cr.is_grad_enabled()
        return t * 2

    y = f(x)
    assert not y.requires_grad
    assert cr.is_grad_enabled()


def test_no_grad_and_enable_grad_as_bare_decorators():
    # PyTorch accepts @torch.no_grad and @torch.enable_grad without parentheses.
    x = leaf([1.0])

    @cr.no_grad
    def f(t):
        return t * 2

    @cr.enable_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad
    with cr.no_grad():
        assert g(x).requires_grad
    assert cr.is_grad_enabled()


def test_enable_grad_as_decorator():
    x = leaf([1.0])

    @cr.enable_grad()
    def f(t):
        return t * 2

    with cr.no_grad():
        y = f(x)
    assert y.requires_grad


def test_no_grad_restores_mode_after_exception():
    with pytest.raises(ValueError):
        with cr.no_grad():
            raise ValueError("boom")
    assert cr.is_grad_enabled()


def test_set_grad_enabled_as_context_manager():
    x = leaf([1.0])
    with cr.set_grad_enabled(False):
        assert not cr.is_grad_enabled()
        y = x * 2
        with cr.set_grad_enabled(True):
            z = x * 2
    assert cr.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad


def test_set_grad_enabled_as_function_call():
    try:
        cr.set_grad_enabled(False)
        assert not cr.is_grad_enabled()
        cr.set_grad_enabled(True)
        assert cr.is_grad_enabled()
    finally:
        cr.set_grad_enabled(True)


def test_set_grad_enabled_as_decorator_does_not_change_mode_at_definition():
    x = leaf([1.0])
    try:

        @cr.set_grad_enabled(False)
        def f(t):
            return t * 2

        # Decorating must not switch grad mode off for the surrounding code (as in PyTorch).
        assert cr.is_grad_enabled()
        assert not f(x).requires_grad
        assert cr.is_grad_enabled()
    finally:
        cr.set_grad_enabled(True)


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = cr.is_grad_enabled()
        x = leaf([1.0])
        seen["requires_grad"] = (x * 2).requires_grad

    with cr.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert not cr.is_grad_enabled()
    assert seen == {"enabled": True, "requires_grad": True}


def test_no_grad_in_thread_does_not_affect_main_thread():
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with cr.no_grad():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    t.start()
    inside.wait(5)
    try:
        assert cr.is_grad_enabled()
        assert (leaf([1.0]) * 2).requires_grad
    finally:
        release.set()
        t.join()


# --- graph inspection ------------------------------------------------------------------


def test_grad_fn_names():
    a = leaf(np.ones((2, 3)))
    b = leaf(np.ones((3, 4)))
    assert (a @ b).grad_fn.name() == "MmBackward0"
    assert a.tanh().grad_fn.name() == "TanhBackward0"
    assert a.sum().grad_fn.name() == "SumBackward0"
    assert (a * 2).grad_fn.name() == "MulBackward0"
    assert (a + 2).grad_fn.name() == "AddBackward0"
    assert a.exp().grad_fn.name() == "ExpBackward0"
    assert a.mean().grad_fn.name() == "MeanBackward0"


def test_next_functions_point_to_accumulate_grad_of_leaves():
    a = leaf(np.ones((2, 3)))
    b = leaf(np.ones((3, 4)))
    y = a @ b
    (na, ia), (nb, ib) = y.grad_fn.next_functions
    assert na.name() == "AccumulateGrad" and nb.name() == "AccumulateGrad"
    assert na.variable is a and nb.variable is b
    assert ia == 0 and ib == 0
    assert na.next_functions == ()


def test_next_functions_chain_and_none_for_constants():
    x = leaf([1.0, 2.0])
    c = cr.tensor([3.0, 4.0])
    h = x.tanh()
    y = h * c
    (first, _), (second, _) = y.grad_fn.next_functions
    assert first is h.grad_fn
    assert second is None
    ((acc, _),) = h.grad_fn.next_functions
    assert acc.variable is x


def test_accumulate_grad_node_is_shared_by_all_uses_of_a_leaf():
    x = leaf([1.0])
    y1 = x * 2
    y2 = x * 3
    assert y1.grad_fn.next_functions[0][0] is y2.grad_fn.next_functions[0][0]


def test_saved_tensors_of_mm():
    A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    B = np.arange(12.0).reshape(3, 4)
    a, b = leaf(A), leaf(B)
    y = a @ b
    np.testing.assert_array_equal(arr(y.grad_fn._saved_self), A)
    np.testing.assert_array_equal(arr(y.grad_fn._saved_mat2), B)
    with pytest.raises(AttributeError):
        y.grad_fn._saved_nonexistent  # noqa: B018


def test_grad_fn_call_returns_input_cotangents_without_touching_grad():
    A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    B = np.arange(12.0).reshape(3, 4)
    G = np.ones((2, 4)) * np.array([1.0, -1.0, 2.0, 0.5])
    a, b = leaf(A), leaf(B)
    y = a @ b
    ga, gb = y.grad_fn(cr.tensor(G))
    np.testing.assert_allclose(arr(ga), G @ B.T)
    np.testing.assert_allclose(arr(gb), A.T @ G)
    assert a.grad is None and b.grad is None
    # The graph is not freed by calling a node.
    y.sum().backward()
    np.testing.assert_allclose(arr(a.grad), np.ones((2, 4)) @ B.T)


def test_grad_fn_call_of_unary_node():
    x = leaf([0.0, 1.0])
    y = x.tanh()
    (gx,) = y.grad_fn(np.array([1.0, 2.0]))
    np.testing.assert_allclose(arr(gx), np.array([1.0, 2.0]) * (1 - np.tanh([0.0, 1.0]) ** 2))
    assert x.grad is None


# --- hooks and retain_grad ---------------------------------------------------------------


def test_register_hook_on_leaf_modifies_grad():
    x = leaf([1.0, 2.0])
    seen = []

    def hook(g):
        seen.append(arr(g).copy())
        return g * 10

    x.register_hook(hook)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(arr(x.grad), [30.0, 30.0])


def test_leaf_hook_persists_across_graphs():
    x = leaf([1.0, 2.0])
    y = x * 3
    x.register_hook(lambda g: g * 10)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [30.0, 30.0])
    del y
    x.grad = None
    (x * 3).sum().backward()  # a new graph: the hook on the leaf still applies
    np.testing.assert_allclose(arr(x.grad), [30.0, 30.0])


def test_register_hook_on_nonleaf_changes_upstream_grad():
    x = leaf([1.0, 2.0])
    h = x * 2
    h.register_hook(lambda g: g + 1)
    (h * h).sum().backward()
    # d/dh = 2h = [4, 8]; hook adds 1 -> [5, 9]; times dh/dx = 2.
    np.testing.assert_allclose(arr(x.grad), [10.0, 18.0])


def test_hook_returning_none_leaves_grad_and_handle_removes():
    x = leaf([1.0])
    calls = []
    handle = x.register_hook(lambda g: calls.append(1))
    (x * 2).sum().backward()
    assert calls == [1]
    np.testing.assert_allclose(arr(x.grad), [2.0])
    handle.remove()
    (x * 2).sum().backward()
    assert calls == [1]


def test_register_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError):
        cr.tensor([1.0]).register_hook(lambda g: g)


def test_retain_grad_on_nonleaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    h.retain_grad()
    assert h.retains_grad
    y = (h * h).sum()
    y.backward()
    np.testing.assert_allclose(arr(h.grad), 2 * np.array([3.0, 6.0]))
    np.testing.assert_allclose(arr(x.grad), 2 * np.array([3.0, 6.0]) * 3)


def test_nonleaf_grad_is_none_without_retain_grad():
    x = leaf([1.0])
    h = x * 3
    (h * h).sum().backward()
    assert h.grad is None


def test_retain_grad_accumulates():
    x = leaf([1.0])
    h = x * 3
    h.retain_grad()
    y = (h * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(arr(h.grad), [4.0])


def test_retained_grad_does_not_alias_the_gradient_passed_to_backward():
    x = leaf([1.0, 2.0])
    h = x + 0.0
    h.retain_grad()
    u = cr.tensor([1.0, 1.0])
    h.backward(u)
    h.grad.mul_(5.0)
    np.testing.assert_array_equal(arr(u), [1.0, 1.0])
    np.testing.assert_array_equal(arr(x.grad), [1.0, 1.0])


# --- graph structure -------------------------------------------------------------------


def test_diamond_graph_sums_contributions():
    x = leaf([1.0, 2.0])
    a = x * 2
    b = x * 3
    y = (a * b).sum()  # 6 x^2
    y.backward()
    np.testing.assert_allclose(arr(x.grad), 12 * np.array([1.0, 2.0]))


def test_tensor_used_twice_in_one_op():
    x = leaf([3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [6.0])


def test_shared_intermediate_used_many_times():
    x = leaf([0.5])
    h = x.exp()
    y = (h + h * h + h.sin()).sum()
    y.backward()
    e = np.exp(0.5)
    np.testing.assert_allclose(arr(x.grad), [e * (1 + 2 * e + np.cos(e))])


def test_broadcasting_grads_summed_back_to_input_shapes():
    a0 = np.arange(3.0).reshape(3, 1)
    b0 = np.array([1.0, -2.0, 0.5, 4.0])
    a, b = leaf(a0), leaf(b0)
    (a + b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    np.testing.assert_allclose(arr(a.grad), np.full((3, 1), 4.0))
    np.testing.assert_allclose(arr(b.grad), np.full(4, 3.0))
    a.grad = b.grad = None
    (a * b).sum().backward()
    np.testing.assert_allclose(arr(a.grad), np.full((3, 1), b0.sum()))
    np.testing.assert_allclose(arr(b.grad), np.full(4, a0.sum()))


def test_broadcasting_with_size_one_middle_dim_and_scalar():
    a0 = np.arange(6.0).reshape(2, 1, 3)
    b0 = np.arange(12.0).reshape(2, 2, 3)
    a, b, s = leaf(a0), leaf(b0), leaf(2.0)
    ((a * b) * s).sum().backward()
    np.testing.assert_allclose(arr(a.grad), (b0 * 2.0).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(arr(b.grad), np.broadcast_to(a0 * 2.0, (2, 2, 3)))
    np.testing.assert_allclose(s.grad.item(), (a0 * b0).sum())
    assert s.grad.shape == ()


def test_long_chain_of_million_ops_backpropagates_without_recursion_error():
    n = 1_000_000
    c = 1.0000001
    x = leaf(1.0)
    y = x
    start = time.perf_counter()
    for _ in range(n):
        y = y * c
    y.backward()
    elapsed = time.perf_counter() - start
    # y = x c^n, so dy/dx = c^n (= e^0.1 to 7 digits).
    np.testing.assert_allclose(x.grad.item(), c ** n, rtol=1e-9)
    np.testing.assert_allclose(y.item(), c ** n, rtol=1e-9)
    assert elapsed < 45, f"1M-op chain took {elapsed:.1f}s"
    del y


# --- in-place updates --------------------------------------------------------------------


@pytest.mark.parametrize(
    "update",
    [
        lambda t: t.add_(1.0),
        lambda t: t.sub_(1.0),
        lambda t: t.mul_(2.0),
        lambda t: t.div_(2.0),
        lambda t: t.__iadd__(1.0),
        lambda t: t.__isub__(1.0),
        lambda t: t.__imul__(2.0),
        lambda t: t.__setitem__(0, 5.0),
        lambda t: t.__setitem__(slice(None), cr.tensor([1.0, 2.0, 3.0])),
        lambda t: t.zero_(),
        lambda t: t.fill_(3.0),
    ],
    ids=["add_", "sub_", "mul_", "div_", "+=", "-=", "*=", "setitem", "setitem_slice",
         "zero_", "fill_"],
)
def test_inplace_updates_bump_version(update):
    t = cr.tensor([1.0, 2.0, 3.0])
    v = t._version
    update(t)
    assert t._version == v + 1
    x = leaf([1.0, 2.0, 3.0])
    h = x * 1.0
    v = h._version
    update(h)
    assert h._version == v + 1


def test_augmented_assignment_keeps_identity_and_updates_values():
    t = cr.tensor([1.0, 2.0])
    before = t
    t += 1.0
    t *= 3.0
    t -= 1.0
    assert t is before
    np.testing.assert_array_equal(arr(t), [5.0, 8.0])


def test_detach_shares_version_counter():
    x = leaf([1.0])
    d = x.detach()
    d.add_(1.0)
    assert x._version == 1


def test_modifying_saved_tensor_then_backward_raises():
    x = leaf([1.0, 2.0])
    h = x * 2
    y = (h * h).sum()  # MulBackward0 saves h
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modifying_saved_constant_then_backward_raises():
    x = leaf([1.0, 2.0])
    w = cr.tensor([3.0, 4.0])
    y = (x * w).sum()  # the grad of x needs w
    w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid"])
def test_modifying_saved_result_then_backward_raises(op):
    x = leaf([0.5, 1.0])
    y = getattr(x, op)()  # the backward of these ops uses the result
    z = y.sum()
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_modifying_saved_tensor_via_setitem_then_backward_raises():
    a = leaf(np.eye(2))
    b = cr.tensor(np.ones((2, 2)))
    y = (a @ b).sum()
    b[0, 0] = 7.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modifying_tensor_not_saved_is_fine():
    x = leaf([1.0, 2.0])
    c = cr.tensor([3.0, 4.0])
    y = (x + c).sum()  # add saves nothing
    c.add_(1.0)
    y.backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 1.0])


def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    for update in (lambda: x.add_(1.0), lambda: x.mul_(2.0), lambda: x.__setitem__(0, 1.0),
                   lambda: x.zero_()):
        with pytest.raises(RuntimeError, match="leaf"):
            update()
    np.testing.assert_array_equal(arr(x), [1.0, 2.0])
    assert x._version == 0


def test_inplace_on_leaf_allowed_under_no_grad():
    x = leaf([1.0, 2.0])
    with cr.no_grad():
        x.sub_(cr.tensor([0.5, 0.5]))
        x *= 2.0
        x[1] = 10.0
    np.testing.assert_array_equal(arr(x), [1.0, 10.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert x._version == 3
    (x * x).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 20.0])


def test_inplace_on_nonleaf_records_the_op():
    x0 = np.array([1.0, -2.0, 0.5])
    w0 = np.array([2.0, 3.0, -1.0])
    # in place
    x, w = leaf(x0), leaf(w0)
    h = x * 2.0
    h.mul_(w)
    h += x
    h -= 1.0
    h *= h.detach() * 0 + 3.0
    assert h.grad_fn is not None and not h.is_leaf
    h.sum().backward()
    # out of place
    x2, w2 = leaf(x0), leaf(w0)
    g = (((x2 * 2.0) * w2 + x2) - 1.0) * 3.0
    g.sum().backward()
    np.testing.assert_allclose(arr(h), arr(g))
    np.testing.assert_allclose(arr(x.grad), arr(x2.grad))
    np.testing.assert_allclose(arr(w.grad), arr(w2.grad))
    np.testing.assert_allclose(arr(x.grad), 3 * (2 * w0 + 1))


def test_setitem_on_nonleaf_records_the_op():
    x0 = np.array([1.0, 2.0, 3.0])
    x = leaf(x0)
    h = x * x
    h[1] = 0.0
    h.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 0.0, 6.0])


def test_setitem_with_differentiable_value():
    x = leaf([1.0, 2.0])
    buf = cr.zeros(3)
    buf[1] = x[0] * 5.0
    buf[2] = x[1] ** 2
    assert buf.requires_grad and buf.grad_fn is not None
    buf.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [5.0, 4.0])
    np.testing.assert_allclose(arr(buf), [0.0, 5.0, 4.0])


def test_inplace_add_of_grad_tensor_into_plain_tensor():
    x = leaf([1.0, 2.0])
    acc = cr.zeros(2)
    acc += x * 3.0
    acc += x * x
    assert acc.requires_grad
    acc.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 3.0 + 2 * np.array([1.0, 2.0]))


@pytest.mark.parametrize(
    "update",
    [lambda y: y.mul_(3.0), lambda y: y.__imul__(3.0), lambda y: y.__setitem__(0, y[0] * 3.0)],
    ids=["mul_", "*=", "setitem"],
)
def test_inplace_on_base_is_seen_by_its_existing_view(update):
    # v is a view of y; after y is scaled by 3 in place (entry 0 at least), v's values are
    # the new ones, so its gradient must follow: either the view's history is rebased onto
    # the in-place op (PyTorch) or backward refuses. A stale gradient is wrong.
    x = leaf([1.0, 2.0, 3.0])
    y = x * 1.0
    v = y[:2]
    try:
        update(y)
        assert arr(v)[0] == 3.0
        v.sum().backward()
    except RuntimeError:
        return
    expected = [3.0, 3.0, 0.0] if arr(v)[1] == 6.0 else [3.0, 1.0, 0.0]
    np.testing.assert_allclose(arr(x.grad), expected)


def test_grad_zero_then_accumulate():
    x = leaf([1.0, 2.0])
    (x * 4).sum().backward()
    g = x.grad
    x.grad.zero_()
    (x * x).sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 4.0])
    assert x.grad is g or np.allclose(arr(g), 0.0)


def test_optimizer_style_update_under_no_grad():
    x = leaf([1.0, -2.0])
    for _ in range(3):
        x.grad = None
        (x * x).sum().backward()
        with cr.no_grad():
            x -= 0.25 * x.grad
    # each step x <- x - 0.25 * 2x = x / 2
    np.testing.assert_allclose(arr(x), np.array([1.0, -2.0]) / 8)
    assert x.is_leaf and x.requires_grad


def test_inplace_under_no_grad_on_nonleaf_is_not_recorded():
    x = leaf([1.0, 2.0])
    h = x * 2.0
    fn = h.grad_fn
    with cr.no_grad():
        h.add_(100.0)
    assert h.grad_fn is fn
    h.sum().backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0])


# --- comparison with PyTorch -------------------------------------------------------------


def _torch_grads(torch, fn, arrays):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fn(torch, *ts).backward()
    return [t.grad.numpy() for t in ts]


def _cr_grads(fn, arrays):
    ts = [leaf(a) for a in arrays]
    fn(cr, *ts).backward()
    return [arr(t.grad) for t in ts]


def _mlp(m, x, W1, b1, W2):
    h = m.tanh(x @ W1 + b1)
    return (m.sigmoid(h @ W2) ** 2).mean()


def _softmax_ce(m, z, w):
    p = m.softmax(z * w, dim=-1)
    return -(m.log(p) * p).sum() + (z.exp() / (1 + w * w)).sum()


def _norms(m, a, b):
    d = a - b
    return (d * d).sum(dim=1).sqrt().sum() + (a.abs() * b).max() + m.relu(a - 0.2).prod()


def _broadcast_mix(m, a, b, c):
    return ((a * b + c) ** 3).sum() / (1 + (a - c).pow(2).sum())


TORCH_CASES = [
    ("mlp", _mlp, [(4, 3), (3, 5), (5,), (5, 2)]),
    ("softmax", _softmax_ce, [(3, 4), (4,)]),
    ("norms", _norms, [(3, 4), (3, 4)]),
    ("broadcast", _broadcast_mix, [(3, 1), (1, 4), (4,)]),
]


@pytest.mark.parametrize("name, fn, shapes", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_gradients_match_torch(name, fn, shapes):
    rng = np.random.default_rng(42)
    # entries of magnitude 0.3 to 1.2: away from the kinks of abs and relu(a - 0.2)
    arrays = [rng.uniform(0.3, 1.2, size=s) * rng.choice([-1, 1], size=s) for s in shapes]
    got = _cr_grads(fn, arrays)
    # without torch: the gradients agree with central differences in float64
    assert autograd.gradcheck(lambda *ts: fn(cr, *ts), tuple(leaf(a) for a in arrays))
    for g, s in zip(got, shapes):
        assert g.shape == s
    if torch is not None:
        expected = _torch_grads(torch, fn, arrays)
        for e, g in zip(expected, got):
            np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


def test_vjp_with_grad_outputs_matches_torch():
    rng = np.random.default_rng(7)
    A, x0, u = rng.normal(size=(3, 4)), rng.normal(size=(4, 2)), rng.normal(size=(3, 2))
    a, x = leaf(A), leaf(x0)
    y = cr.tanh(a @ x) * a.sum(dim=1, keepdim=True)
    gA, gx = autograd.grad(y, [a, x], grad_outputs=cr.tensor(u))
    # by hand: y = tanh(A x) * s with s_i = sum_k A_ik. With d = u * s * (1 - tanh^2(A x)),
    # dL/dx = A^T d and dL/dA = d x^T + (sum_j u_ij tanh(A x)_ij) along each row i
    t = np.tanh(A @ x0)
    s = A.sum(axis=1, keepdims=True)
    d = u * s * (1 - t * t)
    np.testing.assert_allclose(arr(gx), A.T @ d, rtol=1e-12)
    np.testing.assert_allclose(arr(gA), d @ x0.T + (u * t).sum(axis=1, keepdims=True),
                               rtol=1e-12)
    if torch is not None:
        tA = torch.tensor(A, requires_grad=True)
        tx = torch.tensor(x0, requires_grad=True)
        ty = torch.tanh(tA @ tx) * tA.sum(dim=1, keepdim=True)
        eA, ex = torch.autograd.grad(ty, [tA, tx], grad_outputs=torch.tensor(u))
        np.testing.assert_allclose(arr(gA), eA.numpy(), rtol=1e-10)
        np.testing.assert_allclose(arr(gx), ex.numpy(), rtol=1e-10)


def test_inplace_on_nonleaf_matches_torch():
    x0 = np.array([0.3, -1.2, 2.0, 0.7])
    x = leaf(x0)
    h = x.exp()
    h = h * 1.0
    h[1:3] = x[:2] * 4.0
    h *= x
    h.sum().backward()
    # by hand: h = (x0 e^x0, 4 x0 x1, 4 x1 x2, x3 e^x3), so d sum(h) / dx =
    # (e^x0 (1 + x0) + 4 x1, 4 x0 + 4 x2, 4 x1, e^x3 (1 + x3))
    a, b, c, e = x0
    np.testing.assert_allclose(arr(h.detach()), [a * np.exp(a), 4 * a * b, 4 * b * c,
                                                 e * np.exp(e)], rtol=1e-12)
    np.testing.assert_allclose(arr(x.grad), [np.exp(a) * (1 + a) + 4 * b, 4 * a + 4 * c,
                                             4 * b, np.exp(e) * (1 + e)], rtol=1e-12)
    if torch is not None:
        tx = torch.tensor(x0, requires_grad=True)
        th = tx.exp()
        th = th * 1.0
        th[1:3] = tx[:2] * 4.0
        th *= tx
        th.sum().backward()
        np.testing.assert_allclose(arr(h.detach()), th.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(arr(x.grad), tx.grad.numpy(), rtol=1e-12)


def test_retain_grad_sees_the_gradient_after_other_hooks_as_in_pytorch_2():
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    h.retain_grad()  # registered first, but runs last
    h.register_hook(lambda g: g * 10)
    h.sum().backward()
    assert np.allclose(h.grad.numpy(), [10.0, 10.0])
    assert np.allclose(x.grad.numpy(), [10.0, 10.0])


def _node_hooks_program(m):
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    z = y.sin()
    seen = []
    y.grad_fn.register_prehook(lambda go: seen.append([round(v, 9) for v in go[0].tolist()]))
    handle = y.grad_fn.register_hook(lambda gi, go: (gi[0] * 10, gi[1]))
    y.register_hook(lambda g: g * 2)          # tensor hooks run before the node's prehooks
    z.sum().backward(retain_graph=True)
    first = np.array(x.grad.tolist())
    handle.remove()
    x.grad = None
    z.sum().backward()
    return seen, first, np.array(x.grad.tolist())


def test_node_hooks_see_and_replace_gradients():
    seen, first, second = _node_hooks_program(cr)
    x = np.array([1.0, 2.0])
    g_y = 2 * np.cos(3 * x)                   # the tensor hook doubles dz/dy = cos(3x)
    assert len(seen) == 2                     # the prehook ran in both passes
    np.testing.assert_allclose(seen[0], g_y, rtol=1e-8)
    np.testing.assert_allclose(seen[1], g_y, rtol=1e-8)
    np.testing.assert_allclose(first, 10 * 3 * g_y)   # the post hook scales grad_input
    np.testing.assert_allclose(second, 3 * g_y)       # removed
    n = (leaf([1.0]) * 2).grad_fn
    n.metadata["note"] = "scaled"
    assert n.metadata == {"note": "scaled"} and isinstance(n, autograd.graph.Node)
    w = leaf([1.0, 2.0])
    v = w * 2
    v.grad_fn.register_hook(lambda gi, go: (gi[0],))
    with pytest.raises(RuntimeError, match="returned 1 values for grad_inputs, expected 2"):
        v.sum().backward()
    u = w * 2
    u.grad_fn.register_prehook(lambda go: (go[0][:1],))
    with pytest.raises(RuntimeError, match="changed the size"):
        u.sum().backward()
    t = leaf([1.0])
    s = t * t
    autograd.graph.increment_version(t)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        s.sum().backward()
    if torch is not None:
        theirs = _node_hooks_program(torch)
        np.testing.assert_allclose(seen, theirs[0], rtol=1e-6)
        np.testing.assert_allclose(first, theirs[1], rtol=1e-6)
        np.testing.assert_allclose(second, theirs[2], rtol=1e-6)


# --- slices of one tensor: cotangents added in place -----------------------------------


def test_loop_over_slices_adds_each_cotangent_in_place(monkeypatch):
    """``sum_t f(x[t])``: each slice's cotangent is zero but at its slice, so the engine adds
    it into one buffer in place rather than building a full-size array per slice (which
    made an RNN's backward quadratic in the sequence length)."""
    from chainrule import _node

    made = []
    real = _node.Scattered.materialize
    monkeypatch.setattr(_node.Scattered, "materialize",
                        lambda self: made.append(1) or real(self))
    L = 50
    a = np.random.default_rng(0).standard_normal((L, 3))
    x = leaf(a)
    h = x * 2                       # a non-leaf: the slices' cotangents meet in its buffer
    loss = sum(((h[t] * (t + 1)) ** 2).sum() for t in range(L))
    loss.backward()
    t = np.arange(1, L + 1)[:, None]
    np.testing.assert_allclose(arr(x.grad), 2 * (2 * a * t) * t * 2)   # d/dx (2x t)^2
    assert len(made) <= 2          # at most the first two slices became full-size arrays


def test_slice_cotangents_with_overlaps_hooks_and_seeds():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = x * 1.0
    seen = []
    y.register_hook(lambda g: seen.append(arr(g).copy()))
    loss = (y[0:3] * cr.tensor([1.0, 2.0, 3.0])).sum() + (y[1:4] ** 2).sum() + y.sum()
    loss.backward(retain_graph=True)
    expected = np.array([1.0, 2.0, 3.0, 0.0]) + np.array([0.0, 4.0, 6.0, 8.0]) + 1.0
    np.testing.assert_allclose(arr(x.grad), expected)
    np.testing.assert_allclose(seen[0], expected)      # the hook sees the whole cotangent
    loss.backward()                                    # again: nothing was consumed
    np.testing.assert_allclose(arr(x.grad), 2 * expected)
    # a seed given for a slice is never written into
    u = cr.tensor([5.0, 6.0])
    z = leaf([1.0, 2.0, 3.0])
    (gz,) = autograd.grad([z[0:2], z[1:3]], z, grad_outputs=[u, u])
    np.testing.assert_allclose(arr(gz), [5.0, 11.0, 6.0])
    np.testing.assert_allclose(arr(u), [5.0, 6.0])
    assert not np.shares_memory(gz._data, u._data)
    # float32 stays float32; grad_fn(g) gives the full-size cotangent
    f = leaf([1.0, 2.0, 3.0], dtype=np.float32)
    s = f[1:]
    (s * s).sum().backward(retain_graph=True)
    assert f.grad.dtype == np.float32
    np.testing.assert_allclose(arr(f.grad), [0.0, 4.0, 6.0])
    (full,) = s.grad_fn(cr.tensor([1.0, 1.0], dtype=cr.float32))
    np.testing.assert_allclose(arr(full), [0.0, 1.0, 1.0])


def test_slice_cotangents_under_anomaly_mode_and_create_graph():
    x = leaf([1.0, 2.0, 3.0])
    with autograd.detect_anomaly():
        (x[0] * x[1] + x[1:].sum()).backward()
    np.testing.assert_allclose(arr(x.grad), [2.0, 2.0, 1.0])
    y = leaf([1.0, 2.0, 3.0])
    (g,) = autograd.grad((y[0:2] ** 3).sum() + (y[1:] ** 2).sum(), y, create_graph=True)
    np.testing.assert_allclose(arr(g.detach()), [3.0, 12.0 + 4.0, 6.0])
    g.sum().backward()                                  # d/dy of the gradient
    np.testing.assert_allclose(arr(y.grad), [6.0, 12.0 + 2.0, 2.0])


def test_slice_loop_matches_torch():
    a = np.random.default_rng(1).standard_normal((6, 4))

    def program(m):
        x = m.tensor(a, requires_grad=True)
        h = m.zeros(4, dtype=x.dtype)
        for t in range(6):
            h = (x[t] + h * 0.5).tanh()
        (h.sum() + x[2:5, 1:3].sum() * 2).backward()
        return np.asarray(x.grad.detach().numpy() if m is torch else x.grad)

    ours = program(cr)
    assert ours.shape == (6, 4)
    # by hand (backpropagation through time): h_t = tanh(x_t + h_(t-1) / 2) with h_(-1) = 0;
    # the cotangent of h_5 is 1, that of x_t is c_t (1 - h_t^2) and it passes half of that
    # to h_(t-1); the block x[2:5, 1:3] adds 2
    hs, h = [], np.zeros(4)
    for t in range(6):
        h = np.tanh(a[t] + h * 0.5)
        hs.append(h)
    want, c = np.zeros((6, 4)), np.ones(4)
    for t in reversed(range(6)):
        want[t] = c * (1 - hs[t] ** 2)
        c = 0.5 * want[t]
    want[2:5, 1:3] += 2
    np.testing.assert_allclose(ours, want, rtol=1e-12)
    if torch is not None:
        np.testing.assert_allclose(ours, program(torch), rtol=1e-12)


def test_a_second_backward_through_nodes_that_saved_no_arrays_works():
    # PyTorch frees saved tensors only: sum's node keeps a shape, so a second backward
    # without retain_graph accumulates again; mul's node saved its inputs and raises
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    y = x.sum()
    y.backward()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])
    z = (x * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_changing_a_quotient_in_place_leaves_its_backward_valid():
    # div's VJP reads x and y (as PyTorch's), not the quotient: q = 2 b / c after mul_
    b = cr.tensor([1.0, 2.0], requires_grad=True)
    c = cr.tensor([3.0, 4.0], requires_grad=True)
    q = b / c
    q.mul_(2)
    q.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 / np.array([3.0, 4.0]), rtol=1e-15)
    np.testing.assert_allclose(c.grad.numpy(), -2 * np.array([1.0, 2.0]) / np.array([9.0, 16.0]),
                               rtol=1e-15)


def test_setitem_with_a_value_of_more_leading_dims():
    # NumPy (and PyTorch) accept a value with extra leading 1s; its cotangent comes back in
    # the value's shape
    x = cr.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = cr.tensor([[[5.0, 6.0]]], requires_grad=True)
    t = x * 1
    t[1:] = v
    (t * t).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 0.0])
    assert v.grad.shape == (1, 1, 2)
    np.testing.assert_array_equal(v.grad.numpy(), [[[10.0, 12.0]]])


def test_casting_to_an_integer_dtype_gives_a_tensor_without_grad():
    x = cr.tensor([1.5, -2.5], requires_grad=True)
    for out in (x.to(cr.int64), x.long(), x.to(dtype=cr.int32), x.type(cr.int64)):
        assert not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), [1, -2])  # truncation, as PyTorch's
    assert x.requires_grad and x.grad is None


def test_hooks_and_retained_grads_of_a_float32_tensor_are_float32():
    # used with a float64 tensor, its cotangent is computed in float64; the engine casts it
    # to the tensor's dtype for its hooks and .grad, as PyTorch's does at every edge
    a = cr.tensor([0.5, 2.0], dtype=cr.float32, requires_grad=True)
    b = cr.tensor([1.0, 3.0], dtype=cr.float64, requires_grad=True)
    t = a * 1
    t.retain_grad()
    seen = []
    t.register_hook(lambda g: seen.append(g.dtype))
    (t * b).sum().backward()
    assert seen == [cr.float32] and t.grad.dtype == cr.float32 and a.grad.dtype == cr.float32
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.5, 2.0])


def test_backward_through_an_empty_diagonal_and_median_of_nothing():
    # both as PyTorch: an empty diagonal's cotangent scatters nothing; median of no entries
    # is NaN (and stays on the graph)
    x = cr.ones(1, 3, requires_grad=True)
    (x * 1).diagonal(-1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 3)))
    e = cr.zeros(0, requires_grad=True)
    m = e.median()
    assert np.isnan(m.item()) and m.requires_grad
    m.backward()
    assert e.grad.shape == (0,)


def test_reciprocal_saves_its_result_so_changing_its_input_is_harmless():
    # d/dx 1/x = -1/x^2 = -y^2 from the saved result (PyTorch's reciprocal); t is changed
    # in place afterwards and the backward still uses the values at the time of the call
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    t = x * 1
    y = t.reciprocal()
    t.mul_(10)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-1.0, -0.25])
    assert cr.tensor([2, 4]).reciprocal().dtype == cr.get_default_dtype()


# --- outputs of ops with several outputs, changed in place after use ---------------------

_MULTI = {
    "max(dim)": (lambda x: x.max(1), 1),
    "min(dim)": (lambda x: x.min(1), 1),
    "sort": (lambda x: x.sort(1), 1),
    "topk": (lambda x: x.topk(2, 1), 1),
    "kthvalue": (lambda x: x.kthvalue(2, 1), 1),
    "median(dim)": (lambda x: x.median(1), 1),
    "cummax": (lambda x: x.cummax(1), 1),
    "linalg.qr": (lambda x: cr.linalg.qr(x[:, :2]), 0),
    "linalg.svd": (lambda x: cr.linalg.svd(x, full_matrices=False), 1),
    "linalg.eigh": (lambda x: cr.linalg.eigh(x[:, :2] @ x[:, :2].mT), 1),
}


@pytest.mark.parametrize("name", list(_MULTI))
def test_changing_an_output_a_rule_reads_in_place_raises(name):
    # the indices of max(dim) & co. (and a decomposition's factors) are read by the
    # backward: changing them in place would send the gradient to the wrong entries
    make, j = _MULTI[name]
    x = cr.tensor([[0.3, 0.9, 0.1], [0.5, 0.2, 0.8], [0.7, 0.4, 0.6]], requires_grad=True)
    outs = make(x)
    first = outs[0]
    outs[j].add_(0)  # a version bump, values unchanged
    with pytest.raises(RuntimeError, match=rf"modified by an inplace operation.*'out\[{j}\]'"):
        first.sum().backward()
    assert x.grad is None


def test_values_of_max_dim_may_change_in_place():
    # only the indices are saved: d/dx of sum(2 max_j x_ij) is 2 at each row's argmax
    x = cr.tensor([[0.3, 0.9, 0.1], [0.5, 0.2, 0.8]], requires_grad=True)
    v, i = x.max(1)
    v.mul_(2)
    v.sum().backward()
    assert np.array_equal(x.grad.numpy(), [[0, 2, 0], [0, 0, 2]])


def test_a_leafs_hook_sees_its_own_dtype():
    # a float32 leaf used with a float64 tensor: its hook (like .grad) gets float32; a
    # float64 leaf written into a float32 tensor gets float64 (PyTorch casts before hooks)
    x = cr.ones(2, dtype=cr.float32, requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.dtype))
    (x * cr.tensor([3.0, 4.0], dtype=cr.float64)).sum().backward()
    assert seen == [cr.float32] and x.grad.dtype == cr.float32
    assert np.array_equal(x.grad.numpy(), [3, 4])
    v = cr.ones(1, dtype=cr.float64, requires_grad=True)
    v.register_hook(lambda g: seen.append(g.dtype))
    z = cr.zeros(3, dtype=cr.float32)
    z[:1] = v
    (z * 2).sum().backward()
    assert seen[-1] == cr.float64 and v.grad.dtype == cr.float64 and v.grad.item() == 2.0


def test_backward_inputs_runs_only_the_nodes_that_reach_them():
    # a branch that does not lead to `inputs` neither runs its hooks nor checks its saved
    # values (one was changed in place), as in autograd.grad
    a = cr.ones(2, requires_grad=True)
    b = cr.tensor([1.0, 2.0], requires_grad=True)
    s = a.sin()
    t = s * s
    s.mul_(2)  # t's saved s is stale: backward through t would raise
    fired = []
    t.register_hook(lambda g: fired.append("t"))
    (t.sum() + (b * 3).sum()).backward(inputs=[b])
    assert np.array_equal(b.grad.numpy(), [3, 3]) and a.grad is None and fired == []
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        (t.sum() + (b * 3).sum()).backward()


def test_a_leaf_detached_in_place_after_use_gets_no_grad():
    x = cr.ones(2, requires_grad=True)
    y = (x * 2).sum()
    x.detach_()
    y.backward()
    assert x.grad is None and not x.requires_grad


def test_retained_grad_keeps_its_history_with_create_graph():
    # y = x^2, z = sum(y^2): dz/dy = 2y = 2x^2; d/dx sum(dz/dy) = 4x
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    y = x ** 2
    y.retain_grad()
    (y ** 2).sum().backward(create_graph=True)
    assert np.array_equal(y.grad.detach().numpy(), [2, 8]) and y.grad.grad_fn is not None
    x.grad = None
    y.grad.sum().backward()
    assert np.array_equal(x.grad.numpy(), [4, 8])


def test_one_over_a_tensor_saves_the_result_so_the_tensor_may_change_in_place():
    # 1 / u is reciprocal(u), which saves 1 / u (as PyTorch's): d(1/u)/du = -1/u^2 at the
    # values u had, u = (2, 4)
    t = cr.tensor([2.0, 4.0], requires_grad=True)
    u = t * 1
    y = 1 / u
    u.mul_(3)
    y.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [-0.25, -0.0625])
    assert np.array_equal(y.detach().numpy(), [0.5, 0.25])
