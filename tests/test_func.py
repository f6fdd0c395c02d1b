"""chainrule.func and chainrule.autograd.functional: known derivatives, agreement of
jacrev / jacfwd / central differences, pytrees, Newton's method."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule import func as F
from chainrule.autograd import functional as AF

try:
    import torch
except ImportError:  # CI has no torch: the comparisons with it are skipped, the rest runs
    torch = None

RNG = np.random.default_rng(3)


def T(a):
    return cr.tensor(np.asarray(a, dtype=float))


def numerical_jacobian(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        plus = f(T(x + e.reshape(x.shape))).numpy()
        minus = f(T(x - e.reshape(x.shape))).numpy()
        cols.append(((plus - minus) / (2 * eps)).reshape(-1))
    out_shape = f(T(x)).shape
    return np.stack(cols, axis=-1).reshape(tuple(out_shape) + x.shape)


W = RNG.standard_normal((3, 5))
FUNCTIONS = {  # R^n -> R^m with n != m
    "tanh_affine": lambda x: (T(W) @ x).tanh(),
    "softmax": lambda x: cr.softmax(T(W) @ x, dim=0),
    "outer_sum": lambda x: cr.outer(x[:2], x[2:]).sum(dim=0),
    "norms": lambda x: cr.stack([cr.linalg.vector_norm(x), x.prod(), cr.logsumexp(x, 0)]),
    "matrix": lambda x: x.reshape(5, 1) @ x[:3].reshape(1, 3),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jacrev_jacfwd_and_central_differences_agree(name):
    f = FUNCTIONS[name]
    x = RNG.standard_normal(5)
    expected = numerical_jacobian(f, x)
    rev = F.jacrev(f)(T(x)).numpy()
    fwd = F.jacfwd(f)(T(x)).numpy()
    assert rev.shape == expected.shape == fwd.shape
    assert np.allclose(rev, expected, atol=1e-6)
    assert np.allclose(fwd, expected, atol=1e-6)


def test_hessian_of_quadratic_form_is_a_plus_a_transpose():
    A = RNG.standard_normal((4, 4))
    H = F.hessian(lambda x: x @ (T(A) @ x))(T(RNG.standard_normal(4)))
    assert np.allclose(H.numpy(), A + A.T)


def test_hessian_of_logsumexp_is_diag_p_minus_p_p_transpose():
    x = RNG.standard_normal(5)
    p = np.exp(x - np.log(np.exp(x).sum()))
    H = F.hessian(lambda x: cr.logsumexp(x, 0))(T(x))
    assert np.allclose(H.numpy(), np.diag(p) - np.outer(p, p))
    assert np.allclose(AF.hessian(lambda x: cr.logsumexp(x, 0), T(x)).numpy(), H.numpy())


def test_jvp_of_matrix_square_is_vx_plus_xv():
    X, V = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    out, tangent = F.jvp(lambda X: X @ X, (T(X),), (T(V),))
    assert np.allclose(out.numpy(), X @ X)
    assert np.allclose(tangent.numpy(), V @ X + X @ V)


def test_vjp_of_matrix_square_is_g_xt_plus_xt_g():
    X, G = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))
    out, vjp_fn = F.vjp(lambda X: X @ X, T(X))
    (gx,) = vjp_fn(T(G))
    assert np.allclose(gx.numpy(), G @ X.T + X.T @ G)


def test_grad_argnums_has_aux_and_value():
    f = lambda x, y: ((x * y).sum(), {"x": x})  # noqa: E731
    x, y = T([1.0, 2.0]), T([3.0, -1.0])
    (gx, gy), aux = F.grad(f, argnums=(0, 1), has_aux=True)(x, y)
    assert np.allclose(gx.numpy(), y.numpy()) and np.allclose(gy.numpy(), x.numpy())
    assert np.array_equal(aux["x"].numpy(), x.numpy()) and not aux["x"].requires_grad
    g, value = F.grad_and_value(lambda x: (x ** 3).sum())(x)
    assert np.allclose(g.numpy(), 3 * x.numpy() ** 2) and np.isclose(value.item(), 9.0)
    with pytest.raises(RuntimeError, match="scalar"):
        F.grad(lambda x: x * 2)(x)


def test_pytree_inputs_and_outputs():
    params = {"w": T(RNG.standard_normal((2, 3))), "b": T(RNG.standard_normal(2))}
    x = T(RNG.standard_normal(3))

    def model(p, x):
        return {"y": p["w"] @ x + p["b"], "s": (p["w"] ** 2).sum()}

    jac = F.jacrev(model)(params, x)
    assert set(jac) == {"y", "s"} and set(jac["y"]) == {"w", "b"}
    assert jac["y"]["w"].shape == (2, 2, 3) and jac["y"]["b"].shape == (2, 2)
    assert np.allclose(jac["y"]["b"].numpy(), np.eye(2))
    assert np.allclose(jac["s"]["w"].numpy(), 2 * params["w"].numpy())
    fwd = F.jacfwd(model)(params, x)
    assert np.allclose(fwd["y"]["w"].numpy(), jac["y"]["w"].numpy())
    grads = F.grad(lambda p: model(p, x)["s"])(params)
    assert np.allclose(grads["w"].numpy(), 2 * params["w"].numpy())


def test_grad_of_grad_and_hvp():
    x = T([0.3, -1.2, 2.0])
    f = lambda x: (x.tanh() * x).sum()  # noqa: E731
    second = F.grad(lambda x: F.grad(f)(x).sum())(x).numpy()
    t, xs = np.tanh(x.numpy()), x.numpy()
    d2 = 2 * (1 - t**2) - 2 * xs * t * (1 - t**2)
    assert np.allclose(second, d2)
    v = T([1.0, 0.5, -2.0])
    (g,), (hv,) = F.hvp(f, (x,), (v,))
    assert np.allclose(hv.numpy(), d2 * v.numpy())
    assert np.allclose(g.numpy(), t + xs * (1 - t**2))
    value, hv2 = AF.hvp(f, x, v)
    assert np.allclose(hv2.numpy(), hv.numpy()) and np.isclose(value.item(), f(x).item())


def test_functional_jacobian_vjp_jvp():
    f = FUNCTIONS["tanh_affine"]
    x = RNG.standard_normal(5)
    J = numerical_jacobian(f, x)
    assert np.allclose(AF.jacobian(f, T(x)).numpy(), J, atol=1e-6)
    assert np.allclose(AF.jacobian(f, T(x), strategy="forward-mode").numpy(), J, atol=1e-6)
    u, v = RNG.standard_normal(3), RNG.standard_normal(5)
    _, uJ = AF.vjp(f, T(x), T(u))
    _, Jv = AF.jvp(f, T(x), T(v))
    assert np.allclose(uJ.numpy(), u @ J, atol=1e-6) and np.allclose(Jv.numpy(), J @ v, atol=1e-6)
    jx, jy = AF.jacobian(lambda a, b: a * b, (T([1.0, 2.0]), T([3.0, 4.0])))
    assert np.allclose(jx.numpy(), np.diag([3.0, 4.0]))
    assert np.allclose(jy.numpy(), np.diag([1.0, 2.0]))


def test_newton_converges_quadratically():
    """Newton's method on a smooth strictly convex function, with grad and hessian."""
    A = RNG.standard_normal((3, 3))
    A = A @ A.T + 3 * np.eye(3)
    f = lambda x: 0.5 * x @ (T(A) @ x) + (x.exp()).sum()  # noqa: E731
    x = T(np.ones(3))
    norms = []
    for _ in range(7):
        g = F.grad(f)(x)
        norms.append(np.linalg.norm(g.numpy()))
        if norms[-1] < 1e-13:
            break
        H = F.hessian(f)(x)
        x = T(x.numpy() - np.linalg.solve(H.numpy(), g.numpy()))
    assert norms[-1] < 1e-12
    # quadratic convergence: e_{k+1} <= C e_k^2 once close
    ratios = [b / a**2 for a, b in zip(norms, norms[1:]) if 1e-10 < a < 1e-1]
    assert ratios and max(ratios) < 10


