"""Regressions found by differential fuzzing of chainrule.optim and chainrule.nn.utils
against torch. Each test checks a value derived by hand (the formula written out in NumPy)
and, when torch is installed, also compares with torch."""

import contextlib
import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import optim
from chainrule.nn.utils import clip_grad_norm_, get_total_norm

try:
    import torch
except ImportError:
    torch = None


@contextlib.contextmanager
def torch_float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


# --- zero_grad(set_to_none=False) -------------------------------------------------------

def test_zero_grad_keep_zeroes_nonfinite_and_detaches():
    """``grad.zero_()``: an Inf or NaN entry becomes 0 (not ``NaN * 0``), in place, and a
    gradient with a graph (``backward(create_graph=True)``) is detached."""
    x = cr.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)  # grad 3 x^2, with a graph
    assert x.grad.grad_fn is not None
    x.grad._data[:] = [np.inf, np.nan]
    g = x.grad
    opt = optim.SGD([x], lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert x.grad is g
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    assert x.grad.grad_fn is None and not x.grad.requires_grad
    if torch is not None:
        t = torch.tensor([1.0, 2.0], requires_grad=True)
        (t ** 3).sum().backward(create_graph=True)
        with torch.no_grad():
            t.grad.copy_(torch.tensor([math.inf, math.nan]))
        torch.optim.SGD([t], lr=0.1).zero_grad(set_to_none=False)
        np.testing.assert_array_equal(t.grad.numpy(), x.grad.numpy())
        assert t.grad.grad_fn is None and not t.grad.requires_grad


def test_zero_grad_keep_of_a_read_only_gradient():
    # a gradient assigned by hand as a broadcast (read-only) view is replaced by zeros
    p = cr.zeros(3, requires_grad=True)
    p.grad = cr.ones(1).expand(3)
    optim.SGD([p], lr=0.1).zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0, 0.0]


# --- lerp rounding (exp_avg, grad_avg) ------------------------------------------------------

G = np.array([0.1, 0.7, -1.3, 3.3, 1e-3, -2.2, 0.9])


def test_adam_beta1_zero_exp_avg_is_grad_exactly():
    """``exp_avg.lerp_(grad, 1 - beta1)`` with weight 1 rounds as ``grad - (grad - m) * 0``:
    the first moment is the gradient exactly (``m + (g - m) * 1`` may differ by an ulp)."""
    m0 = np.array([0.3, -0.1, 0.7, 1e-17, 5.0, 2.0, -0.4])
    p = cr.tensor(np.zeros(7), requires_grad=True)
    opt = optim.Adam([p], lr=0.1, betas=(0.0, 0.999))
    p.grad = cr.tensor(m0)
    opt.step()
    p.grad = cr.tensor(G)
    opt.step()
    np.testing.assert_array_equal(opt.state[p]["exp_avg"].numpy(), G)
    if torch is not None:
        with torch_float64():
            t = torch.zeros(7, requires_grad=True)
            topt = torch.optim.Adam([t], lr=0.1, betas=(0.0, 0.999))
            for g in (m0, G):
                t.grad = torch.tensor(g)
                topt.step()
            np.testing.assert_array_equal(topt.state[t]["exp_avg"].numpy(), G)
            np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-13)


def test_rmsprop_centered_variance_rounds_like_fused_addcmul():
    """``square_avg.addcmul(grad_avg, grad_avg, value=-1)`` is one fused multiply-add in
    PyTorch: with ``alpha = 0`` (``v = g*g`` rounded, ``a = g``) it is the rounding error
    of ``g*g`` (here written out with ``math.fma``-free exact arithmetic: fractions), not
    0."""
    from fractions import Fraction

    from chainrule.optim.optimizer import _sub_square
    g = G
    v = g * g
    got = _sub_square(v, g)
    want = np.array([float(Fraction(vi) - Fraction(gi) ** 2) for vi, gi in zip(v, g)])
    np.testing.assert_array_equal(got, want)
    assert np.any(want != 0)
    if torch is not None:
        tv = torch.tensor(v, dtype=torch.float64)
        tg = torch.tensor(g, dtype=torch.float64)
        np.testing.assert_array_equal(tv.addcmul(tg, tg, value=-1).numpy(), want)


# --- Tensor lr -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta",
                                  "Adamax", "NAdam", "RAdam", "Rprop", "ASGD"])
