"""chainrule.optim: a hand-computed first step for each optimizer, param groups, state
dicts, the LR schedulers, and (when torch is installed) several steps against torch.optim
from the same start with the same gradients."""

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn, optim
from chainrule.optim import lr_scheduler

RNG = np.random.default_rng(5)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _param(values):
    return nn.Parameter(cr.tensor(np.asarray(values, dtype=np.float64)))


def _step_with_grad(opt, p, g):
    p.grad = cr.tensor(np.asarray(g, dtype=np.float64))
    opt.step()
    return p.detach().numpy().copy()


P0, G0 = np.array([1.0, -2.0, 0.5]), np.array([0.3, -0.1, 2.0])


def test_sgd_first_steps_by_hand():
    p = _param(P0)
    opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.01, dampening=0.2)
    g1 = G0 + 0.01 * P0
    np.testing.assert_allclose(_step_with_grad(opt, p, G0), P0 - 0.1 * g1, rtol=1e-14)
    p1 = P0 - 0.1 * g1
    g2 = G0 + 0.01 * p1
    buf = 0.9 * g1 + 0.8 * g2
    np.testing.assert_allclose(_step_with_grad(opt, p, G0), p1 - 0.1 * buf, rtol=1e-14)
    q = _param(P0)
    nest = optim.SGD([q], lr=0.1, momentum=0.5, nesterov=True)
    np.testing.assert_allclose(_step_with_grad(nest, q, G0), P0 - 0.1 * (G0 + 0.5 * G0))


