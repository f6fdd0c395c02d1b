"""chainrule.linalg decompositions: cholesky, qr, eigh, eigvalsh, svd, svdvals.

1. values by the identities that define each factorization (and NumPy), gradients of
   basis-invariant losses by gradcheck, and both against torch.linalg where it is
   installed (float64, batched);
2. repeated eigenvalues / singular values: finite and right where the loss allows it, the
   documented RuntimeError where it depends on the choice of basis;
3. the JVP rules, called directly: central differences and the adjoint identity with the VJP;
4. float32; 5. errors for bad shapes, dtypes and arguments.
The gradcheck of every op (central differences in float64) is in test_table.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import chainrule as cr
from chainrule._ns import RAW
from chainrule.autograd import gradcheck
from chainrule.linalg import decomp

try:
    import torch
except ImportError:  # PyTorch is optional: the comparisons with it are skipped
    torch = None

RNG = np.random.default_rng(2718)
linalg = cr.linalg


def randn(*shape):
    return RNG.standard_normal(shape)


def spd(*shape):
    X = randn(*shape)
    n = shape[-1]
    return X @ np.swapaxes(X, -1, -2) + n * np.eye(n)


def symmetric(*shape):
    X = randn(*shape)
    return X + np.swapaxes(X, -1, -2)


def orthogonal(n):
    return np.linalg.qr(randn(n, n))[0]


def with_noise(A, triangle):
    """A with random values in the triangle that the op does not read."""
    noise = randn(*A.shape) * 3
    return A + (np.triu(noise, 1) if triangle == "upper" else np.tril(noise, -1))


def grad_of(fn, X):
    A = cr.tensor(X, requires_grad=True)
    fn(A).backward()
    return A.grad.numpy()


# --- 1. values, gradients, and torch -------------------------------------------------


def _parts_cr(kind, r):
    """Outputs that do not depend on the sign (or basis) freedom of the factors."""
    if kind == "eigh":
        w, V = r
        return [w, V * V, V[..., :, :1] @ V[..., :, :1].mT]
    if kind == "svd":
        U, S, Vh = r
        k = S.shape[-1]
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        return [S, U @ Vh, U * U, Vh * Vh]
    return list(r) if isinstance(r, tuple) else [r]


DECOMP_CASES = [
    ("cholesky", "plain", lambda m, A: m.cholesky(A), with_noise(spd(2, 4, 4), "upper")),
    ("cholesky_upper", "plain", lambda m, A: m.cholesky(A, upper=True),
     with_noise(spd(2, 4, 4), "lower")),
    ("qr_tall", "plain", lambda m, A: tuple(m.qr(A)), randn(2, 5, 3)),
    ("qr_square", "plain", lambda m, A: tuple(m.qr(A)), randn(2, 3, 3)),
    ("qr_wide", "plain", lambda m, A: tuple(m.qr(A)), randn(2, 3, 5)),
    ("qr_complete_wide", "plain", lambda m, A: tuple(m.qr(A, mode="complete")), randn(2, 3, 5)),
    ("eigh", "eigh", lambda m, A: tuple(m.eigh(A)), with_noise(symmetric(2, 4, 4), "upper")),
    ("eigh_upper", "eigh", lambda m, A: tuple(m.eigh(A, UPLO="U")),
     with_noise(symmetric(2, 4, 4), "lower")),
    ("eigvalsh", "plain", lambda m, A: m.eigvalsh(A), with_noise(symmetric(2, 4, 4), "upper")),
    ("svd_tall", "svd", lambda m, A: tuple(m.svd(A, full_matrices=False)), randn(2, 5, 3)),
    ("svd_wide", "svd", lambda m, A: tuple(m.svd(A, full_matrices=False)), randn(2, 3, 5)),
    ("svd_full_tall", "svd", lambda m, A: tuple(m.svd(A)), randn(2, 5, 3)),
    ("svdvals_tall", "plain", lambda m, A: m.svdvals(A), randn(2, 5, 3)),
    ("svdvals_wide", "plain", lambda m, A: m.svdvals(A), randn(2, 3, 5)),
]


def _read(X, triangle):
    """The symmetric matrix that an op reading one triangle of X sees."""
    if triangle == "upper":
        return np.triu(X) + np.swapaxes(np.triu(X, 1), -1, -2)
    return np.tril(X) + np.swapaxes(np.tril(X, -1), -1, -2)


def _eye_like(M):
    return np.broadcast_to(np.eye(M.shape[-1]), M.shape)


def _check_factors(name, X, r):
    """The identities that define each factorization (unique up to the signs of Q's
    columns and of singular / eigen-vectors), and its values by NumPy where unique."""
    mT = lambda M: np.swapaxes(M, -1, -2)  # noqa: E731
    r = [o.detach().numpy() for o in (r if isinstance(r, tuple) else (r,))]
    atol = 1e-12
    if name.startswith("cholesky"):
        upper = name.endswith("upper")
        S = _read(X, "upper" if upper else "lower")
        (F,) = r
        Lf = mT(F) if upper else F
        np.testing.assert_array_equal(Lf, np.tril(Lf))
        assert np.all(np.diagonal(Lf, axis1=-2, axis2=-1) > 0)
        np.testing.assert_allclose(Lf @ mT(Lf), S, atol=atol)
        np.testing.assert_allclose(Lf, np.linalg.cholesky(S), atol=atol)  # unique
    elif name.startswith("qr"):
        Q, R = r
        np.testing.assert_allclose(Q @ R, X, atol=atol)
        np.testing.assert_allclose(mT(Q) @ Q, _eye_like(mT(Q) @ Q), atol=atol)
        np.testing.assert_array_equal(R, np.triu(R))
        m, n = X.shape[-2:]
        k = m if name == "qr_complete_wide" else min(m, n)
        assert Q.shape[-1] == k and R.shape[-2] == k
    elif name.startswith("eig"):
        S = _read(X, "upper" if name.endswith("upper") else "lower")
        w = r[0]
        assert np.all(np.diff(w, axis=-1) >= 0)  # ascending
        np.testing.assert_allclose(w, np.linalg.eigvalsh(S), atol=atol)
        np.testing.assert_allclose(w.sum(-1), np.trace(S, axis1=-2, axis2=-1), atol=atol)
        if len(r) == 2:
            V = r[1]
            np.testing.assert_allclose(S @ V, V * w[..., None, :], atol=atol)
            np.testing.assert_allclose(mT(V) @ V, _eye_like(V), atol=atol)
    else:  # svd, svdvals
        S = r[0] if len(r) == 1 else r[1]
        k = min(X.shape[-2:])
        assert S.shape[-1] == k and np.all(S >= 0) and np.all(np.diff(S, axis=-1) <= 0)
        np.testing.assert_allclose(S, np.linalg.svd(X, compute_uv=False), atol=atol)
        np.testing.assert_allclose((S ** 2).sum(-1), (X ** 2).sum((-2, -1)), atol=atol)
        if len(r) == 3:
            U, _, Vh = r
            np.testing.assert_allclose(mT(U) @ U, _eye_like(mT(U) @ U), atol=atol)
            np.testing.assert_allclose(Vh @ mT(Vh), _eye_like(Vh @ mT(Vh)), atol=atol)
            np.testing.assert_allclose((U[..., :, :k] * S[..., None, :]) @ Vh[..., :k, :], X,
                                       atol=atol)


@pytest.mark.parametrize("name,kind,fn,X", DECOMP_CASES, ids=[c[0] for c in DECOMP_CASES])
def test_values_and_gradients(name, kind, fn, X):
    """The factors satisfy their defining identities; the gradient of <G, f(A)> over
    basis-invariant parts f passes gradcheck (central differences along symmetric
    directions for the ops that read one triangle of a symmetric matrix); with torch, the
    values and that gradient are torch.linalg's."""
    A = cr.tensor(X, requires_grad=True)
    _check_factors(name, X, fn(linalg, A))
    ours = _parts_cr(kind, fn(linalg, A))
    Gs = [randn(*o.shape) for o in ours]

    def loss(M, m=linalg, tensor=cr.tensor):
        return sum((o * tensor(G)).sum() for o, G in zip(_parts_cr(kind, fn(m, M)), Gs))

    one_triangle = name.startswith(("cholesky", "eig"))
    structure = {0: "symmetric"} if one_triangle else None
    assert gradcheck(loss, (A,), structure=structure)
    if torch is None:
        return
    A = cr.tensor(X, requires_grad=True)
    At = torch.tensor(X, requires_grad=True)
    theirs = _parts_cr(kind, fn(torch.linalg, At))
    for o, th in zip(ours, theirs):
        np.testing.assert_allclose(o.detach().numpy(), th.detach().numpy(), atol=1e-12)
    loss(A).backward()
    loss(At, torch.linalg, torch.tensor).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), atol=1e-11)


