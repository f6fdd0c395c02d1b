"""``chainrule.autograd.validate``: each check's outcome on right and wrong Functions."""

import importlib

import numpy as np
import pytest

import chainrule as cr
from chainrule.autograd import Function, GradcheckError, once_differentiable
from chainrule.autograd.validate import CHECKS, LINT_CHECKS, ValidationResult, validate
from functions import Cube, MatVec

A0 = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 2.0]])
X0 = np.array([0.3, -0.7, 1.1])
S0 = np.array([[0.4, -1.2], [0.9, 0.3]])


def statuses(result):
    return {c.name: c.status for c in result.checks}


def run(fn, *inputs, **kwargs):
    kwargs.setdefault("verbose", False)
    return validate(fn, *[cr.tensor(a) if isinstance(a, np.ndarray) else a for a in inputs],
                    **kwargs)


# --- Functions under test -------------------------------------------------------------------


class MatSquare(Function):
    @staticmethod
    def forward(ctx, X):
        ctx.save_for_backward(X)
        return X @ X

    @staticmethod
    def backward(ctx, G):
        (X,) = ctx.saved_tensors
        return G @ X.t() + X.t() @ G


class WrongMatSquare(MatSquare):
    @staticmethod
    def backward(ctx, G):
        (X,) = ctx.saved_tensors
        return 2 * X * G  # the elementwise square's backward


class WrongJvpCube(Cube):
    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 2 * x * x  # should be 3 x^2 t


class WrongBackwardRightJvpCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 3 * x * x


