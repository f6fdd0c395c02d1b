"""The elementwise ops that ported PyTorch code calls: values against NumPy, gradients against
their formulas, PyTorch's conventions at special points, aliases and in-place variants, and
(where torch is installed) values and gradients against torch on the same inputs.

Gradchecks (first and second order, JVP, float32) of every primitive are in test_table.py
(tests/samples_elementwise.py)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr

try:
    import torch
except ImportError:  # the comparisons with torch run where it is installed
    torch = None

RNG = np.random.default_rng(97)


def _between_integers(n, scale=1.0):
    whole = RNG.integers(-3, 4, n).astype(float)
    return (whole + RNG.uniform(0.15, 0.35, n) + RNG.choice([0.0, 0.5], n)) * scale


def _away_from_zero(n):
    return RNG.uniform(0.3, 2.0, n) * RNG.choice([-1.0, 1.0], n)


def _value_and_grads(fn, arrays, w):
    """fn's value on tensors of ``arrays`` and the gradient of sum(fn * w) for each."""
    xs = [cr.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    grads = cr.autograd.grad((out * cr.tensor(w)).sum(), xs, allow_unused=True)
    return out.detach().numpy(), [None if g is None else g.numpy() for g in grads]


def _torch_value_and_grads(fn, arrays, w):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    grads = torch.autograd.grad((out * torch.tensor(w)).sum(), xs, allow_unused=True)
    return out.detach().numpy(), [None if g is None else g.numpy(force=True) for g in grads]


def _same_as_torch(cr_fn, torch_fn, arrays, grads=True):
    w = RNG.standard_normal(np.broadcast_shapes(*(np.shape(a) for a in arrays)))
    value, g = _value_and_grads(cr_fn, arrays, w)
    t_value, t_g = _torch_value_and_grads(torch_fn, arrays, w) if grads else (
        torch_fn(*(torch.tensor(a) for a in arrays)).numpy(), None)
    np.testing.assert_allclose(value, t_value, rtol=1e-12, atol=1e-14)
    if grads:
        for mine, theirs in zip(g, t_g):
            theirs = np.zeros_like(w) if theirs is None else theirs
            mine = np.zeros_like(theirs) if mine is None else mine
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


# (name, NumPy function, derivative, domain)
UNARY = [
    ("acos", np.arccos, lambda x: -1 / np.sqrt(1 - x * x), (-0.95, 0.95)),
    ("asin", np.arcsin, lambda x: 1 / np.sqrt(1 - x * x), (-0.95, 0.95)),
    ("atan", np.arctan, lambda x: 1 / (1 + x * x), (-3, 3)),
    ("sinh", np.sinh, np.cosh, (-3, 3)),
    ("cosh", np.cosh, np.sinh, (-3, 3)),
    ("asinh", np.arcsinh, lambda x: 1 / np.sqrt(x * x + 1), (-3, 3)),
    ("acosh", np.arccosh, lambda x: 1 / np.sqrt(x * x - 1), (1.1, 4)),
    ("atanh", np.arctanh, lambda x: 1 / (1 - x * x), (-0.95, 0.95)),
    ("log2", np.log2, lambda x: 1 / (x * np.log(2)), (0.1, 5)),
    ("log10", np.log10, lambda x: 1 / (x * np.log(10)), (0.1, 5)),
    ("exp2", np.exp2, lambda x: np.exp2(x) * np.log(2), (-3, 3)),
    ("rsqrt", lambda x: 1 / np.sqrt(x), lambda x: -0.5 * x ** -1.5, (0.1, 5)),
    ("sinc", np.sinc, lambda x: (np.cos(np.pi * x) - np.sinc(x)) / x, (-3, 3)),
    ("floor", np.floor, np.zeros_like, None),
    ("ceil", np.ceil, np.zeros_like, None),
    ("trunc", np.trunc, np.zeros_like, None),
    ("round", np.round, np.zeros_like, None),
    ("frac", lambda x: x - np.trunc(x), np.ones_like, None),
    ("sgn", np.sign, np.zeros_like, None),
]


def _unary_input(domain):
    if domain is None:
        return _between_integers(12)
    return RNG.uniform(*domain, 12)


@pytest.mark.parametrize("name,np_fn,deriv,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_values_and_gradients(name, np_fn, deriv, domain):
    x = _unary_input(domain)
    fn = getattr(cr, name)
    w = RNG.standard_normal(x.shape)
    value, (g,) = _value_and_grads(fn, [x], w)
    np.testing.assert_allclose(value, np_fn(x), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(g, w * deriv(x), rtol=1e-10, atol=1e-14)
    # the method of the same name
    np.testing.assert_array_equal(getattr(cr.tensor(x), name)().numpy(), value)
    if torch is not None:
        _same_as_torch(fn, getattr(torch, name), [x])


def _quotients():
    b = _away_from_zero(12) * 1.7
    return _between_integers(12) * b, b


# (name, NumPy function, d/dself, d/dother, inputs)
BINARY = [
    ("atan2", np.arctan2, lambda a, b: b / (a * a + b * b), lambda a, b: -a / (a * a + b * b),
     lambda: (RNG.standard_normal(12), _away_from_zero(12))),
    ("hypot", np.hypot, lambda a, b: a / np.hypot(a, b), lambda a, b: b / np.hypot(a, b),
     lambda: (_away_from_zero(12), _away_from_zero(12))),
    ("logaddexp", np.logaddexp, lambda a, b: 1 / (1 + np.exp(b - a)),
     lambda a, b: 1 / (1 + np.exp(a - b)),
     lambda: (RNG.standard_normal(12) * 3, RNG.standard_normal(12) * 3)),
    ("logaddexp2", np.logaddexp2, lambda a, b: 1 / (1 + 2.0 ** (b - a)),
     lambda a, b: 1 / (1 + 2.0 ** (a - b)),
     lambda: (RNG.standard_normal(12) * 3, RNG.standard_normal(12) * 3)),
    ("xlogy", lambda a, b: a * np.log(b), lambda a, b: np.log(b), lambda a, b: a / b,
     lambda: (RNG.standard_normal(12), RNG.uniform(0.1, 4.0, 12))),
    ("fmod", np.fmod, lambda a, b: np.ones_like(a), lambda a, b: -np.trunc(a / b), _quotients),
    ("remainder", np.remainder, lambda a, b: np.ones_like(a), lambda a, b: -np.floor(a / b),
     _quotients),
    ("floor_divide", np.floor_divide, lambda a, b: 0 * a, lambda a, b: 0 * b, _quotients),
    ("copysign", np.copysign, lambda a, b: np.sign(a) * np.sign(b), lambda a, b: 0 * b,
     lambda: (_away_from_zero(12), _away_from_zero(12))),
    ("fmax", np.fmax, lambda a, b: (a >= b) * 1.0, lambda a, b: (a < b) * 1.0,
     lambda: (RNG.standard_normal(12), RNG.standard_normal(12))),
    ("fmin", np.fmin, lambda a, b: (a <= b) * 1.0, lambda a, b: (a > b) * 1.0,
     lambda: (RNG.standard_normal(12), RNG.standard_normal(12))),
]


@pytest.mark.parametrize("name,np_fn,da,db,make", BINARY, ids=[b[0] for b in BINARY])
def test_binary_values_and_gradients(name, np_fn, da, db, make):
    a, b = make()
    fn = getattr(cr, name)
    w = RNG.standard_normal(a.shape)
    value, (ga, gb) = _value_and_grads(fn, [a, b], w)
    np.testing.assert_allclose(value, np_fn(a, b), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(ga, w * da(a, b), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gb, w * db(a, b), rtol=1e-10, atol=1e-14)
    np.testing.assert_array_equal(getattr(cr.tensor(a), name)(cr.tensor(b)).numpy(), value)
    if torch is not None:
        if name == "floor_divide":  # torch raises for its gradient; div(floor) gives zero
            _same_as_torch(fn, lambda x, y: torch.div(x, y, rounding_mode="floor"), [a, b])
        else:
            _same_as_torch(fn, getattr(torch, name), [a, b])


COMPOSITIONS = [
    ("addcmul", lambda a, b, c: cr.addcmul(a, b, c, value=0.5), lambda a, b, c: a + 0.5 * b * c,
     lambda a, b, c: torch.addcmul(a, b, c, value=0.5)),
    ("addcdiv", lambda a, b, c: a.addcdiv(b, c, value=-2), lambda a, b, c: a - 2 * b / c,
     lambda a, b, c: torch.addcdiv(a, b, c, value=-2)),
    ("lerp", lambda a, b, c: cr.lerp(a, b, c), lambda a, b, c: a + c * (b - a),
     lambda a, b, c: torch.lerp(a, b, c)),
    ("lerp_number", lambda a, b, c: a.lerp(b, 0.25) * c, lambda a, b, c: (a + 0.25 * (b - a)) * c,
     lambda a, b, c: torch.lerp(a, b, 0.25) * c),
    ("clamp_min", lambda a, b, c: cr.clamp_min(a, 0.1) * c + b.clamp_max(0.2),
     lambda a, b, c: np.maximum(a, 0.1) * c + np.minimum(b, 0.2),
     lambda a, b, c: torch.clamp_min(a, 0.1) * c + b.clamp_max(0.2)),
    ("clamp_tensor", lambda a, b, c: cr.clamp_max(cr.clamp_min(a, b), c),
     lambda a, b, c: np.minimum(np.maximum(a, b), c),
     lambda a, b, c: torch.clamp_max(torch.clamp_min(a, b), c)),
]


@pytest.mark.parametrize("name,fn,np_fn,torch_fn", COMPOSITIONS, ids=[c[0] for c in COMPOSITIONS])
def test_compositions(name, fn, np_fn, torch_fn):
    a, b = RNG.standard_normal(12), RNG.standard_normal(12)
    c = RNG.uniform(0.5, 2.0, 12)
    value, grads = _value_and_grads(fn, [a, b, c], np.ones(12))
    np.testing.assert_allclose(value, np_fn(a, b, c), rtol=1e-13)
    assert all(g is not None for g in grads[:2])
    assert cr.autograd.gradcheck(fn, [cr.tensor(x, requires_grad=True) for x in (a, b, c)])
    if torch is not None:
        _same_as_torch(fn, torch_fn, [a, b, c])


# --- PyTorch's conventions at special points ---------------------------------------------------


def test_sinc_is_one_at_zero_with_zero_gradient():
    x = cr.tensor([0.0, 0.5, -1.5], requires_grad=True)
    y = cr.sinc(x)
    y.sum().backward()
    assert y.detach().numpy()[0] == 1.0 and x.grad.numpy()[0] == 0.0
    np.testing.assert_allclose(y.detach().numpy(), np.sinc([0.0, 0.5, -1.5]), rtol=1e-15)
    if torch is not None:
        t = torch.tensor([0.0, 0.5, -1.5], dtype=torch.float64, requires_grad=True)
        torch.sinc(t).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-15)


def _sinc_second_derivative(x):
    """d^2/dx^2 sin(pi x) / (pi x) = pi^2 f''(u) at u = pi x, f(u) = sin(u) / u, so
    f'' = -sin(u) / u - 2 cos(u) / u^2 + 2 sin(u) / u^3 (and -pi^2 / 3 at 0, from the
    series 1 - u^2 / 6 + ...)."""
    u = np.pi * np.asarray(x, dtype=np.float64)
    return np.pi ** 2 * (-np.sin(u) / u - 2 * np.cos(u) / u ** 2 + 2 * np.sin(u) / u ** 3)


def test_sinc_second_derivative_near_and_at_zero():
    # (cos(pi x) - sinc(x)) / x cancels near 0: the rule switches to sinc's Taylor series
    # below |x| = 0.01, so the second derivative is right there too (PyTorch gives nan at 0)
    pts = np.array([0.0, 1e-300, 1e-6, -0.004, 0.0099, 0.0101, 0.3, -2.2])
    x = cr.tensor(pts, requires_grad=True)
    (g,) = cr.autograd.grad(cr.sinc(x).sum(), x, create_graph=True)
    (h,) = cr.autograd.grad(g.sum(), x)
    tiny = np.abs(pts) < 1e-3  # there the series: -pi^2 / 3 (1 - 3 pi^2 x^2 / 10)
    expect = np.where(tiny, -np.pi ** 2 / 3 * (1 - np.pi ** 2 * pts ** 2 * 0.3),
                      _sinc_second_derivative(np.where(tiny, 1.0, pts)))
    np.testing.assert_allclose(h.numpy(), expect, rtol=1e-9)
    first = -np.pi ** 2 * pts / 3  # sinc'(x) = -pi^2 x / 3 (1 + O(x^2)) near 0
    np.testing.assert_allclose(g.detach().numpy()[:3], first[:3], rtol=1e-9, atol=0)
    x32 = cr.tensor(pts, dtype=cr.float32, requires_grad=True)
    (g32,) = cr.autograd.grad(cr.sinc(x32).sum(), x32)
    assert g32.dtype == cr.float32


def test_atan2_gradient_is_zero_at_the_origin():
    y = cr.tensor([0.0, -0.0, 1.0], requires_grad=True)
    x = cr.tensor([0.0, 0.0, 2.0], requires_grad=True)
    cr.atan2(y, x).sum().backward()
    # the origin: 0 as PyTorch (atan2 has no derivative there); elsewhere x / r^2, -y / r^2
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, 2.0 / 5])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, -1.0 / 5])
    assert not np.isnan(y.grad.numpy()).any()


