"""nn.utils.parametrizations.orthogonal, the legacy nn.utils.spectral_norm, skip_init,
conv/linear + batchnorm fusion, optim.Adafactor and optim.Muon. Each test checks values
derived without torch (the formula written out in NumPy, an invariant, gradcheck) and, when
torch is installed, also compares with torch."""

import math

import numpy as np
import pytest

import chainrule as cr
from chainrule import nn, optim
from chainrule.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    remove_spectral_norm,
    skip_init,
    spectral_norm,
)
from chainrule.nn.utils.parametrizations import orthogonal

try:
    import torch
except ImportError:
    torch = None

MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (5, 3), (3, 5), (2, 5, 3)]


def _linear_with(weight, lib):
    m = lib.nn.Linear(1, 1, bias=False)
    m.weight = lib.nn.Parameter(lib.tensor(weight))
    return m


def _gram_err(w):
    """max |Q^T Q - I| (tall) or |Q Q^T - I| (wide) over a stack."""
    w = np.asarray(w)
    g = np.swapaxes(w, -1, -2) @ w if w.shape[-2] >= w.shape[-1] else w @ np.swapaxes(w, -1, -2)
    return np.abs(g - np.eye(g.shape[-1])).max()


# --- orthogonal ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orth_map", MAPS)
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_is_orthogonal_after_updates(shape, orth_map, triv):
    """The weight is orthogonal at registration and after the original moves; the result
    and the gradient of the original agree with torch given the same state."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(shape)
    m = orthogonal(_linear_with(w0, cr), orthogonal_map=orth_map, use_trivialization=triv)
    assert type(m).__name__ == "ParametrizedLinear"
    assert _gram_err(m.weight.detach().numpy()) < 1e-13
    init = {k: v.numpy().copy() for k, v in m.state_dict().items()}
    step = rng.standard_normal(shape) * 0.3
    idx = np.arange(min(shape[-2:]))
    step[..., idx, idx] = 0  # householder's diagonal holds signs (truncated to int)
    with cr.no_grad():
        m.parametrizations.weight.original.add_(cr.tensor(step))
    w = m.weight
    assert _gram_err(w.detach().numpy()) < 1e-13
    r = rng.standard_normal(shape)
    (w * cr.tensor(r)).sum().backward()
    g = m.parametrizations.weight.original.grad.numpy()
    assert g.shape == shape and np.isfinite(g).all()
    if torch is None:
        return
    from torch.nn.utils.parametrizations import orthogonal as t_orth

    tm = t_orth(_linear_with(w0, torch), orthogonal_map=orth_map, use_trivialization=triv)
    sd = tm.state_dict()
    assert set(sd) == set(init)
    if not (triv and shape[-1] != shape[-2]):  # no random completion: same state
        for k, v in sd.items():
            np.testing.assert_allclose(init[k], v.numpy(), atol=1e-13)
    m2 = orthogonal(_linear_with(w0, cr), orthogonal_map=orth_map, use_trivialization=triv)
    m2.load_state_dict({k: cr.tensor(v.numpy()) for k, v in sd.items()})
    with torch.no_grad():
        tm.parametrizations.weight.original.add_(torch.tensor(step))
    with cr.no_grad():
        m2.parametrizations.weight.original.add_(cr.tensor(step))
    tw, cw = tm.weight, m2.weight
    np.testing.assert_allclose(cw.detach().numpy(), tw.detach().numpy(), atol=1e-13)
    (tw * torch.tensor(r)).sum().backward()
    (cw * cr.tensor(r)).sum().backward()
    np.testing.assert_allclose(m2.parametrizations.weight.original.grad.numpy(),
                               tm.parametrizations.weight.original.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("orth_map", MAPS)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_orthogonal_gradcheck(orth_map, shape):
    """The map from the unconstrained original to the weight is differentiable through
    chainrule ops (finite differences agree with the backward)."""
    rng = np.random.default_rng(1)
    m = orthogonal(_linear_with(rng.standard_normal(shape), cr), orthogonal_map=orth_map)
    param = m.parametrizations.weight[0]
    x = cr.tensor(-np.eye(*shape) + 0.2 * rng.standard_normal(shape), requires_grad=True)
    assert cr.autograd.gradcheck(lambda a: param(a), (x,))


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley"])
def test_orthogonal_maps_formula(orth_map):
    """Without trivialisation the weight is exp(A) or (I - A/2)^{-1}(I + A/2),
    A = tril(X) - tril(X)^T (a square X; SciPy's expm as the reference)."""
    from scipy.linalg import expm

    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 4))
    m = orthogonal(_linear_with(np.eye(4), cr), orthogonal_map=orth_map,
                   use_trivialization=False)
    with cr.no_grad():
        m.parametrizations.weight.original.copy_(cr.tensor(x))
    L = np.tril(x)
    A = L - L.T
    eye = np.eye(4)
    want = expm(A) if orth_map == "matrix_exp" else np.linalg.solve(eye - A / 2, eye + A / 2)
    np.testing.assert_allclose(m.weight.detach().numpy(), want, atol=1e-13)


