"""PyTorch's top-level linear algebra (chainrule.kron, addmm, cholesky_inverse, ...) and the
rest of torch.linalg (lu, lu_factor, lu_solve, eig, vander, householder_product, ...):
values against NumPy/SciPy, gradients by gradcheck, and against torch where installed."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import chainrule as cr
from chainrule.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # PyTorch is optional: the comparisons with it are skipped
    torch = None

L = cr.linalg
RNG = np.random.default_rng(7)


def t(a, grad=True):
    return cr.tensor(np.asarray(a, dtype=float), requires_grad=grad)


W = RNG.standard_normal((3, 3)) + 3 * np.eye(3)
LOWER = np.tril(RNG.standard_normal((3, 3))) + 3 * np.eye(3)
B = RNG.standard_normal((3, 2))


# --- values against NumPy / SciPy, gradients by gradcheck ---------------------------------

CASES = {
    "inverse": (lambda a: cr.inverse(a), lambda a: np.linalg.inv(a), [W]),
    "det": (cr.det, np.linalg.det, [W]),
    "logdet": (cr.logdet, lambda a: np.linalg.slogdet(a)[1], [W @ W.T]),
    "slogdet": (lambda a: cr.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1], [W]),
    "cholesky_upper": (lambda a: cr.cholesky(a @ a.mT, upper=True),
                       lambda a: np.linalg.cholesky(a @ a.T).T, [W]),
    "cholesky_inverse": (cr.cholesky_inverse, lambda l: np.linalg.inv(l @ l.T), [LOWER]),
    "cholesky_inverse_upper": (lambda u: cr.cholesky_inverse(u, upper=True),
                               lambda u: np.linalg.inv(u.T @ u), [LOWER.T]),
    "triangular_solve": (lambda b, a: cr.triangular_solve(b, a, upper=False)[0],
                         lambda b, a: np.linalg.solve(np.tril(a), b), [B, LOWER]),
    "triangular_solve_T": (lambda b, a: cr.triangular_solve(b, a, upper=False,
                                                            transpose=True).solution,
                           lambda b, a: np.linalg.solve(np.tril(a).T, b), [B, LOWER]),
    "lu_solve": (lambda a, b: cr.lu_solve(b, *cr.lu(a)), np.linalg.solve, [W, B]),
    "pinverse": (cr.pinverse, np.linalg.pinv, [RNG.standard_normal((3, 4))]),
    "kron": (cr.kron, np.kron, [RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2, 2))]),
    "tensordot": (lambda a, b: cr.tensordot(a, b, dims=([1, 0], [0, 2])),
                  lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])),
                  [RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 5, 2))]),
    "tensordot_int": (lambda a, b: cr.tensordot(a, b, 2), lambda a, b: np.tensordot(a, b, 2),
                      [RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4, 5))]),
    "cross_default_dim": (cr.cross, lambda a, b: np.cross(a, b, axis=0),
                          [RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))]),
    "cdist": (cr.cdist, lambda a, b: np.linalg.norm(a[:, None] - b[None], axis=-1),
              [RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))]),
    "cdist_p1": (lambda a, b: cr.cdist(a, b, p=1.0),
                 lambda a, b: np.abs(a[:, None] - b[None]).sum(-1),
                 [RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))]),
    "addmm": (lambda i, a, b: cr.addmm(i, a, b, beta=0.5, alpha=2),
              lambda i, a, b: 0.5 * i + 2 * a @ b,
              [RNG.standard_normal(3), RNG.standard_normal((2, 4)), RNG.standard_normal((4, 3))]),
    "addmv": (lambda i, a, v: cr.addmv(i, a, v, alpha=-1), lambda i, a, v: i - a @ v,
              [RNG.standard_normal(2), RNG.standard_normal((2, 4)), RNG.standard_normal(4)]),
    "addr": (cr.addr, lambda i, a, b: i + np.outer(a, b),
             [RNG.standard_normal((2, 4)), RNG.standard_normal(2), RNG.standard_normal(4)]),
    "addbmm": (cr.addbmm, lambda i, a, b: i + (a @ b).sum(0),
               [RNG.standard_normal((2, 3)), RNG.standard_normal((5, 2, 4)),
                RNG.standard_normal((5, 4, 3))]),
    "baddbmm": (lambda i, a, b: cr.baddbmm(i, a, b, beta=2), lambda i, a, b: 2 * i + a @ b,
                [RNG.standard_normal((5, 2, 3)), RNG.standard_normal((5, 2, 4)),
                 RNG.standard_normal((5, 4, 3))]),
    "chain_matmul": (cr.chain_matmul, lambda a, b, c: a @ b @ c,
                     [RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4)),
                      RNG.standard_normal((4, 2))]),
    "diag_embed": (lambda a: cr.diag_embed(a, 1, 0, 2),
                   lambda a: np.stack([np.diag(r, 1) for r in a], 1),
                   [RNG.standard_normal((2, 3))]),
    "diag_embed_negative": (lambda a: cr.diag_embed(a, -2),
                            lambda a: np.stack([np.diag(r, -2) for r in a]),
                            [RNG.standard_normal((2, 3))]),
    "diagflat": (lambda a: cr.diagflat(a, -1), lambda a: np.diagflat(a, -1),
                 [RNG.standard_normal((2, 2))]),
    "block_diag": (cr.block_diag, lambda a, b, c: sl.block_diag(a, b, c),
                   [RNG.standard_normal((2, 3)), RNG.standard_normal(3),
                    RNG.standard_normal((1, 2))]),
    "cartesian_prod": (cr.cartesian_prod,
                       lambda a, b: np.array([[x, y] for x in a for y in b]),
                       [RNG.standard_normal(3), RNG.standard_normal(2)]),
    "vdot": (cr.vdot, np.vdot, [RNG.standard_normal(3), RNG.standard_normal(3)]),
    "trace_batched": (cr.trace, lambda a: np.trace(a, axis1=-2, axis2=-1),
                      [RNG.standard_normal((2, 3, 3))]),
    "matrix_power": (lambda a: cr.matrix_power(a, 3), lambda a: a @ a @ a, [W]),
    "lu_unpack_L": (lambda a: cr.lu_unpack(*L.lu_factor(a)).L,
                    lambda a: sl.lu(a)[1], [RNG.standard_normal((5, 3))]),
    "lu_unpack_U": (lambda a: cr.lu_unpack(*L.lu_factor(a)).U,
                    lambda a: sl.lu(a)[2], [RNG.standard_normal((3, 5))]),
    "linalg.lu_U": (lambda a: L.lu(a).U, lambda a: sl.lu(a)[2], [RNG.standard_normal((4, 4))]),
    "linalg.lu_factor": (lambda a: L.lu_factor(a).LU, lambda a: sl.lu_factor(a)[0],
                         [RNG.standard_normal((4, 4))]),
    "linalg.vander": (lambda x: L.vander(x, N=4), lambda x: np.vander(x, 4, increasing=True),
                      [RNG.standard_normal(3)]),
    "vander": (lambda x: cr.vander(x, N=4), lambda x: np.vander(x, 4), [RNG.standard_normal(3)]),
    "vander_increasing": (lambda x: cr.vander(x, increasing=True),
                          lambda x: np.vander(x, increasing=True), [RNG.standard_normal(3)]),
    "linalg.vecdot": (lambda a, b: L.vecdot(a, b, dim=0), lambda a, b: (a * b).sum(0),
                      [RNG.standard_normal((3, 2)), RNG.standard_normal((3, 1))]),
    "linalg.tensorinv": (lambda a: L.tensorinv(a, 1), lambda a: np.linalg.tensorinv(a, 1),
                         [RNG.standard_normal((6, 2, 3)) + 3 * np.eye(6).reshape(6, 2, 3)]),
    "linalg.tensorsolve": (L.tensorsolve, np.linalg.tensorsolve,
                           [RNG.standard_normal((2, 3, 6)) + 3 * np.eye(6).reshape(2, 3, 6),
                            RNG.standard_normal((2, 3))]),
    "linalg.diagonal": (lambda a: L.diagonal(a, offset=1),
                        lambda a: np.diagonal(a, 1, -2, -1), [RNG.standard_normal((2, 3, 4))]),
    "linalg.eigvals": (L.eigvals, lambda a: np.linalg.eigvals(a),
                       [np.array([[2.0, 1.0, 0.3], [0.0, -1.0, 0.5], [0.2, 0.1, 4.0]])]),
    "linalg.lu_factor_wide": (lambda a: L.lu_factor(a).LU, lambda a: sl.lu_factor(a)[0],
                              [RNG.standard_normal((3, 5))]),
}

# the same op in PyTorch (given the torch module), for the cases also compared with it
TORCH = {
    **{name: (lambda tm, name=name: getattr(tm, name)) for name in (
        "inverse", "det", "logdet", "pinverse", "kron", "cdist", "addr", "addbmm",
        "chain_matmul", "block_diag", "cartesian_prod", "vdot")},
    "linalg.vander": lambda tm: lambda x: tm.linalg.vander(x, N=4),
    "linalg.lu_factor": lambda tm: lambda a: tm.linalg.lu_factor(a).LU,
    "linalg.lu_factor_wide": lambda tm: lambda a: tm.linalg.lu_factor(a).LU,
    "linalg.eigvals": lambda tm: lambda a: tm.linalg.eigvals(a).real,
}


def _compare_with_torch(ours, theirs, arrays):
    """Values, and the gradients of <cotangent, output>, agree with PyTorch's."""
    xs = [t(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    cot = RNG.standard_normal(tuple(out.shape))
    ours_g = cr.autograd.grad((out * cr.tensor(cot)).sum(), xs)
    ref_g = torch.autograd.grad((ref * torch.tensor(cot)).sum(), ts)
    for g, r in zip(ours_g, ref_g):
        np.testing.assert_allclose(g.numpy(), r.numpy(), atol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_value_against_numpy_and_gradcheck(name):
    ours, reference, arrays = CASES[name]
    out = ours(*[t(a, grad=False) for a in arrays])
    np.testing.assert_allclose(out.numpy(), reference(*arrays), rtol=1e-10, atol=1e-12)
    float_inputs = tuple(t(a) for a in arrays)
    assert gradcheck(ours, float_inputs)
    if torch is not None and name in TORCH:
        _compare_with_torch(ours, TORCH[name](torch), arrays)


@pytest.mark.parametrize("name", ["kron", "addmm", "diag_embed", "linalg.vander", "vander",
                                  "linalg.tensorinv", "cholesky_inverse", "lu_solve"])
def test_second_order(name):
    ours, _, arrays = CASES[name]
    assert gradgradcheck(ours, tuple(t(a) for a in arrays))


def test_vander_edges_as_torch():
    # integer and bool vectors give int64 (NumPy's vander keeps int32); N = 0 an empty
    # matrix; a matrix or a negative N raise, naming the op
    assert cr.vander(cr.tensor([1, 2, 3], dtype=cr.int32)).dtype == cr.int64
    assert cr.vander(cr.tensor([True, False])).tolist() == [[1, 1], [0, 1]]
    assert tuple(cr.vander(cr.tensor([1.0, 2.0]), N=0).shape) == (2, 0)
    assert cr.vander(cr.tensor([2.0, 3.0]), N=1).tolist() == [[1.0], [1.0]]
    with pytest.raises(RuntimeError, match="vander: x must be a one-dimensional"):
        cr.vander(cr.ones(2, 2))
    with pytest.raises(RuntimeError, match="vander: N must be non-negative"):
        cr.vander(cr.ones(2), N=-1)
    x = cr.tensor([0.0, 2.0], requires_grad=True)
    cr.vander(x, N=4).sum().backward()  # d/dx (x^3 + x^2 + x + 1) = 3x^2 + 2x + 1
    assert x.grad.tolist() == [1.0, 17.0]


def test_householder_product_is_lapacks_orgqr():
    q, tau = sl.lapack.dgeqrf(RNG.standard_normal((5, 3)))[:2]
    Q = L.householder_product(t(q, False), t(tau, False))
    np.testing.assert_allclose(Q.numpy(), sl.lapack.dorgqr(q, tau)[0], atol=1e-14)
    # two of the three reflectors: LAPACK's orgqr with k = 2
    Q2 = L.householder_product(t(q, False), t(tau[:2], False))
    np.testing.assert_allclose(Q2.numpy(), sl.lapack.dorgqr(q, tau[:2])[0], atol=1e-14)
    assert gradcheck(L.householder_product, (t(q), t(tau[:2])))
    if torch is not None:
        _compare_with_torch(L.householder_product, torch.linalg.householder_product,
                            [q, tau[:2]])


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3), (2, 3, 3)])
def test_lu_factors_and_their_gradients(shape):
    A = t(RNG.standard_normal(shape))
    P, Lf, U = L.lu(A)
    np.testing.assert_allclose((P @ Lf @ U).detach().numpy(), A.detach().numpy(), atol=1e-14)
    assert gradcheck(lambda a: tuple(L.lu(a)[1:]), (A,), check_forward_ad=True)
    LU, piv = L.lu_factor(A)
    if len(shape) == 2:  # LAPACK's packed factors and 1-based pivots, as SciPy's (0-based)
        lu2, piv2 = sl.lu_factor(A.detach().numpy())
        np.testing.assert_allclose(LU.detach().numpy(), lu2, atol=1e-14)
        np.testing.assert_array_equal(piv.numpy(), piv2 + 1)
    assert piv.dtype == np.int32
    P2, L2, U2 = cr.lu_unpack(LU, piv)
    np.testing.assert_array_equal(P2.numpy(), P.numpy())
    np.testing.assert_allclose((L2 - Lf).detach().numpy(), 0, atol=1e-15)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_every_side_and_transpose(left, adjoint):
    A, Bm = t(W), t(B if left else B.T)
    X = L.lu_solve(*L.lu_factor(A), Bm, left=left, adjoint=adjoint)
    M = W.T if adjoint else W
    expected = np.linalg.solve(M, B) if left else np.linalg.solve(M.T, B).T
    np.testing.assert_allclose(X.detach().numpy(), expected, atol=1e-13)
    assert gradcheck(lambda a, b: L.lu_solve(*L.lu_factor(a), b, left=left, adjoint=adjoint),
                     (A, Bm))


