"""Regressions found by porting real PyTorch user code to chainrule (training loops,
optimizers, module containers, distributions, ...). Each test checks a value derived without
torch (by hand, a finite difference or an invariant) and, when torch is importable, also the
same computation in torch."""

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn, optim

try:
    import torch
except ImportError:
    torch = None


def _quadratic_problem():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 4))
    b = rng.standard_normal(12)
    return A, b


# --- optimizers: PyTorch's implementation flags -------------------------------------------
@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, foreach=False, fused=None),
    lambda ps: optim.Adam(ps, lr=0.1, foreach=True, capturable=False, fused=False),
    lambda ps: optim.AdamW(ps, lr=0.1, foreach=None, fused=None),
    lambda ps: optim.RMSprop(ps, lr=0.1, foreach=False, capturable=False),
    lambda ps: optim.Adagrad(ps, lr=0.1, foreach=False, fused=None),
])
def test_optimizers_accept_pytorch_implementation_flags(make):
    # torch code passes foreach=/fused=/capturable=: accepted, recorded, same result
    p = nn.Parameter(cr.tensor([1.0, -2.0], dtype=cr.float64))
    q = nn.Parameter(cr.tensor([1.0, -2.0], dtype=cr.float64))
    opt = make([p])
    assert "foreach" in opt.param_groups[0] and "differentiable" in opt.param_groups[0]
    plain = type(opt)([q], lr=0.1, **({"momentum": 0.9} if isinstance(opt, optim.SGD)
                                      else {}))
    for o, x in ((opt, p), (plain, q)):
        for _ in range(3):
            o.zero_grad()
            (x ** 2).sum().backward()
            o.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(NotImplementedError, match="differentiable"):
        type(opt)([nn.Parameter(cr.zeros(2))], lr=0.1, differentiable=True)


def test_adam_decoupled_weight_decay_is_adamw():
    # Adam(decoupled_weight_decay=True) is AdamW; one step from g = 0: p * (1 - lr wd)
    p = nn.Parameter(cr.tensor([1.0, -2.0], dtype=cr.float64))
    opt = optim.Adam([p], lr=0.1, weight_decay=0.5, decoupled_weight_decay=True)
    assert opt.param_groups[0]["decoupled_weight_decay"] is True
    assert optim.AdamW([nn.Parameter(cr.zeros(1))]).param_groups[0]["decoupled_weight_decay"]
    p.grad = cr.zeros(2, dtype=cr.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.95, -1.9], rtol=1e-15)
    q = nn.Parameter(cr.tensor([0.3, -0.7], dtype=cr.float64))
    r = nn.Parameter(cr.tensor([0.3, -0.7], dtype=cr.float64))
    o1 = optim.Adam([q], lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)
    o2 = optim.AdamW([r], lr=0.05, weight_decay=0.1)
    for o, x in ((o1, q), (o2, r)):
        for _ in range(4):
            o.zero_grad()
            (x.sin() * 3).sum().backward()
            o.step()
    np.testing.assert_array_equal(q.detach().numpy(), r.detach().numpy())
    if torch is not None:
        t = torch.nn.Parameter(torch.tensor([0.3, -0.7], dtype=torch.float64))
        ot = torch.optim.Adam([t], lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)
        for _ in range(4):
            ot.zero_grad()
            (t.sin() * 3).sum().backward()
            ot.step()
        np.testing.assert_allclose(q.detach().numpy(), t.detach().numpy(), rtol=1e-13)


def test_optimizer_takes_named_parameters():
    # torch.optim.X(model.named_parameters()): names kept in the group's "param_names"
    net = nn.Linear(2, 1, dtype=cr.float64)
    opt = optim.SGD(net.named_parameters(), lr=0.5)
    g = opt.param_groups[0]
    assert g["param_names"] == ["weight", "bias"]
    assert g["params"][0] is net.weight and g["params"][1] is net.bias
    w0 = net.weight.detach().numpy().copy()
    net(cr.ones(1, 2, dtype=cr.float64)).sum().backward()
    opt.step()
    np.testing.assert_allclose(net.weight.detach().numpy(), w0 - 0.5, rtol=1e-15)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["param_names"] == ["weight", "bias"]
    assert sd["param_groups"][0]["params"] == [0, 1]
    with pytest.raises(ValueError, match="with/without names"):
        optim.SGD([("w", net.weight), net.bias], lr=0.1)


# --- LBFGS with the strong-Wolfe line search ----------------------------------------------
def test_lbfgs_strong_wolfe_least_squares():
    A, b = _quadratic_problem()
    At, bt = cr.tensor(A), cr.tensor(b)
    x = cr.zeros(4, dtype=cr.float64, requires_grad=True)
    opt = optim.LBFGS([x], lr=1, max_iter=30, tolerance_grad=1e-12, tolerance_change=1e-14,
                      line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((At @ x - bt) ** 2).sum()
        loss.backward()
        return loss

    first = opt.step(closure)
    np.testing.assert_allclose(first.item(), (b ** 2).sum(), rtol=1e-14)
    # the minimiser of |A x - b|^2 solves the normal equations
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.lstsq(A, b, rcond=None)[0],
                               atol=1e-8)
    st = opt.state[x]
    assert st["func_evals"] > st["n_iter"] >= 1


def test_lbfgs_strong_wolfe_rosenbrock_matches_torch():
    def run(lib):
        p = lib.tensor([-1.5, 2.0], dtype=lib.float64, requires_grad=True)
        o = lib.optim.LBFGS([p], lr=1, max_iter=100, history_size=10, tolerance_grad=1e-12,
                            tolerance_change=1e-14, line_search_fn="strong_wolfe")

        def rb():
            o.zero_grad()
            loss = (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2
            loss.backward()
            return loss

        o.step(rb)
        return p.detach().numpy(), o.state[p]["func_evals"], o.state[p]["n_iter"]

    x, evals, iters = run(cr)
    np.testing.assert_allclose(x, [1.0, 1.0], atol=1e-6)  # Rosenbrock's minimiser
    if torch is not None:
        xt, evals_t, iters_t = run(torch)
        np.testing.assert_allclose(x, xt, rtol=1e-10)
        assert (evals, iters) == (evals_t, iters_t)


def test_cubic_interpolate_exact_on_a_cubic():
    from chainrule.optim._line_search import cubic_interpolate

    # f(x) = x^3 - 3x has its local minimum at x = 1
    def f(x):
        return x ** 3 - 3 * x

    def df(x):
        return 3 * x ** 2 - 3

    assert cubic_interpolate(0.0, f(0.0), df(0.0), 2.0, f(2.0), df(2.0)) == pytest.approx(1.0)
    assert cubic_interpolate(2.0, f(2.0), df(2.0), 0.0, f(0.0), df(0.0)) == pytest.approx(1.0)
    # clipped to the bounds
    assert cubic_interpolate(0.0, f(0.0), df(0.0), 2.0, f(2.0), df(2.0),
                             bounds=(1.5, 3.0)) == 1.5


# --- module containers --------------------------------------------------------------------
def test_modulelist_repr_compresses_repeats():
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(), nn.Linear(2, 2)])
    expected = ("ModuleList(\n"
                "  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n"
                "  (3): ReLU()\n"
                "  (4): Linear(in_features=2, out_features=2, bias=True)\n"
                ")")
    assert repr(ml) == expected
    assert repr(nn.ModuleList()) == "ModuleList()"
    if torch is not None:
        tl = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)]
                                 + [torch.nn.ReLU(), torch.nn.Linear(2, 2)])
        assert repr(tl) == expected


def test_container_list_methods():
    ml = nn.ModuleList([nn.Linear(1, 1), nn.ReLU(), nn.Tanh()])
    popped = ml.pop(1)
    assert isinstance(popped, nn.ReLU) and len(ml) == 2
    assert [n for n, _ in ml.named_children()] == ["0", "1"]
    del ml[0]
    assert isinstance(ml[0], nn.Tanh)
    both = ml + nn.ModuleList([nn.ReLU()])
    assert isinstance(both, nn.ModuleList) and len(both) == 2

    s = nn.Sequential(nn.Linear(1, 2), nn.ReLU())
    s.insert(-1, nn.Tanh())
    s.insert(3, nn.Sigmoid())
    assert [type(m).__name__ for m in s] == ["Linear", "Tanh", "ReLU", "Sigmoid"]
    with pytest.raises(IndexError):
        s.insert(9, nn.ReLU())
    assert isinstance(s.pop(0), nn.Linear) and len(s) == 3
    s.extend([nn.ELU()])
    assert len(s) == 4 and len(s + s) == 8 and len(s * 3) == 12
    s += nn.Sequential(nn.ReLU())
    assert list(s._modules) == ["0", "1", "2", "3", "4"]
    with pytest.raises(ValueError):
        s + [nn.ReLU()]
    assert [type(m).__name__ for m in s] == ["Tanh", "ReLU", "Sigmoid", "ELU", "ReLU"]
    x = cr.tensor([[-1.0, 0.5]], dtype=cr.float64)
    np.testing.assert_allclose(s(x).numpy(), 1 / (1 + np.exp(-np.maximum(np.tanh(
        x.numpy()), 0))), rtol=1e-14)  # ELU and ReLU keep sigmoid's positive values