def test_orthogonal_householder_of_minus_identity_is_eye():
    """The trivialised original starts at -I, and householder(-I's reflectors) = I, so the
    weight is base (the QR Q of the weight, with a non-negative diag(R))."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((5, 5))
    m = orthogonal(_linear_with(w0, cr), orthogonal_map="householder")
    np.testing.assert_array_equal(m.parametrizations.weight.original.detach().numpy(),
                                  -np.eye(5))
    q, r = np.linalg.qr(w0)
    q = q * np.sign(np.diag(r))
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-13)
    np.testing.assert_allclose(m.parametrizations.weight[0].base.numpy(), q, atol=1e-13)


@pytest.mark.parametrize("orth_map", MAPS)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_assign(orth_map, shape):
    """Assigning an orthogonal matrix gives it back (trivialisation; householder without
    it too); matrix_exp / cayley without trivialisation raise NotImplementedError."""
    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.standard_normal((max(shape), min(shape))))
    q = q if shape[0] >= shape[1] else q.T
    for triv in (True, False):
        m = orthogonal(_linear_with(rng.standard_normal(shape), cr), orthogonal_map=orth_map,
                       use_trivialization=triv)
        if not triv and orth_map != "householder":
            with pytest.raises(NotImplementedError, match="use_trivialization=False"):
                m.weight = cr.tensor(q)
            continue
        m.weight = cr.tensor(q)
        np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-13)
        if torch is not None and (not triv or shape[0] == shape[1]):
            from torch.nn.utils.parametrizations import orthogonal as t_orth

            tm = t_orth(_linear_with(np.eye(*shape), torch), orthogonal_map=orth_map,
                        use_trivialization=triv)
            with torch.no_grad():
                tm.weight = torch.tensor(q)
            for k, v in tm.state_dict().items():
                np.testing.assert_allclose(m.state_dict()[k].numpy(), v.numpy(), atol=1e-13)


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of'):
        orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name"):
        orthogonal(nn.Linear(3, 3), name="nope")
    m = orthogonal(nn.Linear(3, 3).double())
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        m.weight = cr.eye(2, dtype=cr.float64)
    cm = nn.Linear(1, 1, bias=False)
    del cm.weight
    cm.register_buffer("weight", cr.tensor(np.eye(3) * (1 + 1j)))
    with pytest.raises(NotImplementedError, match="complex"):
        orthogonal(cm)
    with pytest.raises(ValueError, match="householder parametrization does not support"):
        orthogonal(cm, orthogonal_map="householder")


# --- legacy spectral_norm ------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_spectral_norm_hook(kind):
    """After enough training forwards the weight's largest singular value (of the weight
    as a matrix, ``dim`` first) is 1; each forward is W / (u . W v) with the buffers; the
    keys are PyTorch's; remove_spectral_norm leaves the normalised weight as a parameter."""
    if kind == "linear":
        m, x, dim = nn.Linear(5, 4).double(), cr.randn(2, 5, dtype=cr.float64), 0
    elif kind == "conv":
        m, x, dim = nn.Conv2d(2, 3, 2).double(), cr.randn(1, 2, 4, 4, dtype=cr.float64), 0
    else:
        m, x, dim = (nn.ConvTranspose2d(2, 3, 2).double(),
                     cr.randn(1, 2, 4, 4, dtype=cr.float64), 1)
    cr.manual_seed(0)
    shape = tuple(m.weight.shape)
    rows = shape[dim]
    rest = tuple(s for i, s in enumerate(shape) if i != dim)
    rng = np.random.default_rng(10)  # a weight with a spectral gap (sigma_1 = 3, others <= 1.5)
    U, _ = np.linalg.qr(rng.standard_normal((rows, rows)))
    V, _ = np.linalg.qr(rng.standard_normal((int(np.prod(rest)), rows)))
    s = np.r_[3.0, np.linspace(1.5, 0.5, rows - 1)]
    w0 = np.moveaxis(((U * s) @ V.T).reshape((rows,) + rest), 0, dim).copy()
    with cr.no_grad():
        m.weight.copy_(cr.tensor(w0))
    spectral_norm(m, n_power_iterations=2)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    for _ in range(60):
        m(x)
    mat = np.moveaxis(w0, dim, 0).reshape(w0.shape[dim], -1)
    u, v = m.weight_u.numpy(), m.weight_v.numpy()
    np.testing.assert_allclose(m.weight.detach().numpy(), w0 / (u @ mat @ v), rtol=1e-13)
    sig = np.linalg.svd(np.moveaxis(m.weight.detach().numpy(), dim, 0)
                        .reshape(w0.shape[dim], -1), compute_uv=False)[0]
    assert abs(sig - 1) < 1e-10
    m.eval()
    before = u.copy()
    m(x)
    np.testing.assert_array_equal(m.weight_u.numpy(), before)  # no iteration in eval
    remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0 / (u @ mat @ v), rtol=1e-13)


