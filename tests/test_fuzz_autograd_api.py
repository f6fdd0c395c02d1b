"""Autograd API fixes found by differential fuzzing against PyTorch (hooks, retain_grad,
backward(inputs=), autograd.grad options, graph edges, anomaly mode, custom Functions).

Each test checks values derived by hand (or an invariant) and, where PyTorch is
importable, PyTorch's own answer."""

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:
    torch = None


def _t(mod, values, requires_grad=True):
    return mod.tensor(np.array(values, dtype=np.float64), requires_grad=requires_grad)


def _np(t):
    return None if t is None else np.asarray(t.detach().numpy())


# --- backward(inputs=) with a non-leaf input ------------------------------------------------

def _backward_inputs_nonleaf(mod, with_hook):
    x = _t(mod, [1.0, 2.0, 3.0])
    y = x * 2
    if with_hook:
        y.register_hook(lambda g: g * 5)
    (y * y).sum().backward(inputs=[y, x] if with_hook else [y])
    return _np(y.grad), _np(x.grad), y.retains_grad


def test_backward_inputs_nonleaf_accumulates_into_its_grad():
    # d/dy sum(y^2) = 2y = 4x; x is not an input, so x.grad stays None
    gy, gx, retains = _backward_inputs_nonleaf(cr, False)
    assert np.allclose(gy, [4.0, 8.0, 12.0]) and gx is None and retains
    # the hook (x5) changes y.grad (retain_grad runs after it) and what flows on to x
    gy, gx, _ = _backward_inputs_nonleaf(cr, True)
    assert np.allclose(gy, [20.0, 40.0, 60.0]) and np.allclose(gx, [40.0, 80.0, 120.0])
    if torch is not None:
        for hook in (False, True):
            ours, theirs = _backward_inputs_nonleaf(cr, hook), _backward_inputs_nonleaf(
                torch, hook)
            for a, b in zip(ours[:2], theirs[:2]):
                assert (a is None and b is None) or np.allclose(a, b)


def test_backward_inputs_empty_or_not_requiring_grad_raises():
    for mod in (cr, torch) if torch is not None else (cr,):
        x = _t(mod, [1.0, 2.0])
        with pytest.raises(RuntimeError, match="cannot be empty"):
            (x * x).sum().backward(inputs=[])
        w = _t(mod, [1.0, 2.0], requires_grad=False)
        with pytest.raises(RuntimeError, match="retain_grad"):
            (x * x).sum().backward(inputs=[w])


# --- autograd.grad: materialize_grads with allow_unused=False ---------------------------------

def test_materialize_grads_with_allow_unused_false_is_a_value_error():
    for mod in (cr, torch) if torch is not None else (cr,):
        x, w = _t(mod, [1.0, 2.0]), _t(mod, [3.0, 4.0])
        with pytest.raises(ValueError, match="allow_unused"):
            mod.autograd.grad((x * x).sum(), [x, w], materialize_grads=True,
                              allow_unused=False)
        gx, gw = mod.autograd.grad((x * x).sum(), [x, w], materialize_grads=True)
        assert np.allclose(_np(gx), [2.0, 4.0]) and np.allclose(_np(gw), [0.0, 0.0])


# --- autograd.grad of a captured non-leaf: hooks and what runs -------------------------------

def _grad_nonleaf_with_hook(mod, inputs):
    x = _t(mod, [1.0, 2.0, 3.0])
    y = x * 2
    y.register_hook(lambda g: g * 5)
    z = (y * y).sum()
    return [_np(g) for g in mod.autograd.grad(z, [y, x] if inputs == "yx" else [y])]


def test_grad_of_a_nonleaf_that_leads_on_is_captured_before_its_hooks():
    # dz/dy = 2y = 4x = [4, 8, 12]. Asked for alone, y's hook (x5) applies: [20, 40, 60].
    # Asked for with x, y's node runs on, and (PyTorch's engine) y's gradient is captured
    # before its hooks, which change only what flows on to x: 5 * 4x * 2 = [40, 80, 120].
    (gy,) = _grad_nonleaf_with_hook(cr, "y")
    assert np.allclose(gy, [20.0, 40.0, 60.0])
    gy, gx = _grad_nonleaf_with_hook(cr, "yx")
    assert np.allclose(gy, [4.0, 8.0, 12.0]) and np.allclose(gx, [40.0, 80.0, 120.0])
    if torch is not None:
        for which in ("y", "yx"):
            for a, b in zip(_grad_nonleaf_with_hook(cr, which),
                            _grad_nonleaf_with_hook(torch, which)):
                assert np.allclose(a, b)


def _grad_stops_at_captured(mod):
    log = []
    x = _t(mod, [1.0, 2.0])
    y = x.exp()
    y.register_hook(lambda g: g + 1)
    y.grad_fn.register_prehook(lambda go: (log.append("pre"), (go[0] * 2,))[1])
    y.grad_fn.register_hook(lambda gi, go: log.append("post"))
    (g,) = mod.autograd.grad((y * 3).sum(), [y])
    # y's node did not run, so its saved values were not freed: a second pass works
    (gx,) = mod.autograd.grad((y * 3).sum(), [x])
    return _np(g), _np(gx), log