def test_angle_at_infinities_signed_zero_and_nan():
    x = cr.tensor([np.inf, -np.inf, -0.0, 0.0, -2.0, np.nan], requires_grad=True)
    a = cr.angle(x)
    np.testing.assert_array_equal(a.detach().numpy(), [0.0, np.pi, 0.0, 0.0, np.pi, np.nan])
    assert not np.signbit(a.detach().numpy()[2])  # +0, as PyTorch's
    a.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))


def test_lgamma_of_minus_infinity_is_infinity():
    # log |Gamma(x)| -> inf as x -> -inf along non-integers (C's lgamma and PyTorch's)
    out = cr.lgamma(cr.tensor([-np.inf, np.inf, 1.0, 3.0]))
    np.testing.assert_array_equal(out.numpy(), [np.inf, np.inf, 0.0, np.log(2.0)])


def test_xlogy_is_zero_where_x_is_zero():
    x = cr.tensor([0.0, 0.0, 0.0, 2.0], requires_grad=True)
    y = cr.tensor([0.0, 3.0, np.nan, 0.5], requires_grad=True)
    out = cr.xlogy(x, y)
    value = out.detach().numpy()
    np.testing.assert_array_equal(value[:2], [0.0, 0.0])
    assert np.isnan(value[2])  # NaN in y propagates, as torch and SciPy
    np.testing.assert_allclose(value[3], 2 * np.log(0.5))
    with np.errstate(divide="ignore", invalid="ignore"):  # log(0), 0 / 0 at entry 0
        out[[0, 1, 3]].sum().backward()
    # log(y), also at x = 0, but 0 where x = 0 and y <= 0 (log(y) = -inf there), as torch
    np.testing.assert_allclose(x.grad.numpy()[[0, 1, 3]], [0.0, np.log(3.0), np.log(0.5)])
    np.testing.assert_allclose(y.grad.numpy()[[1, 3]], [0.0, 2 / 0.5])  # x / y
    np.testing.assert_array_equal(cr.xlogy(0.0, cr.tensor([0.0])).numpy(), [0.0])
    if torch is not None:
        tx = torch.tensor([0.0, 0.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
        t = torch.xlogy(tx, torch.tensor([0.0, 3.0, np.nan, 0.5], dtype=torch.float64))
        np.testing.assert_allclose(out.detach().numpy(), t.detach().numpy(), equal_nan=True)
        t[[0, 1, 3]].sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_remainder_has_the_sign_of_the_divisor_and_fmod_of_the_dividend():
    a = np.array([5.5, -5.5, 5.5, -5.5])
    b = np.array([2.0, 2.0, -2.0, -2.0])
    np.testing.assert_array_equal(cr.remainder(cr.tensor(a), cr.tensor(b)).numpy(),
                                  [1.5, 0.5, -0.5, -1.5])
    np.testing.assert_array_equal(cr.fmod(cr.tensor(a), cr.tensor(b)).numpy(),
                                  [1.5, -1.5, 1.5, -1.5])
    np.testing.assert_array_equal((cr.tensor(a) % 2.0).numpy(), a % 2.0)  # Python's %
    np.testing.assert_array_equal((7.0 % cr.tensor(b)).numpy(), 7.0 % b)
    np.testing.assert_array_equal((cr.tensor(a) // 2.0).numpy(), a // 2.0)
    np.testing.assert_array_equal((7.0 // cr.tensor(b)).numpy(), 7.0 // b)
    if torch is not None:
        np.testing.assert_array_equal(torch.remainder(torch.tensor(a), torch.tensor(b)).numpy(),
                                      [1.5, 0.5, -0.5, -1.5])


def test_round_half_to_even_and_decimals():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.675, 1234.5])
    np.testing.assert_array_equal(cr.round(cr.tensor(x)).numpy(),
                                  [0.0, 2.0, 2.0, -0.0, -2.0, 3.0, 1234.0])
    np.testing.assert_array_equal(cr.round(cr.tensor(x), decimals=2).numpy(), np.round(x, 2))
    np.testing.assert_array_equal(cr.tensor(x).round(decimals=-1).numpy(), np.round(x, -1))
    f32 = cr.tensor(x.astype(np.float32)).round(decimals=1)
    assert f32.dtype == np.float32
    if torch is not None:
        for d in (0, 2, -1):
            np.testing.assert_array_equal(cr.round(cr.tensor(x), decimals=d).numpy(),
                                          torch.round(torch.tensor(x), decimals=d).numpy())


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "fix", "sgn"])
def test_rounding_gradient_is_zero(name):
    x = cr.tensor([-1.5, -0.3, 0.0, 0.7, 2.5, 3.0], requires_grad=True)
    y = getattr(cr, name)(x)
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6))
    if torch is not None and name != "fix":
        t = torch.tensor([-1.5, -0.3, 0.0, 0.7, 2.5, 3.0], requires_grad=True)
        getattr(torch, name)(t).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy(force=True))


