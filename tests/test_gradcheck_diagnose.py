"""gradcheck that explains: the diagnosis of a failure, structured inputs, fast mode,
progress and the plot.

Each diagnosis pattern has a pure test of its detector (``chainrule.autograd.diagnose``) on
small hand-made Jacobians, and a deliberately broken custom Function whose gradcheck report
names that pattern.
"""

import importlib
import json
import warnings

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import Function, GradcheckError, gradcheck, gradgradcheck
from chainrule.autograd import diagnose as dg
from functions import Cube, MatVec

# chainrule.autograd.gradcheck is the function; the module holds the settings.
gc_module = importlib.import_module("chainrule.autograd.gradcheck")

RNG = np.random.default_rng(20240611)


def leaf(a, dtype=np.float64):
    return cr.tensor(np.asarray(a, dtype=dtype), requires_grad=True)


def randn(*shape):
    return RNG.standard_normal(shape)


def spd(n, batch=()):
    B = RNG.standard_normal(batch + (n, n))
    return B @ np.swapaxes(B, -1, -2) + n * np.eye(n)


def failure(fn, inputs, **kwargs):
    """Run gradcheck, expect it to fail, return the error."""
    with pytest.raises(GradcheckError) as info:
        gradcheck(fn, inputs, **kwargs)
    return info.value


def patterns(err):
    return err.report.patterns


