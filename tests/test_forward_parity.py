"""Forward-mode (JVP) parity: derivatives that a fuzz of ``func.jvp`` against
``torch.func.jvp`` and central differences found wrong, each pinned to a hand-derived or
finite-difference value (and to PyTorch when it is importable)."""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule import func

try:
    import torch
except ImportError:  # the hand-derived values are checked without it
    torch = None


def _central(f, xs, vs, eps=1e-6):
    plus = f(*[cr.tensor(x + eps * v) for x, v in zip(xs, vs)]).numpy()
    minus = f(*[cr.tensor(x - eps * v) for x, v in zip(xs, vs)]).numpy()
    return (plus - minus) / (2 * eps)


# quantile / nanquantile: with linear interpolation the result moves with a tensor q
# (rank = q (n - 1)), as PyTorch's composite differentiates it; the q part was dropped

X = np.array([[0.3, 0.9, 0.1, 0.5], [0.7, 0.2, 0.8, 0.4], [0.6, 0.35, 0.05, 0.95]])
Q = np.array([0.25, 0.6])


def _quantile_by_hand(x, q, vx, vq):
    """d quantile along the last dim: the tangent of x at the two entries used, plus
    (n - 1) (s[above] - s[below]) vq."""
    order = np.argsort(x, -1)
    s = np.take_along_axis(x, order, -1)
    sv = np.take_along_axis(vx, order, -1)
    n = x.shape[-1]
    out = np.empty((q.size, x.shape[0]))
    for k, (qk, vk) in enumerate(zip(q, vq)):
        rank = qk * (n - 1)
        lo, hi = int(np.floor(rank)), int(np.ceil(rank))
        w = rank - lo
        out[k] = sv[:, lo] + w * (sv[:, hi] - sv[:, lo]) + (n - 1) * (s[:, hi] - s[:, lo]) * vk
    return out


def test_quantile_jvp_includes_the_tangent_of_q():
    vx = np.random.default_rng(0).standard_normal(X.shape)
    vq = np.array([0.7, -1.3])
    f = lambda x, q: cr.quantile(x, q, dim=1)  # noqa: E731
    _, t = func.jvp(f, (cr.tensor(X), cr.tensor(Q)), (cr.tensor(vx), cr.tensor(vq)))
    want = _quantile_by_hand(X, Q, vx, vq)
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t.numpy(), _central(f, (X, Q), (vx, vq)), rtol=1e-6, atol=1e-8)
    with fwAD.dual_level():  # the same through make_dual / unpack_dual
        out = f(cr.tensor(X), fwAD.make_dual(cr.tensor(Q), cr.tensor(vq)))
        np.testing.assert_allclose(fwAD.unpack_dual(out).tangent.numpy(),
                                   _quantile_by_hand(X, Q, 0 * vx, vq), rtol=1e-10)
    if torch is not None:
        _, tt = torch.func.jvp(lambda x, q: torch.quantile(x, q, dim=1),
                               (torch.tensor(X), torch.tensor(Q)),
                               (torch.tensor(vx), torch.tensor(vq)))
        np.testing.assert_allclose(t.numpy(), tt.numpy(), rtol=1e-10, atol=1e-12)


def test_quantile_gradient_of_q_and_second_order():
    q = cr.tensor(0.4, requires_grad=True)
    x = cr.tensor(X[0])
    (g,) = cr.autograd.grad(cr.quantile(x, q), [q])
    s = np.sort(X[0])  # rank 1.2: between s[1] and s[2]
    assert np.isclose(g.item(), 3 * (s[2] - s[1]))
    # mixed modes agree (the q part is linear in q between two ranks: second derivative 0)
    h_fr = func.jacfwd(func.jacrev(lambda q: cr.quantile(x, q)))(cr.tensor(0.4))
    h_rr = func.jacrev(func.jacrev(lambda q: cr.quantile(x, q)))(cr.tensor(0.4))
    assert np.allclose(h_fr.numpy(), 0.0) and np.allclose(h_rr.numpy(), 0.0)
    if torch is not None:
        tq = torch.tensor(0.4, dtype=torch.float64, requires_grad=True)
        (tg,) = torch.autograd.grad(torch.quantile(torch.tensor(X[0]), tq), [tq])
        assert np.isclose(g.item(), tg.item())