def test_div_rounding_modes():
    a, b = np.array([7.0, -7.0, 7.5]), np.array([2.0, 2.0, -2.0])
    x = cr.tensor(a, requires_grad=True)
    floor = cr.div(x, cr.tensor(b), rounding_mode="floor")
    trunc = x.div(cr.tensor(b), rounding_mode="trunc")
    np.testing.assert_array_equal(floor.detach().numpy(), np.floor_divide(a, b))
    np.testing.assert_array_equal(trunc.detach().numpy(), np.trunc(a / b))
    (floor + trunc).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    with pytest.raises(ValueError, match="rounding_mode"):
        cr.div(x, 2.0, rounding_mode="ceil")


def test_fmax_fmin_ignore_nan_and_give_ties_to_the_first_argument():
    nan = np.nan
    a = np.array([1.0, nan, nan, 2.0, 3.0])
    b = np.array([nan, 1.0, nan, 2.0, -1.0])
    x, y = cr.tensor(a, requires_grad=True), cr.tensor(b, requires_grad=True)
    hi, lo = cr.fmax(x, y), cr.fmin(x, y)
    np.testing.assert_array_equal(hi.detach().numpy(), np.fmax(a, b))
    np.testing.assert_array_equal(lo.detach().numpy(), np.fmin(a, b))
    gx, gy = cr.autograd.grad(hi.sum(), (x, y))
    np.testing.assert_array_equal(gx.numpy(), [1.0, 0.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 1.0, 0.0, 0.0, 0.0])
    gx, gy = cr.autograd.grad(lo.sum(), (x, y))
    np.testing.assert_array_equal(gx.numpy(), [1.0, 0.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(gy.numpy(), [0.0, 1.0, 0.0, 0.0, 1.0])
    if torch is not None:
        for fn in ("fmax", "fmin"):
            tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
            getattr(torch, fn)(tx, ty).sum().backward()
            mx, my = cr.autograd.grad(getattr(cr, fn)(x, y).sum(), (x, y))
            np.testing.assert_array_equal(mx.numpy(), tx.grad.numpy())
            np.testing.assert_array_equal(my.numpy(), ty.grad.numpy())


def test_nan_to_num_values_and_gradient_passes_where_finite():
    a = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
    x = cr.tensor(a, requires_grad=True)
    y = cr.nan_to_num(x)
    np.testing.assert_array_equal(y.detach().numpy(), np.nan_to_num(a))
    np.testing.assert_array_equal(
        x.nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0).detach().numpy(), [1, 2, -3, 1.5, -2])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0, 1.0, 1.0])
    f32 = cr.nan_to_num(cr.tensor(a.astype(np.float32)))
    assert f32.dtype == np.float32 and f32.numpy()[1] == np.finfo(np.float32).max
    if torch is not None:
        t = torch.tensor(a, requires_grad=True)
        torch.nan_to_num(t).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
        np.testing.assert_array_equal(y.detach().numpy(), torch.nan_to_num(torch.tensor(a)))