# --- broken (and correct) custom Functions ----------------------------------------------


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class SquareTwice(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 4 * x * g  # WRONG: 2 x


class SquareHalf(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x * g  # WRONG: 2 x


class SinNeg(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * x.cos()  # WRONG sign


class MatVecT(Function):
    @staticmethod
    def forward(ctx, A, x):
        ctx.save_for_backward(A, x)
        return A @ x

    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        return cr.outer(x, g), A.t() @ g  # WRONG: outer(g, x) for A


A0 = randn(3, 3)


class LinearJ(Function):
    @staticmethod
    def forward(ctx, x):
        return cr.tensor(A0) @ x

    @staticmethod
    def backward(ctx, g):
        return cr.tensor(A0) @ g  # WRONG: A0.T @ g


class MulSwapped(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * x, g * y  # WRONG order: (g * y, g * x)


class SymLower(Function):
    @staticmethod
    def forward(ctx, X):
        return X + X.t()

    @staticmethod
    def backward(ctx, g):
        return cr.tril(g + g.t())  # WRONG: only one triangle of G + G^T


class SymHalfUpper(SymLower):
    @staticmethod
    def backward(ctx, g):
        s = g + g.t()
        return cr.tril(s) + 0.5 * cr.triu(s, 1)  # WRONG: upper triangle halved


class SymDiagTwice(SymLower):
    @staticmethod
    def backward(ctx, g):
        s = g + g.t()
        return s * cr.tensor(1 + np.eye(3))  # WRONG: the diagonal counted twice


C3 = randn(3, 3)


class TrilScale(Function):
    """Reads only the lower triangle; the backward returns the full matrix's gradient."""

    @staticmethod
    def forward(ctx, X):
        return cr.tril(X) * cr.tensor(C3)

    @staticmethod
    def backward(ctx, g):
        return g * cr.tensor(C3)


class TriuScale(TrilScale):
    @staticmethod
    def forward(ctx, X):
        return cr.triu(X) * cr.tensor(C3)


V3 = randn(3)


class DiagTimes(Function):
    """``D @ v`` for a diagonal ``D``: reads only the diagonal, backward of a full matmul."""

    @staticmethod
    def forward(ctx, D):
        return cr.diagonal(D) * cr.tensor(V3)

    @staticmethod
    def backward(ctx, g):
        return cr.outer(g, cr.tensor(V3))


class BiasMean(Function):
    @staticmethod
    def forward(ctx, x, b):
        return x + b

    @staticmethod
    def backward(ctx, g):
        return g, g.mean(0)  # WRONG: g.sum(0)


class BiasFirst(BiasMean):
    @staticmethod
    def backward(ctx, g):
        return g, g[0]  # WRONG: g.sum(0)


class ScaleBySum(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x.sum()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.sum()  # WRONG: misses the cross term (g . x) 1


A6 = randn(6, 3)
A6_WRONG = A6.copy()
A6_WRONG[3:] = randn(3, 3)


class RowsWrong(Function):
    @staticmethod
    def forward(ctx, x):
        return cr.tensor(A6) @ x

    @staticmethod
    def backward(ctx, g):
        return cr.tensor(A6_WRONG).t() @ g  # WRONG for output entries 3-5


class MatSquareHalf(Function):
    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, g):
        (X,) = ctx.saved_tensors
        return g @ X.t()  # WRONG: misses X.t() @ g


class ZeroGrad(Square):
    @staticmethod
    def backward(ctx, g):
        return g * 0


class BadCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2.9 * x * x


class BadMatVec(MatVec):
    @staticmethod
    def backward(ctx, g):
        A, x = ctx.saved_tensors
        return cr.outer(g, x), A.t() @ g * 1.5


class WrongMatSquare(Function):
    """examples/wrong_backward.py: the backward of the elementwise square for X @ X."""

    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, grad):
        (X,) = ctx.saved_tensors
        return 2 * X * grad


# --- pure detectors -----------------------------------------------------------------------


N4 = randn(4, 4)


def test_fit_and_format_factor():
    assert dg.fit_factor(3 * N4, N4) == pytest.approx(3)
    assert dg.fit_factor(N4, np.zeros((4, 4))) is None
    assert [dg.format_factor(c) for c in (2.0, 0.5, 1 / 3, -0.25, 1.2345)] == [
        "2", "0.5", "1/3", "-0.25", "1.234"]


def test_detect_constant_factor_and_sign_flip():
    f = dg.constant_factor(2 * N4, N4)
    assert f.pattern == "constant factor" and f.details["factor"] == pytest.approx(2)
    assert "analytic = 2 x numerical" in f.message
    assert "0.5 x" in dg.constant_factor(0.5 * N4, N4).message
    assert dg.constant_factor(N4, N4) is None and dg.constant_factor(-N4, N4) is None
    noisy = 2 * N4 + 0.1 * randn(4, 4)  # not a clean ratio: residual too large
    assert dg.constant_factor(noisy, N4) is None
    assert dg.sign_flip(-N4, N4).pattern == "sign flip"
    assert dg.sign_flip(2 * N4, N4) is None


def test_detect_transpose():
    J = randn(4, 4)  # output (2, 2), input (2, 2)
    perm = [0, 2, 1, 3]
    assert dg.transposed(J[:, perm], J, (2, 2), (2, 2)).details["which"] == "input"
    assert dg.transposed(J[perm, :], J, (2, 2), (2, 2)).details["which"] == "output"
    assert dg.transposed(J.T, J, (4,), (4,)).details["which"] == "jacobian"
    assert dg.transposed(J, J, (2, 2), (2, 2)) is None
    assert dg.transposed(randn(4, 4), J, (2, 2), (2, 2)) is None


def test_detect_swapped_inputs():
    Jx, Jy = randn(3, 3), randn(3, 3)
    analytic, numerical = {(0, 0): Jy, (0, 1): Jx}, {(0, 0): Jx, (0, 1): Jy}
    f = dg.swapped_inputs(analytic, numerical, (0, 0))
    assert f.pattern == "swapped inputs" and f.details["other"] == 1
    assert "vice versa" in f.message
    assert dg.swapped_inputs(numerical, numerical, (0, 0)) is None


def test_detect_one_triangle_and_symmetric_input():
    n = 3
    J = randn(4, n * n)
    low, up, dia = (np.tril(np.ones((n, n)), -1).ravel() > 0,
                    np.triu(np.ones((n, n)), 1).ravel() > 0, np.eye(n).ravel() > 0)
    a = np.where(up, 0.0, J)
    f = dg.one_triangle(a, J, (n, n))
    assert f.pattern == "one triangle" and f.details == {"triangle": "lower", "other": "zero"}
    half = np.where(low, 0.5 * J, J)
    assert dg.one_triangle(half, J, (n, n)).details == {"triangle": "upper",
                                                         "other": "half of numerical"}
    # A function reading the lower triangle of a symmetric input, symmetric gradient G:
    G = randn(n, n)
    G = G + G.T
    numerical = (np.tril(2 * G, -1) + np.diag(np.diag(G))).ravel()[None]
    f = dg.one_triangle(G.ravel()[None], numerical, (n, n), input_index=0)
    assert f.pattern == "symmetric input" and "structure={0: 'symmetric'}" in f.message
    assert dg.one_triangle(J, J + 1, (n, n)) is None and dg.one_triangle(J, J, (9,)) is None
    assert dia.sum() == n


def test_detect_unread_entries():
    J = randn(3, 9)
    upper = np.triu(np.ones((3, 3)), 1).ravel() > 0
    numerical = np.where(upper, 0.0, J)
    f = dg.unread_entries(J, numerical, (3, 3), input_index=2)
    assert f.details["structure"] == "lower" and "structure={2: 'lower'}" in f.message
    some = np.zeros(9, dtype=bool)
    some[[0, 4]] = True
    f = dg.unread_entries(J, np.where(some, 0.0, J), (3, 3))
    assert f.details["structure"] is None and f.details["entries"] == [0, 4]
    assert dg.unread_entries(J, J, (3, 3)) is None


def test_detect_diagonal_factor():
    J = randn(2, 9)
    dia = np.eye(3).ravel() > 0
    f = dg.diagonal_factor(np.where(dia, 2 * J, J), J, (3, 3))
    assert f.pattern == "diagonal factor" and f.details["factor"] == pytest.approx(2)
    assert dg.diagonal_factor(J, J, (3, 3)) is None


def test_detect_unsummed_broadcast():
    # y = x + b, x (4, 3), b (3,): d y[i, j] / d b[k] = delta_jk.
    numerical = np.tile(np.eye(3), (4, 1))
    f = dg.unsummed_broadcast(numerical / 4, numerical, (4, 3), (3,))
    assert f.pattern == "broadcast not summed" and f.details == {"dims": (0,), "count": 4}
    one = numerical.copy()
    one[3:] = 0
    assert dg.unsummed_broadcast(one, numerical, (4, 3), (3,)).details["slice"] == 0
    assert dg.unsummed_broadcast(numerical, numerical, (4, 3), (3,)) is None
    # No broadcasting, but analytic = numerical / (size of an output dim): a mean?
    J = randn(6, 6)
    assert dg.unsummed_broadcast(J / 3, J, (2, 3), (6,)).details["count"] == 3


def test_detect_partial_agreement():
    J = randn(6, 3)
    wrong = J.copy()
    wrong[3:] += 1
    f = dg.partial_agreement(wrong, J, (6,), (3,))
    assert "output entries 0-2 match, 3-5 differ" in f.message
    assert f.details["rows"] == [0, 1, 2]
    D = np.diag(randn(4))
    full = D + np.triu(randn(4, 4), 1)
    f = dg.partial_agreement(D, full, (4,), (4,))
    assert "analytic is diagonal" in f.message and "the diagonal matches" in f.message
    off = full + np.diag(randn(4))
    assert "matches off the diagonal" in dg.partial_agreement(off, full, (4,), (4,)).message
    assert dg.partial_agreement(J, J, (6,), (3,)).message.startswith("18 of 18")


def test_detect_difference_term():
    X = randn(3, 3)
    eye = np.eye(3)
    # d(X @ X) = dX X + X dX; J[(a, b), (c, d)] for the two terms.
    right = np.einsum("ac,db->abcd", eye, X).reshape(9, 9)
    left = np.einsum("ac,bd->abcd", X, eye).reshape(9, 9)
    f = dg.difference_term(right, right + left, (3, 3), (3, 3), values={0: X})
    assert f.pattern == "difference term"
    assert "misses the term input0^T @ G" in f.message
    J = randn(4, 4)
    f = dg.difference_term(J - np.diag(np.diag(J)), J, (4,), (4,))
    assert "the diagonal (elementwise) term is missing" in f.message


def test_detect_zero_and_nonfinite():
    J = randn(2, 2)
    assert dg.zero_gradient(0 * J, J).pattern == "zero gradient"
    assert dg.zero_gradient(J, 0 * J).pattern == "zero numerical"
    assert dg.zero_gradient(J, J) is None
    bad = J.copy()
    bad[0, 0] = np.nan
    assert dg.nonfinite(bad, J).details == {"analytic": 1, "numerical": 0}
    assert dg.nonfinite(J, J) is None


def test_precision_verdicts():
    f = dg.precision("float32", True, {1e-3: True, 1e-8: False}, 1e-6)
    assert f.pattern == "float32 round-off" and f.message.startswith("passes in float64")
    assert dg.precision("float64", None, {1e-3: False, 1e-4: True}, 1e-2).pattern == "step size"
    f = dg.precision("float64", None, {1e-3: False, 1e-8: False}, 1e-6)
    assert f.pattern == "real bug" and "fails at every step size" in f.message


# --- each pattern, from a broken custom Function -----------------------------------------


def test_correct_function_report_says_passed():
    report = gradcheck(MatVec.apply, (leaf(randn(3, 4)), leaf(randn(4))), return_report=True)
    assert report and report.passed and report.findings == []
    assert str(report).startswith("gradcheck passed for MatVec.apply: 2 (output, input) pairs")
    assert gradcheck(MatVec.apply, (leaf(randn(3, 4)), leaf(randn(4)))) is True


def test_report_constant_factor():
    err = failure(SquareTwice.apply, (leaf(randn(4)),))
    assert patterns(err) == ["constant factor", "real bug"]
    assert "analytic = 2 x numerical" in err.diagnosis[0]
    assert "analytic = 0.5 x numerical" in str(failure(SquareHalf.apply, (leaf(randn(4)),)))


def test_report_sign_flip():
    err = failure(SinNeg.apply, (leaf(randn(4)),))
    assert patterns(err)[0] == "sign flip"
    assert "analytic = -1 x numerical" in err.diagnosis[0]


def test_report_transpose():
    err = failure(MatVecT.apply, (leaf(randn(3, 3)), leaf(randn(3))))
    assert patterns(err)[0] == "transpose"
    assert err.report.findings[0][2].details["which"] == "input"
    assert "transposed" in err.diagnosis[0] and "(output 0, input 0)" in err.diagnosis[0]
    err = failure(LinearJ.apply, (leaf(randn(3)),))
    assert err.report.findings[0][2].details["which"] == "jacobian"


def test_report_swapped_inputs():
    err = failure(MulSwapped.apply, (leaf(randn(3)), leaf(randn(3))))
    assert patterns(err)[0] == "swapped inputs"
    assert "inputs 0 and 1 are swapped" in err.diagnosis[0]
    assert len(err.report.failing) == 2  # both pairs named ...
    assert sum("swapped" in d for d in err.diagnosis) == 1  # ... the swap said once


def test_report_one_triangle():
    X = leaf(randn(3, 3))
    err = failure(SymLower.apply, (X,))
    assert patterns(err)[0] == "one triangle"
    assert "zero on the strict upper triangle" in err.diagnosis[0]
    err = failure(SymHalfUpper.apply, (X,))
    assert "half of numerical on the strict upper triangle" in err.diagnosis[0]
    err = failure(SymDiagTwice.apply, (X,))
    assert patterns(err)[0] == "diagonal factor" and "2 x numerical on its diagonal" in str(err)


def test_report_broadcast_not_summed():
    x, b = leaf(randn(4, 3)), leaf(randn(3))
    err = failure(BiasMean.apply, (x, b))
    assert patterns(err)[0] == "broadcast not summed"
    assert (err.output_index, err.input_index) == (0, 1)
    assert "analytic = numerical / 4" in err.diagnosis[0]
    err = failure(BiasFirst.apply, (x, b))
    assert "only at index 0 of output dim 0" in err.diagnosis[0]


def test_report_partial_agreement_and_difference_term():
    err = failure(RowsWrong.apply, (leaf(randn(3)),))
    assert patterns(err)[0] == "partial agreement"
    assert "output entries 0-2 match, 3-5 differ" in err.diagnosis[0]
    err = failure(ScaleBySum.apply, (leaf(randn(4)),))
    assert "analytic is diagonal (an elementwise derivative)" in err.diagnosis[0]
    err = failure(MatSquareHalf.apply, (leaf(randn(3, 3)),))
    assert "difference term" in patterns(err)
    assert any("misses the term input0^T @ G" in d for d in err.diagnosis)


def test_report_zero_gradient():
    err = failure(ZeroGrad.apply, (leaf(randn(3)),))
    assert patterns(err)[0] == "zero gradient"


def test_report_float32_round_off_and_real_bug():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        err = failure(Cube.apply, (leaf(randn(3), np.float32),))
        assert patterns(err) == ["float32 round-off"]  # only the verdict: the rest is noise
        assert "passes in float64: float32 round-off" in err.diagnosis[0]
        err = failure(BadCube.apply, (leaf(randn(3), np.float32),))
        assert patterns(err)[-1] == "real bug"
        assert "fails at every step size" in err.diagnosis[-1] and "in float64" in str(err)


def test_report_step_size_in_float64():
    err = failure(lambda x: (10 * x).exp(), (leaf(randn(3) * 0.1),), eps=1e-2)
    assert patterns(err) == ["step size"]
    assert "passes at eps=0.001" in err.diagnosis[0]


def test_report_names_every_failing_pair_and_the_worst_entries():
    class BothWrong(MatVec):
        @staticmethod
        def backward(ctx, g):
            A, x = ctx.saved_tensors
            return -cr.outer(g, x), A.t() @ g * 3

    A, x = leaf(randn(3, 4)), leaf(randn(4))
    err = failure(BothWrong.apply, (A, x))
    text = str(err)
    assert "2 of 2 (output, input) pairs disagree" in text
    assert "Jacobian mismatch for output 0 with respect to input 0" in text
    assert "Jacobian mismatch for output 0 with respect to input 1" in text
    assert patterns(err) == ["sign flip", "constant factor", "real bug"]
    worst = err.report.worst
    assert len(worst) == 5 and [w.error for w in worst] == sorted(
        (w.error for w in worst), reverse=True)
    assert "Worst entries (top 5" in text
    # The first failing pair keeps the old attributes.
    assert (err.output_index, err.input_index) == (0, 0)
    np.testing.assert_allclose(err.analytic, -err.numerical, atol=1e-6)
    out_idx, in_idx, a, n = err.worst
    assert len(out_idx) == 1 and len(in_idx) == 2  # indices into y (3,) and A (3, 4)
    data = json.loads(json.dumps(err.report.to_dict()))
    assert data["passed"] is False and data["patterns"] == patterns(err)


def test_wrong_backward_example_report():
    cr.manual_seed(3)
    X = cr.randn(2, 2, dtype=cr.float64, requires_grad=True)
    err = failure(WrongMatSquare.apply, (X,))
    assert patterns(err) == ["partial agreement", "real bug"]
    assert "analytic is diagonal (an elementwise derivative)" in err.diagnosis[0]


def test_no_exception_returns_false_or_the_report():
    x = leaf(randn(3))
    assert gradcheck(SquareTwice.apply, (x,), raise_exception=False) is False
    report = gradcheck(SquareTwice.apply, (x,), raise_exception=False, return_report=True)
    assert not report and report.patterns[0] == "constant factor"


# --- structure-aware checks ----------------------------------------------------------------


@pytest.mark.parametrize("fn", [cr.linalg.cholesky, cr.linalg.eigvalsh,
                                lambda A: cr.linalg.cholesky(A, upper=True)],
                         ids=["cholesky", "eigvalsh", "cholesky_upper"])
def test_symmetric_functions_check_cleanly_with_structure(fn):
    A = leaf(spd(3))
    err = failure(fn, (A,))  # reads one triangle: the plain check cannot pass
    assert patterns(err) == ["symmetric input"]
    assert "structure={0: 'symmetric'}" in err.diagnosis[0]
    assert gradcheck(fn, (A,), structure={0: "symmetric"})
    assert gradcheck(fn, (A,), structure={0: "spd"})


def test_structure_batched_and_eigh():
    A = leaf(spd(3, (2,)))
    assert gradcheck(cr.linalg.cholesky, (A,), structure={0: "spd"})
    report = gradcheck(lambda S: cr.linalg.eigh(S), (leaf(spd(3)),),
                       structure={0: "symmetric"}, return_report=True)
    assert report and "input 0 checked along 6 symmetric directions" in str(report)


@pytest.mark.parametrize("fn,kind", [(TrilScale.apply, "lower"), (TriuScale.apply, "upper"),
                                     (DiagTimes.apply, "diagonal")])
def test_triangular_and_diagonal_inputs(fn, kind):
    X = leaf(randn(3, 3))
    err = failure(fn, (X,))  # the function reads only part of X, the backward all of it
    assert patterns(err) == ["unread entries"]
    assert f"structure={{0: '{kind}'}}" in err.diagnosis[0]
    assert gradcheck(fn, (X,), structure={0: kind})


A4 = randn(4, 4)
S4 = randn(4, 4)
S4 = S4 + S4.T


class LinearOnOrthogonal(Function):
    """``<A, Q>`` with a gradient that differs from A by Q S (S symmetric): a normal
    direction, invisible along the tangent directions Q K of the orthogonal group."""

    @staticmethod
    def forward(ctx, Q):
        ctx.save_for_backward(Q)
        return (Q * cr.tensor(A4)).sum()

    @staticmethod
    def backward(ctx, g):
        (Q,) = ctx.saved_tensors
        return g * (cr.tensor(A4) + Q @ cr.tensor(S4))


class LinearOnOrthogonalWrong(LinearOnOrthogonal):
    @staticmethod
    def backward(ctx, g):
        return g * 2 * cr.tensor(A4)


def test_orthogonal_inputs():
    Q = leaf(np.linalg.qr(randn(4, 4))[0])
    failure(LinearOnOrthogonal.apply, (Q,))
    assert gradcheck(LinearOnOrthogonal.apply, (Q,), structure={0: "orthogonal"})
    err = failure(LinearOnOrthogonalWrong.apply, (Q,), structure={0: "orthogonal"})
    assert "analytic = 2 x numerical" in err.diagnosis[0]
    assert "along orthogonal directions" in str(err)
    # Orthonormal columns (Stiefel): the directions also leave the column span.
    Qt, At = np.linalg.qr(randn(5, 3))[0], cr.tensor(randn(5, 3))
    assert gradcheck(lambda X: (X.mT @ At).tanh(), (leaf(Qt),), structure={0: "orthogonal"})


def test_structure_validation():
    with pytest.raises(ValueError, match="positive-definite"):
        gradcheck(cr.linalg.cholesky, (leaf(-spd(3)),), structure={0: "spd"})
    with pytest.raises(ValueError, match="orthonormal"):
        gradcheck(cr.linalg.cholesky, (leaf(spd(3)),), structure={0: "orthogonal"})
    with pytest.raises(ValueError, match="unknown structure"):
        gradcheck(cr.linalg.cholesky, (leaf(spd(3)),), structure={0: "sym"})
    with pytest.raises(ValueError, match="not inputs that require grad"):
        gradcheck(cr.linalg.cholesky, (leaf(spd(3)),), structure={1: "symmetric"})
    with pytest.raises(ValueError, match="needs a matrix"):
        gradcheck(Square.apply, (leaf(randn(3)),), structure={0: "lower"})


def test_gradgradcheck_passes_structure_through():
    assert gradgradcheck(cr.linalg.eigvalsh, (leaf(spd(3)),), structure={0: "symmetric"})


# --- fast mode ------------------------------------------------------------------------------


def counting(fn):
    calls = []

    def wrapped(*args):
        calls.append(1)
        return fn(*args)

    return wrapped, calls


def test_fast_mode_passes_with_few_evaluations():
    A, x = leaf(randn(3, 4)), leaf(randn(4))
    fn, calls = counting(MatVec.apply)
    assert gradcheck(fn, (A, x), fast_mode=True) is True
    assert len(calls) == 1 + 2 * 2  # one forward for the VJP, two evaluations per input
    assert gradcheck(cr.linalg.cholesky, (leaf(spd(3)),), structure={0: "spd"},
                     fast_mode=True)
    Q = leaf(np.linalg.qr(randn(4, 4))[0])
    assert gradcheck(LinearOnOrthogonal.apply, (Q,), structure={0: "orthogonal"},
                     fast_mode=True)


def test_fast_mode_locates_the_failure():
    err = failure(BadMatVec.apply, (leaf(randn(3, 4)), leaf(randn(4))), fast_mode=True)
    assert (err.output_index, err.input_index) == (0, 1)
    assert "fast mode: u^T J v differs for input 1" in str(err)
    assert "analytic = 1.5 x numerical" in err.diagnosis[0]
    assert [(p.output_index, p.input_index) for p in err.report.failing] == [(0, 1)]


# --- progress and plot ------------------------------------------------------------------------


def test_progress_bar(capsys, monkeypatch):
    x = leaf(randn(3))
    gradcheck(Square.apply, (x,), progress=True)
    assert "gradcheck: numerical Jacobian" in capsys.readouterr().err
    gradcheck(Square.apply, (x,), progress=False)
    gradcheck(Square.apply, (x,))  # auto: fast, so no bar
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(importlib.import_module("chainrule.autograd._gradcheck_numerics"),
                        "PROGRESS_AFTER_S", 0.0)
    gradcheck(Square.apply, (x,))
    assert "gradcheck: numerical Jacobian" in capsys.readouterr().err


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "report.png"
    cr.manual_seed(3)
    X = cr.randn(2, 2, dtype=cr.float64, requires_grad=True)
    with pytest.raises(GradcheckError):
        gradcheck(WrongMatSquare.apply, (X,), plot=str(path))
    assert path.exists() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    passing = tmp_path / "passing.png"
    assert gradcheck(Square.apply, (leaf(randn(3)),), plot=passing)
    assert passing.exists() and passing.stat().st_size > 0
