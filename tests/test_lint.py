"""The lint of ``validate``: five silent mistakes in custom Functions, each caught on a
broken Function (with the attribute, input or line named) and passed on a correct one."""

import sys
from pathlib import Path

import numpy as np
import pytest

import chainrule as cr
from chainrule import cli
from chainrule.autograd import Function, once_differentiable
from chainrule.autograd.validate import CHECKS, LINT_CHECKS, validate
from functions import Cube, Exp, MatVec

X0 = np.array([0.3, -0.7, 1.1])
M0 = np.array([[0.4, -1.2, 0.5], [0.9, 0.3, -2.0]])
SOURCE = Path(__file__).read_text().splitlines()


def line_of(marker):
    """``test_lint.py:N: `` for the one line of this file that ends with ``# marker``."""
    hits = [k + 1 for k, text in enumerate(SOURCE) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return f"test_lint.py:{hits[0]}: "


def run(fn, *inputs, **kwargs):
    kwargs.setdefault("verbose", False)
    return validate(fn, *[cr.tensor(a) if isinstance(a, np.ndarray) else a for a in inputs],
                    **kwargs)


def lint(result):
    return {c.name: c.status for c in result.checks if c.name in LINT_CHECKS}


# --- 1. tensors kept as ctx attributes ------------------------------------------------------


class ExpOnCtx(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.y = x.exp()  # lint: ctx set
        return ctx.y

    @staticmethod
    def backward(ctx, g):
        return g * ctx.y  # lint: ctx read


class InputOnCtx(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.x = x  # lint: input on ctx
        ctx.k = k  # a number: fine on ctx
        return x * x * k

    @staticmethod
    def backward(ctx, g):
        return 2 * ctx.k * ctx.x * g, None


class ListOnCtxSetupContext(Function):
    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.parts = [cr.tensor(1.0, dtype=cr.float64), x.cos()]  # lint: list on ctx

    @staticmethod
    def backward(ctx, g):
        return g * ctx.parts[1]


class ConstantOnCtx(Function):
    """A tensor on ctx that does not depend on the input, and a shape: both fine."""

    @staticmethod
    def forward(ctx, x):
        ctx.weights = cr.tensor([1.0, 2.0, 3.0], dtype=cr.float64)
        ctx.shape = x.shape
        ctx.y = x.exp()  # computed from x, but backward never reads it
        return x * ctx.weights

    @staticmethod
    def backward(ctx, g):
        return (g * ctx.weights).reshape(ctx.shape)


def test_a_tensor_computed_from_an_input_kept_on_ctx_is_named_with_its_lines():
    result = run(ExpOnCtx, X0)
    check = result["ctx-tensors"]
    assert check.status == "fail" and not result.ok and "ctx-tensors" in result.failed
    assert "ctx.y holds a Tensor computed from x (which requires grad)" in check.message
    assert "ctx.save_for_backward" in check.message and "double backward" in check.message
    assert "set at " in check.message and line_of("lint: ctx set") + "ctx.y = x.exp()" \
        in check.message
    assert line_of("lint: ctx read") + "return g * ctx.y" in check.message
    assert check.short == "ctx.y: use save_for_backward"
    assert "[FAIL] ctx-tensors" in result.summary()


def test_an_input_itself_on_ctx_and_a_list_set_in_setup_context_are_found():
    check = run(InputOnCtx, X0, 2.0)["ctx-tensors"]
    assert check.status == "fail"
    assert "ctx.x holds the input x itself" in check.message
    assert line_of("lint: input on ctx") in check.message
    assert "ctx.k holds" not in check.message  # a number is what ctx attributes are for
    check = run(ListOnCtxSetupContext, X0)["ctx-tensors"]
    assert check.status == "fail" and "ctx.parts holds a Tensor computed from x" in check.message
    assert line_of("lint: list on ctx") in check.message


def test_saved_tensors_constants_and_unread_attributes_pass():
    for fn, inputs in [(Cube, (X0,)), (Exp, (X0,)), (MatVec, (M0, X0)),
                       (ConstantOnCtx, (X0,))]:
        result = run(fn, *inputs)
        assert result["ctx-tensors"].status == "pass", fn.__name__
        assert result.ok, result.summary()


def test_once_differentiable_changes_the_reason_not_the_verdict():
    class OnceInputOnCtx(InputOnCtx):
        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            return 2 * ctx.k * ctx.x * g, None

    check = run(OnceInputOnCtx, X0, 2.0)["ctx-tensors"]
    assert check.status == "fail" and "@once_differentiable" in check.message


# --- 2. None for an input that needs a gradient ---------------------------------------------


class ForgetsW(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, None  # WRONG: w requires grad


class Gated(Function):
    """The output does not depend on ``mask``: None for it is right."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.save_for_backward(x)
        return x * 2.0 + 0.0 * mask

    @staticmethod
    def backward(ctx, g):
        return g * 2.0, None


class RespectsNeedsInputGrad(ForgetsW):
    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return (g * w if ctx.needs_input_grad[0] else None,
                g * x if ctx.needs_input_grad[1] else None)


def test_none_for_an_input_the_outputs_depend_on_is_named():
    result = run(ForgetsW, X0, -X0)
    check = result["none-grad"]
    assert check.status == "fail" and check.short == "None for w"
    assert "backward returned None for w, which requires grad" in check.message
    assert "silently taken as zero" in check.message
    assert "x" not in check.short


def test_none_found_without_jacobians_for_large_inputs():
    big = np.linspace(-1.0, 1.0, 1200)  # over MAX_JACOBIAN_SIZE: a directional derivative
    result = run(ForgetsW, big, big[::-1].copy())
    assert result.jacobians == {}
    assert result["none-grad"].status == "fail" and "None for w" in result["none-grad"].short


def test_none_is_fine_where_no_gradient_is_needed():
    assert run(Gated, X0, np.ones(3))["none-grad"].status == "pass"
    assert run(RespectsNeedsInputGrad, X0, -X0).ok
    # only x requires grad: None for w is what needs_input_grad asks for
    result = validate(ForgetsW, cr.tensor(X0, requires_grad=True), cr.tensor(-X0),
                      verbose=False)
    assert result["none-grad"].status == "pass" and result.ok


# --- 3. backward not linear in grad_output --------------------------------------------------


class SquaresG(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g * g  # WRONG: passes gradcheck (one-hot g: g * g = g)


class AddsConstant(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0 + 1e-3


class BranchesOnG(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0 if g.sum() > 0 else g * 2.0


def test_a_backward_that_squares_grad_output_passes_gradcheck_but_not_the_lint():
    result = run(SquaresG, X0)
    assert result["gradcheck"].status == "pass"  # one-hot cotangents hide it
    check = result["linearity"]
    assert check.status == "fail" and result.failed == ["linearity"]
    assert check.message.startswith(
        "backward is not linear in grad_output (e.g. it squares it, adds a constant, or uses "
        "it in a branch): for the gradient of x")
    assert check.short == "not linear in grad_output"


@pytest.mark.parametrize("fn", [AddsConstant, BranchesOnG])
def test_constants_and_branches_on_grad_output_are_not_linear(fn):
    assert run(fn, X0)["linearity"].status == "fail"


def test_linear_backwards_pass_even_with_several_outputs():
    from test_validate import TwoOutputs

    for fn, inputs in [(Cube, (X0,)), (MatVec, (M0, X0)), (TwoOutputs, (X0, -X0 + 0.5))]:
        assert run(fn, *inputs)["linearity"].status == "pass", fn.__name__


# --- 4. grad_output modified in place -------------------------------------------------------


class ScalesGInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        grad_out *= 2  # lint: imul
        return grad_out * x


class ZeroesGSlice(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        out = g * 1.0
        g.detach().numpy()[0] = 0.0  # lint: through numpy
        return out


class HelperMutates(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return _double_in_place(g)


def _double_in_place(t):
    t.mul_(2.0)  # lint: in a helper
    return t


def test_grad_output_changed_in_place_names_the_line():
    check = run(ScalesGInPlace, X0)["grad-in-place"]
    assert check.status == "fail"
    assert "backward modifies its grad_output grad_out in place at " in check.message
    assert line_of("lint: imul") + "grad_out *= 2" in check.message
    assert check.short.startswith("grad_out changed at line ")


@pytest.mark.parametrize("fn, marker", [(ZeroesGSlice, "lint: through numpy"),
                                        (HelperMutates, "lint: in a helper")])
def test_grad_output_changed_without_a_version_bump_or_in_a_helper(fn, marker):
    check = run(fn, X0)["grad-in-place"]
    assert check.status == "fail" and line_of(marker) in check.message


def test_backward_that_leaves_grad_output_alone_passes():
    for fn, inputs in [(Cube, (X0,)), (MatVec, (M0, X0)), (AddsConstant, (X0,))]:
        assert run(fn, *inputs)["grad-in-place"].status == "pass", fn.__name__


# --- 5. outputs that are inputs or views of inputs ------------------------------------------


class ReturnsInput(Function):
    @staticmethod
    def forward(ctx, x):
        return x  # lint: returns x

    @staticmethod
    def backward(ctx, g):
        return g


class ReturnsTranspose(Function):
    @staticmethod
    def forward(ctx, X):
        return X.t()  # lint: returns a view

    @staticmethod
    def backward(ctx, g):
        return g.t()


class ReturnsSlice(Function):
    @staticmethod
    def forward(ctx, x, scale):
        return x[1:], x * scale

    @staticmethod
    def backward(ctx, g1, g2):
        grad = g2 * 1.0
        grad[1:] = grad[1:] + g1
        return grad, None


class ReturnsClone(Function):
    @staticmethod
    def forward(ctx, X):
        return X.t().clone()

    @staticmethod
    def backward(ctx, g):
        return g.t()


class IndexOutput(Function):
    """A non-differentiable output (declared) that is the input itself."""

    @staticmethod
    def forward(ctx, x, labels):
        ctx.mark_non_differentiable(labels)
        return x * 2.0, labels

    @staticmethod
    def backward(ctx, g, g_labels):
        return g * 2.0, None


def test_returning_the_input_itself_is_named_with_its_line():
    check = run(ReturnsInput, X0)["output-views"]
    assert check.status == "fail" and check.short == "output 0 is x"
    assert "forward returns the input x itself as output 0, without ctx.mark_dirty" \
        in check.message
    assert "x.clone()" in check.message and "ctx.mark_dirty(x)" in check.message
    assert "returned at " in check.message
    assert line_of("lint: returns x") + "return x" in check.message


def test_returning_a_view_of_an_input_is_found():
    check = run(ReturnsTranspose, M0)["output-views"]
    assert check.status == "fail" and "a view of the input X" in check.message
    assert line_of("lint: returns a view") in check.message
    check = run(ReturnsSlice, X0, 2.0)["output-views"]
    assert check.status == "fail" and check.short == "output 0 views x"


def test_fresh_outputs_and_declared_aliases_pass():
    assert run(ReturnsClone, M0).ok
    labels = cr.tensor([1.0, 0.0, 2.0])
    result = validate(IndexOutput, cr.tensor(X0, requires_grad=True), labels, verbose=False)
    assert result["output-views"].status == "pass" and result.ok


# --- wiring: validate's report, skips, the command line -------------------------------------


def test_the_lint_checks_are_part_of_every_report_in_order():
    result = run(Cube, X0)
    assert [c.name for c in result.checks] == list(CHECKS)
    assert list(CHECKS[-len(LINT_CHECKS):]) == list(LINT_CHECKS)
    assert lint(result) == dict.fromkeys(LINT_CHECKS, "pass")


def test_only_output_views_runs_when_backward_returns_the_wrong_count():
    class TooManyAndAlias(ReturnsInput):
        @staticmethod
        def backward(ctx, g):
            return g, g

    result = run(TooManyAndAlias, X0)
    assert result["outputs"].status == "fail"
    statuses = lint(result)
    assert statuses.pop("output-views") == "fail"
    assert set(statuses.values()) == {"skip"}


def test_forward_that_raises_skips_the_lint():
    class Raises(Cube):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("no")

    assert set(lint(run(Raises, X0)).values()) == {"skip"}


def test_a_backward_changing_its_saved_tensor_skips_linearity():
    from test_validate import ChangesSavedTensor

    result = run(ChangesSavedTensor, X0)
    assert result["linearity"].status == "skip" and "in place" in result["linearity"].message


def test_the_lint_leaves_the_trace_function_and_grad_mode_as_they_were():
    def tracer(frame, event, arg):
        return None

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        run(ScalesGInPlace, X0)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(old)
    assert cr.is_grad_enabled()


BROKEN = '''
import chainrule as cr

class SquaresG(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x * x

    @staticmethod
    def backward(ctx, g):
        return 2 * ctx.x * g * g

    @staticmethod
    def example_inputs():
        return (cr.randn(3, dtype=cr.float64),)
'''


def test_check_command_reports_the_lint_and_fails(tmp_path, capsys):
    from test_cli import table_rows

    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    code = cli.main(["check", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    result, _, failed, diagnosis = table_rows(out)["SquaresG"]
    assert result == "FAIL" and failed == "ctx-tensors, linearity"
    assert "ctx.x: use save_for_backward" in diagnosis and "not linear" in diagnosis
    assert "[FAIL] ctx-tensors" in out and "broken.py:7:" in out  # the line that set ctx.x
    assert "adjoint, in-place, lint" in out


def test_check_command_passes_a_clean_function(tmp_path, capsys):
    path = tmp_path / "clean.py"
    path.write_text(BROKEN.replace("ctx.x = x", "ctx.save_for_backward(x)")
                    .replace("return 2 * ctx.x * g * g",
                             "(x,) = ctx.saved_tensors\n        return 2 * x * g"))
    assert cli.main(["check", str(path)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out