def test_copysign_gradient_is_zero_at_zero_and_for_the_sign():
    x = cr.tensor([0.0, 1.5, -2.0], requires_grad=True)
    s = cr.tensor([-1.0, -1.0, 3.0], requires_grad=True)
    out = cr.copysign(x, s)
    np.testing.assert_array_equal(out.detach().numpy(), [-0.0, -1.5, 2.0])
    gx, gs = cr.autograd.grad(out.sum(), (x, s))
    np.testing.assert_array_equal(gx.numpy(), [0.0, -1.0, -1.0])
    np.testing.assert_array_equal(gs.numpy(), [0.0, 0.0, 0.0])


def test_float32_stays_float32():
    x = cr.tensor(np.array([0.3, 0.6], dtype=np.float32), requires_grad=True)
    for name in ("acos", "sinh", "log2", "exp2", "rsqrt", "sinc", "floor", "frac"):
        y = getattr(cr, name)(x)
        (g,) = cr.autograd.grad(y.sum(), x)
        assert y.dtype == np.float32 and g.dtype == np.float32, name
    for name in ("atan2", "hypot", "logaddexp2", "xlogy", "fmod", "fmax"):
        y = getattr(cr, name)(x, x + 1)
        assert y.dtype == np.float32, name


# --- aliases -----------------------------------------------------------------------------------

