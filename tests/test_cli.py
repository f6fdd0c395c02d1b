"""The ``check`` and ``explain`` commands of ``python -m chainrule``."""

import subprocess
import sys
from pathlib import Path

import pytest

from chainrule import cli

ROOT = Path(__file__).resolve().parents[1]
CHECK_ME = ROOT / "examples" / "check_me.py"
needs_examples = pytest.mark.skipif(not CHECK_ME.is_file(), reason="examples/ not present")

HEADER = ["Function", "result", "worst error", "failed checks", "diagnosis"]


def table_rows(out):
    """``{Function: [result, worst error, failed checks, diagnosis]}`` from a check table."""
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.split()[:2] == HEADER[:2])
    widths = [len(cell) for cell in lines[start + 1].split("  ")]
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells, pos = [], 0
        for w in widths:
            cells.append(line[pos:pos + w].strip())
            pos += w + 2
        rows[cells[0]] = cells[1:]
    return rows


def check(capsys, *argv):
    code = cli.main(["check", *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path, text, name="mine.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


IDENTITY = """
import chainrule as cr

class Twice(cr.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2
"""


# --- check ----------------------------------------------------------------------------------


@needs_examples
def test_check_examples_reports_each_function_and_fails(capsys):
    code, out, _ = check(capsys, CHECK_ME)
    assert code == 1
    rows = table_rows(out)
    assert list(rows) == ["MatVec", "MatSquare", "WrongMatSquare"]
    assert rows["MatVec"][0] == "pass" and rows["MatSquare"][0] == "pass"
    result, worst, failed, diagnosis = rows["WrongMatSquare"]
    assert result == "FAIL" and failed == "gradcheck" and float(worst) > 0.1
    assert diagnosis != "-"  # gradcheck's diagnosis, or the reason
    assert float(rows["MatVec"][1]) < 1e-6
    assert "3 Functions checked" in out and "2 passed, 1 failed" in out
    # The failing Function's full report is printed, the passing ones' are not.
    assert "Validating WrongMatSquare.apply" in out and "Validating MatVec.apply" not in out


@needs_examples
def test_check_a_named_function(capsys):
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "--double")
    assert code == 0
    rows = table_rows(out)
    assert list(rows) == ["MatVec"] and rows["MatVec"][:3][0] == "pass"
    assert "gradgradcheck" in out and "1 passed, 0 failed" in out
    code, out, _ = check(capsys, f"{CHECK_ME}:WrongMatSquare")
    assert code == 1 and list(table_rows(out)) == ["WrongMatSquare"]


@needs_examples
def test_check_verbose_prints_every_report(capsys):
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "-v", "--seed", "3")
    assert code == 0
    assert "Validating MatVec.apply" in out and "[pass] adjoint" in out


@needs_examples
def test_check_teach(capsys):
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "--teach")
    assert code == 0
    assert "Teaching mode: what does MatVec.backward compute?" in out
    assert "grad_output^T J (from J above)" in out


@needs_examples
def test_check_with_shapes_and_dtype(capsys):
    code, out, _ = check(capsys, f"{CHECK_ME}:MatSquare", "--shapes", "4x4")
    assert code == 0 and table_rows(out)["MatSquare"][0] == "pass"
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "--shapes", "3x5,5", "-v")
    assert code == 0 and "A: Tensor float64 (3, 5)" in out and "x: Tensor float64 (5,)" in out
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "--dtype", "float32", "-v")
    assert code == 0 and "Tensor float32 (2, 3)" in out


def test_check_shapes_make_inputs_for_functions_without_example_inputs(tmp_path, capsys):
    path = write(tmp_path, IDENTITY)
    code, _, err = check(capsys, path)
    assert code == 2 and "no example_inputs()" in err and "--shapes" in err
    code, out, _ = check(capsys, path, "--shapes", "3x2")
    assert code == 0 and table_rows(out)["Twice"][0] == "pass"


@needs_examples
def test_check_plot_option(tmp_path, capsys):
    from chainrule.autograd.validate import plot_supported

    path = tmp_path / "j.png"
    code, out, _ = check(capsys, f"{CHECK_ME}:MatVec", "--plot", path)
    assert code == 0
    if plot_supported():  # one Function: the path as given
        assert f"MatVec: plot written to {path}" in out or "not written" in out
    else:
        assert "no plot= option" in out and not path.exists()


def test_parse_shapes():
    assert cli.parse_shapes("3x5,5") == [(3, 5), (5,)]
    assert cli.parse_shapes("2x3x4, 1,()") == [(2, 3, 4), (1,), ()]
    for bad in ("3y5", "", "3x0", "3,,4", "-1"):
        with pytest.raises(Exception, match="bad shape"):
            cli.parse_shapes(bad)


@pytest.mark.parametrize("argv", [["check"], ["check", "x.py", "--shapes", "3y5"],
                                  ["check", "x.py", "--dtype", "int64"]])
def test_check_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


def test_check_missing_file_exits_2(tmp_path, capsys):
    code, out, err = check(capsys, tmp_path / "nope.py")
    assert code == 2 and "no such file" in err and out == ""