class TooManyGradients(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x, g


class WrongShape(Cube):
    @staticmethod
    def backward(ctx, g):
        return g.sum()


class ReturnsArray(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x.detach().numpy() ** 2 * g.detach().numpy()


class RaisingBackward(Cube):
    @staticmethod
    def backward(ctx, g):
        raise ValueError("oops")


class NumpyBackward(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return cr.tensor(3 * x.detach().numpy() ** 2 * g.detach().numpy())


class OnceCube(Cube):
    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class ChangesSavedTensor(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        result = g * 3 * x * x
        x.mul_(2.0)  # bumps the version of the saved tensor
        return result


class ChangesGradOutputThroughNumpy(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        result = g * 3 * x * x
        g.detach().numpy()[...] = 0.0  # no version bump: only the values show it
        return result


class ChangesInputInForward(Function):
    @staticmethod
    def forward(ctx, x):
        x.detach().numpy()[...] *= 2.0
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g


class Scale(Function):
    """A non-tensor argument: backward returns None for it."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class TwoOutputs(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, (x + y).sum()

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return g1 * y + g2, g1 * x + g2


# --- correct Functions ----------------------------------------------------------------------


def test_correct_matvec_passes_every_check_including_the_adjoint_identity():
    result = run(MatVec, A0, X0)
    assert isinstance(result, ValidationResult)
    assert [c.name for c in result.checks] == list(CHECKS)
    assert statuses(result) == dict.fromkeys(CHECKS, "pass")
    assert result.ok and bool(result) and result.failed == [] and result.diagnosis == []
    assert result.worst_error < 1e-8
    assert result["adjoint"].error < 1e-10
    np.testing.assert_allclose(result.jacobians[(0, 1)], A0, atol=1e-8)  # d(Ax)/dx = A
    np.testing.assert_allclose(result.analytic[(0, 1)], A0, atol=1e-12)
    assert "backward returned 2 values" in result["outputs"].message


def test_correct_matsquare_passes_and_skips_the_adjoint_without_jvp():
    result = run(MatSquare, S0)
    assert statuses(result) == {"outputs": "pass", "gradcheck": "pass",
                                "gradgradcheck": "pass", "adjoint": "skip", "in-place": "pass",
                                **dict.fromkeys(LINT_CHECKS, "pass")}
    assert result.ok
    assert "no jvp" in result["adjoint"].message


def test_non_tensor_arguments_and_several_outputs():
    result = run(Scale, X0, 3.0)
    assert result.ok and statuses(result)["gradcheck"] == "pass"
    assert "passed as is" in result.inputs[1]
    result = run(TwoOutputs, X0, -X0 + 0.5)
    assert result.ok
    assert set(result.jacobians) == {(0, 0), (1, 0), (0, 1), (1, 1)}


def test_the_users_inputs_are_not_touched():
    A, x = cr.tensor(A0), cr.tensor(X0)
    run(MatVec, A, x)
    assert not A.requires_grad and A.grad is None
    np.testing.assert_array_equal(A.numpy(), A0)


def test_only_the_inputs_marked_requires_grad_are_checked_when_some_are():
    A = cr.tensor(A0)
    x = cr.tensor(X0, requires_grad=True)
    result = validate(MatVec, A, x, verbose=False)
    assert result.ok
    assert set(result.jacobians) == {(0, 1)}
    assert "not differentiated" in result.inputs[0] and "checked" in result.inputs[1]


# --- broken Functions -----------------------------------------------------------------------


def test_wrong_backward_fails_gradcheck_only():
    result = run(WrongMatSquare, S0)
    assert statuses(result) == {"outputs": "pass", "gradcheck": "fail",
                                # a wrong backward can still be differentiated consistently
                                "gradgradcheck": "pass", "adjoint": "skip", "in-place": "pass",
                                **dict.fromkeys(LINT_CHECKS, "pass")}  # its backward is linear
    assert not result.ok and not result and result.failed == ["gradcheck"]
    check = result["gradcheck"]
    assert check.error > 0.1 and result.worst_error == check.error
    assert "Jacobian mismatch" in check.message and check.short.startswith("Jacobian mismatch")
    assert isinstance(check.diagnosis, list)  # from the GradcheckError, where provided
    assert result.diagnosis == check.diagnosis
    assert check.report is not None and "WrongMatSquare" in str(check.report)
    # The summary shows both Jacobians side by side.
    text = result.summary()
    assert "[FAIL] gradcheck" in text and "Result: FAIL (gradcheck)" in text
    assert "numerical (finite differences)" in text and "from backward" in text


def test_wrong_jvp_fails_the_adjoint_check_and_is_blamed():
    result = run(WrongJvpCube, X0)
    assert statuses(result)["gradcheck"] == "pass"
    assert statuses(result)["adjoint"] == "fail"
    assert "jvp disagrees with finite differences" in result["adjoint"].message


def test_wrong_backward_with_right_jvp_blames_backward():
    result = run(WrongBackwardRightJvpCube, X0)
    assert statuses(result)["gradcheck"] == "fail"
    assert statuses(result)["adjoint"] == "fail"
    assert "backward is the wrong one" in result["adjoint"].message


@pytest.mark.parametrize("fn, words", [
    (TooManyGradients, "returned 2 gradients, expected 1"),
    (WrongShape, "gradient of shape () for input 0, which has shape (3,)"),
    (ReturnsArray, "returned a ndarray as the gradient of input 0"),
])
def test_wrong_gradient_count_shape_or_type_is_reported_not_raised(fn, words):
    result = run(fn, X0)
    check = result["outputs"]
    assert check.status == "fail"
    assert words in check.message  # the library's own error text
    assert "backward returned" in check.message  # and what backward did return
    assert [c.status for c in result.checks[1:4]] == ["skip"] * 3


def test_an_exception_in_backward_is_reported():
    result = run(RaisingBackward, X0)
    assert result["outputs"].status == "fail"
    assert "ValueError: oops" in result["outputs"].message


def test_backward_leaving_the_library_is_not_differentiable_twice():
    # first order is right: it passes by default, with a note (the verdict of `check`)
    result = run(NumpyBackward, X0)
    assert result.ok and statuses(result)["gradcheck"] == "pass"
    check = result["gradgradcheck"]
    assert check.status == "note" and check.short == "not differentiable twice"
    assert any(n.startswith("first-order correct; cannot be differentiated twice: mark it "
                            "@once_differentiable") for n in result.notes)
    # double=True makes second order a requirement
    strict = run(NumpyBackward, X0, double=True)
    assert not strict.ok and strict["gradgradcheck"].status == "fail"
    assert "@once_differentiable" in strict["gradgradcheck"].message


def test_once_differentiable_backward_skips_gradgradcheck():
    result = run(OnceCube, X0)
    assert result.ok
    check = result["gradgradcheck"]
    assert check.status == "skip" and "not differentiable twice" in check.message


def test_in_place_change_of_a_saved_tensor_is_found():
    result = run(ChangesSavedTensor, X0)
    check = result["in-place"]
    assert check.status == "fail"
    assert "saved tensor 0" in check.message and "version 0 -> 1" in check.message


def test_in_place_change_without_version_bump_is_found_by_value():
    result = run(ChangesGradOutputThroughNumpy, X0)
    check = result["in-place"]
    assert check.status == "fail"
    assert "grad_output 0" in check.message and "no version bump" in check.message


def test_in_place_change_of_an_input_in_forward_is_found():
    result = run(ChangesInputInForward, X0)
    assert result["in-place"].status == "fail"
    assert "forward modified input 0 (x)" in result["in-place"].message


# --- options, printing, teaching ------------------------------------------------------------


def test_verbose_prints_the_summary_and_quiet_prints_nothing(capsys):
    run(MatVec, A0, X0, verbose=True)
    out = capsys.readouterr().out
    assert "Validating MatVec.apply" in out and "[pass] adjoint" in out
    assert "Jacobian of output 0 w.r.t. A (2 x 6" in out
    assert "Result: PASS" in out
    run(MatVec, A0, X0)
    assert capsys.readouterr().out == ""


def test_float32_uses_looser_default_tolerances_and_notes_the_dtype():
    result = run(Cube, X0, dtype=np.float32)
    assert result.ok
    assert result.tolerances == (1e-3, 1e-2, 1e-2)
    assert any("float32" in note for note in result.notes)


def test_plot_is_passed_on_or_reported(tmp_path):
    result = run(Cube, X0, plot=str(tmp_path / "p.png"))
    assert "plot:" in result["gradcheck"].message


def test_validate_works_under_no_grad():
    with cr.no_grad():
        result = run(MatVec, A0, X0)
    assert result.ok
    assert cr.is_grad_enabled()


def test_validate_rejects_non_functions():
    with pytest.raises(TypeError, match="subclass of chainrule.autograd.Function"):
        validate(lambda x: x, cr.tensor(X0))
    with pytest.raises(TypeError):
        validate(Function, cr.tensor(X0))


def test_teaching_mode_shows_jacobian_grad_output_and_the_vjp(capsys):
    A = np.arange(6.0).reshape(2, 3) / 4 - 0.5
    result = run(MatVec, A, X0, teach=True, verbose=True)
    out = capsys.readouterr().out
    assert result.teaching and result.teaching in out
    for words in ("Teaching mode: what does MatVec.backward compute?", "The Jacobian J",
                  "J of output 0 with respect to A, shape (2, 6)",
                  "J of output 0 with respect to x, shape (2, 3)",
                  "grad_output for output 0, shape (2,)", "grad_output^T J (from J above)",
                  "what backward returned", "vector-Jacobian product", "they agree",
                  "backward with grad_output = e_0"):
        assert words in result.teaching, words
    # The Jacobian of A @ x with respect to x is A itself, printed row by row.
    with np.printoptions(precision=4, suppress=True, floatmode="fixed"):
        assert str(A[0] + 0.0)[1:-1].strip() in result.teaching


def test_teaching_mode_flags_a_wrong_backward():
    result = run(WrongMatSquare, S0, teach=True)
    assert "they DISAGREE" in result.teaching
    # it never ends by saying that backward computes grad_output^T J when it does not
    assert "never forms J" not in result.teaching
    assert result.teaching.rstrip().endswith("without forming J.")
    assert "never forms J" in run(MatSquare, S0, teach=True).teaching


def test_elementwise_diagnosis_links_the_matrix_vjp_page():
    result = run(WrongMatSquare, S0)
    assert any("docs/matrix-vjps.md" in d for d in result["gradcheck"].findings)


def test_teaching_mode_declines_large_inputs():
    result = run(Cube, np.linspace(-1, 1, 50), teach=True, double=False)
    assert "too large" in result.teaching


class _FakeReport:
    patterns = ["constant factor"]

    def __str__(self):
        return "the full report"


@pytest.mark.parametrize("report, patterns", [
    (None, ["factor 2"]),  # names taken from the diagnosis lines
    (_FakeReport(), ["constant factor"]),  # names from report.patterns
])
def test_diagnosis_report_and_plot_are_taken_from_gradcheck(monkeypatch, tmp_path, report,
                                                            patterns):
    # gradcheck attaches `diagnosis` (one line per pattern found) and `report` to its
    # error, and takes plot=; a stand-in shows validate passes them through.
    module = importlib.import_module("chainrule.autograd._validate_checks")  # runs gradcheck
    seen = {}
    line = "factor 2 (output 0, input 0): backward is twice the numerical Jacobian"

    def fake_gradcheck(fn, inputs, *, eps, atol, rtol, plot=None):
        seen["plot"] = plot
        err = GradcheckError("Jacobian mismatch for output 0 with respect to input 0:")
        err.output_index, err.input_index = 0, 0
        err.diagnosis, err.report = [line], report
        raise err

    monkeypatch.setattr(module, "gradcheck", fake_gradcheck)
    assert module.plot_supported()
    path = str(tmp_path / "j.png")
    result = run(Cube, X0, plot=path)
    check = result["gradcheck"]
    assert seen["plot"] == path and f"plot={path!r}" in check.message
    assert check.status == "fail"
    assert check.diagnosis == patterns and result.diagnosis == patterns
    assert check.findings == [line]
    assert str(check.report) in ("the full report", str(GradcheckError(
        "Jacobian mismatch for output 0 with respect to input 0:")))
    assert f"- {line}" in result.summary()