ALIASES = [
    ("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arctan2", "atan2"),
    ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("fix", "trunc"),
    ("negative", "neg"), ("absolute", "abs"), ("multiply", "mul"), ("subtract", "sub"),
    ("divide", "div"), ("true_divide", "div"), ("clip", "clamp"), ("sgn", "sign"),
]


@pytest.mark.parametrize("alias,base", ALIASES, ids=[a for a, _ in ALIASES])
def test_alias_is_its_base_op(alias, base):
    def unwrapped(name):  # chainrule.ops wraps clamp and clip (errors name the op)
        fn = getattr(cr, name)
        return getattr(fn, "__wrapped__", fn)

    assert unwrapped(alias) is unwrapped(base)
    binary = base in ("atan2", "mul", "sub", "div")
    x0 = RNG.uniform(1.1, 1.9, 5) if base == "acosh" else RNG.uniform(-0.9, 0.9, 5)
    args = [RNG.uniform(0.5, 1.5, 5)] if binary else ([0.5] if base == "clamp" else [])
    results = []
    for name in (alias, base):
        x = cr.tensor(x0, requires_grad=True)
        y = getattr(x, name)(*args)  # the Tensor methods, too
        y.sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


# --- in-place variants ---------------------------------------------------------------------------

# (name, args, domain)
INPLACE = [(name, (), domain) for name, _, _, domain in UNARY if name != "sgn"] + [
    ("sgn", (), None), ("arccos", (), (-0.9, 0.9)), ("negative", (), None),
    ("absolute", (), None), ("fix", (), None), ("nan_to_num", (), None),
    ("clamp", (-0.5, 0.5), None), ("clamp_min", (0.2,), None), ("clamp_max", (0.2,), None),
    ("round", (), None), ("atan2", ("other",), (-2, 2)), ("hypot", ("other",), None),
    ("fmod", ("other",), None), ("remainder", ("other",), None), ("copysign", ("other",), None),
    ("xlogy", ("other",), None), ("lerp", ("other", 0.3), None),
    ("addcmul", ("other", "other"), None), ("addcdiv", ("other", "other"), None),
]


