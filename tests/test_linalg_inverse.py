"""chainrule.linalg inverses and solves: values against NumPy/SciPy and gradients by
gradcheck (and both against torch where installed), JVP rules, hand-derived derivatives,
float32, and errors. (Gradchecks of every sample are in test_table.py too.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import scipy.linalg as sl

import chainrule as cr
from chainrule._engine import sum_to
from chainrule._ns import RAW
from chainrule.autograd import gradcheck
from chainrule.linalg import inverse as _inverse
from chainrule.linalg import matrix_functions as _matrix_functions
from chainrule.linalg import pseudoinverse as _pinv
from chainrule.linalg import solves as _solve

try:
    import torch
except ImportError:  # PyTorch is optional: the comparisons with it are skipped
    torch = None

FAMILIES = (_inverse, _solve, _pinv, _matrix_functions)

L = cr.linalg
RNG = np.random.default_rng(2024)


def randn(*shape):
    return RNG.standard_normal(shape)


def well(*shape):
    n = shape[-1]
    return randn(*shape) + n * np.eye(n)


def leaf(a, dtype=np.float64):
    return cr.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def arr(t):
    return t.detach().numpy() if isinstance(t, cr.Tensor) else np.asarray(t)


# --- (1) values against NumPy/SciPy, gradcheck, and against torch --------------------------

TL = torch.linalg if torch is not None else None  # the torch functions are looked up late


def _seed(shape):
    return np.random.default_rng(abs(hash(shape)) % 2**32).standard_normal(shape)


def _compare(f_cr, f_torch, arrays, out_index=None, grad_mask=None, rtol=1e-9, atol=1e-10):
    """Values and gradients (of <G, output> for a random G) agree with torch's (installed)."""
    xs = [leaf(a) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, yt = f_cr(*xs), f_torch(*ts)
    if out_index is not None:
        y, yt = y[out_index], yt[out_index]
    assert tuple(y.shape) == tuple(yt.shape)
    assert y.dtype == np.float64
    np.testing.assert_allclose(arr(y), yt.detach().numpy(), rtol=rtol, atol=atol)
    g = _seed(tuple(yt.shape))
    (y * cr.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        expected = t.grad.numpy()
        if grad_mask is not None and grad_mask[i] is not None:
            expected = grad_mask[i](expected)
        np.testing.assert_allclose(arr(x.grad), expected, rtol=1e-7, atol=1e-9)
    return y


CASES = {
    "inv": (L.inv, lambda *a: TL.inv(*a), [well(2, 3, 3)]),
    "inv_2d": (L.inv, lambda *a: TL.inv(*a), [well(4, 4)]),
    "det": (L.det, lambda *a: TL.det(*a), [well(2, 3, 3)]),
    "logabsdet": (lambda a: L.slogdet(a).logabsdet, lambda a: TL.slogdet(a).logabsdet,
                  [well(2, 3, 3) * np.array([1, -1])[:, None, None]]),
    "logdet": (L.logdet, lambda a: torch.logdet(a), [well(3, 3, 3)]),
    "solve": (L.solve, lambda *a: TL.solve(*a), [well(2, 3, 3), randn(2, 3, 2)]),
    "solve_vector": (L.solve, lambda *a: TL.solve(*a), [well(3, 3), randn(3)]),
    "solve_batched_vector": (L.solve, lambda *a: TL.solve(*a), [well(2, 3, 3), randn(2, 3)]),
    "solve_vector_broadcast": (L.solve, lambda *a: TL.solve(*a), [well(2, 3, 3), randn(3)]),
    "solve_broadcast": (L.solve, lambda *a: TL.solve(*a), [well(2, 1, 3, 3), randn(4, 3, 2)]),
    "solve_right": (lambda a, b: L.solve(a, b, left=False),
                    lambda a, b: TL.solve(a, b, left=False), [well(2, 3, 3), randn(2, 4, 3)]),
    "pinv_tall": (L.pinv, lambda *a: TL.pinv(*a), [randn(2, 5, 3)]),
    "pinv_wide": (L.pinv, lambda *a: TL.pinv(*a), [randn(2, 3, 5)]),
    "pinv_square": (L.pinv, lambda *a: TL.pinv(*a), [well(3, 3)]),
    "pinv_rtol": (lambda a: L.pinv(a, rtol=1e-3), lambda a: TL.pinv(a, rtol=1e-3),
                  [randn(4, 2)]),
    "pinv_hermitian": (lambda a: L.pinv(a, hermitian=True),
                       lambda a: TL.pinv(a, hermitian=True),
                       [(lambda m: m + m.T)(randn(3, 3))]),
    "lstsq_tall": (lambda a, b: L.lstsq(a, b).solution, lambda a, b: TL.lstsq(a, b).solution,
                   [randn(2, 6, 3), randn(2, 6, 2)]),
    "lstsq_wide": (lambda a, b: L.lstsq(a, b).solution, lambda a, b: TL.lstsq(a, b).solution,
                   [randn(2, 3, 5), randn(2, 3, 2)]),
    "lstsq_vector": (lambda a, b: L.lstsq(a, b).solution,
                     lambda a, b: TL.lstsq(a, b).solution, [randn(5, 3), randn(5)]),
    "lstsq_residuals": (lambda a, b: L.lstsq(a, b, driver="gelsd").residuals,
                        lambda a, b: TL.lstsq(a, b, driver="gelsd").residuals,
                        [randn(2, 6, 3), randn(2, 6, 2)]),
    "matrix_exp": (L.matrix_exp, lambda *a: TL.matrix_exp(*a), [randn(2, 4, 4)]),
    "matrix_exp_large_norm": (L.matrix_exp, lambda *a: TL.matrix_exp(*a), [randn(3, 3) * 3]),
    "cross": (L.cross, lambda *a: TL.cross(*a), [randn(4, 3), randn(4, 3)]),
    "cross_broadcast_dim": (lambda a, b: L.cross(a, b, dim=1),
                            lambda a, b: TL.cross(a, b, dim=1), [randn(2, 3, 4), randn(1, 3, 4)]),
    "multi_dot": (lambda *t: L.multi_dot(t), lambda *t: TL.multi_dot(t),
                  [randn(2, 6), randn(6, 3), randn(3, 7), randn(7, 2)]),
    "multi_dot_vector_ends": (lambda *t: L.multi_dot(t), lambda *t: TL.multi_dot(t),
                              [randn(4), randn(4, 5), randn(5)]),
    "multi_dot_two": (lambda *t: L.multi_dot(t), lambda *t: TL.multi_dot(t),
                      [randn(4, 5), randn(5)]),
}
for _n in (-3, -2, -1, 0, 1, 2, 3, 6):
    CASES[f"matrix_power_{_n}"] = (lambda a, n=_n: L.matrix_power(a, n),
                                   lambda a, n=_n: TL.matrix_power(a, n), [well(2, 3, 3)])
for _upper in (True, False):
    for _left in (True, False):
        for _unit in (True, False):
            _b = randn(2, 3, 2) if _left else randn(2, 2, 3)
            CASES[f"solve_triangular_u{_upper:d}_l{_left:d}_unit{_unit:d}"] = (
                lambda a, b, u=_upper, le=_left, un=_unit: L.solve_triangular(
                    a, b, upper=u, left=le, unitriangular=un),
                lambda a, b, u=_upper, le=_left, un=_unit: TL.solve_triangular(
                    a, b, upper=u, left=le, unitriangular=un),
                [well(2, 3, 3), _b])


def _mT(m):
    return np.swapaxes(m, -1, -2)


def _triangular(a, upper, unit):
    """The triangular matrix that solve_triangular reads from a."""
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t - np.diagonal(t, axis1=-2, axis2=-1)[..., None] * np.eye(a.shape[-1]) + np.eye(
            a.shape[-1])
    return t


def _lstsq_solution(a, b):
    """The minimum-norm least-squares solution, matrix by matrix (NumPy's gelsd)."""
    if a.ndim == 2:
        return np.linalg.lstsq(a, b, rcond=None)[0]
    return np.stack([_lstsq_solution(x, y) for x, y in zip(a, b)])


def _slogdet_value(a):
    sign, logabs = np.linalg.slogdet(a)
    return np.where(sign > 0, logabs, np.nan)


# the value of each case by NumPy / SciPy
REFERENCE = {
    "inv": np.linalg.inv, "inv_2d": np.linalg.inv, "det": np.linalg.det,
    "logabsdet": lambda a: np.linalg.slogdet(a)[1], "logdet": _slogdet_value,
    # solve: A^-1 B; B of shape A.shape[:-1] (or 1-D) is a (batch of) vector(s)
    "solve": lambda a, b: np.linalg.inv(a) @ b,
    "solve_vector": lambda a, b: np.linalg.inv(a) @ b,
    "solve_batched_vector": lambda a, b: (np.linalg.inv(a) @ b[..., None])[..., 0],
    "solve_vector_broadcast": lambda a, b: np.linalg.inv(a) @ b,
    "solve_broadcast": lambda a, b: np.linalg.inv(a) @ b,
    "solve_right": lambda a, b: b @ np.linalg.inv(a),
    "pinv_tall": np.linalg.pinv, "pinv_wide": np.linalg.pinv, "pinv_square": np.linalg.pinv,
    "pinv_rtol": lambda a: np.linalg.pinv(a, rcond=1e-3),
    "pinv_hermitian": lambda a: np.linalg.pinv(a, hermitian=True),
    "lstsq_tall": _lstsq_solution, "lstsq_wide": _lstsq_solution,
    "lstsq_vector": _lstsq_solution,
    "lstsq_residuals": lambda a, b: ((a @ _lstsq_solution(a, b) - b) ** 2).sum(-2),
    "matrix_exp": sl.expm, "matrix_exp_large_norm": sl.expm,
    "cross": np.cross, "cross_broadcast_dim": lambda a, b: np.cross(a, b, axis=1),
    "multi_dot": lambda *m: np.linalg.multi_dot(m),
    "multi_dot_vector_ends": lambda *m: np.linalg.multi_dot(m),
    "multi_dot_two": lambda *m: np.linalg.multi_dot(m),
}
for _n in (-3, -2, -1, 0, 1, 2, 3, 6):
    REFERENCE[f"matrix_power_{_n}"] = lambda a, n=_n: np.linalg.matrix_power(a, n)
for _upper in (True, False):
    for _left in (True, False):
        for _unit in (True, False):
            REFERENCE[f"solve_triangular_u{_upper:d}_l{_left:d}_unit{_unit:d}"] = (
                lambda a, b, u=_upper, le=_left, un=_unit:
                np.linalg.inv(_triangular(a, u, un)) @ b if le
                else b @ np.linalg.inv(_triangular(a, u, un)))


def test_every_case_has_a_reference():
    assert set(REFERENCE) == set(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients(name):
    """The value is NumPy's / SciPy's; the gradient passes gradcheck (central differences;
    pinv(hermitian=True) reads one triangle of a symmetric matrix: symmetric directions);
    with torch, both are torch.linalg's."""
    f_cr, f_torch, arrays = CASES[name]
    y = f_cr(*[leaf(a) for a in arrays])
    want = REFERENCE[name](*arrays)
    assert y.dtype == np.float64 and tuple(y.shape) == np.shape(want)
    np.testing.assert_allclose(arr(y), want, rtol=1e-9, atol=1e-10)
    structure = {0: "symmetric"} if name == "pinv_hermitian" else None
    assert gradcheck(f_cr, tuple(leaf(a) for a in arrays), structure=structure)
    if torch is not None:
        _compare(f_cr, f_torch, arrays)


def test_slogdet_values_and_sign_has_no_gradient():
    a = well(3, 3, 3) * np.array([1, -1, 1])[:, None, None]
    out = L.slogdet(leaf(a))
    sign, logabsdet = np.linalg.slogdet(a)
    assert out._fields == ("sign", "logabsdet")
    np.testing.assert_array_equal(arr(out.sign), sign)
    np.testing.assert_allclose(arr(out.logabsdet), logabsdet, rtol=1e-12)
    assert not out.sign.requires_grad and out.logabsdet.requires_grad
    assert out.logabsdet.grad_fn.name() == "LinalgSlogdetBackward0"
    if torch is not None:
        ref = TL.slogdet(torch.tensor(a))
        np.testing.assert_array_equal(arr(out.sign), ref.sign.numpy())
        np.testing.assert_allclose(arr(out.logabsdet), ref.logabsdet.numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_logdet_negative_and_singular_like_torch():
    a = np.stack([well(3, 3), well(3, 3), np.ones((3, 3))])
    a[1, 0] *= -1  # one row negated: det < 0
    assert np.linalg.det(a[1]) < 0
    x = leaf(a)
    y = L.logdet(x)
    # log det: nan for a negative determinant, -inf for a singular matrix
    np.testing.assert_allclose(arr(y)[0], np.log(np.linalg.det(a[0])), rtol=1e-12)
    assert np.isnan(arr(y)[1]) and arr(y)[2] == -np.inf
    # d logdet(A) / dA = A^-T; torch's where: a zero gradient for the nan (negative det)
    # entry; the singular entry gets 0 * inf = nan
    y[0].backward()
    np.testing.assert_allclose(arr(x.grad)[0], np.linalg.inv(a[0]).T, rtol=1e-10)
    assert np.all(arr(x.grad)[1] == 0) and np.all(np.isnan(arr(x.grad)[2]))
    if torch is not None:
        t = torch.tensor(a, requires_grad=True)
        yt = torch.logdet(t)
        np.testing.assert_allclose(arr(y), yt.detach().numpy(), rtol=1e-12)  # nan, -inf
        yt[0].backward()
        np.testing.assert_allclose(arr(x.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cholesky_solve_on_the_referenced_triangle():
    for upper in (False, True):
        lo = np.tril(randn(2, 3, 3)) + 3 * np.eye(3)
        factor = lo.swapaxes(-1, -2) if upper else lo
        mask = np.triu if upper else np.tril
        b = randn(2, 3, 2)
        # (L L^T)^-1 B, or (U^T U)^-1 B
        gram = _mT(factor) @ factor if upper else factor @ _mT(factor)
        got = L.cholesky_solve(cr.tensor(b), cr.tensor(factor), upper=upper)
        np.testing.assert_allclose(arr(got), np.linalg.solve(gram, b), rtol=1e-10)
        # only the factor's triangle is read: central differences along it
        assert gradcheck(lambda x, f, upper=upper: L.cholesky_solve(x, f, upper=upper),
                         (leaf(b), leaf(factor)), structure={1: "upper" if upper else "lower"})
        if torch is None:
            continue
        # PyTorch's CholeskySolveBackward0 differentiates the full matrix L in A = L L^T;
        # the entries that are read (its triangle) agree.
        _compare(lambda b, f, upper=upper: L.cholesky_solve(b, f, upper=upper),
                 lambda b, f, upper=upper: torch.cholesky_solve(b, f, upper=upper),
                 [b, factor], grad_mask=[None, mask])


def test_lstsq_outputs_per_driver():
    a, b = randn(2, 6, 3), randn(2, 6, 2)
    x = _lstsq_solution(a, b)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        out = L.lstsq(a, b, driver=driver)
        assert out._fields == ("solution", "residuals", "rank", "singular_values")
        np.testing.assert_allclose(arr(out.solution), x, rtol=1e-9, atol=1e-12)
        # PyTorch's rules: residuals (squared column norms of A X - B) when m > n and A
        # has full rank, except with gelsy; the rank except with gels; the singular values
        # with gelsd and gelss
        if driver == "gelsy":
            assert out.residuals.shape == (0,)
        else:
            np.testing.assert_allclose(arr(out.residuals), ((a @ x - b) ** 2).sum(-2),
                                       rtol=1e-9)
        if driver == "gels":
            assert out.rank.shape == (0,)
        else:
            assert arr(out.rank).tolist() == [3, 3]
        if driver in ("gelsd", "gelss"):
            np.testing.assert_allclose(arr(out.singular_values),
                                       np.linalg.svd(a, compute_uv=False), rtol=1e-12)
        else:
            assert out.singular_values.shape == (0,)
        if torch is None:
            continue
        ref = TL.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
        for mine, theirs in zip(out, ref):
            assert tuple(mine.shape) == tuple(theirs.shape), (driver, mine.shape, theirs.shape)
            np.testing.assert_allclose(arr(mine), theirs.numpy(), rtol=1e-9, atol=1e-12)
    # rank deficient: the minimum-norm solution, like gelsd, and the rank
    a = randn(6, 2) @ randn(2, 4)
    out = L.lstsq(a, b[0], driver="gelsd")
    np.testing.assert_allclose(arr(out.solution), np.linalg.pinv(a) @ b[0], rtol=1e-8,
                               atol=1e-10)
    assert int(arr(out.rank)) == 2
    assert out.residuals.shape == (0,)
    if torch is not None:
        ref = TL.lstsq(torch.tensor(a), torch.tensor(b[0]), driver="gelsd")
        np.testing.assert_allclose(arr(out.solution), ref.solution.numpy(), rtol=1e-8,
                                   atol=1e-10)
        assert int(arr(out.rank)) == int(ref.rank) == 2
        assert out.residuals.shape == ref.residuals.shape == (0,)


def _sylvester_torch(A, B, C):
    """A X + X B = C through the Kronecker system (I (x) A + B^T (x) I) vec(X) = vec(C)."""
    m, n = A.shape[-1], B.shape[-1]
    eye_m, eye_n = torch.eye(m, dtype=A.dtype), torch.eye(n, dtype=A.dtype)
    K = torch.kron(eye_n, A) + torch.kron(B.mT.contiguous(), eye_m)
    x = torch.linalg.solve(K, C.mT.reshape(-1))  # column-major vec
    return x.reshape(n, m).mT


def test_solve_sylvester_solves_the_equation():
    A, B, C = well(3, 3), well(2, 2), randn(3, 2)
    X = arr(L.solve_sylvester(A, B, C))
    np.testing.assert_allclose(A @ X + X @ B, C, atol=1e-12)
    np.testing.assert_allclose(X, sl.solve_sylvester(A, B, C), rtol=1e-10)
    assert gradcheck(L.solve_sylvester, (leaf(A), leaf(B), leaf(C)))
    if torch is not None:  # and a Kronecker solve by torch
        _compare(L.solve_sylvester, _sylvester_torch, [A, B, C])


def test_node_names_follow_torch():
    # the names of PyTorch's backward nodes (its derivatives.yaml: inv and solve are
    # differentiated through linalg_inv_ex and linalg_solve_ex)
    a, b = leaf(well(3, 3)), leaf(randn(3, 2))
    mine = [L.inv(a), L.det(a), L.solve(a, b), L.solve_triangular(a, b, upper=True),
            L.pinv(a), L.matrix_exp(a), L.cross(a, a)]
    assert [m.grad_fn.name() for m in mine] == [
        "LinalgInvExBackward0", "LinalgDetBackward0", "LinalgSolveExBackward0",
        "LinalgSolveTriangularBackward0", "LinalgPinvBackward0", "LinalgMatrixExpBackward0",
        "LinalgCrossBackward0"]
    if torch is None:
        return
    ta, tb = (torch.tensor(arr(x), requires_grad=True) for x in (a, b))
    theirs = [TL.inv(ta), TL.det(ta), TL.solve(ta, tb), TL.solve_triangular(ta, tb, upper=True),
              TL.pinv(ta), TL.matrix_exp(ta), TL.cross(ta, ta)]
    for m, t in zip(mine, theirs):
        assert m.grad_fn.name() == type(t.grad_fn).__name__


# --- (2) JVP rules: central differences and adjointness with the VJP ----------------------

I = SimpleNamespace(**{k: getattr(m, k) for m in FAMILIES for k in dir(m) if k.isupper()})
OP_CASES = [
    (I.INV, [well(2, 3, 3)], ()),
    (I.DET, [well(2, 3, 3)], ()),
    (I.DET, [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])], ()),
    (I.COFACTOR, [well(3, 3)], ()),
    (I.COFACTOR, [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])], ()),
    (I.SLOGDET, [well(2, 3, 3)], ()),
    (I.SOLVE, [well(2, 3, 3), randn(2, 3, 2)], (True, False)),
    (I.SOLVE, [well(2, 3, 3), randn(3)], (True, True)),
    (I.SOLVE, [well(3, 3), randn(2, 4, 3)], (False, False)),
    (I.SOLVE_TRIANGULAR, [well(2, 3, 3), randn(3, 2)], (True, True, False)),
    (I.SOLVE_TRIANGULAR, [well(3, 3), randn(2, 2, 3)], (False, False, True)),
    (I.SOLVE_TRIANGULAR, [well(3, 3), randn(2, 3)], (True, False, False)),
    (I.PINV, [randn(2, 5, 3)], (0.0, 1e-12, False)),
    (I.PINV, [randn(3, 5)], (0.0, 1e-12, False)),
    (I.MATRIX_EXP, [randn(2, 3, 3)], ()),
    (I.CROSS, [randn(4, 3), randn(4, 3)], (-1,)),
    (I.CROSS, [randn(3, 2), randn(3, 1)], (-2,)),
    (I.SOLVE_SYLVESTER, [well(3, 3), well(2, 2), randn(3, 2)], ()),
]


def _rule_args(op, params, inputs, out, attrs):
    pool = dict(zip(op.inputs, inputs))
    pool["out"] = out
    pool.update(zip(op.attrs, attrs))
    pool.update({f"{n}_shape": np.shape(x) for n, x in zip(op.inputs, inputs)})
    return [pool[p] for p in params]


def _diff_out(op, out):
    """The (first) differentiable output of the forward result."""
    return out[op.out_diff[0]] if op.nout > 1 else out


def _jvp(op, inputs, attrs, tangents):
    out = op.forward(*inputs, *attrs)
    total = 0
    for name, t in zip(op.inputs, tangents):
        fn, params = op.jvp_rules[name]
        r = fn(RAW, t, *_rule_args(op, params, inputs, out, attrs))
        total = total + (_diff_out(op, r) if op.nout > 1 else r)
    return np.asarray(total)


def _vjp(op, inputs, attrs, u):
    out = op.forward(*inputs, *attrs)
    g = tuple(u if i in op.out_diff else None for i in range(op.nout)) if op.nout > 1 else u
    grads = []
    for name, x in zip(op.inputs, inputs):
        fn, params = op.vjp_rules[name]
        gx = np.asarray(fn(RAW, g, *_rule_args(op, params, inputs, out, attrs)))
        grads.append(sum_to(gx, np.shape(x)))
    return grads


@pytest.mark.parametrize("case", OP_CASES, ids=[f"{c[0].name}-{i}" for i, c in
                                                enumerate(OP_CASES)])
def test_jvp_rules_match_central_differences_and_vjp(case):
    op, inputs, attrs = case
    rng = np.random.default_rng(11)
    assert set(op.jvp_rules) == set(op.inputs), f"{op.name}: a JVP rule per input"
    v = [rng.standard_normal(np.shape(x)) for x in inputs]
    jv = _jvp(op, inputs, attrs, v)
    eps = 1e-6

    def f(s):
        return np.asarray(_diff_out(op, op.forward(*[x + s * d for x, d in zip(inputs, v)],
                                                   *attrs)))

    numerical = (f(eps) - f(-eps)) / (2 * eps)
    np.testing.assert_allclose(jv, numerical, rtol=1e-6, atol=1e-7)
    u = rng.standard_normal(jv.shape)
    grads = _vjp(op, inputs, attrs, u)
    lhs = np.sum(u * jv)
    rhs = sum(np.sum(g * d) for g, d in zip(grads, v))
    assert np.isclose(lhs, rhs, rtol=1e-10, atol=1e-12), (lhs, rhs)


def test_every_declared_op_has_a_jvp_case():
    declared = {op.name for op in vars(I).values() if isinstance(op, type(I.INV))}
    assert declared == {c[0].name for c in OP_CASES}


# --- (3) derivatives derived by hand -------------------------------------------------------


def _grad(f, *arrays):
    xs = [leaf(a) for a in arrays]
    f(*xs).backward()
    return [arr(x.grad) for x in xs]


def test_logdet_gradient_is_inverse_transpose():
    a = well(4, 4)
    (g,) = _grad(L.logdet, a)
    np.testing.assert_allclose(g, np.linalg.inv(a).T, rtol=1e-12)


def test_trace_of_inverse_gradient():
    a = well(4, 4)
    (g,) = _grad(lambda x: L.inv(x).trace(), a)
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(g, -(ai @ ai).T, rtol=1e-12)


def test_det_gradient_is_cofactor_also_when_singular():
    a = well(3, 3)
    (g,) = _grad(L.det, a)
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-12)
    (g,) = _grad(L.det, np.array([[1.0, 2.0], [2.0, 4.0]]))
    np.testing.assert_allclose(g, [[4.0, -2.0], [-2.0, 1.0]])  # [[d, -c], [-b, a]]


def test_det_second_derivative_at_a_singular_matrix():
    # det of 2x2 is a0 a3 - a1 a2: its Hessian is constant
    x = leaf([[1.0, 2.0], [2.0, 4.0]])
    (g,) = cr.autograd.grad(L.det(x), x, create_graph=True)
    assert g.grad_fn.next_functions[1][0].name() == "LinalgCofactorBackward0"  # g * cof(A)
    (h,) = cr.autograd.grad(g[0, 0], x)
    np.testing.assert_allclose(arr(h), [[0.0, 0.0], [0.0, 1.0]], atol=1e-14)


def test_solve_gradients_by_hand():
    a, b = well(3, 3), randn(3)
    ga, gb = _grad(lambda x, y: L.solve(x, y).sum(), a, b)
    y = np.linalg.solve(a.T, np.ones(3))  # grad_b = A^-T 1
    np.testing.assert_allclose(gb, y, rtol=1e-12)
    np.testing.assert_allclose(ga, -np.outer(y, np.linalg.solve(a, b)), rtol=1e-12)


def test_matrix_exp_gradient_by_hand():
    # d/dt tr(expm(t A)) = tr(A expm(tA)); for diagonal D, d tr(expm(D)) / dD = expm(D)
    d = np.diag(randn(3))
    (g,) = _grad(lambda x: L.matrix_exp(x).trace(), d)
    np.testing.assert_allclose(g, np.diag(np.exp(np.diag(d))), rtol=1e-10, atol=1e-12)
    # tr(expm(A)) has gradient expm(A)^T for any A
    a = randn(3, 3)
    (g,) = _grad(lambda x: L.matrix_exp(x).trace(), a)
    np.testing.assert_allclose(g, arr(L.matrix_exp(a)).T, rtol=1e-10)


def test_matrix_power_gradients_by_hand():
    a, gout = well(3, 3), randn(3, 3)
    (g,) = _grad(lambda x: (L.matrix_power(x, 2) * cr.tensor(gout)).sum(), a)
    np.testing.assert_allclose(g, gout @ a.T + a.T @ gout, rtol=1e-12)
    (g,) = _grad(lambda x: L.matrix_power(x, 0).sum(), a)  # the identity: zero gradient
    np.testing.assert_array_equal(g, np.zeros((3, 3)))


def test_cross_and_sylvester_by_hand():
    a, b, c = randn(3), randn(3), randn(3)
    ga, gb = _grad(lambda x, y: (L.cross(x, y) * cr.tensor(c)).sum(), a, b)
    np.testing.assert_allclose(ga, np.cross(b, c), rtol=1e-12)  # d/da (a x b).c = b x c
    np.testing.assert_allclose(gb, np.cross(c, a), rtol=1e-12)
    # diagonal A, B: X_ij = C_ij / (a_i + b_j), so dX_ij/dC_ij = 1 / (a_i + b_j)
    da, db = np.array([1.0, 2.0, 3.0]), np.array([0.5, 4.0])
    (gc,) = _grad(lambda x: L.solve_sylvester(np.diag(da), np.diag(db), x).sum(), randn(3, 2))
    np.testing.assert_allclose(gc, 1 / (da[:, None] + db[None, :]), rtol=1e-12)


def test_pinv_of_full_column_rank_is_the_left_inverse():
    a = randn(5, 3)
    p = arr(L.pinv(a))
    np.testing.assert_allclose(p, np.linalg.solve(a.T @ a, a.T), rtol=1e-10)
    # d/dA sum(pinv(A) @ A) = 0 for full column rank (pinv(A) A = I)
    (g,) = _grad(lambda x: (L.pinv(x) @ x).sum(), a)
    np.testing.assert_allclose(g, 0, atol=1e-12)


# --- (4) float32 ---------------------------------------------------------------------------

F32_CASES = {
    "inv": (L.inv, [well(2, 3, 3)]),
    "det": (L.det, [well(2, 3, 3)]),
    "logdet": (L.logdet, [well(3, 3)]),
    "slogdet": (lambda a: L.slogdet(a).logabsdet, [well(3, 3)]),
    "solve": (L.solve, [well(2, 3, 3), randn(2, 3)]),
    "solve_right": (lambda a, b: L.solve(a, b, left=False), [well(3, 3), randn(2, 3)]),
    "solve_triangular": (lambda a, b: L.solve_triangular(a, b, upper=False),
                         [well(3, 3), randn(3, 2)]),
    "cholesky_solve": (L.cholesky_solve, [randn(3, 2), np.tril(well(3, 3))]),
    "pinv": (L.pinv, [randn(4, 3)]),
    "lstsq": (lambda a, b: L.lstsq(a, b).solution, [randn(5, 3), randn(5, 2)]),
    "matrix_exp": (L.matrix_exp, [randn(3, 3)]),
    "matrix_power": (lambda a: L.matrix_power(a, -2), [well(3, 3)]),
    "cross": (L.cross, [randn(2, 3), randn(2, 3)]),
    "multi_dot": (lambda a, b, c: L.multi_dot([a, b, c]), [randn(3), randn(3, 4), randn(4)]),
    "solve_sylvester": (L.solve_sylvester, [well(3, 3), well(2, 2), randn(3, 2)]),
}


@pytest.mark.parametrize("name", list(F32_CASES))
def test_float32(name):
    f, arrays = F32_CASES[name]
    x32 = [leaf(a, np.float32) for a in arrays]
    x64 = [leaf(a) for a in arrays]
    y32, y64 = f(*x32), f(*x64)
    assert y32.dtype == np.float32
    np.testing.assert_allclose(arr(y32), arr(y64), rtol=1e-3, atol=1e-4)
    y32.sum().backward()
    y64.sum().backward()
    for a, b in zip(x32, x64):
        assert a.grad.dtype == np.float32
        np.testing.assert_allclose(arr(a.grad), arr(b.grad), rtol=2e-3, atol=2e-4)


# --- (5) errors, and inputs left untouched ---------------------------------------------


def _raises(exc, fn, *arrays, match=None):
    tensors = [leaf(a) for a in arrays]
    before = [arr(t).copy() for t in tensors]
    with pytest.raises(exc, match=match) as info:
        fn(*tensors)
    for t, b in zip(tensors, before):
        np.testing.assert_array_equal(arr(t), b)
        assert t.grad is None
    return str(info.value)


@pytest.mark.parametrize("fn, name", [
    (L.inv, "linalg.inv"), (L.det, "linalg.det"), (L.slogdet, "linalg.slogdet"),
    (L.logdet, "linalg.logdet"), (L.matrix_exp, "linalg.matrix_exp"),
    (lambda a: L.matrix_power(a, 2), "linalg.matrix_power"),
])
def test_square_ops_reject_bad_shapes(fn, name):
    msg = _raises(ValueError, fn, randn(2, 3, 4))
    assert name in msg and "(2, 3, 4)" in msg and "square" in msg
    msg = _raises(ValueError, fn, randn(3))
    assert name in msg and "(3,)" in msg and "at least 2 dimensions" in msg


@pytest.mark.parametrize("fn, arrays, words", [
    (L.solve, [randn(3, 3), randn(4, 2)], ["linalg.solve", "(3, 3)", "(4, 2)", "AX = B"]),
    (L.solve, [randn(3, 4), randn(3)], ["linalg.solve", "(3, 4)", "(3,)", "square"]),
    (lambda a, b: L.solve(a, b, left=False), [randn(3, 3), randn(3)],
     ["linalg.solve", "XA = B"]),
    (L.solve, [randn(2, 3, 3), randn(4, 3, 1)], ["linalg.solve", "(2,)", "(4,)",
                                                 "broadcast"]),
    (lambda a, b: L.solve_triangular(a, b, upper=True), [randn(3, 3), randn(3)],
     ["linalg.solve_triangular", "(3, 3)", "(3,)", "at least 2"]),
    (lambda a, b: L.solve_triangular(a, b, upper=True, left=False), [randn(3, 3),
                                                                     randn(3, 2)],
     ["linalg.solve_triangular", "(3, 2)", "XA = B"]),
    (L.cholesky_solve, [randn(4, 2), randn(3, 3)], ["cholesky_solve", "(4, 2)", "(3, 3)"]),
    (L.lstsq, [randn(5, 3), randn(4, 2)], ["linalg.lstsq", "(5, 3)", "(4, 2)"]),
    (L.pinv, [randn(3)], ["linalg.pinv", "(3,)"]),
    (L.cross, [randn(4, 2), randn(4, 2)], ["linalg.cross", "(4, 2)", "length 3"]),
    (L.cross, [randn(4, 3), randn(3)], ["linalg.cross", "(4, 3)", "(3,)"]),
    (L.solve_sylvester, [randn(3, 3), randn(2, 2), randn(2, 3)],
     ["solve_sylvester", "(3, 3)", "(2, 2)", "(2, 3)"]),
    (L.solve_sylvester, [randn(3, 2), randn(2, 2), randn(3, 2)],
     ["solve_sylvester", "square"]),
    (lambda a, b: L.multi_dot([a, b]), [randn(3, 4), randn(5, 2)],
     ["linalg.multi_dot", "(3, 4)", "(5, 2)"]),
    (lambda a, b, c: L.multi_dot([a, b, c]), [randn(3, 4), randn(4), randn(4, 2)],
     ["linalg.multi_dot", "2-D"]),
])
def test_binary_ops_reject_bad_shapes_naming_both(fn, arrays, words):
    msg = _raises(ValueError, fn, *arrays)
    for w in words:
        assert w in msg, (w, msg)


def test_multi_dot_needs_two_tensors():
    with pytest.raises(ValueError, match="at least 2 tensors"):
        L.multi_dot([leaf(randn(3, 3))])


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def test_singular_matrices_raise_clear_errors():
    msg = _raises(L.LinAlgError, L.inv, SINGULAR)
    assert "linalg_inv" in msg and "The diagonal element 2 is zero" in msg and "singular" in msg
    msg = _raises(L.LinAlgError, L.inv, np.stack([np.eye(2), SINGULAR]))
    assert "(Batch element 1)" in msg
    msg = _raises(L.LinAlgError, L.solve, np.stack([np.eye(2), SINGULAR]), randn(2, 2))
    assert "linalg_solve" in msg and "(Batch element 1)" in msg and "singular" in msg
    msg = _raises(L.LinAlgError, lambda a, b: L.solve_triangular(a, b, upper=True),
                  np.array([[1.0, 2.0], [0.0, 0.0]]), randn(2, 1))
    assert "linalg_solve_triangular" in msg and "diagonal element 2 is zero" in msg
    msg = _raises(L.LinAlgError, lambda a: L.matrix_power(a, -2), SINGULAR)
    assert "singular" in msg
    msg = _raises(L.LinAlgError, L.solve_sylvester, np.diag([1.0, 2.0]), np.diag([-1.0, 3.0]),
                  randn(2, 2))
    assert "common eigenvalue" in msg
    assert issubclass(L.LinAlgError, ValueError)  # NumPy's class


def test_singular_cases_that_do_not_raise():
    s = leaf(SINGULAR)
    sign, logabsdet = L.slogdet(s)
    assert arr(sign) == 0 and arr(logabsdet) == -np.inf
    assert arr(L.logdet(s)) == -np.inf
    assert arr(L.det(s)) == 0
    # unitriangular never reads the diagonal
    x = L.solve_triangular(np.zeros((2, 2)), np.ones((2, 1)), upper=True, unitriangular=True)
    np.testing.assert_array_equal(arr(x), np.ones((2, 1)))


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_slogdet_backward_at_a_singular_matrix_is_infinite_like_torch():
    a = np.stack([2 * np.eye(2), np.ones((2, 2))])
    for seed in ([1.0, 0.0], [1.0, 1.0]):
        x = leaf(a)
        L.slogdet(x).logabsdet.backward(cr.tensor(seed))
        # d log|det A| / dA = A^-T: (2 I)^-T = I / 2; at the singular matrix infinite, so
        # a zero cotangent gives 0 * inf = nan
        np.testing.assert_array_equal(arr(x.grad)[0], 0.5 * np.eye(2))
        if seed[1] == 0:
            assert np.isnan(arr(x.grad)[1]).all()
        if torch is not None:
            t = torch.tensor(a, requires_grad=True)
            TL.slogdet(t).logabsdet.backward(torch.tensor(seed, dtype=torch.float64))
            np.testing.assert_array_equal(arr(x.grad), t.grad.numpy())
    # +-inf with the signs of the cofactors [[1, -1], [-1, 1]]
    np.testing.assert_array_equal(arr(x.grad)[1], [[np.inf, -np.inf], [-np.inf, np.inf]])


def test_matrix_power_rejects_non_integer_exponent():
    with pytest.raises(TypeError, match="matrix_power"):
        L.matrix_power(leaf(well(2, 2)), 1.5)


def test_lstsq_rejects_unknown_driver():
    with pytest.raises(ValueError, match="driver"):
        L.lstsq(leaf(randn(3, 2)), leaf(randn(3, 1)), driver="nope")


# --- docs ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for m in FAMILIES for n in m.__all__ if n != "LinAlgError"])
def test_public_functions_are_documented(name):
    doc = getattr(L, name).__doc__
    assert "Raises" in doc and "Returns" in doc, name
    if getattr(getattr(L, name), "ops", None):
        assert "Source:" in doc and "Derivative rule of" in doc