def test_nested_forward_mode_transforms_compose():
    v = T([1.0, 0.0])

    def g(a):
        return F.jvp(lambda y: (y**3).sum(), (a,), (v,))[1]

    x = T([1.0, 2.0])
    assert np.isclose(g(x).item(), 3.0)  # d/dt sum((x+tv)^3) = 3 x_0^2
    # g(x) = 3 x_0^2: its gradient is (6 x_0, 0), by forward-over-forward and
    # reverse-over-forward alike
    np.testing.assert_allclose(F.jacfwd(g)(x).numpy(), [6.0, 0.0])
    np.testing.assert_allclose(F.jacrev(g)(x).numpy(), [6.0, 0.0])
    np.testing.assert_allclose(F.grad(g)(x).numpy(), [6.0, 0.0])
    # jacfwd(jacfwd(f)) is the Hessian: f = sum(x sin x), H = diag(2 cos x - x sin x)
    a = np.array([0.3, -0.7, 1.2])
    f = lambda t: (t.sin() * t).sum()  # noqa: E731
    H = np.diag(2 * np.cos(a) - a * np.sin(a))
    for outer in (F.jacfwd, F.jacrev):
        for inner in (F.jacfwd, F.jacrev):
            np.testing.assert_allclose(outer(inner(f))(T(a)).numpy(), H, atol=1e-12)
    # jvp inside jvp: d/de [cos(x + e t1) t2] = -sin(x) t1 t2
    t1, t2 = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    inner_jvp = lambda t: F.jvp(lambda y: y.sin(), (t,), (T(t2),))[1]  # noqa: E731
    out, tt = F.jvp(inner_jvp, (T(a),), (T(t1),))
    np.testing.assert_allclose(out.detach().numpy(), np.cos(a) * t2)
    np.testing.assert_allclose(tt.numpy(), -np.sin(a) * t1 * t2)