def _resolve(args, other):
    return tuple(cr.tensor(other) if a == "other" else a for a in args)


@pytest.mark.parametrize("name,args,domain", INPLACE,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(INPLACE)])
def test_inplace_variant_matches_the_op_and_rewrites_history(name, args, domain):
    x0 = _unary_input(domain)
    other = RNG.uniform(0.5, 2.0, x0.shape)
    w = RNG.standard_normal(x0.shape)
    # out of place
    a = cr.tensor(x0, requires_grad=True)
    expected = getattr(cr, name)(a * 1.0, *_resolve(args, other))
    (expected * cr.tensor(w)).sum().backward()
    # in place, on a non-leaf: recorded, the version bumped, the node is the op's
    b = cr.tensor(x0, requires_grad=True)
    y = b * 1.0
    version = y._version
    result = getattr(y, name + "_")(*_resolve(args, other))
    assert result is y and y._version == version + 1
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == type(expected.grad_fn).__name__
    np.testing.assert_array_equal(y.detach().numpy(), expected.detach().numpy())
    (y * cr.tensor(w)).sum().backward()
    np.testing.assert_array_equal(b.grad.numpy(), a.grad.numpy())
    # without grad: the data is written and the version bumped
    c = cr.tensor(x0)
    getattr(c, name + "_")(*_resolve(args, other))
    assert c._version == 1
    np.testing.assert_array_equal(c.numpy(), expected.detach().numpy())
    if torch is not None and name not in ("fix",):
        t = torch.tensor(x0)
        targs = tuple(torch.tensor(other) if a == "other" else a for a in args)
        getattr(t, name + "_")(*targs)
        np.testing.assert_allclose(c.numpy(), t.numpy(), rtol=1e-12, atol=1e-15)