def test_get_buffer_and_set_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert net.get_buffer("1.running_var") is net[1].running_var
    with pytest.raises(AttributeError):
        net.get_buffer("1.weight")
    net.set_submodule("0", nn.Identity())
    assert isinstance(net[0], nn.Identity)
    with pytest.raises(AttributeError):
        net.set_submodule("5", nn.ReLU(), strict=True)


# --- distributions: TransformedDistribution, transforms, MixtureSameFamily -----------------
def _normal_logpdf(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * np.log(2 * np.pi)


def test_tanh_squashed_normal_log_prob():
    # SAC's policy: y = tanh(u), u ~ N(mu, s); log p(y) = log N(u) - log(1 - tanh(u)^2)
    D = cr.distributions
    mu = cr.tensor([0.3, -1.0, 2.5], dtype=cr.float64, requires_grad=True)
    s = cr.tensor([0.5, 1.0, 2.0], dtype=cr.float64)
    t = D.transforms.TanhTransform(cache_size=1)
    dist = D.TransformedDistribution(D.Normal(mu, s), [t])
    u = cr.tensor([0.1, -4.0, 9.0], dtype=cr.float64)
    y = t(u)
    lp = dist.log_prob(y)
    un = u.numpy()
    expected = _normal_logpdf(un, mu.detach().numpy(), s.numpy()) - np.log1p(-np.tanh(un) ** 2)
    # the cache gives u back exactly (atanh(tanh(9)) would lose it)
    assert t.inv(y) is u
    np.testing.assert_allclose(lp.detach().numpy(), expected, rtol=1e-9)
    # d log p / d mu = (u - mu) / s^2
    lp.sum().backward()
    np.testing.assert_allclose(mu.grad.numpy(), (un - mu.detach().numpy()) / s.numpy() ** 2,
                               rtol=1e-12)
    assert dist.has_rsample and tuple(dist.rsample((4,)).shape) == (4, 3)
    if torch is not None:
        tt = torch.distributions.transforms.TanhTransform(cache_size=1)
        td = torch.distributions.TransformedDistribution(
            torch.distributions.Normal(torch.tensor(mu.detach().numpy()),
                                       torch.tensor(s.numpy())), [tt])
        ut = torch.tensor(un)
        np.testing.assert_allclose(lp.detach().numpy(), td.log_prob(tt(ut)).numpy(),
                                   rtol=1e-12)


def test_transformed_distribution_change_of_variables():
    D = cr.distributions
    T = D.transforms
    base = D.Normal(cr.zeros(3, dtype=cr.float64), cr.ones(3, dtype=cr.float64))
    # exp(0.5 + 3 x) is LogNormal(0.5, 3)
    comp = D.TransformedDistribution(base, T.ComposeTransform([T.AffineTransform(0.5, 3.0),
                                                               T.ExpTransform()]))
    y = cr.tensor([0.5, 1.0, 4.0], dtype=cr.float64)
    np.testing.assert_allclose(comp.log_prob(y).numpy(),
                               D.LogNormal(0.5, 3.0).log_prob(y).numpy(), rtol=1e-12)
    np.testing.assert_allclose(comp.cdf(y).numpy(), D.LogNormal(0.5, 3.0).cdf(y).numpy(),
                               rtol=1e-12)
    # a vector affine map with event_dim=1: the base becomes Independent, the log-dets sum
    mvn = D.MultivariateNormal(cr.zeros(2, dtype=cr.float64),
                               scale_tril=cr.eye(2, dtype=cr.float64))
    aff = T.AffineTransform(cr.tensor([1.0, -1.0], dtype=cr.float64),
                            cr.tensor([2.0, 0.5], dtype=cr.float64), event_dim=1)
    td = D.TransformedDistribution(mvn, aff)
    assert tuple(td.batch_shape) == () and tuple(td.event_shape) == (2,)
    v = np.array([0.3, 0.2])
    x = (v - np.array([1.0, -1.0])) / np.array([2.0, 0.5])
    expected = _normal_logpdf(x, 0, 1).sum() - np.log(2.0 * 0.5)
    np.testing.assert_allclose(td.log_prob(cr.tensor(v)).item(), expected, rtol=1e-12)
    # sigmoid / softplus inverses and log-dets against finite differences
    for tr in (T.SigmoidTransform(), T.SoftplusTransform(), T.TanhTransform()):
        xs = np.array([-2.0, 0.3, 1.7])
        ys = tr(cr.tensor(xs)).numpy()
        np.testing.assert_allclose(tr.inv(cr.tensor(ys)).numpy(), xs, rtol=1e-9)
        h = 1e-6
        fd = (tr(cr.tensor(xs + h)).numpy() - tr(cr.tensor(xs - h)).numpy()) / (2 * h)
        np.testing.assert_allclose(tr.log_abs_det_jacobian(cr.tensor(xs), cr.tensor(ys))
                                   .numpy(), np.log(fd), rtol=1e-7)
    with pytest.raises(ValueError):
        D.TransformedDistribution(base, "exp")


def test_mixture_same_family_gmm():
    D = cr.distributions
    w = np.array([0.3, 0.7])
    m = np.array([-1.0, 2.0])
    s = np.array([0.5, 1.5])
    gmm = D.MixtureSameFamily(D.Categorical(probs=cr.tensor(w)),
                              D.Normal(cr.tensor(m), cr.tensor(s)))
    assert tuple(gmm.batch_shape) == () and tuple(gmm.event_shape) == ()
    xs = np.linspace(-3, 3, 7)
    pdf = (w * np.exp(_normal_logpdf(xs[:, None], m, s))).sum(-1)
    np.testing.assert_allclose(gmm.log_prob(cr.tensor(xs)).numpy(), np.log(pdf), rtol=1e-12)
    mean = (w * m).sum()
    np.testing.assert_allclose(gmm.mean.item(), mean, rtol=1e-14)
    np.testing.assert_allclose(gmm.variance.item(), (w * (s ** 2 + (m - mean) ** 2)).sum(),
                               rtol=1e-14)
    ncdf = np.vectorize(lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2))))
    np.testing.assert_allclose(gmm.cdf(cr.tensor(xs)).numpy(),
                               (w * ncdf((xs[:, None] - m) / s)).sum(-1), rtol=1e-12)
    assert tuple(gmm.sample((4, 3)).shape) == (4, 3)
    # a batch of 2-d mixtures (mixture density network)
    logits = cr.tensor(np.random.default_rng(1).standard_normal((5, 3)), requires_grad=True)
    comp = D.Independent(D.Normal(cr.zeros(5, 3, 2, dtype=cr.float64),
                                  cr.ones(5, 3, 2, dtype=cr.float64)), 1)
    mdn = D.MixtureSameFamily(D.Categorical(logits=logits), comp)
    assert tuple(mdn.batch_shape) == (5,) and tuple(mdn.event_shape) == (2,)
    assert tuple(mdn.sample((7,)).shape) == (7, 5, 2)
    lp = mdn.log_prob(cr.zeros(5, 2, dtype=cr.float64))
    # identical components: the mixture is the component, whatever the weights
    np.testing.assert_allclose(lp.detach().numpy(), np.full(5, -np.log(2 * np.pi)),
                               rtol=1e-12)
    lp.sum().backward()
    np.testing.assert_allclose(logits.grad.numpy(), 0, atol=1e-14)
    with pytest.raises(ValueError):
        D.MixtureSameFamily(D.Categorical(probs=cr.tensor([0.5, 0.5])),
                            D.Normal(cr.zeros(3), cr.ones(3)))
    with pytest.raises(ValueError):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(cr.zeros(3), cr.ones(3)))
    if torch is not None:
        tg = torch.distributions.MixtureSameFamily(
            torch.distributions.Categorical(probs=torch.tensor(w)),
            torch.distributions.Normal(torch.tensor(m), torch.tensor(s)))
        np.testing.assert_allclose(gmm.log_prob(cr.tensor(xs)).numpy(),
                                   tg.log_prob(torch.tensor(xs)).numpy(), rtol=1e-12)