def test_eig_of_a_real_spectrum_and_its_errors():
    S = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    A = t(S @ np.diag([1.0, 2.0, -0.5, 3.0]) @ np.linalg.inv(S))
    w, V = L.eig(A)
    np.testing.assert_allclose(np.sort(w.detach().numpy()), [-0.5, 1.0, 2.0, 3.0], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(V.detach().numpy(), axis=0), 1.0)
    np.testing.assert_allclose((A @ V - V * w).detach().numpy(), 0, atol=1e-12)
    assert gradcheck(lambda a: L.eig(a).eigenvectors ** 2, (A,), check_forward_ad=True)
    with pytest.raises(ValueError, match="complex eigenvalues"):
        L.eig(cr.tensor([[0.0, -1.0], [1.0, 0.0]]))  # a rotation: eigenvalues +-i
    # repeated eigenvalue and a loss of its eigenvectors: a clear error, not nan
    D = t(np.diag([1.0, 1.0, 2.0]) + np.triu(np.ones((3, 3)), 1) * 0.0)
    with pytest.raises(RuntimeError, match="eigenvalues 0 and 1"):
        (L.eig(D).eigenvectors ** 2 * cr.tensor(RNG.standard_normal((3, 3)))).sum().backward()


def test_errors_name_the_function_and_shapes():
    with pytest.raises(ValueError, match=r"linalg.lu_solve: LU must be a batch of square"):
        L.lu_solve(cr.randn(2, 3), cr.tensor(np.array([1, 2], dtype=np.int32)), cr.randn(2, 1))
    with pytest.raises(RuntimeError, match="tensordot: contracted dimensions need to match"):
        cr.tensordot(cr.randn(2, 3), cr.randn(4, 2), dims=1)
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        cr.cross(cr.randn(2, 4), cr.randn(2, 4))
    with pytest.raises(ValueError, match="linalg.tensorinv"):
        L.tensorinv(cr.randn(2, 3, 4), 1)
    with pytest.raises(RuntimeError, match="block_diag: Input tensors must have 2 or fewer"):
        cr.block_diag(cr.randn(2, 2, 2))