def test_spectral_norm_power_iteration_formula_and_torch():
    """One training forward: v = normalize(W^T u), u = normalize(W v), weight = W / u.Wv;
    the gradient of weight_orig and the buffers match torch's from the same state."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((4, 6))
    m = spectral_norm(_linear_with(w, cr))
    u0, v0 = m.weight_u.numpy().copy(), m.weight_v.numpy().copy()
    x = rng.standard_normal((3, 6))
    y = m(cr.tensor(x))
    v = w.T @ u0
    v /= np.linalg.norm(v)
    u = w @ v
    u /= np.linalg.norm(u)
    np.testing.assert_allclose(m.weight_u.numpy(), u, rtol=1e-13)
    np.testing.assert_allclose(m.weight_v.numpy(), v, rtol=1e-13)
    np.testing.assert_allclose(y.detach().numpy(), x @ (w / (u @ w @ v)).T, rtol=1e-12)
    assert v0.shape == (6,)
    if torch is None:
        return
    tm = torch.nn.utils.spectral_norm(_linear_with(w, torch))
    cm = spectral_norm(_linear_with(w, cr))
    cm.load_state_dict({k: cr.tensor(t.numpy()) for k, t in tm.state_dict().items()})
    r = rng.standard_normal((3, 4))
    for _ in range(3):
        (tm(torch.tensor(x)) * torch.tensor(r)).sum().backward()
        (cm(cr.tensor(x)) * cr.tensor(r)).sum().backward()
    np.testing.assert_allclose(cm.weight_orig.grad.numpy(), tm.weight_orig.grad.numpy(),
                               atol=1e-13)
    for k, t in tm.state_dict().items():
        np.testing.assert_allclose(cm.state_dict()[k].numpy(), t.numpy(), atol=1e-14)


def test_spectral_norm_errors():
    m = spectral_norm(nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        remove_spectral_norm(m, "bias")


# --- fusion ------------------------------------------------------------------------------

def _bn(n, dim, rng):
    bn = (nn.BatchNorm1d if dim == 1 else nn.BatchNorm2d)(n).double()
    with cr.no_grad():
        bn.running_mean.copy_(cr.tensor(rng.standard_normal(n)))
        bn.running_var.copy_(cr.tensor(rng.random(n) + 0.5))
        bn.weight.copy_(cr.tensor(rng.standard_normal(n)))
        bn.bias.copy_(cr.tensor(rng.standard_normal(n)))
    return bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    """The fused convolution equals batchnorm(conv(x)) in eval mode, and its weights are
    W * s (s = gamma / sqrt(var + eps) along the output channels), (b - mean) s + beta."""
    rng = np.random.default_rng(6)
    conv = (nn.ConvTranspose2d(3, 4, 2) if transpose else nn.Conv2d(3, 4, 2)).double().eval()
    bn = _bn(4, 2, rng)
    x = cr.tensor(rng.standard_normal((2, 3, 5, 5)))
    fused = fuse_conv_bn_eval(conv, bn, transpose=transpose)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               atol=1e-12)
    s = bn.weight.detach().numpy() / np.sqrt(bn.running_var.numpy() + bn.eps)
    shape = (1, -1, 1, 1) if transpose else (-1, 1, 1, 1)
    np.testing.assert_allclose(fused.weight.detach().numpy(),
                               conv.weight.detach().numpy() * s.reshape(shape), rtol=1e-15)
    np.testing.assert_allclose(fused.bias.detach().numpy(),
                               (conv.bias.detach().numpy() - bn.running_mean.numpy()) * s
                               + bn.bias.detach().numpy(), rtol=1e-14)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter)
    w, b = fuse_conv_bn_weights(conv.weight, None, bn.running_mean, bn.running_var, bn.eps,
                                None, None, transpose)
    r = 1 / np.sqrt(bn.running_var.numpy() + bn.eps)
    np.testing.assert_allclose(b.detach().numpy(), -bn.running_mean.numpy() * r, rtol=1e-15)
    assert w.requires_grad and not b.requires_grad
    if torch is not None:
        tw, tb = torch.nn.utils.fusion.fuse_conv_bn_weights(
            torch.tensor(conv.weight.detach().numpy()), torch.tensor(conv.bias.detach().numpy()),
            torch.tensor(bn.running_mean.numpy()), torch.tensor(bn.running_var.numpy()),
            bn.eps, torch.tensor(bn.weight.detach().numpy()),
            torch.tensor(bn.bias.detach().numpy()), transpose)
        np.testing.assert_allclose(fused.weight.detach().numpy(), tw.detach().numpy(),
                                   atol=1e-15)
        np.testing.assert_allclose(fused.bias.detach().numpy(), tb.detach().numpy(),
                                   atol=1e-15)


def test_fuse_linear_bn_eval():
    rng = np.random.default_rng(7)
    lin = nn.Linear(3, 4).double().eval()
    bn = _bn(4, 1, rng)
    x = cr.tensor(rng.standard_normal((5, 3)))
    fused = fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(),
                               atol=1e-12)
    if torch is not None:
        tw, tb = torch.nn.utils.fusion.fuse_linear_bn_weights(
            *(torch.tensor(t.detach().numpy()) for t in (lin.weight, lin.bias,
                                                         bn.running_mean, bn.running_var)),
            bn.eps, torch.tensor(bn.weight.detach().numpy()),
            torch.tensor(bn.bias.detach().numpy()))
        np.testing.assert_allclose(fused.weight.detach().numpy(), tw.detach().numpy(),
                                   atol=1e-15)
        np.testing.assert_allclose(fused.bias.detach().numpy(), tb.detach().numpy(),
                                   atol=1e-15)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        fuse_linear_bn_eval(lin.train(), bn)
    with pytest.raises(AssertionError, match="To fuse, linear.out_features"):
        fuse_linear_bn_eval(lin.eval(), _bn(3, 1, rng))


# --- skip_init -------------------------------------------------------------------------------

def test_skip_init():
    m = skip_init(nn.Linear, 5, 3, dtype=cr.float64)
    assert isinstance(m, nn.Linear) and m.weight.shape == (3, 5) and m.bias.shape == (3,)
    assert m.weight.dtype == cr.float64 and m.weight.requires_grad
    with pytest.raises(RuntimeError, match="Expected a Module"):
        skip_init(int)

    class NoDevice(nn.Module):
        def __init__(self):
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        skip_init(NoDevice)


# --- Adafactor -----------------------------------------------------------------------------

def _adafactor_ref(p, grads, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, wd=0.0,
                   maximize=False):
    """Adafactor written out in NumPy (torch.optim.Adafactor's documented algorithm)."""
    p = p.copy()
    eps1 = np.finfo(p.dtype).eps if eps[0] is None else eps[0]
    R = C = V = None
    for t, g in enumerate(grads, 1):
        g = -g if maximize else g
        b2 = t ** beta2_decay
        alpha = max(eps[1], np.sqrt((p * p).sum()) / math.sqrt(p.size)) * min(lr, t ** -0.5)
        p = p * (1 - lr * wd)
        if g.ndim > 1:
            rm, cm = (g * g).mean(-1, keepdims=True), (g * g).mean(-2, keepdims=True)
            R = rm * b2 if R is None else R + b2 * (rm - R)
            C = cm * b2 if C is None else C + b2 * (cm - C)
            var = (R @ C) / np.maximum(R.mean(-2, keepdims=True), eps1)
        else:
            V = g * g * b2 if V is None else V + b2 * (g * g - V)
            var = V
        u = g / np.sqrt(np.maximum(var, eps1 ** 2))
        p = p - alpha / max(1.0, np.sqrt((u * u).sum()) / (math.sqrt(u.size) * d)) * u
    return p, (R, C) if grads[0].ndim > 1 else V


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 3, 4), ()])
@pytest.mark.parametrize("kw", [{}, dict(lr=0.05, wd=0.1, d=1.5),
                                dict(eps=(1e-20, 1e-2), beta2_decay=-0.5, maximize=True)])