def test_grad_of_a_captured_node_that_leads_nowhere_does_not_run_it():
    g, gx, log = _grad_stops_at_captured(cr)
    assert np.allclose(g, [4.0, 4.0])  # 3 + 1 (the tensor hook); the node's prehook not
    # x: (3 + 1) * 2 (prehook) * exp(x), the second pass running the whole node
    assert np.allclose(gx, 8.0 * np.exp([1.0, 2.0]))
    assert log == ["pre", "post"]  # only from the second pass
    if torch is not None:
        tg, tgx, tlog = _grad_stops_at_captured(torch)
        assert np.allclose(g, tg) and np.allclose(gx, tgx) and log == tlog


# --- register_hook on a node: grad_inputs of the inputs' shapes -------------------------------

def _post_hook_broadcast(mod):
    seen = []
    x, w = _t(mod, [1.0, 2.0, 3.0]), _t(mod, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (seen.append(tuple(gi[0].shape)),
                                            (gi[0] * 2, gi[1]))[1])
    y.sum().backward()
    return seen, _np(x.grad), _np(w.grad)


def test_node_post_hook_sees_and_returns_gradients_of_the_input_shapes():
    seen, gx, gw = _post_hook_broadcast(cr)
    # d sum(x * w)/dx = column sums of w = [5, 7, 9], doubled by the hook
    assert seen == [(3,)]
    assert np.allclose(gx, [10.0, 14.0, 18.0]) and np.allclose(gw, [[1, 2, 3], [1, 2, 3]])
    if torch is not None:
        tseen, tgx, tgw = _post_hook_broadcast(torch)
        assert seen == tseen and np.allclose(gx, tgx) and np.allclose(gw, tgw)


def _post_hook_masked(mod):
    seen = []
    x, w = _t(mod, [1.0, 2.0]), _t(mod, [3.0, 4.0])
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: seen.append([g is None for g in gi]))
    mod.autograd.grad(y.sum(), [x])
    return seen


def test_node_post_hook_gets_none_for_an_input_not_asked_for():
    assert _post_hook_masked(cr) == [[False, True]]  # w's gradient is not computed
    if torch is not None:
        assert _post_hook_masked(torch) == [[False, True]]


# --- an array a hook was given never becomes a .grad that is added into later ----------------

def _hook_holds_gradient(mod, where):
    held = []
    x = _t(mod, [1.0, 2.0])
    if where == "leaf":
        x.register_hook(held.append)
        y = x * 3
    elif where == "node_post":
        y = x * 3
        y.grad_fn.register_hook(lambda gi, go: held.append(gi[0]))
    else:  # a prehook on the leaf's AccumulateGrad node
        y = x * 3
        y.grad_fn.next_functions[0][0].register_prehook(lambda go: held.append(go[0]))
    y.sum().backward()
    (x * 5).sum().backward()
    return _np(held[0]), _np(x.grad)


@pytest.mark.parametrize("where", ["leaf", "node_post", "acc_prehook"])
def test_gradient_given_to_a_hook_is_not_changed_by_a_later_backward(where):
    held, grad = _hook_holds_gradient(cr, where)
    assert np.allclose(held, [3.0, 3.0])  # what the first pass gave the hook
    assert np.allclose(grad, [8.0, 8.0])  # 3 + 5
    if torch is not None:
        theld, tgrad = _hook_holds_gradient(torch, where)
        assert np.allclose(held, theld) and np.allclose(grad, tgrad)


# --- retain_graph=False with create_graph=True frees the graph --------------------------------

def test_explicit_retain_graph_false_with_create_graph_frees_the_graph():
    for mod in (cr, torch) if torch is not None else (cr,):
        x = _t(mod, [1.0, 2.0])
        y = x.exp()
        y.sum().backward(retain_graph=False, create_graph=True)
        assert np.allclose(_np(x.grad), np.exp([1.0, 2.0]))
        with pytest.raises(RuntimeError, match="second time"):
            y.sum().backward()
        # without retain_graph, create_graph keeps it (the default retain_graph)
        x2 = _t(mod, [1.0, 2.0])
        y2 = x2.exp()
        y2.sum().backward(create_graph=True)
        y2.sum().backward()
        assert np.allclose(_np(x2.grad), 2 * np.exp([1.0, 2.0]))


# --- torch.autograd.graph.get_gradient_edge ---------------------------------------------------

def _edges(mod):
    x = _t(mod, [1.0, 2.0, 3.0])
    y = x * 2
    e = mod.autograd.graph.get_gradient_edge(y)
    y.mul_(3)  # the edge still names y's value before the in-place change
    z = (y * y).sum()
    ge, gy, gx = mod.autograd.grad(z, [e, y, x], retain_graph=True)
    (gx_alone,) = mod.autograd.grad(z, mod.autograd.graph.get_gradient_edge(x))
    return e.output_nr, _np(ge), _np(gy), _np(gx), _np(gx_alone)


