"""Bugs found by rerunning the differential drivers (chainrule against PyTorch) after the
vmap fallback, custom Function, module hook and in-place history changes."""
import numpy as np

import chainrule as cr

try:
    import torch
except ImportError:
    torch = None


def _fmod_second_derivatives(T):
    a = T.tensor([1.0, 2.0, 0.5], dtype=T.float64, requires_grad=True)
    b = T.tensor([0.0, 0.7, 0.0], dtype=T.float64, requires_grad=True)
    ga, gb = T.autograd.grad(T.fmod(a, b).sum(), (a, b), create_graph=True)
    gga, ggb = T.autograd.grad(gb.sum(), (a, b))
    return [np.asarray(t.detach()) for t in (ga, gb, gga, ggb)]


def test_fmod_second_derivative_zero_where_divisor_is_zero():
    # d/dy fmod(x, y) = -trunc(x / y): piecewise constant, so its own derivatives are 0,
    # also where y = 0 (PyTorch's div(rounding_mode="trunc") in fmod's backward); trunc of
    # a differentiable x / y gave 0 * inf = NaN there
    ga, gb, gga, ggb = _fmod_second_derivatives(cr)
    np.testing.assert_array_equal(ga, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gb, [-np.inf, -2.0, -np.inf])
    np.testing.assert_array_equal(gga, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(ggb, [0.0, 0.0, 0.0])
    if torch is not None:
        for c, t in zip((ga, gb, gga, ggb), _fmod_second_derivatives(torch)):
            np.testing.assert_array_equal(c, t)


def test_fmod_hessian_by_reverse_over_reverse_finite():
    x = cr.tensor([1.0, 2.0, 0.5], dtype=cr.float64)
    y = cr.tensor([0.0, 0.7, 0.0], dtype=cr.float64)
    # Hessian of sum(fmod(x, y)) in y: zero, though trunc(x / y) is infinite at y = 0
    h = cr.func.jacrev(cr.func.grad(lambda v: cr.fmod(x, v).sum()))(y)
    np.testing.assert_array_equal(np.asarray(h), np.zeros((3, 3)))


def test_movedim_of_a_0d_tensor_is_a_view_not_the_input():
    # a 0-d tensor has nothing to move, but the result is still a new view of it (PyTorch's
    # alias), not the input object itself: a hook or retain_grad on it is its own
    x = cr.tensor(1.5, requires_grad=True)
    for y in (x.movedim(-1, 0), cr.moveaxis(x, 0, 0), cr.movedim(x, (0,), (-1,))):
        assert y is not x
        assert y._base is x
        assert y.grad_fn is not None
        assert y.item() == 1.5
    y = x.movedim(0, 0)
    y.retain_grad()
    (y * 3).backward()
    assert y.grad.item() == 3.0 and x.grad.item() == 3.0
    if torch is not None:
        t = torch.tensor(1.5, requires_grad=True)
        u = t.movedim(0, 0)
        assert u is not t and u._base is t
        u.retain_grad()
        (u * 3).backward()
        assert u.grad.item() == y.grad.item() and t.grad.item() == x.grad.item()


def _ensemble_batch_norm(T):
    # two BatchNorm models stacked (torch.func's model ensembling): in training mode each
    # model's running stats, rows of the stacked buffers, are updated by its own batch
    models = [T.nn.Sequential(T.nn.Linear(2, 3), T.nn.BatchNorm1d(3)).double() for _ in range(2)]
    with T.no_grad():
        for i, m in enumerate(models):
            m[0].weight.copy_(T.tensor(np.arange(6.0).reshape(3, 2) * (i + 1) / 6))
            m[0].bias.zero_()
    params, buffers = T.func.stack_module_state(models)
    x = T.tensor(np.arange(16.0).reshape(2, 4, 2) / 8, dtype=T.float64)
    out = T.func.vmap(lambda p, b, v: T.func.functional_call(models[0], (p, b), (v,)))(
        params, buffers, x)
    return [np.asarray(t.detach()) for t in
            (out, buffers["1.running_mean"], buffers["1.num_batches_tracked"])]


def test_batch_norm_training_under_vmap_updates_stacked_running_stats():
    out, mean, count = _ensemble_batch_norm(cr)
    x = np.arange(16.0).reshape(2, 4, 2) / 8
    for i in range(2):
        h = x[i] @ (np.arange(6.0).reshape(3, 2) * (i + 1) / 6).T
        np.testing.assert_allclose(out[i], (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5))
        np.testing.assert_allclose(mean[i], 0.1 * h.mean(0))
    np.testing.assert_array_equal(count, [1, 1])
    if torch is not None:
        for c, t in zip((out, mean, count), _ensemble_batch_norm(torch)):
            np.testing.assert_allclose(c, t, rtol=1e-6)


def _embedding_second_derivatives(T, **kw):
    w = T.tensor(np.array([[0.5, -1.0], [0.25, 2.0], [1.5, 0.75], [-0.5, 1.0]]),
                 dtype=T.float64, requires_grad=True)
    e = T.nn.functional.embedding(T.tensor([[0, 1, 1, 3]]), w, **kw)
    (g,) = T.autograd.grad((e ** 3).sum(), w, create_graph=True)
    (h,) = T.autograd.grad(g.sum(), w)
    f = lambda v: (T.nn.functional.embedding(T.tensor([[0, 1, 1, 3]]), v, **kw) ** 3).sum()
    hf = T.func.jvp(T.func.grad(f), (w.detach(),), (T.ones(4, 2, dtype=T.float64),))[1]
    return [np.asarray(t.detach()) for t in (g, h, hf)]


def test_embedding_scale_grad_by_freq_second_derivative_divides_once():
    # the gradient of row r is sum over its k picks of 3 w_r^2 / k = 3 w_r^2, so its
    # derivative is 6 w_r: the counts divide once (they divided twice in reverse over
    # reverse, by the backward's own VJP; forward over reverse had them once)
    w = np.array([[0.5, -1.0], [0.25, 2.0], [1.5, 0.75], [-0.5, 1.0]])
    used = np.array([1.0, 1.0, 0.0, 1.0])[:, None]
    for kw in ({"scale_grad_by_freq": True}, {"scale_grad_by_freq": True, "padding_idx": 3}):
        g, h, hf = _embedding_second_derivatives(cr, **kw)
        mask = used.copy()
        if "padding_idx" in kw:
            mask[3] = 0.0
        np.testing.assert_allclose(g, 3 * w ** 2 * mask)
        np.testing.assert_allclose(h, 6 * w * mask)
        np.testing.assert_allclose(hf, 6 * w * mask)
        if torch is not None:
            for c, t in zip((g, h, hf), _embedding_second_derivatives(torch, **kw)):
                np.testing.assert_allclose(c, t)


def test_embedding_with_padding_linear_loss_differentiates_again():
    # a loss linear in the embedding: its gradient is constant, so differentiating it again
    # gives nothing (no graph, as PyTorch's) instead of raising that the internal row
    # scaling's backward "does not depend on its inputs"
    for kw in ({"padding_idx": 0}, {"scale_grad_by_freq": True}):
        w = cr.tensor(np.ones((4, 2)), requires_grad=True)
        e = cr.nn.functional.embedding(cr.tensor([[0, 1, 1, 3]]), w, **kw)
        (g,) = cr.autograd.grad((e * 2).sum(), w, create_graph=True)
        assert not g.requires_grad
        expect = np.array([0.0, 4.0, 0.0, 2.0]) if "padding_idx" in kw else \
            np.array([2.0, 2.0, 0.0, 2.0])
        np.testing.assert_allclose(g.numpy(), np.repeat(expect[:, None], 2, 1))
        h = cr.func.jacrev(cr.func.grad(
            lambda v, kw=kw: (cr.nn.functional.embedding(cr.tensor([[0, 1, 1, 3]]), v, **kw)
                              * 2).sum()))(w.detach())
        np.testing.assert_array_equal(h.numpy(), np.zeros((4, 2, 4, 2)))
        if torch is not None:
            tw = torch.tensor(np.ones((4, 2)), requires_grad=True)
            te = torch.nn.functional.embedding(torch.tensor([[0, 1, 1, 3]]), tw, **kw)
            (tg,) = torch.autograd.grad((te * 2).sum(), tw, create_graph=True)
            assert not tg.requires_grad
            np.testing.assert_allclose(g.numpy(), tg.numpy())


def test_function_backward_that_keeps_an_array_still_refuses_a_second_derivative():
    # the backward's gradient without history is only taken for constant when backward had
    # no value that could depend on the inputs: an array kept on ctx could
    import pytest

    class Cube(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x.detach().numpy()
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g * cr.tensor(3 * ctx.x ** 2)

    x = cr.tensor([1.0, 2.0], requires_grad=True)
    (g,) = cr.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    with pytest.raises(RuntimeError, match="does not depend on its"):
        cr.autograd.grad(g.sum(), x)


def test_instance_norm_under_vmap_refuses_unbatched_running_stats_as_batch_norm():
    import pytest

    x = np.random.default_rng(0).standard_normal((3, 2, 2, 4))
    libs = [cr] + ([torch] if torch is not None else [])
    for T in libs:
        def f(v, T=T):
            stats = T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)
            return T.nn.functional.instance_norm(v, *stats, use_input_stats=True)

        with pytest.raises(RuntimeError, match="running_mean or running_var"):
            T.func.vmap(f)(T.tensor(x))
    # without running statistics it maps: each sample (N, C, L) normalised over its L
    out = cr.func.vmap(cr.nn.functional.instance_norm)(cr.tensor(x)).numpy()
    m, v = x.mean(3, keepdims=True), x.var(3, keepdims=True)
    np.testing.assert_allclose(out, (x - m) / np.sqrt(v + 1e-5), atol=1e-12)