def test_inplace_on_a_leaf_that_requires_grad_raises():
    x = cr.tensor([0.1, 0.2], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.acos_()
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x.clamp_min_(0.0)
    assert x._version == 0


MASKED = {  # fn, and the entries of x = [-1, 2, -3, 0.25] that get no gradient
    "relu": (lambda m, x: m.relu(x), [0, 2]),
    "clamp": (lambda m, x: x.clamp(min=0.0), [0, 2]),
    "clamp_both": (lambda m, x: x.clamp(-0.5, 1.0), [0, 1, 2]),
    "clamp_tensor": (lambda m, x: x.clamp(min=m.zeros(4, dtype=x.dtype)), [0, 2]),
    "maximum": (lambda m, x: m.maximum(x, m.full((4,), 0.5, dtype=x.dtype)), [0, 2, 3]),
    "minimum": (lambda m, x: m.minimum(x, m.full((4,), -2.0, dtype=x.dtype)), [0, 1, 3]),
    "fmax": (lambda m, x: m.fmax(x, m.full((4,), 0.5, dtype=x.dtype)), [0, 2, 3]),
}


@pytest.mark.parametrize("name", sorted(MASKED))
@pytest.mark.parametrize("create_graph", [False, True])
def test_masked_gradient_is_zero_even_for_inf_and_nan_cotangents(name, create_graph):
    # sqrt after a clamp gets an infinite cotangent at the clamped zeros; PyTorch's
    # threshold / clamp / maximum backwards put 0 there (where / masked_fill), not inf * 0
    fn, blocked = MASKED[name]
    values = np.array([-1.0, 2.0, -3.0, 0.25])
    cot = np.array([np.inf, np.nan, np.inf, np.nan])  # non-finite everywhere
    x = cr.tensor(values, requires_grad=True)
    (g,) = cr.autograd.grad(fn(cr, x), x, cr.tensor(cot), create_graph=create_graph)
    g = g.detach().numpy()
    passed = [i for i in range(4) if i not in blocked]
    np.testing.assert_array_equal(g[blocked], 0.0)
    np.testing.assert_array_equal(g[passed], cot[passed])  # the rest passes as it is
    if torch is not None:
        t = torch.tensor(values, requires_grad=True)
        (tg,) = torch.autograd.grad(fn(torch, t), t, torch.tensor(cot))
        np.testing.assert_array_equal(g, tg.numpy())
    x32 = cr.tensor(values, dtype=cr.float32, requires_grad=True)
    (g32,) = cr.autograd.grad(fn(cr, x32), x32, cr.tensor(cot, dtype=cr.float32))
    assert g32.dtype == cr.float32
    np.testing.assert_array_equal(g32.numpy(), g.astype(np.float32))


def test_integer_power_with_negative_exponents_as_pytorch():
    # 1 / x^|p| truncated: 1 for x = 1, +-1 for x = -1 by the parity of p, 0 otherwise
    base = cr.tensor([2, 1, -1, -1, 0, 3])
    exponent = cr.tensor([-1, -3, -2, -3, -1, 0])
    out = base ** exponent
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), [0, 1, 1, -1, 0, 1])
    if torch is not None:
        np.testing.assert_array_equal(
            out.numpy(), (torch.tensor(base.numpy()) ** torch.tensor(exponent.numpy())).numpy())


