"""chainrule.symbolic: VJP formulas built from the derivative table's own rules.

Expected results are the Matrix Cookbook's (Petersen & Pedersen, The Matrix Cookbook,
version of November 15, 2012; equation numbers of that edition) or follow from the
product rule. Each formula is compared structurally with SymPy where SymPy's canonical
form is stable, else numerically on random matrices, and ``.check()`` compares it with
chainrule's numeric VJP and with finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from sympy import HadamardPower, HadamardProduct, Identity, Inverse, MatrixSymbol, OneMatrix

import chainrule as cr
from chainrule import TABLE
from chainrule.cli import main
from chainrule.symbolic import derive, elementwise, evaluate

n = sp.Symbol("n", integer=True, positive=True)
X, A, B, G = (MatrixSymbol(s, n, n) for s in "XABG")
x, y = (MatrixSymbol(s, n, 1) for s in "xy")


def numerically_equal(a, b, shapes, seed=0):
    """a and b agree at a random point (symbol name -> shape, sizes n = 4)."""
    rng = np.random.default_rng(seed)
    values = {}
    for name, shape in shapes.items():
        v = rng.uniform(0.5, 1.5, shape)
        if v.ndim == 2 and v.shape[0] == v.shape[1]:
            v = v + v.shape[0] * np.eye(v.shape[0])
        values[name] = v
    va = np.asarray(evaluate(a, values, {n: 4}), dtype=float)
    vb = np.asarray(evaluate(b, values, {n: 4}), dtype=float)
    return va.shape == vb.shape and np.allclose(va, vb, rtol=1e-10, atol=1e-12)


SQUARE = (4, 4)


# --- products and traces ------------------------------------------------------------------


def test_square_of_a_matrix():
    # d(XX) = dX X + X dX, so <G, d(XX)> = <G X^T + X^T G, dX> (the product rule)
    d = derive(lambda X: X @ X, (n, n))
    assert d.expr == G * X.T + X.T * G
    assert d.rules == ("mm",)
    assert "G*X.T + X.T*G" in str(d)
    assert d.latex() == "G X^{T} + X^{T} G"
    d.check()


def test_trace_of_a_product_with_a_constant():
    # d/dX tr(A X X) = (X A + A X)^T = A^T X^T + X^T A^T (Cookbook eq. 107, B = A);
    # the trace's own rule gives grad * I (eq. 100)
    d = derive(lambda X, A: cr.trace(A @ X @ X), (n, n), (n, n), wrt="X")
    assert d.expr == A.T * X.T + X.T * A.T
    assert set(d.rules) == {"trace", "mm"}
    assert d.cotangent is None
    d.check()


def test_trace_of_a_linear_function():
    # d/dX tr(A X B) = A^T B^T (Cookbook eq. 102)
    d = derive(lambda X, A, B: cr.trace(A @ X @ B), (n, n), (n, n), (n, n), wrt="X")
    assert d.expr == A.T * B.T
    d.check()


def test_trace_of_a_quadratic_form():
    # d/dX tr(X^T B X) = B X + B^T X (Cookbook eq. 108)
    d = derive(lambda X, B: cr.trace(X.T @ B @ X), (n, n), (n, n), wrt="X")
    assert d.expr == B * X + B.T * X
    d.check()


def test_squared_norm_of_a_matrix_vector_product():
    # ||A x||^2 = x^T A^T A x: d/dx = 2 A^T A x (Cookbook eq. 81 with B = A^T A, symmetric),
    # d/dA = 2 A x x^T (Cookbook eq. 77: d b^T X^T X c / dX = X (b c^T + c b^T), b = c = x)
    d = derive(lambda A, x: cr.norm(A @ x) ** 2, (n, n), (n,))
    assert set(d.expr) == {"A", "x"}
    assert d.expr["A"] == 2 * A * x * x.T
    assert d.expr["x"] == 2 * A.T * A * x
    assert d["x"] is d.expr["x"]
    assert {"pow", "linalg_vector_norm", "matmul"} <= set(d.rules)
    d.check()


def test_quadratic_form_of_a_vector():
    # d/dx x^T A x = (A + A^T) x (Cookbook eq. 81); d/dA x^T A x = x x^T (eq. 70, a = b = x)
    d = derive(lambda x, A: x @ A @ x, (n,), (n, n))
    assert numerically_equal(d.expr["x"], (A + A.T) * x, {"A": SQUARE, "x": (4, 1)})
    assert d.expr["A"] == x * x.T
    d.check()


# --- inverses, determinants, solves ----------------------------------------------------------


def test_logdet():
    # d/dX ln|det X| = X^-T (Cookbook eq. 57)
    d = derive(lambda X: cr.logdet(X), (n, n))
    assert d.expr == Inverse(X).T
    assert "linalg_slogdet" in d.rules
    d.check()


def test_det():
    # d/dX det X = det(X) X^-T (Cookbook eq. 49)
    d = derive(lambda X: cr.det(X), (n, n))
    assert d.expr == sp.Determinant(X) * Inverse(X).T
    assert "det(X)" in str(d)
    d.check()


def test_inverse():
    # d(X^-1) = -X^-1 dX X^-1 (Cookbook eq. 59), so the VJP is -X^-T G X^-T; with
    # G = a b^T that is eq. 61, d a^T X^-1 b / dX = -X^-T a b^T X^-T
    d = derive(lambda X: cr.linalg.inv(X), (n, n))
    assert d.expr == -Inverse(X).T * G * Inverse(X).T
    assert d.rules == ("linalg_inv",)
    d.check()
    a, b = MatrixSymbol("a", n, 1), MatrixSymbol("b", n, 1)
    eq61 = derive(lambda a, X, b: a @ cr.linalg.inv(X) @ b, (n,), (n, n), (n,), wrt="X")
    assert numerically_equal(eq61.expr, -Inverse(X).T * a * b.T * Inverse(X).T,
                             {"X": SQUARE, "a": (4, 1), "b": (4, 1)})
    eq61.check()


def test_solve():
    # Y = A^-1 B: d Y = A^-1 (dB - dA Y), so vjp_B = A^-T G and vjp_A = -A^-T G Y^T
    # (Cookbook eq. 59 and the product rule)
    d = derive(lambda A, B: cr.linalg.solve(A, B), (n, n), (n, n))
    assert d.expr["B"] == Inverse(A).T * G
    expected_A = -Inverse(A).T * G * (Inverse(A) * B).T
    assert numerically_equal(d.expr["A"], expected_A, {"A": SQUARE, "B": SQUARE, "G": SQUARE})
    d.check()
    vector = derive(lambda A, b: cr.linalg.solve(A, b), (n, n), (n,))
    vector.check()


# --- elementwise functions --------------------------------------------------------------------


def test_exp_is_a_hadamard_product():
    d = derive(lambda X: cr.exp(X), (n, n))
    assert d.expr == HadamardProduct(G, elementwise("exp", X)).doit()
    assert "exp.(X)" in str(d) and "∘" in str(d)
    d.check()


def test_sum_of_logs():
    # d/dX sum_ij log X_ij = X^∘-1 (entrywise reciprocals)
    d = derive(lambda X: cr.sum(cr.log(X)), (n, n))
    assert d.expr == HadamardPower(X, -1)
    assert d.rules == ("sum", "log")
    d.check()


def test_tanh_and_sigmoid():
    d = derive(lambda X: cr.sum(cr.tanh(X)), (n, n))
    expected = OneMatrix(n, n) - HadamardPower(elementwise("tanh", X), 2)
    assert d.expr == expected
    assert numerically_equal(d.expr, OneMatrix(n, n) - HadamardPower(X.applyfunc(sp.tanh), 2),
                             {"X": SQUARE})
    d.check()
    s = derive(lambda X: cr.sigmoid(X), (n, n))
    assert "sigmoid.(X)" in str(s)
    s.check()


def test_elementwise_square_and_frobenius_norm():
    # d/dX ||X||_F^2 = 2 X (Cookbook eq. 131)
    d = derive(lambda X: cr.sum(X * X), (n, n))
    assert d.expr == 2 * X
    d.check()
    f = derive(lambda X: cr.norm(X) ** 2, (n, n))
    assert f.expr == 2 * X
    f.check()


# --- sums ---------------------------------------------------------------------------------------


def test_sums():
    # the sum of all entries is tr(J X) with J the matrix of ones: its gradient is J
    d = derive(lambda X: cr.sum(X), (n, n))
    assert d.expr == OneMatrix(n, n)
    d.check()
    # sum(A X) = tr(J A X): gradient A^T J (Cookbook eq. 102 with B = I)
    s = derive(lambda A, X: cr.sum(A @ X), (n, n), (n, n), wrt="X")
    assert numerically_equal(s.expr, A.T * OneMatrix(n, n), {"A": SQUARE, "X": SQUARE})
    s.check()
    rows = derive(lambda X: cr.sum(X @ X, 1), (n, n))
    assert rows.cotangent.shape == (n, 1)
    rows.check()
    cols = derive(lambda X: cr.sum(X, 0), (n, n))
    assert cols.expr == OneMatrix(n, 1) * MatrixSymbol("G", n, 1).T  # G broadcast down rows
    cols.check()


def test_mean_with_numeric_shapes():
    d = derive(lambda X: cr.mean(X), (3, 3))
    assert d.expr == OneMatrix(3, 3) / 9
    d.check()


# --- einsum --------------------------------------------------------------------------------------


def test_einsum_matrix_product():
    d = derive(lambda A, B: cr.einsum("ij,jk->ik", A, B), (n, n), (n, n))
    assert d.expr == {"A": G * B.T, "B": A.T * G}
    assert d.rules == ("einsum",)
    d.check()


def test_einsum_inner_products():
    # <A, B> = tr(A^T B): gradients B and A (Cookbook eq. 101 / 104)
    d = derive(lambda A, B: cr.einsum("ij,ij->", A, B), (n, n), (n, n))
    assert d.expr == {"A": B, "B": A}
    d.check()
    v = derive(lambda x, y: cr.einsum("i,i->", x, y), (n,), (n,))
    assert v.expr == {"x": y, "y": x}
    v.check()


def test_einsum_matrix_vector_and_trace():
    d = derive(lambda A, x: cr.einsum("ij,j->i", A, x), (n, n), (n,))
    Gv = MatrixSymbol("G", n, 1)  # the cotangent of a vector output
    assert d.expr["A"] == Gv * x.T
    assert d.expr["x"] == A.T * Gv
    d.check()
    t = derive(lambda X: cr.einsum("ii->", X), (n, n))
    assert t.expr == Identity(n)
    t.check()


# --- the result object ----------------------------------------------------------------------------


def test_matrix_symbols_and_names():
    Y = MatrixSymbol("Y", n, n)
    d = derive(lambda X: X @ X, Y)
    assert d.expr == G * Y.T + Y.T * G
    named = derive(lambda *a: a[0] @ a[1], (n, n), (n, n), names=["P", "Q"], wrt=["Q"])
    P = MatrixSymbol("P", n, n)
    assert named.expr == P.T * G
    named.check()
    v = MatrixSymbol("v", n, 1)  # a one-column symbol is a vector
    w = derive(lambda v: cr.sum(v * v), v)
    assert w.expr == 2 * v
    w.check(n=5, seed=3)


def test_unsimplified_form_is_kept():
    d = derive(lambda X: cr.trace(X @ X), (n, n))
    assert numerically_equal(d.unsimplified, d.expr, {"X": SQUARE})
    assert d.expr == 2 * X.T  # Cookbook eq. 106
    assert r"\\" not in d.latex()
    several = derive(lambda A, B: cr.trace(A @ B), (n, n), (n, n))
    assert "\\nabla_{A}" in several.latex() and "\\nabla_{B}" in several.latex()


def test_bad_arguments():
    with pytest.raises(TypeError, match="2 parameter"):
        derive(lambda X, Y: X @ Y, (n, n))
    with pytest.raises(ValueError, match="not parameters"):
        derive(lambda X: X @ X, (n, n), wrt="Z")


# --- check() catches wrong formulas ---------------------------------------------------------------


def _wrong_mm(monkeypatch, also_numeric):
    op = TABLE["mm"]
    for mask in range(1, len(op.plans)):
        op.plan(mask)  # compiled from the right rules, kept by the numeric backward
    if also_numeric:  # the numeric backward compiles the wrong rule too
        monkeypatch.setattr(op, "plans", [None] * len(op.plans))
    fn, params = op.vjp_rules["self"]
    monkeypatch.setitem(op.vjp_rules, "self",
                        (lambda F, g, mat2: F.matmul(g, mat2), params))  # missing ^T


def test_check_fails_loudly_for_a_wrong_rule(monkeypatch):
    _wrong_mm(monkeypatch, also_numeric=False)
    d = derive(lambda X: X @ X, (n, n))
    assert d.expr == G * X + X.T * G
    with pytest.raises(AssertionError) as info:
        d.check()
    message = str(info.value)
    assert "formula gives" in message and "chainrule's numeric VJP gives" in message


def test_check_uses_finite_differences_too(monkeypatch):
    _wrong_mm(monkeypatch, also_numeric=True)
    d = derive(lambda X: X @ X, (n, n))
    with pytest.raises(AssertionError, match="central finite differences"):
        d.check()


# --- what has no symbolic form -------------------------------------------------------------------


def test_op_without_symbolic_form_is_named():
    with pytest.raises(NotImplementedError, match="'cumsum' has no symbolic form"):
        derive(lambda x: cr.cumsum(x, 0), (n,))


def test_rule_using_a_name_without_symbolic_form_is_named(monkeypatch):
    op = TABLE["exp"]
    for mask in range(1, len(op.plans)):
        op.plan(mask)
    monkeypatch.setitem(op.vjp_rules, "self",
                        (lambda F, g, self: g * F.prod_others(self, None), ("self",)))
    with pytest.raises(NotImplementedError, match=r"'exp' uses F\.prod_others"):
        derive(lambda X: cr.exp(X), (n, n))


def test_missing_sympy_says_how_to_install(monkeypatch):
    import sys

    from chainrule import symbolic

    monkeypatch.setitem(sys.modules, "sympy", None)
    with pytest.raises(ImportError, match=r"pip install chainrule\[symbolic\]"):
        symbolic.derive(lambda X: X @ X, (3, 3))


# --- the command line -----------------------------------------------------------------------------


def test_cli_prints_the_formula(capsys):
    assert main(["derive", "trace(X.T @ A @ X)", "--shapes", "X=3x3,A=3x3", "--wrt", "X"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "grad_X = A*X + A.T*X"


def test_cli_symbolic_sizes_latex_rules_and_check(capsys):
    code = main(["derive", "norm(A @ x) ** 2", "--shapes", "A=nxn,x=n", "--latex", "--rules",
                 "--check"])
    out = capsys.readouterr().out
    assert code == 0
    assert "grad_A = 2*A*x*x.T" in out and "grad_x = 2*A.T*A*x" in out
    assert "\\nabla_{A}" in out
    assert "rules: pow, linalg_vector_norm, matmul" in out
    assert "check: the formula matches" in out
    assert main(["derive", "inv(X)", "--shapes", "X=nxn"]) == 0
    assert "G" in capsys.readouterr().out


def test_cli_errors(capsys):
    assert main(["derive", "cumsum(x, 0)", "--shapes", "x=n"]) == 1
    assert "cumsum" in capsys.readouterr().err
    assert main(["derive", "X @", "--shapes", "X=3x3"]) == 2
    assert "cannot parse" in capsys.readouterr().err
    assert main(["derive", "nosuchfunction(X)", "--shapes", "X=3x3"]) == 2
    assert "nosuchfunction" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["derive", "X", "--shapes", "X:3x3"])