# --- vmap, linearize, and torch.func's keywords ------------------------------------------


def test_vmap_per_sample_gradients_and_composition():
    from chainrule.func import grad, jacrev, vmap

    rng = np.random.default_rng(3)
    X, y, w = rng.standard_normal((6, 3)), rng.standard_normal(6), rng.standard_normal(3)

    def loss(w, x, t):  # one sample's squared error
        return (x @ w - t) ** 2

    g = vmap(grad(loss), in_dims=(None, 0, 0))(cr.tensor(w), cr.tensor(X), cr.tensor(y))
    np.testing.assert_allclose(g.numpy(), 2 * (X @ w - y)[:, None] * X)  # d/dw (x.w - t)^2
    A = rng.standard_normal((2, 4, 3))
    np.testing.assert_allclose(vmap(vmap(lambda a: a.sin()))(cr.tensor(A)).numpy(), np.sin(A))
    assert vmap(lambda a: a.sum(), in_dims=-1)(cr.tensor(A)).shape == (3,)
    assert vmap(lambda a: a * 2, out_dims=1)(cr.tensor(X)).shape == (3, 6)
    out = vmap(lambda d: {"s": d["a"] + d["b"]}, in_dims=({"a": 0, "b": None},))(
        {"a": cr.tensor(X), "b": cr.tensor(w)})
    np.testing.assert_allclose(out["s"].numpy(), X + w)
    # reverse mode through vmap, and vmap inside jacrev
    x = cr.tensor(X, requires_grad=True)
    vmap(lambda a: (a * a).sum())(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)
    J = jacrev(vmap(lambda a: a.sin()))(cr.tensor(w))
    np.testing.assert_allclose(J.numpy(), np.diag(np.cos(w)))


def test_vmap_errors_and_randomness():
    from chainrule.func import vmap

    X = cr.tensor(np.ones((4, 3)))
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        vmap(lambda a, b: a + b)(X, cr.ones(5, 3))
    with pytest.raises(ValueError, match="at least one input must be mapped"):
        vmap(lambda a: a, in_dims=None)(X)
    with pytest.raises(ValueError, match="in_dim 2 is out of range"):
        vmap(lambda a: a, in_dims=2)(X)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + cr.randn(3))(X)
    same = vmap(lambda a: cr.randn(3), randomness="same")(X).numpy()
    assert np.all(same == same[0])
    different = vmap(lambda a: cr.randn(3), randomness="different")(X).numpy()
    assert not np.all(different == different[0])


def test_linearize_chunked_jacrev_and_strict():
    from chainrule.autograd import functional as AF
    from chainrule.func import jacrev, linearize

    w = np.array([0.2, -1.0, 2.5])
    out, jvp_fn = linearize(lambda a: a.sin(), cr.tensor(w))
    np.testing.assert_allclose(out.numpy(), np.sin(w))
    np.testing.assert_allclose(jvp_fn(cr.tensor([1.0, 2.0, 3.0])).numpy(),
                               np.cos(w) * [1.0, 2.0, 3.0])
    x = cr.tensor(np.arange(7.0))
    np.testing.assert_allclose(jacrev(lambda a: a.sin(), chunk_size=3)(x).numpy(),
                               np.diag(np.cos(np.arange(7.0))))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jvp(lambda a, b: a * 2, (x, x), (x, x), strict=True)
    from chainrule.func import jvp

    with pytest.raises(RuntimeError, match="output 0 of f does not depend on the primals"):
        jvp(lambda a: cr.ones(7), (x,), (x,), strict=True)
    np.testing.assert_allclose(jvp(lambda a: a * 2, (x,), (x,), strict=True)[1].numpy(),
                               2 * np.arange(7.0))
    np.testing.assert_allclose(AF.jvp(lambda a, b: a * 2, (x, x), (x, x))[1].numpy(),
                               2 * np.arange(7.0))


