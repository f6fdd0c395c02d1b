"""chainrule.optim: Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD; the further LR schedulers;
state values as Tensors. Each optimizer and scheduler is checked against a hand-written
NumPy version of the documented formula, and (when torch is installed) against torch."""

import contextlib
import math
import re

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn, optim
from chainrule.optim import lr_scheduler

try:
    import torch
except ImportError:
    torch = None

RNG = np.random.default_rng(11)
A = RNG.standard_normal((4, 3))
B = RNG.standard_normal(4)
X0 = RNG.standard_normal(3)


def grad_np(x):
    """Gradient of the quadratic sum((A x - b)^2)."""
    return 2 * A.T @ (A @ x - B)


@contextlib.contextmanager
def torch_float64():
    """torch with float64 as its default dtype: its 0-d optimizer state (step, mu_product,
    eta, mu) is then float64, as chainrule's (whose default dtype is float64)."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


# --- hand-written NumPy versions of the documented update rules ----------------------------

def ref_adadelta(x, steps, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
    v, u, out = np.zeros_like(x), np.zeros_like(x), []
    for _ in range(steps):
        g = grad_np(x) * (-1 if maximize else 1) + weight_decay * x
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(u + eps) / np.sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        x = x - lr * delta
        out.append(x)
    return out


def ref_adamax(x, steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0):
    b1, b2 = betas
    m, u, out = np.zeros_like(x), np.zeros_like(x), []
    for t in range(1, steps + 1):
        g = grad_np(x) + weight_decay * x
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        x = x - lr / (1 - b1 ** t) * m / u
        out.append(x)
    return out


def ref_nadam(x, steps, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              momentum_decay=4e-3, decoupled_weight_decay=False):
    b1, b2 = betas
    m, v, mu_prod, out = np.zeros_like(x), np.zeros_like(x), 1.0, []
    for t in range(1, steps + 1):
        g = grad_np(x)
        if decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        mu = b1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
        mu_prod *= mu
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = np.sqrt(v / (1 - b2 ** t)) + eps
        x = (x - lr * (1 - mu) / (1 - mu_prod) * g / denom
             - lr * mu_next / (1 - mu_prod * mu_next) * m / denom)
        out.append(x)
    return out


def ref_radam(x, steps, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
              decoupled_weight_decay=False, rhos=None):
    b1, b2 = betas
    m, v, out = np.zeros_like(x), np.zeros_like(x), []
    rho_inf = 2 / (1 - b2) - 1
    for t in range(1, steps + 1):
        g = grad_np(x)
        if decoupled_weight_decay:
            x = x * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * x
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rhos is not None:
            rhos.append(rho_t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                          / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            x = x - lr * m_hat * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps) * r
        else:
            x = x - lr * m_hat
        out.append(x)
    return out


def ref_rprop(x, steps, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False,
              flips=None):
    etaminus, etaplus = etas
    prev, size, out = np.zeros_like(x), np.full_like(x, lr), []
    for _ in range(steps):
        g = grad_np(x) * (-1 if maximize else 1)
        prod = g * prev
        factor = np.where(prod > 0, etaplus, np.where(prod < 0, etaminus, 1.0))
        size = np.clip(size * factor, *step_sizes)
        g = np.where(prod < 0, 0.0, g)
        if flips is not None:
            flips.append(int((prod < 0).sum()))
        x = x - np.sign(g) * size
        prev = g
        out.append(x)
    return out


def ref_asgd(x, steps, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0):
    eta, mu, ax, out, axs = lr, 1.0, np.zeros_like(x), [], []
    for t in range(1, steps + 1):
        g = grad_np(x) + weight_decay * x
        x = x * (1 - lambd * eta) - eta * g
        ax = x.copy() if mu == 1 else ax + mu * (x - ax)
        eta = lr / (1 + lambd * lr * t) ** alpha
        mu = 1 / max(1, t - t0)
        out.append(x)
        axs.append(ax)
    return out, axs


CASES = {
    "adadelta": ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1), ref_adadelta),
    "adadelta_max": ("Adadelta", dict(lr=0.5, maximize=True), ref_adadelta),
    "adamax": ("Adamax", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1), ref_adamax),
    "nadam": ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01), ref_nadam),
    "nadamw": ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
               ref_nadam),
    "radam": ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1), ref_radam),
    "radamw": ("RAdam", dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1,
                             decoupled_weight_decay=True), ref_radam),
    "rprop": ("Rprop", dict(lr=0.2, etas=(0.4, 1.5), step_sizes=(1e-3, 0.5)), ref_rprop),
    "rprop_max": ("Rprop", dict(lr=0.01, maximize=True), ref_rprop),
    "asgd": ("ASGD", dict(lr=0.05, lambd=1e-2, t0=3, weight_decay=0.1),
             lambda x, n, **kw: ref_asgd(x, n, **kw)[0]),
}
STEPS = 10


def run_chainrule(cls, kwargs, steps=STEPS):
    x = nn.Parameter(cr.tensor(X0.copy()))
    opt = getattr(optim, cls)([x], **kwargs)
    At, bt, out = cr.tensor(A), cr.tensor(B), []
    for _ in range(steps):
        opt.zero_grad()
        r = At @ x - bt
        (r * r).sum().backward()
        opt.step()
        out.append(x.detach().numpy().copy())
    return out, opt, x


def run_torch(cls, kwargs, steps=STEPS):
    with torch_float64():
        x = torch.nn.Parameter(torch.tensor(X0.copy()))
        opt = getattr(torch.optim, cls)([x], **kwargs)
        At, bt, out = torch.tensor(A), torch.tensor(B), []
        for _ in range(steps):
            opt.zero_grad()
            r = At @ x - bt
            (r * r).sum().backward()
            opt.step()
            out.append(x.detach().numpy().copy())
    return out, opt


@pytest.mark.parametrize("name", sorted(CASES))
def test_optimizer_matches_formula_and_torch(name):
    cls, kwargs, ref = CASES[name]
    ours, opt, x = run_chainrule(cls, kwargs)
    expected = ref(X0.copy(), STEPS, **kwargs)
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-13)
    assert not np.allclose(ours[-1], X0)
    # the state holds chainrule Tensors; step counts the updates
    st = opt.state[x]
    assert all(isinstance(v, cr.Tensor) for v in st.values())
    assert st["step"].shape == () and st["step"].item() == STEPS
    if torch is None:
        return
    theirs, topt = run_torch(cls, kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    tst = topt.state[topt.param_groups[0]["params"][0]]
    assert set(st) == set(tst)
    for k in st:
        np.testing.assert_allclose(st[k].numpy(), tst[k].numpy(), rtol=1e-12, atol=1e-14)


def test_reference_branches_are_exercised():
    rhos, flips = [], []
    ref_radam(X0.copy(), STEPS, lr=0.05, betas=(0.9, 0.9), rhos=rhos)
    assert rhos[0] <= 5 < rhos[-1]  # both RAdam branches (plain and rectified) run
    ref_rprop(X0.copy(), STEPS, lr=0.2, etas=(0.4, 1.5), step_sizes=(1e-3, 0.5), flips=flips)
    assert sum(flips) > 0  # Rprop sees sign changes
    _, axs = ref_asgd(X0.copy(), STEPS, lr=0.05, lambd=1e-2, t0=3, weight_decay=0.1)
    out, opt, x = run_chainrule("ASGD", dict(lr=0.05, lambd=1e-2, t0=3, weight_decay=0.1))
    np.testing.assert_allclose(opt.state[x]["ax"].numpy(), axs[-1], rtol=1e-12)
    assert not np.allclose(axs[-1], out[-1])  # the average differs from the iterate
    np.testing.assert_allclose(opt.state[x]["mu"].item(), 1 / (STEPS - 3))


def test_param_groups_and_zero_grad():
    p, q = nn.Parameter(cr.tensor(X0.copy())), nn.Parameter(cr.tensor(X0.copy()))
    opt = optim.NAdam([{"params": [p]}, {"params": [q], "lr": 0.1, "weight_decay": 0.2}],
                      lr=0.05)
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    assert opt.param_groups[1]["momentum_decay"] == 4e-3
    for _ in range(3):
        opt.zero_grad()
        for t in (p, q):
            r = cr.tensor(A) @ t - cr.tensor(B)
            (r * r).sum().backward()
        opt.step()
    np.testing.assert_allclose(p.detach().numpy(), ref_nadam(X0.copy(), 3, lr=0.05)[-1],
                               rtol=1e-12)
    np.testing.assert_allclose(q.detach().numpy(),
                               ref_nadam(X0.copy(), 3, lr=0.1, weight_decay=0.2)[-1],
                               rtol=1e-12)
    opt.zero_grad(set_to_none=False)
    assert np.all(p.grad.numpy() == 0)
    opt.zero_grad()
    assert p.grad is None and q.grad is None


@pytest.mark.parametrize("cls", ["Adadelta", "Adamax", "NAdam", "RAdam", "Rprop", "ASGD",
                                 "Adam", "SGD", "RMSprop", "Adagrad"])
def test_state_dict_round_trip(cls):
    kwargs = {"lr": 0.05, **({"momentum": 0.9} if cls == "SGD" else {})}
    full, _, _ = run_chainrule(cls, kwargs, steps=5)
    _, opt, x = run_chainrule(cls, kwargs, steps=2)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    y = nn.Parameter(cr.tensor(x.detach().numpy().copy()))
    opt2 = getattr(optim, cls)([y], lr=0.7)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.05
    # a copy: stepping the original does not move the loaded state
    assert all(opt2.state[y][k] is not v for k, v in opt.state[x].items())
    for _ in range(3):
        opt2.zero_grad()
        r = cr.tensor(A) @ y - cr.tensor(B)
        (r * r).sum().backward()
        opt2.step()
    np.testing.assert_allclose(y.detach().numpy(), full[-1], rtol=1e-13)


def test_state_values_are_tensors():
    p = nn.Parameter(cr.tensor(X0.copy()))
    adam = optim.Adam([p], lr=0.1)
    p.grad = cr.tensor(grad_np(X0))
    adam.step()
    st = adam.state[p]
    assert isinstance(st["exp_avg"], cr.Tensor) and isinstance(st["step"], cr.Tensor)
    np.testing.assert_allclose(st["exp_avg"].norm().item(), np.linalg.norm(0.1 * grad_np(X0)))
    assert st["step"] == 1 and st["step"].dtype == cr.get_default_dtype()
    held = st["exp_avg"]
    adam.step()
    assert adam.state[p]["exp_avg"] is held  # the same tensor, updated
    np.testing.assert_allclose(held.numpy(), 0.19 * grad_np(X0), rtol=1e-12)
    sgd = optim.SGD([p], lr=0.1, momentum=0.9)
    sgd.step()
    assert isinstance(sgd.state[p]["momentum_buffer"], cr.Tensor)
    # an older state dict (arrays and int steps) loads as Tensors
    old = {"state": {0: {"step": 3, "exp_avg": np.ones(3), "exp_avg_sq": np.ones(3)}},
           "param_groups": [dict(adam.state_dict()["param_groups"][0])]}
    adam.load_state_dict(old)
    st = adam.state[p]
    assert isinstance(st["step"], cr.Tensor) and st["step"].item() == 3
    assert isinstance(st["exp_avg"], cr.Tensor) and st["exp_avg"].dtype == p.dtype
    # a float32 parameter gets float32 buffers on load, the step keeps its dtype
    q = nn.Parameter(cr.tensor(X0.astype(np.float32)))
    adam32 = optim.Adam([q], lr=0.1)
    adam32.load_state_dict(old)
    assert adam32.state[q]["exp_avg"].dtype == np.float32
    # LBFGS keeps its vectors as Tensors too
    x = nn.Parameter(cr.tensor(X0.copy()))
    lbfgs = optim.LBFGS([x], max_iter=3)

    def closure():
        lbfgs.zero_grad()
        r = cr.tensor(A) @ x - cr.tensor(B)
        loss = (r * r).sum()
        loss.backward()
        return loss

    lbfgs.step(closure)
    lbfgs.step(closure)
    lst = lbfgs.state[x]
    assert isinstance(lst["d"], cr.Tensor) and isinstance(lst["prev_flat_grad"], cr.Tensor)
    assert all(isinstance(v, cr.Tensor) for v in lst["old_dirs"])


ERRORS = [
    ("Adadelta", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1), "Invalid epsilon value: -1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Rprop", dict(etas=(1.1, 1.2)), "Invalid eta values: 1.1, 1.2"),
    ("ASGD", dict(weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
]


@pytest.mark.parametrize("cls,kwargs,message", ERRORS)
def test_errors_as_torch(cls, kwargs, message):
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        getattr(optim, cls)([nn.Parameter(cr.zeros(2))], **kwargs)
    if torch is not None:
        with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
            getattr(torch.optim, cls)([torch.nn.Parameter(torch.zeros(2))], **kwargs)


def test_defaults_as_torch():
    expected = {"Adadelta": dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0),
                "Adamax": dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8),
                "NAdam": dict(lr=2e-3, momentum_decay=4e-3, decoupled_weight_decay=False),
                "RAdam": dict(lr=1e-3, betas=(0.9, 0.999), decoupled_weight_decay=False),
                "Rprop": dict(lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)),
                "ASGD": dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0)}
    for cls, want in expected.items():
        ours = getattr(optim, cls)([nn.Parameter(cr.zeros(2))]).defaults
        assert {k: ours[k] for k in want} == want
        if torch is not None:
            theirs = getattr(torch.optim, cls)([torch.nn.Parameter(torch.zeros(2))]).defaults
            assert set(ours) == set(theirs)
            assert all(ours[k] == theirs[k] for k in ours)
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.RAdam([nn.Parameter(cr.zeros(2))], differentiable=True)


# --- schedulers ------------------------------------------------------------------------------

def lr_history(lib, make_opt, make_sched, steps, epochs=None):
    """(lrs, momenta) after construction and after each of ``steps`` steps; group 0's
    momentum (``momentum`` or ``betas[0]``)."""
    opt = make_opt(lib)
    sched = make_sched(lib, opt)
    g = opt.param_groups[0]

    def mom():
        return g["betas"][0] if "betas" in g else g.get("momentum")

    lrs, moms = [sched.get_last_lr()], [mom()]
    for i in range(steps):
        opt.step()
        if epochs is None:
            sched.step()
        else:
            sched.step(epochs[i])
        lrs.append(sched.get_last_lr())
        moms.append(mom())
    return np.array(lrs, dtype=float), moms


def sgd2(lib, momentum=0.0):
    """SGD over two groups (lr 0.1 and 0.3)."""
    if lib is optim:
        p = [nn.Parameter(cr.zeros(1)), nn.Parameter(cr.zeros(1))]
    else:
        p = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    return lib.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.3}], lr=0.1,
                   momentum=momentum)


def adam1(lib):
    p = nn.Parameter(cr.zeros(1)) if lib is optim else torch.nn.Parameter(torch.zeros(1))
    return lib.Adam([p], lr=0.1, betas=(0.9, 0.99))


def sched_of(lib):
    return lr_scheduler if lib is optim else torch.optim.lr_scheduler


def compare(make_opt, make_sched, steps, expected=None, epochs=None):
    """Our lr history against ``expected`` (an array, group by column) and against torch
    (lrs and momenta)."""
    with pytest.warns(UserWarning) if epochs is not None else contextlib.nullcontext():
        ours, moms = lr_history(optim, make_opt, make_sched, steps, epochs)
    if expected is not None:
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)
    if torch is not None:
        with pytest.warns(UserWarning) if epochs is not None else contextlib.nullcontext():
            theirs, tmoms = lr_history(torch.optim, make_opt, make_sched, steps, epochs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(np.array(moms, float), np.array(tmoms, float), rtol=1e-12)
    return ours, moms


BASE = np.array([0.1, 0.3])


def by_epoch(f, n):
    return np.array([BASE * f(e) for e in range(n + 1)])


def test_lambda_and_multiplicative():
    compare(sgd2, lambda lib, o: sched_of(lib).LambdaLR(o, lambda e: 0.95 ** e + 0.01 * e),
            6, by_epoch(lambda e: 0.95 ** e + 0.01 * e, 6))
    compare(sgd2, lambda lib, o: sched_of(lib).LambdaLR(
        o, [lambda e: 1 / (e + 1), lambda e: 2.0]), 4,
        np.array([[0.1 / (e + 1), 0.6] for e in range(5)]))
    compare(sgd2, lambda lib, o: sched_of(lib).MultiplicativeLR(o, lambda e: 0.9), 5,
            by_epoch(lambda e: 0.9 ** e, 5))
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(sgd2(optim), [lambda e: 1.0])
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got int"):
        lr_scheduler.MultiplicativeLR(sgd2(optim), 3)


def test_multistep_constant_linear_polynomial():
    compare(sgd2, lambda lib, o: sched_of(lib).MultiStepLR(o, [2, 5, 5], gamma=0.5), 7,
            by_epoch(lambda e: 0.5 ** sum(m <= e for m in [2, 5, 5]), 7))
    compare(sgd2, lambda lib, o: sched_of(lib).ConstantLR(o, factor=0.5, total_iters=3), 5,
            by_epoch(lambda e: 0.5 if e < 3 else 1.0, 5))
    compare(sgd2, lambda lib, o: sched_of(lib).LinearLR(o, start_factor=0.25, total_iters=4),
            6, by_epoch(lambda e: 0.25 + 0.75 * min(e, 4) / 4, 6))
    compare(sgd2, lambda lib, o: sched_of(lib).LinearLR(o, 1.0, 0.1, total_iters=3), 5,
            by_epoch(lambda e: 1.0 - 0.9 * min(e, 3) / 3, 5))
    compare(sgd2, lambda lib, o: sched_of(lib).PolynomialLR(o, total_iters=4, power=2.0), 6,
            by_epoch(lambda e: (1 - min(e, 4) / 4) ** 2, 6))
    # step(epoch): the closed forms
    compare(sgd2, lambda lib, o: sched_of(lib).MultiStepLR(o, [2, 4], gamma=0.5), 3,
            by_epoch(lambda e: 0.5 ** sum(m <= 2 * e for m in [2, 4]), 3), epochs=[2, 4, 6])
    compare(sgd2, lambda lib, o: sched_of(lib).LinearLR(o, start_factor=0.5, total_iters=4),
            3, by_epoch(lambda e: 0.5 + 0.5 * min(3 * e, 4) / 4, 3), epochs=[3, 6, 9])
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be "
                                         "between 0 and 1."):
        lr_scheduler.ConstantLR(sgd2(optim), factor=2)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected"):
        lr_scheduler.LinearLR(sgd2(optim), start_factor=0)


def one_cycle_expected(total, max_lr, pct, div, final_div, anneal, three_phase, mom=(.85, .95)):
    def cos(a, b, x):
        return b + (a - b) / 2 * (math.cos(math.pi * x) + 1)

    def lin(a, b, x):
        return a + (b - a) * x

    f = cos if anneal == "cos" else lin
    lo, hi, bottom = max_lr / div, max_lr, max_lr / div / final_div
    up = pct * total - 1
    if three_phase:
        phases = [(up, lo, hi, mom[1], mom[0]), (2 * pct * total - 2, hi, lo, mom[0], mom[1]),
                  (total - 1, lo, bottom, mom[1], mom[1])]
    else:
        phases = [(up, lo, hi, mom[1], mom[0]), (total - 1, hi, bottom, mom[0], mom[1])]
    lrs, moms = [], []
    for t in range(total):
        start = 0.0
        for i, (end, a, b, ma, mb) in enumerate(phases):
            if t <= end or i == len(phases) - 1:
                x = (t - start) / (end - start)
                lrs.append(f(a, b, x))
                moms.append(f(ma, mb, x))
                break
            start = end
    return lrs, moms


@pytest.mark.parametrize("anneal,three_phase,adam", [("cos", False, False),
                                                      ("linear", False, True),
                                                      ("cos", True, True)])
def test_one_cycle(anneal, three_phase, adam):
    make = adam1 if adam else (lambda lib: sgd2(lib, momentum=0.9))
    kw = dict(max_lr=1.0, total_steps=10, pct_start=0.3, anneal_strategy=anneal,
              three_phase=three_phase, final_div_factor=100.0)
    ours, moms = compare(make, lambda lib, o: sched_of(lib).OneCycleLR(o, **kw), 9)
    lrs, exp_moms = one_cycle_expected(10, 1.0, 0.3, 25.0, 100.0, anneal, three_phase)
    np.testing.assert_allclose(ours[:, 0], lrs, rtol=1e-12)
    np.testing.assert_allclose(moms, exp_moms, rtol=1e-12)
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        sched = lr_scheduler.OneCycleLR(make(optim), **kw)
        for _ in range(11):
            sched.step()


def test_one_cycle_errors():
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        lr_scheduler.OneCycleLR(sgd2(optim), 1.0)
    with pytest.raises(ValueError, match="Expected float between 0 and 1 pct_start, but got 1"):
        lr_scheduler.OneCycleLR(sgd2(optim), 1.0, total_steps=5, pct_start=1)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        lr_scheduler.OneCycleLR(optim.Adagrad([nn.Parameter(cr.zeros(1))]), 1.0, 5)
    s = lr_scheduler.OneCycleLR(sgd2(optim), [1.0, 2.0], epochs=2, steps_per_epoch=5)
    assert s.total_steps == 10 and s.optimizer.param_groups[1]["max_lr"] == 2.0


def cyclic_expected(n, base, hi, up, down, mode, gamma=1.0, mom=(0.8, 0.9)):
    lrs, moms = [], []
    for t in range(n + 1):
        cycle = math.floor(1 + t / (up + down))
        x = 1 + t / (up + down) - cycle
        r = up / (up + down)
        h = x / r if x <= r else (x - 1) / (r - 1)
        scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1),
                 "exp_range": gamma ** t}[mode]
        lrs.append(base + (hi - base) * h * scale)
        moms.append(mom[1] - (mom[1] - mom[0]) * h * scale)
    return lrs, moms


@pytest.mark.parametrize("mode,adam", [("triangular", False), ("triangular2", True),
                                       ("exp_range", False)])
def test_cyclic(mode, adam):
    make = adam1 if adam else (lambda lib: sgd2(lib, momentum=0.5))
    kw = dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=2, mode=mode,
              gamma=0.9)
    ours, moms = compare(make, lambda lib, o: sched_of(lib).CyclicLR(o, **kw), 12)
    lrs, exp_moms = cyclic_expected(12, 0.01, 0.1, 3, 2, mode, gamma=0.9)
    np.testing.assert_allclose(ours[:, 0], lrs, rtol=1e-12)
    np.testing.assert_allclose(moms, exp_moms, rtol=1e-12)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        lr_scheduler.CyclicLR(sgd2(optim), 0.1, 1.0, mode="other")


def test_cyclic_custom_scale_and_state_dict():
    kw = dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=lambda x: 1 / x,
              scale_mode="cycle", cycle_momentum=False)
    ours, _ = compare(sgd2, lambda lib, o: sched_of(lib).CyclicLR(o, **kw), 8)
    assert ours[2, 0] == pytest.approx(0.1) and ours[6, 0] == pytest.approx(0.055)
    s = lr_scheduler.CyclicLR(sgd2(optim), **kw)
    sd = s.state_dict()
    assert sd["_scale_fn_custom"] is None and "_scale_fn_ref" not in sd


def warm_restarts_expected(epochs, T_0, T_mult, eta_min):
    out = []
    for e in epochs:
        T_i, start = T_0, 0
        while e >= start + T_i:
            start += T_i
            T_i *= T_mult
        out.append(eta_min + (BASE - eta_min) * (1 + math.cos(math.pi * (e - start) / T_i)) / 2)
    return np.array(out)


def test_cosine_warm_restarts():
    make = lambda lib, o: sched_of(lib).CosineAnnealingWarmRestarts(o, 3, 2, 0.01)  # noqa
    compare(sgd2, make, 12, warm_restarts_expected(range(13), 3, 2, 0.01))
    make1 = lambda lib, o: sched_of(lib).CosineAnnealingWarmRestarts(o, T_0=4)  # noqa
    compare(sgd2, make1, 9, warm_restarts_expected(range(10), 4, 1, 0.0))
    # fractional epochs, as in a per-batch loop
    epochs = [0.25, 0.5, 1.75, 3.0, 3.5, 8.9, 9.0, 20.2]
    ours, _ = lr_history(optim, sgd2, make, len(epochs), epochs)
    np.testing.assert_allclose(ours, warm_restarts_expected([0] + epochs, 3, 2, 0.01),
                               rtol=1e-12)
    if torch is not None:
        theirs, _ = lr_history(torch.optim, sgd2, make, len(epochs), epochs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(sgd2(optim), 0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        lr_scheduler.CosineAnnealingWarmRestarts(sgd2(optim), 2, T_mult=1.5)


def test_sequential_and_chained():
    def seq(lib, o):
        s = sched_of(lib)
        return s.SequentialLR(o, [s.ConstantLR(o, factor=0.1, total_iters=2),
                                  s.ExponentialLR(o, gamma=0.9)], milestones=[3])

    compare(sgd2, seq, 7, by_epoch(lambda e: (0.1 if e < 2 else 1.0) if e < 3
                                   else 0.9 ** (e - 3), 7))

    def seq3(lib, o):
        s = sched_of(lib)
        return s.SequentialLR(o, [s.LinearLR(o, 0.5, total_iters=2), s.StepLR(o, 2, 0.5),
                                  s.CosineAnnealingLR(o, T_max=3)], milestones=[2, 5])

    compare(sgd2, seq3, 9)

    def chained(lib, o):
        s = sched_of(lib)
        return s.ChainedScheduler([s.ConstantLR(o, factor=0.1, total_iters=2),
                                   s.ExponentialLR(o, gamma=0.9)])

    compare(sgd2, chained, 5, by_epoch(lambda e: (0.1 if e < 2 else 1.0) * 0.9 ** e, 5))
    o = sgd2(optim)
    with pytest.raises(ValueError, match="expects number of schedulers provided to be one more"):
        lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 2)], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(o)])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same"):
        lr_scheduler.ChainedScheduler([lr_scheduler.StepLR(o, 2),
                                       lr_scheduler.StepLR(sgd2(optim), 2)])


def test_scheduler_state_dict_and_resume():
    o = sgd2(optim)
    s = lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=6)
    for _ in range(3):
        s.step()
    sd = s.state_dict()
    assert sd["last_epoch"] == 3 and "optimizer" not in sd
    rest = []
    for _ in range(4):
        s.step()
        rest.append(s.get_last_lr())
    o2 = sgd2(optim)
    s2 = lr_scheduler.LinearLR(o2, start_factor=0.9, total_iters=2)
    s2.load_state_dict(sd)
    for g, lr in zip(o2.param_groups, sd["_last_lr"]):
        g["lr"] = lr
    again = []
    for _ in range(4):
        s2.step()
        again.append(s2.get_last_lr())
    np.testing.assert_allclose(again, rest, rtol=1e-14)
    # LambdaLR keeps the state of a callable object, not of a function
    class Warm:
        def __init__(self):
            self.k = 2.0

        def __call__(self, e):
            return self.k / (e + 1)

    warm = Warm()
    lam = lr_scheduler.LambdaLR(sgd2(optim), [warm, lambda e: 1.0])
    sd = lam.state_dict()
    assert sd["lr_lambdas"] == [{"k": 2.0}, None]
    warm.k = 5.0
    lam.load_state_dict(sd)
    assert warm.k == 2.0
    # the schedulers are LRScheduler subclasses; a non-optimizer is refused
    assert isinstance(lr_scheduler.ReduceLROnPlateau(sgd2(optim)), lr_scheduler.LRScheduler)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        lr_scheduler.StepLR([], 2)
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(sgd2(optim), 2, last_epoch=3)


def test_step_epoch_warns_and_resume_matches_torch():
    o = sgd2(optim)
    s = lr_scheduler.ExponentialLR(o, 0.5)
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)`"):
        s.step(3)
    assert s.get_last_lr() == [0.1 * 0.125, 0.3 * 0.125]

    def resumed(lib, o):
        s = sched_of(lib)
        for g in o.param_groups:
            g["initial_lr"] = g["lr"] * 2
        return s.CosineAnnealingLR(o, T_max=5, last_epoch=2)

    ours, _ = compare(sgd2, resumed, 4)
    assert ours[0].tolist() == [0.1, 0.3]  # the construction step keeps the current rates