def test_qr_mode_r_keeps_r_differentiable_and_matches_torch():
    X = randn(2, 5, 3)
    Q, R = linalg.qr(cr.tensor(X), mode="r")
    assert Q.shape == (0,)
    # R is the reduced mode's R (R^T R = X^T X, upper triangular)
    np.testing.assert_allclose(R.numpy(), linalg.qr(cr.tensor(X)).R.numpy(), atol=1e-14)
    np.testing.assert_allclose(R.mT.numpy() @ R.numpy(), X.swapaxes(-1, -2) @ X, atol=1e-12)
    # torch raises in backward for mode="r"; here R has the gradient of the reduced mode's R
    G = randn(2, 3, 3)
    g_r = grad_of(lambda A: (linalg.qr(A, mode="r").R * cr.tensor(G)).sum(), X)
    np.testing.assert_allclose(g_r, grad_of(lambda A: (linalg.qr(A).R * cr.tensor(G)).sum(), X),
                               atol=1e-14)
    assert gradcheck(lambda A: linalg.qr(A, mode="r").R, (cr.tensor(X, requires_grad=True),))
    if torch is None:
        return
    Qt, Rt = torch.linalg.qr(torch.tensor(X), mode="r")
    assert Q.shape == Qt.shape == (0,)
    np.testing.assert_allclose(R.numpy(), Rt.numpy(), atol=1e-12)
    At = torch.tensor(X, requires_grad=True)
    (torch.linalg.qr(At).R * torch.tensor(G)).sum().backward()
    np.testing.assert_allclose(g_r, At.grad.numpy(), atol=1e-12)