def test_adam_and_adamw_first_step_by_hand():
    lr, b1, b2, eps, wd = 0.01, 0.8, 0.9, 1e-8, 0.1
    p = _param(P0)
    g = G0 + wd * P0
    m, v = (1 - b1) * g, (1 - b2) * g * g
    expected = P0 - lr / (1 - b1) * m / (np.sqrt(v) / math.sqrt(1 - b2) + eps)
    adam = optim.Adam([p], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    np.testing.assert_allclose(_step_with_grad(adam, p, G0), expected, rtol=1e-14)
    # the first Adam step is lr * sign(g) (up to eps)
    np.testing.assert_allclose(expected, P0 - lr * np.sign(g), rtol=1e-6)
    q = _param(P0)
    decayed = P0 * (1 - lr * wd)
    m, v = (1 - b1) * G0, (1 - b2) * G0 * G0
    expected = decayed - lr / (1 - b1) * m / (np.sqrt(v) / math.sqrt(1 - b2) + eps)
    adamw = optim.AdamW([q], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    np.testing.assert_allclose(_step_with_grad(adamw, q, G0), expected, rtol=1e-14)
    assert adamw.state[q]["step"] == 1


def test_rmsprop_and_adagrad_first_step_by_hand():
    p = _param(P0)
    opt = optim.RMSprop([p], lr=0.01, alpha=0.9, eps=1e-6, momentum=0.5, centered=True)
    v = 0.1 * G0 * G0
    a = 0.1 * G0
    buf = G0 / (np.sqrt(v - a * a) + 1e-6)
    np.testing.assert_allclose(_step_with_grad(opt, p, G0), P0 - 0.01 * buf, rtol=1e-14)
    q = _param(P0)
    plain = optim.RMSprop([q], lr=0.01)
    np.testing.assert_allclose(_step_with_grad(plain, q, G0),
                               P0 - 0.01 * G0 / (np.sqrt(0.01 * G0 * G0) + 1e-8), rtol=1e-14)
    r = _param(P0)
    ada = optim.Adagrad([r], lr=0.1, lr_decay=0.5, initial_accumulator_value=0.2)
    s1 = 0.2 + G0 * G0
    p1 = P0 - 0.1 * G0 / (np.sqrt(s1) + 1e-10)
    np.testing.assert_allclose(_step_with_grad(ada, r, G0), p1, rtol=1e-14)
    s2 = s1 + G0 * G0
    np.testing.assert_allclose(_step_with_grad(ada, r, G0),
                               p1 - 0.1 / 1.5 * G0 / (np.sqrt(s2) + 1e-10), rtol=1e-14)


def test_lbfgs_minimises_a_quadratic():
    A = np.array([[3.0, 0.5], [0.5, 1.0]])
    b = np.array([1.0, -2.0])
    x = _param([0.0, 0.0])
    opt = optim.LBFGS([x], lr=1, max_iter=50)
    At, bt = cr.tensor(A), cr.tensor(b)
    calls = []

    def closure():
        opt.zero_grad()
        loss = 0.5 * (x @ (At @ x)) - bt @ x
        loss.backward()
        calls.append(loss.item())
        return loss

    first = opt.step(closure)
    assert first.item() == 0.0 == calls[0]
    np.testing.assert_allclose(x.detach().numpy(), np.linalg.solve(A, b), atol=1e-4)
    # the first move: t = min(1, 1/|g|_1) * lr along -g, g = -b at 0
    y = _param([0.0, 0.0])
    one = optim.LBFGS([y], lr=1, max_iter=1)

    def closure1():
        one.zero_grad()
        loss = 0.5 * (y @ (At @ y)) - bt @ y
        loss.backward()
        return loss

    one.step(closure1)
    np.testing.assert_allclose(y.detach().numpy(), b / np.abs(b).sum(), rtol=1e-14)
    assert "al" not in one.state[y]  # PyTorch makes it at the first two-loop recursion
    # the state keeps PyTorch's keys; 'al' holds the two-loop recursion's coefficients
    # al_i = rho_i s_i^T q of the last step, one slot per remembered pair
    state = opt.state[x]
    assert set(state) == {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro",
                          "H_diag", "prev_flat_grad", "prev_loss", "al"}
    assert len(state["al"]) == 100  # history_size
    assert state["al"][0] is not None and state["al"][-1] is None
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):  # as torch
        optim.LBFGS([y], line_search_fn="backtracking")


def test_takes_a_generator_and_param_groups():
    net = nn.Sequential(nn.Linear(2, 3, dtype=cr.float64), nn.Linear(3, 1, dtype=cr.float64))
    opt = optim.SGD(net.parameters(), lr=0.1)
    assert len(opt.param_groups) == 1 and len(opt.param_groups[0]["params"]) == 4
    groups = optim.Adam([{"params": net[0].parameters()},
                         {"params": net[1].parameters(), "lr": 0.5}], lr=0.01)
    assert [g["lr"] for g in groups.param_groups] == [0.01, 0.5]
    assert groups.param_groups[1]["betas"] == (0.9, 0.999)
    net(cr.ones(4, 2, dtype=cr.float64)).sum().backward()
    before = [p.detach().numpy().copy() for p in net.parameters()]
    groups.step()
    after = [p.detach().numpy() for p in net.parameters()]
    # Adam's first step moves each entry by lr (the gradient's sign)
    np.testing.assert_allclose(np.abs(after[0] - before[0]).max(), 0.01, rtol=1e-5)
    np.testing.assert_allclose(np.abs(after[3] - before[3]).max(), 0.5, rtol=1e-5)
    extra = nn.Parameter(cr.zeros(2, dtype=cr.float64))
    groups.add_param_group({"params": [extra], "lr": 1.0})
    assert groups.param_groups[2]["eps"] == 1e-8
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter "
                                         "group"):
        groups.add_param_group({"params": [extra]})
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([cr.zeros(2, requires_grad=True) * 2], lr=0.1)
    # a frozen parameter is accepted (fine-tuning passes model.parameters()) and left alone
    frozen = cr.ones(2)
    opt = optim.SGD([frozen, extra], lr=0.1)
    extra.grad = cr.ones(2, dtype=cr.float64)
    opt.step()
    np.testing.assert_array_equal(frozen.numpy(), [1.0, 1.0])
    assert frozen.grad is None
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Adam(net.parameters(), lr=-1)


