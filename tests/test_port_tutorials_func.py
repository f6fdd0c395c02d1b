"""Regressions found by porting PyTorch's tutorials on function transforms and custom
autograd Functions (jacobians_hessians, ensembling, neural_tangent_kernels,
per_sample_grads, forward_ad_usage, custom_function_double_backward,
custom_function_conv_bn, polynomial_custom_function, the functorch whirlwind tour).

Expected values come from hand formulas, finite differences (gradcheck) or a second
chainrule computation; PyTorch, where installed, is only compared against in addition.
"""

import math

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
import chainrule.nn as nn
import chainrule.nn.functional as F
from chainrule.func import functional_call, grad, jacrev, jvp, stack_module_state, vjp, vmap

try:
    import torch
    import torch.autograd.forward_ad as tfwAD
except ImportError:  # pragma: no cover - torch is optional
    torch = None


def _t(a, lib=cr):
    return lib.tensor(np.asarray(a, dtype=np.float64))


# --- forward_ad_usage: make_dual copies a tangent laid out unlike the primal -------------

def _dual_tangents(lib, fw):
    p = lib.tensor(np.arange(12.0).reshape(3, 4))
    t = lib.tensor(np.arange(12.0).reshape(4, 3) * 0.5 + 1)
    big = lib.tensor(np.arange(20.0).reshape(5, 4))
    out = {}
    with fw.dual_level():
        same = lib.tensor(np.ones((3, 4)))
        out["same"] = (fw.unpack_dual(fw.make_dual(p, same)).tangent, same)
        out["transposed"] = (fw.unpack_dual(fw.make_dual(p, t.T)).tangent, t.T)
        out["slice"] = (fw.unpack_dual(fw.make_dual(p, big[1:4])).tangent, big[1:4])
        out["primal_transposed"] = (fw.unpack_dual(fw.make_dual(p.T, t)).tangent, t)
    return out


def test_make_dual_uses_a_tangent_of_the_primals_layout_as_it_is():
    got, given = _dual_tangents(cr, fwAD)["same"]
    assert got is given


@pytest.mark.parametrize("case", ["transposed", "slice", "primal_transposed"])
def test_make_dual_copies_a_tangent_laid_out_unlike_the_primal(case):
    got, given = _dual_tangents(cr, fwAD)[case]
    assert got is not given
    np.testing.assert_array_equal(got.numpy(), given.numpy())
    primal_strides = {"transposed": (4, 1), "slice": (4, 1), "primal_transposed": (1, 4)}
    assert got.stride() == primal_strides[case]
    given.add_(100.0)  # the dual's tangent is a copy: it does not follow the tensor passed
    assert not np.shares_memory(got.numpy(), given.numpy())
    assert float(got.numpy().max()) < 100.0
    if torch is not None:
        tgot, tgiven = _dual_tangents(torch, tfwAD)[case]
        assert tgot is not tgiven and tgot.stride() == got.stride()
        np.testing.assert_array_equal(tgot.numpy(), _dual_tangents(cr, fwAD)[case][0].numpy())


def test_forward_ad_tutorial_module_and_functional_call_jvps_agree():
    rng = np.random.default_rng(0)
    W, b, x = rng.standard_normal((5, 5)), rng.standard_normal(5), rng.standard_normal((16, 5))
    tW, tb = rng.random((5, 5)), rng.random(5)
    model = nn.Linear(5, 5)
    with cr.no_grad():
        model.weight.copy_(_t(W))
        model.bias.copy_(_t(b))
    with fwAD.dual_level():
        dual = {"weight": fwAD.make_dual(_t(W), _t(tW)), "bias": fwAD.make_dual(_t(b), _t(tb))}
        jvp2 = fwAD.unpack_dual(functional_call(model, dual, _t(x))).tangent
    np.testing.assert_allclose(jvp2.numpy(), x @ tW.T + tb, rtol=1e-13, atol=1e-13)


# --- a Function with a vmap staticmethod under vmap(grad) and vmap(jvp) -------------------