def test_graph_nodes_are_named_as_in_torch():
    X = cr.tensor(spd(3, 3), requires_grad=True)
    assert linalg.cholesky(X).grad_fn.name() == "LinalgCholeskyExBackward0"
    assert linalg.qr(X).Q.grad_fn.name() == "LinalgQrBackward0"
    assert linalg.eigh(X).eigenvalues.grad_fn.name() == "LinalgEighBackward0"
    assert linalg.eigvalsh(X).grad_fn.name() == "LinalgEighBackward0"
    assert linalg.svd(X).S.grad_fn.name() == "LinalgSvdBackward0"
    assert linalg.svdvals(X).grad_fn.name() == "LinalgSvdBackward0"
    with cr.no_grad():
        assert linalg.svdvals(X).grad_fn is None and linalg.eigvalsh(X).grad_fn is None


# --- 2. repeated eigenvalues and singular values --------------------------------------


def test_svdvals_at_identity_has_gradient_identity():
    # sum(svdvals(A)) is the nuclear norm; at A = I (all singular values 1) its gradient is
    # the polar factor U V^T = I; at 2Q (Q orthogonal) it is Q.
    np.testing.assert_allclose(grad_of(lambda A: linalg.svdvals(A).sum(), np.eye(4)),
                               np.eye(4), atol=1e-14)
    Q = orthogonal(3)
    np.testing.assert_allclose(grad_of(lambda A: linalg.svdvals(A).sum(), 2 * Q), Q,
                               atol=1e-12)
    batch = np.stack([np.eye(3), 2 * Q])
    np.testing.assert_allclose(grad_of(lambda A: linalg.svdvals(A).sum(), batch),
                               np.stack([np.eye(3), Q]), atol=1e-12)


def test_eigvalsh_with_repeated_eigenvalues_has_finite_right_gradient():
    Q = orthogonal(3)
    A = Q @ np.diag([2.0, 2.0, 5.0]) @ Q.T
    # sum of eigenvalues = trace: gradient I
    np.testing.assert_allclose(grad_of(lambda X: linalg.eigvalsh(X).sum(), A), np.eye(3),
                               atol=1e-12)
    # weights equal on the repeated pair: gradient sum_k c_k P_k = Q diag(c) Q^T
    c = np.array([3.0, 3.0, 7.0])
    expected = Q @ np.diag(c) @ Q.T
    g = grad_of(lambda X: (linalg.eigvalsh(X) * cr.tensor(c)).sum(), A)
    np.testing.assert_allclose(g, expected, atol=1e-12)
    # the same through eigh when only the eigenvalues are used
    g = grad_of(lambda X: (linalg.eigh(X).eigenvalues * cr.tensor(c)).sum(), A)
    np.testing.assert_allclose(g, expected, atol=1e-12)
    # identity, batched: finite (V diag(c) V^T with LAPACK's V)
    g = grad_of(lambda X: (linalg.eigvalsh(X) * cr.tensor(c)).sum(), np.stack([np.eye(3)] * 2))
    assert np.all(np.isfinite(g))