def test_trunc_division_of_integers_stays_integer_and_exact():
    a, b = cr.tensor([-7, 7, 5, -9]), cr.tensor([2, 2, -3, -4])
    out = cr.div(a, b, rounding_mode="trunc")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out.numpy(), [-3, 3, -1, 2])  # toward zero
    big = cr.tensor([2 ** 62 + 1])  # exact where a float quotient would round
    assert cr.div(big, 1, rounding_mode="trunc").item() == 2 ** 62 + 1
    assert cr.div(cr.tensor([-7.0]), 2, rounding_mode="trunc").dtype == np.float64


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8", "bool"])
def test_float_functions_of_integer_tensors_give_the_default_float_dtype(dtype):
    # NumPy computes exp of an int8 in float16 (exp(3) = 20.08 as 20.09); PyTorch gives the
    # default float dtype, and so does chainrule (float64 unless set_default_dtype changed it)
    x = cr.tensor([0, 1, 3] if dtype != "bool" else [False, True, True], dtype=getattr(cr, dtype))
    ref = np.array([0.0, 1.0, 3.0 if dtype != "bool" else 1.0])
    for f, g in ((cr.exp, np.exp), (cr.sqrt, np.sqrt), (cr.tanh, np.tanh), (cr.log1p, np.log1p)):
        y = f(x)
        assert y.dtype == cr.float64
        np.testing.assert_allclose(y.numpy(), g(ref), rtol=1e-15)
    assert cr.abs(x).dtype == x.dtype  # abs keeps integers
    saved = cr.get_default_dtype()
    cr.set_default_dtype(cr.float32)
    try:
        assert cr.exp(x).dtype == cr.float32
    finally:
        cr.set_default_dtype(saved)
    if torch is not None:
        t = torch.tensor(x.numpy())
        assert str(torch.exp(t).dtype) == "torch.float32"  # torch's default is float32


def test_integer_math_with_python_floats_gives_the_default_float_dtype():
    # PyTorch's rule: a Python number of a higher category than the tensors (a float beside
    # integer tensors), and true division of integers, give the default float dtype; NumPy
    # gives float64 whatever the default. A float64 tensor or an asked-for dtype keeps it.
    i = cr.tensor([1, 2, 3])
    cases = {
        "i * 0.5": lambda: i * 0.5, "0.5 * i": lambda: 2.5 * i, "i + 1.5": lambda: i + 1.5,
        "i / i": lambda: i / i, "true_divide": lambda: cr.true_divide(i, 2),
        "pow": lambda: i.pow(0.5), "i ** -1.0": lambda: i ** -1.0,
        "floor_divide": lambda: i // 2.5, "where": lambda: cr.where(i > 1, i, 0.5),
        "clamp": lambda: cr.clamp(i, 0.5), "atan2": lambda: cr.atan2(i, i),
    }
    saved = cr.get_default_dtype()
    cr.set_default_dtype(cr.float32)
    try:
        for name, f in cases.items():
            y = f()
            assert y.dtype == cr.float32, name
        np.testing.assert_allclose((i * 0.5).numpy(), [0.5, 1.0, 1.5])
        assert (i * cr.tensor(2.0, dtype=cr.float64)).dtype == cr.float64  # a float64 tensor
        assert i.double().dtype == cr.float64 and i.sum(dtype=cr.float64).dtype == cr.float64
        assert (i * 2).dtype == cr.int64 and (i * True).dtype == cr.int64
        w = cr.ones(3, requires_grad=True)  # float32 now; its gradient too
        (w * (i * 0.5)).sum().backward()
        assert w.grad.dtype == cr.float32
        np.testing.assert_allclose(w.grad.numpy(), [0.5, 1.0, 1.5])
    finally:
        cr.set_default_dtype(saved)
    for name, f in cases.items():  # back to float64, and no slow path left on
        assert f().dtype == cr.float64, name
    from chainrule import _state
    assert not _state.STATE.flags & _state.SLOW
    if torch is not None:
        torch_default = torch.get_default_dtype()
        torch.set_default_dtype(torch.float32)
        try:
            ti = torch.tensor([1, 2, 3])
            assert (ti * 0.5).dtype == torch.float32 and (ti / ti).dtype == torch.float32
        finally:
            torch.set_default_dtype(torch_default)


def test_unary_functions_take_input_by_keyword():
    # PyTorch names the argument input: torch.exp(input=x); exp(0) = 1, tanh(0) = 0
    x = cr.zeros(2)
    np.testing.assert_array_equal(cr.exp(input=x).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(cr.tanh(input=x).numpy(), [0.0, 0.0])
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'input'"):
        cr.exp()
