"""NumPy forward/backward pairs checked without porting them: gradcheck_pair, and the
pairs that `python -m chainrule check` finds; validate and check give the same verdict."""

import textwrap

import numpy as np
import pytest

import chainrule as cr
from chainrule import cli
from chainrule.autograd import GradcheckError, gradcheck_pair

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))


def matmul_forward(A, B):
    return A @ B, (A, B)


def matmul_backward(dout, cache):
    A, B = cache
    return dout @ B.T, A.T @ dout            # dA = dout B^T, dB = A^T dout


def transposed_backward(dout, cache):
    A, B = cache
    return (dout @ B.T).T, A.T @ dout


def ignores_dout_backward(dout, cache):     # the derivative of sum(out): right for ones only
    A, B = cache
    ones = np.ones_like(dout)
    return ones @ B.T, A.T @ ones


def factor_two_backward(dout, cache):
    A, B = cache
    return 2 * dout @ B.T, A.T @ dout


def test_correct_pair_passes_in_float64_and_float32():
    assert gradcheck_pair(matmul_forward, matmul_backward, [A, B]) is True
    # float32 inputs are re-checked in float64: round-off is not reported as a bug
    assert gradcheck_pair(matmul_forward, matmul_backward,
                          [A.astype(np.float32), B.astype(np.float32)]) is True


@pytest.mark.parametrize("backward, pattern", [
    (transposed_backward, "transpose"),
    (ignores_dout_backward, "backward ignores grad_output"),
    (factor_two_backward, "constant factor"),
], ids=["transposed", "ignores-dout", "factor-2"])
def test_broken_pairs_are_diagnosed(backward, pattern):
    with pytest.raises(GradcheckError) as info:
        gradcheck_pair(matmul_forward, backward, [A, B])
    assert pattern in info.value.report.patterns
    assert any(line.startswith(pattern) for line in info.value.diagnosis)
    assert gradcheck_pair(matmul_forward, backward, [A, B], raise_exception=False) is False


def test_ignored_dout_is_said_in_words():
    with pytest.raises(GradcheckError, match="the backward does not depend on grad_output"):
        gradcheck_pair(matmul_forward, ignores_dout_backward, [A, B])


def test_several_outputs_and_no_cache():
    def two_forward(x):
        return (2 * x, x ** 2), x

    def two_backward(douts, x):
        d_double, d_square = douts
        return 2 * d_double + 2 * x * d_square

    assert gradcheck_pair(two_forward, two_backward, [RNG.standard_normal(4)])

    def tanh_forward(x):
        return np.tanh(x)

    def tanh_backward(dout, x):
        return dout * (1 - np.tanh(x) ** 2)

    assert gradcheck_pair(tanh_forward, tanh_backward, [RNG.standard_normal(4)], cache=False)


def test_integer_inputs_are_passed_as_constants():
    def pick_forward(x, idx):
        return x[idx], (x.shape, idx)

    def pick_backward(dout, cache):
        shape, idx = cache
        dx = np.zeros(shape)
        np.add.at(dx, idx, dout)
        return dx, None

    assert gradcheck_pair(pick_forward, pick_backward, [RNG.standard_normal(4),
                                                        np.array([0, 2, 2])])


LAYERS = textwrap.dedent("""
    import numpy as np

    def affine_forward(x, w, b):
        return x @ w + b, (x, w, b)

    def affine_backward(dout, cache):
        x, w, b = cache
        return dout @ w.T, x.T @ dout, dout.sum(0)

    def square_forward(X):
        return X @ X, X

    def square_backward(dout, X):
        return 2 * X * dout            # elementwise, where G X^T + X^T G is needed
""")


def _check(capsys, *argv):
    code = cli.main(["check", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_finds_pairs_and_reports_them_in_the_table(tmp_path, capsys):
    path = tmp_path / "layers.py"
    path.write_text(LAYERS)
    code, out, _ = _check(capsys, path, "--shapes", "affine=2x3,3x4,4",
                          "--shapes", "square=3x3")
    assert code == 1
    assert "affine (pair)  pass" in out
    row = next(line for line in out.splitlines() if line.startswith("square (pair)"))
    assert "FAIL" in row
    assert "2 forward/backward pairs (gradcheck): 1 passed, 1 failed" in out
    code, out, _ = _check(capsys, f"{path}:affine", "--shapes", "affine=2x3,3x4,4")
    assert code == 0 and "1 passed, 0 failed" in out


def test_check_says_how_to_wrap_a_function(tmp_path, capsys):
    path = tmp_path / "empty.py"
    path.write_text("x = 1\n")
    code, _, err = _check(capsys, path)
    assert code == 2
    assert "<name>_forward" in err and "autograd.Function" in err
    path.write_text(LAYERS)
    code, _, err = _check(capsys, path)
    assert code == 2 and "--shapes affine=" in err


FIRST_ORDER_ONLY = textwrap.dedent("""
    import numpy as np
    import chainrule as cr

    class NumpyTanh(cr.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = cr.tensor(np.tanh(x.detach().numpy()))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return cr.tensor(g.numpy() * (1 - y.numpy() ** 2))

        @staticmethod
        def example_inputs():
            return (cr.randn(3, requires_grad=True),)
""")


def test_validate_and_check_agree_on_a_first_order_only_function(tmp_path, capsys):
    path = tmp_path / "first.py"
    path.write_text(FIRST_ORDER_ONLY)
    namespace = {}
    exec(compile(FIRST_ORDER_ONLY, str(path), "exec"), namespace)
    fn = namespace["NumpyTanh"]
    result = cr.autograd.validate(fn, *fn.example_inputs(), verbose=False)
    code, out, _ = _check(capsys, path)
    assert result.ok and code == 0 and "1 passed, 0 failed" in out
    assert any("first-order correct; cannot be differentiated twice" in n for n in result.notes)
    strict = cr.autograd.validate(fn, *fn.example_inputs(), verbose=False, double=True)
    code, out, _ = _check(capsys, path, "--double")
    assert not strict.ok and code == 1 and "0 passed, 1 failed" in out
    assert ".detach().numpy() in backward works for first derivatives only" in \
        strict["gradgradcheck"].message