def test_transforms_run_in_threads_at_once():
    import threading

    from chainrule.func import jacfwd

    results, errors = [], []

    def work(seed):
        try:
            a = np.random.default_rng(seed).standard_normal(20)
            for _ in range(10):
                J = jacfwd(lambda t: (t * t).sin())(cr.tensor(a))
            results.append(np.allclose(J.numpy(), np.diag(2 * a * np.cos(a * a))))
        except Exception as err:  # collected: the assertion below shows it
            errors.append(repr(err))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [True] * 4


def test_unpack_dual_gives_back_the_tangent_tensor():
    from chainrule.autograd import forward_ad as fwAD

    p, t = cr.randn(3), cr.randn(3)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t)
        assert fwAD.unpack_dual(d).tangent is t
        np.testing.assert_allclose(fwAD.unpack_dual(d * 2).tangent.numpy(), 2 * t.numpy())


def test_vmap_agrees_with_torch_func():
    from chainrule.func import vmap

    A = np.random.default_rng(4).standard_normal((3, 4, 5))
    # without torch: the nested mapping's values are a bilinear form, and out_dims range
    f = lambda x, y: (x * y).sum()  # noqa: E731
    out = vmap(vmap(f, in_dims=(0, None)), in_dims=(None, 0))(cr.tensor(A[0]), cr.tensor(A[1]))
    np.testing.assert_allclose(out.numpy(), A[1] @ A[0].T)
    with pytest.raises(IndexError, match="Dimension out of range"):
        vmap(lambda a: a.sum(), out_dims=1)(cr.tensor(A))
    cases = [(lambda a: (a * 2, a.sum()), dict(in_dims=2, out_dims=(1, 0))),
             (lambda a: a @ a.T, dict(in_dims=0)),
             (lambda a: a.mean(-1), dict(in_dims=-1, out_dims=-1))]
    # without torch: the same cases against a loop over the mapped dimension, stacked
    # along out_dims (mapping dim 2 of (3, 4, 5): slices A[:, :, k] of shape (3, 4))
    slices = [A[:, :, k] for k in range(5)]
    wants = [(np.stack([2 * s for s in slices], axis=1),
              np.stack([s.sum() for s in slices], axis=0)),
             (np.stack([s @ s.T for s in A], axis=0),),
             (np.stack([s.mean(-1) for s in slices], axis=-1),)]
    for (f, kw), want in zip(cases, wants):
        ours = vmap(f, **kw)(cr.tensor(A))
        ours = ours if isinstance(ours, tuple) else (ours,)
        assert len(ours) == len(want)
        for o, w in zip(ours, want):
            assert o.shape == w.shape
            np.testing.assert_allclose(o.numpy(), w, rtol=1e-12, atol=1e-14)
        if torch is not None:
            import torch.func as tf

            theirs = tf.vmap(f, **kw)(torch.tensor(A))
            theirs = theirs if isinstance(theirs, tuple) else (theirs,)
            for o, t in zip(ours, theirs):
                assert o.shape == tuple(t.shape)
                np.testing.assert_allclose(o.numpy(), t.numpy())


def test_vmap_evaluates_once_on_the_batch_and_never_mixes_batches():
    from chainrule.func import grad, hessian, jacfwd, jacrev, vmap

    calls = []

    def loss(w, x, t):
        calls.append(1)
        z = (x * w).sum()
        return cr.softplus(z) - t * z  # logistic loss of one sample

    rng = np.random.default_rng(9)
    X, y, w = rng.standard_normal((50, 4)), (rng.random(50) < 0.5) * 1.0, rng.standard_normal(4)
    g = vmap(grad(loss), in_dims=(None, 0, 0))(cr.tensor(w), cr.tensor(X), cr.tensor(y))
    p = 1 / (1 + np.exp(-(X @ w)))
    np.testing.assert_allclose(g.numpy(), (p - y)[:, None] * X)  # d/dw: (sigmoid - t) x
    assert len(calls) == 1  # one evaluation for the whole batch
    # an inner transform with a batch of its own (3 rows here, as many as the samples)
    # never meets vmap's batch: the results are those of each sample
    X3 = rng.standard_normal((3, 3))
    f = lambda x: (x.sin() * x).sum()  # noqa: E731
    for transform, ref in ((jacrev(lambda v: v.sin()), [np.diag(np.cos(r)) for r in X3]),
                           (jacfwd(lambda v: v.sin()), [np.diag(np.cos(r)) for r in X3]),
                           (hessian(f), [np.diag(2 * np.cos(r) - r * np.sin(r)) for r in X3])):
        np.testing.assert_allclose(vmap(transform)(cr.tensor(X3)).numpy(), np.stack(ref),
                                   atol=1e-12)
    # a closure over the outer batch inside an inner vmap: an outer product, not a zip
    Y = rng.standard_normal((3, 3))
    out = vmap(lambda a: vmap(lambda b: (a * b).sum())(cr.tensor(Y)))(cr.tensor(X3))
    np.testing.assert_allclose(out.numpy(), X3 @ Y.T)


