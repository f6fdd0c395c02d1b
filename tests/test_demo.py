"""The ``python -m chainrule demo`` walk-through and the bundled examples it runs."""

import importlib.util

import pytest

import chainrule as cr
from chainrule import cli, demo

pytest.importorskip("sklearn")

EXAMPLES = demo.examples_dir()
needs_examples = pytest.mark.skipif(EXAMPLES is None, reason="examples/ folder not present")


def _example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo_result():
    return demo.run(quiet=True)  # the real demo (default epochs), about 2 s


def test_demo_reaches_accuracy_and_gradcheck(demo_result):
    assert demo_result["accuracy"] >= demo.ACCURACY_TARGET
    assert demo_result["gradcheck"] is True
    assert demo_result["gradcheck_message"] == "ok"
    assert demo_result["losses"][-1] < demo_result["losses"][0]
    assert demo_result["ok"] is True


@needs_examples
def test_demo_runs_every_example_as_expected(demo_result):
    assert demo_result["examples"] == {name: True for name, _ in demo.EXAMPLES}


def test_demo_is_deterministic(demo_result):
    again = demo.run(quiet=True, examples=False)
    assert again["accuracy"] == demo_result["accuracy"]
    assert again["losses"] == demo_result["losses"]


class _WrongTanh(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.tanh()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (1 - x * x)  # wrong: 1 - tanh(x)**2 is right


def test_model_gradcheck_reports_a_broken_model(monkeypatch):
    X, _, y, _ = demo.load_digits_split()
    model = demo.MLP()
    assert demo.gradcheck_model(model, X, y, n=4) == (True, "ok")

    def broken(self, x):  # the model's forward with a wrong backward in its activation
        return self.output(_WrongTanh.apply(self.hidden(x)))

    monkeypatch.setattr(demo.MLP, "forward", broken)
    ok, message = demo.gradcheck_model(model, X, y, n=4)
    assert ok is False
    assert "Jacobian mismatch for output 0 with respect to input 0" in message


@needs_examples
@pytest.mark.parametrize("name", ["custom_matvec", "custom_matmul_square"])
def test_passing_examples(name, capsys):
    assert _example(name).main() is True
    assert "gradcheck" in capsys.readouterr().out


@needs_examples
def test_wrong_backward_example_reports_the_failure(capsys):
    err = _example("wrong_backward").main()
    assert isinstance(err, cr.autograd.GradcheckError)
    assert (err.output_index, err.input_index) == (0, 0)
    assert abs(err.analytic - err.numerical).max() > 1
    out = capsys.readouterr().out
    assert "Jacobian mismatch for output 0 with respect to input 0" in out
    assert "analytic" in out and "numerical" in out


def test_examples_step_is_skipped_without_the_folder(monkeypatch):
    monkeypatch.setattr(demo, "examples_dir", lambda: None)
    assert demo.run_examples() is None


def test_cli_demo_exit_status(capsys, monkeypatch):
    assert cli.main(["demo", "--quiet", "--no-examples"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(": OK")
    monkeypatch.setattr(demo, "ACCURACY_TARGET", 1.01)  # unreachable: the demo must fail
    assert cli.main(["demo", "--quiet", "--epochs", "1", "--no-examples"]) == 1
    assert capsys.readouterr().out.rstrip().endswith(": FAILED")


@pytest.mark.parametrize("argv", [[], ["demo", "--epochs", "0"]])
def test_cli_rejects_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