def test_zero_grad_and_state_dict_round_trip():
    p = _param(P0)
    opt = optim.Adam([p], lr=0.1)
    _step_with_grad(opt, p, G0)
    opt.zero_grad()
    assert p.grad is None
    p.grad = cr.tensor(G0)
    opt.zero_grad(set_to_none=False)
    assert np.all(p.grad.numpy() == 0)
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and sd["state"][0]["step"] == 1
    q = _param(p.detach().numpy())
    opt2 = optim.Adam([q], lr=0.7)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1
    np.testing.assert_array_equal(opt2.state[q]["exp_avg"], opt.state[p]["exp_avg"])
    a = _step_with_grad(opt, p, G0)
    b = _step_with_grad(opt2, q, G0)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": []})


def test_step_skips_params_without_grad_and_keeps_leaves():
    p, q = _param(P0), _param(P0)
    opt = optim.SGD([p, q], lr=0.1, momentum=0.9)
    p.grad = cr.tensor(G0)
    v0 = p._version
    opt.step()
    np.testing.assert_array_equal(q.detach().numpy(), P0)
    assert p.is_leaf and p.requires_grad and p._version == v0 + 1


def test_schedulers_by_hand():
    p = _param(P0)
    opt = optim.SGD([p], lr=1.0)
    step = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    seen = []
    for _ in range(5):
        seen.append(step.get_last_lr()[0])
        opt.step()
        step.step()
    assert seen == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt = optim.SGD([p], lr=2.0)
    exp = lr_scheduler.ExponentialLR(opt, gamma=0.9)
    for _ in range(3):
        exp.step()
    assert math.isclose(opt.param_groups[0]["lr"], 2 * 0.9 ** 3)
    opt = optim.SGD([p], lr=1.0)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    lrs = []
    for _ in range(4):
        cos.step()
        lrs.append(cos.get_last_lr()[0])
    expected = [0.1 + 0.9 * (1 + math.cos(math.pi * t / 4)) / 2 for t in range(1, 5)]
    np.testing.assert_allclose(lrs, expected, rtol=1e-12)
    opt = optim.SGD([p], lr=1.0)
    plateau = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1, cooldown=1)
    history = []
    for metric in [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0]:
        plateau.step(metric)
        history.append(plateau.get_last_lr()[0])
    assert history == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]


def test_schedulers_against_torch():
    p = _param(P0)
    opt = optim.SGD([{"params": [p]}, {"params": [_param(P0)], "lr": 0.3}], lr=0.1)
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=3)
    ours = []
    for _ in range(8):
        opt.step()
        sched.step()
        ours.append(sched.get_last_lr())
    assert len(ours[0]) == 2
    torch = _torch()
    if torch is None:
        return
    tp = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]

    def run_torch(make, steps=8, metrics=None):
        topt = torch.optim.SGD([{"params": [tp[0]]}, {"params": [tp[1]], "lr": 0.3}], lr=0.1)
        s = make(topt)
        out = []
        for i in range(steps):
            topt.step()
            s.step(metrics[i]) if metrics else s.step()
            out.append(s.get_last_lr())
        return out

    np.testing.assert_allclose(ours, run_torch(
        lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=3)), rtol=1e-12)

    def run_ours(make, steps=8, metrics=None):
        o = optim.SGD([{"params": [_param(P0)]}, {"params": [_param(P0)], "lr": 0.3}], lr=0.1)
        s = make(o)
        out = []
        for i in range(steps):
            o.step()
            s.step(metrics[i]) if metrics else s.step()
            out.append(s.get_last_lr())
        return out

    tls = torch.optim.lr_scheduler
    np.testing.assert_allclose(run_ours(lambda o: lr_scheduler.StepLR(o, 3, 0.3)),
                               run_torch(lambda o: tls.StepLR(o, 3, 0.3)), rtol=1e-12)
    np.testing.assert_allclose(run_ours(lambda o: lr_scheduler.ExponentialLR(o, 0.7)),
                               run_torch(lambda o: tls.ExponentialLR(o, 0.7)), rtol=1e-12)
    metrics = [5, 4, 4, 4.0001, 4, 4, 4, 3.9, 3.9, 3.9, 3.9, 3.9]
    np.testing.assert_allclose(
        run_ours(lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.3,
                                                          cooldown=1, min_lr=[0.0, 0.05]),
                 12, metrics),
        run_torch(lambda o: tls.ReduceLROnPlateau(o, patience=1, factor=0.3, cooldown=1,
                                                  min_lr=[0.0, 0.05]), 12, metrics),
        rtol=1e-12)