def test_get_gradient_edge_as_grad_input():
    nr, ge, gy, gx, gx_alone = _edges(cr)
    y = 6 * np.array([1.0, 2.0, 3.0])  # y = 3 * (2x)
    assert nr == 0
    assert np.allclose(gy, 2 * y) and np.allclose(ge, 3 * 2 * y)
    assert np.allclose(gx, 2 * 3 * 2 * y) and np.allclose(gx_alone, gx)
    if torch is not None:
        for a, b in zip(_edges(cr), _edges(torch)):
            assert np.allclose(a, b)


def test_get_gradient_edge_errors():
    for mod in (cr, torch) if torch is not None else (cr,):
        with pytest.raises(RuntimeError, match="does not require gradients"):
            mod.autograd.graph.get_gradient_edge(mod.ones(2))
        x, w = _t(mod, [1.0, 2.0]), _t(mod, [1.0, 2.0])
        e = mod.autograd.graph.get_gradient_edge(w)
        assert mod.autograd.grad((x * x).sum(), [e], allow_unused=True,
                                 retain_graph=True) == (None,)
        with pytest.raises(RuntimeError, match="GradientEdge"):
            mod.autograd.grad((x * x).sum(), [e], materialize_grads=True)


# --- set_detect_anomaly(True) as a call --------------------------------------------------------

def test_set_detect_anomaly_called_switches_anomaly_mode_on_and_off():
    try:
        cr.autograd.set_detect_anomaly(True)
        assert cr.autograd.is_anomaly_enabled()
        x = _t(cr, [0.0, 1.0])
        with pytest.raises(RuntimeError):
            (x.sqrt() * 0).sum().backward()  # 0 * inf = NaN in SqrtBackward0
    finally:
        cr.autograd.set_detect_anomaly(False)
    assert not cr.autograd.is_anomaly_enabled()
    with cr.autograd.set_detect_anomaly(True):
        assert cr.autograd.is_anomaly_enabled()
    assert not cr.autograd.is_anomaly_enabled()
    if torch is not None:
        prev = torch.is_anomaly_enabled()
        torch.autograd.set_detect_anomaly(True)
        assert torch.is_anomaly_enabled()
        torch.autograd.set_detect_anomaly(prev)


# --- custom Function: a backward that saved nothing runs again; broadcast gradients ---------

def _function_twice(mod):
    class Scale(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = _t(mod, [1.0, 2.0])
    y = Scale.apply(x, 2.0)
    y.sum().backward()
    y.sum().backward()  # no saved tensors were freed: PyTorch runs it again
    return _np(x.grad)


def test_function_without_saved_tensors_backward_twice():
    assert np.allclose(_function_twice(cr), [4.0, 4.0])
    if torch is not None:
        assert np.allclose(_function_twice(torch), [4.0, 4.0])


def test_function_saved_tensors_after_free_still_raises():
    class Sq(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = _t(cr, [1.0, 2.0])
    s = Sq.apply(x).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="second time"):
        s.backward()


def _function_broadcast_grad(mod, create_graph):
    class Twice(mod.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return (g * x).expand(3, 2)  # the input's gradient, broadcast to (3, 2)

    x = _t(mod, [1.0, 2.0])
    (g,) = mod.autograd.grad(Twice.apply(x).sum(), x, create_graph=create_graph)
    if create_graph:
        g.sum().backward()
        return _np(g), _np(x.grad)
    return _np(g), None


def test_function_backward_broadcast_gradient_is_summed_back():
    # each of the 3 broadcast rows carries g * x = x: summed back, 3x
    g, _ = _function_broadcast_grad(cr, False)
    assert np.allclose(g, [3.0, 6.0])
    g, gg = _function_broadcast_grad(cr, True)
    assert np.allclose(g, [3.0, 6.0]) and np.allclose(gg, [3.0, 3.0])
    if torch is not None:
        for cg in (False, True):
            for a, b in zip(_function_broadcast_grad(cr, cg),
                            _function_broadcast_grad(torch, cg)):
                assert (a is None and b is None) or np.allclose(a, b)


def test_numpy_under_no_grad_and_gradgradcheck_of_a_once_differentiable_backward():
    # x.numpy() of a tensor that requires grad is allowed with grad mode off (a custom
    # Function's forward calling NumPy, as torch.func's tutorial does); gradgradcheck with
    # raise_exception=False returns False for a backward marked @once_differentiable
    from chainrule.autograd import Function, once_differentiable

    x = cr.tensor([1.0, 2.0], requires_grad=True)
    with cr.no_grad():
        assert x.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()

    class SquareOnce(Function):
        @staticmethod
        def forward(ctx, v):
            ctx.save_for_backward(v)
            return cr.tensor(np.square(v.numpy()))  # NumPy in forward (grad mode is off)

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (v,) = ctx.saved_tensors
            return 2 * v * g

    assert cr.autograd.gradcheck(SquareOnce.apply, (x,))
    assert cr.autograd.gradgradcheck(SquareOnce.apply, (x,), raise_exception=False) is False
    if torch is not None:
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        with torch.no_grad():
            assert t.numpy().tolist() == [1.0, 2.0]