def _sort_fn(lib):
    class Sort(lib.autograd.Function):
        @staticmethod
        def forward(x):
            idx = x.argsort(dim=0)
            return x.gather(0, idx), idx

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, idx = output
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)

        @staticmethod
        def backward(ctx, g, _):
            (idx,) = ctx.saved_tensors
            return lib.zeros_like(g).scatter(0, idx, g)  # scatter with the saved index

        @staticmethod
        def vmap(info, in_dims, x):
            out, idx = Sort.apply(x.movedim(in_dims[0], 1))  # sorts along dim 0
            return (out, idx), (1, 1)

    return Sort


def _place_fn(lib):
    class Place(lib.autograd.Function):
        @staticmethod
        def forward(x, idx):
            return lib.zeros_like(x).scatter(0, idx, x)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[1])
            ctx.save_for_backward(inputs[1])

        @staticmethod
        def backward(ctx, g):
            (idx,) = ctx.saved_tensors
            return g.gather(0, idx), None

        @staticmethod
        def jvp(ctx, t, _):
            (idx,) = ctx.saved_tensors
            return lib.zeros_like(t).scatter(0, idx, t)

        @staticmethod
        def vmap(info, in_dims, x, idx):
            return Place.apply(x.movedim(in_dims[0], 1), idx.movedim(in_dims[1], 1)), 1

    return Place


X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
IDX = np.array([[2, 0, 1], [1, 2, 0]])


def test_vmap_of_grad_through_a_function_with_a_vmap_rule():
    Sort = _sort_fn(cr)
    w = _t([1.0, 10.0, 100.0])
    x = _t(X)
    got = vmap(grad(lambda x: (Sort.apply(x)[0] * w).sum()))(x)
    # d/dx_j sum_k w_k sorted_k = w[rank of x_j]
    expect = np.array([[100.0, 1.0, 10.0], [1.0, 100.0, 10.0]])
    np.testing.assert_array_equal(got.numpy(), expect)
    per_sample = cr.stack([grad(lambda v: (Sort.apply(v)[0] * w).sum())(x[i]) for i in range(2)])
    np.testing.assert_array_equal(per_sample.numpy(), expect)
    if torch is not None:
        TSort = _sort_fn(torch)
        tw = torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)
        tgot = torch.func.vmap(torch.func.grad(lambda x: (TSort.apply(x)[0] * tw).sum()))(
            torch.tensor(X))
        np.testing.assert_array_equal(tgot.numpy(), expect)


def test_vmap_of_jvp_and_grad_through_a_function_with_a_vmap_rule():
    Place = _place_fn(cr)
    x, idx = _t(X), cr.tensor(IDX)
    t = _t([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]])
    out, tan = vmap(lambda x, t, i: jvp(lambda x: Place.apply(x, i), (x,), (t,)))(x, t, idx)
    place = np.zeros_like(X)
    tplace = np.zeros_like(X)
    for b in range(2):
        place[b, IDX[b]] = X[b]
        tplace[b, IDX[b]] = t.numpy()[b]
    np.testing.assert_array_equal(out.numpy(), place)
    np.testing.assert_array_equal(tan.numpy(), tplace)
    w = _t([1.0, 10.0, 100.0])
    g = vmap(grad(lambda x, i: (Place.apply(x, i) * w).sum()))(x, idx)
    np.testing.assert_array_equal(g.numpy(), w.numpy()[IDX])
    if torch is not None:
        TPlace = _place_fn(torch)
        tx, ti, tt = torch.tensor(X), torch.tensor(IDX), torch.tensor(t.numpy())
        to, tta = torch.func.vmap(lambda x, t, i: torch.func.jvp(
            lambda x: TPlace.apply(x, i), (x,), (t,)))(tx, tt, ti)
        np.testing.assert_array_equal(to.numpy(), out.numpy())
        np.testing.assert_array_equal(tta.numpy(), tan.numpy())


# --- double backward through a custom Function whose backward uses a mask ---------------