# --- nn: EmbeddingBag, LocalResponseNorm, gradient-norm utilities ---------------------------
def test_embedding_bag_modes_offsets_padding():
    F = nn.functional
    W = np.random.default_rng(0).standard_normal((10, 4))
    w = cr.tensor(W, requires_grad=True)
    flat = cr.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offs = cr.tensor([0, 4, 4])  # bags [1 2 4 5], [], [4 3 2 9]
    out = F.embedding_bag(flat, w, offs, mode="mean", padding_idx=2)
    expected = np.stack([W[[1, 4, 5]].mean(0), np.zeros(4), W[[4, 3, 9]].mean(0)])
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-14)
    out.sum().backward()
    g = np.zeros((10, 4))
    for r, c in ((1, 1 / 3), (4, 1 / 3 + 1 / 3), (5, 1 / 3), (3, 1 / 3), (9, 1 / 3)):
        g[r] = c
    np.testing.assert_allclose(w.grad.numpy(), g, rtol=1e-14)  # nothing to padding row 2
    idx = cr.tensor([[1, 2], [3, 3]])
    np.testing.assert_allclose(F.embedding_bag(idx, w, mode="sum").detach().numpy(),
                               [W[1] + W[2], 2 * W[3]], rtol=1e-14)
    np.testing.assert_allclose(F.embedding_bag(idx, w, mode="max").detach().numpy(),
                               [np.maximum(W[1], W[2]), W[3]], rtol=1e-14)
    psw = cr.arange(8.0, dtype=cr.float64)
    o = F.embedding_bag(flat, w, cr.tensor([0, 3, 8]), mode="sum", include_last_offset=True,
                        per_sample_weights=psw)
    fl = flat.numpy()
    np.testing.assert_allclose(o.detach().numpy(),
                               [(np.arange(3)[:, None] * W[fl[:3]]).sum(0),
                                (np.arange(3, 8)[:, None] * W[fl[3:]]).sum(0)], rtol=1e-13)
    with pytest.raises(ValueError):
        F.embedding_bag(flat, w, offs, mode="mean", per_sample_weights=psw)
    with pytest.raises(ValueError):
        F.embedding_bag(idx, w, offs)
    with pytest.raises(ValueError):
        F.embedding_bag(flat, w)
    bag = nn.EmbeddingBag(10, 4, mode="sum")
    assert tuple(bag(idx).shape) == (2, 4)
    assert repr(bag) == "EmbeddingBag(10, 4, mode='sum')"
    if torch is not None:
        tw = torch.tensor(W)
        to = torch.nn.functional.embedding_bag(torch.tensor(flat.numpy()), tw,
                                               torch.tensor(offs.numpy()), mode="mean",
                                               padding_idx=2)
        np.testing.assert_allclose(out.detach().numpy(), to.numpy(), rtol=1e-14)


def test_local_response_norm_by_hand():
    x = np.random.default_rng(2).standard_normal((2, 5, 3))
    size, alpha, beta, k = 3, 0.5, 0.6, 1.5
    out = nn.LocalResponseNorm(size, alpha, beta, k)(cr.tensor(x)).numpy()
    sq = np.pad(x ** 2, ((0, 0), (size // 2, (size - 1) // 2), (0, 0)))
    win = sum(sq[:, i:i + 5] for i in range(size))
    np.testing.assert_allclose(out, x / (k + alpha * win / size) ** beta, rtol=1e-13)
    with pytest.raises(ValueError):
        nn.functional.local_response_norm(cr.zeros(2, 3), 2)
    if torch is not None:
        np.testing.assert_allclose(out, torch.nn.LocalResponseNorm(size, alpha, beta, k)(
            torch.tensor(x)).numpy(), rtol=1e-13)


def test_get_total_norm_and_clip_grads_with_norm():
    u = nn.utils
    assert u.get_total_norm([cr.tensor([3.0, 4.0]), cr.tensor([12.0])]).item() == 13.0
    assert u.get_total_norm([cr.tensor([3.0, -4.0])], norm_type="inf").item() == 4.0
    m = nn.Linear(2, 1, dtype=cr.float64)
    m.weight.grad = cr.full((1, 2), 3.0, dtype=cr.float64)
    m.bias.grad = cr.full((1,), 4.0, dtype=cr.float64)
    total = u.get_total_norm([p.grad for p in m.parameters()])
    np.testing.assert_allclose(total.item(), math.sqrt(34), rtol=1e-15)
    u.clip_grads_with_norm_(m.parameters(), 1.0, total)
    np.testing.assert_allclose(m.weight.grad.numpy(), 3 / (math.sqrt(34) + 1e-6), rtol=1e-14)
    with pytest.warns(FutureWarning):
        u.clip_grad_norm(m.parameters(), 10.0)
    assert u.stateless.functional_call is nn.functional_call


# --- interpolate(mode="bicubic"), affine_grid, grid_sample, contiguous layer outputs -------
def test_interpolate_bicubic_weights_by_hand():
    F = nn.functional
    v = np.array([1.0, -2.0, 4.0, 0.5])
    x = cr.tensor(v.reshape(1, 1, 1, 4), requires_grad=True)
    out = F.interpolate(x, size=(1, 7), mode="bicubic", align_corners=True)
    # align_corners: source 0.5 i; at i = 3 (source 1.5) the Keys weights (A = -0.75) at
    # t = 1/2 are (-3/32, 19/32, 19/32, -3/32)
    np.testing.assert_allclose(out[0, 0, 0, 3].item(), (-3 * v[0] + 19 * v[1] + 19 * v[2]
                                                        - 3 * v[3]) / 32, rtol=1e-14)
    np.testing.assert_allclose(out.detach().numpy()[0, 0, 0, ::2], v, rtol=1e-14)  # the nodes
    # weights sum to one: a constant image stays constant; a linear ramp stays linear inside
    ones = F.interpolate(cr.ones(1, 1, 5, 6, dtype=cr.float64), size=(9, 4), mode="bicubic")
    np.testing.assert_allclose(ones.numpy(), 1.0, rtol=1e-14)
    ramp = cr.tensor(np.arange(8.0).reshape(1, 1, 1, 8))
    up = F.interpolate(ramp, size=(1, 15), mode="bicubic", align_corners=True).numpy()[0, 0, 0]
    np.testing.assert_allclose(up[2:-2], np.arange(15)[2:-2] / 2, rtol=1e-13)
    assert cr.autograd.gradcheck(
        lambda t: F.interpolate(t, scale_factor=1.5, mode="bicubic"),
        (cr.tensor(np.random.default_rng(0).standard_normal((1, 2, 3, 4)),
                   requires_grad=True),))
    with pytest.raises(NotImplementedError):
        F.interpolate(cr.ones(1, 1, 4), size=6, mode="bicubic")
    if torch is not None:
        xs = np.random.default_rng(1).standard_normal((2, 3, 5, 7))
        for kw in (dict(size=(8, 4)), dict(scale_factor=0.7),
                   dict(scale_factor=(2.0, 0.5), align_corners=True)):
            np.testing.assert_allclose(
                F.interpolate(cr.tensor(xs), mode="bicubic", **kw).numpy(),
                torch.nn.functional.interpolate(torch.tensor(xs), mode="bicubic",
                                                **kw).numpy(), rtol=1e-12, atol=1e-14)


def test_affine_grid_and_grid_sample():
    F = nn.functional
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 6))
    eye = cr.tensor(np.tile([[[1.0, 0, 0], [0, 1, 0]]], (2, 1, 1)))
    # the identity grid samples every pixel centre: the input comes back
    for ac in (False, True):
        grid = F.affine_grid(eye, (2, 3, 5, 6), align_corners=ac)
        assert tuple(grid.shape) == (2, 5, 6, 2)
        for mode in ("bilinear", "nearest"):
            np.testing.assert_allclose(F.grid_sample(cr.tensor(x), grid, mode=mode,
                                                     align_corners=ac).numpy(), x, atol=1e-12)
    # a flip in x (theta = diag(-1, 1)) mirrors the image
    flip = cr.tensor(np.tile([[[-1.0, 0, 0], [0, 1, 0]]], (2, 1, 1)))
    g = F.affine_grid(flip, (2, 3, 5, 6), align_corners=False)
    np.testing.assert_allclose(F.grid_sample(cr.tensor(x), g, align_corners=False).numpy(),
                               x[..., ::-1], atol=1e-12)
    # half a pixel right of centre 0 in a 1x2 image: the mean; outside reads zeros
    img = cr.tensor([[[[2.0, 4.0]]]], requires_grad=True)
    pts = cr.tensor([[[[0.0, 0.0], [2.0, 0.0]]]], requires_grad=True)  # x=0 -> pixel 0.5
    out = F.grid_sample(img, pts, align_corners=False)
    np.testing.assert_allclose(out.detach().numpy().ravel(), [3.0, 0.0], rtol=1e-14)
    out.sum().backward()
    # d out / d x_grid = (4 - 2) * dix/dx = 2 * W / 2 at the first point; in y the row
    # below (outside, 0) pulls: -3 * diy/dy = -3 * H / 2; nothing for the point outside
    np.testing.assert_allclose(pts.grad.numpy().ravel(), [2.0, -1.5, 0.0, 0.0], atol=1e-14)
    assert F.grid_sample(img, pts, padding_mode="border").detach().numpy().ravel()[1] == 4.0
    theta = cr.tensor(rng.standard_normal((2, 2, 3)) * 0.7, requires_grad=True)
    xt = cr.tensor(x, requires_grad=True)
    for pm in ("zeros", "border", "reflection"):
        assert cr.autograd.gradcheck(
            lambda t, th, pm=pm: F.grid_sample(t, F.affine_grid(th, (2, 3, 4, 3)),
                                               padding_mode=pm),
            (xt, theta))
    with pytest.raises(ValueError):
        F.grid_sample(xt, g, mode="cubic")
    with pytest.raises(ValueError):
        F.affine_grid(cr.zeros(2, 3, 3), (2, 3, 4, 4))
    if torch is not None:
        th = rng.standard_normal((2, 2, 3))
        for ac in (False, True):
            for pm in ("zeros", "border", "reflection"):
                tg = torch.nn.functional.affine_grid(torch.tensor(th), (2, 3, 4, 7),
                                                     align_corners=ac) * 1.7
                cg = F.affine_grid(cr.tensor(th), (2, 3, 4, 7), align_corners=ac) * 1.7
                np.testing.assert_allclose(cg.numpy(), tg.numpy(), rtol=1e-14, atol=1e-15)
                np.testing.assert_allclose(
                    F.grid_sample(cr.tensor(x), cg, padding_mode=pm, align_corners=ac).numpy(),
                    torch.nn.functional.grid_sample(torch.tensor(x), tg, padding_mode=pm,
                                                    align_corners=ac).numpy(),
                    rtol=1e-12, atol=1e-13)


def test_layer_outputs_are_contiguous_so_view_works():
    # the CIFAR tutorial's x.view(-1, 16 * 5 * 5) after conv/pool: PyTorch's outputs are
    # row-major, so .view works
    F = nn.functional
    x = cr.randn(2, 3, 12, 12)
    y = F.max_pool2d(F.relu(nn.Conv2d(3, 4, 3)(x)), 2)
    assert y.is_contiguous()
    assert tuple(y.view(-1, 4 * 5 * 5).shape) == (2, 100)
    for out in (nn.Conv1d(3, 2, 3)(x[:, :, 0]), F.adaptive_max_pool2d(x, 3),
                F.adaptive_avg_pool2d(x, 5), F.interpolate(x, scale_factor=2),
                F.interpolate(x, size=(5, 5), mode="bilinear"),
                F.pad(x, (1, 1, 2, 0), mode="reflect"),
                nn.MultiheadAttention(4, 2)(*(cr.randn(5, 2, 4),) * 3)[0]):
        assert out.is_contiguous()
        out.view(-1)


# --- gumbel_softmax, weight_norm, parametrizations ------------------------------------------
def test_gumbel_softmax_hard_is_one_hot_with_soft_gradient():
    F = nn.functional
    logits = cr.tensor([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]], dtype=cr.float64,
                       requires_grad=True)
    w = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64)
    cr.manual_seed(7)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-14)
    g_soft, = cr.autograd.grad((soft * w).sum(), logits)
    cr.manual_seed(7)  # the same noise: the hard sample is the soft one's argmax
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    assert (h.argmax(-1) == soft.detach().numpy().argmax(-1)).all()
    g_hard, = cr.autograd.grad((hard * w).sum(), logits)  # straight-through
    np.testing.assert_allclose(g_hard.numpy(), g_soft.numpy(), rtol=1e-12)
    # the argmax of logits + Gumbel noise is a draw from softmax(logits)
    cr.manual_seed(0)
    p = np.array([0.2, 0.3, 0.5])
    freq = F.gumbel_softmax(cr.tensor(np.log(p)).expand(20000, 3), hard=True).mean(0)
    np.testing.assert_allclose(freq.numpy(), p, atol=0.015)