def test_cholesky_solve_gradient_is_zero_on_the_unread_triangle():
    # cholesky_solve reads only the lower triangle of L: the true gradient is zero above
    # the diagonal (PyTorch's is not: it differentiates as if L were full)
    Lt = t(LOWER + np.triu(np.ones((3, 3)), 1))  # garbage above the diagonal
    cr.cholesky_solve(cr.tensor(B), Lt).sum().backward()
    assert np.all(np.triu(Lt.grad.numpy(), 1) == 0)
    expected = cr.cholesky_solve(cr.tensor(B), t(LOWER, False))
    np.testing.assert_allclose(cr.cholesky_solve(cr.tensor(B), Lt).detach().numpy(),
                               expected.numpy())


def test_a_0d_class_index_keeps_its_dtype():
    # cross_entropy's target is an index: beside 1-D logits it must not be promoted to
    # float (that made it a probability target: a silently wrong loss)
    x = np.array([0.1, 0.5, -0.3, 2.0, 1.0])
    loss = cr.cross_entropy(cr.tensor(x), cr.tensor(3))
    assert float(loss) == pytest.approx(np.log(np.exp(x).sum()) - x[3])
    # arithmetic still promotes a 0-d operand to the other's dtype, as PyTorch
    assert (cr.tensor(3) * cr.ones(2, dtype=cr.float32)).dtype == np.float32