def _repeated():
    Q = orthogonal(3)
    return Q @ np.diag([2.0, 2.0, 5.0]) @ Q.T


def test_eigenvectors_of_repeated_eigenvalue_raise():
    w = cr.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"eigenvalues 0 and 1 are \(nearly\) equal"):
        grad_of(lambda X: (linalg.eigh(X).eigenvectors[:, 0] * w).sum(), _repeated())
    # also basis-invariant uses of those eigenvectors (documented): V f(L) V^T needs the
    # limit of a divided difference that the cotangent does not carry (torch: nan)
    with pytest.raises(RuntimeError, match="depends on their eigenvectors"):
        grad_of(lambda X: (lambda r: ((r[1] * r[0].exp()) @ r[1].mT).sum())(linalg.eigh(X)),
                _repeated())
    with pytest.raises(RuntimeError, match=r"batch index \(1,\)"):
        grad_of(lambda X: linalg.eigh(X).eigenvectors[..., 0].sum(),
                np.stack([symmetric(3, 3), np.eye(3)]))


def test_eigenvector_of_simple_eigenvalue_next_to_repeated_ones_is_exact():
    A = _repeated()

    def f(X):
        v = linalg.eigh(X).eigenvectors[..., :, 2:3]  # eigenvalue 5: simple
        return (v @ v.mT * cr.tensor(np.arange(9.0).reshape(3, 3))).sum()

    g = grad_of(f, A)
    D = symmetric(3, 3)
    eps = 1e-6
    with cr.no_grad():
        numerical = (f(cr.tensor(A + eps * D)).item() - f(cr.tensor(A - eps * D)).item()) / (
            2 * eps)
    assert np.isclose(np.sum(g * D), numerical, rtol=1e-6, atol=1e-8)


def test_singular_vectors_of_repeated_or_zero_singular_values_raise():
    with pytest.raises(RuntimeError, match="singular values 0 and 1 are"):
        grad_of(lambda A: (lambda r: (r.U @ r.Vh).sum())(linalg.svd(A)), np.eye(3))
    rank_one = np.outer(randn(4), randn(3))
    with pytest.raises(RuntimeError, match="singular values 1 and 2"):
        grad_of(lambda A: linalg.svd(A, full_matrices=False).U.sum(), rank_one)
    # singular values alone stay finite there
    assert np.all(np.isfinite(grad_of(lambda A: linalg.svdvals(A).sum(), rank_one)))


def test_full_matrices_and_complete_factors():
    X = randn(5, 2)
    # the extra columns of U: a basis-invariant loss has a gradient, U2 U2^T = I - U1 U1^T
    G = randn(5, 5)

    def via_full(A):
        U2 = linalg.svd(A).U[:, 2:]
        return (U2 @ U2.mT * cr.tensor(G)).sum()

    def via_thin(A):
        U1 = linalg.svd(A, full_matrices=False).U
        return -(U1 @ U1.mT * cr.tensor(G)).sum()

    np.testing.assert_allclose(grad_of(via_full, X), grad_of(via_thin, X), atol=1e-12)
    with pytest.raises(RuntimeError, match="choice of the last 3 columns of U"):
        grad_of(lambda A: linalg.svd(A).U[:, 2:].sum(), X)
    with pytest.raises(RuntimeError, match="choice of the last 3 rows of Vh"):
        grad_of(lambda A: linalg.svd(A).Vh[2:].sum(), X.T)
    with pytest.raises(RuntimeError, match=r"mode='complete'.*last 3 columns of Q"):
        grad_of(lambda A: linalg.qr(A, mode="complete").Q[:, 2:].sum(), X)


def test_qr_of_rank_deficient_matrix_raises_in_backward():
    A = np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 1.0], [3.0, 6.0, 5.0]])  # column 1 = 2 column 0
    with pytest.raises(RuntimeError, match=r"R\[1, 1\] = .* is \(nearly\) zero"):
        grad_of(lambda X: linalg.qr(X).R.sum(), A)