def _conv_with(weight):
    m = nn.Conv1d(3, 4, 2, dtype=cr.float64)
    m.load_state_dict({"weight": cr.tensor(weight), "bias": cr.zeros(4, dtype=cr.float64)})
    return m


def test_weight_norm_old_and_parametrized():
    W = np.random.default_rng(0).standard_normal((4, 3, 2))
    x = cr.tensor(np.random.default_rng(1).standard_normal((2, 3, 5)))
    plain = _conv_with(W)(x).detach().numpy()
    for dim in (0, 1, None):
        with pytest.warns(FutureWarning):
            old = nn.utils.weight_norm(_conv_with(W), dim=dim)
        new = nn.utils.parametrizations.weight_norm(_conv_with(W), dim=dim)
        assert [n for n, _ in old.named_parameters()] == ["bias", "weight_g", "weight_v"]
        assert list(new.state_dict()) == ["bias", "parametrizations.weight.original0",
                                          "parametrizations.weight.original1"]
        assert type(new).__name__ == "ParametrizedConv1d"
        axes = None if dim is None else tuple(a for a in range(3) if a != dim)
        g = np.sqrt((W ** 2).sum(axis=axes, keepdims=dim is not None))
        np.testing.assert_allclose(old.weight_g.detach().numpy(), g, rtol=1e-14)
        np.testing.assert_allclose(new.parametrizations.weight.original0.detach().numpy(), g,
                                   rtol=1e-14)
        # at initialisation w = g v / |v| = v: the module computes what it did
        for m in (old, new):
            np.testing.assert_allclose(m(x).detach().numpy(), plain, rtol=1e-12)
        # d out / d g = v / |v| contracted with d out / d w; scaling g scales the output
        with cr.no_grad():
            old.weight_g.mul_(2.0)
            new.parametrizations.weight.original0.mul_(2.0)
        for m in (old, new):
            np.testing.assert_allclose(m(x).detach().numpy(), 2 * plain, rtol=1e-12)
        out = new(x).pow(2).sum()
        out.backward()
        assert new.parametrizations.weight.original1.grad is not None
    nn.utils.remove_weight_norm(old)
    assert [n for n, _ in old.named_parameters()] == ["bias", "weight"]
    nn.utils.parametrize.remove_parametrizations(new, "weight")
    assert type(new) is nn.Conv1d and [n for n, _ in new.named_parameters()] == ["bias",
                                                                                 "weight"]
    np.testing.assert_allclose(new.weight.detach().numpy(), 2 * W, rtol=1e-12)
    with pytest.raises(ValueError):
        nn.utils.remove_weight_norm(old)
    with pytest.raises(ValueError):
        nn.utils.parametrize.remove_parametrizations(new, "weight")


def test_spectral_norm_parametrization():
    rng = np.random.default_rng(2)
    W = rng.standard_normal((4, 3))
    m = nn.Linear(3, 4, dtype=cr.float64)
    m.load_state_dict({"weight": cr.tensor(W), "bias": cr.zeros(4, dtype=cr.float64)})
    nn.utils.parametrizations.spectral_norm(m, n_power_iterations=3)
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    m.train()
    for _ in range(20):
        m(cr.zeros(1, 3, dtype=cr.float64))  # power iterations in training mode
    # converged: the weight divided by its largest singular value has spectral norm 1
    np.testing.assert_allclose(np.linalg.norm(m.weight.detach().numpy(), 2), 1.0, rtol=1e-8)
    np.testing.assert_allclose(m.weight.detach().numpy(), W / np.linalg.norm(W, 2), rtol=1e-8)
    m.eval()
    u = m.parametrizations.weight[0]._u.numpy().copy()
    m(cr.zeros(1, 3, dtype=cr.float64))
    np.testing.assert_array_equal(m.parametrizations.weight[0]._u.numpy(), u)  # eval: frozen
    with pytest.raises(ValueError):
        nn.utils.parametrizations.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    if torch is not None:
        tm = torch.nn.Linear(3, 4).double()
        tm.load_state_dict({"weight": torch.tensor(W), "bias": torch.zeros(4).double()})
        torch.nn.utils.parametrizations.spectral_norm(tm)
        sd = {k: cr.tensor(v.numpy()) for k, v in tm.state_dict().items()}
        c = nn.utils.parametrizations.spectral_norm(
            nn.Linear(3, 4, dtype=cr.float64))
        c.load_state_dict(sd)
        xin = rng.standard_normal((2, 3))
        np.testing.assert_allclose(c(cr.tensor(xin)).detach().numpy(),
                                   tm(torch.tensor(xin)).detach().numpy(), rtol=1e-12)