def _relu_fns(lib):
    def make(kind):
        class R(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x.clamp(min=0)

            @staticmethod
            def backward(ctx, grad_output):
                (x,) = ctx.saved_tensors
                if kind == "setitem":  # the two_layer_net_custom_function tutorial's MyReLU
                    grad_input = grad_output.clone()
                    grad_input[x < 0] = 0
                    return grad_input
                if kind == "mask":
                    return grad_output * (x > 0).to(grad_output.dtype)
                if kind == "where":
                    return lib.where(x > 0, grad_output, lib.zeros_like(grad_output))
                return grad_output.masked_fill(x <= 0, 0.0)

        R.__name__ = f"ReLU_{kind}"
        return R

    return make


KINDS = ["setitem", "mask", "where", "masked_fill"]
XR = np.array([-0.5, 1.0, 2.0, -1.5])


@pytest.mark.parametrize("kind", KINDS)
def test_second_derivative_through_a_mask_backward(kind):
    R = _relu_fns(cr)(kind)
    # a cotangent with a history (R(x) * x): the mask's backward keeps it, and second
    # derivatives agree with central differences
    assert cr.autograd.gradgradcheck(lambda x: R.apply(x) * x, (_t(XR).requires_grad_(),))
    # a constant cotangent (the seed of R(x).sum()): the gradient grad_output * mask has no
    # history. A mask (zero derivative) and a value taken out of the graph (no_grad,
    # detach, tensor(x): a lost derivative) look the same from here, so chainrule refuses
    # to differentiate it again instead of guessing 0; PyTorch takes it as constant, which
    # is right for a mask and silently wrong for the others
    x = _t(XR).requires_grad_()
    (g,) = cr.autograd.grad(R.apply(x).sum() + (x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), (XR > 0) + 3 * XR ** 2)
    with pytest.raises(RuntimeError, match="does not depend on its inputs"):
        cr.autograd.grad(g.sum(), x)
    if torch is not None:
        TR = _relu_fns(torch)(kind)
        tx = torch.tensor(XR, requires_grad=True)
        (tg,) = torch.autograd.grad(TR.apply(tx).sum() + (tx ** 3).sum(), tx, create_graph=True)
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy())


class _CubeDetach(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * cr.tensor(3 * x.detach().numpy() ** 2)  # leaves the library


class _CubeTolist(_CubeDetach):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * cr.tensor([3 * v ** 2 for v in x.tolist()])


class _SinhBad(cr.autograd.Function):  # the double-backward tutorial's "what not to do"
    @staticmethod
    def forward(ctx, x):
        ctx.expx, ctx.expnegx = x.exp(), (-x).exp()
        return (ctx.expx - ctx.expnegx) / 2

    @staticmethod
    def backward(ctx, g):
        return g * (ctx.expx + ctx.expnegx) / 2


class _SavedIntermediate(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        e = x.exp()
        ctx.save_for_backward(x, e)  # e is neither an input nor an output: no history
        return 2 * e

    @staticmethod
    def backward(ctx, g):
        _, e = ctx.saved_tensors
        return 2 * g * e


@pytest.mark.parametrize("fn", [_CubeDetach, _CubeTolist, _SinhBad, _SavedIntermediate])
def test_backward_without_history_from_escaped_values_still_refuses_a_second_derivative(fn):
    x = _t([0.5, -1.0]).requires_grad_()
    (g,) = cr.autograd.grad(fn.apply(x).sum() + (x ** 2).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="cannot be differentiated again"):
        cr.autograd.grad(g.sum(), x)


# --- the tutorials' computations, checked against hand formulas ---------------------------

def _predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def test_jacobians_hessians_tutorial_quantities():
    rng = np.random.default_rng(1)
    W, b = rng.standard_normal((6, 5)), rng.standard_normal(6)
    xs = rng.standard_normal((4, 5))
    y = np.tanh(xs @ W.T + b)
    expect = (1 - y ** 2)[:, :, None] * W[None]  # d tanh(Wx+b)/dx, per sample
    bj0 = vmap(jacrev(_predict, argnums=2), in_dims=(None, None, 0))(_t(W), _t(b), _t(xs))
    np.testing.assert_allclose(bj0.numpy(), expect, rtol=1e-12, atol=1e-13)
    bj1 = jacrev(lambda w, b, x: _predict(w, b, x).sum(0), argnums=2)(_t(W), _t(b), _t(xs))
    np.testing.assert_allclose(bj1.movedim(1, 0).numpy(), expect, rtol=1e-12, atol=1e-13)
    _, vjp_fn = vjp(lambda x: _predict(_t(W), _t(b), x), _t(xs[0]))
    (ft,) = vmap(vjp_fn)(cr.eye(6))
    np.testing.assert_allclose(ft.numpy(), expect[0], rtol=1e-12, atol=1e-13)
    x, t = _t(xs[0]), _t(xs[1])
    hvp = jvp(grad(lambda x: x.sin().sum()), (x,), (t,))[1]
    np.testing.assert_allclose(hvp.numpy(), -np.sin(xs[0]) * xs[1], rtol=1e-13)


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def test_ensembling_and_per_sample_grads_tutorials():
    rng = np.random.default_rng(2)
    models = [_MLP() for _ in range(3)]
    for m in models:
        with cr.no_grad():
            for p in m.parameters():
                p.copy_(_t(rng.standard_normal(tuple(p.shape))))
    params, buffers = stack_module_state(models)
    base = _MLP().to("meta")
    data = _t(rng.standard_normal((3, 5, 2, 4)))
    out = vmap(lambda p, b, x: functional_call(base, (p, b), (x,)))(params, buffers, data)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(data[i]).detach().numpy(),
                                   rtol=1e-13, atol=1e-13)
    model, targets = models[0], cr.tensor(np.array([0, 2, 1, 1, 0]))
    ps = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, x, y):
        return F.cross_entropy(functional_call(model, p, (x[None],)), y[None])

    psg = vmap(grad(loss), in_dims=(None, 0, 0))(ps, data[0], targets)
    for i in range(5):
        ref = cr.autograd.grad(F.cross_entropy(model(data[0][i:i + 1]), targets[i:i + 1]),
                               list(model.parameters()))
        for v, r in zip(psg.values(), ref):
            np.testing.assert_allclose(v[i].numpy(), r.numpy(), rtol=1e-12, atol=1e-14)