OPTIMIZERS = {
    "sgd": ("SGD", dict(lr=0.1)),
    "sgd_momentum": ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    "sgd_nesterov": ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, maximize=True)),
    "adam": ("Adam", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1)),
    "adam_amsgrad": ("Adam", dict(lr=0.01, amsgrad=True)),
    "adamw": ("AdamW", dict(lr=0.01, weight_decay=0.3)),
    "rmsprop": ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)),
    "rmsprop_plain": ("RMSprop", dict(lr=0.01)),
    "adagrad": ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1,
                                initial_accumulator_value=0.1)),
}


def _quadratic_problem():
    A = RNG.standard_normal((4, 3))
    b = RNG.standard_normal(4)
    x0 = RNG.standard_normal(3)
    return A, b, x0


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizers_against_torch(name):
    cls, kwargs = OPTIMIZERS[name]
    A, b, x0 = _quadratic_problem()
    x = _param(x0)
    opt = getattr(optim, cls)([x], **kwargs)
    ours = []
    for _ in range(5):
        opt.zero_grad()
        r = cr.tensor(A) @ x - cr.tensor(b)
        (r * r).sum().backward()
        opt.step()
        ours.append(x.detach().numpy().copy())
    assert not np.allclose(ours[-1], x0)  # it moved
    torch = _torch()
    if torch is None:
        return
    tx = torch.nn.Parameter(torch.tensor(x0))
    topt = getattr(torch.optim, cls)([tx], **kwargs)
    for k in range(5):
        topt.zero_grad()
        r = torch.tensor(A) @ tx - torch.tensor(b)
        (r * r).sum().backward()
        topt.step()
        np.testing.assert_allclose(ours[k], tx.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_lbfgs_against_torch():
    A, b, x0 = _quadratic_problem()
    x = _param(x0)
    opt = optim.LBFGS([x], lr=0.5, max_iter=7, history_size=3)

    def closure():
        opt.zero_grad()
        r = cr.tensor(A) @ x - cr.tensor(b)
        loss = (r * r).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(3)]
    assert losses[-1] < losses[0]
    torch = _torch()
    if torch is None:
        return
    tx = torch.nn.Parameter(torch.tensor(x0))
    topt = torch.optim.LBFGS([tx], lr=0.5, max_iter=7, history_size=3)

    def tclosure():
        topt.zero_grad()
        r = torch.tensor(A) @ tx - torch.tensor(b)
        loss = (r * r).sum()
        loss.backward()
        return loss

    tlosses = [topt.step(tclosure).item() for _ in range(3)]
    np.testing.assert_allclose(losses, tlosses, rtol=1e-10)
    np.testing.assert_allclose(x.detach().numpy(), tx.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_state_dict_layout_matches_torch():
    p = _param(P0)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    _step_with_grad(opt, p, G0)
    sd = opt.state_dict()
    assert set(sd["state"][0]) == {"momentum_buffer"}
    torch = _torch()
    if torch is None:
        return
    tp = torch.nn.Parameter(torch.tensor(P0))
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    tp.grad = torch.tensor(G0)
    topt.step()
    tsd = topt.state_dict()
    assert set(sd["state"][0]) == set(tsd["state"][0])
    assert set(sd["param_groups"][0]) <= set(tsd["param_groups"][0])
    np.testing.assert_allclose(sd["state"][0]["momentum_buffer"],
                               tsd["state"][0]["momentum_buffer"].numpy())
