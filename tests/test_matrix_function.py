"""Matrix functions with gradients that stay right at repeated eigenvalues (issue 13):
chainrule.linalg.matrix_function, sqrtm, logm, expm_sym, powm.

At matrices with exactly repeated eigenvalues (the identity, a rotated projector, equal
diagonal blocks) the gradient must be finite and agree with central differences along
symmetric directions, where ``eigh`` followed by ``V diag(f) V^T`` cannot be differentiated.
Values are compared with SciPy, first and second derivatives with gradcheck /
gradgradcheck, the divided differences at eigenvalues 1e-9 apart with mpmath.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.linalg as sl

import chainrule as cr
import chainrule.autograd.forward_ad as fwAD
from chainrule.autograd import grad, gradcheck, gradgradcheck

linalg = cr.linalg
RNG = np.random.default_rng(1313)


def _rotation(n, seed=0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    return q


def _sym_direction(n, seed=1):
    e = np.random.default_rng(seed).standard_normal((n, n))
    return e + e.T


def _exactly_symmetric(A):
    return 0.5 * (A + A.T)


Q = _rotation(3)
BLOCK = np.array([[2.0, 0.5], [0.5, 1.5]])
REPEATED = {
    "identity": 2.0 * np.eye(3),
    "projector": _exactly_symmetric(Q @ np.diag([1.0, 1.0, 0.0]) @ Q.T),
    "equal_blocks": np.block([[BLOCK, np.zeros((2, 2))], [np.zeros((2, 2)), BLOCK]]),
}


def _tanh_df(x):
    return 1.0 - x.tanh() ** 2


# name -> (chainrule function, SciPy reference or None, shift making the matrix definite)
FUNCTIONS = {
    "sqrtm": (linalg.sqrtm, sl.sqrtm, 1.0),
    "logm": (linalg.logm, sl.logm, 1.0),
    "expm_sym": (linalg.expm_sym, sl.expm, 0.0),
    "powm": (lambda A: linalg.powm(A, 0.37), lambda A: sl.fractional_matrix_power(A, 0.37),
             1.0),
    "powm_negative": (lambda A: linalg.powm(A, -1.5),
                      lambda A: sl.fractional_matrix_power(A, -1.5), 1.0),
    "generic_exp": (lambda A: linalg.matrix_function(A, cr.exp), sl.expm, 0.0),
    "generic_tanh_df": (lambda A: linalg.matrix_function(A, cr.tanh, _tanh_df), None, 0.0),
    "generic_sin_autograd": (lambda A: linalg.matrix_function(A, lambda x: x.sin()),
                             sl.sinm, 0.0),
}


def _vjp(fn, A, G):
    x = cr.tensor(A, requires_grad=True)
    (g,) = grad(fn(x), x, cr.tensor(G))
    return g.numpy()


def _central(fn, A, E, G, h=1e-5):
    with cr.no_grad():
        plus = fn(cr.tensor(A + h * E)).numpy()
        minus = fn(cr.tensor(A - h * E)).numpy()
    return np.sum(G * (plus - minus)) / (2 * h)


@pytest.mark.parametrize("where", sorted(REPEATED))
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradient_at_repeated_eigenvalues_is_finite_and_matches_central_differences(
        name, where):
    fn, _, shift = FUNCTIONS[name]
    A = REPEATED[where] + shift * np.eye(len(REPEATED[where]))
    n = len(A)
    lam = np.linalg.eigvalsh(A)
    assert np.any(np.abs(np.diff(lam)) < 1e-12)  # the point has a repeated eigenvalue
    G = np.random.default_rng(5).standard_normal((n, n))
    g = _vjp(fn, A, G)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, g.T, atol=1e-12)  # symmetric gradient
    for seed in (1, 2):
        E = _sym_direction(n, seed)
        np.testing.assert_allclose(np.sum(g * E), _central(fn, A, E, G), rtol=1e-6, atol=1e-8)
    # forward mode at the same point: the JVP along E, and its adjointness with the VJP
    E = _sym_direction(n, 3)
    with fwAD.dual_level():
        t = fwAD.unpack_dual(fn(fwAD.make_dual(cr.tensor(A), cr.tensor(E)))).tangent.numpy()
    assert np.all(np.isfinite(t))
    np.testing.assert_allclose(np.sum(G * t), np.sum(g * E), rtol=1e-10)


@pytest.mark.parametrize("where", sorted(REPEATED))
def test_eigh_by_hand_cannot_be_differentiated_there_and_matrix_function_can(where):
    A = REPEATED[where]
    G = np.random.default_rng(8).standard_normal(A.shape)

    def by_hand(x):
        w, V = linalg.eigh(x)
        return (V * w.exp().unsqueeze(-2)) @ V.mT

    x = cr.tensor(A, requires_grad=True)
    # the chain rule through the eigenvectors divides by the zero gap: PyTorch returns nan,
    # chainrule's eigh raises instead
    with pytest.raises(RuntimeError, match="nearly\\) equal"):
        grad(by_hand(x), x, cr.tensor(G))
    w = np.linalg.eigvalsh(A)
    gaps = (w[None, :] - w[:, None])[~np.eye(len(w), dtype=bool)]
    assert np.min(np.abs(gaps)) < 1e-12  # what the textbook eigenvector rule divides by
    g = _vjp(linalg.expm_sym, A, G)
    assert np.all(np.isfinite(g))
    E = _sym_direction(len(A), 4)
    np.testing.assert_allclose(np.sum(g * E), _central(linalg.expm_sym, A, E, G), rtol=1e-6)


def test_at_the_identity_the_gradient_is_f_prime_times_the_symmetrised_cotangent():
    # f(cI + E) = f(c) I + f'(c) E + ...: the gradient is f'(c) sym(G)
    G = RNG.standard_normal((4, 4))
    for fn, dfc in ((linalg.expm_sym, np.exp(2.0)), (linalg.sqrtm, 0.5 / np.sqrt(2.0)),
                    (linalg.logm, 0.5), (lambda A: linalg.powm(A, 3.0), 12.0)):
        np.testing.assert_allclose(_vjp(fn, 2.0 * np.eye(4), G), dfc * 0.5 * (G + G.T),
                                   rtol=1e-13)


def _spd(n, seed):
    X = np.random.default_rng(seed).standard_normal((n, n))
    return _exactly_symmetric(X @ X.T + n * np.eye(n))


@pytest.mark.parametrize("name", sorted(k for k, v in FUNCTIONS.items() if v[1] is not None))
def test_values_match_scipy(name):
    fn, ref, _ = FUNCTIONS[name]
    A = _spd(4, 2) * 0.3
    with cr.no_grad():
        Y = fn(cr.tensor(A)).numpy()
    np.testing.assert_allclose(Y, np.real(ref(A)), rtol=1e-10, atol=1e-12)


def test_batched_values_match_scipy_per_matrix():
    A = np.stack([_spd(3, s) for s in range(4)]).reshape(2, 2, 3, 3)
    Y = linalg.sqrtm(cr.tensor(A)).numpy()
    L = linalg.logm(cr.tensor(A)).numpy()
    for idx in np.ndindex(2, 2):
        np.testing.assert_allclose(Y[idx], sl.sqrtm(A[idx]), rtol=1e-10)
        np.testing.assert_allclose(L[idx], sl.logm(A[idx]), rtol=1e-10, atol=1e-13)


def _general(n, seed):
    return 3.0 * np.eye(n) + 0.4 * np.random.default_rng(seed).standard_normal((n, n))


@pytest.mark.parametrize("fn, ref", [(linalg.sqrtm, sl.sqrtm), (linalg.logm, sl.logm)])
def test_general_matrices_use_scipy_and_the_block_frechet_derivative(fn, ref):
    A = _general(4, 3)
    assert not np.array_equal(A, A.T)
    x = cr.tensor(A, requires_grad=True)
    Y = fn(x)
    assert Y.grad_fn.name() in ("LinalgSqrtmBackward0", "LinalgLogmBackward0")
    np.testing.assert_allclose(Y.detach().numpy(), ref(A), rtol=1e-12)
    # the JVP is the top-right block of f([[A, E], [0, A]]) (Higham 2008, thm 3.6)
    E = RNG.standard_normal((4, 4))
    block = ref(np.block([[A, E], [np.zeros((4, 4)), A]]))[:4, 4:]
    with fwAD.dual_level():
        t = fwAD.unpack_dual(fn(fwAD.make_dual(cr.tensor(A), cr.tensor(E)))).tangent.numpy()
    np.testing.assert_allclose(t, block, rtol=1e-8, atol=1e-10)
    # and the VJP is its adjoint, L(A^T, G)
    G = RNG.standard_normal((4, 4))
    g = _vjp(fn, A, G)
    np.testing.assert_allclose(np.sum(g * E), np.sum(G * t), rtol=1e-10)
    h = 1e-6
    central = (ref(A + h * E) - ref(A - h * E)) / (2 * h)
    np.testing.assert_allclose(t, central, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [linalg.sqrtm, linalg.logm], ids=["sqrtm", "logm"])
def test_general_gradcheck_and_gradgradcheck(fn):
    for A in (_general(3, 4), np.stack([_general(2, 5), _general(2, 6)])):
        x = cr.tensor(A, requires_grad=True)
        assert gradcheck(fn, [x])
        assert gradgradcheck(fn, [x])


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradcheck_and_gradgradcheck_at_generic_symmetric_matrices(name):
    fn, _, shift = FUNCTIONS[name]
    X = RNG.standard_normal((3, 3)) * 0.5

    def f(x):
        n = x.shape[-1]
        return fn(x + x.mT + (2.0 * shift * n) * cr.eye(n, dtype=x.dtype))

    x = cr.tensor(X, requires_grad=True)
    assert gradcheck(f, [x])
    # (the second derivative of the named functions runs SciPy's Schur kernels on a block
    # matrix, whose threaded BLAS repeats to within 1e-17, not bit for bit)
    assert gradgradcheck(f, [x], nondet_tol=1e-12)


def test_first_order_with_create_graph_works_at_repeated_eigenvalues():
    A = REPEATED["projector"] + np.eye(3)
    G = RNG.standard_normal((3, 3))
    x = cr.tensor(A, requires_grad=True)
    (g,) = grad(linalg.sqrtm(x), x, cr.tensor(G), create_graph=True)
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), _vjp(linalg.sqrtm, A, G), rtol=1e-12)


@pytest.mark.parametrize("where", sorted(REPEATED))
@pytest.mark.parametrize("name", ["sqrtm", "logm", "expm_sym", "powm", "powm_negative"])
def test_second_order_at_repeated_eigenvalues_for_the_named_functions(name, where):
    # the recorded derivative of a named function goes through the block-triangular
    # identity with the general-matrix primitives, whose rules are Frechet derivatives too:
    # finite at repeated eigenvalues to every order (the projector is shifted to be
    # definite for sqrt, log and powers)
    fn = {"sqrtm": lambda A: linalg.sqrtm(A, symmetric=True),  # (gradcheck's directions
          "logm": lambda A: linalg.logm(A, symmetric=True),    # are not symmetric)
          "expm_sym": linalg.expm_sym, "powm": lambda A: linalg.powm(A, 0.37),
          "powm_negative": lambda A: linalg.powm(A, -1.5)}[name]
    shift = FUNCTIONS[name][2]
    x = cr.tensor(REPEATED[where] + shift * np.eye(len(REPEATED[where])), requires_grad=True)
    # (SciPy's Schur kernels on the block matrix repeat to within 1e-17, not exactly)
    assert gradgradcheck(fn, [x], nondet_tol=1e-12)


# --- divided differences at nearly equal eigenvalues ------------------------------------

EXACT = {
    "exp": (linalg.expm_sym, mpmath.exp),
    "log": (linalg.logm, mpmath.log),
    "sqrt": (linalg.sqrtm, mpmath.sqrt),
    "power": (lambda A: linalg.powm(A, 0.37), lambda x: x ** mpmath.mpf("0.37")),
    "power_negative": (lambda A: linalg.powm(A, -2.5), lambda x: x ** mpmath.mpf("-2.5")),
    "generic_autograd_df": (lambda A: linalg.matrix_function(A, lambda x: x.sin()),
                            mpmath.sin),
}


@pytest.mark.parametrize("a", [0.7, 1.3, 25.0])
@pytest.mark.parametrize("name", sorted(EXACT))
def test_divided_differences_of_close_eigenvalues_match_mpmath(name, a):
    fn, exact = EXACT[name]
    A = np.diag([a, a + 1e-9, a + 2.0])
    lam = np.linalg.eigvalsh(A)  # the floating-point eigenvalues the rule sees
    assert 0 < lam[1] - lam[0] < 2e-9
    G = np.zeros((3, 3))
    G[0, 1] = G[1, 0] = 1.0
    got = _vjp(fn, A, G)[0, 1]  # L_f(diag(l), E)_01 = f[l_0, l_1] E_01
    with mpmath.workdps(50):
        x0, x1 = mpmath.mpf(float(lam[0])), mpmath.mpf(float(lam[1]))
        want = float((exact(x1) - exact(x0)) / (x1 - x0))
    assert abs(got - want) <= 1e-13 * abs(want), (got, want)
    # the plain difference quotient loses about 7 digits there
    with cr.no_grad():
        f_lam = np.diag(fn(cr.tensor(np.diag(lam))).numpy())
    naive = (f_lam[1] - f_lam[0]) / (lam[1] - lam[0])
    assert abs(naive - want) > 1e3 * abs(got - want)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_divided_differences_of_equal_eigenvalues_are_the_derivative(name):
    fn, exact = EXACT[name]
    A = np.diag([1.7, 1.7, 3.0])
    G = np.zeros((3, 3))
    G[0, 1] = G[1, 0] = 1.0
    with mpmath.workdps(50):
        want = float(mpmath.diff(exact, mpmath.mpf(1.7)))
    np.testing.assert_allclose(_vjp(fn, A, G)[0, 1], want, rtol=1e-13)


# --- paths, domains, errors ---------------------------------------------------------------


def _node(y):
    return y.grad_fn.name()


def test_symmetric_detection_and_the_symmetric_argument():
    S = cr.tensor(_spd(3, 7), requires_grad=True)
    N = cr.tensor(_general(3, 8), requires_grad=True)
    assert _node(linalg.sqrtm(S)) == "LinalgMatrixFunctionBackward0"
    assert _node(linalg.logm(N)) == "LinalgLogmBackward0"
    assert _node(linalg.sqrtm(S, symmetric=False)) == "LinalgSqrtmBackward0"
    assert _node(linalg.logm(S, symmetric=False)) == "LinalgLogmBackward0"
    # both paths give the same value; for a symmetric cotangent, the same gradient
    G = _sym_direction(3, 9)
    for f in (linalg.sqrtm, linalg.logm):
        with cr.no_grad():
            np.testing.assert_allclose(f(S).numpy(), f(S, symmetric=False).numpy(), rtol=1e-11)
        np.testing.assert_allclose(_vjp(f, S.detach().numpy(), G),
                                   _vjp(lambda a, f=f: f(a, symmetric=False),
                                        S.detach().numpy(), G), rtol=1e-8, atol=1e-12)


def test_matrix_function_reads_the_symmetric_part():
    X = RNG.standard_normal((3, 3))
    with cr.no_grad():
        Y = linalg.matrix_function(cr.tensor(X), cr.exp).numpy()
    np.testing.assert_allclose(Y, sl.expm(0.5 * (X + X.T)), rtol=1e-12)


def test_sqrtm_allows_zero_eigenvalues():
    P = REPEATED["projector"]
    with cr.no_grad():
        Y = linalg.sqrtm(cr.tensor(P)).numpy()
    np.testing.assert_allclose(Y @ Y, P, atol=1e-12)
    np.testing.assert_allclose(Y, P, atol=1e-7)  # a projector is its own square root


@pytest.mark.parametrize("fn, op, smallest", [
    (linalg.sqrtm, "linalg.sqrtm", "-1"),
    (linalg.logm, "linalg.logm", "-1"),
    (lambda A: linalg.powm(A, 0.5), "linalg.powm", "-1"),
])
def test_symmetric_indefinite_input_raises_naming_the_smallest_eigenvalue(fn, op, smallest):
    A = Q @ np.diag([-1.0, 2.0, 3.0]) @ Q.T
    with pytest.raises(ValueError, match=f"{op}.*smallest eigenvalue is {smallest}"):
        fn(cr.tensor(_exactly_symmetric(A)))


def test_logm_and_negative_powers_need_positive_eigenvalues():
    P = cr.tensor(REPEATED["projector"])
    with pytest.raises(ValueError, match="linalg.logm: A must be symmetric positive definite"):
        linalg.logm(P)
    with pytest.raises(ValueError, match="linalg.powm: A must be symmetric positive definite"):
        linalg.powm(P, -0.5)


def test_general_matrix_without_a_real_root_raises():
    A = np.array([[-2.0, 1.0], [0.0, 3.0]])  # eigenvalue -2 on the negative real axis
    for fn, what in ((linalg.sqrtm, "square root"), (linalg.logm, "logarithm")):
        with pytest.raises(ValueError, match=f"no real principal {what}.*-2"):
            fn(cr.tensor(A))


def test_errors_of_arguments():
    with pytest.raises(ValueError, match="linalg.sqrtm.*square"):
        linalg.sqrtm(cr.tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="callables"):
        linalg.matrix_function(cr.tensor(np.eye(2)), "exp")


def test_float32_is_kept():
    A = _spd(3, 11).astype(np.float32)
    x = cr.tensor(A, requires_grad=True)
    for f in (linalg.sqrtm, linalg.logm, linalg.expm_sym):
        y = f(x)
        assert y.dtype == np.float32
        (g,) = grad(y, x, cr.tensor(np.ones((3, 3), np.float32)))
        assert g.dtype == np.float32
        np.testing.assert_allclose(g.numpy(), _vjp(f, A.astype(np.float64), np.ones((3, 3))),
                                   rtol=1e-3)


def test_other_backends_raise_naming_the_op():
    import array_api_strict as xps

    a = xps.asarray(np.eye(2), device=xps.Device("device1"))
    for f, op in ((linalg.expm_sym, "linalg_matrix_function"), (linalg.sqrtm, "linalg_sqrtm")):
        with pytest.raises(NotImplementedError, match=f"{op}: its forward kernel computes "
                                                      "with NumPy only"):
            f(cr.tensor(a))