def test_ntk_jacobian_contraction_equals_ntk_vector_products():
    rng = np.random.default_rng(3)
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4, 4))
    with cr.no_grad():
        for p in net.parameters():
            p.copy_(_t(rng.standard_normal(tuple(p.shape)) * 0.5))
    params = {k: v.detach() for k, v in net.named_parameters()}
    x1, x2 = _t(rng.standard_normal((3, 2, 4, 4))), _t(rng.standard_normal((2, 2, 4, 4)))

    def f(p, x):
        return functional_call(net, p, (x[None],))[0]

    j1 = [j.flatten(2) for j in vmap(jacrev(f), (None, 0))(params, x1).values()]
    j2 = [j.flatten(2) for j in vmap(jacrev(f), (None, 0))(params, x2).values()]
    ntk = sum(cr.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(j1, j2))

    def get_ntk(a, b):
        out, vjp_fn = vjp(lambda p: f(p, a), params)
        return vmap(lambda v: jvp(lambda p: f(p, b), (params,), vjp_fn(v))[1])(
            cr.eye(out.numel()))

    ntk_vps = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)
    np.testing.assert_allclose(ntk_vps.numpy(), ntk.numpy(), rtol=1e-11, atol=1e-11)
    assert tuple(ntk.shape) == (3, 2, 4, 4)
    # the diagonal of the NTK of x1 with itself is |J|^2: positive
    ntk11 = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x1)
    assert (np.einsum("nnaa->na", ntk11.numpy()) > 0).all()


def test_legendre_polynomial_function_trains_as_the_tutorial():
    class P3(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 1.5 * (5 * x ** 2 - 1)

    assert cr.autograd.gradcheck(P3.apply, (_t(np.linspace(-1, 1, 7)).requires_grad_(),))
    x = cr.linspace(-math.pi, math.pi, 200, dtype=cr.float64)
    y = cr.sin(x)
    a, b, c, d = (cr.full((), v, dtype=cr.float64, requires_grad=True)
                  for v in (0.0, -1.0, 0.0, 0.3))
    first = None
    for _ in range(300):
        loss = (a + b * P3.apply(c + d * x) - y).pow(2).sum()
        first = loss.item() if first is None else first
        loss.backward()
        with cr.no_grad():
            for p in (a, b, c, d):
                p -= 5e-5 * p.grad
                p.grad = None
    assert loss.item() < 0.5 * first