def test_tensor_methods():
    A = t(W, False)
    np.testing.assert_allclose(A.inverse().numpy(), np.linalg.inv(W))
    assert float(A.det()) == pytest.approx(np.linalg.det(W))
    np.testing.assert_allclose(A.kron(A).numpy(), np.kron(W, W))
    np.testing.assert_allclose(A.matrix_power(2).numpy(), W @ W)
    np.testing.assert_allclose(cr.tensor(np.zeros(3)).addmv(A, cr.ones(3)).numpy(), W.sum(1))


def test_ldl_factor_and_solve_are_lapacks_and_refuse_gradients():
    A = RNG.standard_normal((2, 4, 4))
    A = A + np.swapaxes(A, -1, -2)
    LD, piv = L.ldl_factor(t(A, False))
    for b in range(2):  # LAPACK's sytrf, lower triangle, as PyTorch
        ldu, ipiv, _ = sl.lapack.dsytrf(A[b], lower=1)
        np.testing.assert_allclose(LD.numpy()[b], np.tril(ldu))
        np.testing.assert_array_equal(piv.numpy()[b], ipiv)
    assert piv.dtype == np.int32
    Bm = RNG.standard_normal((2, 4, 3))
    np.testing.assert_allclose(L.ldl_solve(LD, piv, t(Bm, False)).numpy(),
                               np.linalg.solve(A, Bm), atol=1e-12)
    assert L.ldl_factor_ex(t(A, False)).info.numpy().tolist() == [0, 0]
    with pytest.raises(NotImplementedError, match="ldl_factor: the derivative is not"):
        L.ldl_factor(t(A))
    with cr.no_grad():  # without grad mode the factorization runs
        assert L.ldl_factor(t(A)).LD.shape == (2, 4, 4)
    if torch is not None:
        ref = torch.linalg.ldl_factor(torch.tensor(A))
        np.testing.assert_allclose(LD.numpy(), ref.LD.numpy())
        np.testing.assert_array_equal(piv.numpy(), ref.pivots.numpy())


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_is_lapacks(left, transpose):
    qr, tau = sl.lapack.dgeqrf(RNG.standard_normal((5, 3)))[:2]
    C = RNG.standard_normal((5, 4)) if left else RNG.standard_normal((4, 5))
    ref = sl.lapack.dormqr("L" if left else "R", "T" if transpose else "N", qr, tau, C,
                           lwork=64)[0]
    ours = cr.ormqr(t(qr, False), t(tau, False), t(C, False), left=left, transpose=transpose)
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-13)
    assert gradcheck(lambda a, b, c: cr.ormqr(a, b, c, left=left, transpose=transpose),
                     (t(qr), t(tau), t(C)))