def test_vmap_chunk_size_maps_a_chunk_at_a_time():
    from chainrule.func import grad, vmap

    X = np.random.default_rng(5).standard_normal((7, 3))
    s, total = vmap(lambda x: (x.sin(), x.sum()), chunk_size=3, out_dims=(1, 0))(cr.tensor(X))
    np.testing.assert_allclose(s.numpy(), np.sin(X).T)
    np.testing.assert_allclose(total.numpy(), X.sum(1))
    g = vmap(grad(lambda x: (x ** 3).sum()), chunk_size=2)(cr.tensor(X))
    np.testing.assert_allclose(g.numpy(), 3 * X ** 2)  # d sum(x^3) = 3x^2



def test_model_ensembling_with_stack_module_state():
    """PyTorch's model-ensembling recipe in our own words: stack the parameters of several
    models, move a copy of one to "meta", and vmap functional_call over the stack."""
    import copy

    from chainrule import nn

    cr.manual_seed(0)
    models = [nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2)) for _ in range(3)]
    params, buffers = F.stack_module_state(models)
    assert list(params) == ["0.weight", "0.bias", "2.weight", "2.bias"] and buffers == {}
    assert params["0.weight"].shape == (3, 5, 4)
    assert params["0.weight"].is_leaf and params["0.weight"].requires_grad
    base = copy.deepcopy(models[0]).to("meta")
    assert np.isnan(np.asarray(base[0].weight.detach())).all()   # no model's numbers there

    def fmodel(p, b, x):
        return F.functional_call(base, (p, b), (x,))

    data = cr.randn(3, 6, 4)
    out = F.vmap(fmodel)(params, buffers, data)
    for i, m in enumerate(models):
        np.testing.assert_allclose(np.asarray(out[i]), np.asarray(m(data[i])), rtol=1e-12)
    same = F.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data[0])
    for i, m in enumerate(models):
        np.testing.assert_allclose(np.asarray(same[i]), np.asarray(m(data[0])), rtol=1e-12)
    out.sum().backward()                  # the stacked parameters are leaves of their own
    np.testing.assert_allclose(np.asarray(params["2.bias"].grad), np.full((3, 2), 6.0))
    assert models[0][2].bias.grad is None
    with pytest.raises(RuntimeError, match="same class"):
        F.stack_module_state([nn.Linear(2, 2), nn.Tanh()])
    with pytest.raises(RuntimeError, match="at least one model"):
        F.stack_module_state([])
    models[1].eval()
    with pytest.raises(RuntimeError, match="training/eval mode"):
        F.stack_module_state(models)


def test_batch_norm_without_running_stats_and_identity_transforms():
    from chainrule import nn

    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert F.replace_all_batch_norm_modules_(net) is net
    bn = net[1]
    assert bn.running_mean is None and bn.running_var is None and not bn.track_running_stats
    x = cr.randn(5, 3)
    y = net(x)                            # batch statistics: each column has mean 0
    np.testing.assert_allclose(np.asarray(y.detach()).mean(0), np.zeros(4), atol=1e-12)
    f = lambda t: t.sin()                 # noqa: E731
    assert F.functionalize(f) is f
    with pytest.raises(ValueError, match="remove"):
        F.functionalize(f, remove="views")
    assert F.debug_unwrap(x) is x