def test_tensor_lr_steps_as_float_lr(name):
    """A 0-d Tensor ``lr`` gives the same update as the float (it used to raise
    TypeError in the step), and stays a Tensor in the parameter group."""
    x0 = np.array([0.5, -1.0, 2.0])
    grads = [np.array([0.3, -0.2, 1.0]), np.array([-0.1, 0.4, 0.5])]
    out = []
    for lr in (0.05, cr.tensor(0.05)):
        p = cr.tensor(x0.copy(), requires_grad=True)
        opt = getattr(optim, name)([p], lr=lr)
        for g in grads:
            p.grad = cr.tensor(g)
            opt.step()
        out.append(p.detach().numpy().copy())
    assert isinstance(opt.param_groups[0]["lr"], cr.Tensor)
    np.testing.assert_array_equal(out[0], out[1])
    if name == "SGD":  # p - lr g, twice
        np.testing.assert_allclose(out[1], x0 - 0.05 * grads[0] - 0.05 * grads[1], rtol=1e-15)
    if torch is not None:
        with torch_float64():
            t = torch.tensor(x0, requires_grad=True)
            topt = getattr(torch.optim, name)([t], lr=torch.tensor(0.05))
            for g in grads:
                t.grad = torch.tensor(g)
                topt.step()
        np.testing.assert_allclose(out[1], t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_tensor_lr_and_beta_validation():
    p = cr.tensor([1.0], requires_grad=True)
    cases = [
        (lambda lib, q: lib.optim.SGD([q], lr=lib.tensor([0.1, 0.2])),
         "Tensor lr must be 1-element"),
        (lambda lib, q: lib.optim.Adam([q], lr=lib.tensor(0.1), foreach=True),
         "lr as a Tensor is not supported for capturable=False and foreach=True"),
        (lambda lib, q: lib.optim.Adam([q], betas=(0, 0.9)),
         "betas must be either both floats or both Tensors"),
        (lambda lib, q: lib.optim.SGD([q], lr=-1.0), "Invalid learning rate: -1.0"),
        (lambda lib, q: lib.optim.Adam([q], eps=-1.0), "Invalid epsilon value: -1.0"),
        (lambda lib, q: lib.optim.RMSprop([q], alpha=-1.0), "Invalid alpha value: -1.0"),
        (lambda lib, q: lib.optim.Adagrad([q], lr_decay=-1.0), "Invalid lr_decay value: -1.0"),
        (lambda lib, q: lib.optim.SGD([q], nesterov=True),
         "Nesterov momentum requires a momentum and zero dampening"),
    ]
    for make, msg in cases:
        with pytest.raises(ValueError) as info:
            make(cr, p)
        assert str(info.value) == msg
        if torch is not None:
            with pytest.raises(ValueError) as tinfo:
                make(torch, torch.tensor([1.0], requires_grad=True))
            assert str(tinfo.value) == msg
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        optim.Adam([p], fused=True, foreach=True)


# --- Adagrad's initial accumulator, fused step dtype ---------------------------------------

def test_adagrad_groups_start_from_constructor_accumulator():
    """PyTorch fills every constructor group's ``sum`` with the constructor's
    ``initial_accumulator_value`` (a group's own value is recorded, not used)."""
    a = cr.tensor([1.0], requires_grad=True)
    b = cr.tensor([2.0], requires_grad=True)
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.0}],
                        lr=0.5, initial_accumulator_value=0.1)
    assert opt.param_groups[1]["initial_accumulator_value"] == 0.0
    for q in (a, b):
        q.grad = cr.tensor([0.3])
    opt.step()
    s = 0.1 + 0.3 ** 2  # the sum, then p -= lr g / (sqrt(s) + eps)
    want = [1.0 - 0.5 * 0.3 / (math.sqrt(s) + 1e-10), 2.0 - 0.5 * 0.3 / (math.sqrt(s) + 1e-10)]
    np.testing.assert_allclose([a.item(), b.item()], want, rtol=1e-15)
    np.testing.assert_allclose(opt.state[b]["sum"].numpy(), [s], rtol=1e-15)
    if torch is not None:
        with torch_float64():
            ta = torch.tensor([1.0], requires_grad=True)
            tb = torch.tensor([2.0], requires_grad=True)
            topt = torch.optim.Adagrad([{"params": [ta]},
                                        {"params": [tb], "initial_accumulator_value": 0.0}],
                                       lr=0.5, initial_accumulator_value=0.1)
            for q in (ta, tb):
                q.grad = torch.tensor([0.3])
            topt.step()
            np.testing.assert_allclose([ta.item(), tb.item()], want, rtol=1e-15)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adagrad"])