def test_jvp_at_repeated_eigenvalues():
    L, V = EIGH_OUT = decomp.EIGH.forward(np.diag([1.0, 1.0, 3.0]), "L")
    jvp = decomp.EIGH.jvp_rules["A"][0]
    # a tangent that keeps the eigenspace: finite, no rotation
    dL, dV = jvp(RAW, np.diag([1.0, 1.0, 0.0]), EIGH_OUT, "L")
    np.testing.assert_allclose(dL, [1.0, 1.0, 0.0])
    np.testing.assert_allclose(dV, 0.0)
    # a tangent that splits it: the eigenvalue tangent stays finite, the eigenvectors of the
    # repeated pair have none (nan), the simple one does
    T = symmetric(3, 3)
    dL, dV = jvp(RAW, T, EIGH_OUT, "L")
    assert np.all(np.isfinite(dL))
    assert np.all(np.isnan(dV[:, :2])) and np.all(np.isfinite(dV[:, 2]))


# --- 3. JVP rules: central differences and adjointness --------------------------------

JVP_CASES = [
    ("cholesky", decomp.CHOLESKY, (False,), spd(2, 3, 3), True),
    ("cholesky_upper", decomp.CHOLESKY, (True,), spd(2, 3, 3), True),
    ("qr_tall", decomp.QR, ("reduced",), randn(2, 4, 3), False),
    ("qr_square", decomp.QR, ("reduced",), randn(3, 3), False),
    ("qr_wide", decomp.QR, ("reduced",), randn(2, 3, 5), False),
    ("qr_complete_tall", decomp.QR, ("complete",), randn(2, 4, 3), False),
    ("qr_complete_wide", decomp.QR, ("complete",), randn(2, 4), False),
    ("eigh", decomp.EIGH, ("L",), symmetric(2, 4, 4), True),
    ("eigh_upper", decomp.EIGH, ("U",), symmetric(3, 3), True),
    ("svd_tall", decomp.SVD, (False,), randn(2, 4, 3), False),
    ("svd_square", decomp.SVD, (False,), randn(3, 3), False),
    ("svd_wide", decomp.SVD, (False,), randn(2, 3, 5), False),
    ("svd_full_tall", decomp.SVD, (True,), randn(2, 4, 3), False),
    ("svd_full_wide", decomp.SVD, (True,), randn(3, 4), False),
]


def _rule_args(op, params, A, out, attrs):
    pool = {"A": A, "out": out, "A_shape": A.shape, **dict(zip(op.attrs, attrs))}
    return [pool[p] for p in params]


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _jvp(op, A, t, attrs):
    out = op.forward(A, *attrs)
    total = None
    for name in op.inputs:  # one input here; summed over inputs in general
        fn, params = op.jvp_rules[name]
        part = _as_tuple(fn(RAW, t, *_rule_args(op, params, A, out, attrs)))
        total = part if total is None else tuple(a + b for a, b in zip(total, part))
    return out, total


@pytest.mark.parametrize("name,op,attrs,A,symmetric_input", JVP_CASES,
                         ids=[c[0] for c in JVP_CASES])
def test_jvp_matches_central_differences(name, op, attrs, A, symmetric_input):
    t = randn(*A.shape)
    if symmetric_input:  # the op reads one triangle: differences along symmetric directions
        t = t + np.swapaxes(t, -1, -2)
    _, jv = _jvp(op, A, t, attrs)
    eps = 1e-6
    plus = _as_tuple(op.forward(A + eps * t, *attrs))
    minus = _as_tuple(op.forward(A - eps * t, *attrs))
    for j, p, m in zip(jv, plus, minus):
        np.testing.assert_allclose(j, (p - m) / (2 * eps), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name,op,attrs,A,symmetric_input", JVP_CASES,
                         ids=[c[0] for c in JVP_CASES])
def test_jvp_and_vjp_rules_are_adjoint(name, op, attrs, A, symmetric_input):
    v = randn(*A.shape)  # any direction: the symmetric ops read sym(v) in both rules
    out, jv = _jvp(op, A, v, attrs)
    u = tuple(randn(*o.shape) for o in _as_tuple(out))
    fn, params = op.vjp_rules["A"]
    g = u if op.nout > 1 else u[0]
    vjp = fn(RAW, g, *_rule_args(op, params, A, out, attrs))
    lhs = sum(np.sum(a * b) for a, b in zip(u, jv))
    assert np.isclose(lhs, np.sum(vjp * v), rtol=1e-10, atol=1e-12)