@pytest.mark.parametrize("loss_name, kwargs", [
    # 'sum' where a sample may be ignored: a mean over no counted entry is 0/0 (NaN), as
    # in PyTorch
    ("nll_loss", {}), ("nll_loss", {"ignore_index": 2, "reduction": "sum"}),
    ("cross_entropy", {}), ("cross_entropy", {"label_smoothing": 0.1}),
    ("cross_entropy", {"weight": "w", "ignore_index": 0, "reduction": "sum"}),
])
def test_per_sample_gradients_of_class_index_losses_run_batched(loss_name, kwargs):
    """vmap(grad(loss)) over integer class targets runs the loss once on the whole batch
    (the pick is a one-hot ``where``), with the per-sample loop's gradients."""
    from chainrule.nn import functional as NF

    rng = np.random.default_rng(3)
    X = cr.tensor(rng.standard_normal((6, 4)))
    y = cr.tensor(np.array([0, 2, 1, 2, 0, 1]))
    W = cr.tensor(rng.standard_normal((3, 4)))
    kw = {k: (cr.tensor([0.5, 1.0, 2.0]) if v == "w" else v) for k, v in kwargs.items()}
    fn = getattr(NF, loss_name)
    calls = []

    def loss(w, x, t):
        calls.append(1)
        logits = (w @ x).unsqueeze(0)
        inp = NF.log_softmax(logits, 1) if loss_name == "nll_loss" else logits
        return fn(inp, t.unsqueeze(0), **kw)

    per = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(W, X, y)
    assert len(calls) == 1                                 # one batched evaluation
    calls.clear()
    loop = [F.grad(loss)(W, X[i], y[i]) for i in range(6)]
    np.testing.assert_allclose(np.asarray(per), np.stack([np.asarray(g) for g in loop]),
                               rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(np.asarray(per)))
    if "ignore_index" in kwargs:  # an ignored sample has no gradient
        ignored = np.asarray(y) == kwargs["ignore_index"]
        assert np.all(np.asarray(per)[ignored] == 0) and np.any(np.asarray(per)[~ignored])
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.vmap(F.grad(loss), in_dims=(None, 0, 0))(W, X, cr.tensor([0, 1, 7, 0, 0, 0]))


def test_vmap_falls_back_when_numpy_reduces_a_batch():
    """A function that reduces a tensor's data with NumPy (binary_cross_entropy checks its
    input's range with np.min) used to make vmap raise TypeError; it now evaluates once
    per sample, with the loop's values."""
    from chainrule.nn import functional as NF

    rng = np.random.default_rng(4)
    X, W = cr.tensor(rng.standard_normal((4, 3))), cr.tensor(rng.standard_normal((2, 3)))
    T = cr.tensor(rng.random((4, 2)))

    def loss(w, x, t):
        return NF.binary_cross_entropy((w @ x).sigmoid(), t)

    per = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(W, X, T)
    loop = np.stack([np.asarray(F.grad(loss)(W, X[i], T[i])) for i in range(4)])
    np.testing.assert_allclose(np.asarray(per), loop, rtol=1e-12)
    out = F.vmap(lambda x: cr.tensor(1.0) * x.exp())(X)   # elementwise NumPy stays batched
    np.testing.assert_allclose(np.asarray(out), np.exp(np.asarray(X)))


def _functional_program(m):
    """autograd.functional's results and whether they carry a graph, for inputs with and
    without requires_grad, with and without create_graph."""
    fa = m.autograd.functional
    res = []
    for needs in (False, True):
        for create in (False, True):
            x = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=needs)
            u = m.tensor([1.0, 2.0, 3.0], dtype=m.float64)
            outs = [fa.hessian(lambda v: (v ** 3).sum() * 0.5, x, create_graph=create),
                    fa.jacobian(lambda v: v.sin() * v, x, create_graph=create),
                    *fa.vjp(lambda v: v.sin() * v, x, u, create_graph=create),
                    *fa.jvp(lambda v: v.sin() * v, x, u, create_graph=create),
                    *fa.hvp(lambda v: (v ** 3).sum() * 0.5, x, u, create_graph=create)]
            res.append([(bool(o.requires_grad), np.asarray(o.detach()).tolist()) for o in outs])
    return res