def test_adafactor_matches_formula_and_torch(shape, kw):
    rng = np.random.default_rng(8)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) * 10.0 ** k for k in (-2, 0, 2, 1, -1)]
    opt_kw = {("weight_decay" if k == "wd" else k): v for k, v in kw.items()}
    p = cr.tensor(p0, requires_grad=True)
    opt = optim.Adafactor([p], **opt_kw)
    for g in grads:
        p.grad = cr.tensor(g)
        opt.step()
    want, st = _adafactor_ref(p0, grads, **kw)
    np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-12, atol=1e-15)
    state = opt.state[p]
    assert float(state["step"]) == len(grads)
    if len(shape) > 1:
        assert list(state) == ["step", "row_var", "col_var"]
        np.testing.assert_allclose(state["row_var"].numpy(), st[0], rtol=1e-12)
        np.testing.assert_allclose(state["col_var"].numpy(), st[1], rtol=1e-12)
    else:
        assert list(state) == ["step", "variance"]
        np.testing.assert_allclose(state["variance"].numpy(), st, rtol=1e-12)
    if torch is None:
        return
    tp = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.Adafactor([tp], **opt_kw)
    for g in grads:
        tp.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-14,
                               atol=1e-15)
    for k, v in topt.state[tp].items():
        np.testing.assert_allclose(state[k].numpy(), v.numpy(), rtol=1e-14)