# --- distributions: StudentT, Cauchy, HalfNormal, HalfCauchy, Gumbel, Geometric ------------
def test_more_distributions_closed_forms():
    D = cr.distributions
    x = cr.tensor([-2.0, -0.3, 0.0, 1.7])
    loc, scale = 0.4, 1.3
    # Student t with one degree of freedom is the Cauchy distribution
    np.testing.assert_allclose(D.StudentT(1.0, loc, scale).log_prob(x).numpy(),
                               D.Cauchy(loc, scale).log_prob(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(D.Cauchy(loc, scale).log_prob(x).numpy(),
                               -np.log(np.pi * scale * (1 + ((x.numpy() - loc) / scale) ** 2)),
                               rtol=1e-12)
    st = D.StudentT(cr.tensor([0.5, 1.5, 4.0]), 1.0, 2.0)
    mean, var = st.mean.numpy(), st.variance.numpy()
    assert np.isnan(mean[0]) and mean[2] == 1.0
    assert np.isnan(var[0]) and np.isinf(var[1]) and var[2] == pytest.approx(4 * 4 / 2)
    # df -> infinity: the normal density
    np.testing.assert_allclose(D.StudentT(1e8, loc, scale).log_prob(x).numpy(),
                               D.Normal(loc, scale).log_prob(x).numpy(), rtol=1e-6)
    p = cr.tensor([0.1, 0.5, 0.9])
    c = D.Cauchy(loc, scale)
    np.testing.assert_allclose(c.cdf(c.icdf(p)).numpy(), p.numpy(), rtol=1e-12)
    # half distributions: twice the density on x >= 0, none below
    hn = D.HalfNormal(scale)
    xs = cr.tensor([0.0, 0.5, 2.0])
    np.testing.assert_allclose(hn.log_prob(xs).numpy(),
                               D.Normal(0.0, scale).log_prob(xs).numpy() + np.log(2), rtol=1e-12)
    assert D.HalfNormal(scale, validate_args=False).log_prob(cr.tensor(-1.0)).item() == -np.inf
    np.testing.assert_allclose(hn.mean.item(), scale * np.sqrt(2 / np.pi), rtol=1e-14)
    np.testing.assert_allclose(hn.cdf(hn.icdf(p)).numpy(), p.numpy(), rtol=1e-12)
    with pytest.raises(ValueError):
        hn.log_prob(cr.tensor(-1.0))
    hc = D.HalfCauchy(scale)
    np.testing.assert_allclose(hc.cdf(xs).numpy(), 2 / np.pi * np.arctan(xs.numpy() / scale),
                               rtol=1e-12, atol=1e-15)
    g = D.Gumbel(loc, scale)
    np.testing.assert_allclose(g.cdf(g.icdf(p)).numpy(), p.numpy(), rtol=1e-12)
    z = (x.numpy() - loc) / scale
    np.testing.assert_allclose(g.log_prob(x).numpy(), -z - np.exp(-z) - np.log(scale),
                               rtol=1e-12)
    np.testing.assert_allclose(g.mean.item(), loc + scale * np.euler_gamma, rtol=1e-14)
    # geometric: the pmf sums to 1, its mean is (1 - p) / p
    geo = D.Geometric(probs=cr.tensor(0.3, dtype=cr.float64))
    k = cr.arange(400, dtype=cr.float64)
    pmf = geo.log_prob(k).exp().numpy()
    np.testing.assert_allclose(pmf.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose((pmf * k.numpy()).sum(), geo.mean.item(), rtol=1e-10)
    np.testing.assert_allclose(-(pmf * np.log(pmf)).sum(), geo.entropy().item(), rtol=1e-10)
    assert D.Geometric(probs=cr.tensor(1.0)).log_prob(cr.tensor(0.0)).item() == 0.0
    cr.manual_seed(0)
    draws = D.Geometric(probs=cr.tensor(0.3)).sample((20000,)).numpy()
    assert abs(draws.mean() - 0.7 / 0.3) < 0.1
    # reparameterised draws carry gradients
    df = cr.tensor([3.0, 5.0], requires_grad=True)
    sc = cr.tensor([1.0, 2.0], requires_grad=True)
    s = D.StudentT(df, 0.0, sc).rsample((5,))
    assert tuple(s.shape) == (5, 2)
    s.sum().backward()
    assert df.grad is not None and sc.grad is not None
    if torch is not None:
        for cd, td in ((D.StudentT(2.5, loc, scale), torch.distributions.StudentT(2.5, loc, scale)),
                       (D.Gumbel(loc, scale), torch.distributions.Gumbel(loc, scale))):
            np.testing.assert_allclose(cd.log_prob(x).numpy(),
                                       td.log_prob(torch.tensor(x.numpy())).numpy(), rtol=1e-6)
            np.testing.assert_allclose(cd.entropy().numpy(), td.entropy().numpy(), rtol=1e-6)


# --- nn.init.dirac_ / sparse_, Module.half ---------------------------------------------------
def test_dirac_sparse_init_and_half():
    init = nn.init
    w = cr.empty(4, 2, 3, 3, dtype=cr.float64)
    init.dirac_(w, groups=2)
    x = cr.randn(1, 4, 5, 5, dtype=cr.float64)
    # a grouped convolution with a Dirac weight copies each group's first channels
    out = nn.functional.conv2d(x, w, padding=1, groups=2)
    np.testing.assert_allclose(out.numpy(), x.numpy(), rtol=1e-15)
    assert w.sum().item() == 4.0
    with pytest.raises(ValueError):
        init.dirac_(cr.empty(3, 3))
    with pytest.raises(ValueError):
        init.dirac_(cr.empty(3, 2, 3), groups=2)
    s = cr.empty(10, 6)
    init.sparse_(s, sparsity=0.3)
    np.testing.assert_array_equal((s.numpy() == 0).sum(0), 3)  # ceil(0.3 * 10) per column
    with pytest.raises(ValueError):
        init.sparse_(cr.empty(2, 3, 4), 0.5)
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).half()
    assert all(p.dtype == cr.float16 for p in m.parameters())
    assert m[1].num_batches_tracked.dtype == cr.int64  # integer buffers keep their dtype
    if torch is not None:
        tw = torch.empty(4, 2, 3, 3)
        torch.nn.init.dirac_(tw, groups=2)
        np.testing.assert_array_equal(w.numpy(), tw.numpy())


# --- optim.swa_utils, ReduceLROnPlateau with a group added later -----------------------------
def test_averaged_model_swa_and_ema():
    swa = optim.swa_utils
    m = nn.Linear(2, 1, dtype=cr.float64)
    avg = swa.AveragedModel(m)
    ema = swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9))
    ema1 = swa.AveragedModel(m, avg_fn=swa.get_ema_avg_fn(0.9))
    history = []
    for k in range(4):
        with cr.no_grad():
            m.weight.fill_(float(k + 1))
        history.append(k + 1.0)
        for a in (avg, ema, ema1):
            a.update_parameters(m)
    assert avg.n_averaged.item() == 4 and avg.n_averaged.dtype == cr.int64
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), np.mean(history), rtol=1e-15)
    e = history[0]
    for h in history[1:]:
        e = 0.9 * e + 0.1 * h
    for a in (ema, ema1):
        np.testing.assert_allclose(a.module.weight.detach().numpy(), e, rtol=1e-14)
    assert list(avg.state_dict()) == ["n_averaged", "module.weight", "module.bias"]
    x = cr.ones(3, 2, dtype=cr.float64)
    np.testing.assert_allclose(avg(x).detach().numpy(), avg.module(x).detach().numpy())
    with pytest.raises(AssertionError):
        swa.AveragedModel(m, avg_fn=swa.get_swa_avg_fn(),
                          multi_avg_fn=swa.get_swa_multi_avg_fn())
    with pytest.raises(ValueError):
        swa.get_ema_multi_avg_fn(1.5)


def test_update_bn_and_swalr():
    swa = optim.swa_utils
    net = nn.Sequential(nn.Linear(2, 3, dtype=cr.float64), nn.BatchNorm1d(3, dtype=cr.float64))
    X = cr.tensor(np.random.default_rng(0).standard_normal((12, 2)))
    loader = [X[:4], (X[4:8],), [X[8:]]]
    net.eval()
    swa.update_bn(loader, net)
    h = net[0](X).detach().numpy()
    # momentum None: the cumulative mean over the three equal batches = the full mean
    np.testing.assert_allclose(net[1].running_mean.numpy(), h.mean(0), rtol=1e-12)
    batch_vars = [h[i:i + 4].var(0, ddof=1) for i in (0, 4, 8)]
    np.testing.assert_allclose(net[1].running_var.numpy(), np.mean(batch_vars, 0), rtol=1e-12)
    assert not net.training and net[1].momentum == 0.1
    p = nn.Parameter(cr.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    sch = swa.SWALR(opt, swa_lr=0.2, anneal_epochs=4, anneal_strategy="linear")
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(5):
        opt.step()
        sch.step()
        lrs.append(opt.param_groups[0]["lr"])
    # linear from 1.0 to 0.2 over four steps, then held
    np.testing.assert_allclose(lrs, [1.0, 0.8, 0.6, 0.4, 0.2, 0.2], rtol=1e-12)
    with pytest.raises(ValueError):
        swa.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    if torch is not None:
        tp = torch.nn.Parameter(torch.zeros(1))
        to = torch.optim.SGD([tp], lr=1.0)
        ts = torch.optim.swa_utils.SWALR(to, swa_lr=0.2, anneal_epochs=4,
                                         anneal_strategy="linear")
        tl = [to.param_groups[0]["lr"]]
        for _ in range(5):
            to.step()
            ts.step()
            tl.append(to.param_groups[0]["lr"])
        np.testing.assert_allclose(lrs, tl, rtol=1e-12)


def test_reduce_lr_on_plateau_with_a_group_added_later():
    a, b = nn.Parameter(cr.zeros(1)), nn.Parameter(cr.zeros(1))
    opt = optim.SGD([a], lr=1.0)
    sch = optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, min_lr=0.3)
    opt.add_param_group({"params": [b], "lr": 0.5})
    for _ in range(3):
        sch.step(1.0)
    assert [g["lr"] for g in opt.param_groups] == [0.3, 0.3]
    assert sch.mode_worse == math.inf and sch.default_min_lr == 0.3
    opt2 = optim.SGD([nn.Parameter(cr.zeros(1))], lr=1.0)
    sch2 = optim.lr_scheduler.ReduceLROnPlateau(opt2, patience=0, min_lr=[0.1])
    opt2.add_param_group({"params": [nn.Parameter(cr.zeros(1))]})
    sch2.step(1.0)
    with pytest.raises(RuntimeError, match="min_lrs"):
        sch2.step(1.0)