def test_functional_create_graph_as_pytorch():
    """create_graph=False gives detached results (as PyTorch's _grad_postprocess), True
    results with a graph even for an input that did not require grad; the values are the
    derivatives either way (hvp's first result is f(x), not its gradient)."""
    res = _functional_program(cr)
    x, u = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    dg = np.cos(x) * x + np.sin(x)                        # d/dx of x sin(x)
    for k, create in enumerate([False, True, False, True]):
        assert [flag for flag, _ in res[k]] == [create] * 8
        h, j, gx, vj, gx2, jv, value, hv = (np.array(v) for _, v in res[k])
        np.testing.assert_allclose(h, np.diag(3 * x))
        np.testing.assert_allclose(j, np.diag(dg))
        np.testing.assert_allclose(gx, np.sin(x) * x)
        np.testing.assert_allclose(vj, u * dg)
        np.testing.assert_allclose(jv, u * dg)
        np.testing.assert_allclose(value, 0.5 * (x ** 3).sum())
        np.testing.assert_allclose(hv, 3 * x * u)
    x2 = cr.tensor([0.5, -1.0, 2.0], requires_grad=True)
    cr.autograd.functional.hessian(lambda v: (v ** 3).sum(), x2,
                                   create_graph=True).sum().backward()
    np.testing.assert_allclose(np.asarray(x2.grad), [6.0, 6.0, 6.0])
    if torch is not None:
        for ours, theirs in zip(res, _functional_program(torch)):
            assert [f for f, _ in ours] == [f for f, _ in theirs]
            for (_, a), (_, b) in zip(ours, theirs):
                np.testing.assert_allclose(a, b, rtol=1e-12)


# --- an outer derivative through what an inner transform closed over ---------------------

X0 = np.array([0.3, -1.2, 0.7])
C0 = np.array([1.1, 0.5, -0.4])


def _inner(x):
    """grad_y sum(x * y^2) at y = C0, a function of the closed-over x: 2 x C0."""
    return F.grad(lambda y: (x * y ** 2).sum())(cr.tensor(C0))


@pytest.mark.parametrize("outer", ["grad", "grad_argnums", "jvp", "jacfwd", "jacrev", "autograd"])
def test_outer_transform_sees_through_an_inner_transforms_closure(outer):
    # d/dx sum(2 x c) = 2 c; each outer way of asking for it (was zeros: the inner grad
    # detached its result because its own input needed no outer derivative)
    x = cr.tensor(X0)
    if outer == "grad":
        got = F.grad(lambda x: _inner(x).sum())(x)
    elif outer == "grad_argnums":
        got = F.grad(lambda a, b: F.grad(lambda a, b: (a * b ** 2).sum(), argnums=1)(a, b)
                     .sum())(x, cr.tensor(C0))
    elif outer == "jvp":  # J t with t = 1: J = diag(2 c)
        got = F.jvp(_inner, (x,), (cr.ones(3),))[1]
    elif outer == "jacfwd":
        got = F.jacfwd(_inner)(x).diagonal()
    elif outer == "jacrev":
        got = F.jacrev(_inner)(x).diagonal()
    else:  # plain autograd around a transform
        w = cr.tensor(X0, requires_grad=True)
        _inner(w).sum().backward()
        got = w.grad
    np.testing.assert_allclose(got.numpy(), 2 * C0, rtol=1e-14)
    assert outer == "autograd" or not got.requires_grad  # the top-level result: no graph


@pytest.mark.parametrize("inner", ["vjp", "jacrev", "jvp", "linearize"])
def test_grad_of_other_inner_transforms_of_a_closure(inner):
    x, c, t = cr.tensor(X0), cr.tensor(C0), cr.ones(3)

    def f(x):
        if inner == "vjp":    # u^T J with J = diag(2 x c) for y -> x * y^2 at c, u = 1
            return F.vjp(lambda y: x * y ** 2, c)[1](t)[0].sum()
        if inner == "jacrev":
            return F.jacrev(lambda y: x * y ** 2)(c).sum()
        if inner == "jvp":    # J t
            return F.jvp(lambda y: x * y ** 2, (c,), (t,))[1].sum()
        return F.linearize(lambda y: x * y ** 2, c)[0].sum()  # sum(x c^2), its primal
    got = F.grad(f)(x).numpy()
    expect = C0 ** 2 if inner == "linearize" else 2 * C0
    np.testing.assert_allclose(got, expect, rtol=1e-14)


def test_linearize_primal_output_keeps_its_graph():
    x = cr.tensor(X0)
    got = F.grad(lambda x: F.linearize(cr.sin, x)[0].sum())(x)
    np.testing.assert_allclose(got.numpy(), np.cos(X0), rtol=1e-15)


def test_jacfwd_and_hessian_of_a_0d_input_are_0d():
    x = cr.tensor(0.3)
    j, h = F.jacfwd(cr.sin)(x), F.hessian(cr.sin)(x)
    assert j.shape == () and h.shape == ()
    np.testing.assert_allclose([j.item(), h.item()], [np.cos(0.3), -np.sin(0.3)], rtol=1e-15)