def test_fused_step_is_float32(name):
    """``_get_scalar_dtype(is_fused=True)``: a fused group's ``step`` is float32."""
    p = cr.tensor([1.0, 2.0], requires_grad=True)
    opt = getattr(optim, name)([p], lr=0.1, fused=True)
    p.grad = cr.tensor([0.1, 0.2])
    opt.step()
    step = opt.state_dict()["state"][0]["step"]
    assert str(step.dtype).endswith("float32") and step.item() == 1.0
    if torch is not None:
        with torch_float64():
            t = torch.tensor([1.0, 2.0], requires_grad=True)
            topt = getattr(torch.optim, name)([t], lr=0.1, fused=True)
            t.grad = torch.tensor([0.1, 0.2])
            topt.step()
            assert topt.state_dict()["state"][0]["step"].dtype == torch.float32


# --- clip_grad_norm_ / get_total_norm -------------------------------------------------------

GA = np.array([0.0, 3.0, -4.0])
GB = np.array([[1.0, 0.0], [2.0, -0.5]])


def _params(lib, grads):
    ps = []
    for g in grads:
        q = lib.tensor(np.ones_like(g), requires_grad=True)
        q.grad = lib.tensor(g.copy())
        ps.append(q)
    return ps


@pytest.mark.parametrize("norm_type", [0, -math.inf, -1.0, 2.0, math.inf, 0.5])
def test_total_norm_is_norm_of_norms(norm_type):
    """PyTorch's total norm is the norm of the per-tensor norms: for order 0 (nonzero
    counts 2 and 3 -> 2 nonzero norms), -inf and negative orders that is not the norm of
    all entries (it used to count zeros, divide by zero, or take the max)."""
    def vnorm(a, p):
        a = np.abs(np.ravel(a))
        if p == 0:
            return float(np.count_nonzero(a))
        if p == math.inf:
            return a.max()
        if p == -math.inf:
            return a.min()
        with np.errstate(divide="ignore"):
            return np.sum(a ** p) ** (1 / p)
    want = vnorm([vnorm(GA, norm_type), vnorm(GB, norm_type)], norm_type)
    got = get_total_norm([cr.tensor(GA), cr.tensor(GB)], norm_type)
    np.testing.assert_allclose(got.item(), want, rtol=1e-15)
    if torch is not None:
        with torch_float64():
            t = torch.nn.utils.get_total_norm([torch.tensor(GA), torch.tensor(GB)], norm_type)
        np.testing.assert_allclose(got.item(), t.item(), rtol=1e-15)


def test_clip_grad_norm_nan_norm_scales_by_nan():
    """With ``error_if_nonfinite=False`` the gradients are multiplied by
    ``clamp(max_norm / (nan + 1e-6), max=1)`` = NaN, as PyTorch (they used to be left
    unchanged, silently)."""
    ga = GA.copy()
    ga[0] = np.nan
    ps = _params(cr, [ga, GB])
    total = clip_grad_norm_(ps, 1.0)
    assert math.isnan(total.item())
    assert np.isnan(ps[0].grad.numpy()).all() and np.isnan(ps[1].grad.numpy()).all()
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(_params(cr, [ga]), 1.0, error_if_nonfinite=True)
    if torch is not None:
        with torch_float64():
            tps = _params(torch, [ga, GB])
            torch.nn.utils.clip_grad_norm_(tps, 1.0)
        assert np.isnan(tps[1].grad.numpy()).all()


def test_clip_grad_norm_float32_coefficient():
    """The coefficient ``max_norm / (total + 1e-6)`` is computed in the norm's dtype
    (float32 for float32 gradients), then clamped to 1."""
    g = np.array([3.0, 4.0], dtype=np.float32)
    p = cr.tensor(np.ones(2, dtype=np.float32), requires_grad=True)
    p.grad = cr.tensor(g.copy())
    total = clip_grad_norm_([p], 1.0)
    assert str(total.dtype).endswith("float32") and total.item() == 5.0
    coef = np.float32(1.0) / (np.float32(5.0) + np.float32(1e-6))
    np.testing.assert_array_equal(p.grad.numpy(), g * coef)
    if torch is not None:
        t = torch.ones(2, dtype=torch.float32, requires_grad=True)
        t.grad = torch.tensor(g.copy())
        torch.nn.utils.clip_grad_norm_([t], 1.0)
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())


def test_total_norm_of_empty_tensor_negative_order_raises():
    with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty tensor"):
        get_total_norm([cr.tensor(np.zeros(0))], -1.0)
    with pytest.raises(RuntimeError, match="cannot compute the -inf norm on an empty tensor"):
        get_total_norm([cr.tensor(np.zeros(0))], -math.inf)
    if torch is not None:
        with pytest.raises(RuntimeError, match="cannot compute the -1 norm on an empty"):
            torch.nn.utils.get_total_norm([torch.zeros(0)], -1.0, foreach=False)