def test_nanquantile_jvp_of_q_counts_only_the_valid_entries():
    x = X.copy()
    x[0, 1] = np.nan  # 3 valid entries in row 0: rank = q (3 - 1)
    x[2, :] = np.nan  # no valid entry: the result is NaN, its rank does not move
    vq = np.array([1.0, -0.5])
    f = lambda q: cr.nanquantile(cr.tensor(x), q, dim=1)  # noqa: E731
    _, t = func.jvp(f, (cr.tensor(Q),), (cr.tensor(vq),))
    num = _central(f, (Q,), (vq,))
    np.testing.assert_allclose(t.numpy()[:, :2], num[:, :2], rtol=1e-6, atol=1e-8)
    assert np.isnan(t.numpy()[:, 2]).all() or np.all(t.numpy()[:, 2] == 0)
    s0 = np.sort(x[0][~np.isnan(x[0])])  # q = 0.25: rank 0.5, between s0[0] and s0[1]
    assert np.isclose(t.numpy()[0, 0], 2 * (s0[1] - s0[0]) * vq[0])
    if torch is not None:
        _, tt = torch.func.jvp(lambda q: torch.nanquantile(torch.tensor(x), q, dim=1),
                               (torch.tensor(Q),), (torch.tensor(vq),))
        np.testing.assert_allclose(t.numpy()[:, :2], tt.numpy()[:, :2], rtol=1e-10)


def test_quantile_tangent_of_q_keeps_float32_and_other_interpolations_ignore_q():
    x32, q32 = X.astype(np.float32), Q.astype(np.float32)
    _, t = func.jvp(lambda q: cr.quantile(cr.tensor(x32), q, dim=1), (cr.tensor(q32),),
                    (cr.tensor(np.ones(2, np.float32)),))
    assert t.dtype == cr.float32
    for how in ("lower", "higher", "nearest", "midpoint"):  # piecewise constant in q
        _, t = func.jvp(lambda q, how=how: cr.quantile(cr.tensor(X), q, dim=1,
                                                       interpolation=how),
                        (cr.tensor(Q),), (cr.tensor(np.ones(2)),))
        assert np.all(t.numpy() == 0), how


# ldl_factor / ldl_solve are not differentiable (as in PyTorch): a forward-mode tangent
# raised nothing and came out as a silent zero

A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])


def test_ldl_factor_and_solve_raise_under_forward_mode_rather_than_a_zero_tangent():
    with pytest.raises(NotImplementedError, match="ldl_factor"):
        func.jvp(lambda a: cr.linalg.ldl_factor(a).LD, (cr.tensor(A),),
                 (cr.tensor(np.ones((3, 3))),))
    LD, piv = cr.linalg.ldl_factor(cr.tensor(A))
    with pytest.raises(NotImplementedError, match="ldl_solve"):
        func.jvp(lambda b: cr.linalg.ldl_solve(LD, piv, b), (cr.ones(3, 1),),
                 (cr.ones(3, 1),))
    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="ldl_factor_ex"):
        cr.linalg.ldl_factor_ex(fwAD.make_dual(cr.tensor(A), cr.tensor(np.eye(3))))
    # without a tangent nothing changes
    x = cr.linalg.ldl_solve(LD, piv, cr.ones(3, 1))
    np.testing.assert_allclose(A @ x.numpy(), np.ones((3, 1)), atol=1e-12)
    if torch is not None:  # PyTorch refuses too
        with pytest.raises(Exception):  # noqa: B017
            torch.func.jvp(lambda a: torch.linalg.ldl_factor(a)[0], (torch.tensor(A),),
                           (torch.ones(3, 3, dtype=torch.float64),))