def test_solve_triangular_helper():
    L = np.tril(randn(2, 3, 3)) + 3 * np.eye(3)
    B = randn(2, 3, 4)
    C = randn(2, 4, 3)
    solve = RAW.solve_triangular
    np.testing.assert_allclose(L @ solve(L, B, upper=False), B, atol=1e-12)
    np.testing.assert_allclose(solve(L, C, upper=False, left=False) @ L, C, atol=1e-12)
    U = np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(U[0] @ solve(U[0] + np.tril(randn(3, 3), -1), B, upper=True), B,
                               atol=1e-12)  # one matrix, batched right side; one triangle read
    unit = np.tril(L[0], -1) + np.eye(3)
    np.testing.assert_allclose(unit @ solve(L[0], B[0], upper=False, unitriangular=True), B[0],
                               atol=1e-12)


# --- 4. float32 -----------------------------------------------------------------------

F32_CASES = [
    ("cholesky", lambda A: linalg.cholesky(A @ A.mT + 3 * cr.eye(3, dtype=A.dtype)).sum(),
     randn(2, 3, 3)),
    ("qr", lambda A: sum(o.sum() for o in linalg.qr(A)), randn(2, 4, 3)),
    ("qr_wide", lambda A: sum(o.sum() for o in linalg.qr(A)), randn(2, 3, 4)),
    ("eigh", lambda A: (lambda r: r[0].sum() + (r[1] * r[1] * r[1]).abs().sum())(
        linalg.eigh(A + A.mT)), randn(2, 3, 3)),
    ("eigvalsh", lambda A: (linalg.eigvalsh(A + A.mT) ** 2).sum(), randn(2, 3, 3)),
    ("svd", lambda A: (lambda r: r.S.sum() + (r.U[..., :3] @ r.Vh).sum())(linalg.svd(A)),
     randn(2, 4, 3)),
    ("svdvals", lambda A: (linalg.svdvals(A) ** 2).sum(), randn(2, 3, 4)),
]


@pytest.mark.parametrize("name,fn,X", F32_CASES, ids=[c[0] for c in F32_CASES])
def test_float32_is_close_to_float64(name, fn, X):
    results = {}
    for dtype in (np.float32, np.float64):
        A = cr.tensor(X.astype(dtype), requires_grad=True)
        y = fn(A)
        y.backward()
        assert y.dtype == dtype and A.grad.dtype == dtype
        results[dtype] = (y.item(), A.grad.numpy())
    (y32, g32), (y64, g64) = results[np.float32], results[np.float64]
    assert np.isclose(y32, y64, rtol=1e-5)
    np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4)


# --- 5. errors ------------------------------------------------------------------------


@pytest.mark.parametrize("fn,shape,name", [
    (linalg.cholesky, (3, 2), "cholesky"),
    (linalg.cholesky, (3,), "cholesky"),
    (linalg.eigh, (2, 3, 4), "eigh"),
    (linalg.eigvalsh, (4,), "eigvalsh"),
    (linalg.qr, (5,), "qr"),
    (linalg.svd, (), "svd"),
    (linalg.svdvals, (3,), "svdvals"),
])
def test_bad_shapes_raise_value_error_naming_op_and_shape(fn, shape, name):
    with pytest.raises(ValueError, match=rf"linalg\.{name}: .*{re_shape(shape)}"):
        fn(cr.tensor(np.zeros(shape)))


def re_shape(shape):
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


def test_other_errors():
    with pytest.raises(TypeError, match="float32 or float64"):
        linalg.svd(cr.tensor(np.ones((2, 2), dtype=np.int64)))
    with pytest.raises(ValueError, match="mode"):
        linalg.qr(cr.tensor(randn(3, 3)), mode="full")
    with pytest.raises(ValueError, match="UPLO"):
        linalg.eigh(cr.tensor(symmetric(3, 3)), UPLO="X")
    bad = np.stack([np.eye(2), np.array([[1.0, 2.0], [2.0, 1.0]])])
    with pytest.raises(RuntimeError, match=r"leading minor of order 2 of the matrix at batch "
                                           r"index \(1,\) is not positive-definite") as info:
        linalg.cholesky(cr.tensor(bad))
    assert isinstance(info.value, np.linalg.LinAlgError)
    # only the lower triangle is read: garbage above the diagonal is ignored
    A = spd(3, 3)
    np.testing.assert_allclose(linalg.cholesky(cr.tensor(with_noise(A, "upper"))).numpy(),
                               np.linalg.cholesky(A))