def test_check_file_without_functions_exits_2(tmp_path, capsys):
    path = write(tmp_path, "import chainrule as cr\nfrom chainrule.autograd import Function\n")
    code, _, err = check(capsys, path)
    assert code == 2 and "no autograd.Function subclasses" in err


@needs_examples
def test_check_unknown_name_exits_2_with_suggestions(capsys):
    code, _, err = check(capsys, f"{CHECK_ME}:MatVek")
    assert code == 2
    assert "MatVek is not defined" in err and "Did you mean MatVec" in err
    code, _, err = check(capsys, f"{CHECK_ME}:cr")
    assert code == 2 and "not an autograd.Function subclass" in err


def test_check_import_error_exits_2(tmp_path, capsys):
    path = write(tmp_path, "raise ImportError('missing dependency')\n")
    code, _, err = check(capsys, path)
    assert code == 2 and "missing dependency" in err


def test_check_example_inputs_that_raise_exit_2(tmp_path, capsys):
    text = IDENTITY + """
    @staticmethod
    def example_inputs():
        raise RuntimeError("no data")
"""
    code, _, err = check(capsys, write(tmp_path, text))
    assert code == 2 and "example_inputs() raised RuntimeError: no data" in err


def test_check_only_functions_defined_in_the_file(tmp_path, capsys):
    text = IDENTITY + """
    @staticmethod
    def example_inputs():
        return (cr.randn(3, dtype=cr.float64),)

from chainrule.autograd import Function  # imported, not defined here: ignored
"""
    code, out, _ = check(capsys, write(tmp_path, text))
    assert code == 0 and list(table_rows(out)) == ["Twice"]


@needs_examples
def test_check_runs_as_a_module_in_a_subprocess():
    proc = subprocess.run([sys.executable, "-m", "chainrule", "check", str(CHECK_ME)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 1, proc.stderr
    rows = table_rows(proc.stdout)
    assert rows["MatVec"][0] == "pass" and rows["WrongMatSquare"][0] == "FAIL"


def test_demo_command_is_still_registered():
    args = cli.build_parser().parse_args(["demo", "--quiet", "--no-examples"])
    assert args.func is cli._cmd_demo and args.quiet and args.no_examples


# --- explain --------------------------------------------------------------------------------


def explain(capsys, *argv):
    code = cli.main(["explain", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_explain_matmul(capsys):
    code, out, _ = explain(capsys, "matmul")
    assert code == 0
    for words in ("matmul  (graph node MatmulBackward0)", "signature   matmul(self, other)",
                  "numpy.matmul", "grad_A = grad @ B^T", "grad_B = A^T @ grad",
                  "dC = dA @ B + A @ dB", "Giles (2008)", "chainrule.matmul"):
        assert words in out, words


@pytest.mark.parametrize("name", ["mm", "MmBackward0", "mmbackward"])
def test_explain_accepts_table_and_node_names(name, capsys):
    code, out, _ = explain(capsys, name)
    assert code == 0
    assert out.startswith("mm  (graph node MmBackward0)")
    assert "signature   mm(self, mat2)" in out and "grad_B = A^T @ grad" in out


def test_explain_shows_attrs_and_several_outputs(capsys):
    code, out, _ = explain(capsys, "sum")
    assert code == 0 and "sum(self, *, dim, keepdim)" in out and "dim, keepdim" in out
    code, out, _ = explain(capsys, "linalg_svd")
    assert code == 0 and "outputs     3" in out and "Townsend" in out


def test_explain_all_lists_the_table(capsys):
    from chainrule import TABLE

    code, out, _ = explain(capsys, "--all")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["op", "inputs", "VJP"]
    names = [line.split()[0] for line in lines[2:2 + len(TABLE)]]
    assert names == list(TABLE)
    mm = next(line for line in lines if line.startswith("mm "))
    assert "self, mat2" in mm and "grad_A = grad @ B^T" in mm
    assert all(len(line) <= 100 for line in lines)
    assert f"{len(TABLE)} ops" in out


def test_explain_unknown_op_exits_2_with_close_matches(capsys):
    code, out, err = explain(capsys, "matmull")
    assert code == 2 and out == ""
    assert "unknown op 'matmull'" in err and "matmul" in err.split("did you mean")[1]


def test_explain_needs_a_name(capsys):
    code, _, err = explain(capsys)
    assert code == 2 and "--all" in err


@needs_examples
def test_check_table_shows_gradchecks_diagnosis(monkeypatch, capsys):
    import importlib

    from chainrule.autograd import GradcheckError

    module = importlib.import_module("chainrule.autograd._validate_checks")  # runs gradcheck
    real = module.gradcheck

    def with_diagnosis(fn, inputs, **kwargs):
        try:
            return real(fn, inputs, **kwargs)
        except GradcheckError as err:
            err.diagnosis = ["factor 2: twice the numerical Jacobian", "transpose (output 0, "
                             "input 0): the transposed Jacobian"]
            err.report = None
            raise

    monkeypatch.setattr(module, "gradcheck", with_diagnosis)
    code, out, _ = check(capsys, CHECK_ME)
    assert code == 1
    assert table_rows(out)["WrongMatSquare"][3] == "factor 2, transpose"