def test_adafactor_validation():
    p = [cr.zeros(2, requires_grad=True)]
    for kw, msg in [(dict(lr=-1), "Learning rate should be >= 0"),
                    (dict(beta2_decay=0.1), "beta2_decay should be <= 0"),
                    (dict(eps=(-1, 1e-3)), "epsilon1 should be >= 0"),
                    (dict(eps=(None, -1)), "epsilon2 should be >= 0"),
                    (dict(d=0.5), "Clipping threshold d should be >= 1"),
                    (dict(weight_decay=-1), "weight_decay should be >= 0")]:
        with pytest.raises(ValueError, match=msg):
            optim.Adafactor(p, **kw)


# --- Muon ----------------------------------------------------------------------------------

def _bf16_ref(x):
    """Round to bfloat16 (8 significant bits, ties to even) via frexp."""
    m, e = np.frexp(np.asarray(x, dtype=np.float64))
    return np.ldexp(np.round(m * 256) / 256, e).astype(np.float32)


def _ns_ref(G, steps=5, coef=(3.4445, -4.7750, 2.0315), eps=1e-7):
    a, b, c = (np.float32(v) for v in coef)
    X = _bf16_ref(G.astype(np.float32))
    tall = G.shape[0] > G.shape[1]
    X = X.T if tall else X
    X = _bf16_ref(X / _bf16_ref(max(np.float32(np.sqrt((X * X).sum(dtype=np.float32))),
                                    np.float32(eps))))
    for _ in range(steps):
        A = _bf16_ref(X @ X.T)
        B = _bf16_ref(b * A + c * (A @ A))
        X = _bf16_ref(a * X + B @ X)
    return X.T if tall else X