def test_forward_over_reverse_of_a_rule_in_log_space():
    # logcumsumexp's VJP splits the cotangent by sign in log space: linear, but not smooth at
    # a zero cotangent, where the double-backward trick used to linearize it (giving zeros)
    x = cr.tensor(X0)

    def lcse_sum(z):
        return cr.logcumsumexp(z, 0).sum()

    fwd_fwd = F.jacfwd(F.jacfwd(lcse_sum))(x).numpy()
    rev_rev = F.jacrev(F.jacrev(lcse_sum))(x).numpy()
    np.testing.assert_allclose(fwd_fwd, rev_rev, rtol=1e-12, atol=1e-15)
    # the Hessian against central differences of the (exact) gradient
    g = F.grad(lcse_sum)
    h = 1e-6
    fd = np.stack([(g(cr.tensor(X0 + h * e)).numpy() - g(cr.tensor(X0 - h * e)).numpy()) / (2 * h)
                   for e in np.eye(3)])
    np.testing.assert_allclose(rev_rev, fd, rtol=1e-6, atol=1e-9)
    got = F.grad(lambda x: F.jvp(lambda z: cr.logcumsumexp(z, 0), (x,), (cr.tensor(C0),))[1]
                 .sum())(x).numpy()
    np.testing.assert_allclose(got, fd @ C0, rtol=1e-6, atol=1e-9)  # H symmetric: H c


class _ExpSavingOutput(cr.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x.exp()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y


class _MulFn(cr.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x, y):
        return x * y

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.save_for_forward(*inputs)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x

    @staticmethod
    def jvp(ctx, tx, ty):
        x, y = ctx.saved_tensors
        return tx * y + x * ty


@pytest.mark.parametrize("how", ["hessian", "jacfwd_jacrev", "jacrev_jacrev", "jvp_grad"])
def test_forward_over_reverse_through_a_function_that_saves_its_output(how):
    # d^2/dx^2 sum(exp(x)) = diag(exp(x)); the backward reads the saved output, whose
    # tangent must come along (it was dropped: zeros)
    x = cr.tensor(X0)

    def f(x):
        return _ExpSavingOutput.apply(x).sum()

    if how == "jvp_grad":
        got = F.jvp(F.grad(f), (x,), (cr.ones(3),))[1].numpy()
    else:
        outer = {"hessian": F.hessian, "jacfwd_jacrev": lambda g: F.jacfwd(F.jacrev(g)),
                 "jacrev_jacrev": lambda g: F.jacrev(F.jacrev(g))}[how]
        got = outer(f)(x).numpy().diagonal()
    np.testing.assert_allclose(got, np.exp(X0), rtol=1e-14)


def test_function_jvp_gets_zeros_for_an_input_without_tangent():
    import chainrule.autograd.forward_ad as fwAD

    x, y, t = cr.tensor(X0), cr.tensor(C0), cr.tensor([1.0, 2.0, 3.0])
    with fwAD.dual_level():
        out = _MulFn.apply(x, fwAD.make_dual(y, t))
        tangent = fwAD.unpack_dual(out).tangent
    np.testing.assert_allclose(tangent.numpy(), X0 * np.array([1.0, 2.0, 3.0]), rtol=1e-15)
    h = F.hessian(lambda a, b: _MulFn.apply(a.sin(), b.cos()).sum(), argnums=1)(x, y)
    np.testing.assert_allclose(h.numpy().diagonal(), -np.sin(X0) * np.cos(C0), rtol=1e-14)


@pytest.mark.parametrize("inner", ["jacfwd", "hessian"])
def test_grad_of_jacfwd_and_hessian_of_a_closure(inner):
    # d/dx of sum_i x_i cos(x_i c) (jacfwd of sin(x c) in c) and of -sum x^2 sin(x c)
    # (the Hessian in c), at c = 1.5; was zeros: jacfwd's forward pass dropped the graph
    x, c = cr.tensor(X0), cr.tensor(1.5)
    if inner == "jacfwd":
        got = F.grad(lambda x: F.jacfwd(lambda k: cr.sin(x * k))(c).sum())(x)
        expect = np.cos(X0 * 1.5) - X0 * 1.5 * np.sin(X0 * 1.5)
    else:
        got = F.grad(lambda x: F.hessian(lambda k: cr.sin(x * k).sum())(c))(x)
        expect = -2 * X0 * np.sin(X0 * 1.5) - X0 ** 2 * 1.5 * np.cos(X0 * 1.5)
    np.testing.assert_allclose(got.numpy(), expect, rtol=1e-13)