# --- Module state-dict protocol ------------------------------------------------------------
class _WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2, dtype=cr.float64)
        self.register_buffer("cache", cr.ones(2), persistent=False)
        self.counter = 7

    def get_extra_state(self):
        return {"counter": self.counter}

    def set_extra_state(self, state):
        self.counter = state["counter"]


class _Renamed(nn.Module):
    """Loads checkpoints from when its layer was called ``fc``."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2, dtype=cr.float64)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("weight", "bias"):
            if prefix + "fc." + name in state_dict:
                state_dict[prefix + "lin." + name] = state_dict.pop(prefix + "fc." + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


def test_state_dict_extra_state_and_load_from_state_dict_override():
    m = _WithExtra()
    sd = m.state_dict()
    assert list(sd) == ["_extra_state", "lin.weight", "lin.bias"]  # own entries first, no
    #                                                               non-persistent buffer
    m2 = _WithExtra()
    m2.counter = 0
    m2.load_state_dict(sd)
    assert m2.counter == 7
    with pytest.raises(RuntimeError, match="_extra_state"):
        m2.load_state_dict({k: v for k, v in sd.items() if k != "_extra_state"})
    with pytest.raises(RuntimeError, match="Unexpected key"):
        nn.Linear(2, 2).load_state_dict({"weight": cr.zeros(2, 2), "bias": cr.zeros(2),
                                         "_extra_state": 1})
    # a module renaming old keys, at the top and nested
    eye = cr.eye(2, dtype=cr.float64)
    r = _Renamed()
    r.load_state_dict({"fc.weight": eye, "fc.bias": cr.zeros(2, dtype=cr.float64)})
    np.testing.assert_array_equal(r.lin.weight.detach().numpy(), np.eye(2))
    seq = nn.Sequential(_Renamed())
    seq.load_state_dict({"0.fc.weight": 2 * eye, "0.fc.bias": cr.zeros(2, dtype=cr.float64)})
    np.testing.assert_array_equal(seq[0].lin.weight.detach().numpy(), 2 * np.eye(2))
    with pytest.raises(TypeError):
        r.load_state_dict([("lin.weight", eye)])


def test_load_state_dict_assign_and_shared_modules():
    m = nn.Linear(2, 2, dtype=cr.float64)
    w = cr.full((2, 2), 3.0, dtype=cr.float64)
    m.load_state_dict({"weight": w, "bias": cr.zeros(2, dtype=cr.float64)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight._data is w._data  # the given storage, not a copy
    # a module reachable under two names is saved (and loaded) under both, as PyTorch
    shared = nn.Linear(2, 2)
    net = nn.Module()
    net.enc, net.dec = shared, shared
    assert list(net.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]
    net.load_state_dict(net.state_dict())
    with pytest.raises(RuntimeError, match="size mismatch"):
        m.load_state_dict({"weight": cr.zeros(3, 2), "bias": cr.zeros(2)})
    if torch is not None:
        tnet = torch.nn.Module()
        tshared = torch.nn.Linear(2, 2)
        tnet.enc, tnet.dec = tshared, tshared
        assert list(tnet.state_dict()) == list(net.state_dict())
        net.load_state_dict(tnet.state_dict())  # a PyTorch state dict loads as it is
        np.testing.assert_allclose(shared.weight.detach().numpy(),
                                   tshared.weight.detach().numpy())


def test_state_dict_hooks():
    m = nn.Linear(2, 2)
    seen = []
    h1 = m.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: seen.append(prefix))
    h2 = m.register_state_dict_post_hook(
        lambda mod, sd, prefix, meta: sd.update({prefix + "note": cr.zeros(1)}))
    sd = nn.Sequential(m).state_dict()
    assert seen == ["0."] and "0.note" in sd
    h1.remove()
    h2.remove()

    def pre(mod, state_dict, prefix, *rest):
        state_dict[prefix + "bias"] = cr.full((2,), 5.0)

    m.register_load_state_dict_pre_hook(pre)
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    res = m.load_state_dict({"weight": cr.zeros(2, 2)})
    assert res.missing_keys == [] and m.bias.detach().numpy().tolist() == [5.0, 5.0]


# --- max_unpool, lp_pool ------------------------------------------------------------------
def test_max_unpool_inverts_max_pool_and_lp_pool():
    F = nn.functional
    x = cr.tensor(np.random.default_rng(4).standard_normal((2, 3, 6, 4)), requires_grad=True)
    p, idx = F.max_pool2d(x, 2, return_indices=True)
    up = F.max_unpool2d(p, idx, 2)
    xn = x.detach().numpy()
    # the maxima back where they were, zeros elsewhere
    blocks = xn.reshape(2, 3, 3, 2, 2, 2)
    is_max = blocks == blocks.max(axis=(3, 5), keepdims=True)
    np.testing.assert_array_equal(up.detach().numpy(),
                                  np.where(is_max, blocks, 0).reshape(2, 3, 6, 4))
    assert tuple(nn.MaxUnpool2d(2)(p, idx, output_size=(7, 5)).shape) == (2, 3, 7, 5)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(p, idx, 2, output_size=(9, 4))
    # overlapping windows: an index picked twice gets both gradients, as PyTorch
    v = cr.tensor([[[0.0, 5.0, 1.0, 0.0, 0.0]]], requires_grad=True)
    pv, iv = F.max_pool1d(v, 3, stride=1, return_indices=True)  # 5 wins windows 0, 1; 1 the 3rd
    F.max_unpool1d(pv, iv, 3, stride=1).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy().ravel(), [0.0, 2.0, 1.0, 0.0, 0.0])
    # lp pooling: (sum of x^p over the window)^(1/p)
    y = cr.tensor(np.abs(xn) + 0.1)
    lp = F.lp_pool2d(y, 3, 2).numpy()
    np.testing.assert_allclose(
        lp, ((y.numpy() ** 3).reshape(2, 3, 3, 2, 2, 2).sum(axis=(3, 5))) ** (1 / 3),
        rtol=1e-12)
    np.testing.assert_allclose(nn.LPPool1d(2, 2)(y[:, :, 0]).numpy(),
                               np.sqrt((y.numpy()[:, :, 0] ** 2).reshape(2, 3, 2, 2).sum(-1)),
                               rtol=1e-12)
    if torch is not None:
        tv = torch.tensor([[[0.0, 5.0, 1.0, 0.0, 0.0]]], requires_grad=True)
        tp, ti = torch.nn.functional.max_pool1d(tv, 3, stride=1, return_indices=True)
        torch.nn.functional.max_unpool1d(tp, ti, 3, stride=1).sum().backward()
        np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())


# --- ctc_loss --------------------------------------------------------------------------------
def _ctc_brute_force(lp, target, blank=0):
    """-log of the sum over every length-T path that collapses to ``target``."""
    import itertools
    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        collapsed = [k for i, k in enumerate(path) if k != blank and (i == 0 or
                                                                      path[i - 1] != k)]
        if collapsed == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total)


def test_ctc_loss_against_brute_force_and_gradients():
    F = nn.functional
    rng = np.random.default_rng(5)
    logits = cr.tensor(rng.standard_normal((5, 2, 3)), requires_grad=True)
    lp = F.log_softmax(logits, -1)
    targets = cr.tensor([[1, 2], [1, 1]])
    in_len, tg_len = cr.tensor([5, 4]), cr.tensor([2, 2])
    losses = F.ctc_loss(lp, targets, in_len, tg_len, reduction="none")
    lpn = lp.detach().numpy()
    expected = [_ctc_brute_force(lpn[:5, 0], [1, 2]), _ctc_brute_force(lpn[:4, 1], [1, 1])]
    np.testing.assert_allclose(losses.detach().numpy(), expected, rtol=1e-12)
    # mean: divided by the target lengths, then averaged; the logits' gradient is exact
    assert cr.autograd.gradcheck(
        lambda z: F.ctc_loss(F.log_softmax(z, -1), targets, in_len, tg_len), (logits,))
    # concatenated 1-D targets give the same losses
    flat = F.ctc_loss(lp, cr.tensor([1, 2, 1, 1]), in_len, tg_len, reduction="none")
    np.testing.assert_allclose(flat.detach().numpy(), expected, rtol=1e-12)
    # an impossible alignment (1, 1 needs a blank between: 3 steps): inf, or 0 when asked
    short = F.ctc_loss(lp[:2, :1], cr.tensor([[1, 1]]), [2], [2], reduction="none")
    assert np.isinf(short.item())
    z = F.ctc_loss(lp[:2, :1], cr.tensor([[1, 1]]), [2], [2], zero_infinity=True)
    assert z.item() == 0.0
    with pytest.raises(RuntimeError, match="input_lengths"):
        F.ctc_loss(lp, targets, cr.tensor([6, 4]), tg_len)
    if torch is not None:
        tl = torch.nn.functional.log_softmax(torch.tensor(logits.detach().numpy(),
                                                          requires_grad=True), -1)
        tl.retain_grad()
        tloss = torch.nn.functional.ctc_loss(tl, torch.tensor(targets.numpy()),
                                             torch.tensor([5, 4]), torch.tensor([2, 2]))
        tloss.backward()
        lp2 = F.log_softmax(cr.tensor(logits.detach().numpy()), -1).detach().requires_grad_()
        closs = F.ctc_loss(lp2, targets, in_len, tg_len)
        closs.backward()
        np.testing.assert_allclose(closs.item(), tloss.item(), rtol=1e-12)
        # PyTorch's gradient with respect to the log-probabilities themselves
        np.testing.assert_allclose(lp2.grad.numpy(), tl.grad.numpy(), rtol=1e-10, atol=1e-14)


# --- utils.data: default_convert without batching, StackDataset, get_worker_info --------------
def test_dataloader_without_batching_converts_samples():
    data = cr.utils.data

    class NumpyDS(data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.full(2, i, dtype=np.float32), i, {"a": np.float64(i)}

    first = next(iter(data.DataLoader(NumpyDS(), batch_size=None)))
    # PyTorch's default_convert: arrays and NumPy scalars become tensors, tuples lists
    assert isinstance(first, list) and isinstance(first[0], cr.Tensor)
    assert first[1] == 0 and isinstance(first[2]["a"], cr.Tensor)
    assert first[0].dtype == cr.float32
    # a collate_fn is applied to each sample
    got = list(data.DataLoader(NumpyDS(), batch_size=None, collate_fn=lambda s: s[1] * 10))
    assert got == [0, 10, 20]
    assert data.default_convert(["x", np.array(["a"])])[0] == "x"

    class Stream(data.IterableDataset):
        def __iter__(self):
            info = data.get_worker_info()  # None: the main process reads everything
            assert info is None
            yield from (np.array([k]) for k in range(3))

    assert all(isinstance(x, cr.Tensor) for x in data.DataLoader(Stream(), batch_size=None))
    ds = data.TensorDataset(cr.arange(3))
    st = data.StackDataset(NumpyDS(), ds)
    assert len(st) == 3 and isinstance(st[1], tuple) and st[1][1][0].item() == 1
    assert set(data.StackDataset(x=ds, y=ds)[2]) == {"x", "y"}
    with pytest.raises(ValueError, match="Size mismatch"):
        data.StackDataset(ds, data.TensorDataset(cr.arange(4)))
    with pytest.raises(ValueError):
        data.StackDataset()


# --- user-written optimizers: state defaultdict, step hooks, state dict of plain numbers ------
class _HandSGD(optim.Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.5):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    def step(self, closure=None):
        with cr.no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]  # a defaultdict(dict), as PyTorch's
                    if "buf" not in st:
                        st["buf"] = p.grad.clone()
                    else:
                        st["buf"].mul_(g["momentum"]).add_(p.grad)
                    p.add_(st["buf"], alpha=-g["lr"])
                    st["step"] = st.get("step", 0) + 1


def test_custom_optimizer_state_hooks_and_state_dict():
    p = nn.Parameter(cr.tensor([1.0, -2.0], dtype=cr.float64))
    opt = _HandSGD([p], lr=0.1, momentum=0.5)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    post = opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))
    glob = optim.optimizer.register_optimizer_step_post_hook(
        lambda o, args, kwargs: calls.append("global"))
    for _ in range(2):
        p.grad = cr.tensor([1.0, 1.0], dtype=cr.float64)
        opt.step()
    assert calls == ["pre", "post", "global"] * 2
    pre.remove()
    post.remove()
    glob.remove()
    opt.step()
    assert len(calls) == 6
    # momentum by hand: buf 1, then 1.5, then 1.75 -> p = p0 - 0.1 (1 + 1.5 + 1.75)
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.425, -2.0 - 0.425], rtol=1e-14)
    sd = opt.state_dict()
    assert sd["state"][0]["step"] == 3
    opt2 = _HandSGD([p])
    opt2.load_state_dict(sd)
    assert opt2.state[p]["step"] == 3 and isinstance(opt2.state[p]["step"], int)
    # the built-in optimizers still turn an old int step into a tensor
    adam = optim.Adam([p])
    adam.load_state_dict({"state": {0: {"step": 3, "exp_avg": np.ones(2),
                                        "exp_avg_sq": np.ones(2)}},
                          "param_groups": adam.state_dict()["param_groups"]})
    assert isinstance(adam.state[p]["step"], cr.Tensor)
    # a subclass of a built-in optimizer runs its hooks once per step
    class MyAdam(optim.Adam):
        pass

    q = nn.Parameter(cr.zeros(2))
    ma = MyAdam([q])
    n = []
    ma.register_step_post_hook(lambda *a: n.append(1))
    q.grad = cr.ones(2)
    ma.step()
    assert n == [1]


# --- Distribution.expand ---------------------------------------------------------------------
def test_distribution_expand():
    D = cr.distributions
    n = D.Normal(cr.tensor([0.0, 1.0]), cr.tensor([1.0, 2.0]))
    e = n.expand([3, 2])
    assert tuple(e.batch_shape) == (3, 2) and tuple(e.sample().shape) == (3, 2)
    x = cr.tensor([[0.5, -1.0]] * 3)
    np.testing.assert_allclose(e.log_prob(x).numpy(), np.tile(n.log_prob(x[0]).numpy(), (3, 1)))
    assert tuple(n.batch_shape) == (2,)  # the original is unchanged
    cat = D.Categorical(logits=cr.tensor([0.0, 1.0, 2.0])).expand([5])
    assert tuple(cat.sample().shape) == (5,)
    np.testing.assert_allclose(cat.log_prob(cr.tensor([2] * 5)).numpy(),
                               2 - np.log(np.exp([0.0, 1.0, 2.0]).sum()), rtol=1e-12)
    ind = D.Independent(D.Normal(cr.zeros(2), cr.ones(2)), 1).expand([4])
    assert tuple(ind.batch_shape) == (4,) and tuple(ind.event_shape) == (2,)
    assert tuple(ind.sample().shape) == (4, 2)
    mvn = D.MultivariateNormal(cr.zeros(2), cr.eye(2)).expand([3])
    np.testing.assert_allclose(mvn.log_prob(cr.zeros(3, 2)).numpy(), -np.log(2 * np.pi),
                               rtol=1e-12)
    gmm = D.MixtureSameFamily(D.Categorical(probs=cr.tensor([0.5, 0.5])),
                              D.Normal(cr.tensor([-1.0, 1.0]), cr.ones(2))).expand([3])
    assert tuple(gmm.batch_shape) == (3,) and tuple(gmm.log_prob(cr.zeros(3)).shape) == (3,)
    tanh = D.TransformedDistribution(D.Normal(0.0, 1.0), D.transforms.TanhTransform())
    assert tuple(tanh.expand([2]).sample().shape) == (2,)
    with pytest.raises(RuntimeError):
        n.expand([3])


# --- utils.checkpoint -----------------------------------------------------------------------
def test_checkpoint_same_gradients_and_reentrant_rules():
    ckpt = cr.utils.checkpoint
    seq = nn.Sequential(*[nn.Linear(3, 3, dtype=cr.float64) for _ in range(4)])
    x = cr.tensor(np.random.default_rng(6).standard_normal((2, 3)), requires_grad=True)
    seq(x).pow(2).sum().backward()
    ref = [p.grad.numpy().copy() for p in seq.parameters()] + [x.grad.numpy().copy()]
    seq.zero_grad()
    x.grad = None
    out = ckpt.checkpoint_sequential(seq, 2, x, use_reentrant=False)
    out.pow(2).sum().backward()
    for a, b in zip([p.grad.numpy() for p in seq.parameters()] + [x.grad.numpy()], ref):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    y = ckpt.checkpoint(lambda t, k=2.0: t * k, x, use_reentrant=False, k=3.0)
    np.testing.assert_allclose(y.detach().numpy(), 3 * x.detach().numpy())
    lin = nn.Linear(3, 3)
    with pytest.warns(UserWarning, match="None of the inputs"):
        o = ckpt.checkpoint(lin, cr.zeros(1, 3), use_reentrant=True)
    assert not o.requires_grad  # PyTorch's reentrant checkpoint: no graph, no gradients
    with pytest.warns(UserWarning, match="use_reentrant"):
        ckpt.checkpoint(lin, x.float())
    with pytest.raises(ValueError):
        ckpt.checkpoint(lin, x, use_reentrant=True, extra=1)


# --- ParameterDict / ParameterList / ModuleDict details ------------------------------------
def test_parameter_dict_order_repr_and_keywords():
    pd = nn.ParameterDict({"w": nn.Parameter(cr.zeros(1, dtype=cr.float32)),
                           "b": nn.Parameter(cr.zeros(2, 3, dtype=cr.float64))})
    # a plain dict is added in sorted key order (PyTorch's ParameterDict.update)
    assert [n for n, _ in pd.named_parameters()] == ["b", "w"]
    from collections import OrderedDict
    od = nn.ParameterDict(OrderedDict(w=nn.Parameter(cr.zeros(1)), b=nn.Parameter(cr.zeros(1))))
    assert list(od.keys()) == ["w", "b"]
    assert repr(pd) == ("ParameterDict(\n"
                        "    (b): Parameter containing: [chainrule.DoubleTensor of size 2x3]\n"
                        "    (w): Parameter containing: [chainrule.FloatTensor of size 1]\n)")
    pl = nn.ParameterList([nn.Parameter(cr.zeros(2, dtype=cr.float32))])
    assert repr(pl) == "ParameterList(  (0): Parameter containing: [float32 of size 2])"
    md = nn.ModuleDict(modules={"z": nn.ReLU(), "a": nn.Tanh()})
    assert list(md.keys()) == ["z", "a"]  # modules keep insertion order
    assert list(nn.ParameterDict(parameters={"p": cr.zeros(1)}).keys()) == ["p"]
    if torch is not None:
        tpd = torch.nn.ParameterDict({"w": torch.nn.Parameter(torch.zeros(1)),
                                      "b": torch.nn.Parameter(torch.zeros(2, 3).double())})
        assert [n for n, _ in tpd.named_parameters()] == ["b", "w"]
        assert repr(tpd).replace("torch.", "chainrule.") == repr(pd)


def test_huber_delta_error_type_and_optimizer_int_defaults():
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        nn.functional.huber_loss(cr.ones(2), cr.zeros(2), delta=-1.0)
    # PyTorch's integer defaults show in param groups and reprs ("momentum: 0")
    opt = optim.SGD([nn.Parameter(cr.zeros(1))])
    g = opt.param_groups[0]
    assert (g["momentum"], g["dampening"], g["weight_decay"]) == (0, 0, 0)
    assert type(g["momentum"]) is int and "momentum: 0\n" in repr(opt)
    assert type(optim.Adam([nn.Parameter(cr.zeros(1))]).param_groups[0]["weight_decay"]) is int
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.nn.functional.huber_loss(torch.ones(2), torch.zeros(2), delta=-1.0)
        tg = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))]).param_groups[0]
        assert {k: v for k, v in tg.items() if k != "params"} == \
            {k: v for k, v in g.items() if k != "params"}


# --- channel_shuffle, *_with_indices, SyncBatchNorm, Module.compile -------------------------
def test_channel_shuffle_sync_batchnorm_and_aliases():
    F = nn.functional
    x = cr.arange(12.0).reshape(1, 6, 2)
    out = F.channel_shuffle(x, 3).numpy()
    # channel g * 2 + k moves to k * 3 + g
    order = [g * 2 + k for k in range(2) for g in range(3)]
    np.testing.assert_array_equal(out[0], x.numpy()[0][order])
    with pytest.raises(RuntimeError):
        F.channel_shuffle(x, 4)
    v, i = F.max_pool2d_with_indices(cr.arange(16.0).reshape(1, 1, 4, 4), 2)
    np.testing.assert_array_equal(i.numpy().ravel(), [5, 7, 13, 15])
    net = nn.Sequential(nn.Conv2d(3, 4, 1), nn.BatchNorm2d(4))
    sync = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert isinstance(sync[1], nn.SyncBatchNorm) and sync[1].weight is net[1].weight
    z = cr.randn(2, 4, 3, 3, 2, dtype=cr.float64)  # any number of dims >= 2
    bn = nn.SyncBatchNorm(4, dtype=cr.float64)
    y = bn(z).detach().numpy()
    zn = z.numpy()
    axes = (0, 2, 3, 4)
    ref = (zn - zn.mean(axes, keepdims=True)) / np.sqrt(zn.var(axes, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-12)
    lin = nn.Linear(2, 2)
    assert lin.compile() is None and lin.share_memory() is lin


# --- distributions.transform_to / biject_to ---------------------------------------------------
def test_transform_to_constraints():
    D = cr.distributions
    C = D.constraints
    u = cr.tensor([-2.0, 0.3, 4.0])
    cases = [(C.real, lambda x: x), (C.positive, np.exp), (C.nonnegative, np.exp),
             (C.greater_than(2.0), lambda x: np.exp(x) + 2),
             (C.less_than(-1.0), lambda x: -1 - np.exp(x)),
             (C.interval(-3.0, 5.0), lambda x: -3 + 8 / (1 + np.exp(-x))),
             (C.unit_interval, lambda x: 1 / (1 + np.exp(-x)))]
    for c, f in cases:
        t = D.transform_to(c)
        y = t(u)
        np.testing.assert_allclose(y.numpy(), f(u.numpy()), rtol=1e-12)
        assert bool(c.check(y).numpy().all())  # lands in the set
        np.testing.assert_allclose(t.inv(y).numpy(), u.numpy(), rtol=1e-9)
        h = 1e-6
        fd = (f(u.numpy() + h) - f(u.numpy() - h)) / (2 * h)
        np.testing.assert_allclose(t.log_abs_det_jacobian(u, y).numpy(),
                                   np.log(np.abs(fd)), rtol=1e-6, atol=1e-9)
        assert type(D.biject_to(c)) is type(t)
    with pytest.raises(NotImplementedError):
        D.biject_to(C.simplex)
    # optimising a positive scale through an unconstrained parameter
    raw = cr.tensor(0.0, requires_grad=True)
    scale = D.transform_to(C.positive)(raw)
    D.Normal(0.0, scale).log_prob(cr.tensor(2.0)).backward()
    np.testing.assert_allclose(raw.grad.item(), -1 + 4.0, rtol=1e-12)  # d/draw at scale 1


def test_scheduler_step_before_optimizer_step_warns():
    import warnings as _w
    p = nn.Parameter(cr.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    sch = optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sch.step()
    opt2 = optim.SGD([p], lr=1.0)
    sch2 = optim.lr_scheduler.StepLR(opt2, 1, gamma=0.5)
    p.grad = cr.zeros(1)
    with _w.catch_warnings():
        _w.simplefilter("error")
        opt2.step()  # the right order: no warning
        sch2.step()
    assert opt2.param_groups[0]["lr"] == 0.5


# --- more KL pairs, transform equality -------------------------------------------------------
def _mc_kl(p, q, n=200000):
    cr.manual_seed(0)
    x = p.sample((n,))
    return float((p.log_prob(x) - q.log_prob(x)).mean())


def test_more_kl_pairs():
    D = cr.distributions
    T = D.transforms
    pairs = [(D.Cauchy(0.1, 1.2), D.Cauchy(-1.1, 0.3)),
             (D.HalfNormal(1.2), D.HalfNormal(0.4)),
             (D.LogNormal(0.1, 0.7), D.LogNormal(-0.4, 1.7)),
             (D.Exponential(1.3), D.Gamma(2.0, 1.5)),
             (D.Gamma(2.0, 1.5), D.Exponential(1.3)),
             (D.Uniform(-0.5, 1.0), D.Normal(0.3, 1.2)),
             (D.TransformedDistribution(D.Normal(0.3, 1.2), [T.TanhTransform()]),
              D.TransformedDistribution(D.Normal(-0.3, 0.5), [T.TanhTransform()]))]
    for p, q in pairs:  # closed forms against a Monte Carlo estimate
        np.testing.assert_allclose(D.kl_divergence(p, q).item(), _mc_kl(p, q), rtol=0.03,
                                   atol=0.01)
    g1, g2 = D.Geometric(probs=cr.tensor(0.3)), D.Geometric(probs=cr.tensor(0.7))
    k = cr.arange(200.0)
    exact = float((g1.log_prob(k).exp() * (g1.log_prob(k) - g2.log_prob(k))).sum())
    np.testing.assert_allclose(D.kl_divergence(g1, g2).item(), exact, rtol=1e-10)
    b1, b2 = D.Binomial(5, probs=cr.tensor(0.3)), D.Binomial(5, probs=cr.tensor(0.6))
    kk = cr.arange(6.0)
    exact = float((b1.log_prob(kk).exp() * (b1.log_prob(kk) - b2.log_prob(kk))).sum())
    np.testing.assert_allclose(D.kl_divergence(b1, b2).item(), exact, rtol=1e-10)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Binomial(3, probs=cr.tensor(0.3)), b2)
    # transforms compare by kind and parameters
    assert T.TanhTransform() == T.TanhTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.ExpTransform().inv == T.ExpTransform().inv
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.TransformedDistribution(D.Normal(0.0, 1.0), T.AffineTransform(1.0, 2.0)),
                        D.TransformedDistribution(D.Normal(0.0, 1.0), T.AffineTransform(1.0, 3.0)))


def test_copied_optimizer_steps_its_own_parameters():
    import copy
    import pickle
    p = nn.Parameter(cr.ones(2, dtype=cr.float64))
    opt = optim.SGD([p], lr=0.1)
    optim.lr_scheduler.StepLR(opt, 1)  # wraps opt.step to track the call order
    twin = copy.deepcopy(opt)
    q = twin.param_groups[0]["params"][0]
    assert q is not p
    q.grad = cr.ones(2, dtype=cr.float64)
    p.grad = cr.zeros(2, dtype=cr.float64)
    twin.step()
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 1.0])
    np.testing.assert_allclose(q.detach().numpy(), [0.9, 0.9], rtol=1e-15)
    assert type(pickle.loads(pickle.dumps(opt))) is optim.SGD