@pytest.mark.parametrize("shape", [(4, 6), (7, 3)])
@pytest.mark.parametrize("kw", [{}, dict(nesterov=False, adjust_lr_fn="match_rms_adamw",
                                         lr=0.02)])
def test_muon_matches_formula_and_torch(shape, kw):
    rng = np.random.default_rng(9)
    p0 = rng.standard_normal(shape)
    grads = [rng.standard_normal(shape) for _ in range(3)]
    p = cr.tensor(p0, requires_grad=True)
    opt = optim.Muon([p], **kw)
    lr, mom, wd = kw.get("lr", 1e-3), 0.95, 0.1
    want, buf = p0.copy(), np.zeros(shape)
    for g in grads:
        p.grad = cr.tensor(g)
        opt.step()
        buf = buf + (1 - mom) * (g - buf)
        upd = g + mom * (buf - g) if kw.get("nesterov", True) else buf
        O = _ns_ref(upd).astype(np.float64)
        A, B = shape
        adj = (0.2 * math.sqrt(max(A, B)) if kw.get("adjust_lr_fn") else
               math.sqrt(max(1, A / B)))
        want = want * (1 - lr * wd) - lr * adj * O
    np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), buf, rtol=1e-13)
    np.testing.assert_allclose(p.detach().numpy(), want, atol=1e-12)
    # the orthogonalised update has singular values near 1 (within NS's (0.5, 1.5) band)
    sv = np.linalg.svd(_ns_ref(rng.standard_normal(shape)), compute_uv=False)
    assert sv.min() > 0.5 and sv.max() < 1.5
    if torch is None:
        return
    tp = torch.tensor(p0, requires_grad=True)
    topt = torch.optim.Muon([tp], **kw)
    for g in grads:
        tp.grad = torch.tensor(g)
        topt.step()
    np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), atol=1e-12)


def test_muon_validation():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        optim.Muon([cr.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
        optim.Muon([cr.zeros(3, 3, requires_grad=True)], adjust_lr_fn="x")
    with pytest.raises(ValueError, match="momentum should be >= 0"):
        optim.Muon([cr.zeros(3, 3, requires_grad=True)], momentum=-1)