def test_svd_and_pca_lowrank_are_exact_truncations():
    A = RNG.standard_normal((8, 5))
    U, S, V = cr.svd_lowrank(t(A, False), q=2)
    s = np.linalg.svd(A, compute_uv=False)
    np.testing.assert_allclose(S.numpy(), s[:2])
    assert U.shape == (8, 2) and V.shape == (5, 2)
    _, S2, _ = cr.pca_lowrank(t(A, False), q=3)
    np.testing.assert_allclose(S2.numpy(),
                               np.linalg.svd(A - A.mean(0), compute_uv=False)[:3])


def test_inv_ex_and_cholesky_ex_report_failures_in_info():
    # PyTorch's *_ex: a failing matrix gives info > 0 (LAPACK's index) and no error; the
    # others of the batch are computed as usual; check_errors=True raises
    A = cr.tensor([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    r = cr.linalg.inv_ex(A)
    np.testing.assert_array_equal(r.info.numpy(), [2, 0])  # the second pivot of LU is 0
    np.testing.assert_allclose(r.inverse[1].numpy(), np.linalg.inv([[2.0, 1.0], [1.0, 3.0]]),
                               rtol=1e-14)
    assert np.isnan(r.inverse[0].numpy()).all()
    with pytest.raises(Exception, match="singular"):
        cr.linalg.inv_ex(A, check_errors=True)
    S = cr.tensor([[[1.0, 2.0], [2.0, 1.0]], [[4.0, 2.0], [2.0, 3.0]]])
    c = cr.linalg.cholesky_ex(S)
    np.testing.assert_array_equal(c.info.numpy(), [2, 0])  # the 2x2 minor is not PD
    np.testing.assert_allclose(c.L[1].numpy(), np.linalg.cholesky([[4.0, 2.0], [2.0, 3.0]]),
                               rtol=1e-14)
    ok = cr.linalg.cholesky_ex(S[1:])
    assert ok.info.numpy().tolist() == [0]
    empty = cr.linalg.inv_ex(cr.zeros(2, 0, 0))  # a batch of 0 x 0 matrices
    assert empty.inverse.shape == (2, 0, 0) and empty.info.numpy().tolist() == [0, 0]
